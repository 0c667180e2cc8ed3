"""Measuring what a block costs: floating-point operations, counted by PyTorch itself.

Lessons derive each block's FLOP formula by hand and check it against
`torch.utils.flop_counter.FlopCounterMode`, which counts the FLOPs of every
matrix product PyTorch actually runs (2 per multiply-add; element-wise
operations such as softmax, ReLU or LayerNorm are not counted).

Note: on the CPU, torch 2.13's counter does not count the fused kernel behind
`F.scaled_dot_product_attention` (it reports 0 for it); count the explicit
`q @ k.T` version when the attention product itself is what you measure.
"""

from __future__ import annotations

from collections.abc import Callable

from torch.utils.flop_counter import FlopCounterMode


def count_flops(fn: Callable, *args, **kwargs) -> int:
    """FLOPs that PyTorch counts while running `fn(*args, **kwargs)` (forward only)."""
    if not callable(fn):
        raise TypeError(f"count_flops() needs a function or module to run, got {type(fn).__name__}")
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return int(counter.get_total_flops())


def flops_by_operator(fn: Callable, *args, **kwargs) -> dict[str, int]:
    """Like `count_flops`, split by operator: {"mm": ..., "bmm": ..., ...}."""
    if not callable(fn):
        raise TypeError(f"flops_by_operator() needs a function or module, got {type(fn).__name__}")
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    totals = counter.get_flop_counts().get("Global", {})
    return {str(op).removeprefix("aten."): int(n) for op, n in totals.items()}
