"""Checkers for the exercises of lesson 02 (the building blocks).

In the lesson::

    from tfs.exercises import lesson02 as check

    check.attention(my_attention)          # section 3
    check.position_share(my_share)         # section 2, a value
    check.clinic_scaling(fixed_attention)  # section 4, the bug clinic
    check.decoder_mask(my_decoder_mask)    # section 5
    check.merge_heads(my_merge_heads)      # section 6
    check.pre_ln_layer(my_pre_ln_layer)    # section 8

Every checker runs the answer on inputs of its own (a batch of 1, length 1, padding, masks,
T_q != T_k) and compares it with the course's own blocks in `tfs.model`. The reference
answers are in `solutions/lesson02.py` (`SOLUTIONS`).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from tfs.exercises._core import Mistake, a_tensor, call, close, exercise, number, solution_url
from tfs.model import FeedForward, MultiHeadAttention
from tfs.model import attention as _attention

SOLUTIONS = solution_url("02")

__all__ = [
    "SOLUTIONS",
    "attention",
    "clinic_scaling",
    "decoder_mask",
    "merge_heads",
    "position_share",
    "pre_ln_layer",
    "saturation",
]


def _randn(generator, *shape):
    return torch.randn(*shape, generator=generator)


def _additive(allowed):
    """A boolean mask (True = may look) as an additive one (0 / -inf)."""
    return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))


def _causal_allowed(length):
    return torch.ones(length, length, dtype=torch.bool).tril()


# ---------------------------------------------------------------------------------------------
# section 2: what ×√d_model is for (a value)


@exercise
def position_share(value):
    """The share of the input vector's squared length that comes from the position signal,
    on average, when the embeddings are NOT multiplied by √d_model (d_model = 64)."""
    share = number(value, "your share")
    d_model = 64
    want = (d_model / 2) / (d_model / 2 + 1)  # |PE(p)|² = d/2; E|e|² = d · (1/d) = 1
    with_scaling = (d_model / 2) / (d_model / 2 + d_model)  # E|e √d|² = d
    if not 0 <= share <= 1:
        raise Mistake(f"a share is between 0 and 1; yours is {share:g}")
    if abs(share - with_scaling) < 0.02:
        raise Mistake(
            f"{share:.3f} is the share WITH the ×√d_model (embedding entries of size 1); "
            "without it the entries have standard deviation d_model^-1/2 = 0.125"
        )
    if abs(share - 0.5) < 0.02:
        raise Mistake(
            "0.5 would mean both parts are the same size; compare the mean square of an entry: "
            "1/2 for the position signal (sin² + cos² = 1 per pair), 1/d_model for an embedding"
        )
    if abs(share - want) > 0.01:
        raise Mistake(
            f"not quite: yours is {share:.3f}. Squared lengths add (the two parts are "
            "independent): |PE(p)|² = d_model/2 for every p, and an embedding row of entries "
            "with variance 1/d_model has squared length about 1"
        )
    return f"{want:.3f} (= 32/33): the position signal is almost all of the input"


# ---------------------------------------------------------------------------------------------
# section 3: scaled dot-product attention with an additive mask


def _attention_cases(generator):
    """(description, q, k, v, mask): batches, heads, T_q != T_k, d_v != d_k, masks, length 1."""
    cases = []
    q, k, v = (_randn(generator, 2, 3, 5, 8) for _ in range(3))
    cases.append(("q, k, v of shape (B=2, h=3, T=5, d_k=8), no mask", q, k, v, None))
    causal = _additive(_causal_allowed(5))
    cases.append(("the same q, k, v and a causal mask (5, 5)", q, k, v, causal))
    q = _randn(generator, 2, 2, 3, 16)
    k, v = _randn(generator, 2, 2, 6, 16), _randn(generator, 2, 2, 6, 4)
    keep = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])  # sentence 2: two <pad> keys
    padding = _additive(keep)[:, None, None, :]  # (B, 1, 1, T_k)
    cases.append(("T_q=3 queries, T_k=6 keys, values of d_v=4, a padding mask (2, 1, 1, 6)",
                  q, k, v, padding))
    q, k, v = (_randn(generator, 1, 1, 1, 8) for _ in range(3))
    cases.append(("a batch of 1 with one position (1, 1, 1, 8)", q, k, v, None))
    return cases


def _softmax_rows(scores):
    return scores.softmax(dim=-1)


@exercise
def attention(fn):
    """fn(q, k, v, mask=None) -> (output, weights), the mask additive (0 allowed, -inf not)."""
    generator = torch.Generator().manual_seed(2)
    for what, q, k, v, mask in _attention_cases(generator):
        answer = call(fn, q, k, v, mask, what=what)
        if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
            raise Mistake(
                "return two things, (output, weights): the weighted values and the softmax "
                f"weights (yours returned a {type(answer).__name__}, called with {what})"
            )
        output, weights = answer
        want_output, want_weights = _attention(q, k, v, mask)
        _diagnose_weights(weights, q, k, mask, want_weights, what)
        close(weights, want_weights, f"your weights ({what})")
        close(output, want_output, f"your output ({what})",
              hint="the output is the weights times the VALUES: weights @ v")
    return "output and weights match the reference on 4 inputs (masks, T_q ≠ T_k, length 1)"


def _diagnose_weights(weights, q, k, mask, want, what):
    """Name the usual mistakes before a plain comparison would."""
    a_tensor(weights, "your weights (..., T_q, T_k)", shape=want.shape, where=what,
             hint="transpose only the last two dimensions of k, k.transpose(-2, -1)")
    weights = weights.detach().double()
    if torch.allclose(weights, want.double(), atol=1e-5, rtol=1e-4):
        return  # right, or indistinguishable from right on this input (e.g. one key)
    if not torch.isfinite(weights).all():
        raise Mistake(
            f"your weights contain NaN or infinity ({what}): add the mask to the scores BEFORE "
            "the softmax, so that the hidden keys get e^-inf = 0"
        )
    row_sums = weights.sum(dim=-1)
    if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-4):
        raise Mistake(
            f"each row of your weights should sum to 1; yours sum to {row_sums.flatten()[0]:.3g} "
            f"({what}): softmax over the last dimension, dim=-1?"
        )
    raw = q.double() @ k.double().transpose(-2, -1)
    extra = 0 if mask is None else mask.double()
    for divisor, name in [(1.0, "no division"), (q.shape[-1], "a division by d_k")]:
        if torch.allclose(weights, _softmax_rows(raw / divisor + extra), atol=1e-5):
            raise Mistake(
                f"your weights are softmax(q·k) with {name}: divide the scores by √d_k "
                f"(= {math.sqrt(q.shape[-1]):.2f} here), d_k = q.shape[-1]"
            )
    if mask is not None:
        hidden = torch.isinf(mask).expand_as(weights)
        if weights[hidden].abs().max() > 1e-6:
            raise Mistake(
                f"the keys the mask hides get weight {weights[hidden].abs().max():.3f} "
                f"({what}): add the mask to the scores before the softmax"
            )


# ---------------------------------------------------------------------------------------------
# section 4: the bug clinic, attention whose softmax saturates


def saturation(fn, d_k=512, n_keys=16, batch=2, seed=4):
    """The symptom: the mean top weight of `fn`'s softmax on random queries and keys of width
    d_k (about 0.25 for a healthy softmax over 16 keys; near 1 when the scores are too large).

    fn(q, k, v, mask=None) -> (output, weights) is called with q (batch, 4, 250, d_k) and
    k, v (batch, 4, n_keys, d_k), entries of variance 1 drawn from a generator seeded with
    `seed` (the lesson's random state is left alone).
    """
    if not isinstance(seed, int):
        raise TypeError(f"seed should be an integer, got {type(seed).__name__}")
    generator = torch.Generator().manual_seed(seed)
    q = _randn(generator, batch, 4, 250, d_k)
    k, v = _randn(generator, batch, 4, n_keys, d_k), _randn(generator, batch, 4, n_keys, d_k)
    answer = call(fn, q, k, v, what=f"q of shape {tuple(q.shape)}, k and v {tuple(k.shape)}")
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        raise Mistake("the function should still return (output, weights)")
    weights = answer[1]
    if not isinstance(weights, torch.Tensor) or tuple(weights.shape) != (batch, 4, 250, n_keys):
        raise Mistake(f"the weights should be a tensor of shape {(batch, 4, 250, n_keys)}")
    return weights.detach().double().max(dim=-1).values.mean().item()


@exercise
def clinic_scaling(fn):
    """The clinic of section 4: fix the attention whose softmax saturates (scores too large)."""
    for d_k, batch in [(512, 2), (512, 3), (64, 2), (16, 1)]:
        top = saturation(fn, d_k=d_k, batch=batch)
        healthy = saturation(_attention, d_k=d_k, batch=batch)
        if top > healthy + 0.05:
            raise Mistake(
                f"still saturated: with d_k = {d_k} and a batch of {batch} your top weight "
                f"averages {top:.2f} (a healthy softmax over 16 keys: {healthy:.2f}): the "
                "scores are still too large. Divide them by √d_k, the width of q and k (their "
                "LAST dimension); dividing by a scale of 1/√d_k multiplies them by √d_k"
            )
        if top < healthy - 0.05:
            raise Mistake(
                f"now the weights are too flat: with d_k = {d_k} your top weight averages "
                f"{top:.3f}, close to uniform (1/16 = 0.0625); divide by √d_k, not by d_k"
            )
    generator = torch.Generator().manual_seed(5)
    for what, q, k, v, mask in _attention_cases(generator):
        output, weights = call(fn, q, k, v, mask, what=what)
        want_output, want_weights = _attention(q, k, v, mask)
        close(weights, want_weights, f"your weights ({what})")
        close(output, want_output, f"your output ({what})")
    return "no longer saturated at d_k = 512, and equal to the reference with masks too"


# ---------------------------------------------------------------------------------------------
# section 5: the decoder's mask, causal and padding together


def _decoder_mask_reference(ids, pad_id):
    length = ids.shape[1]
    return _causal_allowed(length)[None, :, :] & (ids != pad_id)[:, None, :]  # (B, T, T)


@exercise
def decoder_mask(fn):
    """fn(ids, pad_id) -> boolean (B, T, T): True where query t may look at key s."""
    cases = [
        ("ids [[5, 6, 7, 0, 0], [5, 6, 7, 8, 9]] with pad_id=0",
         torch.tensor([[5, 6, 7, 0, 0], [5, 6, 7, 8, 9]]), 0),
        ("ids [[4, 3, 3]] with pad_id=3", torch.tensor([[4, 3, 3]]), 3),
        ("ids [[7]] (one token) with pad_id=0", torch.tensor([[7]]), 0),
    ]
    for what, ids, pad_id in cases:
        got = call(fn, ids.clone(), pad_id, what=what)
        want = _decoder_mask_reference(ids, pad_id)
        a_tensor(got, "your mask", where=what)
        if got.dtype != torch.bool:
            raise Mistake(
                f"return a boolean tensor (True = may look); yours has dtype {got.dtype} ({what})"
            )
        a_tensor(got, "your mask", shape=want.shape, where=what,
                 hint="one (T, T) matrix per sentence")
        if torch.equal(got, want):
            continue
        _diagnose_mask(got, want, ids, pad_id, what)
    return "causal and padding rules right on 3 batches (pad_id 0 and 3, one token)"


def _diagnose_mask(got, want, ids, pad_id, what):
    length = ids.shape[1]
    if torch.equal(got, ~want):
        raise Mistake(f"your mask is inverted: True should mean 'may look' ({what})")
    ahead = ~_causal_allowed(length)  # (T, T): key after query
    if (got & ahead).any():
        b, t, s = (got & ahead).nonzero()[0].tolist()
        raise Mistake(
            f"sentence {b}: query {t} may look at key {s}, which comes after it: the future "
            f"must be hidden (keep the lower triangle, tril) ({what})"
        )
    real_key = (ids != pad_id)[:, None, :].expand_as(want)
    diagonal = torch.eye(length, dtype=torch.bool).expand_as(want)
    if (~got & diagonal & real_key).any():
        b, t, _ = (~got & diagonal & real_key).nonzero()[0].tolist()
        raise Mistake(
            f"sentence {b}: position {t} may not look at itself; the diagonal is allowed "
            f"(tril(), not tril(diagonal=-1)) ({what})"
        )
    if (got & ~real_key).any():
        b, t, s = (got & ~real_key).nonzero()[0].tolist()
        raise Mistake(
            f"sentence {b}: query {t} may look at key {s}, a <pad> (id {pad_id}): hide the "
            f"<pad> KEYS, the columns (ids != pad_id), shaped (B, 1, T) ({what})"
        )
    raise Mistake(
        f"sentence {(got != want).nonzero()[0, 0].item()}: your mask hides keys that a query "
        "should see: a real token at or before the query must stay visible, even to a <pad> "
        "query (hide <pad> keys, the columns, not the rows: a row with no visible key makes "
        f"the softmax 0/0 = NaN) ({what})"
    )


# ---------------------------------------------------------------------------------------------
# section 6: merging the heads back


@exercise
def merge_heads(fn):
    """fn(heads) -> (B, T, h·d_k): the inverse of the lesson's split into heads."""
    generator = torch.Generator().manual_seed(6)
    for B, h, T, d_k in [(2, 4, 5, 3), (1, 2, 1, 4), (3, 1, 4, 6)]:
        what = f"heads of shape (B={B}, h={h}, T={T}, d_k={d_k})"
        x = _randn(generator, B, T, h * d_k)  # the tensor before the split
        heads = x.view(B, T, h, d_k).transpose(1, 2)  # (B, h, T, d_k), as the lesson splits
        fresh = heads.contiguous()  # a fresh attention output is stored head by head
        for tensor in (fresh, heads):  # the reader's function may meet either layout
            got = call(fn, tensor.clone(), what=what)
            if isinstance(got, torch.Tensor) and tuple(got.shape) == (B, T, h * d_k):
                scrambled = fresh.reshape(B, T, h * d_k)
                if h > 1 and T > 1 and torch.equal(got, scrambled) and not torch.equal(got, x):
                    raise Mistake(
                        "right shape, wrong numbers: reshaping (B, h, T, d_k) straight to "
                        "(B, T, d_model) glues entries of different positions together. Move "
                        "the heads back next to each other first: transpose(1, 2), then reshape"
                    )
            close(got, x, f"your merged tensor ({what})",
                  hint="position t should get head 0's d_k entries, then head 1's, and so on")
    return "inverts the split on 3 shapes (one head, one position, a batch of 1)"


# ---------------------------------------------------------------------------------------------
# section 8: a pre-LN encoder layer


def _pre_ln_reference(x, self_attention, feed_forward, norm1, norm2, mask=None):
    h = norm1(x)
    x = x + self_attention(h, h, mask)
    return x + feed_forward(norm2(x))


def _post_ln(x, self_attention, feed_forward, norm1, norm2, mask=None):
    x = norm1(x + self_attention(x, x, mask))
    return norm2(x + feed_forward(x))


def _normalised_stream(x, self_attention, feed_forward, norm1, norm2, mask=None):
    x = norm1(x)
    x = x + self_attention(x, x, mask)
    x = norm2(x)
    return x + feed_forward(x)


@exercise
def pre_ln_layer(fn):
    """fn(x, self_attention, feed_forward, norm1, norm2, mask=None) -> (B, T, d_model)."""
    generator = torch.Generator().manual_seed(8)
    torch.manual_seed(8)  # the modules' initial weights (the core restores the lesson's state)
    d_model, n_heads, d_ff = 16, 4, 32
    blocks = (MultiHeadAttention(d_model, n_heads), FeedForward(d_model, d_ff),
              nn.LayerNorm(d_model), nn.LayerNorm(d_model))
    with torch.no_grad():
        for norm in blocks[2:]:  # random scale and shift: a swapped norm must show
            norm.weight.copy_(1 + 0.5 * _randn(generator, d_model))
            norm.bias.copy_(_randn(generator, d_model))
    keep = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    cases = [
        ("x of shape (2, 5, 16), no mask", _randn(generator, 2, 5, d_model) * 3 + 1, None),
        ("x of shape (2, 5, 16) and a padding mask (2, 1, 1, 5)",
         _randn(generator, 2, 5, d_model) * 3 + 1, _additive(keep)[:, None, None, :]),
        ("x of shape (1, 1, 16)", _randn(generator, 1, 1, d_model) * 3 + 1, None),
    ]
    with torch.no_grad():
        for what, x, mask in cases:
            got = call(fn, x.clone(), *blocks, mask, what=what)
            want = _pre_ln_reference(x, *blocks, mask)
            if isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(want.shape):
                for wrong, message in [
                    (_post_ln, "that is post-LN, the paper's norm(x + f(x)); pre-LN normalises "
                               "the sub-layer's INPUT and adds its output to x: x + f(norm(x))"),
                    (_normalised_stream, "your stream itself is normalised (x = norm(x)); in "
                                         "pre-LN only the sub-layer's input is: x + f(norm(x)), "
                                         "so the stream stays a pure sum"),
                ]:
                    if torch.allclose(got, wrong(x, *blocks, mask), atol=1e-5):
                        raise Mistake(message)
                if mask is not None and torch.allclose(got, _pre_ln_reference(x, *blocks),
                                                       atol=1e-5):
                    raise Mistake("the mask is ignored: pass it on to self_attention")
            close(got, want, f"your layer's output ({what})",
                  hint="x + self_attention(norm1(x), norm1(x), mask), then "
                       "x + feed_forward(norm2(x))")
    return "matches x + f(norm(x)) for both sub-layers, with and without a padding mask"
