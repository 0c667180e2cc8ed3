"""Checkers for the exercises of lesson 07 (modern blocks).

In the lesson::

    from tfs.exercises import lesson07 as check

    check.rotate(my_rotate)                 # section 4: one vector turned, halves layout
    check.pool_kv_heads(my_pool_kv_heads)   # section 6: multi-head into grouped-query weights
    check.balance_loss(my_balance_loss)     # section 7: the Switch Transformer's balance loss
    check.clinic_rope(fixed)                # the bug clinic: RoPE in the wrong place

Every checker runs the answer on inputs of its own and compares it with the reference in
`tfs.model` (apply_rotary, MultiHeadAttention, MixtureOfExperts). The reference answers are in
`solutions/lesson07.py` (`SOLUTIONS`).
"""

from __future__ import annotations

import math

import torch

from tfs import model as reference
from tfs.exercises._core import (
    Mistake,
    call,
    close,
    exercise,
    matches,
    number,
    same_shape,
    solution_url,
)

SOLUTIONS = solution_url("07")

__all__ = ["SOLUTIONS", "balance_loss", "clinic_rope", "pool_kv_heads", "rotate"]


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


def _pool_reference(weight, n_heads, n_kv_heads):
    d_k = weight.shape[0] // n_heads
    return weight.unflatten(0, (n_kv_heads, n_heads // n_kv_heads, d_k)).mean(1).flatten(0, 1)


@exercise
def pool_kv_heads(fn):
    """fn(weight (h * d_k, d_model), n_heads, n_kv_heads) -> (h_kv * d_k, d_model): each group
    of n_heads / n_kv_heads consecutive key (or value) heads replaced by their mean."""
    g = torch.Generator().manual_seed(5)
    weight = torch.randn(6 * 2, 5, generator=g)  # 6 heads of d_k = 2, d_model = 5
    got = call(fn, weight, 6, 3, what="weight (12, 5), 6 heads, 3 key/value heads")
    same_shape(got, (3 * 2, 5), "your output")
    heads = weight.unflatten(0, (6, 2))  # (h, d_k, d_model)
    if matches(got, heads.unflatten(0, (2, 3)).mean(0).flatten(0, 1)):
        raise Mistake("you averaged heads 0, 3 / 1, 4 / 2, 5: a group is consecutive heads "
                      "(0, 1 / 2, 3 / 4, 5), the ones that repeat_kv gives the same key/value "
                      "head")
    if matches(got, heads[::2].flatten(0, 1)):
        raise Mistake("you kept the first head of each group: Ainslie et al. average them")
    close(got, _pool_reference(weight, 6, 3), "your output",
          hint="unflatten the rows into (h_kv, h / h_kv, d_k), average over the group")
    mha = reference.MultiHeadAttention(16, 4)  # the layer's own w_k: 4 heads of d_k = 4
    close(call(fn, mha.w_k.weight.detach(), 4, 1, what="an attention's w_k, 4 heads into 1"),
          mha.w_k.weight.detach().unflatten(0, (4, 4)).mean(0), "your output for one group")
    close(call(fn, weight, 6, 6, what="6 heads into 6"), weight, "your output for n_kv_heads = h")
    return "each group of consecutive heads averaged, as in Ainslie et al.'s conversion"


@exercise
def balance_loss(fn):
    """fn(probs (N, E), chosen (N, k)) -> E * sum_e f_e P_e, the Switch Transformer's loss."""
    torch.manual_seed(13)
    moe = reference.MixtureOfExperts(8, 16, n_experts=4, top_k=2)
    x = torch.randn(3, 5, 8)
    with torch.no_grad():
        moe(x)
        probs = moe.router(x.reshape(-1, 8)).softmax(dim=-1)  # (15, 4)
    chosen = probs.topk(2, dim=-1).indices  # (15, 2)
    got = number(call(fn, probs, chosen, what="probs (15, 4), chosen (15, 2)"), "your loss")
    want = moe.balance_loss.item()
    if math.isclose(got, 2 * want, rel_tol=1e-4):
        raise Mistake("your f_e sum to k = 2: f_e is the share of the N * k routing slots, "
                      "not of the N tokens")
    if math.isclose(got, want / 4, rel_tol=1e-4):
        raise Mistake("multiply by the number of experts E, so that an even load gives 1")
    if not math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-6):
        raise Mistake(f"your loss is {got:.4f}; tfs.model.MixtureOfExperts gives {want:.4f} "
                      "for the same router: f_e = share of slots sent to e, P_e = mean of "
                      "probs[:, e]")
    even = torch.full((8, 4), 0.25)
    spread = torch.tensor([[0, 1], [2, 3]] * 4)
    got = number(call(fn, even, spread, what="an even load: probs 1/4, every expert twice"),
                 "your loss for an even load")
    if not math.isclose(got, 1.0, rel_tol=1e-4):
        raise Mistake(f"an even load should give 1; yours gives {got:.4f}")
    return "equal to tfs.model.MixtureOfExperts.balance_loss; an even load gives 1"


def _rope_attention_reference(q, k, v, cos, sin):
    q, k = reference.apply_rotary(q, cos, sin), reference.apply_rotary(k, cos, sin)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return scores.softmax(dim=-1) @ v


@exercise
def clinic_rope(fn):
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
