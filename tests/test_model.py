"""tfs.model: the course's Transformer against PyTorch's layers; its names, counts, checks."""

import math

import pytest
import torch
import torch.nn as nn

from tfs.model import (
    CrossAttentionCache,
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    MultiHeadAttention,
    SelfAttentionCache,
    Transformer,
    Variant,
    attention,
    causal_mask,
    copy_to_torch,
    count_parameters,
    padding_mask,
    positional_encoding,
)

PAD = 0
D_MODEL, N_HEADS, D_FF = 32, 4, 64


def small_model(seed=0, dropout=0.0, vocab_size=23, n_layers=2, max_len=32):
    torch.manual_seed(seed)
    return Transformer(vocab_size, D_MODEL, N_HEADS, D_FF, n_layers, dropout, PAD, max_len)


def padded_ids(lengths, vocab_size=23, seed=0):
    """A right-padded batch: row i holds lengths[i] random non-pad ids, then <pad>."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab_size, (len(lengths), max(lengths)), generator=generator)
    positions = torch.arange(max(lengths))[None, :]
    return ids.masked_fill(positions >= torch.tensor(lengths)[:, None], PAD)


def randomize(module, seed=0):
    """Random values everywhere (LayerNorm's gamma and beta too), so that no part is trivial."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return module


# --- masks, positions, attention ---------------------------------------------------------------


def test_padding_mask_hides_pad_keys_for_every_head_and_query():
    ids = torch.tensor([[5, 6, PAD], [7, PAD, PAD]])
    mask = padding_mask(ids, PAD)
    assert mask.shape == (2, 1, 1, 3)
    expected = torch.tensor([[0, 0, -math.inf], [0, -math.inf, -math.inf]])
    assert torch.equal(mask[:, 0, 0], expected)


def test_causal_mask_lets_row_t_see_columns_up_to_t():
    mask = causal_mask(4)
    assert mask.shape == (1, 1, 4, 4)
    allowed = mask[0, 0] == 0
    assert torch.equal(allowed, torch.ones(4, 4, dtype=torch.bool).tril())
    assert torch.isneginf(mask[0, 0][~allowed]).all()


def test_positional_encoding_is_sin_cos_pairs_and_depends_on_distance_only():
    pe = positional_encoding(100, 16)
    assert pe.shape == (100, 16)
    pos, i = 7, 3
    angle = pos / 10_000 ** (2 * i / 16)
    assert math.isclose(pe[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-6)
    assert math.isclose(pe[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-6)
    dots_from_0 = pe[0] @ pe[:40].T
    dots_from_50 = pe[50] @ pe[50:90].T
    assert torch.allclose(dots_from_0, dots_from_50, atol=1e-4)


def test_attention_matches_the_formula_and_torch_and_masks_give_zero_weight():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 4)
    mask = torch.zeros(1, 6)  # (T_q, T_k) after broadcasting
    mask[:, 4:] = -math.inf
    out, weights = attention(q, k, v, mask)
    by_hand = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8) + mask, dim=-1) @ v
    assert torch.allclose(out, by_hand, atol=1e-6)
    theirs = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.allclose(out, theirs, atol=1e-5)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 5))
    assert (weights[..., 4:] == 0).all()


def test_multi_head_attention_matches_torch_and_keeps_weights_only_when_asked():
    torch.manual_seed(0)
    ours = MultiHeadAttention(D_MODEL, N_HEADS)
    theirs = nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True)
    copy_to_torch(ours, theirs)
    x, memory = torch.randn(2, 5, D_MODEL), torch.randn(2, 7, D_MODEL)
    mask = padding_mask(padded_ids([7, 4]), PAD)  # (2, 1, 1, 7)
    with torch.no_grad():
        fast = ours(x, memory, mask)
        assert ours.weights is None  # the fused kernel: no weights kept
        ours.keep_weights = True
        explicit = ours(x, memory, mask)
        expected, _ = theirs(x, memory, memory, key_padding_mask=mask[:, 0, 0])
    assert torch.allclose(fast, expected, atol=1e-5)
    assert torch.allclose(explicit, expected, atol=1e-5)
    assert ours.weights.shape == (2, N_HEADS, 5, 7)
    assert (ours.weights[1, :, :, 4:] == 0).all()  # nobody looks at the padding
    assert torch.allclose(ours.weights.sum(-1), torch.ones(2, N_HEADS, 5))


def test_feed_forward_is_linear_relu_linear():
    torch.manual_seed(0)
    ff = FeedForward(D_MODEL, D_FF)
    x = torch.randn(3, D_MODEL)
    expected = torch.relu(x @ ff.linear1.weight.T + ff.linear1.bias) @ ff.linear2.weight.T
    assert torch.allclose(ff(x), expected + ff.linear2.bias, atol=1e-6)


# --- the layers equal PyTorch's ----------------------------------------------------------------


def test_encoder_layer_equals_torch_encoder_layer_with_padding():
    torch.manual_seed(0)
    ours = randomize(EncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.1)).eval()
    theirs = nn.TransformerEncoderLayer(
        D_MODEL, N_HEADS, D_FF, dropout=0.1, activation="relu", batch_first=True, norm_first=False
    ).eval()
    copy_to_torch(ours, theirs)
    src = padded_ids([6, 3, 5])
    x = torch.randn(3, 6, D_MODEL)
    src_mask = padding_mask(src, PAD)
    with torch.no_grad():
        expected = theirs(x, src_key_padding_mask=src == PAD)
        got = ours(x, src_mask)
    real = src != PAD  # PyTorch's fast path may leave padded positions as it likes
    assert torch.allclose(got[real], expected[real], atol=1e-5)
    with torch.no_grad():  # and with gradients on, PyTorch's ordinary path: every position
        expected_all = theirs(x.requires_grad_(), src_key_padding_mask=src == PAD)
    assert torch.allclose(got, expected_all, atol=1e-5)


def test_decoder_layer_equals_torch_decoder_layer_with_causal_and_padding_masks():
    torch.manual_seed(1)
    ours = randomize(DecoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.1), seed=1).eval()
    theirs = nn.TransformerDecoderLayer(
        D_MODEL, N_HEADS, D_FF, dropout=0.1, activation="relu", batch_first=True, norm_first=False
    ).eval()
    copy_to_torch(ours, theirs)
    src, tgt = padded_ids([7, 4, 2], seed=1), padded_ids([5, 5, 3], seed=2)
    x, memory = torch.randn(3, 5, D_MODEL), torch.randn(3, 7, D_MODEL)
    src_mask = padding_mask(src, PAD)
    tgt_mask = padding_mask(tgt, PAD) + causal_mask(5)
    with torch.no_grad():
        got = ours(x, memory, src_mask, tgt_mask)
        expected = theirs(
            x,
            memory,
            tgt_mask=causal_mask(5)[0, 0],
            tgt_key_padding_mask=padding_mask(tgt, PAD)[:, 0, 0],
            memory_key_padding_mask=src_mask[:, 0, 0],
        )
    assert torch.allclose(got, expected, atol=1e-5)


def test_whole_model_equals_a_stack_of_torch_layers_with_the_tied_embedding():
    model = small_model(seed=3).eval()
    randomize(model.encoder, seed=3)
    randomize(model.decoder, seed=4)

    def torch_layer(ours):
        is_decoder = isinstance(ours, DecoderLayer)
        kind = nn.TransformerDecoderLayer if is_decoder else nn.TransformerEncoderLayer
        theirs = kind(D_MODEL, N_HEADS, D_FF, dropout=0.0, batch_first=True).eval()
        copy_to_torch(ours, theirs)
        return theirs

    encoder = [torch_layer(layer) for layer in model.encoder]
    decoder = [torch_layer(layer) for layer in model.decoder]
    src, tgt = padded_ids([6, 4], seed=5), padded_ids([5, 3], seed=6)
    E, scale = model.embedding.weight, math.sqrt(D_MODEL)
    src_pad, tgt_pad = padding_mask(src, PAD)[:, 0, 0], padding_mask(tgt, PAD)[:, 0, 0]
    with torch.no_grad():
        x = E[src] * scale + model.pe[:6]
        for layer in encoder:
            x = layer(x, src_key_padding_mask=src_pad)
        y = E[tgt] * scale + model.pe[:5]
        for layer in decoder:
            y = layer(y, x, tgt_mask=causal_mask(5)[0, 0], tgt_key_padding_mask=tgt_pad,
                      memory_key_padding_mask=src_pad)
        expected = y @ E.T
        got = model(src, tgt)
    assert got.shape == (2, 5, 23)
    real = tgt != PAD
    assert torch.allclose(got[real], expected[real], atol=1e-4)


# --- the model: names, counts, tying, masks at work ---------------------------------------------


def test_state_dict_names_are_the_lessons():
    model = small_model(n_layers=1)
    attention_names = [f"{w}.{p}" for w in ("w_q", "w_k", "w_v", "w_o") for p in ("weight", "bias")]
    feed_forward = [f"feed_forward.linear{i}.{p}" for i in (1, 2) for p in ("weight", "bias")]
    expected = ["embedding.weight"]  # not "pe": the positional table is computed, not saved
    expected += [f"encoder.0.self_attention.{n}" for n in attention_names] + [
        f"encoder.0.{n}" for n in feed_forward
    ]
    expected += [f"encoder.0.norm{i}.{p}" for i in (1, 2) for p in ("weight", "bias")]
    expected += [f"decoder.0.{a}.{n}" for a in ("self_attention", "cross_attention")
                 for n in attention_names]
    expected += [f"decoder.0.{n}" for n in feed_forward]
    expected += [f"decoder.0.norm{i}.{p}" for i in (1, 2, 3) for p in ("weight", "bias")]
    assert sorted(model.state_dict()) == sorted(expected)
    assert isinstance(model.dropout, nn.Dropout)
    assert "pe" in dict(model.named_buffers())  # a buffer: neither trained nor saved
    assert "pe" not in dict(model.named_parameters())


def test_weights_load_into_a_model_with_another_max_len():
    short, long = small_model(seed=1, max_len=16), small_model(seed=2, max_len=64)
    assert sum(p.numel() for p in short.parameters()) == sum(p.numel() for p in long.parameters())
    long.load_state_dict(short.state_dict())  # strict: the same names and shapes
    assert long.max_len == 64 and torch.equal(long.pe[:16], short.pe)
    src, tgt = padded_ids([6, 3], seed=1), padded_ids([5, 4], seed=2)
    with torch.no_grad():
        assert torch.equal(long.eval()(src, tgt), short.eval()(src, tgt))
        long(src, padded_ids([40], seed=3)[:, :40].expand(2, -1).clone())  # 40 > 16 positions


@pytest.mark.parametrize(
    "sizes, expected",
    [((16_000, 256, 4, 1024, 3), 9_625_600), ((62_518, 512, 8, 2048, 6), 76_147_712)],
    ids=["course", "opus-mt-en-ru"],
)
def test_parameter_count_matches_the_formula(sizes, expected):
    vocab_size, d_model, n_heads, d_ff, n_layers = sizes
    with torch.device("meta"):  # shapes only: no memory, no time
        model = Transformer(vocab_size, d_model, n_heads, d_ff, n_layers, 0.1, PAD)
    counted = sum(p.numel() for p in model.parameters())
    assert counted == count_parameters(vocab_size, d_model, d_ff, n_layers) == expected


def test_one_embedding_matrix_is_source_target_and_output_layer():
    model = small_model(vocab_size=200).eval()
    E = model.embedding.weight
    assert [p for p in model.parameters() if p.shape[0] == 200] == [E]  # no other |V|-sized one
    assert abs(E.std().item() - D_MODEL**-0.5) < 0.1 * D_MODEL**-0.5
    src, tgt = padded_ids([5, 3], vocab_size=200), padded_ids([4, 4], vocab_size=200, seed=1)
    with torch.no_grad():
        x = model.embed(tgt)
        assert torch.allclose(x, E[tgt] * math.sqrt(D_MODEL) + model.pe[:4])
        scores = model(src, tgt)
        y = x
        for layer in model.decoder:
            y = layer(y, model.encode(src), padding_mask(src, PAD),
                      padding_mask(tgt, PAD) + causal_mask(4))
        assert torch.allclose(scores, y @ E.T, atol=1e-5)
    # gradients of the output layer and of the embeddings reach the same matrix
    model(src, tgt)[0, 0, 7].backward()
    assert E.grad[7].abs().sum() > 0  # row 7 as output layer
    assert E.grad[src[0, 0]].abs().sum() > 0  # a source token's row as embedding


def test_padding_changes_nothing_for_the_real_tokens():
    model = small_model(seed=2).eval()
    src = padded_ids([6, 3], seed=3)
    tgt = padded_ids([5, 2], seed=4)
    with torch.no_grad():
        batch = model(src, tgt)
        alone = model(src[1:, :3], tgt[1:, :2])
    assert torch.allclose(batch[1, :2], alone[0], atol=1e-5)


def test_decoder_cannot_see_the_future():
    model = small_model(seed=5).eval()
    src, tgt = padded_ids([6], seed=1), padded_ids([5], seed=2)
    changed = tgt.clone()
    changed[0, -1] = (tgt[0, -1] % 22) + 1  # another non-pad token
    with torch.no_grad():
        before, after = model(src, tgt), model(src, changed)
    assert torch.allclose(before[:, :-1], after[:, :-1], atol=1e-6)
    assert not torch.allclose(before[:, -1], after[:, -1])


def test_attention_weights_are_kept_when_asked_and_dropout_only_in_training():
    model = small_model(dropout=0.3)
    src, tgt = padded_ids([6, 4], seed=1), padded_ids([5, 5], seed=2)
    model.train()
    assert not torch.allclose(model(src, tgt), model(src, tgt))  # dropout is on
    model.eval()
    with torch.no_grad():
        fast = model(src, tgt)
        assert model.decoder[-1].cross_attention.weights is None
        model.keep_attention_weights()
        slow = model(src, tgt)
    assert torch.allclose(fast, slow, atol=1e-5)  # same outputs with and without weights
    weights = model.decoder[-1].cross_attention.weights  # (B, h, T_tgt, T_src)
    assert weights.shape == (2, N_HEADS, 5, 6)
    assert (weights[1, :, :, 4:] == 0).all()  # no target token looks at the source's padding
    self_weights = model.decoder[0].self_attention.weights
    assert (self_weights[0, 0].triu(diagonal=1) == 0).all()  # nor at later target tokens
    model.keep_attention_weights(False)
    model(src, tgt)
    assert model.encoder[0].self_attention.weights is None


def test_a_bfloat16_model_keeps_its_attention_weights_and_masks_follow_its_dtype():
    model = small_model(seed=4).eval()
    src, tgt = padded_ids([6, 3], seed=1), padded_ids([5, 2], seed=2)
    with torch.no_grad():
        reference = model(src, tgt)
        model.to(torch.bfloat16)
        fast = model(src, tgt)
        model.keep_attention_weights()
        explicit = model(src, tgt)  # float32 masks added to bfloat16 scores failed here
    weights = model.decoder[-1].cross_attention.weights
    assert fast.dtype == explicit.dtype == weights.dtype == torch.bfloat16
    assert (weights[1, :, :, 3:] == 0).all()  # the source's padding is still hidden
    real = tgt != PAD
    assert torch.allclose(explicit[real].float(), fast[real].float(), atol=0.1)
    assert torch.allclose(explicit[real].float(), reference[real], atol=0.2)
    assert padding_mask(src, PAD, torch.bfloat16).dtype == torch.bfloat16
    assert causal_mask(3, dtype=torch.float16).dtype == torch.float16


# --- what a real model does differently: Variant ---------------------------------------------


def test_the_default_variant_is_the_papers_model():
    assert Variant() == Variant("relu", True, "interleaved", False, None)
    model = small_model()
    assert model.variant == Variant()
    assert not hasattr(model, "output_bias")  # the default state_dict has no extra entry


def test_marians_variant_swish_halves_table_unscaled_embeddings_and_output_bias():
    torch.manual_seed(0)
    variant = Variant(activation="swish", scale_embeddings=False, positions="halves",
                      output_bias=True, decoder_start_id=PAD)
    model = Transformer(23, D_MODEL, N_HEADS, D_FF, 1, 0.0, PAD, 32, variant=variant).eval()
    default = small_model(n_layers=1)
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in default.named_parameters()]
    assert sorted(model.state_dict()) == sorted([*default.state_dict(), "output_bias"])
    assert "output_bias" not in dict(model.named_parameters())  # loaded, not trained
    # the feed-forward: linear, SiLU, linear
    ff = model.encoder[0].feed_forward
    x = torch.randn(3, D_MODEL)
    expected = ff.linear2(torch.nn.functional.silu(ff.linear1(x)))
    assert torch.allclose(ff(x), expected) and not torch.allclose(ff(x), default.encoder[0]
                                                                 .feed_forward(x))
    # the table: sines in the first half, cosines in the second, positions from 0
    pos, i = 7, 3
    angle = pos / 10_000 ** (2 * i / D_MODEL)
    assert math.isclose(model.pe[pos, i].item(), math.sin(angle), abs_tol=1e-6)
    assert math.isclose(model.pe[pos, D_MODEL // 2 + i].item(), math.cos(angle), abs_tol=1e-6)
    assert torch.equal(model.pe[0, : D_MODEL // 2], torch.zeros(D_MODEL // 2))
    # embeddings not scaled; the bias is added to every score
    ids = padded_ids([4, 2])
    assert torch.allclose(model.embed(ids), model.embedding.weight[ids] + model.pe[:4])
    with torch.no_grad():
        model.output_bias.normal_()
        tgt = padded_ids([3, 3], seed=1)
        tgt[:, 0] = PAD  # Marian's decoder starts from <pad>: never hidden
        scores = model(ids, tgt)
        assert scores.isfinite().all()
        bias = model.output_bias.clone()
        model.output_bias.zero_()
        without = model(ids, tgt)
    assert torch.allclose(scores - without, bias.expand_as(scores), atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"activation": "gelu"}, ValueError, "activation"),
        ({"positions": "rotary"}, ValueError, "positions"),
        ({"output_bias": 1}, TypeError, "output_bias"),
        ({"decoder_start_id": 1.0}, TypeError, "decoder_start_id"),
    ],
)
def test_bad_variants_are_rejected_with_their_name(kwargs, error, words):
    with pytest.raises(error, match=words):
        Variant(**kwargs)


def test_a_variant_must_fit_the_model():
    with pytest.raises(ValueError, match="decoder_start_id"):
        Transformer(23, D_MODEL, N_HEADS, D_FF, 1, 0.0, PAD, variant=Variant(decoder_start_id=23))
    with pytest.raises(TypeError, match="Variant"):
        Transformer(23, D_MODEL, N_HEADS, D_FF, 1, 0.0, PAD, variant={"activation": "swish"})


# --- the KV cache belongs to the attention ------------------------------------------------------


def test_self_attention_appends_one_position_per_step_and_equals_the_causal_mask():
    torch.manual_seed(0)
    attention_layer = MultiHeadAttention(D_MODEL, N_HEADS).eval()
    x = torch.randn(2, 6, D_MODEL)
    with torch.no_grad():
        full = attention_layer(x, x, causal_mask(6))
        cache = SelfAttentionCache(2, N_HEADS, D_MODEL // N_HEADS, max_len=6, like=x)
        steps = []
        for t in range(6):
            steps.append(attention_layer(x[:, t : t + 1], x[:, t : t + 1], None, cache))
            assert cache.length == t + 1
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    keys, _ = cache.filled()
    expected_keys = attention_layer.split_heads(attention_layer.w_k(x))
    assert torch.allclose(keys, expected_keys, atol=1e-6)
    with pytest.raises(ValueError, match="cache is full"):
        attention_layer(x[:, :1], x[:, :1], None, cache)


def test_cross_attention_projects_the_memory_once():
    torch.manual_seed(0)
    attention_layer = MultiHeadAttention(D_MODEL, N_HEADS).eval()
    memory = torch.randn(2, 5, D_MODEL)
    cache = CrossAttentionCache()
    with torch.no_grad():
        first = attention_layer(torch.randn(2, 1, D_MODEL), memory, None, cache)
        keys = cache.keys
        y = torch.randn(2, 1, D_MODEL)
        # later steps read the stored keys and values, whatever memory they are handed
        assert torch.equal(attention_layer(y, torch.zeros_like(memory), None, cache),
                           attention_layer(y, memory))
    assert cache.keys is keys and first.shape == (2, 1, D_MODEL)


# --- clear errors for the usual mistakes --------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"d_model": 30, "n_heads": 4}, ValueError, "divisible by n_heads"),
        ({"dropout": 1.0}, ValueError, "dropout"),
        ({"dropout": -0.1}, ValueError, "dropout"),
        ({"dropout": "0.1"}, TypeError, "dropout"),
        ({"pad_id": 23}, ValueError, "pad_id"),
        ({"pad_id": -1}, ValueError, "pad_id"),
        ({"d_model": 33, "n_heads": 3}, ValueError, "even"),
        ({"n_layers": 0}, ValueError, "n_layers"),
        ({"vocab_size": 2.5}, TypeError, "vocab_size"),
    ],
)
def test_bad_sizes_are_rejected_with_their_name(kwargs, error, words):
    sizes = dict(vocab_size=23, d_model=32, n_heads=4, d_ff=64, n_layers=1, dropout=0.1, pad_id=0)
    sizes.update(kwargs)
    with pytest.raises(error, match=words):
        Transformer(**sizes)


@pytest.mark.parametrize(
    "src, tgt, error, words",
    [
        (torch.ones(2, 4), torch.ones(2, 3, dtype=torch.long), TypeError, "integer token ids"),
        ([[1, 2]], torch.ones(1, 3, dtype=torch.long), TypeError, "tensor"),
        (torch.ones(2, 4, dtype=torch.long), torch.ones(2, 3, dtype=torch.bool), TypeError,
         "integer"),
        (torch.tensor([[1, 23]]), torch.ones(1, 3, dtype=torch.long), ValueError, "vocabulary"),
        (torch.tensor([[1, -1]]), torch.ones(1, 3, dtype=torch.long), ValueError, "vocabulary"),
        (torch.ones(2, 4, dtype=torch.long), torch.tensor([[1, 99]] * 2), ValueError, "vocabulary"),
        (torch.ones(4, dtype=torch.long), torch.ones(1, 3, dtype=torch.long), ValueError,
         r"\(B, T\)"),
        (torch.ones(1, 2, 4, dtype=torch.long), torch.ones(1, 3, dtype=torch.long), ValueError,
         r"\(B, T\)"),
        (torch.ones(1, 33, dtype=torch.long), torch.ones(1, 3, dtype=torch.long), ValueError,
         "max_len"),
        (torch.ones(1, 3, dtype=torch.long), torch.ones(1, 40, dtype=torch.long), ValueError,
         "max_len"),
        (torch.ones(2, 4, dtype=torch.long), torch.ones(3, 3, dtype=torch.long), ValueError,
         "same number of sentences"),
        (torch.ones(2, 0, dtype=torch.long), torch.ones(2, 3, dtype=torch.long), ValueError,
         "empty"),
    ],
    ids=["float-src", "list-src", "bool-tgt", "id-too-large", "negative-id", "tgt-id-too-large",
         "1-d", "3-d", "src-too-long", "tgt-too-long", "batch-sizes-differ", "empty"],
)
def test_bad_ids_are_rejected_with_a_clear_message(src, tgt, error, words):
    model = small_model(max_len=32)
    with pytest.raises(error, match=words):
        model(src, tgt)


def test_decode_checks_memory_and_one_token_per_step_with_a_cache():
    model = small_model()
    src = padded_ids([4, 3])
    memory = model.encode(src)
    with pytest.raises(ValueError, match="memory"):
        model.decode(torch.ones(2, 3, dtype=torch.long), memory[:, :2], src)
    with pytest.raises(ValueError, match="one new token"):
        model.decode(torch.ones(2, 3, dtype=torch.long), memory, src, cache=object())


def test_copy_to_torch_refuses_mismatched_layers():
    with pytest.raises(TypeError, match="PyTorch twin"):
        copy_to_torch(FeedForward(D_MODEL, D_FF), nn.Linear(D_MODEL, D_FF))
    encoder = EncoderLayer(D_MODEL, N_HEADS, D_FF, 0.0)
    with pytest.raises(TypeError, match="PyTorch twin"):
        copy_to_torch(encoder, nn.TransformerDecoderLayer(D_MODEL, N_HEADS, D_FF))
