"""Generating with the course's Transformer: greedy decoding and beam search, with a KV cache.

Both decoders take a whole padded batch of source sentences at once and return, for each,
the generated token ids WITHOUT the leading <bos>, as a (B, T) LongTensor:

- each sentence stops at its first <eos>, which IS included in the output; the positions
  after it hold `model.pad_id`. A sentence that reaches `max_len` tokens without <eos> is
  cut there (no <eos>). T is the longest output in the batch, at most `max_len`.
- <pad> and <bos> are never generated (their scores are set to -inf): padding in an output
  always means "after <eos>", and <bos> only ever starts the decoder's input.
- the arguments are checked once per call, not at every generated token (a check reads the
  ids back to the CPU, a wait for the GPU each time).
- they run without gradients and in eval mode (dropout off), then restore the model's mode.

The KV cache (`KVCache`). Generating token t, the decoder needs the keys and values of every
earlier position; without a cache it recomputes them all at every step (the whole prefix goes
through the decoder again). With it:
- cross-attention: the keys and values of the encoder's memory are computed once per layer,
  before the first step, and read at every step;
- self-attention: each step projects only the newest token (position t, which gets pe[t])
  and writes its key and value into the next slot of the layer's cache.
After n steps the self-attention part of the cache holds 2 * N * n * d_model numbers per
sentence (keys and values, N decoder layers, n positions): `cache.numel("self")` counts the
real tensors, `cache.keys_values("self")` returns them. `greedy(..., return_cache=True)` hands
the cache back along with the tokens.
"""

from __future__ import annotations

import contextlib
import numbers
from typing import NamedTuple

import torch

from tfs.model import Transformer


class SelfAttentionCache:
    """The self-attention keys and values of the positions generated so far.

    Room for `max_len` positions is reserved up front; `length` of them are filled.
    """

    def __init__(self, batch, n_heads, d_k, max_len, like):
        self.keys = like.new_empty(batch, n_heads, max_len, d_k)  # (B, h, max_len, d_k)
        self.values = like.new_empty(batch, n_heads, max_len, d_k)
        self.length = 0

    def keys_values(self, attention, x_new):
        """Project the newest position x_new (B, 1, d_model), append it, return all so far."""
        t = self.length
        if t == self.keys.shape[2]:
            raise ValueError(f"the KV cache is full: it has room for {t} positions (max_len)")
        self.keys[:, :, t : t + 1] = attention.split_heads(attention.w_k(x_new))  # (B, h, 1, d_k)
        self.values[:, :, t : t + 1] = attention.split_heads(attention.w_v(x_new))
        self.length = t + 1
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
    """The cross-attention keys and values of the encoder's memory: computed once."""

    def __init__(self, attention, memory):
        self.keys = attention.split_heads(attention.w_k(memory))  # (B, h, T_src, d_k)
        self.values = attention.split_heads(attention.w_v(memory))

    def keys_values(self, attention, memory):
        return self.keys, self.values  # the memory does not change: nothing to compute

    def filled(self):
        return self.keys, self.values


class LayerCache(NamedTuple):
    """What one decoder layer remembers: its self-attention and its cross-attention."""

    self_attention: SelfAttentionCache
    cross_attention: CrossAttentionCache


class KVCache:
    """The decoder's keys and values, kept between generation steps (see the module's doc).

    `KVCache(model, memory, max_len)` computes the cross-attention keys and values of
    `memory` (B, T_src, d_model) for every decoder layer and reserves room for `max_len`
    positions of self-attention. Pass it to `model.decode(new_token, memory, src, cache)`,
    one token (B, 1) per call; `length` counts the positions fed so far.
    """

    def __init__(self, model, memory, max_len):
        batch = memory.shape[0]
        self.layers = []
        for layer in model.decoder:
            attention = layer.self_attention
            self.layers.append(
                LayerCache(
                    SelfAttentionCache(batch, attention.n_heads, attention.d_k, max_len, memory),
                    CrossAttentionCache(layer.cross_attention, memory),
                )
            )
        self.length = 0

    def keys_values(self, kind="self"):
        """[(keys, values)] per decoder layer: (B, h, t, d_k) for "self", T_src for "cross"."""
        if kind not in ("self", "cross"):
            raise ValueError(f"kind must be 'self' or 'cross', got {kind!r}")
        index = 0 if kind == "self" else 1
        return [layer_cache[index].filled() for layer_cache in self.layers]

    def numel(self, kind="self"):
        """How many numbers the cache holds: 2 * N * t * d_model per sentence for "self"."""
        return sum(k.numel() + v.numel() for k, v in self.keys_values(kind))

    def reorder(self, index):
        """Beam search: row i continues the hypothesis of row index[i], a row of the same
        sentence (so the cross-attention part, the same for all of them, stays as it is)."""
        for layer_cache in self.layers:
            layer_cache.self_attention.reorder(index)


# ---------------------------------------------------------------------------------------------
# the decoders


@torch.no_grad()
def greedy(model, src, bos_id, eos_id, max_len=None, use_cache=True, return_cache=False):
    """Greedy decoding of a padded batch `src` (B, T_src): the most probable token each step.

    Returns (B, T) token ids without <bos>, <eos> included, `model.pad_id` after it (see the
    module's doc). `max_len`: at most this many tokens per sentence (default: as many as the
    model has positions). `use_cache=False` recomputes the whole prefix at every step (the
    same tokens, slower). `return_cache=True` returns (tokens, cache): the KVCache after the
    last step (use_cache must be True).
    """
    max_len = _check_arguments(model, src, bos_id, eos_id, max_len)
    if return_cache and not use_cache:
        raise ValueError("return_cache=True needs use_cache=True")
    pad_id = model.pad_id
    with _evaluating(model):
        memory = model.encode(src, check=False)  # (B, T_src, d_model): encoded once
        cache = KVCache(model, memory, max_len) if use_cache else None
        tokens = src.new_full((src.shape[0], 1), bos_id)  # (B, 1): the decoder starts at <bos>
        finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            if use_cache:  # (B, |V|): the newest token only
                scores = model.decode(tokens[:, -1:], memory, src, cache, check=False)[:, -1]
            else:  # the whole prefix again
                scores = model.decode(tokens, memory, src, check=False)[:, -1]
            scores[:, [pad_id, bos_id]] = float("-inf")  # never generate padding or <bos>
            next_token = scores.argmax(dim=-1).masked_fill(finished, pad_id)  # (B,)
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, t + 1)
            finished |= next_token == eos_id
            if finished.all():
                break
    if return_cache:
        return tokens[:, 1:], cache
    return tokens[:, 1:]


@torch.no_grad()
def beam_search(model, src, bos_id, eos_id, max_len=None, beam_size=4, length_penalty=1.0):
    """Beam search over a padded batch `src` (B, T_src): keeps the `beam_size` best prefixes.

    Hypotheses are ranked by log p(tokens) / length ** length_penalty, the length counting
    the generated tokens with <eos>: 0 ranks by the plain log-probability, 1 by the average
    per token. A hypothesis that emitted <eos> stays in the beam, unchanged, until better ones
    push it out; the search stops when every beam of every sentence is finished, or after
    `max_len` tokens. Returns the best hypothesis of each sentence, shaped like `greedy`'s
    output. With beam_size=1 it returns greedy's tokens.
    """
    max_len = _check_arguments(model, src, bos_id, eos_id, max_len)
    beam_size = _check_count(beam_size, "beam_size")
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, numbers.Real):
        raise TypeError(f"length_penalty must be a number, got {length_penalty!r}")
    batch, vocab, pad_id, device = src.shape[0], model.vocab_size, model.pad_id, src.device
    with _evaluating(model):
        memory = model.encode(src, check=False).repeat_interleave(beam_size, dim=0)  # (B*K,..)
        src = src.repeat_interleave(beam_size, dim=0)  # (B*K, T_src): beams side by side
        cache = KVCache(model, memory, max_len)
        tokens = src.new_full((batch * beam_size, 1), bos_id)  # (B*K, 1)
        # log-probability of each hypothesis: one live beam per sentence at the start
        log_prob = torch.full((batch, beam_size), float("-inf"), device=device)
        log_prob[:, 0] = 0.0
        lengths = torch.zeros(batch, beam_size, device=device)  # tokens generated, <eos> too
        finished = torch.zeros(batch, beam_size, dtype=torch.bool, device=device)
        # a finished hypothesis has one continuation: <pad>, which costs nothing
        only_pad = torch.full((vocab,), float("-inf"), device=device)
        only_pad[pad_id] = 0.0
        first_sentence_row = torch.arange(batch, device=device)[:, None] * beam_size  # (B, 1)
        for _ in range(max_len):
            scores = model.decode(tokens[:, -1:], memory, src, cache, check=False)[:, -1]
            next_log_prob = scores.log_softmax(dim=-1).view(batch, beam_size, vocab)  # (B,K,|V|)
            next_log_prob[:, :, [pad_id, bos_id]] = float("-inf")  # never padding or <bos>
            next_log_prob = torch.where(finished[..., None], only_pad, next_log_prob)
            candidates = log_prob[..., None] + next_log_prob  # (B, K, |V|)
            new_lengths = lengths + (~finished).float()  # (B, K)
            ranking = candidates / new_lengths[..., None] ** length_penalty
            best = ranking.view(batch, -1).topk(beam_size, dim=-1).indices  # (B, K), best first
            beam, token = best // vocab, best % vocab  # which hypothesis, extended by what
            log_prob = candidates.view(batch, -1).gather(1, best)
            lengths = new_lengths.gather(1, beam)
            # a hypothesis with probability 0 (only while beams outnumber candidates) is dead
            finished = finished.gather(1, beam) | (token == eos_id) | log_prob.isneginf()
            rows = (first_sentence_row + beam).view(-1)  # (B*K,): rows of tokens and cache
            tokens = torch.cat([tokens[rows], token.view(-1, 1)], dim=1)
            cache.reorder(rows)
            if finished.all():
                break
    best_hypotheses = tokens.view(batch, beam_size, -1)[:, 0, 1:]  # topk sorts: beam 0 is best
    return _trim_padding(best_hypotheses, pad_id)


@torch.no_grad()
def log_probability(model, src, out, bos_id):
    """log p(out | src) under the model, (B,): the sum over each output's tokens up to and
    including <eos> (the padding after it is not counted).

    `out` is what `greedy` or `beam_search` return: (B, T) without <bos>.
    """
    model.check_ids(out, "out")
    _check_token_id(model, bos_id, "bos_id")
    with _evaluating(model):
        bos = out.new_full((out.shape[0], 1), bos_id)
        tgt = torch.cat([bos, out[:, :-1]], dim=1)  # teacher forcing: <bos> + all but the last
        log_probs = model(src, tgt).log_softmax(dim=-1)  # (B, T, |V|)
    per_token = log_probs.gather(-1, out[..., None]).squeeze(-1)  # (B, T)
    return per_token.masked_fill(out == model.pad_id, 0.0).sum(dim=1)


# ---------------------------------------------------------------------------------------------
# helpers


@contextlib.contextmanager
def _evaluating(model):
    was_training = model.training
    model.eval()  # no dropout while generating
    try:
        yield
    finally:
        model.train(was_training)


def _trim_padding(tokens, pad_id):
    """Drop the columns at the end that hold only padding."""
    is_used = (tokens != pad_id).any(dim=0)  # (T,)
    width = int(is_used.nonzero().max()) + 1 if is_used.any() else 1
    return tokens[:, :width]


def _check_count(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return int(value)


def _check_token_id(model, token_id, name):
    if isinstance(token_id, bool) or not isinstance(token_id, numbers.Integral):
        raise TypeError(f"{name} must be an integer token id, got {token_id!r}")
    if not 0 <= token_id < model.vocab_size:
        raise ValueError(
            f"{name} must be in the vocabulary 0..{model.vocab_size - 1}, got {token_id}"
        )
    if token_id == model.pad_id:
        raise ValueError(
            f"{name} must differ from the model's pad_id ({model.pad_id}): "
            f"the padding mask would hide it"
        )
    return int(token_id)


def _check_arguments(model, src, bos_id, eos_id, max_len):
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a tfs.model.Transformer, got {type(model).__name__}")
    model.check_ids(src, "src")
    _check_token_id(model, bos_id, "bos_id")
    _check_token_id(model, eos_id, "eos_id")
    if max_len is None:
        return model.max_len
    max_len = _check_count(max_len, "max_len")
    if max_len > model.max_len:
        raise ValueError(
            f"max_len must be at most {model.max_len}, the positions the model has, got {max_len}"
        )
    return max_len
