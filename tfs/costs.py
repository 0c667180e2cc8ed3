"""Measuring what a block costs: floating-point operations, counted by PyTorch itself.

Lessons derive each block's FLOP formula by hand and check it against
`torch.utils.flop_counter.FlopCounterMode`, which counts the FLOPs of every
matrix product PyTorch actually runs (2 per multiply-add; element-wise
operations such as softmax, ReLU or LayerNorm are not counted).

Note: on the CPU, torch 2.13's counter does not count the fused kernel behind
`F.scaled_dot_product_attention` (it reports 0 for it); count the explicit
`q @ k.T` version when the attention product itself is what you measure.

`matmul_log` counts something FLOPs do not show: how many matrix products a function runs,
and the longest chain of them that must run one after another (lesson 01).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode


def count_flops(fn: Callable, *args, **kwargs) -> int:
    """FLOPs that PyTorch counts while running `fn(*args, **kwargs)`.

    Everything `fn` runs is counted: a forward pass, or a forward and a backward pass if `fn`
    calls `.backward()`.
    """
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


# --- the chain of matrix products -------------------------------------------------------------

MATMULS = frozenset({"mm", "addmm", "bmm", "matmul", "baddbmm", "addbmm"})


def _tensors_in(value) -> list[torch.Tensor]:
    """Every tensor inside a (nested) tuple, list or dict of arguments."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for item in value for t in _tensors_in(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors_in(item)]
    return []


class MatmulLog(TorchDispatchMode):
    """The matrix products run inside a `with MatmulLog() as log:` block, and their chain.

    Every tensor created inside the block is labelled with its depth, the length of the
    longest chain of products behind it: a product gets one more than the largest label
    among its inputs, any other operation passes the largest label on. `log.products` lists each
    product as (operator, input shapes, label); `log.chain` is the largest label, the
    longest chain of products that must run one after another. Products whose labels do
    not depend on each other could run at the same time.
    """

    def __init__(self):
        super().__init__()
        self.products: list[tuple[str, tuple[tuple[int, ...], ...], int]] = []
        self.chain = 0
        self._depth: dict[int, int] = {}  # id(tensor) -> label, for tensors made in the block
        self._alive: list[torch.Tensor] = []  # keeps labelled tensors (and their ids) alive

    @property
    def calls(self) -> int:
        """How many matrix products ran."""
        return len(self.products)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        inputs = _tensors_in((args, kwargs))
        depth = max((self._depth.get(id(t), 0) for t in inputs), default=0)
        name = func.overloadpacket.__name__
        if name in MATMULS:
            depth += 1  # this product waits for the products behind its inputs
            shapes = tuple(tuple(t.shape) for t in inputs if t.dim() >= 2)
            self.products.append((name, shapes, depth))
        for tensor in _tensors_in(result):
            self._depth[id(tensor)] = depth
            self._alive.append(tensor)
        self.chain = max(self.chain, depth)
        return result


def matmul_log(fn: Callable, *args, **kwargs) -> MatmulLog:
    """Run `fn(*args, **kwargs)` without gradients and return its `MatmulLog`."""
    if not callable(fn):
        raise TypeError(f"matmul_log() needs a function or module to run, got {type(fn).__name__}")
    with torch.no_grad(), MatmulLog() as log:
        fn(*args, **kwargs)
    log._depth.clear()
    log._alive.clear()
    return log
