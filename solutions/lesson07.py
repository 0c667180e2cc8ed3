"""Reference solutions for the exercises of lesson 07 (modern blocks).

Open this file only when you are stuck: the checker in the lesson (`check.<name>(...)`)
tells you what is wrong with your own attempt first. Each function here passes its checker.
"""

import math

import torch


# Section 2: RMSNorm. No mean subtracted, no bias: x over its root mean square, times weight.
def rms_norm(x, weight, eps=1e-5):
    rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1)
    return x / rms * weight


# Section 4: one vector of d_k entries turned at `position`, pairs (i, i + d_k/2).
def rotate(x, position, base=10_000.0):
    d_k = x.shape[-1]
    theta = base ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)  # (d_k / 2,)
    cos, sin = torch.cos(position * theta), torch.sin(position * theta)
    a, b = x[: d_k // 2], x[d_k // 2 :]
    return torch.cat([a * cos - b * sin, a * sin + b * cos])


# Section 6: every key/value head repeated for its group of consecutive query heads.
def repeat_kv(x, groups):
    return x.repeat_interleave(groups, dim=1)  # (B, h_kv, T, d_k) -> (B, h_kv * groups, T, d_k)


# The bug clinic: the planted bug turned the values instead of the keys. Positions belong in
# the scores: turn q and k, so that q_m . k_n depends on m - n only; leave v alone.
def clinic_rope_values(q, k, v, cos, sin):
    from tfs.model import apply_rotary

    q = apply_rotary(q, cos, sin)
    k = apply_rotary(k, cos, sin)  # was: v = apply_rotary(v, cos, sin)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return scores.softmax(dim=-1) @ v
