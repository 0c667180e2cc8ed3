"""The exercises of lesson 02: the usual mistakes, each rejected with a message naming it.

The reference answers are those of solutions/lesson02.py; the wrong answers below are the
mistakes a learner makes most often, and each must be rejected with a message naming it.
"""

import importlib.util
import math
from pathlib import Path

import pytest
import torch

from tfs.exercises import lesson02 as check

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("solutions_lesson02",
                                               ROOT / "solutions" / "lesson02.py")
solutions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solutions)


def attention_with(divisor, softmax_dim=-1, mask_before=True, use_mask=True, values=True):
    """Scaled dot-product attention with one knob per usual mistake."""

    def fn(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / divisor(q)
        if mask is not None and use_mask and mask_before:
            scores = scores + mask
        weights = scores.softmax(dim=softmax_dim)
        if mask is not None and use_mask and not mask_before:
            weights = weights + mask
        return weights @ (v if values else k), weights

    return fn


def sqrt_d_k(q):
    return math.sqrt(q.shape[-1])


# --- the usual mistakes, each named -------------------------------------------------------


@pytest.mark.parametrize("answer, phrase", [
    (1 / 3, "WITH the ×√d_model"),
    (0.5, "both parts are the same size"),
    (0.9, "Squared lengths add"),
    (1.5, "between 0 and 1"),
])
def test_position_share_mistakes(answer, phrase):
    verdict = check.position_share.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message


@pytest.mark.parametrize("answer, phrase", [
    (attention_with(lambda q: 1.0), "with no division"),
    (attention_with(lambda q: q.shape[-1]), "with a division by d_k"),
    (attention_with(sqrt_d_k, softmax_dim=-2), "softmax over the last dimension"),
    (attention_with(sqrt_d_k, mask_before=False), "BEFORE the softmax"),
    (attention_with(sqrt_d_k, use_mask=False), "the keys the mask hides get weight"),
    (attention_with(sqrt_d_k, values=False), "weights times the VALUES"),
    (lambda q, k, v, mask=None: attention_with(sqrt_d_k)(q, k, v, mask)[0], "return two things"),
])
def test_attention_mistakes(answer, phrase):
    verdict = check.attention.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


def test_attention_error_in_the_answer_is_a_sentence():
    def transposes_everything(q, k, v, mask=None):
        return attention_with(sqrt_d_k)(q, k.permute(*range(k.dim() - 1, -1, -1)), v, mask)

    verdict = check.attention.verdict(transposes_everything)
    assert verdict.status == "wrong" and verdict.message.startswith("your code raised")


# --- the bug clinic: the buggy version shows the symptom, the fixed one does not -------------

buggy_attention = attention_with(lambda q: 1 / math.sqrt(q.shape[-1]))  # the bug: / (1/√d_k)


@pytest.mark.parametrize("d_k, batch", [(512, 2), (16, 2), (16, 128), (64, 1)])
def test_clinic_the_bug_shows_its_symptom_and_the_fix_removes_it(d_k, batch):
    # at any batch size and head width: one key takes nearly everything, unless fixed
    assert check.saturation(buggy_attention, d_k=d_k, batch=batch) > 0.8
    assert check.saturation(solutions.clinic_scaling, d_k=d_k, batch=batch) < 0.35
    verdict = check.clinic_scaling.verdict(buggy_attention)
    assert verdict.status == "wrong" and "still saturated" in verdict.message


def test_clinic_the_symptom_follows_the_seed_and_not_the_lesson_state():
    tops = {seed: check.saturation(buggy_attention, d_k=16, seed=seed) for seed in (0, 1)}
    assert tops[0] != tops[1]  # a different draw...
    assert min(tops.values()) > 0.8  # ...the same symptom
    with pytest.raises(TypeError, match="seed"):
        check.saturation(buggy_attention, seed="4")


@pytest.mark.parametrize("answer, phrase", [
    (attention_with(lambda q: q.shape[-1]), "too flat"),
    (attention_with(lambda q: math.sqrt(q.shape[-2])), "still saturated"),  # the wrong dimension
])
def test_clinic_wrong_fixes(answer, phrase):
    verdict = check.clinic_scaling.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


# --- the decoder's mask -----------------------------------------------------------------------


def causal(ids):
    return torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool).tril()


@pytest.mark.parametrize("answer, phrase", [
    (lambda ids, pad: causal(ids).T[None] & (ids != pad)[:, None, :], "comes after it"),
    (lambda ids, pad: causal(ids).expand(ids.shape[0], -1, -1).clone(), "a <pad>"),
    (lambda ids, pad: causal(ids)[None] & (ids != 0)[:, None, :], "a <pad> (id 3)"),
    (lambda ids, pad: causal(ids)[None] & (ids != pad)[:, :, None], "not the rows"),
    (lambda ids, pad: causal(ids).tril(-1)[None] & (ids != pad)[:, None, :], "look at itself"),
    (lambda ids, pad: ~solutions.decoder_mask(ids, pad), "inverted"),
    (lambda ids, pad: solutions.decoder_mask(ids, pad).float(), "boolean"),
    (lambda ids, pad: causal(ids) & (ids[0] != pad), "should have shape"),
])
def test_decoder_mask_mistakes(answer, phrase):
    verdict = check.decoder_mask.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


# --- merging the heads ------------------------------------------------------------------------


@pytest.mark.parametrize("answer, phrase", [
    (lambda h: h.reshape(h.shape[0], h.shape[2], -1), "transpose(1, 2), then reshape"),
    (lambda h: h.transpose(1, 2).view(h.shape[0], h.shape[2], -1), "view size is not compatible"),
    (lambda h: h.transpose(2, 3).reshape(h.shape[0], h.shape[2], -1), "differs from the reference"),
    (lambda h: h.transpose(1, 2), "should have shape"),
])
def test_merge_heads_mistakes(answer, phrase):
    verdict = check.merge_heads.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


# --- a pre-LN layer ---------------------------------------------------------------------------


def post_ln(x, attention, feed_forward, norm1, norm2, mask=None):
    x = norm1(x + attention(x, x, mask))
    return norm2(x + feed_forward(x))


def normalised_stream(x, attention, feed_forward, norm1, norm2, mask=None):
    x = norm1(x)
    x = x + attention(x, x, mask)
    x = norm2(x)
    return x + feed_forward(x)


def no_residual(x, attention, feed_forward, norm1, norm2, mask=None):
    h = norm1(x)
    x = attention(h, h, mask)
    return feed_forward(norm2(x))


@pytest.mark.parametrize("answer, phrase", [
    (post_ln, "that is post-LN"),
    (normalised_stream, "your stream itself is normalised"),
    (lambda x, a, f, n1, n2, mask=None: solutions.pre_ln_layer(x, a, f, n1, n2), "mask is ignored"),
    (no_residual, "x + self_attention(norm1(x)"),
])
def test_pre_ln_layer_mistakes(answer, phrase):
    verdict = check.pre_ln_layer.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


