"""The shared checker machinery of tfs.exercises: verdicts, stubs, errors, random state."""

import math
import random

import numpy as np
import pytest
import torch

from tfs.exercises import (
    Mistake,
    Verdict,
    call,
    close,
    exercise,
    number,
    same_shape,
    solution_url,
    unanswered,
)


@exercise
def softmax(fn):
    x = torch.randn(3, 4)
    got = call(fn, x, what="a (3, 4) tensor")
    close(got, torch.softmax(x, dim=-1), "your softmax", hint="softmax over the last dimension?")
    return "matches torch.softmax"


@exercise(name="kv cache size")
def cache_gib(value):
    if abs(number(value, "your size") - 2.0) > 0.01:
        raise Mistake("that is not 2 GiB")
    return "2 GiB"


def stub(x):
    raise NotImplementedError


def test_right_answer_passes_and_prints_one_line(capsys):
    assert softmax.verdict(lambda x: torch.softmax(x, -1)).passed
    softmax(lambda x: torch.softmax(x, -1))
    out = capsys.readouterr().out
    assert out == "✅ softmax: passed: matches torch.softmax\n"


def test_wrong_answer_names_the_mistake():
    verdict = softmax.verdict(lambda x: torch.softmax(x, 0))
    assert verdict.status == "wrong"
    assert "over the last dimension" in verdict.message
    assert "largest difference" in verdict.message


@pytest.mark.parametrize("answer", [stub, ..., None])
def test_stubs_are_not_attempted(answer):
    assert softmax.verdict(answer).status == "not attempted"
    assert cache_gib.verdict(...).status == "not attempted"


def test_errors_in_the_answer_become_a_sentence_not_a_traceback():
    verdict = softmax.verdict(lambda x: x @ torch.ones(5, 5))
    assert verdict.status == "wrong"
    assert verdict.message.startswith("your code raised RuntimeError")
    assert "a (3, 4) tensor" in verdict.message
    assert "Traceback" not in verdict.message


def test_a_tuple_instead_of_a_tensor_is_explained():
    verdict = softmax.verdict(lambda x: (torch.softmax(x, -1), None))
    assert "yours is a tuple" in verdict.message


def test_an_answer_that_breaks_the_checker_is_reported():
    @exercise
    def shape_of(fn):
        return f"shape {call(fn).shape}"

    verdict = shape_of.verdict(lambda: 3)
    assert verdict.status == "wrong" and "AttributeError" in verdict.message


def test_not_a_function():
    assert "expected a function" in softmax.verdict(42).message


def test_value_exercises():
    assert cache_gib.verdict(2.0).passed
    assert cache_gib.verdict(torch.tensor(2.0)).passed
    assert "not 2 GiB" in cache_gib.verdict(3).message
    assert "should be a number" in cache_gib.verdict("2").message
    assert "finite" in cache_gib.verdict(math.inf).message
    assert cache_gib.verdict(2.0).line.startswith("✅ kv cache size")


def test_checkers_keep_the_lessons_random_state_and_draw_their_own_inputs():
    torch.manual_seed(123)
    np.random.seed(123)
    random.seed(123)
    expected = (torch.rand(1).item(), np.random.rand(), random.random())
    torch.manual_seed(123)
    np.random.seed(123)
    random.seed(123)
    seen = []

    @exercise
    def draws(fn):
        seen.append(torch.rand(1).item())
        np.random.rand()
        random.random()
        return "drew"

    draws(lambda: None)
    draws(lambda: None)
    assert (torch.rand(1).item(), np.random.rand(), random.random()) == expected
    assert seen[0] == seen[1]  # the same inputs every time


def test_helpers():
    same_shape(torch.zeros(2, 3), (2, 3), "x")
    with pytest.raises(Mistake, match=r"should have shape \(2, 3\); yours has \(3, 2\)"):
        same_shape(torch.zeros(3, 2), (2, 3), "x")
    with pytest.raises(Mistake, match="contains NaN"):
        close(torch.tensor([float("nan")]), torch.tensor([0.0]), "x")
    close(np.ones(3), torch.ones(3), "x")
    with pytest.raises(Mistake, match="should be a number"):
        close(True, 1.0, "x")
    assert unanswered(...) and unanswered(None) and not unanswered(0)
    assert solution_url("02").endswith("/solutions/lesson02.py")
    with pytest.raises(ValueError, match="lesson number"):
        solution_url("2")
    assert isinstance(softmax.verdict(stub), Verdict)


def test_a_tensor_names_the_type_the_shape_the_input_and_the_fix():
    import torch

    from tfs.exercises._core import Mistake, a_tensor

    x = torch.zeros(2, 3)
    assert a_tensor(x, "your mask", shape=(2, 3)) is x
    with pytest.raises(Mistake, match=r"return your mask as a tensor; yours is a list \(B = 2\)"):
        a_tensor([[0, 1]], "your mask", where="B = 2")
    with pytest.raises(Mistake, match=r"should have shape \(3, 2\); yours has \(2, 3\) \(B = 2\): "
                                      r"transpose"):
        a_tensor(x, "your mask", shape=(3, 2), where="B = 2", hint="transpose")
