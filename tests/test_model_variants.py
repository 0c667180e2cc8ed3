"""Lesson 07's switches on tfs.model, each checked against the field's implementation.

RMSNorm = torch.nn.RMSNorm; SwiGLU = Shazeer (2020)'s formula; rotary positions in both
pairings = their references (transformers' apply_rotary_pos_emb for the halves, RoFormer's
complex-number form for adjacent pairs) and the permutation between them; the fused
attention = the written one; grouped-query attention with groups = heads = multi-head
attention; one expert = the dense SwiGLU; the defaults = the 2017 model.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from tfs import model as M
from tfs.model import (
    DecoderOnly,
    KVCache,
    MixtureOfExperts,
    MultiHeadAttention,
    RMSNorm,
    Rotary,
    SwiGLU,
    Transformer,
    Variant,
    apply_rotary,
    count_parameters,
    llama_variant,
    repeat_kv,
    rotary_angles,
)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# --- the defaults keep the 2017 model ---------------------------------------------------------


def test_default_variant_keeps_names_and_counts():
    torch.manual_seed(0)
    model = Transformer(13, 32, 4, 64, 2, 0.0, 0)
    names = set(model.state_dict())
    assert "encoder.0.norm1.bias" in names and "decoder.1.feed_forward.linear2.weight" in names
    assert not any("positions" in n or "rotary" in n or "encoder_norm" in n for n in names)
    assert sum(p.numel() for p in model.parameters()) == count_parameters(13, 32, 64, 2)
    assert isinstance(model.encoder[0].norm1, torch.nn.LayerNorm)
    assert isinstance(model.encoder[0].feed_forward, M.FeedForward)


# --- pre-LN -----------------------------------------------------------------------------------


def test_pre_ln_layer_matches_torch_norm_first():
    torch.manual_seed(0)
    ours = M.EncoderLayer(32, 4, 64, 0.0, variant=Variant(norm_position="pre")).eval()
    theirs = torch.nn.TransformerEncoderLayer(32, 4, 64, 0.0, batch_first=True,
                                              norm_first=True).eval()
    M.copy_to_torch(ours, theirs)
    x = randn(2, 5, 32)
    mask = M.causal_mask(5)
    torch.testing.assert_close(ours(x, mask), theirs(x, src_mask=mask[0, 0]), atol=1e-5,
                               rtol=1e-5)


def test_pre_ln_model_has_final_norms_and_runs():
    model = Transformer(13, 32, 4, 64, 2, 0.0, 0, variant=Variant(norm_position="pre"))
    assert hasattr(model, "encoder_norm") and hasattr(model, "decoder_norm")
    out = model(torch.randint(3, 13, (2, 6)), torch.randint(3, 13, (2, 5)))
    assert out.shape == (2, 5, 13)


# --- RMSNorm ----------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [1e-5, 1e-6])
def test_rmsnorm_equals_torch(eps):
    ours = RMSNorm(16, eps)
    theirs = torch.nn.RMSNorm(16, eps=eps)
    with torch.no_grad():
        ours.weight.copy_(randn(16, seed=1))
        theirs.weight.copy_(ours.weight)
    x = randn(3, 4, 16) * 5
    torch.testing.assert_close(ours(x), theirs(x))
    assert sum(p.numel() for p in ours.parameters()) == 16  # LayerNorm: 32


def test_rms_variant_builds_rmsnorm():
    layer = M.EncoderLayer(16, 2, 32, 0.0, variant=Variant(norm="rms"))
    assert isinstance(layer.norm1, RMSNorm)


# --- SwiGLU -----------------------------------------------------------------------------------


def test_swiglu_is_shazeers_formula():
    torch.manual_seed(0)
    ff = SwiGLU(16, 40)
    x = randn(2, 3, 16)
    W, V, W2 = ff.w_gate.weight.T, ff.w_up.weight.T, ff.w_down.weight.T
    expected = (F.silu(x @ W) * (x @ V)) @ W2  # FFN_SwiGLU(x) = (Swish(xW) * xV) W2
    torch.testing.assert_close(ff(x), expected)


def test_swiglu_at_two_thirds_has_the_dense_parameters():
    d = 48
    dense = M.FeedForward(d, 4 * d, bias=False)
    gated = SwiGLU(d, 2 * 4 * d // 3)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(gated) == count(dense)


# --- rotary positions ---------------------------------------------------------------------------


def test_rotary_halves_equals_transformers_apply_rotary_pos_emb():
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    d_k, T, base = 16, 7, 500_000.0
    q, k = randn(2, 3, T, d_k, seed=1), randn(2, 3, T, d_k, seed=2)
    cos, sin = rotary_angles(T, d_k, base)
    hf_cos, hf_sin = torch.cat([cos, cos], -1)[None], torch.cat([sin, sin], -1)[None]
    q_ref, k_ref = llama.apply_rotary_pos_emb(q, k, hf_cos, hf_sin)
    torch.testing.assert_close(apply_rotary(q, cos, sin, "halves"), q_ref)
    torch.testing.assert_close(apply_rotary(k, cos, sin, "halves"), k_ref)


def test_rotary_angles_equal_transformers_rotary_embedding():
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4,
                                      rope_parameters={"rope_type": "default",
                                                       "rope_theta": 500_000.0})
    hf = LlamaRotaryEmbedding(config)
    x = torch.zeros(1, 9, 16)
    hf_cos, hf_sin = hf(x, torch.arange(9)[None])
    cos, sin = rotary_angles(9, 16, 500_000.0)
    torch.testing.assert_close(torch.cat([cos, cos], -1), hf_cos[0])
    torch.testing.assert_close(torch.cat([sin, sin], -1), hf_sin[0])


def test_rotary_adjacent_equals_complex_multiplication():
    # RoFormer / Meta's Llama: pairs (2i, 2i+1) are complex numbers times e^{i p theta_i}
    d_k, T = 8, 5
    x = randn(1, 2, T, d_k)
    cos, sin = rotary_angles(T, d_k)
    # Meta's precompute_freqs_cis and apply_rotary_emb (llama/model.py), written out
    freqs = 1.0 / (10_000.0 ** (torch.arange(0, d_k, 2).float() / d_k))
    freqs_cis = torch.polar(torch.ones(T, d_k // 2), torch.outer(torch.arange(T).float(), freqs))
    as_complex = torch.view_as_complex(x.reshape(1, 2, T, d_k // 2, 2))
    turned = torch.view_as_real(as_complex * freqs_cis)
    torch.testing.assert_close(apply_rotary(x, cos, sin, "adjacent"), turned.flatten(-2))


def test_the_permutation_maps_adjacent_onto_halves():
    d_k, T = 8, 6
    x = randn(2, T, d_k)
    cos, sin = rotary_angles(T, d_k)
    perm = torch.cat([torch.arange(0, d_k, 2), torch.arange(1, d_k, 2)])  # evens, then odds
    torch.testing.assert_close(apply_rotary(x, cos, sin, "adjacent")[..., perm],
                               apply_rotary(x[..., perm], cos, sin, "halves"))


@pytest.mark.parametrize("pairing", ["halves", "adjacent"])
def test_rotary_score_depends_only_on_the_offset(pairing):
    rotary = Rotary(8, 64, pairing=pairing)
    q, k = randn(1, 1, 1, 8, seed=3), randn(1, 1, 1, 8, seed=4)
    score = lambda m, n: (rotary(q, m) * rotary(k, n)).sum().item()  # noqa: E731
    assert math.isclose(score(3, 1), score(40, 38), abs_tol=1e-5)
    assert not math.isclose(score(3, 1), score(3, 2), abs_tol=1e-3)


def test_rotary_needs_even_d_k():
    with pytest.raises(ValueError, match="even d_k"):
        rotary_angles(4, 7)
    with pytest.raises(ValueError, match="even d_k"):
        Transformer(13, 30, 6, 32, 1, 0.0, 0, variant=Variant(position_scheme="rotary"))


@pytest.mark.parametrize("scheme", ["learned", "rotary", "none"])
def test_position_schemes_run_and_cache_matches_full_pass(scheme):
    torch.manual_seed(0)
    model = DecoderOnly(20, 32, 4, 64, 2, variant=Variant(position_scheme=scheme,
                                                          norm_position="pre")).eval()
    ids = torch.randint(0, 20, (2, 7))
    full = model(ids)
    cache = KVCache(model, ids, 16)
    steps = [model(ids[:, :3], cache)] + [model(ids[:, t : t + 1], cache) for t in range(3, 7)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_without_positions_the_encoder_ignores_order():
    torch.manual_seed(0)
    model = Transformer(13, 32, 4, 64, 1, 0.0, 0, variant=Variant(position_scheme="none"))
    src = torch.randint(3, 13, (1, 5))
    memory = model.encode(src)
    # no positions: the encoder is permutation-equivariant
    torch.testing.assert_close(model.encode(src.flip(1)), memory.flip(1), atol=1e-5, rtol=1e-5)


# --- fused attention ----------------------------------------------------------------------------


def test_fused_and_written_kernels_agree():
    torch.manual_seed(0)
    fused = MultiHeadAttention(32, 4)
    written = MultiHeadAttention(32, 4, kernel="written")
    written.load_state_dict(fused.state_dict())
    x = randn(2, 6, 32)
    mask = M.causal_mask(6)
    torch.testing.assert_close(fused(x, x, mask), written(x, x, mask), atol=1e-6, rtol=1e-5)
    q, k, v = randn(2, 4, 6, 8, seed=1), randn(2, 4, 6, 8, seed=2), randn(2, 4, 6, 8, seed=3)
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, is_causal=True),
                               M.attention(q, k, v, mask)[0], atol=1e-6, rtol=1e-5)


# --- grouped-query attention ----------------------------------------------------------------------


def test_gqa_with_groups_equal_heads_is_mha():
    torch.manual_seed(0)
    mha = MultiHeadAttention(32, 4)
    gqa = MultiHeadAttention(32, 4, n_kv_heads=4)
    gqa.load_state_dict(mha.state_dict())
    x = randn(2, 5, 32)
    torch.testing.assert_close(gqa(x, x), mha(x, x))


def test_gqa_equals_mha_with_repeated_key_value_weights():
    torch.manual_seed(0)
    gqa = MultiHeadAttention(32, 4, n_kv_heads=2)
    mha = MultiHeadAttention(32, 4)
    d_k = 8
    with torch.no_grad():
        for name in ("w_q", "w_o"):
            getattr(mha, name).load_state_dict(getattr(gqa, name).state_dict())
        for name in ("w_k", "w_v"):
            w = getattr(gqa, name).weight.view(2, d_k, 32).repeat_interleave(2, 0)
            b = getattr(gqa, name).bias.view(2, d_k).repeat_interleave(2, 0)
            getattr(mha, name).weight.copy_(w.reshape(32, 32))
            getattr(mha, name).bias.copy_(b.reshape(32))
    x = randn(2, 5, 32)
    torch.testing.assert_close(gqa(x, x), mha(x, x), atol=1e-6, rtol=1e-5)


def test_repeat_kv_equals_transformers():
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    x = randn(2, 3, 5, 4)
    torch.testing.assert_close(repeat_kv(x, 4), llama.repeat_kv(x, 4))


def test_gqa_cache_keeps_only_kv_heads():
    model = DecoderOnly(20, 32, 8, 64, 2, variant=Variant(n_kv_heads=2))
    ids = torch.randint(0, 20, (3, 4))
    cache = KVCache(model, ids, 10)
    model(ids, cache)
    assert cache.numel() == 2 * 2 * 3 * 4 * 2 * 4  # K and V, layers, B, T, kv heads, d_k


def test_bad_kv_heads():
    with pytest.raises(ValueError, match="divisible by n_kv_heads"):
        MultiHeadAttention(32, 4, n_kv_heads=3)


# --- mixture of experts ---------------------------------------------------------------------------


def test_one_expert_is_the_dense_layer():
    torch.manual_seed(0)
    moe = MixtureOfExperts(16, 32, n_experts=1, top_k=1)
    x = randn(2, 5, 16)
    torch.testing.assert_close(moe(x), moe.experts[0](x))
    assert moe.load.tolist() == [1.0]
    assert math.isclose(moe.balance_loss.item(), 1.0, abs_tol=1e-6)


def test_moe_routes_each_token_to_top_k_experts():
    torch.manual_seed(0)
    moe = MixtureOfExperts(16, 32, n_experts=4, top_k=2)
    x = randn(1, 6, 16)
    out = moe(x)
    tokens = x.reshape(-1, 16)
    probs = moe.router(tokens).softmax(-1)
    top_p, top_i = probs.topk(2, -1)
    top_p = top_p / top_p.sum(-1, keepdim=True)
    expected = torch.stack([
        sum(top_p[n, j] * moe.experts[int(top_i[n, j])](tokens[n]) for j in range(2))
        for n in range(6)
    ])
    torch.testing.assert_close(out.reshape(-1, 16), expected, atol=1e-6, rtol=1e-5)
    assert math.isclose(moe.load.sum().item(), 1.0, abs_tol=1e-6)


def test_bad_top_k():
    with pytest.raises(ValueError, match="top_k must be at most n_experts"):
        Variant(feed_forward="moe", n_experts=2, top_k=3)
    with pytest.raises(ValueError, match="top_k must be at most n_experts"):
        MixtureOfExperts(8, 16, 2, 3)


def test_bad_switch_values():
    with pytest.raises(ValueError, match="norm_position"):
        Variant(norm_position="middle")
    with pytest.raises(ValueError, match="position_scheme"):
        Variant(position_scheme="alibi")
    with pytest.raises(TypeError, match="bias"):
        Variant(bias=1)


# --- the Llama block ---


def test_llama_variant_assembles_a_llama_block():
    model = DecoderOnly(50, 32, 4, 88, 2, variant=llama_variant(n_kv_heads=2), tie_output=False)
    layer = model.layers[0]
    assert isinstance(layer.norm1, RMSNorm) and isinstance(layer.feed_forward, SwiGLU)
    attention = layer.self_attention
    assert attention.w_k.weight.shape == (16, 32) and attention.w_q.bias is None
    assert isinstance(model.norm, RMSNorm) and model.output.weight.shape == (50, 32)


def test_repr_of_the_first_fields_is_unchanged():
    marian = Variant(activation="swish", positions="halves", output_bias=True, decoder_start_id=57)
    assert repr(marian) == (
        "Variant(activation='swish', scale_embeddings=True, positions='halves', "
        "output_bias=True, decoder_start_id=57)"
    )
    assert "n_kv_heads=2" in repr(Variant(n_kv_heads=2))
