"""The exercises of lesson 07: the usual mistakes, each rejected with a message naming it."""

import math

import torch

from tfs.exercises import lesson07 as check
from tfs.model import apply_rotary


def test_layer_norm_is_not_rms_norm():
    def layer_norm(x, weight, eps=1e-5):
        c = x - x.mean(-1, keepdim=True)
        return c / torch.sqrt(c.pow(2).mean(-1, keepdim=True) + eps) * weight

    verdict = check.rms_norm.verdict(layer_norm)
    assert verdict.status == "wrong" and "LayerNorm" in verdict.message


def test_rms_norm_without_weight_or_with_eps_outside():
    def unweighted(x, weight, eps=1e-5):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)

    verdict = check.rms_norm.verdict(unweighted)
    assert verdict.status == "wrong" and "weight" in verdict.message

    def eps_outside(x, weight, eps=1e-5):
        return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight

    verdict = check.rms_norm.verdict(eps_outside)
    assert verdict.status == "wrong" and "eps" in verdict.message


def test_rotate_adjacent_layout_and_wrong_direction_are_named():
    def adjacent(x, position, base=10_000.0):
        d = x.shape[-1]
        theta = base ** (-torch.arange(0, d, 2).float() / d)
        a, b = x[0::2], x[1::2]
        c, s = torch.cos(position * theta), torch.sin(position * theta)
        return torch.stack([a * c - b * s, a * s + b * c], -1).flatten()

    verdict = check.rotate.verdict(adjacent)
    assert verdict.status == "wrong" and "adjacent" in verdict.message

    def backwards(x, position, base=10_000.0):
        d = x.shape[-1]
        theta = base ** (-torch.arange(0, d, 2).float() / d)
        a, b = x[: d // 2], x[d // 2 :]
        c, s = torch.cos(position * theta), torch.sin(position * theta)
        return torch.cat([a * c + b * s, -a * s + b * c])

    verdict = check.rotate.verdict(backwards)
    assert verdict.status == "wrong" and "wrong way" in verdict.message


def test_repeat_kv_tiled_is_named():
    verdict = check.repeat_kv.verdict(lambda x, groups: x.repeat(1, groups, 1, 1))
    assert verdict.status == "wrong" and "tiled" in verdict.message


def test_clinic_bug_as_planted_and_keys_forgotten():
    def planted(q, k, v, cos, sin):
        q, v = apply_rotary(q, cos, sin), apply_rotary(v, cos, sin)
        return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1) @ v

    def keys_forgotten(q, k, v, cos, sin):
        q = apply_rotary(q, cos, sin)
        return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1) @ v

    verdict = check.clinic_rope_values.verdict(planted)
    assert verdict.status == "wrong" and "values" in verdict.message
    verdict = check.clinic_rope_values.verdict(keys_forgotten)
    assert verdict.status == "wrong" and "keys" in verdict.message
