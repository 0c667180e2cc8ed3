"""Checkers for the exercises of lesson 05 (learning to translate).

In the lesson::

    from tfs.exercises import lesson05 as check

    check.token_budget_batches(my_batches)   # section 2, batches by length under a budget
    check.clinic_padding_loss(fixed_loss)    # section 3, the bug clinic: <pad> in the loss
    check.label_smoothing_loss(my_loss)      # section 3, the paper's smoothed loss
    check.ddp_loss(my_ddp_loss)              # section 8, one process's share of the loss

Every checker runs the answer on inputs of its own and compares it with the reference,
`tfs.train`. The reference answers are in `solutions/lesson05.py` (`SOLUTIONS`).
"""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F

from tfs import train as reference
from tfs.exercises._core import Mistake, call, close, exercise, number, solution_url
from tfs.exercises._core import matches as _matches

SOLUTIONS = solution_url("05")

__all__ = [
    "SOLUTIONS",
    "clinic_padding_loss",
    "ddp_loss",
    "label_smoothing_loss",
    "loss_with_a_bug",
    "token_budget_batches",
]

PAD = 0


# ---------------------------------------------------------------------------------------------
# section 2: batches by length under a token budget


def _lengths(seed, n=300):
    rng = random.Random(seed)
    return [(rng.randint(2, 30), rng.randint(2, 30)) for _ in range(n)]


@exercise
def token_budget_batches(answer):
    """answer(lengths, max_tokens) -> list of lists of sentence indices."""
    for seed, budget in ((0, 400), (1, 120), (2, 1000)):
        lengths = _lengths(seed)
        batches = call(answer, lengths, budget, what=f"300 (source, target) lengths, "
                       f"max_tokens={budget}")
        if not isinstance(batches, (list, tuple)) or not all(
                isinstance(b, (list, tuple)) for b in batches):
            raise Mistake("return a list of batches, each a list of sentence indices")
        seen = sorted(i for b in batches for i in b)
        if any(not isinstance(i, int) for i in seen):
            raise Mistake("a batch should hold sentence indices (ints), not the lengths")
        if len(seen) < len(lengths):
            missing = len(set(range(len(lengths))) - set(seen))
            raise Mistake(f"{missing} of the {len(lengths)} sentences are in no batch: "
                          f"did you forget the last, unfinished batch?")
        if seen != list(range(len(lengths))):
            raise Mistake("every sentence should be in exactly one batch; some are repeated "
                          "or out of range")
        if any(not b for b in batches):
            raise Mistake("one of your batches is empty")
        worst = max(batches, key=lambda b: reference.batch_cost(lengths, b))
        cost = reference.batch_cost(lengths, worst)
        if cost > budget:
            raise Mistake(
                f"a batch of {len(worst)} sentences costs {cost} padded tokens, over the "
                f"budget of {budget}: count (sentences) x (longest source + longest target), "
                f"including the sentence you are about to add")
        share = reference.padding_share(lengths, batches)
        best = reference.padding_share(lengths, reference.length_batches(lengths, budget))
        if share > max(2 * best, best + 0.1):
            raise Mistake(f"{share:.0%} of your padded tokens are padding (sorted by length: "
                          f"{best:.0%}): sort the sentences by length before cutting batches")
    return "every sentence once, within budget, padding as low as sorting gives, 3 corpora"


# ---------------------------------------------------------------------------------------------
# section 3: the bug clinic: <pad> counted in the loss


def loss_with_a_bug(scores, targets, pad_id):
    """The mean cross-entropy per target token of a padded batch... with one bug."""
    return F.cross_entropy(scores.reshape(-1, scores.shape[-1]), targets.reshape(-1))


def _clinic_inputs():
    generator = torch.Generator().manual_seed(5)
    scores = torch.randn(1, 4, 11, generator=generator)  # one sentence of 4 tokens
    targets = torch.tensor([[5, 6, 7, 2]])
    padded_scores = torch.cat([scores, torch.randn(1, 3, 11, generator=generator)], dim=1)
    padded_targets = torch.tensor([[5, 6, 7, 2, PAD, PAD, PAD]])
    return scores, targets, padded_scores, padded_targets


def padding_symptom(loss_fn):
    """(loss of a sentence alone, loss of the same sentence padded with 3 <pad>)."""
    scores, targets, padded_scores, padded_targets = _clinic_inputs()
    alone = call(loss_fn, scores, targets, PAD, what="a sentence of 4 tokens")
    padded = call(loss_fn, padded_scores, padded_targets, PAD,
                  what="the same sentence followed by 3 <pad>")
    return number(alone, "your loss"), number(padded, "your loss")


@exercise
def clinic_padding_loss(answer):
    """answer: a fixed `loss_with_a_bug(scores, targets, pad_id)`."""
    alone, padded = padding_symptom(answer)
    if not math.isclose(alone, padded, rel_tol=1e-5):
        raise Mistake(f"the same sentence still scores {alone:.3f} alone and {padded:.3f} "
                      f"when padded: the <pad> positions still count (ignore_index=pad_id)")
    generator = torch.Generator().manual_seed(6)
    scores = torch.randn(3, 5, 11, generator=generator)
    targets = torch.tensor([[3, 4, 5, 6, 2], [7, 8, 2, PAD, PAD], [9, 2, PAD, PAD, PAD]])
    want = F.cross_entropy(scores.reshape(-1, 11), targets.reshape(-1), ignore_index=PAD)
    close(call(answer, scores, targets, PAD, what="a batch of 3 padded sentences"), want,
          "your loss on a batch of 3", hint="the mean over the real tokens of the whole batch")
    return "padding changes nothing, and the batch mean is over its real tokens"


# ---------------------------------------------------------------------------------------------
# section 8: one process's share of the loss under DDP


@exercise
def ddp_loss(answer):
    """answer(local_sum, local_tokens, global_tokens, world_size) -> the loss to backpropagate."""
    sums, tokens = [30.0, 2.0], [10, 2]  # two processes, uneven shares of the tokens
    world = len(sums)
    got = []
    for s, n in zip(sums, tokens, strict=True):
        what = (f"local_sum={s}, local_tokens={n}, global_tokens={sum(tokens)}, "
                f"world_size={world}")
        got.append(number(call(answer, s, n, sum(tokens), world, what=what), "your loss"))
    averaged = sum(got) / world  # what DDP's gradient averaging computes
    single = sum(sums) / sum(tokens)  # one process on the whole batch
    if math.isclose(averaged, sum(s / n for s, n in zip(sums, tokens, strict=True)) / world):
        raise Mistake("each process divides by its own token count: the average of the "
                      "processes' means is not the mean over all tokens when their shares "
                      "differ; divide by the global count")
    if math.isclose(averaged, single / world):
        raise Mistake("DDP averages the processes' gradients (divides by world_size): "
                      "multiply by world_size so the average comes out right")
    close(averaged, single, "DDP's average of your losses",
          hint="it should equal the mean loss per token over the whole batch")
    return "DDP's averaged loss equals one process's mean over the whole batch"


# ---------------------------------------------------------------------------------------------
# section 3: label smoothing (the 2017 paper's smoothed loss)


def _smoothing_cases(generator):
    """(description, scores (N, |V|), targets (N,), epsilon)."""
    cases = []
    scores = torch.randn(12, 13, generator=generator)
    targets = torch.randint(0, 13, (12,), generator=generator)
    cases.append(("12 positions, |V| = 13, ε = 0.1", scores, targets, 0.1))
    cases.append(("the same scores, ε = 0 (plain cross-entropy)", scores, targets, 0.0))
    scores = 3 * torch.randn(5, 40, generator=generator)
    targets = torch.randint(0, 40, (5,), generator=generator)
    cases.append(("5 positions, |V| = 40, ε = 0.3", scores, targets, 0.3))
    cases.append(("one position (N = 1), ε = 0.1", scores[:1], targets[:1], 0.1))
    confident = torch.zeros(4, 13)
    confident[torch.arange(4), torch.tensor([3, 5, 7, 9])] = 200.0  # a very sure model
    cases.append(("a very confident model (scores of 200), ε = 0.1", confident,
                  torch.tensor([3, 5, 2, 9]), 0.1))
    return cases


def _other_classes_only(scores, targets, epsilon):
    """The variant that spreads ε over the |V| − 1 wrong tokens only (not PyTorch's)."""
    log_p = scores.double().log_softmax(dim=-1)
    vocab = scores.shape[-1]
    q = torch.full_like(log_p, epsilon / (vocab - 1))
    q[torch.arange(len(targets)), targets] = 1 - epsilon
    return -(q * log_p).sum(dim=-1).mean()


def _no_one_minus(scores, targets, epsilon):
    log_p = scores.double().log_softmax(dim=-1)
    q = F.one_hot(targets, scores.shape[-1]).double() + epsilon / scores.shape[-1]
    return -(q * log_p).sum(dim=-1).mean()


@exercise
def label_smoothing_loss(fn):
    """fn(scores (N, |V|), targets (N,), epsilon) -> the mean label-smoothed cross-entropy."""
    generator = torch.Generator().manual_seed(3)
    for what, scores, targets, epsilon in _smoothing_cases(generator):
        got = call(fn, scores.clone(), targets.clone(), epsilon, what=what)
        want = F.cross_entropy(scores.double(), targets, label_smoothing=epsilon)
        if isinstance(got, torch.Tensor) and got.dim() == 1 and got.numel() == len(targets):
            raise Mistake(f"return one number, the MEAN over the positions; yours has one per "
                          f"position ({what})")
        if isinstance(got, torch.Tensor) and not torch.isfinite(got).all():
            raise Mistake(f"your loss is {got.flatten()[0].item()} ({what}): softmax then log "
                          "gives log(0) for large scores; use log_softmax, which is stable")
        try:
            close(got, want, f"your loss ({what})", atol=1e-4)
        except Mistake:
            if epsilon > 0 and _matches(got, _other_classes_only(scores, targets, epsilon)):
                raise Mistake(
                    f"you spread ε over the |V| − 1 wrong tokens only ({what}). The paper "
                    "and PyTorch mix the one-hot target with the UNIFORM distribution over "
                    "all |V| tokens: (1 − ε)·one-hot + ε/|V|, so the right token gets "
                    "1 − ε + ε/|V|") from None
            if epsilon > 0 and _matches(got, _no_one_minus(scores, targets, epsilon)):
                raise Mistake(
                    f"your target distribution sums to 1 + ε ({what}): the one-hot part is "
                    "weighted by 1 − ε, (1 − ε)·one-hot + ε/|V|") from None
            if _matches(got, F.cross_entropy(scores.double(), targets)) and epsilon > 0:
                raise Mistake(f"that is the plain cross-entropy ({what}): ε is not used") from None
            if _matches(got, F.cross_entropy(scores.double(), targets,
                                             label_smoothing=epsilon, reduction="sum")):
                raise Mistake(f"you summed over the positions ({what}); take the mean") from None
            raise
    return "equal to F.cross_entropy(label_smoothing=ε) on 5 inputs (ε = 0, N = 1, scores of 200)"


