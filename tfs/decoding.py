"""Generating with the course's Transformer: greedy decoding and beam search.

Both decoders take a whole padded batch of source sentences at once and return, for each,
the generated token ids WITHOUT the decoder's start token, as a (B, T) LongTensor:

- each sentence stops at its first <eos>, which IS included in the output; the positions
  after it hold `model.pad_id`. A sentence that reaches `max_len` tokens without <eos> is
  cut there (no <eos>). T is the longest output in the batch, at most `max_len`.
- <pad> and <bos> are never generated (their scores are set to -inf, as Hugging Face's
  `bad_words_ids` does): padding in an output always means "after <eos>", and <bos> only
  ever starts the decoder's input.
- the decoder starts from `bos_id`; for a model whose `variant.decoder_start_id` is set
  (Marian starts from <pad>), pass `bos_id=None` and it starts from that token.
- they run without gradients and in eval mode (dropout off), then restore the model's mode.
- the arguments are checked once per call, not at every generated token (a check reads the
  ids back to the CPU, a wait for the GPU each time).

This module only decides what to generate. The KV cache (`KVCache`, defined in tfs.model
and importable from here) belongs to the model: each attention appends its keys and values
to it. Without a cache (`greedy(use_cache=False)`), the whole prefix goes through the
decoder again at every step. `greedy(..., return_cache=True)` hands the cache back along
with the tokens.

Both decoders give exactly the tokens of Hugging Face's `generate` (`num_beams=1`, or
`num_beams=k` with the same `length_penalty` and its default `early_stopping=False`) with
`bad_words_ids=[[pad]]`, on the same model: tests/test_marian.py checks it.
"""

from __future__ import annotations

import contextlib
import numbers

import torch
import torch.nn.functional as F

from tfs.model import (  # noqa: F401 (the cache's classes, importable from here too)
    CrossAttentionCache,
    KVCache,
    LayerCache,
    SelfAttentionCache,
    Transformer,
)

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
    bos_id, max_len = _check_arguments(model, src, bos_id, eos_id, max_len)
    if return_cache and not use_cache:
        raise ValueError("return_cache=True needs use_cache=True")
    pad_id = model.pad_id
    with _evaluating(model):
        memory = model.encode(src, check=False)  # (B, T_src, d_model): encoded once
        cache = KVCache(model, memory, max_len) if use_cache else None
        tokens = src.new_full((src.shape[0], 1), bos_id)  # (B, 1): the decoder's start
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
    """Beam search over a padded batch `src` (B, T_src), step for step as Hugging Face's
    `generate(num_beams=beam_size, length_penalty=...)` does it.

    Each sentence keeps k = `beam_size` running prefixes (the beam) and a list of at most k
    finished answers, each scored log p(answer) / length ** length_penalty, the length
    counting the generated tokens with <eos> (0 ranks by the plain log-probability, 1 by
    the average per token). At every step:

    1. every running prefix is extended by every token but <pad> and <bos>; the 2k
       extensions with the highest log-probability are kept, best first;
    2. an extension that ends (with <eos>, or at `max_len` tokens) and is among the first k
       of them enters the list of finished answers, which keeps its k best;
    3. the k best extensions that do not end are the new beam;
    4. a sentence is done when its list holds k answers and its best running prefix, scored
       as if it ended now, does not beat the worst of them (Hugging Face's default,
       `early_stopping=False`).

    The search stops when every sentence is done, or after `max_len` tokens. Returns each
    sentence's best finished answer, shaped like `greedy`'s output. With beam_size=1 it
    returns greedy's tokens.
    """
    bos_id, max_len = _check_arguments(model, src, bos_id, eos_id, max_len)
    beam_size = _check_count(beam_size, "beam_size")
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, numbers.Real):
        raise TypeError(f"length_penalty must be a number, got {length_penalty!r}")
    batch, vocab, pad_id, device = src.shape[0], model.vocab_size, model.pad_id, src.device
    k = beam_size
    with _evaluating(model):
        memory = model.encode(src, check=False).repeat_interleave(k, dim=0)  # (B*k, T_src, d)
        src = src.repeat_interleave(k, dim=0)  # (B*k, T_src): the beams side by side
        cache = KVCache(model, memory, max_len)
        tokens = src.new_full((batch * k, 1), bos_id)  # (B*k, 1): running prefixes
        # log-probability of each running prefix: one live prefix per sentence at the start
        log_prob = torch.full((batch, k), float("-inf"), device=device)
        log_prob[:, 0] = 0.0
        # the finished answers: tokens, scores, and whether a slot holds one yet
        answers = src.new_full((batch, k, max_len), pad_id)
        answer_score = torch.full((batch, k), float("-inf"), device=device)
        answer_real = torch.zeros(batch, k, dtype=torch.bool, device=device)
        done = torch.zeros(batch, dtype=torch.bool, device=device)
        first_k = torch.arange(2 * k, device=device) < k  # (2k,): the first k of the 2k
        sentence_row = torch.arange(batch, device=device)[:, None] * k  # (B, 1)
        for step in range(max_len):
            length = step + 1  # tokens generated, this one included
            scores = model.decode(tokens[:, -1:], memory, src, cache, check=False)[:, -1]
            next_log_prob = scores.float().log_softmax(dim=-1)  # (B*k, |V|)
            next_log_prob[:, [pad_id, bos_id]] = float("-inf")  # never padding or <bos>
            candidates = next_log_prob.view(batch, k, vocab) + log_prob[..., None]
            # 1. the 2k best extensions, best first
            top_log_prob, top_index = candidates.view(batch, -1).topk(2 * k, dim=-1)  # (B, 2k)
            beam, token = top_index // vocab, top_index % vocab  # which prefix, and by what
            ends = (token == eos_id) | (length == max_len)  # (B, 2k)
            # 2. finished extensions among the first k enter the list of answers
            enters = ends & first_k & ~done[:, None] & top_log_prob.isfinite()
            score = torch.where(enters, top_log_prob / length**length_penalty, float("-inf"))
            prefixes = tokens[:, 1:].view(batch, k, step)  # (B, k, step): generated so far
            extended = torch.cat([_pick(prefixes, beam), token[..., None]], dim=2)  # (B,2k,t+1)
            extended = F.pad(extended, (0, max_len - length), value=pad_id)  # (B, 2k, max_len)
            keep = torch.cat([answer_score, score], dim=1).topk(k, dim=1).indices  # (B, k)
            answers = _pick(torch.cat([answers, extended], dim=1), keep)
            answer_score = torch.cat([answer_score, score], dim=1).gather(1, keep)
            answer_real = torch.cat([answer_real, enters], dim=1).gather(1, keep)
            # 3. the k best extensions that do not end are the new beam
            running = torch.where(ends, float("-inf"), top_log_prob).topk(k, dim=1)
            log_prob, picked = running.values, running.indices  # (B, k)
            rows = (sentence_row + beam.gather(1, picked)).view(-1)  # (B*k,): rows they extend
            tokens = torch.cat([tokens[rows], token.gather(1, picked).view(-1, 1)], dim=1)
            cache.reorder(rows)
            # 4. done: k answers, and the best running prefix cannot beat the worst of them
            best_running = log_prob[:, 0] / length**length_penalty
            worst_answer = answer_score.min(dim=1).values
            done |= answer_real.all(dim=1) & (best_running <= worst_answer)
            if length == max_len or done.all():
                break
    return _trim_padding(answers[:, 0], pad_id)  # the list is sorted: the best comes first


@torch.no_grad()
def log_probability(model, src, out, bos_id):
    """log p(out | src) under the model, (B,): the sum over each output's tokens up to and
    including <eos> (the padding after it is not counted).

    `out` is what `greedy` or `beam_search` return: (B, T) without the start token; `bos_id`
    is the decoder's start token (None: the model's `variant.decoder_start_id`).
    """
    model.check_ids(out, "out")
    bos_id = _check_start(model, bos_id)
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


def _pick(sequences, index):
    """sequences (B, n, T), index (B, m) -> (B, m, T): row index[b, j] of sentence b."""
    return sequences.gather(1, index[..., None].expand(-1, -1, sequences.shape[2]))


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
    return int(token_id)


def _check_start(model, bos_id):
    """The decoder's start token: bos_id, or the model's own (variant.decoder_start_id)."""
    start = model.variant.decoder_start_id
    if bos_id is None:
        if start is None:
            raise ValueError(
                "bos_id is None, but the model has no start token of its own "
                "(variant.decoder_start_id): pass the id of <bos>"
            )
        return start
    bos_id = _check_token_id(model, bos_id, "bos_id")
    if start is not None and bos_id != start:
        raise ValueError(
            f"bos_id must be the model's decoder start token {start} "
            f"(variant.decoder_start_id), or None; got {bos_id}"
        )
    if bos_id == model.pad_id and start is None:
        raise ValueError(
            f"bos_id must differ from the model's pad_id ({model.pad_id}) unless the model "
            f"starts from <pad> (variant.decoder_start_id): it was trained to start from <bos>"
        )
    return bos_id


def _check_arguments(model, src, bos_id, eos_id, max_len):
    """Once per call: (start token, max_len)."""
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a tfs.model.Transformer, got {type(model).__name__}")
    model.check_ids(src, "src")
    bos_id = _check_start(model, bos_id)
    if _check_token_id(model, eos_id, "eos_id") == model.pad_id:
        raise ValueError(f"eos_id must differ from the model's pad_id ({model.pad_id})")
    if max_len is None:
        return bos_id, model.max_len
    max_len = _check_count(max_len, "max_len")
    if max_len > model.max_len:
        raise ValueError(
            f"max_len must be at most {model.max_len}, the positions the model has, got {max_len}"
        )
    return bos_id, max_len
