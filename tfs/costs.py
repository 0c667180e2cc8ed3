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


def cost_row(block: str, parameters: str, flops: str, order: str, sizes=None, make=None,
             formula=None) -> dict:
    """One row of a lesson's cost table: {column: value}.

    With `sizes` ({name: dict of sizes}), `make` (builds the block and its inputs from one
    size, returns (fn, args)) and `formula` (the FLOPs expected at one size): PyTorch's count
    of `fn(*args)` at each size is printed beside the formula's value, and both are kept in
    the row, as "counted, NAME" and "formula, NAME", for the caller to assert they agree.
    Without them (a block with no matrix product to count) the row has no counts.
    """
    if not (sizes is None) == (make is None) == (formula is None):
        raise ValueError("cost_row() needs sizes, make and formula together, or none of them")
    row = {"block": block, "parameters": parameters, "FLOPs (formula)": flops}
    for name, size in (sizes or {}).items():
        fn, args = make(**size)
        counted, expected = count_flops(fn, *args), int(formula(**size))
        row[f"counted, {name}"], row[f"formula, {name}"] = counted, expected
        print(f"{block}, {name}: counted {counted:,} FLOPs, formula {flops} = {expected:,}")
    row["grows as"] = f"O({order})"
    return row
