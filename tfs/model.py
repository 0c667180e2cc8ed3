"""The course's Transformer: the encoder-decoder of Vaswani et al. (2017), built by hand.

Lesson 02 builds its blocks one by one, lesson 03 assembles them into this model and trains
it, lesson 04 trains it on English-Russian text: the code is written once, here, so that every
lesson loads the same weights into the same code. The names of the attributes are those of
lesson 03, so `load_state_dict` moves weights between the lesson's model and this one.

Conventions
-----------
- Shapes: B sentences, T positions, h heads, d_k = d_model / h entries per head, |V| tokens.
- Masks are additive: 0 where looking is allowed, -inf where it is forbidden. They are added
  to the attention scores (B, h, T_q, T_k) and broadcast to them: `padding_mask` is
  (B, 1, 1, T_k), `causal_mask` is (1, 1, T, T). They take the scores' dtype (a bfloat16 or
  float16 model, or autocast on a GPU, gets bfloat16/float16 masks).
- The positional table `pe` is a buffer that is not saved with the weights (it is computed,
  not learned): weights load into a model with another `max_len`.
- Post-LN, as in the 2017 paper: x = LayerNorm(x + Dropout(Sublayer(x))).
- One embedding matrix E (|V|, d_model) is the source embedding, the target embedding and
  the output layer (scores = x @ E^T).
- Attention weights: by default attention runs through `F.scaled_dot_product_attention`,
  which never materialises the weights. Set `keep_weights = True` on a `MultiHeadAttention`
  (or call `model.keep_attention_weights()` for all of them) and every call keeps its
  weights, (B, h, T_q, T_k), in `.weights` for plotting; otherwise `.weights` is None.
- Generating one token at a time, `Transformer.decode` takes a `cache` (a `KVCache`, one
  `LayerCache` per decoder layer): each attention keeps its own keys and values in it. The
  self-attention appends the newest position's key and value at every step and reads all
  of them; the cross-attention projects the encoder's memory once, at the first step, and
  reads it from then on. tfs.decoding decides what to generate; the cache lives here.
- `Variant`: what a real model does differently from the 2017 paper (the defaults are the
  paper's and the course's). tfs.marian builds the variant of Hugging Face's Marian models
  (opus-mt-*), so that their weights load into this code.
- Lesson 07's switches, also `Variant` fields, each choosing a small module when the model
  is built (never a branch in `forward`): pre-LN (`norm_position`), RMSNorm (`norm`), SwiGLU
  or a mixture of experts (`feed_forward`), learned, rotary or no positions
  (`position_scheme`), grouped-query attention (`n_kv_heads`), the written-out attention
  (`attention_kernel`), no biases (`bias`). `DecoderOnly` assembles the same layers into a
  decoder-only language model (a Llama block with `llama_variant()`, see tfs.llama).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

ID_DTYPES = (torch.long, torch.int32)  # the integer types nn.Embedding accepts
ACTIVATIONS = ("relu", "swish")
POSITION_LAYOUTS = ("interleaved", "halves")
NORMS = ("layer", "rms")
NORM_POSITIONS = ("post", "pre")
FEED_FORWARDS = ("mlp", "swiglu", "moe")
POSITION_SCHEMES = ("sinusoidal", "learned", "rotary", "none")
ROTARY_PAIRINGS = ("halves", "adjacent")
ATTENTION_KERNELS = ("fused", "written")


_FIRST_FIELDS = ("activation", "scale_embeddings", "positions", "output_bias", "decoder_start_id")


@dataclass(frozen=True)
class Variant:
    """What a real model does differently from the 2017 paper; the defaults are the paper's.

    One field per difference, one line each (Marian's values read from transformers'
    models/marian/modeling_marian.py; tfs.marian.variant_of builds them from a config):

    - activation: the feed-forward's nonlinearity, "relu" (paper) or "swish" = SiLU (Marian).
    - scale_embeddings: embeddings times sqrt(d_model) (paper, Marian's scale_embedding) or not.
    - positions: sin/cos at even/odd entries, "interleaved" (paper), or "halves": sines, cosines.
    - output_bias: a fixed bias per token on the output scores (Marian's final_logits_bias).
    - decoder_start_id: None, start from the given <bos>; an id, always from it (Marian: <pad>).

    Lesson 07's switches (defaults: the 2017 model, with the same state_dict names):

    - norm_position: "post", x = Norm(x + Sublayer(x)) (paper), or "pre", x = x +
      Sublayer(Norm(x)), with one more norm after the last layer of each stack.
    - norm: "layer" (nn.LayerNorm) or "rms" (`RMSNorm`, no mean, no bias); norm_eps.
    - feed_forward: "mlp" (paper), "swiglu" (`SwiGLU`), "moe" (`MixtureOfExperts` of
      n_experts SwiGLU experts, top_k of them per token).
    - position_scheme: "sinusoidal" (paper, laid out by `positions`), "learned" (a table
      trained with the model), "rotary" (`Rotary`, queries and keys of self-attention,
      pairing "halves" as Hugging Face's Llama or "adjacent" as RoFormer and Meta's
      Llama code, base rotary_base) or "none".
    - n_kv_heads: None (every head its own keys and values) or fewer key/value heads, each
      shared by n_heads / n_kv_heads query heads (grouped-query attention; 1: multi-query).
    - attention_kernel: "fused" (`F.scaled_dot_product_attention`) or "written" (`attention`).
    - bias: the linear layers (attention, feed-forward) have biases (paper) or not (Llama).

    Both layouts count positions from 0 with frequencies 10000^(-2i/d_model), Marian too (so
    no offset is needed); the output bias is a buffer, loaded and saved but not trained (not a
    parameter, as in Marian); a <pad> start token is never hidden by the target's mask.
    """

    activation: str = "relu"
    scale_embeddings: bool = True
    positions: str = "interleaved"
    output_bias: bool = False
    decoder_start_id: int | None = None
    norm_position: str = "post"
    norm: str = "layer"
    norm_eps: float = 1e-5
    feed_forward: str = "mlp"
    n_experts: int = 4
    top_k: int = 2
    position_scheme: str = "sinusoidal"
    rotary_pairing: str = "halves"
    rotary_base: float = 10_000.0
    n_kv_heads: int | None = None
    attention_kernel: str = "fused"
    bias: bool = True

    def __repr__(self):
        """The five fields of the 2017/Marian differences always; lesson 07's only when set."""
        shown = []
        for name, field in self.__dataclass_fields__.items():
            value = getattr(self, name)
            if name in _FIRST_FIELDS or value != field.default:
                shown.append(f"{name}={value!r}")
        return f"Variant({', '.join(shown)})"

    def __post_init__(self):
        for name, allowed in (
            ("norm_position", NORM_POSITIONS), ("norm", NORMS), ("feed_forward", FEED_FORWARDS),
            ("position_scheme", POSITION_SCHEMES), ("rotary_pairing", ROTARY_PAIRINGS),
            ("attention_kernel", ATTENTION_KERNELS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        n_experts = _check_int(self.n_experts, "n_experts")
        top_k = _check_int(self.top_k, "top_k")
        if top_k > n_experts:
            raise ValueError(
                f"top_k must be at most n_experts (a token picks top_k of the experts), got "
                f"top_k={top_k}, n_experts={n_experts}"
            )
        if self.n_kv_heads is not None:
            _check_int(self.n_kv_heads, "n_kv_heads")
        for name in ("norm_eps", "rotary_base"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or value <= 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not isinstance(self.bias, bool):
            raise TypeError(f"bias must be True or False, got {self.bias!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.positions not in POSITION_LAYOUTS:
            raise ValueError(
                f"positions must be one of {POSITION_LAYOUTS}, got {self.positions!r}"
            )
        for name in ("scale_embeddings", "output_bias"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        start = self.decoder_start_id
        is_id = isinstance(start, numbers.Integral) and not isinstance(start, bool)
        if start is not None and not is_id:
            raise TypeError(f"decoder_start_id must be a token id or None, got {start!r}")


# ---------------------------------------------------------------------------------------------
# checks of the arguments: a learner's usual mistakes get an error that names them


def _check_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}: {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def _check_heads(d_model, n_heads):
    d_model = _check_int(d_model, "d_model")
    n_heads = _check_int(n_heads, "n_heads")
    if d_model % n_heads != 0:
        raise ValueError(
            f"d_model must be divisible by n_heads (each head gets d_model / n_heads entries), "
            f"got d_model={d_model}, n_heads={n_heads}"
        )
    return d_model, n_heads


def _check_kv_heads(n_heads, n_kv_heads):
    if n_kv_heads is None:
        return n_heads
    n_kv_heads = _check_int(n_kv_heads, "n_kv_heads")
    if n_heads % n_kv_heads != 0:
        raise ValueError(
            f"n_heads must be divisible by n_kv_heads (each key/value head serves n_heads / "
            f"n_kv_heads query heads), got n_heads={n_heads}, n_kv_heads={n_kv_heads}"
        )
    return n_kv_heads


def _check_dropout(dropout):
    if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real):
        raise TypeError(f"dropout must be a number in [0, 1), got {dropout!r}")
    if not 0 <= dropout < 1:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    return float(dropout)


# ---------------------------------------------------------------------------------------------
# the building blocks (lesson 02: attention, masks, multi-head attention, feed-forward)


def attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d_k) + mask) v, written out: returns (output, weights).

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v); mask broadcastable to
    (..., T_q, T_k). Output (..., T_q, d_v), weights (..., T_q, T_k), each row summing to 1.
    """
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k): every pair at once
    if mask is not None:
        scores = scores + mask.to(scores.dtype)  # -inf where looking is forbidden
    weights = scores.softmax(dim=-1)
    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


def padding_mask(ids, pad_id, dtype=torch.float32):
    """Additive mask (B, 1, 1, T): -inf at the <pad> positions of `ids` (B, T), else 0.

    `dtype`: that of the attention scores it is added to (float32 by default).
    """
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        raise ValueError(f"padding_mask() needs token ids of shape (B, T), got {_describe(ids)}")
    mask = torch.zeros(ids.shape, dtype=dtype, device=ids.device)
    mask.masked_fill_(ids == pad_id, float("-inf"))
    return mask[:, None, None, :]  # (B, 1, 1, T): the same for every head and every query


def causal_mask(length, device=None, dtype=torch.float32):
    """Additive mask (1, 1, T, T): row t may look at columns 0..t, -inf above the diagonal."""
    length = _check_int(length, "length")
    upper = torch.full((length, length), float("-inf"), dtype=dtype, device=device)
    return upper.triu(diagonal=1)[None, None, :, :]  # (1, 1, T, T): same for every sentence


def positional_encoding(max_len, d_model, layout="interleaved"):
    """The sinusoidal positions of the paper, (max_len, d_model).

    Entries 2i and 2i+1 of position pos are sin and cos of pos * 10000^(-2i / d_model).
    `layout="halves"` (Marian): entry i is the sine and entry d_model/2 + i the cosine of the
    same angle, computed in float64 as transformers does, then rounded to float32.
    """
    max_len = _check_int(max_len, "max_len")
    d_model = _check_int(d_model, "d_model")
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even (sines and cosines come in pairs), got {d_model}")
    if layout not in POSITION_LAYOUTS:
        raise ValueError(f"layout must be one of {POSITION_LAYOUTS}, got {layout!r}")
    if layout == "halves":
        positions = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
        wavelengths = 10_000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
        angles = positions / wavelengths  # (max_len, d_model / 2)
        return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1).float()
    positions = torch.arange(max_len).unsqueeze(1)  # (max_len, 1)
    frequencies = 10_000 ** (-torch.arange(0, d_model, 2) / d_model)  # (d_model / 2,)
    angles = positions * frequencies  # (max_len, d_model / 2)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angles)  # even entries
    pe[:, 1::2] = torch.cos(angles)  # odd entries
    return pe


class RMSNorm(nn.Module):
    """Root-mean-square normalisation (Zhang & Sennrich, 2019): x / rms(x) * weight.

    LayerNorm without its two mean-related parts: no mean is subtracted and no bias added;
    rms(x) = sqrt(mean(x^2) + eps) over the last dimension. Equal to `torch.nn.RMSNorm`.
    """

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(_check_int(d_model, "d_model")))
        self.eps = float(eps)

    def forward(self, x):
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return x / rms * self.weight


def rotary_angles(length, d_k, base=10_000.0, start=0):
    """cos and sin of the rotary angles, (length, d_k / 2) each: position p, pair i turns by
    p * base^(-2i / d_k), for positions start..start+length-1 (computed in float32 as
    Hugging Face's Llama does)."""
    d_k = _check_int(d_k, "d_k")
    if d_k % 2 != 0:
        raise ValueError(f"rotary positions need an even d_k (entries turn in pairs), got {d_k}")
    inv_freq = 1.0 / (base ** (torch.arange(0, d_k, 2, dtype=torch.float32) / d_k))  # (d_k/2,)
    positions = torch.arange(start, start + length, dtype=torch.float32)
    angles = positions[:, None] * inv_freq[None, :]  # (length, d_k / 2)
    return angles.cos(), angles.sin()


def apply_rotary(x, cos, sin, pairing="halves"):
    """Turn each pair of entries of x (..., T, d_k) by its angle; cos, sin (T, d_k / 2).

    "adjacent": the pairs are entries (2i, 2i+1) (RoFormer, Meta's Llama code); "halves":
    entries (i, i + d_k/2) (Hugging Face's `apply_rotary_pos_emb`).
    """
    if pairing not in ROTARY_PAIRINGS:
        raise ValueError(f"pairing must be one of {ROTARY_PAIRINGS}, got {pairing!r}")
    if x.shape[-1] % 2 != 0:
        raise ValueError(f"rotary positions need an even d_k, got {x.shape[-1]}")
    if pairing == "halves":
        x1, x2 = x.chunk(2, dim=-1)  # (..., T, d_k / 2) each
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # even and odd entries
    turned = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., d_k/2, 2)
    return turned.flatten(-2)  # back to (..., T, d_k), pairs side by side


class Rotary(nn.Module):
    """Rotary positions (Su et al., 2021) for one model: the angles of `max_len` positions,
    computed once (a buffer, not saved), applied to queries and keys by `forward(x, start)`."""

    def __init__(self, d_k, max_len, base=10_000.0, pairing="halves"):
        super().__init__()
        if pairing not in ROTARY_PAIRINGS:
            raise ValueError(f"pairing must be one of {ROTARY_PAIRINGS}, got {pairing!r}")
        cos, sin = rotary_angles(_check_int(max_len, "max_len"), d_k, base)
        self.register_buffer("cos", cos, persistent=False)  # (max_len, d_k / 2)
        self.register_buffer("sin", sin, persistent=False)
        self.pairing = pairing

    def forward(self, x, start=0):
        """x (B, h, T, d_k) at positions start..start+T-1 -> the same shape, turned."""
        length = x.shape[-2]
        cos = self.cos[start : start + length].to(x.dtype)
        sin = self.sin[start : start + length].to(x.dtype)
        return apply_rotary(x, cos, sin, self.pairing)


def repeat_kv(x, groups):
    """(B, h_kv, T, d_k) -> (B, h_kv * groups, T, d_k): each key/value head serves `groups`
    query heads side by side (head j reads key/value head j // groups)."""
    groups = _check_int(groups, "groups")
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


class MultiHeadAttention(nn.Module):
    """h attentions side by side, each on its own d_k = d_model / h slice of the projections.

    `forward(x_query, x_key_value, mask)`: queries from x_query (B, T_q, d_model), keys and
    values from x_key_value (B, T_k, d_model); the same tensor twice for self-attention.
    With `keep_weights = True`, the weights (B, h, T_q, T_k) of the last call are kept in
    `.weights` (computed by `attention`); otherwise the fused, faster
    `F.scaled_dot_product_attention` computes the same output and `.weights` is None.

    Lesson 07: `n_kv_heads` < n_heads key/value heads (grouped-query attention: w_k and w_v
    are then (n_kv_heads * d_k, d_model)); `rotary` (a `Rotary`) turns queries and keys by
    their positions; `kernel="written"` always uses `attention`; `bias=False` drops biases.
    """

    def __init__(self, d_model, n_heads, n_kv_heads=None, *, bias=True, rotary=None,
                 kernel="fused"):
        super().__init__()
        d_model, n_heads = _check_heads(d_model, n_heads)
        self.n_heads = n_heads
        self.n_kv_heads = _check_kv_heads(n_heads, n_kv_heads)
        self.d_k = d_model // n_heads
        if kernel not in ATTENTION_KERNELS:
            raise ValueError(f"kernel must be one of {ATTENTION_KERNELS}, got {kernel!r}")
        if rotary is not None and self.d_k % 2 != 0:
            raise ValueError(f"rotary positions need an even d_k, got d_k={self.d_k}")
        kv_width = self.n_kv_heads * self.d_k
        self.w_q = nn.Linear(d_model, d_model, bias=bias)  # the queries of all heads at once
        self.w_k = nn.Linear(d_model, kv_width, bias=bias)
        self.w_v = nn.Linear(d_model, kv_width, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)  # mixes the heads back together
        self.rotary = rotary
        self.kernel = kernel
        self.keep_weights = False  # True: keep the weights of the last call, for plotting
        self.weights = None

    def split_heads(self, x, heads=None):
        batch, length, _ = x.shape
        x = x.view(batch, length, heads or self.n_heads, self.d_k)  # (B, T, h, d_k)
        return x.transpose(1, 2)  # (B, h, T, d_k): heads become a batch dimension

    def merge_heads(self, x):
        batch, _, length, _ = x.shape
        return x.transpose(1, 2).reshape(batch, length, -1)  # (B, T, d_model)

    def forward(self, x_query, x_key_value, mask=None, cache=None):
        """`cache` (generation only): this attention's `SelfAttentionCache` or
        `CrossAttentionCache`, see `KVCache`."""
        q = self.split_heads(self.w_q(x_query))  # (B, h, T_q, d_k)
        if isinstance(cache, CrossAttentionCache) and cache.filled:
            k, v = cache.keys, cache.values  # the memory's, projected at the first step
        else:
            k = self.split_heads(self.w_k(x_key_value), self.n_kv_heads)  # (B, h_kv, T_k, d_k)
            v = self.split_heads(self.w_v(x_key_value), self.n_kv_heads)
            if self.rotary is not None:  # positions of the new queries and keys
                start = cache.length if isinstance(cache, SelfAttentionCache) else 0
                q, k = self.rotary(q, start), self.rotary(k, start)
            if cache is not None:  # generating: keep them for the next steps
                k, v = cache.append(k, v)  # self-attention: every position so far
        groups = self.n_heads // self.n_kv_heads
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)  # (B, h, T_k, d_k)
        if mask is not None and mask.dtype != q.dtype:  # e.g. float32 masks under autocast
            mask = mask.to(q.dtype)
        if self.keep_weights or self.kernel == "written":
            out, weights = attention(q, k, v, mask)
            self.weights = weights.detach() if self.keep_weights else None  # (B, h, T_q, T_k)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, h, T_q, d_k)
            self.weights = None
        return self.w_o(self.merge_heads(out))  # (B, T_q, d_model)


class FeedForward(nn.Module):
    """Every position on its own: widen to d_ff, ReLU (or SiLU, "swish"), narrow back."""

    def __init__(self, d_model, d_ff, activation="relu", *, bias=True):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        self.linear1 = nn.Linear(_check_int(d_model, "d_model"), _check_int(d_ff, "d_ff"), bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias)
        self.activation = activation

    def forward(self, x):
        hidden = self.linear1(x)  # (B, T, d_ff)
        hidden = torch.relu(hidden) if self.activation == "relu" else F.silu(hidden)
        return self.linear2(hidden)  # (B, T, d_model)


class SwiGLU(nn.Module):
    """Shazeer (2020)'s gated feed-forward: w_down(SiLU(w_gate x) * w_up x).

    Three matrices instead of two: at d_ff = 2/3 * 4 * d_model it has the parameters of the
    2017 feed-forward with d_ff = 4 * d_model (without biases).
    """

    def __init__(self, d_model, d_ff, *, bias=False):
        super().__init__()
        d_model, d_ff = _check_int(d_model, "d_model"), _check_int(d_ff, "d_ff")
        self.w_gate = nn.Linear(d_model, d_ff, bias=bias)
        self.w_up = nn.Linear(d_model, d_ff, bias=bias)
        self.w_down = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x):
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))  # (B, T, d_ff) -> d_model


class MixtureOfExperts(nn.Module):
    """n_experts SwiGLU feed-forwards and a router that sends each token to top_k of them.

    The router scores the experts, softmax(x W_r) (B, T, n_experts); a token goes to its
    top_k experts, whose outputs are added with those probabilities renormalised to sum to 1.
    After each forward, `load` holds the share of the token-slots each expert received and
    `balance_loss` the Switch Transformer's load-balancing loss, n_experts * sum_e f_e P_e
    (f_e: that share, P_e: the mean router probability; 1 when the load is even).
    """

    def __init__(self, d_model, d_ff, n_experts, top_k, *, bias=False):
        super().__init__()
        n_experts, top_k = _check_int(n_experts, "n_experts"), _check_int(top_k, "top_k")
        if top_k > n_experts:
            raise ValueError(
                f"top_k must be at most n_experts, got top_k={top_k}, n_experts={n_experts}"
            )
        self.router = nn.Linear(d_model, n_experts, bias=False)
        self.experts = nn.ModuleList(SwiGLU(d_model, d_ff, bias=bias) for _ in range(n_experts))
        self.top_k = top_k
        self.load = self.balance_loss = None

    def forward(self, x):
        tokens = x.reshape(-1, x.shape[-1])  # (N, d_model), N = B * T
        probs = self.router(tokens).softmax(dim=-1)  # (N, n_experts)
        top_p, top_i = probs.topk(self.top_k, dim=-1)  # (N, top_k)
        top_p = top_p / top_p.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            rows, slot = (top_i == e).nonzero(as_tuple=True)  # the tokens routed to e
            if rows.numel():
                out.index_add_(0, rows, top_p[rows, slot, None] * expert(tokens[rows]))
        n_experts = len(self.experts)
        share = F.one_hot(top_i, n_experts).float().mean(dim=(0, 1))  # f_e, sums to 1
        self.load = share.detach()
        self.balance_loss = n_experts * (share * probs.mean(dim=0)).sum()
        return out.reshape(x.shape)


def make_norm(variant, d_model):
    """The norm a `Variant` asks for: nn.LayerNorm or `RMSNorm`."""
    if variant.norm == "rms":
        return RMSNorm(d_model, variant.norm_eps)
    return nn.LayerNorm(d_model, eps=variant.norm_eps)


def make_feed_forward(variant, d_model, d_ff):
    """The feed-forward a `Variant` asks for: `FeedForward`, `SwiGLU` or `MixtureOfExperts`."""
    if variant.feed_forward == "swiglu":
        return SwiGLU(d_model, d_ff, bias=variant.bias)
    if variant.feed_forward == "moe":
        return MixtureOfExperts(d_model, d_ff, variant.n_experts, variant.top_k,
                                bias=variant.bias)
    return FeedForward(d_model, d_ff, variant.activation, bias=variant.bias)


def make_attention(variant, d_model, n_heads, rotary=None):
    """The attention a `Variant` asks for (its KV heads, kernel, biases; `rotary` or None)."""
    return MultiHeadAttention(d_model, n_heads, variant.n_kv_heads, bias=variant.bias,
                              rotary=rotary, kernel=variant.attention_kernel)


def _post_norm(norm, x, sublayer):
    return norm(x + sublayer(x))  # the 2017 paper: normalise the sum


def _pre_norm(norm, x, sublayer):
    return x + sublayer(norm(x))  # pre-LN: normalise the sub-layer's input, keep x as it is


# ---------------------------------------------------------------------------------------------
# the layers and the whole model (lesson 03: the encoder layer, the decoder layer, the model)


def _layer_variant(variant, activation):
    if variant is None:
        return Variant(activation=activation)
    if not isinstance(variant, Variant):
        raise TypeError(f"variant must be a tfs.model.Variant, got {type(variant).__name__}")
    return variant


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward, each as LayerNorm(x + Dropout(Sublayer(x))).

    `variant` (keyword): lesson 07's switches (pre-LN, RMSNorm, SwiGLU, ...; its activation
    replaces `activation`); `rotary`: the model's `Rotary`, or None. The same layer, with a
    causal mask, is the layer of `DecoderOnly`; `cache` is then its `SelfAttentionCache`.
    """

    def __init__(self, d_model, n_heads, d_ff, dropout, activation="relu", *, variant=None,
                 rotary=None):
        super().__init__()
        variant = _layer_variant(variant, activation)
        self.self_attention = make_attention(variant, d_model, n_heads, rotary)
        self.feed_forward = make_feed_forward(variant, d_model, d_ff)
        self.norm1 = make_norm(variant, d_model)
        self.norm2 = make_norm(variant, d_model)
        self.dropout = nn.Dropout(_check_dropout(dropout))
        self.residual = _pre_norm if variant.norm_position == "pre" else _post_norm

    def forward(self, x, src_mask, cache=None):
        x = self.residual(self.norm1, x, lambda y: self.dropout(
            self.self_attention(y, y, src_mask, cache)))
        x = self.residual(self.norm2, x, lambda y: self.dropout(self.feed_forward(y)))
        return x  # (B, T_src, d_model)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the memory, feed-forward; post-LN.

    `cache` (generation only): the layer's `LayerCache`, where its two attentions keep
    their keys and values between steps; x is then the newest position only, (B, 1, d_model).
    `variant`, `rotary`: as for `EncoderLayer` (the cross-attention never turns its keys).
    """

    def __init__(self, d_model, n_heads, d_ff, dropout, activation="relu", *, variant=None,
                 rotary=None):
        super().__init__()
        variant = _layer_variant(variant, activation)
        self.self_attention = make_attention(variant, d_model, n_heads, rotary)
        self.cross_attention = make_attention(variant, d_model, n_heads)
        self.feed_forward = make_feed_forward(variant, d_model, d_ff)
        self.norm1 = make_norm(variant, d_model)
        self.norm2 = make_norm(variant, d_model)
        self.norm3 = make_norm(variant, d_model)
        self.dropout = nn.Dropout(_check_dropout(dropout))
        self.residual = _pre_norm if variant.norm_position == "pre" else _post_norm

    def forward(self, x, memory, src_mask, tgt_mask, cache=None):
        self_cache, cross_cache = (None, None) if cache is None else cache
        x = self.residual(self.norm1, x, lambda y: self.dropout(
            self.self_attention(y, y, tgt_mask, self_cache)))
        x = self.residual(self.norm2, x, lambda y: self.dropout(
            self.cross_attention(y, memory, src_mask, cross_cache)))
        x = self.residual(self.norm3, x, lambda y: self.dropout(self.feed_forward(y)))
        return x  # (B, T_tgt, d_model)


class Positions(nn.Module):
    """What a `Variant`'s position_scheme adds to the embeddings, and the `Rotary` it lends
    to the attentions: "sinusoidal" (the buffer `pe`, not saved), "learned" (`table`, an
    nn.Embedding trained with the model), "rotary" (`rotary`; nothing added), "none"."""

    def __init__(self, variant, max_len, d_model, n_heads):
        super().__init__()
        self.max_len = _check_int(max_len, "max_len")
        self.scheme = variant.position_scheme
        self.rotary = None
        if self.scheme == "learned":
            self.table = nn.Embedding(max_len, d_model)
            nn.init.normal_(self.table.weight, std=d_model**-0.5)
        elif self.scheme == "rotary":
            d_k = d_model // n_heads
            if d_k % 2 != 0:
                raise ValueError(f"rotary positions need an even d_k, got d_k={d_k}")
            self.rotary = Rotary(d_k, max_len, variant.rotary_base, variant.rotary_pairing)

    def forward(self, x, start=0):
        """x (B, T, d_model) at positions start..start+T-1, with positions added (or not)."""
        if self.scheme == "learned":
            return x + self.table.weight[start : start + x.shape[1]]
        return x


class Transformer(nn.Module):
    """The encoder-decoder Transformer with one shared embedding matrix E.

    `forward(src, tgt)`: src (B, T_src) and tgt (B, T_tgt) token ids, right-padded with
    pad_id; returns the scores (B, T_tgt, |V|) of the next token at every target position.
    `encode` and `decode` are its two halves, so that translation encodes once and decodes
    many times. `variant` (a `Variant`, keyword only): what differs from the 2017 paper, for
    real models' weights (see tfs.marian); the default is the paper's model.
    """

    def __init__(
        self, vocab_size, d_model, n_heads, d_ff, n_layers, dropout, pad_id, max_len=256,
        *, variant=None,
    ):
        super().__init__()
        variant = Variant() if variant is None else variant
        if not isinstance(variant, Variant):
            raise TypeError(f"variant must be a tfs.model.Variant, got {type(variant).__name__}")
        vocab_size = _check_int(vocab_size, "vocab_size")
        d_model, n_heads = _check_heads(d_model, n_heads)
        n_layers = _check_int(n_layers, "n_layers")
        dropout = _check_dropout(dropout)
        if isinstance(pad_id, bool) or not isinstance(pad_id, numbers.Integral):
            raise TypeError(f"pad_id must be an integer token id, got {pad_id!r}")
        if not 0 <= pad_id < vocab_size:
            raise ValueError(
                f"pad_id must be in the vocabulary 0..{vocab_size - 1}, got {pad_id}"
            )
        start = variant.decoder_start_id
        if start is not None and not 0 <= start < vocab_size:
            raise ValueError(
                f"variant.decoder_start_id must be in the vocabulary 0..{vocab_size - 1}, "
                f"got {start}"
            )
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.pad_id = int(pad_id)
        self.variant = variant
        self.embedding = nn.Embedding(vocab_size, d_model)  # E: source, target and output
        nn.init.normal_(self.embedding.weight, mean=0.0, std=d_model**-0.5)
        self._max_len = _check_int(max_len, "max_len")
        rotary = None
        if variant.position_scheme == "sinusoidal":
            # the positional encoding is fixed, not trained: a buffer, not a parameter;
            # computed, so not saved with the weights (they load into a model with another
            # max_len)
            self.register_buffer(
                "pe", positional_encoding(max_len, d_model, variant.positions), persistent=False
            )
        else:  # lesson 07: learned, rotary or no positions
            self.positions = Positions(variant, max_len, d_model, n_heads)
            rotary = self.positions.rotary
        self.encoder = nn.ModuleList(
            [EncoderLayer(d_model, n_heads, d_ff, dropout, variant=variant, rotary=rotary)
             for _ in range(n_layers)]
        )
        self.decoder = nn.ModuleList(
            [DecoderLayer(d_model, n_heads, d_ff, dropout, variant=variant, rotary=rotary)
             for _ in range(n_layers)]
        )
        if variant.norm_position == "pre":  # pre-LN: the last layer's sum is normalised here
            self.encoder_norm = make_norm(variant, d_model)
            self.decoder_norm = make_norm(variant, d_model)
        self.dropout = nn.Dropout(dropout)
        if variant.output_bias:  # Marian's final_logits_bias: loaded, saved, not trained
            self.register_buffer("output_bias", torch.zeros(vocab_size))

    @property
    def max_len(self):
        """The number of positions the model has encodings for."""
        return self._max_len

    def check_ids(self, ids, name="ids", start=0):
        """Raise a TypeError/ValueError naming the problem unless `ids` are (B, T) token ids.

        One min/max pass over the ids, read back by the CPU (on a GPU: a wait for the GPU).
        Every forward checks its ids; generating, tfs.decoding checks once per call and the
        steps skip it (`check=False`): the tokens it feeds back come from the model itself.
        """
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"{name} must be a tensor of token ids, got {type(ids).__name__}")
        if ids.dtype not in ID_DTYPES:
            raise TypeError(
                f"{name} must hold integer token ids (torch.long), got dtype {ids.dtype}"
            )
        if ids.dim() != 2:
            raise ValueError(
                f"{name} must have shape (B, T): one row of token ids per sentence, "
                f"got shape {tuple(ids.shape)}"
            )
        if ids.numel() == 0:
            raise ValueError(f"{name} is empty: shape {tuple(ids.shape)}")
        if start + ids.shape[1] > self.max_len:
            raise ValueError(
                f"{name} reaches position {start + ids.shape[1] - 1}, but the model has "
                f"positional encodings for {self.max_len} positions (max_len={self.max_len})"
            )
        low, high = torch.stack(torch.aminmax(ids)).tolist()
        if low < 0 or high >= self.vocab_size:
            bad = low if low < 0 else high
            raise ValueError(
                f"{name} holds token id {bad}, outside the vocabulary 0..{self.vocab_size - 1}"
            )

    def embed(self, ids, start=0, check=True):
        """Token ids (B, T) -> E[ids] * sqrt(d_model) + positions start..start+T-1, dropout.

        (Without the sqrt(d_model) if `variant.scale_embeddings` is False.)
        """
        if check:
            self.check_ids(ids, start=start)
        x = self.embedding(ids)  # (B, T, d_model)
        if self.variant.scale_embeddings:
            x = x * math.sqrt(self.d_model)
        if self.variant.position_scheme != "sinusoidal":  # lesson 07's other schemes
            return self.dropout(self.positions(x, start))
        positions = self.pe[start : start + ids.shape[1]]  # (T, d_model)
        return self.dropout(x + positions)

    def encode(self, src, check=True):
        x = self.embed(src, check=check)  # (B, T_src, d_model)
        src_mask = padding_mask(src, self.pad_id, x.dtype)  # (B, 1, 1, T_src)
        for layer in self.encoder:
            x = layer(x, src_mask)
        if self.variant.norm_position == "pre":
            x = self.encoder_norm(x)
        return x  # the memory: (B, T_src, d_model)

    def decode(self, tgt, memory, src, cache=None, check=True):
        """Scores for every token at every target position: (B, T_tgt, |V|).

        With a `cache` (generation, see tfs.decoding), tgt is the newest token only, (B, 1):
        it gets the position after the cached ones and looks at all of them, so no mask is
        needed; keys and values of earlier positions come from the cache. `check=False`
        skips the check of the token ids (tfs.decoding checks once, before the first step).
        """
        _check_same_batch(tgt, memory, src)
        src_mask = padding_mask(src, self.pad_id, memory.dtype)  # (B, 1, 1, T_src)
        if cache is None:
            x = self.embed(tgt, check=check)  # (B, T_tgt, d_model)
            tgt_padding = padding_mask(tgt, self.pad_id, x.dtype)  # (B, 1, 1, T_tgt)
            # the first input is the decoder's start token: never hidden, even when it is
            # <pad> (Marian starts from <pad>); the course's <bos> is never hidden anyway
            tgt_padding[..., 0] = 0.0
            tgt_mask = tgt_padding + causal_mask(tgt.shape[1], tgt.device, x.dtype)
            layer_caches = [None] * len(self.decoder)
        else:
            if tgt.dim() != 2 or tgt.shape[1] != 1:
                raise ValueError(
                    f"with a cache, decode() takes one new token per sentence, (B, 1); "
                    f"got tgt of shape {tuple(tgt.shape)}"
                )
            x = self.embed(tgt, start=cache.length, check=check)  # (B, 1, d_model) at t
            tgt_mask = None  # the cache holds the past only: nothing to hide
            layer_caches = cache.layers
        for layer, layer_cache in zip(self.decoder, layer_caches, strict=True):
            x = layer(x, memory, src_mask, tgt_mask, layer_cache)  # (B, T_tgt, d_model)
        if self.variant.norm_position == "pre":
            x = self.decoder_norm(x)
        E = self.embedding.weight  # (|V|, d_model): the output layer is the embedding
        if cache is None:
            scores = x @ E.T  # scores for every token: (B, T_tgt, |V|)
        else:
            cache.length += 1
            # one position per sentence: E @ x^T (the same numbers) reads E row after row,
            # which is faster than x @ E^T when x has only B rows
            scores = (E @ x[:, 0].T).T[:, None, :]  # (B, 1, |V|)
        if self.variant.output_bias:
            scores = scores + self.output_bias  # Marian's final_logits_bias
        return scores

    def forward(self, src, tgt):
        _check_same_batch(tgt, None, src)
        return self.decode(tgt, self.encode(src), src)

    def keep_attention_weights(self, keep=True):
        """Make every attention keep its last weights in `.weights` (slower); returns self.

        Either way the weights already kept are cleared, so read them before calling
        `keep_attention_weights(False)`.
        """
        for module in self.modules():
            if isinstance(module, MultiHeadAttention):
                module.keep_weights = bool(keep)
                module.weights = None
        return self


def llama_variant(n_kv_heads=None, rotary_base=500_000.0, norm_eps=1e-5):
    """The switches that make a Llama block: pre-LN with RMSNorm, SwiGLU, rotary positions
    in halves (Hugging Face's layout), `n_kv_heads` key/value heads, no biases, embeddings
    not scaled. Llama 3.1's defaults: rotary base 500,000, eps 1e-5."""
    return Variant(norm_position="pre", norm="rms", norm_eps=norm_eps, feed_forward="swiglu",
                   position_scheme="rotary", rotary_pairing="halves", rotary_base=rotary_base,
                   n_kv_heads=n_kv_heads, bias=False, scale_embeddings=False)


class DecoderOnly(nn.Module):
    """A decoder-only language model (GPT, Llama) built from the same layers (lesson 07).

    Embedding, n_layers `EncoderLayer`s under a causal mask, a final norm when pre-LN, and
    the output layer: E itself (`tie_output=True`, as ours) or a matrix of its own
    (`output`, Llama 3.1 8B). `forward(ids, cache=None)`: ids (B, T) -> the scores
    (B, T, |V|) of the next token at every position. With a `KVCache` (see `KVCache`), the
    first call may feed a whole prompt; later calls feed one token per sentence.
    """

    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, dropout=0.0, max_len=256,
                 *, variant=None, tie_output=True):
        super().__init__()
        variant = Variant() if variant is None else variant
        if not isinstance(variant, Variant):
            raise TypeError(f"variant must be a tfs.model.Variant, got {type(variant).__name__}")
        if variant.output_bias or variant.decoder_start_id is not None:
            raise ValueError("output_bias and decoder_start_id are Marian's: not for DecoderOnly")
        self.vocab_size = _check_int(vocab_size, "vocab_size")
        d_model, n_heads = _check_heads(d_model, n_heads)
        _check_kv_heads(n_heads, variant.n_kv_heads)
        self.d_model = d_model
        self.variant = variant
        self.embedding = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=d_model**-0.5)
        self.positions = Positions(variant, max_len, d_model, n_heads)
        if variant.position_scheme == "sinusoidal":
            self.register_buffer(
                "pe", positional_encoding(max_len, d_model, variant.positions), persistent=False
            )
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, dropout, variant=variant,
                         rotary=self.positions.rotary)
            for _ in range(_check_int(n_layers, "n_layers"))
        )
        self.norm = make_norm(variant, d_model) if variant.norm_position == "pre" else None
        self.output = None if tie_output else nn.Linear(d_model, vocab_size, bias=False)
        self.dropout = nn.Dropout(_check_dropout(dropout))

    @property
    def max_len(self):
        return self.positions.max_len

    def embed(self, ids, start=0):
        x = self.embedding(ids)  # (B, T, d_model)
        if self.variant.scale_embeddings:
            x = x * math.sqrt(self.d_model)
        if self.variant.position_scheme == "sinusoidal":
            x = x + self.pe[start : start + ids.shape[1]]
        return self.dropout(self.positions(x, start))

    def forward(self, ids, cache=None):
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.dtype not in ID_DTYPES:
            raise ValueError(f"ids must be token ids of shape (B, T), got {_describe(ids)}")
        start = 0 if cache is None else cache.length
        length = ids.shape[1]
        if start + length > self.max_len:
            raise ValueError(f"ids reach position {start + length - 1}, beyond max_len "
                             f"{self.max_len}")
        if start and length != 1:
            raise ValueError("after the prompt, a cache takes one new token per sentence, (B, 1)")
        x = self.embed(ids, start)  # (B, T, d_model)
        mask = causal_mask(length, ids.device, x.dtype) if length > 1 else None  # (1, 1, T, T)
        layer_caches = [None] * len(self.layers) if cache is None else cache.layers
        for layer, layer_cache in zip(self.layers, layer_caches, strict=True):
            x = layer(x, mask, layer_cache)  # (B, T, d_model)
        if cache is not None:
            cache.length += length
        if self.norm is not None:
            x = self.norm(x)
        weight = self.embedding.weight if self.output is None else self.output.weight
        return x @ weight.T  # (B, T, |V|)


# ---------------------------------------------------------------------------------------------
# the KV cache (lesson 03, "The KV cache"): what each attention keeps between generation steps


class SelfAttentionCache:
    """A decoder self-attention's keys and values of the positions generated so far.

    Room for `max_len` positions is reserved up front; `length` of them are filled.
    `MultiHeadAttention.forward` appends the newest position's key and value at every step.
    """

    def __init__(self, batch, n_heads, d_k, max_len, like):
        self.keys = like.new_empty(batch, n_heads, max_len, d_k)  # (B, h, max_len, d_k)
        self.values = like.new_empty(batch, n_heads, max_len, d_k)
        self.length = 0

    def append(self, keys, values):
        """Write this step's keys and values (B, h, n, d_k), n = 1 but for a decoder-only
        model's prompt; return those of every position."""
        t, n = self.length, keys.shape[2]
        if t + n > self.keys.shape[2]:
            raise ValueError(
                f"the KV cache is full: it has room for {self.keys.shape[2]} positions (max_len)"
            )
        self.keys[:, :, t : t + n] = keys
        self.values[:, :, t : t + n] = values
        self.length = t + n
        return self.filled()

    def filled(self):
        t = self.length
        return self.keys[:, :, :t], self.values[:, :, :t]  # (B, h, t, d_k) each

    def reorder(self, index):
        """Beam search: row i now continues the hypothesis that was in row index[i]."""
        t = self.length
        self.keys[:, :, :t] = self.keys[index, :, :t]
        self.values[:, :, :t] = self.values[index, :, :t]


class CrossAttentionCache:
    """A cross-attention's keys and values of the encoder's memory: projected once, at the
    first step (`MultiHeadAttention.forward` appends them), then read at every step."""

    def __init__(self):
        self.keys = self.values = None  # (B, h, T_src, d_k) each, after the first step

    @property
    def filled(self):
        return self.keys is not None

    def append(self, keys, values):
        self.keys, self.values = keys, values  # the memory does not change: stored once
        return keys, values


class LayerCache(NamedTuple):
    """What one decoder layer remembers: its self-attention and its cross-attention."""

    self_attention: SelfAttentionCache
    cross_attention: CrossAttentionCache


class KVCache:
    """The decoder's keys and values, kept between generation steps.

    `KVCache(model, memory, max_len)` holds one `LayerCache` per decoder layer, with room for
    `max_len` positions of self-attention, for a batch shaped like `memory` (B, T_src,
    d_model). Pass it to `model.decode(new_token, memory, src, cache)`, one token (B, 1) per
    call: each attention appends to its own part (the cross-attention projects the memory
    at the first call). `length` counts the positions fed so far. After t steps the
    self-attention part holds 2 * N * t * n_kv_heads * d_k numbers per sentence (keys and
    values, N decoder layers; 2 * N * t * d_model without grouped-query attention):
    `numel("self")` counts the real tensors, `keys_values("self")` returns them.
    """

    def __init__(self, model, memory, max_len):
        if not isinstance(model, (Transformer, DecoderOnly)):
            raise TypeError(f"model must be a tfs.model.Transformer, got {type(model).__name__}")
        max_len = _check_int(max_len, "max_len")
        batch = memory.shape[0]
        decoder_only = isinstance(model, DecoderOnly)  # memory: then the prompt's ids (B, T)
        like = model.embedding.weight if decoder_only else memory
        self.layers = []
        for layer in model.layers if decoder_only else model.decoder:
            # grouped-query attention: only the n_kv_heads key/value heads are kept
            heads, d_k = layer.self_attention.n_kv_heads, layer.self_attention.d_k
            self_cache = SelfAttentionCache(batch, heads, d_k, max_len, like)
            self.layers.append(self_cache if decoder_only else
                               LayerCache(self_cache, CrossAttentionCache()))
        self.decoder_only = decoder_only
        self.length = 0

    def keys_values(self, kind="self"):
        """[(keys, values)] per decoder layer: (B, h, t, d_k) for "self", T_src for "cross"."""
        if kind not in ("self", "cross"):
            raise ValueError(f"kind must be 'self' or 'cross', got {kind!r}")
        if kind == "self":
            if self.decoder_only:
                return [layer_cache.filled() for layer_cache in self.layers]
            return [layer_cache.self_attention.filled() for layer_cache in self.layers]
        if self.decoder_only:
            raise ValueError("a decoder-only model has no cross-attention")
        if not self.layers[0].cross_attention.filled:
            raise ValueError("the cross-attention keys and values come with the first step")
        return [(c.cross_attention.keys, c.cross_attention.values) for c in self.layers]

    def numel(self, kind="self"):
        """How many numbers the filled part holds: 2 * N * t * n_kv_heads * d_k per sentence
        for "self" (2 * N * t * d_model without grouped-query attention)."""
        return sum(k.numel() + v.numel() for k, v in self.keys_values(kind))

    def reorder(self, index):
        """Beam search: row i continues the hypothesis of row index[i], a row of the same
        sentence (so the cross-attention part, the same for all of them, stays as it is)."""
        for layer_cache in self.layers:
            (layer_cache if self.decoder_only else layer_cache.self_attention).reorder(index)


def copy_to_torch(ours, theirs):
    """Copy a course layer's weights into PyTorch's own, to check both compute the same.

    `ours` -> `theirs`: MultiHeadAttention -> nn.MultiheadAttention (w_q, w_k, w_v stacked
    into in_proj), EncoderLayer -> nn.TransformerEncoderLayer, DecoderLayer ->
    nn.TransformerDecoderLayer (norm_first=False, ReLU, batch_first=True). Returns `theirs`.
    """
    pairs = {
        MultiHeadAttention: nn.MultiheadAttention,
        EncoderLayer: nn.TransformerEncoderLayer,
        DecoderLayer: nn.TransformerDecoderLayer,
    }
    if type(ours) not in pairs or not isinstance(theirs, pairs[type(ours)]):
        raise TypeError(
            f"copy_to_torch() copies a MultiHeadAttention, EncoderLayer or DecoderLayer into "
            f"its PyTorch twin, got {type(ours).__name__} -> {type(theirs).__name__}"
        )
    with torch.no_grad():
        if isinstance(ours, MultiHeadAttention):
            stacked = torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight])  # (3d, d)
            theirs.in_proj_weight.copy_(stacked)
            theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
            theirs.out_proj.weight.copy_(ours.w_o.weight)
            theirs.out_proj.bias.copy_(ours.w_o.bias)
            return theirs
    copy_to_torch(ours.self_attention, theirs.self_attn)
    if isinstance(ours, DecoderLayer):
        copy_to_torch(ours.cross_attention, theirs.multihead_attn)
    theirs.linear1.load_state_dict(ours.feed_forward.linear1.state_dict())
    theirs.linear2.load_state_dict(ours.feed_forward.linear2.state_dict())
    for name in ("norm1", "norm2", "norm3"):
        if hasattr(ours, name):
            getattr(theirs, name).load_state_dict(getattr(ours, name).state_dict())
    return theirs


def count_parameters(vocab_size, d_model, d_ff, n_layers):
    """The parameters of `Transformer`, by formula (E is counted once: it is shared)."""
    d = d_model
    attention_params = 4 * (d * d + d)  # four d x d matrices with biases
    feed_forward_params = 2 * d * d_ff + d_ff + d
    encoder_layer = attention_params + feed_forward_params + 2 * 2 * d  # + 2 norms (gamma, beta)
    decoder_layer = 2 * attention_params + feed_forward_params + 3 * 2 * d  # + 3 norms
    return vocab_size * d + n_layers * (encoder_layer + decoder_layer)


def _describe(x):
    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)}"
    return type(x).__name__


def _check_same_batch(tgt, memory, src):
    for name, x in (("src", src), ("tgt", tgt)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a tensor of token ids, got {type(x).__name__}")
        if x.dim() != 2:
            raise ValueError(
                f"{name} must have shape (B, T): one row of token ids per sentence, "
                f"got shape {tuple(x.shape)}"
            )
    if src.shape[0] != tgt.shape[0]:
        raise ValueError(
            f"src and tgt must hold the same number of sentences, "
            f"got {src.shape[0]} and {tgt.shape[0]}"
        )
    if memory is not None and tuple(memory.shape[:2]) != tuple(src.shape):
        raise ValueError(
            f"memory must be the encoder's output for src, (B, T_src, d_model) with "
            f"(B, T_src) = {tuple(src.shape)}, got {tuple(memory.shape)}"
        )
