"""Reference solutions for the exercises of lesson 07 (modern blocks).

Open this file only when you are stuck: the checker in the lesson (`check.<name>(...)`)
tells you what is wrong with your own attempt first. Each function here passes its checker.
"""

import math

import torch


# Section 4: one vector of d_k entries turned at `position`, pairs (i, i + d_k/2).
def rotate(x, position, base=10_000.0):
    d_k = x.shape[-1]
    theta = base ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)  # (d_k / 2,)
    cos, sin = torch.cos(position * theta), torch.sin(position * theta)
    a, b = x[: d_k // 2], x[d_k // 2 :]
    return torch.cat([a * cos - b * sin, a * sin + b * cos])


# Section 6: Ainslie et al.'s conversion. Each group of n_heads / n_kv_heads consecutive
# heads (the ones repeat_kv later feeds from one key/value head) replaced by their mean.
def pool_kv_heads(weight, n_heads, n_kv_heads):
    d_k = weight.shape[0] // n_heads
    heads = weight.unflatten(0, (n_kv_heads, n_heads // n_kv_heads, d_k))  # (h_kv, group, d_k, d)
    return heads.mean(dim=1).flatten(0, 1)  # (h_kv * d_k, d_model)


# Section 7: the Switch Transformer's balance loss, E * sum_e f_e P_e.
def balance_loss(probs, chosen):
    n_experts = probs.shape[-1]
    share = torch.nn.functional.one_hot(chosen, n_experts).float().mean(dim=(0, 1))  # f_e
    return n_experts * (share * probs.mean(dim=0)).sum()  # P_e = probs.mean(dim=0)


# The bug clinic: the planted bug turned the values instead of the keys. Positions belong in
# the scores: turn q and k, so that q_m . k_n depends on m - n only; leave v alone.
def clinic_rope(q, k, v, cos, sin):
    from tfs.model import apply_rotary

    q = apply_rotary(q, cos, sin)
    k = apply_rotary(k, cos, sin)  # was: v = apply_rotary(v, cos, sin)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return scores.softmax(dim=-1) @ v
