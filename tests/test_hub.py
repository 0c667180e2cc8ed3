"""tfs.hub: the Hub files the lessons read, online and offline.

Offline tests read the shipped data in data/ (never writing to them): the copied
configs in data/hub, and the course's own corpus and tokenizer in data/corpus, which
stand in for the course's Hub repositories under their own name. Tests that damage
files work on a copy in a temporary folder (TFS_DATA_DIR). The online path is tested
without internet: a small local HTTP server stands in for the Hub.
"""

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import huggingface_hub
import pandas as pd
import pytest
from conftest import StandInHub, stand_in_hub
from huggingface_hub import constants as hf_constants
from huggingface_hub.errors import LocalEntryNotFoundError
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from tfs import hub

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
SHIPPED_LINE = (
    "Hub files: offline (the environment asks for offline use); the models' configs are copies "
    "that come with the course"
)
UNREACHABLE_LINE = (
    "Hub files: offline (the Hub cannot be reached); the models' configs are copies that come "
    "with the course"
)
CORPUS_LINE = (
    "offline: the course's own hand-written corpus ({:,} pairs) stands in for "
    "xmarva/tfs-tatoeba-en-ru"
)
TOKENIZER_LINE = (
    "offline: the course's own tokenizer ({:,} tokens, trained on its hand-written corpus) "
    "stands in for xmarva/tfs-bpe-en-ru-16k"
)
ONLINE_LINE = "Hub files: downloaded from the Hugging Face Hub"

# The values the lessons read, from the facts about the real files (hub-facts.md).
EXPECTED = {
    "openai-community/gpt2": {
        "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "n_ctx": 1024,
        "vocab_size": 50257, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2", "summary_activation": None, "resid_pdrop": 0.1,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
    },
    "Helsinki-NLP/opus-mt-en-ru": {
        "vocab_size": 62518, "decoder_vocab_size": 62518, "d_model": 512,
        "max_position_embeddings": 512, "encoder_layers": 6, "decoder_layers": 6,
        "encoder_attention_heads": 8, "decoder_attention_heads": 8, "encoder_ffn_dim": 2048,
        "decoder_ffn_dim": 2048, "activation_function": "swish", "pad_token_id": 62517,
        "decoder_start_token_id": 62517, "eos_token_id": 0, "bad_words_ids": [[62517]],
        "scale_embedding": True, "share_encoder_decoder_embeddings": True,
        "static_position_embeddings": True, "is_encoder_decoder": True, "num_beams": 4,
        "model_type": "marian", "dropout": 0.1,
    },
    "unsloth/Meta-Llama-3.1-8B": {
        "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
        "num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 128256,
        "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
        "hidden_act": "silu", "tie_word_embeddings": False, "pad_token_id": 128004,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    },
    "deepseek-ai/DeepSeek-V3": {
        "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1,
        "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
        "num_hidden_layers": 61, "first_k_dense_replace": 3, "num_attention_heads": 128,
        "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280, "n_group": 8,
        "topk_group": 4, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
        "topk_method": "noaux_tc", "rope_theta": 10000, "max_position_embeddings": 163840,
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                                "quant_method": "fp8", "weight_block_size": [128, 128]},
    },
}
# How many fields each shipped config has: every field the facts list, no more.
FIELD_COUNTS = {"openai-community/gpt2": 22, "Helsinki-NLP/opus-mt-en-ru": 42,
                "unsloth/Meta-Llama-3.1-8B": 24, "deepseek-ai/DeepSeek-V3": 41}
OPUS_WEIGHTS_BYTES = 306_991_893


def same_json(a, b):
    """Equal values of the same JSON types (8.0 is not 8, True is not 1)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def listing(folder):
    """Every path under `folder` with its size and modification time."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(Path(folder).rglob("*"))
    } | {".": Path(folder).stat().st_mtime_ns}


def tiny_tokenizer():
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(
        vocab_size=80, special_tokens=["<pad>", "<bos>", "<eos>", "<unk>"], show_progress=False
    )
    tokenizer.train_from_iterator(["I see the cat.", "Я вижу кошку."], trainer)
    return tokenizer


def parquet_bytes(frame):
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def snapshot_path(cache, repo_type, repo_id, filename):
    folder = cache / f"{repo_type}s--{repo_id.replace('/', '--')}"
    return folder / "snapshots" / hub.SHIPPED_REVISION / filename


@pytest.fixture
def offline(monkeypatch):
    """HF_HUB_OFFLINE=1, the real data/, and a fresh decision of the source."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("TFS_DATA_DIR", raising=False)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", hf_constants.HF_HUB_OFFLINE)
    hub.reset_source()
    yield monkeypatch
    hub.reset_source()


def copy_data(folder):
    """Copy what tfs.hub serves offline (data/hub and the corpus's derived files) to folder."""
    shutil.copytree(DATA / "hub", folder / "hub")
    for relative in (r for files in hub.STAND_INS.values() for r in files.values()):
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / relative, folder / relative)
    return folder


def served(folder):
    """Everything tfs.hub may read offline under `folder`: data/hub and the stand-ins."""
    stand_ins = [r for files in hub.STAND_INS.values() for r in files.values()]
    return listing(folder / "hub") | {r: (folder / r).stat().st_size for r in stand_ins} | {
        r + ":mtime": (folder / r).stat().st_mtime_ns for r in stand_ins
    }


@pytest.fixture
def data_copy(offline, tmp_path):
    """A copy of the shipped data in a temporary folder (TFS_DATA_DIR), free to damage."""
    copy = copy_data(tmp_path / "data")
    offline.setenv("TFS_DATA_DIR", str(copy))
    return copy


# ---------------------------------------------------------------- offline: the shipped files


@pytest.mark.parametrize("repo_id", sorted(EXPECTED))
def test_offline_config_is_served_from_data_with_the_real_values(offline, repo_id):
    path = Path(hub.hf_hub_download(repo_id, "config.json"))
    assert path.is_relative_to(DATA / "hub"), path
    assert path.parent.name == hub.SHIPPED_REVISION
    config = json.loads(path.read_text(encoding="utf-8"))
    for key, value in EXPECTED[repo_id].items():
        assert same_json(config[key], value), (repo_id, key, config.get(key), value)
    assert len(config) == FIELD_COUNTS[repo_id]


def test_gpt2_has_no_n_inner(offline):
    path = hub.hf_hub_download("openai-community/gpt2", "config.json")
    config = json.loads(Path(path).read_text())
    assert "n_inner" not in config  # the feed-forward width defaults to 4 * n_embd
    assert 4 * config["n_embd"] == 3072


def test_the_real_hf_hub_download_serves_the_shipped_cache(offline):
    # What the issue promises: the library itself, pointed at data/hub, finds the files.
    for repo_id in EXPECTED:
        path = huggingface_hub.hf_hub_download(
            repo_id, "config.json", cache_dir=DATA / "hub", local_files_only=True
        )
        assert json.loads(Path(path).read_text())["architectures"]


@pytest.mark.parametrize(
    "repo_type, repo_id, filename",
    [(kind, repo, name) for (kind, repo), names in hub.SHIPPED_FILES.items() for name in names],
)
def test_every_file_a_lesson_asks_for_is_shipped(offline, repo_type, repo_id, filename):
    path = Path(hub.hf_hub_download(repo_id, filename, repo_type=repo_type))
    assert path.is_file() and path.stat().st_size > 0
    if (repo_type, repo_id) in hub.STAND_INS:  # the course's own data, under its own name
        assert path == DATA / hub.STAND_INS[repo_type, repo_id][filename]
        assert not path.is_relative_to(DATA / "hub")
    else:  # a copy of a real model's file, in the Hub cache layout
        assert path.is_relative_to(DATA / "hub")


def test_no_stand_in_sits_under_the_name_of_a_real_hub_repository():
    # The course's own corpus and tokenizer are not copies of xmarva/tfs-*: data/hub holds
    # only the copied configs, and nothing there is named after the course's repositories.
    folders = sorted(p.name for p in (DATA / "hub").iterdir() if p.is_dir())
    assert folders == sorted(
        f"{kind}s--{repo.replace('/', '--')}" for kind, repo in hub.COPIED_FILES
    )
    assert not any("xmarva" in str(p) for p in (DATA / "hub").rglob("*"))


def test_offline_file_size_is_the_recorded_one(offline):
    assert hub.file_size("Helsinki-NLP/opus-mt-en-ru", "pytorch_model.bin") == OPUS_WEIGHTS_BYTES
    recorded = json.loads((DATA / "hub" / "file_sizes.json").read_text())
    assert recorded["note"]  # says where the numbers come from


def test_course_data_offline_is_the_course_corpus_and_says_so(offline, capsys):
    pairs = hub.course_pairs("validation")
    train = pd.read_parquet(DATA / "corpus" / "train.parquet")
    assert pairs.equals(pd.read_parquet(DATA / "corpus" / "validation.parquet"))
    tokenizer = hub.course_tokenizer()
    hub.course_pairs("train")
    hub.course_tokenizer()  # each stand-in is announced once
    assert capsys.readouterr().out.splitlines() == [
        SHIPPED_LINE,
        CORPUS_LINE.format(len(train) + len(pairs)),
        TOKENIZER_LINE.format(tokenizer.get_vocab_size()),
    ]
    # the course's corpus is far smaller than the repositories it stands in for
    assert len(train) + len(pairs) < 10_370 and tokenizer.get_vocab_size() < 16_000


def test_course_data_offline_has_the_columns_the_lessons_read(offline):
    pairs = hub.course_pairs("validation")
    assert list(pairs.columns) == ["en", "ru"] and len(pairs) >= 200
    assert pairs.index.tolist() == list(range(len(pairs)))
    assert len(hub.course_pairs("train")) > len(pairs)
    tokenizer = hub.course_tokenizer()
    assert tokenizer.token_to_id("<pad>") == 0
    assert all(tokenizer.token_to_id(t) is not None for t in ("<bos>", "<eos>", "<unk>"))
    for sentence in (pairs.en[0], pairs.ru[0]):
        assert tokenizer.decode(tokenizer.encode(sentence).ids) == sentence


def test_tfs_data_dir_says_where_the_shipped_data_is(data_copy):
    path = Path(hub.hf_hub_download(*hub.COURSE_TOKENIZER))
    assert path == data_copy / "corpus" / "tokenizer.json"
    config = Path(hub.hf_hub_download("openai-community/gpt2", "config.json"))
    assert config.is_relative_to(data_copy / "hub")
    assert hub.course_pairs().equals(pd.read_parquet(data_copy / "corpus" / "validation.parquet"))


def test_the_source_line_is_printed_once(offline, capsys):
    hub.hf_hub_download("openai-community/gpt2", "config.json")
    hub.hf_hub_download("deepseek-ai/DeepSeek-V3", "config.json")
    hub.file_size("Helsinki-NLP/opus-mt-en-ru", "pytorch_model.bin")
    assert hub.source() == "offline"
    assert capsys.readouterr().out.splitlines() == [SHIPPED_LINE]
    hub.reset_source()
    hub.source()
    assert capsys.readouterr().out.splitlines() == [SHIPPED_LINE]


def test_the_source_line_can_be_left_to_the_caller(offline, capsys):
    assert hub.source(announce=False) == "offline"
    hub.hf_hub_download("deepseek-ai/DeepSeek-V3", "config.json")  # decided: no line now
    assert capsys.readouterr().out == ""
    hub.reset_source()
    hub.source()
    assert capsys.readouterr().out.splitlines() == [SHIPPED_LINE]


@pytest.mark.parametrize("announce", ["no", 0, None])
def test_announce_must_be_a_bool(offline, announce):
    with pytest.raises(TypeError, match="announce must be True or False"):
        hub.source(announce=announce)


@pytest.mark.parametrize("value", ["1", "true", "YES", "on", " On "])
def test_offline_values_of_hf_hub_offline(monkeypatch, value):
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hub.offline_requested()


@pytest.mark.parametrize("value", ["0", "", "false", "no"])
def test_other_values_of_hf_hub_offline_are_not_offline(monkeypatch, value):
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert not hub.offline_requested()


def test_the_shipped_data_is_never_written_to(offline, capsys):
    before = served(DATA)
    for (repo_type, repo_id), names in hub.SHIPPED_FILES.items():
        for name in names:
            hub.hf_hub_download(repo_id, name, repo_type=repo_type)
    hub.file_size("Helsinki-NLP/opus-mt-en-ru", "pytorch_model.bin")
    with pytest.raises(FileNotFoundError):
        hub.hf_hub_download("openai-community/gpt2", "model.safetensors")
    hub.course_pairs("train"), hub.course_tokenizer()
    assert served(DATA) == before


# ---------------------------------------------------------------- offline: clear errors


def test_an_unknown_file_offline_says_which_files_are_shipped(offline):
    with pytest.raises(hub.HubFileMissing) as error:
        hub.hf_hub_download("openai-community/gpt2", "model.safetensors")
    message = str(error.value)
    assert "model.safetensors" in message and "HF_HUB_OFFLINE" in message
    assert "deepseek-ai/DeepSeek-V3: config.json" in message
    with pytest.raises(FileNotFoundError, match="Recorded"):
        hub.file_size("openai-community/gpt2", "model.safetensors")
    with pytest.raises(FileNotFoundError, match="only the main revision"):
        hub.hf_hub_download("openai-community/gpt2", "config.json", revision="v1.0")


@pytest.mark.parametrize("filename", ["tokenizer.json", "validation.parquet", "train.parquet"])
def test_a_missing_stand_in_names_the_file_and_the_fix(data_copy, filename):
    removed = data_copy / "corpus" / filename
    removed.unlink()
    with pytest.raises(hub.HubFileMissing) as error:
        hub.course_tokenizer() if filename == "tokenizer.json" else hub.course_pairs("validation")
    assert str(removed) in str(error.value) and "git checkout -- data/" in str(error.value)


@pytest.mark.parametrize(
    "damage",
    ["config.json", "refs/main", "file_sizes.json", "the whole cache"],
)
def test_a_missing_shipped_file_names_the_file_and_the_fix(data_copy, damage):
    cache = data_copy / "hub"
    gpt2 = cache / "models--openai-community--gpt2"
    removed = {
        "config.json": gpt2 / "snapshots" / hub.SHIPPED_REVISION / "config.json",
        "refs/main": gpt2 / "refs" / "main",
        "file_sizes.json": cache / "file_sizes.json",
        "the whole cache": cache,
    }[damage]
    shutil.rmtree(removed) if removed.is_dir() else removed.unlink()
    with pytest.raises(hub.HubFileMissing) as error:
        if damage == "file_sizes.json":
            hub.file_size("Helsinki-NLP/opus-mt-en-ru", "pytorch_model.bin")
        else:
            hub.hf_hub_download("openai-community/gpt2", "config.json")
    assert str(removed) in str(error.value)
    assert "git checkout -- data/" in str(error.value)
    assert isinstance(error.value, FileNotFoundError)


def damage_file(cache, repo_type, repo_id, filename, data):
    if (repo_type, repo_id) in hub.STAND_INS:
        path = cache.parent / hub.STAND_INS[repo_type, repo_id][filename]
    else:
        path = snapshot_path(cache, repo_type, repo_id, filename)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "what, data",
    [
        ("config", b'{"n_embd": 768,'),  # cut short
        ("config", b"\xff\xfe not text"),
        ("tokenizer", b"{not json"),
        ("tokenizer", b'{"version": "1.0", "model": 42}'),  # JSON, but not a tokenizer
        ("pairs", b"PAR1 this is not a parquet file PAR1"),  # right magic bytes, wrong inside
        ("pairs", b"hello"),
        ("pairs", "columns"),  # a valid Parquet file without the en, ru columns
        ("sizes", b"[1, 2]"),
        ("sizes", b'{"sizes": {"Helsinki-NLP/opus-mt-en-ru": {"pytorch_model.bin": "big"}}}'),
    ],
)
def test_a_corrupt_shipped_file_names_the_file_and_the_fix(data_copy, what, data):
    cache = data_copy / "hub"
    if data == "columns":
        data = parquet_bytes(pd.DataFrame({"english": ["hi"]}))
    if what == "config":
        path = damage_file(cache, "model", "openai-community/gpt2", "config.json", data)
        load = lambda: hub.hf_hub_download("openai-community/gpt2", "config.json")  # noqa: E731
    elif what == "tokenizer":
        path = damage_file(cache, "model", *hub.COURSE_TOKENIZER, data)
        load = hub.course_tokenizer
    elif what == "pairs":
        name = "data/validation.parquet"
        path = damage_file(cache, "dataset", hub.COURSE_DATASET, name, data)
        load = hub.course_pairs
    else:
        path = cache / "file_sizes.json"
        path.write_bytes(data)
        load = lambda: hub.file_size("Helsinki-NLP/opus-mt-en-ru", "pytorch_model.bin")  # noqa: E731
    with pytest.raises(hub.HubFileCorrupt) as error:
        load()
    message = str(error.value)
    assert str(path) in message and "git checkout -- data/" in message
    assert isinstance(error.value, ValueError)
    # no library stack trace chained to it
    assert error.value.__cause__ is None
    assert error.value.__context__ is None or error.value.__suppress_context__


def test_without_a_checkout_offline_says_so(offline, monkeypatch):
    monkeypatch.setattr("tfs.env.repo_root", lambda: None)
    with pytest.raises(hub.HubFileMissing, match="without the course's checkout"):
        hub.hf_hub_download("openai-community/gpt2", "config.json")


# ---------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: hub.hf_hub_download(123, "config.json"), TypeError),
        (lambda: hub.hf_hub_download(None, "config.json"), TypeError),
        (lambda: hub.hf_hub_download("openai-community/gpt2", b"config.json"), TypeError),
        (lambda: hub.hf_hub_download("", "config.json"), ValueError),
        (lambda: hub.hf_hub_download("openai-community/gpt2", " "), ValueError),
        (lambda: hub.hf_hub_download("openai-community/gpt2", "config.json", "modle"), ValueError),
        (lambda: hub.file_size(["Helsinki-NLP/opus-mt-en-ru"], "pytorch_model.bin"), TypeError),
        (lambda: hub.file_size("Helsinki-NLP/opus-mt-en-ru", None), TypeError),
        (lambda: hub.course_pairs("test"), ValueError),
        (lambda: hub.course_pairs("Validation"), ValueError),
        (lambda: hub.course_pairs(0), TypeError),
    ],
)
def test_bad_arguments_are_named(offline, call, error):
    with pytest.raises(error) as raised:
        call()
    assert any(word in str(raised.value) for word in ("repo_id", "filename", "repo_type", "split"))


# ---------------------------------------------------------------- online, and falling back


@pytest.fixture
def online(monkeypatch, tmp_path):
    """The source decided "online" (as if the Hub answered), with a temporary user cache."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.delenv("TFS_DATA_DIR", raising=False)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "user-cache"))
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=hub.PROBE_TIMEOUT_S: True)
    hub.reset_source()
    yield monkeypatch
    hub.reset_source()


def test_an_online_network_failure_falls_back_to_the_shipped_copy(online, capsys):
    # Mocked at the huggingface_hub boundary: a download raises what it raises when the
    # connection drops and nothing is cached; reading a cache (local_files_only) still works.
    real_download = huggingface_hub.hf_hub_download

    def no_connection(*args, **kwargs):
        if kwargs.get("local_files_only"):
            return real_download(*args, **kwargs)
        raise LocalEntryNotFoundError("connection lost")

    online.setattr(huggingface_hub, "hf_hub_download", no_connection)
    path = Path(hub.hf_hub_download("openai-community/gpt2", "config.json"))
    assert path.is_relative_to(DATA / "hub")
    assert hub.source() == "offline" and os.environ["HF_HUB_OFFLINE"] == "1"
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ONLINE_LINE and "LocalEntryNotFoundError" in lines[1] and len(lines) == 2


def test_an_online_failure_of_an_unshipped_file_is_raised(online):
    def no_connection(*args, **kwargs):
        raise LocalEntryNotFoundError("connection lost")

    online.setattr(huggingface_hub, "hf_hub_download", no_connection)
    with pytest.raises(LocalEntryNotFoundError):
        hub.hf_hub_download("openai-community/gpt2", "model.safetensors")


def test_an_online_error_that_is_not_the_network_is_raised(online):
    def refused(*args, **kwargs):
        raise PermissionError("403: gated repository")

    online.setattr(huggingface_hub, "hf_hub_download", refused)
    with pytest.raises(PermissionError):
        hub.hf_hub_download("openai-community/gpt2", "config.json")
    assert hub.source() == "online"


def test_an_online_metadata_failure_falls_back_to_the_recorded_size(online):
    def no_connection(self, *args, **kwargs):
        raise ConnectionError("connection lost")

    online.setattr(huggingface_hub.HfApi, "model_info", no_connection)
    assert hub.file_size("Helsinki-NLP/opus-mt-en-ru", "pytorch_model.bin") == OPUS_WEIGHTS_BYTES
    assert hub.source() == "offline"


def test_online_never_downloads_into_the_shipped_cache(online):
    online.setattr(hf_constants, "HF_HUB_CACHE", str(DATA / "hub"))
    with pytest.raises(ValueError, match="shipped cache"):
        hub.hf_hub_download("openai-community/gpt2", "config.json")


def run_python(code, **environment):
    """Run `code` in a fresh interpreter (huggingface_hub reads its settings at import)."""
    unset = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HF_HUB_CACHE")
    env = {name: value for name, value in os.environ.items() if name not in unset}
    env.update(environment, HF_HUB_DISABLE_PROGRESS_BARS="1", PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


FALLBACK = """
    import json, time
    from tfs import hub
    start = time.perf_counter()
    path = hub.hf_hub_download("openai-community/gpt2", "config.json")
    n_embd = json.load(open(path))["n_embd"]
    print(json.dumps({"seconds": time.perf_counter() - start, "path": path, "n_embd": n_embd}))
"""


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("hub_answer", ["refused", "silent"])
def test_an_unreachable_hub_falls_back_within_seconds(tmp_path, hub_answer):
    # "refused": nothing listens on the port; "silent": it accepts and never answers,
    # the slowest case (the probe waits its full time-out).
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        if hub_answer == "silent":
            listener.listen()
        else:
            listener.close()
        lines = run_python(
            FALLBACK,
            HF_ENDPOINT=f"http://127.0.0.1:{port}",
            HF_HOME=str(tmp_path / "home"),
            TFS_DATA_DIR=str(DATA),
        )
    assert lines[0] == UNREACHABLE_LINE
    result = json.loads(lines[1])
    assert result["n_embd"] == 768 and Path(result["path"]).is_relative_to(DATA / "hub")
    assert result["seconds"] < 5, result


@pytest.fixture
def fake_hub():
    """conftest's stand-in Hub serving a config, a tokenizer and a dataset file that differ
    from the shipped ones, and listing a weights file's size without serving it."""
    served_config = {"model_type": "gpt2", "n_embd": 640, "served_by": "the test's Hub"}
    served_pairs = pd.DataFrame(
        {"en": ["I see the cat.", "Hi."], "ru": ["Я вижу кошку.", "Привет."]}
    )
    repos = {
        "openai-community/gpt2": {"config.json": json.dumps(served_config).encode()},
        "xmarva/tfs-bpe-en-ru-16k": {"tokenizer.json": tiny_tokenizer().to_str().encode()},
        "datasets/xmarva/tfs-tatoeba-en-ru": {
            "data/validation.parquet": parquet_bytes(served_pairs)},
        "Helsinki-NLP/opus-mt-en-ru": {},  # listed, not served
    }
    sizes = {"Helsinki-NLP/opus-mt-en-ru": {"config.json": 139, "pytorch_model.bin": 12345}}
    with stand_in_hub(repos, sizes=sizes) as endpoint:
        yield endpoint, served_config, served_pairs


def test_online_downloads_from_the_hub_into_the_user_cache(tmp_path, fake_hub):
    endpoint, served_config, served_pairs = fake_hub
    user_cache = tmp_path / "user-cache"
    copy = copy_data(tmp_path / "data")
    before = served(copy)
    lines = run_python(
        """
        import json
        from tfs import hub
        path = hub.hf_hub_download("openai-community/gpt2", "config.json")
        size = hub.file_size("Helsinki-NLP/opus-mt-en-ru", "pytorch_model.bin")
        pairs = hub.course_pairs("validation")
        tokenizer = hub.course_tokenizer()
        print(json.dumps({"path": path, "config": json.load(open(path)), "size": size,
                          "pairs": pairs.to_dict("list"), "pad": tokenizer.token_to_id("<pad>"),
                          "vocab": tokenizer.get_vocab_size(), "source": hub.source()}))
        """,
        HF_ENDPOINT=endpoint,
        HF_HUB_CACHE=str(user_cache),
        HF_HOME=str(tmp_path / "home"),
        TFS_DATA_DIR=str(copy),
    )
    assert lines[0] == ONLINE_LINE and len(lines) == 2
    result = json.loads(lines[1])
    assert result["source"] == "online"
    assert Path(result["path"]).is_relative_to(user_cache)
    assert result["config"] == served_config
    assert result["size"] == 12345  # the Hub's metadata, not the recorded size
    assert result["pairs"] == served_pairs.to_dict("list")
    assert result["pad"] == 0 and result["vocab"] == tiny_tokenizer().get_vocab_size()
    assert (user_cache / "datasets--xmarva--tfs-tatoeba-en-ru").is_dir()
    assert served(copy) == before  # the shipped data was not touched
    assert "HEAD /" in StandInHub.requests  # the one quick probe
    assert "GET /openai-community/gpt2/resolve/main/config.json" in StandInHub.requests
    assert "GET /api/models/Helsinki-NLP/opus-mt-en-ru" in StandInHub.requests


# --- the course's own translator, standing in for opus-mt-en-ru's weights offline -------------

TRANSLATOR_LINE = (
    "offline: the course's own translator ({:,} parameters, trained on its generated corpus) "
    "stands in for Helsinki-NLP/opus-mt-en-ru's weights"
)


def test_offline_the_course_translator_stands_in_for_opus_mt(offline, capsys):
    pytest.importorskip("transformers")
    from tfs.marian import from_marian, marian_folder

    folder, where = marian_folder("Helsinki-NLP/opus-mt-en-ru")
    assert where == "stand-in" and folder == DATA / hub.STAND_IN_MODELS[
        "Helsinki-NLP/opus-mt-en-ru"]
    ours = from_marian(folder)
    n_parameters = sum(p.numel() for p in ours.parameters())
    lines = capsys.readouterr().out.splitlines()
    assert lines == [SHIPPED_LINE, TRANSLATOR_LINE.format(n_parameters)]
    assert marian_folder()[0] == folder and capsys.readouterr().out == ""  # said once
    for name in ("CARD.md", "LICENSE", "config.json", "tokenizer.json", "generation_config.json"):
        assert (folder / name).is_file(), name
    # not a copy of opus-mt-en-ru under its name: another, much smaller model
    opus = json.loads(Path(hub.hf_hub_download("Helsinki-NLP/opus-mt-en-ru", "config.json"))
                      .read_text())
    assert ours.vocab_size != opus["vocab_size"] and ours.d_model < opus["d_model"]


def test_the_stand_in_translates_the_course_sentence(offline):
    """What lesson 04 shows offline: Russian, the same tokens from transformers and from us."""
    transformers = pytest.importorskip("transformers")
    import torch

    from tfs.data import load_pairs
    from tfs.decoding import beam_search
    from tfs.marian import from_marian, generate_settings, marian_folder

    folder, _ = marian_folder()
    theirs = transformers.MarianMTModel.from_pretrained(folder).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    ours = from_marian(folder)
    twins = ("The researcher said she was exhausted.", "The researcher said he was exhausted.")
    reference = {r["en"]: r["ru"] for r in load_pairs("test_combinations")}  # held out
    batch = tokenizer(list(twins), return_tensors="pt", padding=True)
    with torch.no_grad():
        expected = theirs.generate(**batch, **generate_settings(ours, max_len=30))
    got = beam_search(ours, batch["input_ids"], None, tokenizer.eos_token_id, max_len=30)
    texts = tokenizer.batch_decode(got, skip_special_tokens=True)
    assert texts == tokenizer.batch_decode(expected, skip_special_tokens=True)
    # Russian: every letter Cyrillic, and close to the corpus's reference (chrF, 0-100)
    assert all(re.fullmatch(r"[А-Яа-яЁё ,.!?-]+", text) for text in texts), texts
    from tfs.train import corpus_scores

    assert corpus_scores(texts, [reference[english] for english in twins])["chrf"] > 60


def test_offline_a_model_without_a_stand_in_is_not_found(offline):
    from tfs.marian import marian_folder

    with pytest.raises(hub.HubFileMissing, match="not shipped"):
        marian_folder("Helsinki-NLP/opus-mt-en-de")
