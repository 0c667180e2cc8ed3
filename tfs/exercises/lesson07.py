"""Checkers for the exercises of lesson 07 (modern blocks).

In the lesson::

    from tfs.exercises import lesson07 as check

    check.rms_norm(my_rms_norm)             # section 2: RMSNorm
    check.rotate(my_rotate)                 # section 4: one vector turned, halves layout
    check.repeat_kv(my_repeat_kv)           # section 6: key/value heads for their groups
    check.clinic_rope_values(fixed)         # the bug clinic: RoPE applied to the values

Every checker runs the answer on inputs of its own and compares it with the reference in
`tfs.model` (RMSNorm, apply_rotary, repeat_kv). The reference answers are in
`solutions/lesson07.py` (`SOLUTIONS`).
"""

from __future__ import annotations

import math

import torch

from tfs import model as reference
from tfs.exercises._core import Mistake, call, close, exercise, same_shape, solution_url

SOLUTIONS = solution_url("07")

__all__ = ["SOLUTIONS", "clinic_rope_values", "repeat_kv", "rms_norm", "rotate"]


def _rms_reference(x, weight, eps):
    norm = reference.RMSNorm(x.shape[-1], eps)
    with torch.no_grad():
        norm.weight.copy_(weight)
        return norm(x)


@exercise
def rms_norm(fn):
    """fn(x, weight, eps) -> x / sqrt(mean(x^2, last dim) + eps) * weight."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 3, 8, generator=g) * 2 + 1.5  # a mean far from 0: LayerNorm differs
    weight = torch.rand(8, generator=g) + 0.5
    got = call(fn, x, weight, 1e-5, what="x (2, 3, 8), weight (8,), eps 1e-5")
    same_shape(got, x.shape, "your output")
    centred = x - x.mean(-1, keepdim=True)
    as_layer_norm = centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5) * weight
    if torch.allclose(torch.as_tensor(got).float(), as_layer_norm, atol=1e-4):
        raise Mistake("you subtracted the mean: that is LayerNorm; RMSNorm divides x itself "
                      "by its root mean square")
    unweighted = _rms_reference(x, torch.ones(8), 1e-5)
    if torch.allclose(torch.as_tensor(got).float(), unweighted, atol=1e-5):
        raise Mistake("the result is not multiplied by `weight`")
    close(got, _rms_reference(x, weight, 1e-5), "your output",
          hint="the mean of x squared over the last dimension (d_model), plus eps, under "
               "the square root")
    tiny = torch.full((1, 4), 1e-3)
    got = call(fn, tiny, torch.ones(4), 1e-2, what="x = 0.001 everywhere, eps 0.01")
    close(got, _rms_reference(tiny, torch.ones(4), 1e-2), "your output for a tiny x",
          atol=1e-6, hint="eps goes inside the square root, added to the mean square")
    return "equal to tfs.model.RMSNorm and torch.nn.RMSNorm"


def _rotate_reference(x, position, base):
    cos, sin = reference.rotary_angles(1, x.shape[-1], base, start=position)
    return reference.apply_rotary(x[None], cos, sin, "halves")[0]


@exercise
def rotate(fn):
    """fn(x (d_k,), position, base) -> x with pair (i, i + d_k/2) turned by
    position * base^(-2i/d_k)."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(8, generator=g)
    got = call(fn, x, 5, 10_000.0, what="x of 8 entries, position 5")
    same_shape(got, (8,), "your output")
    got = torch.as_tensor(got).float()
    cos, sin = reference.rotary_angles(1, 8, 10_000.0, start=5)
    adjacent = reference.apply_rotary(x[None], cos, sin, "adjacent")[0]
    if torch.allclose(got, adjacent, atol=1e-5):
        raise Mistake("you turned neighbours (2i, 2i+1): that is the adjacent layout; this "
                      "exercise pairs entry i with entry i + d_k/2")
    backwards = _rotate_reference(x, -5, 10_000.0)
    if torch.allclose(got, backwards, atol=1e-5):
        raise Mistake("you turned the wrong way: the new first half is a·cos − b·sin")
    if not math.isclose(got.norm().item(), x.norm().item(), rel_tol=1e-4):
        raise Mistake("a rotation keeps the vector's length; yours changes it")
    close(got, _rotate_reference(x, 5, 10_000.0), "your output",
          hint="pair i turns by position · base^(-2i/d_k), i = 0 .. d_k/2 − 1")
    for position, base in ((0, 10_000.0), (37, 500_000.0)):
        got = call(fn, x, position, base, what=f"position {position}, base {base:,.0f}")
        close(got, _rotate_reference(x, position, base), f"your output at position {position}")
    return "equal to tfs.model.apply_rotary (halves), positions 0, 5 and 37"


@exercise
def repeat_kv(fn):
    """fn(x (B, h_kv, T, d_k), groups) -> (B, h_kv * groups, T, d_k), head j = x[:, j // groups]."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 3, 4, 5, generator=g)
    got = call(fn, x, 2, what="x (2, 3, 4, 5), groups 2")
    same_shape(got, (2, 6, 4, 5), "your output")
    if torch.equal(torch.as_tensor(got), x.repeat(1, 2, 1, 1)):
        raise Mistake("your heads are tiled (0, 1, 2, 0, 1, 2): query head j must read key/value "
                      "head j // groups (0, 0, 1, 1, 2, 2), as the groups are consecutive")
    close(got, reference.repeat_kv(x, 2), "your output")
    close(call(fn, x, 1, what="groups 1"), x, "your output for groups = 1")
    return "equal to tfs.model.repeat_kv and transformers' repeat_kv"


def _rope_attention_reference(q, k, v, cos, sin):
    q, k = reference.apply_rotary(q, cos, sin), reference.apply_rotary(k, cos, sin)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return scores.softmax(dim=-1) @ v


@exercise
def clinic_rope_values(fn):
    """The fixed rope_attention(q, k, v, cos, sin): queries and keys turned, values not."""
    g = torch.Generator().manual_seed(11)
    q, k, v = (torch.randn(1, 2, 6, 8, generator=g) for _ in range(3))
    cos, sin = reference.rotary_angles(6, 8)
    got = call(fn, q, k, v, cos, sin, what="q, k, v (1, 2, 6, 8)")
    same_shape(got, v.shape, "your output")
    got = torch.as_tensor(got).float()
    turned_q, turned_k = reference.apply_rotary(q, cos, sin), reference.apply_rotary(k, cos, sin)
    turned_v = reference.apply_rotary(v, cos, sin)
    for keys in (k, turned_k):  # the planted bug, and the bug with the keys turned as well
        weights = (turned_q @ keys.transpose(-2, -1) / math.sqrt(8)).softmax(-1)
        if torch.allclose(got, weights @ turned_v, atol=1e-5):
            raise Mistake("the values are still turned: positions belong in the scores (q and "
                          "k); the values carry content and must not be rotated")
    no_key = (turned_q @ k.transpose(-2, -1) / math.sqrt(8)).softmax(-1) @ v
    if torch.allclose(got, no_key, atol=1e-5):
        raise Mistake("only the queries are turned: the keys must be turned too, so that the "
                      "score depends on the offset between the two positions")
    close(got, _rope_attention_reference(q, k, v, cos, sin), "your output")
    return "queries and keys turned, values left alone"
