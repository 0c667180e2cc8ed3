"""The machinery every lesson's checkers share (see `tfs.exercises`).

A checker is a function decorated with `@exercise`. It receives the reader's answer (a
function, a module or a value), tries it on inputs of its own, raises `Mistake` with a
sentence a learner understands when something is wrong, and returns a short summary of
what passed. The decorator turns that into the one printed verdict.
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass

import numpy as np
import torch

import tfs

PASSED, WRONG, NOT_ATTEMPTED = "passed", "wrong", "not attempted"
_SYMBOL = {PASSED: "✅", WRONG: "❌", NOT_ATTEMPTED: "⏳"}
_NOT_ATTEMPTED_TEXT = (
    "not attempted yet: write your code in the cell above and run this cell again"
)


class Mistake(Exception):
    """Raised by a checker: the answer is wrong, and the message says how, in plain words."""


class NotAttempted(Exception):
    """Raised when the reader's code is still the stub (it raised NotImplementedError)."""


@dataclass(frozen=True)
class Verdict:
    """What a checker concluded: `status` is "passed", "wrong" or "not attempted"."""

    name: str
    status: str
    message: str

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def line(self) -> str:
        """The one line a lesson prints."""
        return f"{_SYMBOL[self.status]} {self.name}: {self.message}"


def unanswered(value) -> bool:
    """True for the stubs of a value exercise: `...` or None."""
    return value is Ellipsis or value is None


class _RandomStateKept:
    """Runs a block from seed 0 with Python's, NumPy's and torch's CPU random states restored
    after it: a checker draws the same inputs every time and leaves the lesson's draws alone."""

    def __enter__(self):
        self._python = random.getstate()
        self._numpy = np.random.get_state()
        self._torch = torch.random.get_rng_state()
        random.seed(0)
        np.random.seed(0)
        torch.random.default_generator.manual_seed(0)  # the CPU generator only
        return self

    def __exit__(self, *exc):
        random.setstate(self._python)
        np.random.set_state(self._numpy)
        torch.random.set_rng_state(self._torch)
        return False


class Exercise:
    """A checker: call it with your answer to print a verdict, or `.verdict(answer)`."""

    def __init__(self, check, name: str | None = None):
        functools.update_wrapper(self, check)
        self._check = check
        self.name = name or check.__name__

    def verdict(self, answer, *args, **kwargs) -> Verdict:
        """The verdict on `answer`, without printing it."""
        if unanswered(answer):
            return Verdict(self.name, NOT_ATTEMPTED, _NOT_ATTEMPTED_TEXT)
        with _RandomStateKept():
            try:
                summary = self._check(answer, *args, **kwargs)
            except (NotAttempted, NotImplementedError):
                return Verdict(self.name, NOT_ATTEMPTED, _NOT_ATTEMPTED_TEXT)
            except Mistake as mistake:
                return Verdict(self.name, WRONG, str(mistake))
            except Exception as error:  # the answer broke the checker: say so, no traceback
                return Verdict(
                    self.name,
                    WRONG,
                    f"checking your answer failed ({type(error).__name__}: {_first_line(error)});"
                    " does it return what the task asks for?",
                )
        return Verdict(self.name, PASSED, f"passed: {summary}" if summary else "passed")

    def __call__(self, answer, *args, **kwargs) -> None:
        print(self.verdict(answer, *args, **kwargs).line)

    def __repr__(self) -> str:
        return f"<exercise {self.name!r}: call it with your answer>"


def exercise(check=None, *, name: str | None = None):
    """Decorator: `@exercise` or `@exercise(name="...")` makes a checker (an `Exercise`)."""
    if check is None:
        return lambda real_check: Exercise(real_check, name)
    return Exercise(check, name)


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else "no message"


def call(fn, *args, what: str = "the checker's input", **kwargs):
    """Call the reader's code; its stub means "not attempted", its errors become a Mistake."""
    if not callable(fn):
        raise Mistake(f"expected a function (or class), got a {type(fn).__name__}")
    try:
        return fn(*args, **kwargs)
    except (NotImplementedError, NotAttempted):
        raise NotAttempted() from None
    except Mistake:
        raise
    except Exception as error:
        raise Mistake(
            f"your code raised {type(error).__name__}: {_first_line(error)} (called with {what})"
        ) from None


def _as_tensor(value, what: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", torch.float64)
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.asarray(value, dtype=np.float64))
    if isinstance(value, (bool, np.bool_)):
        raise Mistake(f"{what} should be a number, not {value!r}")
    if isinstance(value, (int, float, np.integer, np.floating)):
        return torch.tensor(float(value), dtype=torch.float64)
    kind = type(value).__name__
    hint = " (did you return several things? return just this one)" if isinstance(
        value, (tuple, list)
    ) else ""
    raise Mistake(f"{what} should be a tensor or a number; yours is a {kind}{hint}")


def a_tensor(value, what: str, shape=None, where: str = "", hint: str = "") -> torch.Tensor:
    """The reader's value if it is a tensor (of `shape`, when given), else a Mistake that says
    what it should be, on which of the checker's inputs (`where`) and how to fix it (`hint`)."""
    at = f" ({where})" if where else ""
    if not isinstance(value, torch.Tensor):
        raise Mistake(f"return {what} as a tensor; yours is a {type(value).__name__}{at}")
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise Mistake(
            f"{what} should have shape {tuple(shape)}; yours has {tuple(value.shape)}{at}"
            + (f": {hint}" if hint else "")
        )
    return value


def same_shape(got, shape, what: str) -> None:
    """Mistake unless `got` (a tensor or array) has exactly `shape`."""
    got = _as_tensor(got, what)
    want = tuple(shape)
    if tuple(got.shape) != want:
        raise Mistake(f"{what} should have shape {want}; yours has {tuple(got.shape)}")


def close(got, want, what: str, atol: float = 1e-5, rtol: float = 1e-4, hint: str | None = None):
    """Mistake unless `got` equals `want` within tolerance (type, shape, NaN and value checked)."""
    got_t = _as_tensor(got, what)
    want_t = _as_tensor(want, "the reference")
    if tuple(got_t.shape) != tuple(want_t.shape):
        raise Mistake(
            f"{what} should have shape {tuple(want_t.shape)}; yours has {tuple(got_t.shape)}"
            + (f": {hint}" if hint else "")
        )
    if torch.isnan(got_t).any() and not torch.isnan(want_t).any():
        raise Mistake(f"{what} contains NaN" + (f": {hint}" if hint else ""))
    if not torch.allclose(got_t, want_t, atol=atol, rtol=rtol, equal_nan=True):
        finite = torch.isfinite(got_t) & torch.isfinite(want_t)
        gap = (got_t - want_t).abs()[finite]
        largest = f"{gap.max().item():.3g}" if gap.numel() else "inf"
        raise Mistake(
            f"{what} differs from the reference (largest difference {largest})"
            + (f": {hint}" if hint else "")
        )


def matches(got, want, atol: float = 1e-4) -> bool:
    """True if `close(got, want)` would pass: for naming a mistake by the answer it equals."""
    try:
        close(got, want, "x", atol=atol)
    except Mistake:
        return False
    return True


def number(value, what: str) -> float:
    """The reader's value as a float; Mistake if it is not a finite number."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise Mistake(f"{what} should be a number; yours is a {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise Mistake(f"{what} should be a finite number; yours is {value}")
    return value


def solution_url(lesson: str) -> str:
    """Where the reference solutions of lesson `lesson` ("00".."05") live on GitHub."""
    if not (isinstance(lesson, str) and len(lesson) == 2 and lesson.isdigit()):
        raise ValueError(f"expected a lesson number like '02', got {lesson!r}")
    return f"https://github.com/{tfs.REPO}/blob/{tfs.BRANCH}/solutions/lesson{lesson}.py"
