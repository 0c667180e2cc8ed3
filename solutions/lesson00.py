"""Reference solutions for the exercises of lesson 00 (seq2seq, language models, attention).

Open this file only when you are stuck: the checker in the lesson (`check.<name>(...)`)
tells you what is wrong with your own attempt first. Each function here passes its checker.
"""

import torch


# Section 2: add-k smoothing. Pretend every (previous, next) pair was seen k more times than
# it was: each of the |V| counts of a row grows by k, so the row's total grows by k·|V|, and
# the row still sums to 1. No pair is left at probability 0, and a context never seen gets
# the uniform row 1/|V|.
def smoothed_bigram(counts, k):
    vocabulary_size = counts.shape[1]  # |V|: the columns, the tokens that can come next
    return (counts + k) / (counts.sum(dim=1, keepdim=True) + k * vocabulary_size)


# Section 3: cross-entropy from logits. log_softmax subtracts each row's largest logit before
# exponentiating (the log-sum-exp trick), so logits of 1,000 do not overflow. Then take the
# log-probability of each row's correct token, negate, and average over the batch.
def cross_entropy(logits, targets):
    log_p = logits.log_softmax(dim=-1)  # (N, |V|) each row: log-probabilities summing to 1
    return -log_p[torch.arange(len(targets)), targets].mean()


# Section 5, the bug clinic: the planted bug prepended START and then dropped the FIRST
# column, which gives back the target itself (step t reads y_t and can copy it). The
# decoder must read START, then y_1 .. y_(n-1): drop the LAST target token instead.
def clinic_shift(target, start):
    begin = torch.full((target.shape[0], 1), start, dtype=target.dtype, device=target.device)
    return torch.cat([begin, target[:, :-1]], dim=1)  # (B, n)


# Section 6: attention weights with padding. A padded source position gets the score -inf
# BEFORE the softmax, so its weight is exp(-inf) = 0 and the real positions share all of it.
def attention_weights(scores, real):
    # scores: (B, n, m) one row per decoder step; real: (B, m), True for a real source token
    hidden = ~real[:, None, :]  # (B, 1, m): the same padding for every decoder step
    return scores.masked_fill(hidden, float("-inf")).softmax(dim=-1)  # (B, n, m)
