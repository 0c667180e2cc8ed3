"""The exercises of lesson 00: the usual mistakes, each rejected with a message naming it.

The reference answers are those of solutions/lesson00.py; the wrong answers below are the
mistakes a learner makes most often, and each must be rejected with a message naming it.
"""

import importlib.util
from pathlib import Path

import pytest
import torch

from tfs.exercises import lesson00 as check

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("solutions_lesson00",
                                               ROOT / "solutions" / "lesson00.py")
solutions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solutions)



# --- add-k smoothing -----------------------------------------------------------------------


def add_k_in_place(counts, k):
    counts += k
    return counts / counts.sum(dim=1, keepdim=True)


@pytest.mark.parametrize("answer, phrase", [
    (lambda c, k: (c + k) / c.sum(dim=1, keepdim=True), "divide by (row total + k·|V|)"),
    (lambda c, k: (c + k) / (c.sum(dim=1, keepdim=True) + k), "grows by k·|V|, not by k"),
    (lambda c, k: (c + k) / (c.sum(dim=0, keepdim=True) + k * c.shape[0]), "COLUMNS sum to 1"),
    (add_k_in_place, "changed the counts it was given"),
    (lambda c, k: c / c.sum(dim=1, keepdim=True).clamp(min=1), "row total + k·|V|"),
])
def test_smoothing_mistakes_are_named(answer, phrase):
    verdict = check.smoothed_bigram.verdict(answer)
    assert verdict.status == "wrong"
    assert phrase in verdict.message


def test_smoothing_gives_unseen_pairs_a_probability():
    counts = torch.tensor([[2.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    table = solutions.smoothed_bigram(counts, 1.0)
    assert (table > 0).all()
    assert torch.allclose(table.sum(dim=1), torch.ones(2, dtype=torch.float64))
    assert torch.allclose(table[1], torch.full((2,), 0.5, dtype=torch.float64))  # uniform


# --- cross-entropy ---------------------------------------------------------------------------


def rows(log_p, targets):
    return log_p[torch.arange(len(targets)), targets]


@pytest.mark.parametrize("answer, phrase", [
    (lambda logits, t: rows(logits.softmax(dim=-1), t).log().neg().mean(), "exp(1000) overflows"),
    (lambda logits, t: rows(logits.log_softmax(dim=-1), t).mean(), "MINUS the log-probability"),
    (lambda logits, t: -rows(logits.log_softmax(dim=0), t).mean(), "normalised over the batch"),
    (lambda logits, t: -rows(logits.log_softmax(dim=-1), t).sum(), "do not sum them"),
    (lambda logits, t: -rows(logits, t).mean(), "LOGIT, not its log-probability"),
    (lambda logits, t: -rows(logits.log_softmax(dim=-1), t), "take the .mean()"),
])
def test_cross_entropy_mistakes_are_named(answer, phrase):
    verdict = check.cross_entropy.verdict(answer)
    assert verdict.status == "wrong"
    assert phrase in verdict.message


def test_an_error_inside_the_answer_is_a_verdict_not_a_traceback():
    verdict = check.cross_entropy.verdict(lambda logits, t: logits @ t)
    assert verdict.status == "wrong"
    assert "your code raised RuntimeError" in verdict.message


# --- the bug clinic: the decoder's inputs under teacher forcing -----------------------------


def buggy_decoder_inputs(target, start):
    """The lesson's planted bug: START prepended, then the FIRST column dropped."""
    begin = torch.full((target.shape[0], 1), start)
    return torch.cat([begin, target], dim=1)[:, 1:]


def test_the_buggy_inputs_show_the_symptom_and_the_fix_does_not():
    target = torch.randint(0, 10, (500, 8), generator=torch.Generator().manual_seed(0))
    assert check.copy_accuracy(buggy_decoder_inputs(target, 10), target) == 1.0
    assert check.copy_accuracy(solutions.clinic_shift(target, 10), target) < 0.2


@pytest.mark.parametrize("answer, phrase", [
    (buggy_decoder_inputs, "the very token it must predict"),
    (lambda t, s: torch.cat([t[:, 1:], torch.full((t.shape[0], 1), s)], dim=1), "shifted left"),
    (lambda t, s: torch.cat([torch.full((t.shape[0], 1), s), t], dim=1), "drop the LAST"),
    (lambda t, s: torch.cat([torch.zeros_like(t[:, :1]), t[:, :-1]], dim=1), "should be START"),
])
def test_clinic_mistakes_are_named(answer, phrase):
    verdict = check.clinic_shift.verdict(answer)
    assert verdict.status == "wrong"
    assert phrase in verdict.message


# --- attention weights with padding ----------------------------------------------------------


def hide(scores, real, value=float("-inf")):
    return scores.masked_fill(~real[:, None, :], value)


@pytest.mark.parametrize("answer, phrase", [
    (lambda s, r: s.softmax(dim=-1), "on <pad> positions"),
    (lambda s, r: s.softmax(dim=-1) * r[:, None, :], "AFTER the softmax"),
    (lambda s, r: hide(s, r).softmax(dim=1), "over the decoder steps"),
    (lambda s, r: hide(s, ~r).softmax(dim=-1), "True in the mask marks a REAL"),
])
def test_attention_weight_mistakes_are_named(answer, phrase):
    verdict = check.attention_weights.verdict(answer)
    assert verdict.status == "wrong"
    assert phrase in verdict.message


def test_a_large_negative_number_instead_of_minus_infinity_is_fine():
    verdict = check.attention_weights.verdict(lambda s, r: hide(s, r, -1e9).softmax(dim=-1))
    assert verdict.status == "passed", verdict.message


def test_the_smallest_fix_of_the_lesson_s_buggy_inputs_passes():
    """The reader drops the last column instead of the first: that must pass."""

    def fixed(target, start):
        begin = torch.full((target.shape[0], 1), start)
        return torch.cat([begin, target], dim=1)[:, :-1]

    verdict = check.clinic_shift.verdict(fixed)
    assert verdict.status == "passed", verdict.message
