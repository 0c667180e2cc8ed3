"""Reference solutions for the exercises of lesson 02 (the building blocks).

Open this file only when you are stuck: the checker in the lesson (`check.<name>(...)`)
tells you what is wrong with your own attempt first. Each function here passes its checker.
"""

import math

import torch

# Section 2: without ×√d_model, the share of the input's squared length that comes from the
# position signal. |PE(p)|² = d_model / 2 = 32 at every position (sin² + cos² = 1 per pair);
# an embedding row of 64 entries of variance 1/64 has squared length about 1. The two parts
# are independent, so their squared lengths add: 32 / (32 + 1).
position_share = 32 / 33  # 0.970: the token is almost drowned


# Section 3: scaled dot-product attention with an additive mask.
def attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)
    if mask is not None:
        scores = scores + mask  # before the softmax: hidden keys get e^-inf = 0
    weights = scores.softmax(dim=-1)  # each row sums to 1
    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


# Section 4, the bug clinic: the planted bug divided the scores by scale = 1/√d_k, which
# multiplies them by √d_k instead of dividing: scores of standard deviation d_k instead of 1,
# at any batch size. The fix: divide by √d_k (or multiply by the scale).
def clinic_scaling(q, k, v, mask=None):
    scale = 1 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1) * scale  # was / scale
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


# Section 5: the decoder's mask, boolean, True where query t may look at key s.
def decoder_mask(ids, pad_id):
    length = ids.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool).tril()  # (T, T): s <= t
    real_keys = (ids != pad_id).unsqueeze(1)  # (B, 1, T): the columns that are real tokens
    return causal & real_keys  # broadcast to (B, T, T)


# Section 6: glue the heads back together, (B, h, T, d_k) -> (B, T, h * d_k).
def merge_heads(heads):
    B, h, T, d_k = heads.shape
    return heads.transpose(1, 2).reshape(B, T, h * d_k)  # heads next to each other, then glue


# Section 8: a pre-LN encoder layer: normalise each sub-layer's input, add its output to x.
def pre_ln_layer(x, self_attention, feed_forward, norm1, norm2, mask=None):
    h = norm1(x)
    x = x + self_attention(h, h, mask)  # the stream itself is never normalised
    return x + feed_forward(norm2(x))
