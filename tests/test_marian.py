"""tfs.marian: Hugging Face's MarianMTModel and our converted Transformer are the same model.

Offline: a tiny MarianConfig with random weights (tfs.marian.tiny_marian), as other courses
check their Llama against transformers. Same parameter count, the same scores within 1e-5
on padded batches, the same greedy and beam-4 tokens as `generate`, and clear refusals of
what our model cannot represent.
"""

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from tfs.decoding import beam_search, greedy  # noqa: E402
from tfs.marian import (  # noqa: E402
    OPUS_MT_EN_RU,
    TINY,
    convert,
    from_marian,
    generate_settings,
    load_opus_mt,
    names,
    save_tiny_marian,
    tiny_marian,
    translate,
    variant_of,
)
from tfs.model import Transformer, positional_encoding  # noqa: E402

VOCAB = 64
PAD, EOS = VOCAB - 1, 0  # Marian's: <pad> is the last token and the decoder's start


@pytest.fixture(scope="module")
def pair():
    """(MarianMTModel, our Transformer converted from it)."""
    theirs = tiny_marian(seed=0, vocab_size=VOCAB)
    return theirs, from_marian(theirs)


def padded(batch, longest, seed, first=None):
    """A right-padded batch of random ids (not <pad>), lengths 1..longest; `first`: the id
    every row starts with (the decoder's start token)."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, longest + 1, (batch,), generator=generator)
    lengths[0] = longest
    ids = torch.randint(0, PAD, (batch, longest), generator=generator)
    if first is not None:
        ids[:, 0] = first
    return ids.masked_fill(torch.arange(longest)[None, :] >= lengths[:, None], PAD)


def test_the_same_parameters_and_the_same_positional_table(pair):
    theirs, ours = pair
    ours_count = sum(p.numel() for p in ours.parameters())
    assert ours_count == theirs.num_parameters(only_trainable=True)
    # Marian also counts its two sinusoidal tables, frozen (not trained), as parameters
    tables = 2 * TINY["max_len"] * TINY["d_model"]
    assert ours_count + tables == sum(p.numel() for p in theirs.parameters())
    their_table = theirs.model.encoder.embed_positions.weight
    assert torch.allclose(ours.pe, their_table, atol=1e-7, rtol=0)
    assert not torch.allclose(positional_encoding(TINY["max_len"], TINY["d_model"]), their_table)


def test_the_same_scores_on_random_padded_batches(pair):
    theirs, ours = pair
    for seed in range(3):
        src = padded(5, 11, seed)
        tgt = padded(5, 9, seed + 10, first=PAD)  # the decoder starts from <pad>
        tgt_mask = (tgt != PAD).long()
        tgt_mask[:, 0] = 1  # the start token is read, though it is <pad>
        with torch.no_grad():
            expected = theirs(input_ids=src, attention_mask=(src != PAD).long(),
                              decoder_input_ids=tgt, decoder_attention_mask=tgt_mask).logits
            got = ours(src, tgt)
        assert got.shape == expected.shape == (5, 9, VOCAB)
        assert (got - expected).abs().max() <= 1e-5
        assert expected.std() > 0.1  # scores that differ: the check means something


def generate(theirs, ours, src, beam_size, length_penalty=1.0, max_len=24):
    with torch.no_grad():
        out = theirs.generate(
            input_ids=src, attention_mask=(src != PAD).long(),
            **generate_settings(ours, beam_size, length_penalty, max_len),
        )
    assert (out[:, 0] == PAD).all()  # their outputs start with the decoder's start token
    return out[:, 1:]


def end_lengths(out):
    """Each row's length up to and including its <eos>, 0 if it has none."""
    has_eos = (out == EOS).any(dim=1)
    return ((out == EOS).float().argmax(dim=1) + 1).masked_fill(~has_eos, 0)


def test_greedy_gives_the_tokens_of_generate(pair):
    theirs, ours = pair
    src = padded(8, 12, seed=0)
    expected = generate(theirs, ours, src, beam_size=1)
    got = greedy(ours, src, None, EOS, max_len=24)
    assert torch.equal(got, expected)
    assert set(end_lengths(got).tolist()) >= {0, 4}  # ended early, and cut at max_len
    with pytest.raises(ValueError, match="decoder start token"):
        greedy(ours, src, 1, EOS)  # Marian starts from <pad>, nothing else


def test_beam_search_gives_the_tokens_of_generate(pair):
    theirs, ours = pair
    src = padded(8, 12, seed=0)
    lengths = set()
    for length_penalty in (1.0, 0.0, 2.0):
        expected = generate(theirs, ours, src, 4, length_penalty)
        got = beam_search(ours, src, None, EOS, max_len=24, beam_size=4,
                          length_penalty=length_penalty)
        assert torch.equal(got, expected), f"length_penalty {length_penalty}"
        lengths |= set(end_lengths(got).tolist())
    assert len(lengths - {0}) >= 2 and 0 in lengths  # answers of several lengths, and cut


@pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses")  # not needed here
def test_a_saved_checkpoint_and_its_tokenizer_translate_as_generate_does(tmp_path):
    folder = save_tiny_marian(tmp_path / "tiny", seed=1, eos_bias=0.0)
    theirs = transformers.MarianMTModel.from_pretrained(folder).eval()
    tokenizer = transformers.MarianTokenizer.from_pretrained(folder)
    ours = from_marian(folder)  # config.json + model.safetensors
    assert ours.vocab_size == len(tokenizer) and ours.pad_id == tokenizer.pad_token_id
    sentences = ["I see the cat.", "Where is the bus stop?", "Thank you."]
    batch = tokenizer(sentences, return_tensors="pt", padding=True)
    with torch.no_grad():
        expected = theirs.generate(**batch, **generate_settings(ours, max_len=10))
    assert translate(ours, tokenizer, sentences, max_len=10) == tokenizer.batch_decode(
        expected, skip_special_tokens=True
    )
    # the same weights from a pytorch_model.bin (what opus-mt-en-ru's repository holds)
    other = tmp_path / "bin"
    other.mkdir()
    (other / "config.json").write_text((folder / "config.json").read_text())
    torch.save(theirs.state_dict(), other / "pytorch_model.bin")
    from_bin = from_marian(other)
    for name, tensor in ours.state_dict().items():
        assert torch.equal(tensor, from_bin.state_dict()[name]), name


def test_the_name_map_covers_every_weight_once(pair):
    theirs, ours = pair
    mapping = names(TINY["n_layers"])
    assert sorted(mapping) == sorted(ours.state_dict())
    their_names = set(theirs.state_dict())
    assert set(mapping.values()) <= their_names
    assert len(set(mapping.values())) == len(mapping)
    their_norm2 = "model.decoder.layers.1.encoder_attn_layer_norm.weight"
    assert mapping["decoder.1.norm2.weight"] == their_norm2


def config_with(**changes):
    config = tiny_marian(seed=0, vocab_size=VOCAB).config.to_dict()
    config.update(changes)
    return config


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"normalize_before": True}, "pre-LN"),
        ({"tie_word_embeddings": False}, "output layer"),
        ({"share_encoder_decoder_embeddings": False}, "two embedding matrices"),
        ({"decoder_vocab_size": VOCAB + 1}, "separate source and target vocabularies"),
        ({"activation_function": "gelu"}, "activation_function 'gelu'"),
        ({"decoder_layers": 3}, "share n_layers"),
        ({"encoder_ffn_dim": 128}, "share d_ff"),
        ({"attention_dropout": 0.1}, "attention_dropout"),
        ({"add_final_layer_norm": True}, "extra LayerNorm"),
        ({"model_type": "bart"}, "model_type"),
    ],
)
def test_what_our_model_cannot_represent_is_refused_by_name(changes, words):
    with pytest.raises(ValueError, match=words):
        variant_of(config_with(**changes))


def test_checkpoints_that_do_not_fit_are_refused_by_name(pair):
    theirs, _ = pair
    config = theirs.config
    weights = dict(theirs.state_dict())
    untied = dict(weights, **{"lm_head.weight": weights["lm_head.weight"] + 1})
    with pytest.raises(ValueError, match="untied output layer"):
        convert(config, untied)
    extra = dict(weights, **{"model.encoder.layernorm_embedding.weight": torch.ones(32)})
    with pytest.raises(ValueError, match="no place in our model"):
        convert(config, extra)
    missing = {k: v for k, v in weights.items() if "decoder.layers.1.fc2.bias" not in k}
    with pytest.raises(ValueError, match="lacks 1 weights"):
        convert(config, missing)
    positions = dict(weights)
    positions["model.encoder.embed_positions.weight"] = positions[
        "model.encoder.embed_positions.weight"
    ].roll(1, dims=0)
    with pytest.raises(ValueError, match="sinusoidal table"):
        convert(config, positions)
    rounded = dict(weights)  # a stored table off by float rounding is used, as HF uses it
    rounded["model.decoder.embed_positions.weight"] = rounded[
        "model.decoder.embed_positions.weight"] + 1e-6
    with pytest.raises(ValueError, match="one table for both"):
        convert(config, rounded)
    rounded["model.encoder.embed_positions.weight"] = rounded[
        "model.decoder.embed_positions.weight"]
    assert torch.equal(convert(config, rounded).pe, rounded["model.decoder.embed_positions.weight"])
    with pytest.raises(TypeError, match="MarianMTModel or a folder"):
        from_marian(42)


def test_a_checkpoint_without_final_logits_bias_or_the_model_prefix_loads(pair):
    theirs, ours = pair
    stripped = {
        name.removeprefix("model."): tensor for name, tensor in theirs.state_dict().items()
        if name != "final_logits_bias"
    }
    loaded = convert(json.loads(theirs.config.to_json_string()), stripped)
    assert torch.equal(loaded.output_bias, torch.zeros(VOCAB))
    assert torch.equal(loaded.embedding.weight, ours.embedding.weight)
    assert isinstance(loaded, Transformer) and not loaded.training



def test_load_opus_mt_converts_the_hub_files(pair, tmp_path, monkeypatch):
    """load_opus_mt asks tfs.hub for config.json and pytorch_model.bin (the files of the real
    repository); here tfs.hub answers with a tiny model's (tests/test_marian_hub.py does it
    through HTTP, with a local server standing in for the Hub)."""
    theirs, ours = pair
    theirs.config.to_json_file(tmp_path / "config.json")
    torch.save(theirs.state_dict(), tmp_path / "pytorch_model.bin")  # as opus-mt-en-ru's
    asked = []

    def hub_file(repo_id, filename, **kwargs):
        asked.append((repo_id, filename))
        return str(tmp_path / filename)

    monkeypatch.setattr("tfs.hub.hf_hub_download", hub_file)
    loaded = load_opus_mt()
    assert sorted(asked) == [(OPUS_MT_EN_RU, "config.json"), (OPUS_MT_EN_RU, "pytorch_model.bin")]
    for name, tensor in ours.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[name]), name
