"""The exercises of lesson 07: the usual mistakes, each rejected with a message naming it."""

import math

import torch

from tfs.exercises import lesson07 as check
from tfs.model import MixtureOfExperts, apply_rotary


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


def test_pool_kv_heads_tiled_groups_and_first_head_are_named():
    def tiled(weight, n_heads, n_kv_heads):
        d_k = weight.shape[0] // n_heads
        heads = weight.unflatten(0, (n_heads // n_kv_heads, n_kv_heads, d_k))
        return heads.mean(dim=0).flatten(0, 1)

    verdict = check.pool_kv_heads.verdict(tiled)
    assert verdict.status == "wrong" and "consecutive" in verdict.message

    def first_head(weight, n_heads, n_kv_heads):
        d_k = weight.shape[0] // n_heads
        heads = weight.unflatten(0, (n_kv_heads, n_heads // n_kv_heads, d_k))
        return heads[:, 0].flatten(0, 1)

    verdict = check.pool_kv_heads.verdict(first_head)
    assert verdict.status == "wrong" and "first head" in verdict.message


def test_balance_loss_share_of_tokens_and_missing_factor_are_named():
    def shares_of_tokens(probs, chosen):
        share = torch.nn.functional.one_hot(chosen, probs.shape[-1]).float().sum(1).mean(0)
        return probs.shape[-1] * (share * probs.mean(0)).sum()

    verdict = check.balance_loss.verdict(shares_of_tokens)
    assert verdict.status == "wrong" and "routing slots" in verdict.message

    def no_factor(probs, chosen):
        share = torch.nn.functional.one_hot(chosen, probs.shape[-1]).float().mean((0, 1))
        return (share * probs.mean(0)).sum()

    verdict = check.balance_loss.verdict(no_factor)
    assert verdict.status == "wrong" and "number of experts" in verdict.message


def test_balance_loss_checker_agrees_with_the_layer_on_its_own_router():
    torch.manual_seed(0)
    moe = MixtureOfExperts(8, 16, n_experts=4, top_k=2)
    x = torch.randn(2, 7, 8)
    with torch.no_grad():
        moe(x)
        probs = moe.router(x.reshape(-1, 8)).softmax(-1)
    share = torch.bincount(probs.topk(2, -1).indices.flatten(), minlength=4) / (14 * 2)
    assert torch.isclose(moe.balance_loss, 4 * (share * probs.mean(0)).sum())


def test_clinic_bug_as_planted_and_keys_forgotten():
    def planted(q, k, v, cos, sin):
        q, v = apply_rotary(q, cos, sin), apply_rotary(v, cos, sin)
        return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1) @ v

    def keys_forgotten(q, k, v, cos, sin):
        q = apply_rotary(q, cos, sin)
        return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1) @ v

    verdict = check.clinic_rope.verdict(planted)
    assert verdict.status == "wrong" and "values" in verdict.message
    verdict = check.clinic_rope.verdict(keys_forgotten)
    assert verdict.status == "wrong" and "keys" in verdict.message
