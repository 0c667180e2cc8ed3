"""Checkers for the exercises of lesson 01 (why the Transformer).

In the lesson::

    from tfs.exercises import lesson01 as check

    check.rnn_chain(my_rnn_chain)                      # section 1: steps one after another
    check.attention_layer_flops(my_flops)              # section 5: the formula of a layer
    check.gru_crossover(my_crossover)                  # section 5: where attention costs more
    check.clinic_rnn_state(my_rnn_layer)               # section 2, the bug clinic

Every checker runs the answer on inputs of its own (length 1, one layer, a batch of 1, odd
widths) and compares it with the reference: counts of a dependency graph, PyTorch's own FLOP
counter, `nn.RNN`. The reference answers are in `solutions/lesson01.py`.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from tfs.costs import count_flops
from tfs.exercises._core import Mistake, a_tensor, call, close, exercise, number, solution_url

SOLUTIONS = solution_url("01")

__all__ = [
    "SOLUTIONS",
    "attention_layer_flops",
    "clinic_rnn_state",
    "gradient_by_distance",
    "gru_crossover",
    "rnn_chain",
]


def _whole(value, what):
    value = number(value, what)
    if value != int(value):
        raise Mistake(f"{what} is a count, a whole number; yours is {value:g}")
    return int(value)


# ---------------------------------------------------------------------------------------------
# section 1: the chain of a stack of recurrent layers


def _longest_chain(n, layers):
    """Steps one after another when step k of layer l waits for step k-1 of layer l and for
    step k of layer l-1, and runs as soon as both are done: the longest path in that grid."""
    finish = [[0] * (n + 1) for _ in range(layers + 1)]
    for layer in range(1, layers + 1):
        for k in range(1, n + 1):
            finish[layer][k] = 1 + max(finish[layer][k - 1], finish[layer - 1][k])
    return finish[layers][n]


@exercise
def rnn_chain(fn):
    """fn(n, layers) -> the recurrent steps one after another in a stack of RNN layers."""
    cases = [(32, 1), (32, 2), (32, 6), (1, 4), (1, 1), (100, 3)]
    for n, layers in cases:
        what = f"n = {n} tokens, {layers} layer{'s' if layers > 1 else ''}"
        got = _whole(call(fn, n, layers, what=what), f"your chain for {what}")
        want = _longest_chain(n, layers)
        if got == want:
            continue
        if got == n * layers:
            raise Mistake(
                f"{got} for {what} is the chain nn.RNN runs (layer by layer, as matmul_log "
                "shows), but the question asks what the steps need: layer 2 can start its step 1 "
                "as soon as layer 1 has finished ITS step 1, so the layers can run as a diagonal "
                "wave"
            )
        if got == n:
            raise Mistake(
                f"{got} for {what} forgets that layer l's step k also waits for layer l-1's step "
                "k: the last layer starts layers - 1 steps late"
            )
        if got in (want + 1, want - 1):
            raise Mistake(
                f"off by one: {got} for {what}. Count the steps on the longest path: the first "
                "layer's n steps, then one more for each layer above it"
            )
        raise Mistake(f"your chain for {what} is {got}; the longest path of waiting steps is "
                      "shorter or longer than that: draw the grid of (layer, step) for n = 3")
    return "n + layers - 1 steps, the longest path through the grid, on 6 stacks"


# ---------------------------------------------------------------------------------------------
# section 5: the FLOPs of a self-attention layer, and where it overtakes a GRU layer


def _attention_layer(x, W_q, W_k, W_v, W_o):
    """The lesson's attention layer: four projections around the scores and the mix."""
    q, k, v = x @ W_q, x @ W_k, x @ W_v  # (1, n, d) each
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)  # (1, n, n)
    return (weights @ v) @ W_o


def _counted_attention_flops(n, d):
    """PyTorch's count for one sequence of n tokens of width d (meta tensors: shapes only)."""
    x = torch.empty(1, n, d, device="meta")
    weights = [torch.empty(d, d, device="meta") for _ in range(4)]
    return count_flops(_attention_layer, x, *weights)


_FLOP_CASES = [(16, 64), (1024, 512), (7, 3), (1, 1), (300, 64)]


@exercise
def attention_layer_flops(fn):
    """fn(n, d) -> FLOPs of one self-attention layer on one sequence (2 per multiply-add)."""
    for n, d in _FLOP_CASES:
        what = f"n = {n}, d = {d}"
        got = number(call(fn, n, d, what=what), f"your count for {what}")
        want = _counted_attention_flops(n, d)
        if got == want:
            continue
        wrong = {
            "half": 4 * n * d * d + 2 * n * n * d,
            "core": 4 * n * n * d,
            "one n x n product": 8 * n * d * d + 2 * n * n * d,
            "three projections": 6 * n * d * d + 4 * n * n * d,
            "projections only": 8 * n * d * d,
        }
        if got == wrong["half"]:
            raise Mistake(
                f"yours is {got:,.0f} for {what}, half of PyTorch's count: a multiply-add is 2 "
                "FLOPs, one multiplication and one addition"
            )
        if got == wrong["core"]:
            raise Mistake(
                f"{got:,.0f} for {what} is only the core (scores and mix); the layer also "
                "projects the input to Q, K and V and the result through W_O: four (n × d) by "
                "(d × d) products, 2nd² each"
            )
        if got == wrong["one n x n product"]:
            raise Mistake(
                f"{got:,.0f} for {what} counts one n × n product; there are two: the scores "
                "QK^T and the mix of the values, A V, each 2n²d"
            )
        if got == wrong["three projections"]:
            raise Mistake(
                f"{got:,.0f} for {what} counts three projections; there are four: Q, K, V and "
                "the output projection W_O"
            )
        if got == wrong["projections only"]:
            raise Mistake(
                f"{got:,.0f} for {what} counts the projections only; add the scores QK^T and "
                "the mix AV (2n²d each)"
            )
        raise Mistake(
            f"yours is {got:,.0f} for {what}; PyTorch counts {want:,}. Add up the six products:"
            " (rows × inner × columns) multiply-adds each, 2 FLOPs per multiply-add"
        )
    return "matches PyTorch's FlopCounterMode at 5 (n, d) points, d = 1 and n = 1 included"


def _gru_flops(n, d):
    return 12 * n * d * d  # the lesson counts nn.GRU at 12nd² (three input + recurrent pairs)


def _first_n_at_least(d):
    n = 1
    while 8 * n * d * d + 4 * n * n * d < _gru_flops(n, d):
        n += 1
    return n


@exercise
def gru_crossover(fn):
    """fn(d) -> the smallest n at which an attention layer costs at least a GRU layer's FLOPs."""
    for d in (512, 64, 5, 1):
        what = f"d = {d}"
        got = number(call(fn, d, what=what), f"your n for {what}")
        want = _first_n_at_least(d)
        if got == want:
            continue
        if got == 3 * d:
            raise Mistake(
                f"{got:g} for {what} compares the attention CORE (4n²d) with the GRU layer; the "
                "whole attention layer also has its four projections: 8nd² + 4n²d"
            )
        if got == d / 2:
            raise Mistake(
                f"{got:g} for {what} is the core against the RNN's recurrence (the lesson's "
                "first crossing); compare the whole attention layer (8nd² + 4n²d) with the GRU "
                "layer (12nd²)"
            )
        if got == 2 * d:
            raise Mistake(
                f"{got:g} for {what} is where the attention layer meets the LSTM (16nd²); the "
                "GRU layer costs 12nd²"
            )
        if got == want + 1:
            raise Mistake(
                f"{got:g} for {what} is one too many: at n = {want} the two costs are EQUAL, and "
                "'at least as many' includes equal"
            )
        raise Mistake(
            f"yours is {got:g} for {what}: solve 8nd² + 4n²d ≥ 12nd² for n (divide by 4nd)"
        )
    return "n = d: from there on the attention layer costs at least as much as a GRU layer"


# ---------------------------------------------------------------------------------------------
# section 2, the bug clinic: an explicit RNN layer that forgets


def gradient_by_distance(rnn_layer, x, W_ih, W_hh):
    """|d(sum of the last state) / d x_(n-k)| for k = 0 .. n-1, averaged over the batch."""
    x = x.detach().clone().requires_grad_(True)
    rnn_layer(x, W_ih, W_hh).sum().backward()
    return x.grad.norm(dim=-1).flip(-1).mean(dim=0)  # (n,): entry k = distance k


def _reference_last_state(x, W_ih, W_hh):
    rnn = nn.RNN(W_ih.shape[0], W_ih.shape[1], batch_first=True, bias=False)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(W_ih.T)
        rnn.weight_hh_l0.copy_(W_hh.T)
        return rnn(x)[1][0]  # (B, d) the last state


def _rnn_cases(generator):
    def randn(*shape):
        return torch.randn(*shape, generator=generator) * 0.6  # float32, as in the lesson

    return [
        ("x (2, 6, 3), W_ih (3, 4), W_hh (4, 4)", randn(2, 6, 3), randn(3, 4), randn(4, 4)),
        ("a batch of 1 with one token: x (1, 1, 4), W_ih (4, 4), W_hh (4, 4)",
         randn(1, 1, 4), randn(4, 4), randn(4, 4)),
    ]


@exercise
def clinic_rnn_state(fn):
    """fn(x, W_ih, W_hh) -> the last state of the RNN s_k = tanh(x_k W_ih + s_(k-1) W_hh)."""
    generator = torch.Generator().manual_seed(1)
    for what, x, W_ih, W_hh in _rnn_cases(generator):
        last = call(fn, x.clone(), W_ih, W_hh, what=what)
        a_tensor(last, "the last state", where=what)
        want = _reference_last_state(x, W_ih, W_hh)
        if last.dim() == 3 and tuple(last.shape[::2]) == tuple(want.shape):
            raise Mistake(
                f"return the LAST state, shape {tuple(want.shape)}; yours has "
                f"{tuple(last.shape)}, a state per token"
            )
        if x.shape[1] > 1:
            gradient = call(gradient_by_distance, fn, x, W_ih, W_hh, what=what)
            if gradient[1:].abs().max() == 0:
                raise Mistake(
                    "the last state still does not depend on any token but the last (the "
                    "gradient from 1 token back is exactly 0): each step must read the state "
                    "the step before wrote; is the new state stored in the variable the next "
                    "step reads?"
                )
        transposed = torch.zeros_like(want)
        if x.shape[1] > 1:
            s = torch.zeros_like(want)
            for k in range(x.shape[1]):
                s = torch.tanh(x[:, k] @ W_ih + s @ W_hh.T)
            transposed = s
        if x.shape[1] > 1 and torch.allclose(last.detach().float(), transposed, atol=1e-5):
            raise Mistake(
                "close, but your recurrence multiplies by W_hh transposed: the lesson's layer is "
                "s_k = tanh(x_k W_ih + s_(k-1) W_hh), the state on the LEFT of W_hh"
            )
        close(last, want, f"your last state ({what})",
              hint="s_k = tanh(x_k W_ih + s_(k-1) W_hh), starting from s_0 = 0")
    return "the last state matches nn.RNN, and the gradient reaches every earlier token again"
