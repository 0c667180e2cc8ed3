"""The exercises of lesson 03: the usual mistakes, each rejected with a message naming it.

The reference answers are those of solutions/lesson03.py; the wrong answers below are the
mistakes a learner makes most often, and each must be rejected with a message naming it.
"""

import importlib.util
from pathlib import Path

import pytest
import torch

import tfs.decoding
from tfs.exercises import lesson03 as check

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("solutions_lesson03",
                                               ROOT / "solutions" / "lesson03.py")
solutions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solutions)



# --- the parameters of GPT-2 ------------------------------------------------------------------


def test_gpt2_small_count_is_hugging_faces():
    """The oracle: transformers' own GPT-2, built on the meta device (no memory)."""
    transformers = pytest.importorskip("transformers")
    vocab, d, d_ff, layers, positions = check.GPT2_SMALL
    config = transformers.GPT2Config(vocab_size=vocab, n_embd=d, n_inner=d_ff, n_layer=layers,
                                     n_positions=positions, n_head=12)
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(config)
    counted = sum(p.numel() for p in model.parameters())  # the tied lm_head is counted once
    assert counted == solutions.decoder_only_parameters(*check.GPT2_SMALL) == 124_439_808


def parameters_with(untied=0, bias=0, positions=True, final_norm=True, biases=True,
                    cross=False, norms=2):
    def fn(vocab_size, d_model, d_ff, n_layers, max_len):
        attention = 4 * d_model * d_model + (4 * d_model if biases else 0)
        feed_forward = 2 * d_model * d_ff + ((d_ff + d_model) if biases else 0)
        layer = attention * (2 if cross else 1) + feed_forward + norms * 2 * d_model
        total = n_layers * layer + vocab_size * d_model * (1 + untied) + bias * vocab_size
        total += (max_len * d_model if positions else 0) + (2 * d_model if final_norm else 0)
        return total
    return fn


@pytest.mark.parametrize("answer, phrase", [
    (parameters_with(untied=1), "separate output layer: GPT-2 ties"),
    (parameters_with(untied=1, bias=1), "separate output layer with a bias"),
    (parameters_with(positions=False), "LEARNS its positional table"),
    (parameters_with(final_norm=False), "final LayerNorm is missing"),
    (parameters_with(biases=False), "biases are missing"),
    (parameters_with(cross=True, norms=3), "no cross-attention"),
    (parameters_with(norms=3), "three LayerNorms per layer"),
    (lambda *config: 1.5, "whole number"),
])
def test_decoder_only_parameters_mistakes(answer, phrase):
    verdict = check.decoder_only_parameters.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


# --- the bug clinic: the buggy loop repeats one token, the fixed one does not ----------------


def test_clinic_the_bug_shows_its_symptom_and_the_fix_removes_it():
    src = torch.tensor([[3, 9], [8, 4]])
    buggy = check.greedy_with_a_bug(check.CountingModel(), src, 5)
    fixed = solutions.clinic_repeats(check.CountingModel(), src, 5)
    assert check.repeat_share(buggy) == 1.0  # the symptom: one token over and over
    assert check.repeat_share(fixed) == 0.0
    assert fixed.tolist() == [[3, 4, 5, 6, 7], [8, 9, 10, 11, 12]]  # a b c d e, f g h i j
    verdict = check.clinic_repeats.verdict(check.greedy_with_a_bug)
    assert verdict.status == "wrong" and "still one token repeated" in verdict.message


@torch.no_grad()
def greedy_keeping_bos(model, src, n_tokens):
    out = torch.full((src.shape[0], 1), 1)
    memory = model.encode(src)
    for _ in range(n_tokens):
        scores = model.decode(out, memory, src)[:, -1]
        out = torch.cat([out, scores.argmax(-1, keepdim=True)], dim=1)
    return out


@torch.no_grad()
def greedy_last_token_only(model, src, n_tokens):
    out = torch.full((src.shape[0], 1), 1)
    memory = model.encode(src)
    for _ in range(n_tokens):
        scores = model.decode(out[:, -1:], memory, src)[:, -1]  # no cache: the past is lost
        out = torch.cat([out, scores.argmax(-1, keepdim=True)], dim=1)
    return out[:, 1:]


@pytest.mark.parametrize("answer, phrase", [
    (greedy_keeping_bos, "without the <bos>"),
    (greedy_last_token_only, "must read the whole prefix"),
    (lambda model, src, n: [[3] * n] * len(src), "as a tensor"),
])
def test_clinic_wrong_fixes(answer, phrase):
    verdict = check.clinic_repeats.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


# --- the log-probability of an answer ----------------------------------------------------------


def log_p_with(shift=True, skip_pad=True, reduce="sum", use_log_softmax=True, as_log=True):
    @torch.no_grad()
    def fn(model, src, out, bos_id):
        if shift:
            decoder_input = torch.cat([torch.full((len(out), 1), bos_id), out[:, :-1]], dim=1)
        else:
            decoder_input = out
        scores = model(src, decoder_input)
        log_p = scores.log_softmax(-1) if use_log_softmax else scores
        per_token = log_p.gather(-1, out[..., None]).squeeze(-1)
        real = out != model.pad_id if skip_pad else torch.ones_like(out, dtype=torch.bool)
        total = per_token.masked_fill(~real, 0.0).sum(1)
        if reduce == "mean":
            total = total / real.sum(1)
        return total if as_log else total.exp()
    return fn


@pytest.mark.parametrize("answer, phrase", [
    (log_p_with(shift=False), "feed <bos> followed by the answer"),
    (log_p_with(skip_pad=False), "<pad> after <eos> is counted"),
    (log_p_with(reduce="mean"), "the SUM over"),
    (log_p_with(use_log_softmax=False), "raw scores"),
    (log_p_with(as_log=False), "the probability itself"),
])
def test_sequence_log_probability_mistakes(answer, phrase):
    verdict = check.sequence_log_probability.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


# --- greedy decoding that stops at <eos> -----------------------------------------------------


def greedy_with(mask=True, pad_after=True, stop="all", keep_bos=False):
    @torch.no_grad()
    def fn(model, src, max_len):
        memory = model.encode(src)
        out = torch.full((src.shape[0], 1), 1)
        finished = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(max_len):
            scores = model.decode(out, memory, src)[:, -1]
            if mask:
                scores[:, [0, 1]] = float("-inf")
            next_token = scores.argmax(dim=-1)
            if pad_after:
                next_token = next_token.masked_fill(finished, 0)
            out = torch.cat([out, next_token[:, None]], dim=1)
            finished |= next_token == 2
            if (stop == "all" and finished.all()) or (stop == "any" and finished.any()):
                break
        return out if keep_bos else out[:, 1:]
    return fn


@pytest.mark.parametrize("answer, phrase", [
    (greedy_with(mask=False), "set their scores to -inf"),
    (greedy_with(pad_after=False), "after an answer's <eos> write <pad>"),
    (greedy_with(stop="any"), "EVERY answer of the batch"),
    (greedy_with(stop="never"), "so stop there"),
    (greedy_with(keep_bos=True), "without the <bos>"),
    (lambda model, src, max_len: [[3, 4]], "as a tensor"),
])
def test_greedy_until_eos_mistakes(answer, phrase):
    verdict = check.greedy_until_eos.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


def test_greedy_until_eos_reference_is_tfs_decoding():
    """The checker's own loop for stand-in models equals tfs.decoding.greedy on a real one."""
    model = check._small_model(seed=5)
    src = torch.randint(3, 13, (6, 7), generator=torch.Generator().manual_seed(4))
    want = tfs.decoding.greedy(model, src, check.BOS, check.EOS, max_len=9, use_cache=False)
    assert torch.equal(check._greedy_until_eos_reference(model, src, 9), want)
    assert torch.equal(solutions.greedy_until_eos(model, src, 9), want)
