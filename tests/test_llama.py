"""tfs.llama: a LlamaForCausalLM's weights in tfs.model.DecoderOnly, checked against it.

A tiny random Llama built offline (Llama 3.1 8B's shape ratios): the same scores within
1e-5, the same greedy tokens, the same sampled tokens from the same seed; and the configs
our model cannot represent are refused with a ValueError naming why.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from tfs import llama  # noqa: E402
from tfs.model import DecoderOnly, KVCache, RMSNorm, SwiGLU  # noqa: E402


@pytest.fixture(scope="module")
def pair():
    hf = llama.tiny_llama(seed=0)
    return hf, llama.from_llama(hf)


def prompts(seed=1, shape=(2, 9)):
    return torch.randint(0, 256, shape, generator=torch.Generator().manual_seed(seed))


def test_tiny_config_keeps_llama_31_ratios():
    config = llama.tiny_llama_config()
    assert config.intermediate_size / config.hidden_size == 14336 / 4096
    assert config.num_attention_heads // config.num_key_value_heads == 32 // 8
    assert config.rope_parameters["rope_theta"] == 500_000.0
    assert not config.tie_word_embeddings


def test_converted_model_is_a_llama_block(pair):
    _, ours = pair
    assert isinstance(ours, DecoderOnly)
    layer = ours.layers[0]
    assert isinstance(layer.norm1, RMSNorm) and isinstance(layer.feed_forward, SwiGLU)
    assert layer.self_attention.n_kv_heads == 2 and layer.self_attention.n_heads == 8


def test_same_parameter_count(pair):
    hf, ours = pair
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in hf.parameters())


def test_logits_within_1e_5(pair):
    hf, ours = pair
    ids = prompts()
    with torch.no_grad():
        assert (hf(ids).logits - ours(ids)).abs().max().item() < 1e-5


def test_cached_steps_equal_the_full_pass(pair):
    _, ours = pair
    ids = prompts(shape=(3, 8))
    with torch.no_grad():
        full = ours(ids)
        cache = KVCache(ours, ids, 8)
        steps = [ours(ids[:, :4], cache)] + [ours(ids[:, t : t + 1], cache) for t in range(4, 8)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)


def test_greedy_generation_identical(pair):
    hf, ours = pair
    ids = prompts()
    expected = hf.generate(ids, max_new_tokens=24, do_sample=False)
    assert torch.equal(llama.generate(ours, ids, 24), expected)


@pytest.mark.parametrize("seed", [0, 7])
def test_sampled_generation_identical_with_a_seed(pair, seed):
    hf, ours = pair
    ids = prompts()
    torch.manual_seed(seed)
    expected = hf.generate(ids, max_new_tokens=24, do_sample=True, top_k=50, temperature=0.8)
    torch.manual_seed(seed)
    got = llama.generate(ours, ids, 24, do_sample=True, top_k=50, temperature=0.8)
    assert torch.equal(got, expected)


def test_generation_stops_at_eos_and_pads():
    hf = llama.tiny_llama(seed=3)
    ours = llama.from_llama(hf)
    ids = prompts(seed=2, shape=(2, 5))
    first = llama.generate(ours, ids, 3)[:, 5]  # the first greedy token of each prompt
    out = llama.generate(ours, ids, 6, eos_id=int(first[0]), pad_id=0)
    assert (out[0, 6:] == 0).all()  # row 0 wrote eos first, then only pad


def test_names_cover_every_weight(pair):
    hf, ours = pair
    mapping = llama.names(2, tied=False)
    assert set(mapping) == set(ours.state_dict())
    assert set(mapping.values()) == set(hf.state_dict())


def test_tied_checkpoint_converts():
    config = llama.tiny_llama_config()
    config.tie_word_embeddings = True
    torch.manual_seed(0)
    hf = transformers.LlamaForCausalLM(config).eval()
    ours = llama.from_llama(hf)
    assert ours.output is None
    ids = prompts()
    with torch.no_grad():
        assert (hf(ids).logits - ours(ids)).abs().max().item() < 1e-5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"attention_bias": True}, "attention_bias"),
        ({"hidden_act": "gelu"}, "hidden_act"),
        ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0}},
         "rotary scaling"),
        ({"model_type": "mistral"}, "model_type"),
    ],
)
def test_unsupported_configs_are_refused(change, message):
    config = llama.tiny_llama_config().to_dict()
    config.update(change)
    with pytest.raises(ValueError, match=message):
        llama.variant_of(config)


def test_missing_and_extra_weights_are_refused(pair):
    hf, _ = pair
    weights = dict(hf.state_dict())
    weights.pop("model.norm.weight")
    with pytest.raises(ValueError, match="lacks 1 weights"):
        llama.convert(hf.config, weights)
    weights = dict(hf.state_dict(), extra=torch.zeros(1))
    with pytest.raises(ValueError, match="no place"):
        llama.convert(hf.config, weights)


def test_generate_rejects_bad_input(pair):
    _, ours = pair
    with pytest.raises(TypeError, match="DecoderOnly"):
        llama.generate(torch.nn.Linear(2, 2), prompts(), 3)
    with pytest.raises(ValueError, match="pad_id"):
        llama.generate(ours, prompts(), 3, eos_id=1)
