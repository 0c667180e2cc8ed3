"""The exercises of lesson 05: the usual mistakes, each rejected with a message naming it."""

import importlib.util
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tfs.exercises import lesson05 as check

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("solutions_lesson05",
                                               ROOT / "solutions" / "lesson05.py")
solutions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solutions)



def by_sentence_count(lengths, max_tokens):  # 32 sentences a batch, whatever their length
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i : i + 32] for i in range(0, len(order), 32)]


def unsorted(lengths, max_tokens):  # the budget respected, but lengths mixed
    batches, current, widest = [], [], (0, 0)
    for i in range(len(lengths)):
        grown = tuple(map(max, widest, lengths[i]))
        if current and (len(current) + 1) * sum(grown) > max_tokens:
            batches.append(current)
            current, grown = [], lengths[i]
        current.append(i)
        widest = grown
    return batches + [current]


def drops_the_last(lengths, max_tokens):
    return solutions.token_budget_batches(lengths, max_tokens)[:-1]


def without_the_new_sentence(lengths, max_tokens):  # checks the budget before adding it
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches, current = [], []
    for i in order:
        rows = [lengths[j] for j in current]
        widest = [max(column) for column in zip(*rows, strict=True)] if rows else []
        if current and len(current) * sum(widest) > max_tokens:
            batches.append(current)
            current = []
        current.append(i)
    return batches + [current]


@pytest.mark.parametrize("answer, phrase", [
    (by_sentence_count, "over the budget"),
    (unsorted, "sort the sentences by length"),
    (drops_the_last, "last, unfinished batch"),
    (without_the_new_sentence, "over the budget"),
])
def test_token_budget_batches_mistakes(answer, phrase):
    verdict = check.token_budget_batches.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


def test_clinic_the_bug_shows_its_symptom_and_the_fix_removes_it():
    alone, padded = check.padding_symptom(check.loss_with_a_bug)
    assert not math.isclose(alone, padded, rel_tol=1e-3)  # the symptom
    alone, padded = check.padding_symptom(solutions.clinic_padding_loss)
    assert math.isclose(alone, padded, rel_tol=1e-6)
    assert check.clinic_padding_loss.verdict(check.loss_with_a_bug).status == "wrong"


def masks_but_means_over_all(scores, targets, pad_id):  # zeroes <pad>, divides by everything
    per_token = F.cross_entropy(scores.reshape(-1, scores.shape[-1]), targets.reshape(-1),
                                reduction="none")
    return (per_token * (targets.reshape(-1) != pad_id)).mean()


def mean_of_sentence_means(scores, targets, pad_id):
    per_token = F.cross_entropy(scores.transpose(1, 2), targets, reduction="none",
                                ignore_index=pad_id)
    real = (targets != pad_id).sum(dim=1)
    return (per_token.sum(dim=1) / real).mean()


@pytest.mark.parametrize("answer, phrase", [
    (check.loss_with_a_bug, "still count"),
    (masks_but_means_over_all, "still count"),
    (mean_of_sentence_means, "real tokens of the whole batch"),
])
def test_clinic_wrong_fixes(answer, phrase):
    verdict = check.clinic_padding_loss.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


@pytest.mark.parametrize("answer, phrase", [
    (lambda s, n, g, w: s / n, "its own token count"),
    (lambda s, n, g, w: s / g, "multiply by world_size"),
    (lambda s, n, g, w: s, "differs from the reference"),
])
def test_ddp_loss_mistakes(answer, phrase):
    verdict = check.ddp_loss.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


# --- label smoothing -------------------------------------------------------------------------


def smoothed_with(over_others=False, one_minus=True, use_log_softmax=True, reduce="mean",
                  use_epsilon=True):
    def fn(scores, targets, epsilon):
        epsilon = epsilon if use_epsilon else 0.0
        vocab = scores.shape[-1]
        log_p = scores.log_softmax(-1) if use_log_softmax else scores.softmax(-1).log()
        spread = epsilon / (vocab - 1) if over_others else epsilon / vocab
        q = torch.full_like(log_p, spread)
        right = (1 - epsilon) if one_minus else 1.0
        q[torch.arange(len(targets)), targets] = right if over_others else right + spread
        per_position = -(q * log_p).sum(-1)
        return {"mean": per_position.mean(), "sum": per_position.sum(),
                "none": per_position}[reduce]
    return fn


@pytest.mark.parametrize("answer, phrase", [
    (smoothed_with(over_others=True), "|V| − 1 wrong tokens only"),
    (smoothed_with(one_minus=False), "sums to 1 + ε"),
    (smoothed_with(use_log_softmax=False), "use log_softmax"),
    (smoothed_with(reduce="sum"), "take the mean"),
    (smoothed_with(reduce="none"), "the MEAN over the positions"),
    (smoothed_with(use_epsilon=False), "ε is not used"),
])
def test_label_smoothing_mistakes(answer, phrase):
    verdict = check.label_smoothing_loss.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


def test_label_smoothing_solution_is_pytorchs_loss():
    scores, targets = torch.randn(7, 11), torch.randint(0, 11, (7,))
    want = F.cross_entropy(scores, targets, label_smoothing=0.2)
    assert torch.allclose(solutions.label_smoothing_loss(scores, targets, 0.2), want, atol=1e-6)
