"""The exercises of lesson 01: the usual mistakes, each rejected with a message naming it.

The reference answers are those of solutions/lesson01.py; the wrong answers below are the
mistakes a learner makes most often, and each must be rejected with a message naming it.
"""

import importlib.util
from pathlib import Path

import pytest
import torch

from tfs.exercises import lesson01 as check

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("solutions_lesson01",
                                               ROOT / "solutions" / "lesson01.py")
solutions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solutions)



# --- the chain of a stack of RNN layers ------------------------------------------------------


@pytest.mark.parametrize("answer, phrase", [
    (lambda n, layers: n * layers, "diagonal wave"),
    (lambda n, layers: n, "starts layers - 1 steps late"),
    (lambda n, layers: n + layers, "off by one"),
    (lambda n, layers: n + layers - 0.5, "a whole number"),
])
def test_chain_mistakes_are_named(answer, phrase):
    verdict = check.rnn_chain.verdict(answer)
    assert verdict.status == "wrong"
    assert phrase in verdict.message


# --- the FLOPs of an attention layer ---------------------------------------------------------


@pytest.mark.parametrize("answer, phrase", [
    (lambda n, d: 4 * n * d * d + 2 * n * n * d, "a multiply-add is 2"),
    (lambda n, d: 4 * n * n * d, "only the core"),
    (lambda n, d: 8 * n * d * d + 2 * n * n * d, "there are two"),
    (lambda n, d: 6 * n * d * d + 4 * n * n * d, "output projection W_O"),
    (lambda n, d: 8 * n * d * d, "projections only"),
    (lambda n, d: "8nd² + 4n²d", "should be a number"),
])
def test_flop_mistakes_are_named(answer, phrase):
    verdict = check.attention_layer_flops.verdict(answer)
    assert verdict.status == "wrong"
    assert phrase in verdict.message


# --- where attention overtakes a GRU ----------------------------------------------------------


@pytest.mark.parametrize("answer, phrase", [
    (lambda d: 3 * d, "attention CORE"),
    (lambda d: d / 2, "RNN's recurrence"),
    (lambda d: 2 * d, "LSTM"),
    (lambda d: d + 1, "EQUAL"),
])
def test_crossover_mistakes_are_named(answer, phrase):
    verdict = check.gru_crossover.verdict(answer)
    assert verdict.status == "wrong"
    assert phrase in verdict.message


def test_the_crossover_is_where_the_counted_costs_meet():
    d = 64
    n = solutions.gru_crossover(d)
    attention, gru = solutions.attention_layer_flops, lambda n, d: 12 * n * d * d
    assert attention(n, d) >= gru(n, d) and attention(n - 1, d) < gru(n - 1, d)


# --- the bug clinic: an RNN that forgets ------------------------------------------------------


def buggy_rnn_layer(x, W_ih, W_hh):
    """The lesson's planted bug: the new state goes to `state`, the next step reads `s`."""
    inputs = x @ W_ih
    s = torch.zeros(x.shape[0], W_hh.shape[0], dtype=x.dtype)
    for k in range(x.shape[1]):
        state = torch.tanh(inputs[:, k] + s @ W_hh)
    return state


def transposed_rnn_layer(x, W_ih, W_hh):
    s = torch.zeros(x.shape[0], W_hh.shape[0], dtype=x.dtype)
    for k in range(x.shape[1]):
        s = torch.tanh(x[:, k] @ W_ih + s @ W_hh.T)
    return s


def every_state(x, W_ih, W_hh):
    s, states = torch.zeros(x.shape[0], W_hh.shape[0], dtype=x.dtype), []
    for k in range(x.shape[1]):
        s = torch.tanh(x[:, k] @ W_ih + s @ W_hh)
        states.append(s)
    return torch.stack(states, dim=1)


def test_the_buggy_layer_shows_the_symptom_and_the_fix_does_not():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 8, 16, generator=generator)
    W_ih, W_hh = (torch.randn(16, 16, generator=generator) / 4 for _ in range(2))
    buggy = check.gradient_by_distance(buggy_rnn_layer, x, W_ih, W_hh)
    fixed = check.gradient_by_distance(solutions.clinic_rnn_state, x, W_ih, W_hh)
    assert buggy[0] > 0 and (buggy[1:] == 0).all()  # only the last token reaches the state
    assert (fixed > 0).all()  # every token does


@pytest.mark.parametrize("answer, phrase", [
    (buggy_rnn_layer, "does not depend on any token but the last"),
    (transposed_rnn_layer, "W_hh transposed"),
    (every_state, "return the LAST state"),
])
def test_clinic_mistakes_are_named(answer, phrase):
    verdict = check.clinic_rnn_state.verdict(answer)
    assert verdict.status == "wrong"
    assert phrase in verdict.message


def test_the_smallest_fix_of_the_lesson_s_buggy_layer_passes():
    """The reader fixes only the typo, keeping the lesson's float32 zeros: that must pass."""

    def fixed(x, W_ih, W_hh):
        inputs = x @ W_ih
        s = torch.zeros(x.shape[0], W_hh.shape[0])
        for k in range(x.shape[1]):
            s = torch.tanh(inputs[:, k] + s @ W_hh)
        return s

    verdict = check.clinic_rnn_state.verdict(fixed)
    assert verdict.status == "passed", verdict.message
