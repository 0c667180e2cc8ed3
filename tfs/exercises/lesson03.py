"""Checkers for the exercises of lesson 03 (assembly, training, inference).

In the lesson::

    from tfs.exercises import lesson03 as check

    check.decoder_only_parameters(my_count)     # section 3, the parameter formula of GPT-2
    check.clinic_repeats(fixed_greedy)          # section 6, the bug clinic
    check.greedy_until_eos(my_greedy)           # section 6, greedy decoding that stops
    check.sequence_log_probability(my_log_p)    # section 7, what beam search ranks by

Every checker runs the answer on inputs of its own (a batch of 1, padding, large scores, an
untrained model) and compares it with the reference: the course's `tfs.model`,
`tfs.decoding` or PyTorch's own loss. The reference answers are in
`solutions/lesson03.py` (`SOLUTIONS`).
"""

from __future__ import annotations

import numbers

import torch
import torch.nn.functional as F

import tfs.decoding
import tfs.model
from tfs.exercises._core import Mistake, a_tensor, call, close, exercise, solution_url
from tfs.exercises._core import matches as _matches

SOLUTIONS = solution_url("03")

__all__ = [
    "SOLUTIONS",
    "CopyingModel",
    "BosLovingModel",
    "CountingModel",
    "clinic_repeats",
    "greedy_until_eos",
    "greedy_with_a_bug",
    "decoder_only_parameters",
    "repeat_share",
    "sequence_log_probability",
]

PAD, BOS, EOS = 0, 1, 2  # the lesson's special tokens


def _small_model(seed=0):
    """An untrained model with the lesson's vocabulary (13 tokens), small and quick."""
    torch.manual_seed(seed)  # the checker's own state (the core restores the lesson's)
    return tfs.model.Transformer(13, 32, 4, 64, 2, 0.0, PAD).eval()


# ---------------------------------------------------------------------------------------------
# section 3: the parameter formula of a decoder-only model (GPT-2)


def _gpt2_parts(vocab_size, d_model, d_ff, n_layers, max_len):
    """The counts a GPT-2-style model is made of (the reference, part by part)."""
    attention = 4 * (d_model * d_model + d_model)  # Q, K, V and output projections, biases
    feed_forward = 2 * d_model * d_ff + d_ff + d_model
    layer_norms = 2 * 2 * d_model  # two per layer, gamma and beta
    return {
        "layers": n_layers * (attention + feed_forward + layer_norms),
        "token embedding": vocab_size * d_model,  # tied: also the output layer
        "learned positions": max_len * d_model,
        "final LayerNorm": 2 * d_model,
        # the usual mistakes, as differences from the right count
        "_untied output": vocab_size * d_model,
        "_output bias": vocab_size,
        "_biases": n_layers * (4 * d_model + d_ff + d_model),
        "_cross-attention": n_layers * (attention + 2 * d_model),
        "_norms": n_layers * 2 * d_model,
    }


def _gpt2_count(*config):
    parts = _gpt2_parts(*config)
    return sum(count for name, count in parts.items() if not name.startswith("_"))


# GPT-2 small (Radford et al., 2019): |V| = 50,257, d_model = 768, d_ff = 3,072, 12 layers,
# 1,024 positions; 124,439,808 parameters, as Hugging Face's GPT2Model counts them.
GPT2_SMALL = (50_257, 768, 3_072, 12, 1_024)
_CONFIGS = [GPT2_SMALL, (13, 64, 256, 2, 256), (1_000, 32, 48, 1, 7), (50_257, 1_600, 6_400, 48,
                                                                          1_024)]


@exercise
def decoder_only_parameters(fn):
    """fn(vocab_size, d_model, d_ff, n_layers, max_len) -> the parameter count of a GPT-2-style
    decoder-only model (tied output layer, learned positions, a final LayerNorm)."""
    for config in _CONFIGS:
        what = "vocab_size={}, d_model={}, d_ff={}, n_layers={}, max_len={}".format(*config)
        got = call(fn, *config, what=what)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, numbers.Real) or got != int(got):
            raise Mistake(f"return a whole number of parameters; yours is {got!r} ({what})")
        got = int(got)
        want = _gpt2_count(*config)
        if got == want:
            continue
        parts = _gpt2_parts(*config)
        gap = got - want
        named = {
            parts["_untied output"]: "you counted a separate output layer: GPT-2 ties it to "
            "the token embedding (the same |V| × d_model matrix, counted once)",
            parts["_untied output"] + parts["_output bias"]: "you counted a separate output "
            "layer with a bias: GPT-2 ties it to the token embedding, without a bias",
            -parts["learned positions"]: "the positions are missing: GPT-2 LEARNS its "
            "positional table, max_len × d_model parameters (ours was a fixed buffer)",
            -parts["final LayerNorm"]: "the final LayerNorm is missing: GPT-2 normalises once "
            "more after the last layer (2·d_model parameters)",
            -parts["_biases"]: "the biases are missing: each linear layer has one, d_model "
            "per projection and d_ff in the first feed-forward layer",
            parts["_cross-attention"]: "a decoder-only model has no cross-attention (there is "
            "no encoder to read): one attention and two LayerNorms per layer",
            parts["_norms"]: "three LayerNorms per layer is the encoder-decoder's decoder; a "
            "decoder-only layer has two (attention, feed-forward)",
            -parts["_norms"]: "each layer has two LayerNorms, with gamma and beta: 4·d_model",
        }
        if gap in named:
            raise Mistake(f"{named[gap]} ({what}: yours {got:,}, off by {gap:+,})")
        raise Mistake(
            f"yours is {got:,}, the model has {want:,} ({gap:+,}) for {what}. Count per layer "
            "one attention (four d_model × d_model matrices with biases), a feed-forward network "
            "and two LayerNorms; then the tied embedding, the positions and one final LayerNorm"
        )
    return f"GPT-2 small has {_gpt2_count(*GPT2_SMALL):,} parameters; 3 more configurations match"


# ---------------------------------------------------------------------------------------------
# section 5: the bug clinic, greedy decoding that repeats one token


@torch.no_grad()
def greedy_with_a_bug(model, src, n_tokens):
    """The lesson's greedy loop as the clinic plants it: (B, n_tokens) token ids."""
    memory = model.encode(src)  # (B, T_src, d_model): once
    out = torch.full((src.shape[0], 1), BOS, device=src.device)  # (B, 1)
    for _ in range(n_tokens):
        scores = model.decode(out, memory, src)[:, 0]  # (B, |V|): the next token's scores
        out = torch.cat([out, scores.argmax(dim=-1, keepdim=True)], dim=1)  # (B, t + 1)
    return out[:, 1:]  # without <bos>


def repeat_share(tokens):
    """The symptom: the share of answers (rows of `tokens`) that are one token repeated."""
    tokens = torch.as_tensor(tokens)
    return (tokens == tokens[:, :1]).all(dim=1).float().mean().item()


class CountingModel(torch.nn.Module):
    """A stand-in for a trained model, with the interface of tfs.model.Transformer's
    `encode` and `decode`, whose next token is always known: after <bos> it writes the
    source's first letter, after each letter the next one in the alphabet, after `j` <eos>,
    and after <eos> <eos> again."""

    vocab_size, pad_id = 13, PAD

    def encode(self, src):
        return F.one_hot(src, self.vocab_size).float()  # (B, T_src, |V|)

    def decode(self, tgt, memory, src):
        following = tgt + 1  # (B, T_tgt): the letter after the one read
        following[tgt == 12] = EOS  # after j
        following[tgt == EOS] = EOS
        first = src[:, :1].expand_as(tgt)  # after <bos>: the source's first letter
        following = torch.where(tgt == BOS, first, following)
        return 5.0 * F.one_hot(following, self.vocab_size).float()  # (B, T_tgt, |V|)


class CopyingModel(CountingModel):
    """A stand-in whose next token depends on how much it has read: at position t it writes
    the source's letter t (a copy of the source), then <eos>."""

    def decode(self, tgt, memory, src):
        batch, length = tgt.shape
        padded = torch.cat([src, torch.full((batch, length), EOS)], dim=1)
        return 5.0 * F.one_hot(padded[:, :length], self.vocab_size).float()  # (B, T_tgt, |V|)


@torch.no_grad()
def _greedy_reference(model, src, n_tokens):
    memory = model.encode(src)
    out = torch.full((src.shape[0], 1), BOS, device=src.device)
    for _ in range(n_tokens):
        scores = model.decode(out, memory, src)[:, -1]
        out = torch.cat([out, scores.argmax(dim=-1, keepdim=True)], dim=1)
    return out[:, 1:]


@exercise
def clinic_repeats(fn):
    """fn(model, src, n_tokens) -> (B, n_tokens): greedy_with_a_bug, fixed."""
    src = torch.tensor([[3, 9, 4], [7, 3, 3], [10, 5, 6]])  # first letters a, e, h
    what = "a model whose next token is known (after a comes b), B = 3, 6 tokens"
    got = call(fn, CountingModel(), src, 6, what=what)
    want = _greedy_reference(CountingModel(), src, 6)  # a b c d e f, e f g h i j, h i j <eos>..
    a_tensor(got, "the tokens (B, n_tokens)", where=what)
    if tuple(got.shape) == (3, 7):
        raise Mistake("return the answer without the <bos> the decoder started from: "
                      "(B, n_tokens)")
    if tuple(got.shape) != (3, 6):
        raise Mistake(f"the answer should have shape (3, 6) for 3 sources and 6 tokens; yours "
                      f"has {tuple(got.shape)}")
    if repeat_share(got) == 1.0:
        raise Mistake(
            f"still one token repeated: ids {got[0].tolist()} where the model would write "
            f"{want[0].tolist()}. Which position's scores predict the NEXT token? The decoder "
            "scores every position it reads; only the last one has read the whole prefix")
    if not torch.equal(got.cpu(), want):
        raise Mistake(f"the model writes {want[0].tolist()}, yours {got[0].tolist()}: append "
                      "each new token at the END of the decoder's input and read the scores of "
                      "the last position")
    what = "a model that copies the source, position by position, B = 3, 6 tokens"
    got = call(fn, CopyingModel(), src, 6, what=what)
    want = _greedy_reference(CopyingModel(), src, 6)  # the source, then <eos>
    if not torch.equal(torch.as_tensor(got).cpu(), want):
        raise Mistake(
            f"on a model whose next token depends on how much it has read (it copies the "
            f"source), yours writes ids {torch.as_tensor(got)[0].tolist()} instead of "
            f"{want[0].tolist()}: without a cache the decoder must read the whole prefix, "
            "<bos> and every token so far, at every step")
    model = _small_model(seed=2)
    src = torch.randint(3, 13, (4, 5), generator=torch.Generator().manual_seed(9))
    got = call(fn, model, src, 4, what="a tfs.model.Transformer, B = 4, 4 tokens")
    close(got, _greedy_reference(model, src, 4), "your tokens (a tfs.model.Transformer)")
    return "no longer repeats: the same tokens as the lesson's greedy loop, on 3 models"


# ---------------------------------------------------------------------------------------------
# section 6: greedy decoding that stops at <eos>


class BosLovingModel(CountingModel):
    """A CountingModel that scores <bos> highest and <pad> second at every step: a decoder
    that lets them be written finds no letter at all."""

    def decode(self, tgt, memory, src):
        scores = super().decode(tgt, memory, src)  # (B, T_tgt, |V|)
        scores[..., BOS], scores[..., PAD] = 9.0, 8.0
        return scores


@torch.no_grad()
def _greedy_until_eos_reference(model, src, max_len):
    """tfs.decoding.greedy without the cache, for any model with `encode` and `decode`."""
    memory = model.encode(src)
    out = torch.full((src.shape[0], 1), BOS, device=src.device)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        scores = model.decode(out, memory, src)[:, -1]  # (B, |V|)
        scores[:, [PAD, BOS]] = float("-inf")
        next_token = scores.argmax(dim=-1).masked_fill(finished, PAD)  # (B,)
        out = torch.cat([out, next_token[:, None]], dim=1)
        finished |= next_token == EOS
        if finished.all():
            break
    return out[:, 1:]


def _after_eos(tokens):
    """(B, T) bool: the positions after each row's first <eos>."""
    seen = (tokens == EOS).int().cumsum(dim=1)
    return (seen - (tokens == EOS).int()) > 0


@exercise
def greedy_until_eos(fn):
    """fn(model, src, max_len) -> (B, T), T <= max_len: the greedy tokens, never <pad> or
    <bos>, <pad> after each answer's <eos>, stopping once every answer has its <eos>."""
    src = torch.tensor([[3, 9, 4], [7, 3, 3], [10, 5, 6]])  # first letters a, e, h
    what = "a model that counts up the alphabet (after j: <eos>), B = 3, max_len = 12"
    got = call(fn, CountingModel(), src, 12, what=what)
    want = _greedy_until_eos_reference(CountingModel(), src, 12)  # (3, 11): a ... j <eos>
    a_tensor(got, "the tokens (B, T)", where=what)
    got = got.cpu()
    if got.dim() != 2 or got.shape[0] != 3:
        raise Mistake(f"return one row of tokens per source, shape (3, T); yours has "
                      f"{tuple(got.shape)} ({what})")
    if (got[:, 0] == BOS).all():
        raise Mistake("return the answer without the <bos> the decoder started from")
    if got.shape[1] < want.shape[1] and torch.equal(got, want[:, : got.shape[1]]):
        raise Mistake(f"yours stops after {got.shape[1]} tokens, when the first answer ends: "
                      "stop only once EVERY answer of the batch has written its <eos> "
                      f"({what})")
    if got.shape[1] == 12 and torch.equal(got[:, :11], want):
        raise Mistake("every answer has its <eos> after 11 tokens, so stop there: yours "
                      f"goes on to max_len = 12 and writes only <pad> ({what})")
    before_eos = ~_after_eos(want)
    if (got.shape == want.shape and not torch.equal(got, want)
            and torch.equal(got[before_eos], want[before_eos])):
        raise Mistake(f"after an answer's <eos> write <pad> (id {PAD}); yours writes "
                      f"{got[1].tolist()} where the reference has {want[1].tolist()} ({what})")
    close(got, want, f"your tokens ({what})")
    what = "a model that scores <bos> and <pad> above every letter, B = 3, max_len = 12"
    got = torch.as_tensor(call(fn, BosLovingModel(), src, 12, what=what)).cpu()
    written = got[~_after_eos(got)]
    if ((written == BOS) | (written == PAD)).any():
        raise Mistake(f"yours writes <bos> or <pad> ({got[0].tolist()}): neither is ever a "
                      "next token, so set their scores to -inf before taking the argmax")
    close(got, want, f"your tokens ({what})")
    model = _small_model(seed=3)
    src = torch.randint(3, 13, (4, 5), generator=torch.Generator().manual_seed(10))
    got = call(fn, model, src, 6, what="an untrained tfs.model.Transformer, B = 4, max_len = 6")
    want = tfs.decoding.greedy(model, src, BOS, EOS, max_len=6, use_cache=False)
    close(got, want, "your tokens (an untrained tfs.model.Transformer)")
    return ("the tokens of tfs.decoding.greedy on 3 models: no <pad> or <bos> written, <pad> "
            "after <eos>, an early stop")


# ---------------------------------------------------------------------------------------------
# section 6: the log-probability of an answer


def _log_p_cases(generator):
    """(description, src, out): out padded with <pad> after <eos>, as the decoders return."""
    cases = []
    src = torch.randint(3, 13, (3, 6), generator=generator)
    out = torch.randint(3, 13, (3, 5), generator=generator)
    out[:, -1] = EOS
    cases.append(("3 answers of 5 tokens, <eos> last", src, out))
    src = torch.randint(3, 13, (2, 5), generator=generator)
    out = torch.randint(3, 13, (2, 6), generator=generator)
    out[0, 3], out[0, 4:] = EOS, PAD  # the first answer is shorter: padded after <eos>
    out[1, 5] = EOS
    cases.append(("answers of different lengths, <pad> after the first one's <eos>", src, out))
    src = torch.randint(3, 13, (1, 4), generator=generator)
    cases.append(("one answer that is only <eos>", src, torch.tensor([[EOS]])))
    return cases


@exercise
def sequence_log_probability(fn):
    """fn(model, src, out, bos_id) -> log p(out | src) per sentence, shape (B,)."""
    model = _small_model(seed=1)
    generator = torch.Generator().manual_seed(8)
    for what, src, out in _log_p_cases(generator):
        with torch.no_grad():
            got = call(fn, model, src, out, BOS, what=what)
        want = tfs.decoding.log_probability(model, src, out, BOS)
        if isinstance(got, torch.Tensor) and got.dim() == 0 and len(src) > 1:
            raise Mistake(f"return one log-probability per sentence, shape ({len(src)},); "
                          f"yours is a single number ({what})")
        try:
            close(got, want, f"your log-probabilities ({what})", atol=1e-4)
        except Mistake:
            diagnosis = _log_p_diagnosis(model, src, out, got)
            if diagnosis:
                raise Mistake(f"{diagnosis} ({what})") from None
            raise
    return "equal to tfs.decoding.log_probability on 3 inputs (padding, an answer of one token)"


def _log_p_variants(model, src, out):
    """name -> (B,) log-probabilities computed the usual wrong ways."""
    with torch.no_grad():
        bos = torch.full((len(out), 1), BOS)
        right_in = torch.cat([bos, out[:, :-1]], dim=1)
        real = out != PAD
        log_p = model(src, right_in).log_softmax(dim=-1)
        per_token = log_p.gather(-1, out[..., None]).squeeze(-1)
        unshifted = model(src, out).log_softmax(dim=-1).gather(-1, out[..., None]).squeeze(-1)
        raw = model(src, right_in).gather(-1, out[..., None]).squeeze(-1)
    return {
        "shift": unshifted.masked_fill(~real, 0).sum(1),
        "pad": per_token.sum(1),
        "mean": per_token.masked_fill(~real, 0).sum(1) / real.sum(1),
        "raw": raw.masked_fill(~real, 0).sum(1),
        "product": per_token.masked_fill(~real, 0).sum(1).exp(),
    }


def _log_p_diagnosis(model, src, out, got):
    messages = {
        "shift": "the decoder reads the answer itself, so each position sees the token it is "
                 "scored on: feed <bos> followed by the answer without its last token "
                 "(teacher forcing), and score position t on out[t]",
        "pad": "the <pad> after <eos> is counted: padding is not part of the answer, leave "
               "those positions out (their log-probability adds nothing)",
        "mean": "that is the mean per token; the log-probability of the answer is the SUM over "
                "its tokens (log of a product)",
        "raw": "those are raw scores: take log_softmax over the vocabulary first",
        "product": "that is the probability itself; return its log, the sum of the tokens' "
                   "log-probabilities",
    }
    for name, value in _log_p_variants(model, src, out).items():
        if _matches(got, value):
            return messages[name]
    return None

