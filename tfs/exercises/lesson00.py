"""Checkers for the exercises of lesson 00 (seq2seq, language models and attention).

In the lesson::

    from tfs.exercises import lesson00 as check

    check.smoothed_bigram(my_smoothed_bigram)    # section 2: add-k smoothing
    check.cross_entropy(my_cross_entropy)        # section 3: the loss from logits
    check.clinic_shift(my_decoder_inputs)        # section 5, the bug clinic
    check.attention_weights(my_attention_weights)  # section 6: scores -> weights, with padding

Every checker runs the answer on inputs of its own (a batch of 1, length 1, rows never seen,
padding, huge logits) and compares it with the reference. The reference answers are in
`solutions/lesson00.py`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tfs.exercises._core import (
    Mistake,
    a_tensor,
    call,
    close,
    exercise,
    same_shape,
    solution_url,
)

SOLUTIONS = solution_url("00")

__all__ = [
    "SOLUTIONS",
    "attention_weights",
    "clinic_shift",
    "copy_accuracy",
    "cross_entropy",
    "smoothed_bigram",
]


def _tensor(value, what):
    return a_tensor(value, what).detach().to("cpu", torch.float64)


# ---------------------------------------------------------------------------------------------
# section 2: add-k smoothing of a bigram table


def _counts_cases(generator):
    """(description, counts, k): whole counts, a row never seen, k below 1, one context."""
    counts = torch.randint(0, 4, (5, 6), generator=generator).double()
    counts[2] = 0  # a context that never occurred
    counts[0, 0] = 7
    return [
        ("counts of shape (5, 6) with an all-zero row, k = 1", counts, 1.0),
        ("the same counts, k = 0.1", counts, 0.1),
        ("one context, counts [[3, 0, 1]], k = 0.5",
         torch.tensor([[3.0, 0.0, 1.0]], dtype=torch.float64), 0.5),
    ]


def _add_k(counts, k):
    return (counts + k) / (counts.sum(dim=1, keepdim=True) + k * counts.shape[1])


@exercise
def smoothed_bigram(fn):
    """fn(counts, k) -> the table p(next | previous) = (count + k) / (row total + k·|V|)."""
    generator = torch.Generator().manual_seed(0)
    for what, counts, k in _counts_cases(generator):
        given = counts.clone()
        table = _tensor(call(fn, given, k, what=what), "your table")
        if not torch.equal(given, counts):
            raise Mistake(
                "your function changed the counts it was given (counts += k?): add k to a copy, "
                "counts + k, so the caller's counts stay counts"
            )
        same_shape(table, counts.shape, f"your table ({what})")
        want = _add_k(counts, k)
        if torch.allclose(table, want, atol=1e-9):
            continue
        rows = table.sum(dim=1)
        columns = table.sum(dim=0)
        if counts.shape[0] > 1 and torch.allclose(columns, torch.ones_like(columns)) and not (
                torch.allclose(rows, torch.ones_like(rows))):
            raise Mistake(
                "your COLUMNS sum to 1, the rows do not: a row is one context, p(next | previous),"
                " so normalise each row (sum over dim=1)"
            )
        if torch.allclose(table, (counts + k) / counts.sum(dim=1, keepdim=True).clamp(min=1e-300),
                          atol=1e-9) or not torch.isfinite(table).all():
            largest = rows[torch.isfinite(rows)].max()
            raise Mistake(
                f"each row should sum to 1; yours sum to up to {largest:.3g}"
                " (or are not finite for a row never seen): adding k to each of the |V| counts of "
                "a row adds k·|V| to its total, so divide by (row total + k·|V|)"
            )
        if torch.allclose(table, (counts + k) / (counts.sum(dim=1, keepdim=True) + k), atol=1e-9):
            raise Mistake(
                f"each row should sum to 1; yours sum to up to {rows.max():.3g}: k was added to "
                "every one of the |V| counts, so the total grows by k·|V|, not by k"
            )
        if (table <= 0).any():
            raise Mistake(
                "some of your probabilities are 0: with add-k smoothing every pair, seen or not, "
                "gets at least k / (row total + k·|V|)"
            )
        close(table, want, f"your table ({what})",
              hint="p(next | previous) = (count + k) / (row total + k·|V|)")
    return "matches (count + k) / (row total + k·|V|) on 3 tables, a row never seen included"


# ---------------------------------------------------------------------------------------------
# section 3: cross-entropy from logits


def _logit_cases(generator):
    logits = torch.randn(5, 7, generator=generator, dtype=torch.float64) * 3
    targets = torch.randint(0, 7, (5,), generator=generator)
    huge = torch.tensor([[1000.0, 990.0, 0.0], [-5.0, 1200.0, 1199.0]], dtype=torch.float64)
    return [
        ("logits (5, 7) and 5 targets", logits, targets),
        ("a batch of 1: logits (1, 7)", logits[:1], targets[:1]),
        ("huge logits, [[1000, 990, 0], [-5, 1200, 1199]], targets [2, 2]", huge,
         torch.tensor([2, 2])),
    ]


def _as_loss(value, what):
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.detach().double().reshape(())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return torch.tensor(float(value), dtype=torch.float64)
    if isinstance(value, torch.Tensor):
        raise Mistake(
            f"the loss should be one number (the mean over the batch); yours has shape "
            f"{tuple(value.shape)} ({what}): take the .mean() of the per-token losses"
        )
    raise Mistake(f"the loss should be a number; yours is a {type(value).__name__}")


@exercise
def cross_entropy(fn):
    """fn(logits, targets) -> the mean over the batch of -log softmax(logits)[target]."""
    generator = torch.Generator().manual_seed(0)
    for what, logits, targets in _logit_cases(generator):
        loss = _as_loss(call(fn, logits.clone(), targets.clone(), what=what), what)
        want = F.cross_entropy(logits, targets)
        if torch.isclose(loss, want, rtol=1e-6, atol=1e-8):
            continue
        if not torch.isfinite(loss):
            raise Mistake(
                f"your loss is {loss.item()} for {what}: exp(1000) overflows, or a probability "
                "of e^-1000 rounds to 0 before its log. Work with log-probabilities: subtract "
                "each row's largest logit before exponentiating (log-sum-exp), as "
                "logits.log_softmax(dim=-1) does"
            )
        if torch.isclose(loss, -want, rtol=1e-6):
            raise Mistake(
                f"your loss is {loss.item():.4g}, the reference {want.item():.4g}: a loss is "
                "never negative; it is MINUS the log-probability of the right token"
            )
        if logits.shape[0] > 1 and torch.isclose(
                loss, F.nll_loss(logits.log_softmax(dim=0), targets), rtol=1e-6):
            raise Mistake(
                "you normalised over the batch (dim=0): each ROW of the logits is one "
                "prediction over |V| tokens, so the softmax runs over the last dimension"
            )
        if logits.shape[0] > 1 and torch.isclose(loss, want * logits.shape[0], rtol=1e-6):
            raise Mistake(
                f"yours is {logits.shape[0]} times the reference, the batch size: average the "
                "per-token losses (mean), do not sum them"
            )
        if torch.isclose(loss, -logits[torch.arange(len(targets)), targets].mean(), rtol=1e-6):
            raise Mistake(
                "you took the right token's LOGIT, not its log-probability: turn the logits into "
                "log-probabilities first (log_softmax over the last dimension)"
            )
        raise Mistake(
            f"your loss is {loss.item():.4g}, the reference {want.item():.4g} ({what}): the "
            "loss is the mean over the batch of -log softmax(logits)[target]"
        )
    return "matches F.cross_entropy on 3 batches, a batch of 1 and logits of 1,000 included"


# ---------------------------------------------------------------------------------------------
# section 5, the bug clinic: the decoder's inputs under teacher forcing


def copy_accuracy(decoder_inputs, target) -> float:
    """The score of a 'model' that outputs the token it reads at each step: the share of
    target tokens equal to the decoder's input at the same step. 1.0 means the target leaked
    into the inputs; about 1/10 is chance on random digits."""
    return (decoder_inputs == target).double().mean().item()


def _shift_right(target, start):
    begin = torch.full((target.shape[0], 1), start, dtype=target.dtype)
    return torch.cat([begin, target[:, :-1]], dim=1)


@exercise
def clinic_shift(fn):
    """fn(target, start) -> the decoder's inputs: start, then the target without its last token."""
    generator = torch.Generator().manual_seed(0)
    cases = [
        ("a batch of 500 random digit strings of length 8", torch.randint(
            0, 10, (500, 8), generator=generator)),
        ("a batch of 1, target [[3, 1, 4]]", torch.tensor([[3, 1, 4]])),
        ("strings of length 1, target [[7], [2]]", torch.tensor([[7], [2]])),
    ]
    start = 10
    for what, target in cases:
        inputs = call(fn, target.clone(), start, what=what)
        a_tensor(inputs, "the decoder's inputs (token ids)", shape=target.shape, where=what,
                 hint="one input per step, the target's shape: put START in front and drop "
                 "the LAST target token")
        want = _shift_right(target, start)
        if torch.equal(inputs, want):
            continue
        if torch.equal(inputs, target):
            raise Mistake(
                "step t still reads y_t, the very token it must predict: a model that copies "
                f"its input scores {copy_accuracy(inputs, target):.0%}. Shift right: START, "
                "then y_1 .. y_(n-1)"
            )
        if target.shape[1] > 1 and torch.equal(inputs[:, :-1], target[:, 1:]):
            raise Mistake(
                "step t reads y_(t+1), the token AFTER the one it predicts: you shifted left; "
                "the decoder reads what came BEFORE, START then y_1 .. y_(n-1)"
            )
        if not (inputs[:, 0] == start).all():
            raise Mistake(
                f"the first input of every string should be START ({start}): at step 1 nothing "
                "has been written yet"
            )
        close(inputs, want, f"your inputs ({what})", hint="START, then y_1 .. y_(n-1)")
    score = copy_accuracy(_shift_right(cases[0][1], start), cases[0][1])
    return (f"START, then the target minus its last token; copying the input now scores "
            f"{score:.0%} (chance), so the model has to learn the task")


# ---------------------------------------------------------------------------------------------
# section 6: attention weights from scores, with padded source positions


def _score_cases(generator):
    scores = torch.randn(2, 3, 5, generator=generator, dtype=torch.float64) * 2
    real = torch.tensor([[True] * 5, [True, True, True, False, False]])  # string 2: 2 <pad>
    one = torch.tensor([[[0.3, -1.0, 2.0, 0.5]]], dtype=torch.float64)
    return [
        ("scores (2, 3, 5), the second source padded after 3 tokens", scores, real),
        ("a batch of 1, one step, one real token among 4: mask [[True, False, False, False]]",
         one, torch.tensor([[True, False, False, False]])),
        ("scores (2, 3, 5), no padding", scores, torch.ones(2, 5, dtype=torch.bool)),
    ]


def _masked_softmax(scores, real):
    return scores.masked_fill(~real[:, None, :], float("-inf")).softmax(dim=-1)


@exercise
def attention_weights(fn):
    """fn(scores, real) -> softmax over the source positions, padding (real == False) at 0."""
    generator = torch.Generator().manual_seed(0)
    for what, scores, real in _score_cases(generator):
        weights = _tensor(call(fn, scores.clone(), real.clone(), what=what), "your weights")
        same_shape(weights, scores.shape, f"your weights ({what})")
        want = _masked_softmax(scores, real)
        if torch.allclose(weights, want, atol=1e-6):
            continue
        sums = weights.sum(dim=-1)
        on_padding = weights.masked_select(~real[:, None, :].expand_as(weights))
        over_steps = scores.masked_fill(~real[:, None, :], float("-inf")).softmax(dim=1)
        if scores.shape[1] > 1 and (
                torch.allclose(weights, scores.softmax(dim=1), atol=1e-6)
                or torch.allclose(weights, over_steps, atol=1e-6, equal_nan=True)
                or torch.allclose(weights, over_steps.nan_to_num(0.0), atol=1e-6)):
            raise Mistake(
                "you normalised over the decoder steps (dim=1): each step t spreads its "
                "attention over the SOURCE positions, the last dimension"
            )
        if torch.allclose(weights, _masked_softmax(scores, ~real), atol=1e-6, equal_nan=True):
            raise Mistake(
                "your weights sit on the padding and skip the real tokens: True in the mask "
                "marks a REAL source token; hide the positions where it is False"
            )
        if on_padding.numel() and (on_padding > 1e-6).any() and torch.allclose(
                sums, torch.ones_like(sums), atol=1e-6):
            raise Mistake(
                f"your weights put up to {on_padding.max():.2f} on <pad> positions: set their "
                "scores to -inf (masked_fill) BEFORE the softmax"
            )
        if torch.isnan(weights).any():
            raise Mistake(
                f"your weights contain NaN ({what}): a softmax over scores that are all -inf "
                "has no answer; mask only the padded positions (real == False)"
            )
        if (sums < 1 - 1e-6).any():
            raise Mistake(
                f"each step's weights should sum to 1; yours sum to as little as {sums.min():.2f}"
                ": zeroing the padding AFTER the softmax leaves the rest unnormalised; mask the "
                "scores before it"
            )
        close(weights, want, f"your weights ({what})",
              hint="softmax over the last dimension of the scores with padded positions at -inf")
    return "matches the masked softmax on 3 inputs, padding and a single real token included"
