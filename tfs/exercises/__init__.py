"""Exercises checked on the spot: one module of checkers per lesson.

In a lesson::

    from tfs.exercises import lesson02 as check

    def my_attention(q, k, v, mask=None):
        raise NotImplementedError  # your code here

    check.attention(my_attention)   # prints one verdict: passed, what is wrong, or not attempted

Each checker runs the reader's answer on inputs of its own (edge cases included) against
the reference and prints one line. It never prints a traceback and never changes the
lesson's random state. The reference solutions live in `solutions/lessonNN.py` of the
repository (`solution_url`), for a reader who is stuck.
"""

from tfs.exercises._core import (
    Exercise,
    Mistake,
    NotAttempted,
    Verdict,
    call,
    close,
    exercise,
    number,
    same_shape,
    solution_url,
    unanswered,
)

__all__ = [
    "Exercise",
    "Mistake",
    "NotAttempted",
    "Verdict",
    "call",
    "close",
    "exercise",
    "number",
    "same_shape",
    "solution_url",
    "unanswered",
]
