"""tfs.marian.export_marian: the course's Transformer saved as a Hugging Face Marian folder.

A small model trained for a few dozen steps on the course's corpus (so that its
translations differ from sentence to sentence), exported with the corpus's tokenizer, then
reloaded by `transformers` alone: the same scores, the same greedy and beam-4 tokens as
tfs.decoding, the same text as tfs.train.translate, in a fresh offline process that does
not import tfs; the round trip back into tfs gives the original weights exactly.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

transformers = pytest.importorskip("transformers")

from tfs import train as T  # noqa: E402
from tfs.data import load_pairs, load_tokenizer  # noqa: E402
from tfs.decoding import beam_search, greedy  # noqa: E402
from tfs.marian import export_marian, from_marian, halves_order, with_positions  # noqa: E402
from tfs.model import Transformer, Variant  # noqa: E402

MAX_LEN = 64  # positions of the test model: generate()'s default max_length
STEPS = 150  # about 20 s at one thread: translations that differ from sentence to sentence


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


@pytest.fixture(scope="module")
def ids(tokenizer):
    return {name: tokenizer.token_to_id(f"<{name}>") for name in ("pad", "bos", "eos", "unk")}


@pytest.fixture(scope="module")
def trained(tokenizer, ids):
    """A default-Variant Transformer (as lesson 05 builds it, smaller) after STEPS steps."""
    rows = load_pairs("train")
    src_ids = [tokenizer.encode(r["en"], add_special_tokens=False).ids for r in rows]
    tgt_ids = [tokenizer.encode(r["ru"], add_special_tokens=False).ids for r in rows]
    lengths = T.example_lengths(src_ids, tgt_ids)
    batches = (T.collate(src_ids, tgt_ids, b, ids["pad"], ids["bos"], ids["eos"])
               for b in T.batch_stream(lengths, 1500, seed=0))
    torch.manual_seed(0)
    model = Transformer(tokenizer.get_vocab_size(), 32, 4, 64, 2, 0.1, ids["pad"],
                        max_len=MAX_LEN)
    T.train(model, batches, STEPS, peak_lr=5e-3, progress=False)
    return model.eval()


@pytest.fixture(scope="module")
def folder(trained, tokenizer, tmp_path_factory):
    return export_marian(trained, tokenizer, tmp_path_factory.mktemp("exported") / "translator")


@pytest.fixture(scope="module")
def hf(folder):
    from transformers import AutoTokenizer, MarianMTModel

    return MarianMTModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def sentences():
    return [r["en"] for r in load_pairs("valid")[:12]]


def encoded(tokenizer, sentences, eos):
    return T.pad([tokenizer.encode(s, add_special_tokens=False).ids + [eos] for s in sentences],
                 tokenizer.token_to_id("<pad>"))


def until_eos(out, eos):
    """Each row's tokens up to and including its first <eos> (all of them if it has none).
    What follows differs: tfs.decoding pads with <pad>; transformers' beam search fills with
    <eos> when <pad> is id 0 (its `pad_token_id or eos_token_id`)."""
    rows = []
    for row in out.tolist():
        rows.append(row[: row.index(eos) + 1] if eos in row else row)
    return rows


def test_the_folder_holds_a_marian_model_and_a_fast_tokenizer(folder, hf, tokenizer, ids,
                                                             sentences):
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
            "tokenizer_config.json"} <= names
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "marian" and config["architectures"] == ["MarianMTModel"]
    assert config["decoder_start_token_id"] == ids["bos"]  # the course's decoder starts at <bos>
    model, their_tokenizer = hf
    assert isinstance(their_tokenizer, transformers.PreTrainedTokenizerFast)
    for name, i in ids.items():
        assert getattr(their_tokenizer, f"{name}_token_id") == i
    batch = their_tokenizer(sentences, padding=True, return_tensors="pt")
    assert torch.equal(batch["input_ids"], encoded(tokenizer, sentences, ids["eos"]))
    assert torch.equal(batch["attention_mask"], (batch["input_ids"] != ids["pad"]).long())
    # every weight comes from the file: nothing left for transformers to initialise at random
    _, info = transformers.MarianMTModel.from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    # the positional tables, not saved, are recomputed on load: Marian's halves table
    table = model.model.encoder.embed_positions.weight
    assert torch.allclose(table, from_marian(folder).pe, atol=1e-6, rtol=0)


def test_transformers_computes_our_scores(trained, hf, tokenizer, ids, sentences):
    model, _ = hf
    src = encoded(tokenizer, sentences, ids["eos"])  # (B, T_src), padded
    generator = torch.Generator().manual_seed(0)
    tgt = torch.randint(4, trained.vocab_size, (len(sentences), 9), generator=generator)
    tgt[:, 0] = ids["bos"]
    with torch.no_grad():
        ours = trained(src, tgt)
        theirs = model(input_ids=src, attention_mask=(src != ids["pad"]).long(),
                       decoder_input_ids=tgt).logits
    assert (ours - theirs).abs().max() < 1e-4
    assert ours.std() > 0.5  # scores that differ: the comparison means something


@pytest.mark.parametrize("num_beams", [1, 4])
def test_generate_gives_our_tokens(trained, hf, tokenizer, ids, sentences, num_beams):
    model, their_tokenizer = hf
    batch = their_tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        theirs = model.generate(**batch, num_beams=num_beams, max_new_tokens=30)
    decode = greedy if num_beams == 1 else beam_search
    kwargs = {} if num_beams == 1 else {"beam_size": num_beams}
    ours = decode(trained, batch["input_ids"], ids["bos"], ids["eos"], max_len=30, **kwargs)
    assert torch.equal(theirs[:, 0], torch.full((len(sentences),), ids["bos"]))
    assert until_eos(theirs[:, 1:], ids["eos"]) == until_eos(ours, ids["eos"])
    texts = their_tokenizer.batch_decode(theirs, skip_special_tokens=True)
    assert texts == T.translate(trained, tokenizer, sentences, ids["bos"], ids["eos"],
                                beam_size=num_beams, max_len=30)
    assert len(set(texts)) >= len(sentences) // 3  # varied translations, not one string


def test_the_default_generate_is_beam_4(trained, hf, ids, sentences):
    """generation_config.json: 4 beams, <pad> and <bos> banned, max_length = positions."""
    model, their_tokenizer = hf
    batch = their_tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        theirs = model.generate(**batch)
    ours = beam_search(trained, batch["input_ids"], ids["bos"], ids["eos"],
                       max_len=MAX_LEN - 1, beam_size=4)
    assert until_eos(theirs[:, 1:], ids["eos"]) == until_eos(ours, ids["eos"])
    greedy_ours = greedy(trained, batch["input_ids"], ids["bos"], ids["eos"], max_len=MAX_LEN - 1)
    assert not torch.equal(greedy_ours, ours)  # beam 4 is not greedy here: the check can fail


OFFLINE = """
    import json, sys
    import transformers
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    folder, sentences = sys.argv[1], json.loads(sys.argv[2])
    if "translation" in transformers.pipelines.SUPPORTED_TASKS:  # transformers 4
        translator = transformers.pipeline("translation", model=folder)
        texts = [t["translation_text"] for t in translator(sentences, max_new_tokens=30)]
        how = "pipeline"
    else:  # transformers 5 removed the translation pipeline: what it did, by hand
        tokenizer = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForSeq2SeqLM.from_pretrained(folder)
        batch = tokenizer(sentences, return_tensors="pt", padding=True)
        texts = tokenizer.batch_decode(model.generate(**batch, max_new_tokens=30),
                                       skip_special_tokens=True)
        how = "generate"
    print(json.dumps({"how": how, "texts": texts, "tfs": "tfs" in sys.modules}))
"""


def test_transformers_alone_translates_offline(trained, folder, tokenizer, ids, sentences,
                                               tmp_path):
    """A fresh process, offline, with an empty Hub cache, that never imports tfs."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HF_ENDPOINT")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(tmp_path / "home"),
               HF_HUB_CACHE=str(tmp_path / "cache"), OMP_NUM_THREADS="1",
               PYTHONWARNINGS="ignore", TRANSFORMERS_VERBOSITY="error")
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(OFFLINE), str(folder), json.dumps(sentences)],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    answer = json.loads(result.stdout.splitlines()[-1])
    assert not answer["tfs"]
    assert answer["texts"] == T.translate(trained, tokenizer, sentences, ids["bos"],
                                          ids["eos"], beam_size=4, max_len=30)


def test_the_round_trip_gives_our_weights_back(trained, folder):
    back = from_marian(folder)  # Marian's layout: positions in halves, a (zero) output bias
    assert back.variant == Variant(positions="halves", output_bias=True, decoder_start_id=1)
    assert not back.output_bias.any()
    ours = with_positions(back, "interleaved").state_dict()
    original = trained.state_dict()
    assert set(ours) == set(original) | {"output_bias"}
    for name, tensor in original.items():
        assert torch.equal(ours[name], tensor), name


def test_with_positions_reorders_the_stream_and_changes_no_score(trained, tokenizer, ids,
                                                                sentences):
    src = encoded(tokenizer, sentences, ids["eos"])
    tgt = torch.full((len(sentences), 1), ids["bos"])
    halves = with_positions(trained, "halves")
    order = halves_order(trained.d_model)
    assert torch.equal(halves.embedding.weight, trained.embedding.weight[:, order])
    assert torch.allclose(halves.pe, trained.pe[:, order], atol=1e-5, rtol=0)
    with torch.no_grad():
        assert (halves(src, tgt) - trained(src, tgt)).abs().max() < 1e-4
        # reordering the embedding alone is not a symmetry: the check can fail
        broken = with_positions(trained, "halves")
        broken.embedding.weight.copy_(trained.embedding.weight)
        assert (broken(src, tgt) - trained(src, tgt)).abs().max() > 0.1
    assert with_positions(halves, "halves").state_dict().keys() == halves.state_dict().keys()
    assert torch.equal(with_positions(halves, "halves").embedding.weight, halves.embedding.weight)


def test_another_variant_exports_too(tokenizer, ids, tmp_path):
    """SiLU, no embedding scale, an output bias: each lands in the config and the weights."""
    from transformers import MarianMTModel

    torch.manual_seed(1)
    variant = Variant(activation="swish", scale_embeddings=False, output_bias=True)
    model = Transformer(tokenizer.get_vocab_size(), 16, 2, 32, 1, 0.0, ids["pad"], max_len=32,
                        variant=variant).eval()
    model.output_bias.normal_()
    folder = export_marian(model, tokenizer, tmp_path / "variant")
    config = json.loads((folder / "config.json").read_text())
    assert config["activation_function"] == "swish" and config["scale_embedding"] is False
    theirs = MarianMTModel.from_pretrained(folder).eval()
    src = encoded(tokenizer, ["I see the cat."], ids["eos"])
    tgt = torch.tensor([[ids["bos"], 10, 11]])
    with torch.no_grad():
        expected = theirs(input_ids=src, decoder_input_ids=tgt).logits
        assert (model(src, tgt) - expected).abs().max() < 1e-4


def test_bad_input_is_named(trained, tokenizer, tmp_path):
    with pytest.raises(TypeError, match="tfs.model.Transformer"):
        export_marian(object(), tokenizer, tmp_path / "a")
    with pytest.raises(TypeError, match="tokenizers.Tokenizer"):
        export_marian(trained, "tokenizer", tmp_path / "a")
    with pytest.raises(ValueError, match="no bos_token '<s>'"):
        export_marian(trained, tokenizer, tmp_path / "a", bos_token="<s>")
    with pytest.raises(TypeError, match="unexpected keyword"):
        export_marian(trained, tokenizer, tmp_path / "a", sep_token="<sep>")
    smaller = Transformer(100, 32, 4, 64, 1, 0.0, 0)
    with pytest.raises(ValueError, match="1,?200 tokens, the model 100"):
        export_marian(smaller, tokenizer, tmp_path / "a")
    other_pad = Transformer(tokenizer.get_vocab_size(), 32, 4, 64, 1, 0.0, 5)
    with pytest.raises(ValueError, match="pad_id is 5"):
        export_marian(other_pad, tokenizer, tmp_path / "a")
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="not a folder"):
        export_marian(trained, tokenizer, tmp_path / "file")
    with pytest.raises(ValueError, match="num_beams"):
        export_marian(trained, tokenizer, tmp_path / "a", num_beams=0)
    with pytest.raises(ValueError, match="positions must be"):
        with_positions(trained, "rotary")
    with pytest.raises(TypeError, match="tfs.model.Transformer"):
        with_positions(torch.nn.Linear(2, 2), "halves")
