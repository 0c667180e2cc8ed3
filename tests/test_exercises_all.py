"""What every exercise of every lesson must do, checked once for all of them (issue 12).

For each checker in `tfs.exercises.lessonNN`: the reference answer of the same name in
`solutions/lessonNN.py` passes, the reader's stub is "not attempted", the module links its
solutions, and the lesson calls the checker with its stub unattempted, so the stored
output is the "not attempted" line. The usual wrong answers, each rejected with the
message that names it, are tested lesson by lesson in tests/test_exercises_NN.py.
"""

import importlib
import importlib.util
import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from tfs.exercises import Exercise

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted(p.stem[-2:] for p in (ROOT / "tfs" / "exercises").glob("lesson[0-9][0-9].py"))


def solutions_of(lesson):
    spec = importlib.util.spec_from_file_location(
        f"solutions_lesson{lesson}", ROOT / "solutions" / f"lesson{lesson}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def checkers_of(lesson):
    module = importlib.import_module(f"tfs.exercises.lesson{lesson}")
    return {name: value for name, value in vars(module).items() if isinstance(value, Exercise)}


EXERCISES = [(lesson, name) for lesson in LESSONS for name in checkers_of(lesson)]


def stub(*args, **kwargs):
    raise NotImplementedError


def test_the_course_has_enough_exercises_and_clinics():
    clinics = [name for _, name in EXERCISES if name.startswith("clinic_")]
    assert len(EXERCISES) - len(clinics) >= 18
    assert len(clinics) >= 5
    for lesson in LESSONS:
        names = checkers_of(lesson)
        assert sum(not n.startswith("clinic_") for n in names) >= 3, lesson
        assert any(n.startswith("clinic_") for n in names), lesson


@pytest.mark.parametrize(("lesson", "name"), EXERCISES)
def test_the_solution_passes(lesson, name):
    verdict = checkers_of(lesson)[name].verdict(getattr(solutions_of(lesson), name))
    assert verdict.status == "passed", verdict.message


@pytest.mark.parametrize(("lesson", "name"), EXERCISES)
def test_a_stub_is_not_attempted(lesson, name):
    checker = checkers_of(lesson)[name]
    value_exercise = not callable(getattr(solutions_of(lesson), name))
    for unattempted in (...,) if value_exercise else (stub, ...):
        verdict = checker.verdict(unattempted)
        assert verdict.status == "not attempted", verdict.message
        assert "not attempted yet" in verdict.line


@pytest.mark.parametrize(("lesson", "name"), EXERCISES)
def test_a_checker_leaves_the_lessons_random_state_alone(lesson, name):
    torch.manual_seed(11)
    np.random.seed(11)
    random.seed(11)
    expected = torch.rand(2), np.random.rand(), random.random()
    torch.manual_seed(11)
    np.random.seed(11)
    random.seed(11)
    checkers_of(lesson)[name].verdict(getattr(solutions_of(lesson), name))
    assert torch.equal(torch.rand(2), expected[0])
    assert (np.random.rand(), random.random()) == expected[1:]


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_module_links_its_solutions(lesson):
    module = importlib.import_module(f"tfs.exercises.lesson{lesson}")
    assert module.SOLUTIONS.endswith(f"/solutions/lesson{lesson}.py")
    assert (ROOT / "solutions" / f"lesson{lesson}.py").is_file()


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_lesson_calls_every_checker_and_stores_it_unattempted(lesson):
    (path,) = (ROOT / "notebooks").glob(f"{lesson}_*.ipynb")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    markdown = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert f"solutions/lesson{lesson}.py" in markdown, "the lesson links its solutions"
    for name in checkers_of(lesson):
        calls = [
            c for c in cells
            if c["cell_type"] == "code" and f"check.{name}(" in "".join(c["source"])
        ]
        assert calls, f"lesson {lesson} never calls check.{name}"
        printed = "".join(
            "".join(out.get("text", "")) for c in calls for out in c.get("outputs", [])
        )
        assert f"⏳ {name}: not attempted yet" in printed, f"check.{name}'s stored output"
