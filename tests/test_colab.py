"""The Colab reader: tfs installed from its wheel, the lessons' data found without a checkout.

On Colab and Kaggle a lesson arrives alone; its set-up cell installs tfs from git, and there is
no checkout. These tests build the wheel once (scripts/colab.py: `pip wheel --no-deps` from a
copy of the files git would commit), install it with `pip install --no-deps --target` into an
empty folder (the dependencies are the course's), and, in fresh interpreters whose only extra
path is that folder and whose working folder lies outside the repository, make the lessons'
own data-loading calls: offline, and against a local server standing in for the Hub. Then
lesson 00 runs whole there with papermill (its asserts are the checks). `make colab` runs
every lesson so. About 1.5 minutes of CPU in all, two thirds of it lesson 00 (measured: 285 s
of wall time on a 2-core machine busy with other jobs).
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
from conftest import stand_in_hub

from tfs import bpe, data, hub

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "colab.py"
spec = importlib.util.spec_from_file_location("colab", SCRIPT)
colab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(colab)

CONFIG_REPOS = ("openai-community/gpt2", "Helsinki-NLP/opus-mt-en-ru",
                "unsloth/Meta-Llama-3.1-8B", "deepseek-ai/DeepSeek-V3")
ONLINE_LINE = "Hub files: downloaded from the Hugging Face Hub"
OFFLINE_LINE = ("Hub files: offline (the environment asks for offline use); the models' configs "
                "are copies that come with the course")

# The calls the lessons make to read their data, as they make them (lesson 04: the course's
# tokenizer and pairs, four configs, a weights file's size, opus-mt-en-ru or its tiny stand-in;
# lesson 05: the generated corpus, its tokenizer, and lesson 04's pairs as out-of-domain test).
READER = """
import json
import sys
from pathlib import Path

import tfs
from tfs import env, hub
from tfs.data import ALL_SPLITS, load_pairs, load_tokenizer

seen = {"tfs": tfs.__file__, "repo_root": env.repo_root(), "about": env.about(),
        "data_dir": str(hub.data_dir()), "sys_path": sys.path, "cwd": str(Path.cwd())}
tokenizer = hub.course_tokenizer()
seen["course_vocab"] = tokenizer.get_vocab_size()
seen["course_pairs"] = {split: len(hub.course_pairs(split)) for split in hub.SPLITS}
seen["configs"] = {}
for repo in sys.argv[1].split(","):
    path = hub.hf_hub_download(repo, "config.json")
    with open(path, encoding="utf-8") as file:
        seen["configs"][repo] = [path, json.load(file)]
seen["weights_bytes"] = hub.file_size("Helsinki-NLP/opus-mt-en-ru", "pytorch_model.bin")

from transformers import MarianMTModel  # lesson 04, section 7

from tfs.marian import from_marian, marian_folder

folder, seen["marian"] = marian_folder("Helsinki-NLP/opus-mt-en-ru")
MarianMTModel.from_pretrained(folder)
seen["marian_parameters"] = sum(p.numel() for p in from_marian(folder).parameters())

from tfs import bpe  # lesson 06: GPT-4's cl100k_base, read offline by tiktoken

seen["cl100k_tokens"] = len(bpe.cl100k_base().encode("Исследовательница сказала: hello"))

seen["gen_pairs"] = {split: load_pairs(split) for split in ALL_SPLITS}  # lesson 05
seen["gen_vocab"] = load_tokenizer().get_vocab_size()
print("READER " + json.dumps(seen, default=str))
"""


NEEDS_GIT = "the wheel is built from the files git tracks: needs git and a clone"
HAS_GIT = shutil.which("git") is not None and (ROOT / ".git").exists()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel, site): tfs's wheel, and the empty folder it was installed into with --target."""
    if not HAS_GIT:
        pytest.skip(NEEDS_GIT)
    folder = tmp_path_factory.mktemp("colab")
    wheel = colab.build_wheel(folder / "dist")
    return wheel, colab.install_wheel(wheel, folder / "site")


def outside(tmp_path):
    """A working folder outside the repository."""
    folder = tmp_path / "reader"
    folder.mkdir()
    assert not folder.resolve().is_relative_to(ROOT.resolve())
    return folder


def read_as_a_reader(site, folder, **extra):
    """Run READER in a fresh interpreter with tfs from `site` only; what it saw."""
    environment = colab.reader_environment(site, folder / "work")
    environment.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", **extra)
    environment = {name: value for name, value in environment.items() if value is not None}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(READER), ",".join(CONFIG_REPOS)],
        cwd=folder, env=environment, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    seen = json.loads(next(line for line in lines if line.startswith("READER "))[7:])
    return lines, seen


def assert_no_checkout(seen, site):
    installed = (Path(site) / "tfs").resolve()
    assert Path(seen["tfs"]).resolve().is_relative_to(installed)
    assert seen["repo_root"] is None
    assert seen["about"].startswith("tfs ") and "installed from a wheel" in seen["about"]
    assert not Path(seen["cwd"]).resolve().is_relative_to(ROOT.resolve())
    # the checkout's folder is not on the path (the course's venv may live inside it: the
    # dependencies come from there, tfs does not)
    assert ROOT.resolve() not in {Path(entry or seen["cwd"]).resolve()
                                  for entry in seen["sys_path"]}


def the_checkouts_data():
    """What the lessons read from the checkout's data/, to compare the installed copy with."""
    return {
        "course_vocab": hub.course_tokenizer().get_vocab_size(),
        "course_pairs": {split: len(hub.course_pairs(split)) for split in hub.SPLITS},
        "gen_pairs": {split: data.load_pairs(split) for split in data.ALL_SPLITS},
        "gen_vocab": data.load_tokenizer().get_vocab_size(),
        "cl100k_tokens": len(bpe.cl100k_base().encode("Исследовательница сказала: hello")),
    }


# ---------------------------------------------------------------- the wheel


def test_the_wheel_holds_every_file_git_has_under_data_and_tfs(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    tracked = colab.source_files()
    expected_data = {"tfs/_data/" + name.removeprefix("data/")
                     for name in tracked if name.startswith("data/")}
    assert {name for name in names if name.startswith("tfs/_data/")} == expected_data
    assert len(expected_data) >= 40  # cards, licences, corpora, tokenizers, configs
    code = {name for name in tracked if name.startswith("tfs/") and name.endswith(".py")}
    assert code <= names, sorted(code - names)  # no sub-package missing from pyproject.toml


@pytest.mark.skipif(not HAS_GIT, reason=NEEDS_GIT)
def test_the_sdist_holds_every_file_git_has_under_data(tmp_path):
    """pip install git+... builds the wheel from the clone, a wheel from an sdist from it:
    both hold data/, the sdist as data/ and the wheel built from it as tfs/_data."""
    sdist = colab.build("sdist", tmp_path / "sdist")
    with tarfile.open(sdist) as archive:
        members = {member.name.split("/", 1)[1] for member in archive.getmembers()
                   if member.isfile()}
    expected = {name for name in colab.source_files() if name.startswith("data/")}
    assert {name for name in members if name.startswith("data/")} == expected
    assert "pyproject.toml" in members


def test_the_installed_copy_is_byte_for_byte_data(installed):
    _, site = installed
    for name in colab.source_files():
        if name.startswith("data/"):
            copy = site / "tfs" / "_data" / name.removeprefix("data/")
            assert copy.read_bytes() == (ROOT / name).read_bytes(), name


# ---------------------------------------------------------------- the lessons' data, no checkout


@pytest.fixture(scope="module")
def checkout_data():
    previous = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    hub.reset_source()
    try:
        return the_checkouts_data()
    finally:
        hub.reset_source()
        if previous is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = previous


def test_offline_every_lesson_reads_the_data_installed_with_tfs(installed, checkout_data,
                                                                   tmp_path):
    _, site = installed
    lines, seen = read_as_a_reader(site, outside(tmp_path))
    assert_no_checkout(seen, site)
    installed_data = (site / "tfs" / "_data").resolve()
    assert Path(seen["data_dir"]).resolve() == installed_data
    assert OFFLINE_LINE in lines
    assert any(line.startswith("offline: the course's own hand-written corpus") for line in lines)
    for repo, (path, config) in seen["configs"].items():
        assert Path(path).resolve().is_relative_to(installed_data / "hub"), repo
        shipped = ROOT / "data" / "hub" / f"models--{repo.replace('/', '--')}"
        assert config == json.loads(next(shipped.glob("snapshots/*/config.json")).read_text())
    recorded = json.loads((ROOT / "data" / "hub" / "file_sizes.json").read_text())["sizes"]
    assert seen["weights_bytes"] == recorded["Helsinki-NLP/opus-mt-en-ru"]["pytorch_model.bin"]
    assert seen["marian"] == "stand-in" and seen["marian_parameters"] > 0
    for key, value in checkout_data.items():
        assert seen[key] == value, key


def test_against_a_stand_in_hub_the_lessons_download_and_lesson_05_reads_the_installed_corpus(
        installed, checkout_data, tmp_path):
    from tfs.marian import save_tiny_marian

    _, site = installed
    tiny = save_tiny_marian(tmp_path / "tiny-marian", seed=0, weights_file="pytorch_model.bin",
                            eos_bias=0.0)
    shipped = ROOT / "data" / "hub"
    repos = {repo: {"config.json": next(shipped.glob(
        f"models--{repo.replace('/', '--')}/snapshots/*/config.json"))}
        for repo in CONFIG_REPOS if repo != "Helsinki-NLP/opus-mt-en-ru"}
    repos["Helsinki-NLP/opus-mt-en-ru"] = tiny  # its config and weights: the tiny stand-in
    repos["xmarva/tfs-bpe-en-ru-16k"] = {"tokenizer.json": ROOT / "data/corpus/tokenizer.json"}
    repos["datasets/xmarva/tfs-tatoeba-en-ru"] = {
        f"data/{split}.parquet": ROOT / f"data/corpus/{split}.parquet" for split in hub.SPLITS}
    with stand_in_hub(repos) as endpoint:
        lines, seen = read_as_a_reader(
            site, outside(tmp_path), HF_HUB_OFFLINE=None, HF_ENDPOINT=endpoint,
            HF_HUB_CACHE=str(tmp_path / "hub-cache"), HF_HUB_DISABLE_PROGRESS_BARS="1")
    assert_no_checkout(seen, site)
    assert lines[0] == ONLINE_LINE and not any("offline" in line for line in lines)
    for repo, (path, _) in seen["configs"].items():
        assert Path(path).resolve().is_relative_to((tmp_path / "hub-cache").resolve()), repo
    assert seen["weights_bytes"] == (tiny / "pytorch_model.bin").stat().st_size
    assert seen["marian"] == "downloaded"
    for key, value in checkout_data.items():  # the stand-in served the checkout's own files
        assert seen[key] == value, key


# ---------------------------------------------------------------- a missing or damaged file

DAMAGED = """
from tfs import bpe, data, hub

for call in (lambda: data.load_pairs("train"),
             lambda: hub.hf_hub_download("openai-community/gpt2", "config.json"),
             lambda: hub.course_tokenizer()):
    try:
        call()
    except (FileNotFoundError, ValueError) as error:
        print(type(error).__name__, "|", error)
    else:
        print("no error")
"""


def test_a_missing_or_damaged_installed_file_is_named_with_how_to_reinstall(installed,
                                                                             tmp_path):
    _, site = installed
    copy = shutil.copytree(site, tmp_path / "site")
    installed_data = copy / "tfs" / "_data"
    (installed_data / "gen_en_ru" / "train.tsv").unlink()
    config = next(installed_data.glob("hub/models--openai-community--gpt2/snapshots/*/*.json"))
    config.write_text('{"n_embd": 7', encoding="utf-8")  # truncated
    (installed_data / "corpus" / "tokenizer.json").unlink()
    folder = outside(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(DAMAGED)], cwd=folder, capture_output=True,
        env=colab.reader_environment(copy, folder / "work"), text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    errors = [line.split(" | ") for line in result.stdout.splitlines() if " | " in line]
    names = [name for name, _ in errors]
    assert names == ["CorpusMissing", "HubFileCorrupt", "HubFileMissing"], result.stdout
    damaged = (installed_data / "gen_en_ru" / "train.tsv", config,
               installed_data / "corpus" / "tokenizer.json")
    for (_, message), path in zip(errors, damaged, strict=True):
        assert str(path.resolve()) in message or str(path) in message, message
        assert 'pip install --force-reinstall --no-deps "git+https://' in message
        assert "git checkout" not in message  # there is no checkout to restore it from


# ---------------------------------------------------------------- where tfs.hub looks


def test_tfs_data_dir_overrides_the_checkout_and_the_installed_copy(monkeypatch, tmp_path):
    monkeypatch.setenv("TFS_DATA_DIR", str(tmp_path))
    assert hub.data_dir() == tmp_path
    with pytest.raises(data.CorpusMissing, match=str(tmp_path / "gen_en_ru")) as error:
        data.corpus_dir()
    assert "TFS_DATA_DIR" in str(error.value) and str(tmp_path) in str(error.value)
    monkeypatch.delenv("TFS_DATA_DIR")
    assert hub.data_dir() == ROOT / "data"  # imported from the checkout: its data/
    assert hub.restore_hint() == hub.RESTORE


def test_without_a_checkout_the_installed_copy_is_used(monkeypatch, tmp_path):
    monkeypatch.delenv("TFS_DATA_DIR", raising=False)
    valid = data.load_pairs("valid")  # from the checkout's data/
    monkeypatch.setattr("tfs.env.repo_root", lambda: None)
    monkeypatch.setattr(hub, "installed_data_dir", lambda: tmp_path / "_data")
    with pytest.raises(hub.HubFileMissing) as error:
        hub.data_dir()
    message = str(error.value)
    assert str(tmp_path / "_data") in message and "pip install --force-reinstall" in message
    shutil.copytree(ROOT / "data" / "gen_en_ru", tmp_path / "_data" / "gen_en_ru")
    assert hub.data_dir() == tmp_path / "_data"
    assert data.load_pairs("valid") == valid
    assert data.corpus_dir() == tmp_path / "_data" / "gen_en_ru"
    assert hub.restore_hint() == hub.REINSTALL


def test_the_installed_copy_is_the_package_folder_pyproject_names():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"tfs.{hub.INSTALLED_DATA}" = "data"' in text
    assert hub.installed_data_dir() == Path(hub.__file__).resolve().parent / hub.INSTALLED_DATA


# ---------------------------------------------------------------- lesson 00, whole


def test_lesson_00_runs_whole_outside_the_checkout(installed, tmp_path):
    pytest.importorskip("papermill")
    _, site = installed
    lesson = next((ROOT / "notebooks").glob("00_*.ipynb"))
    folder = outside(tmp_path)
    environment = colab.reader_environment(site, folder / "work")
    environment["OMP_NUM_THREADS"] = "1"
    results = colab.run_lessons([lesson], folder / "lessons", environment)
    assert [status for _, _, status in results] == ["ok"]  # every cell ran, every assert held
    executed = json.loads((folder / "lessons" / f"{lesson.stem}.executed.ipynb").read_text())
    printed = "".join("".join(output.get("text", "")) for cell in executed["cells"]
                      for output in cell.get("outputs", []))
    assert "installed from a wheel" in printed  # the set-up cell's line: not the checkout
    assert "from your copy of the course" not in printed
