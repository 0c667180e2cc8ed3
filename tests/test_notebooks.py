"""The conventions every lesson follows (the stored notebooks, read as JSON).

nbval re-executes the lessons and compares outputs; these tests check what
nbval cannot: the badges, the set-up and parameters cells, that the stored
outputs come from one clean top-to-bottom run, and that they are clean.
"""

import json
import re
from pathlib import Path

import pytest

import tfs

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def source(cell):
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def code_cells(notebook):
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def output_texts(cell):
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            yield output["name"], source({"source": output["text"]})
        elif output["output_type"] in ("execute_result", "display_data"):
            for kind, data in output["data"].items():
                if kind.startswith("text/"):
                    yield kind, source({"source": data})
        elif output["output_type"] == "error":
            yield "error", output.get("ename", "") + ": " + output.get("evalue", "")


def test_there_are_lessons():
    assert NOTEBOOKS, "no lesson found in notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_title_cell_has_badges_built_from_the_repository_constant(path):
    first = load(path)["cells"][0]
    assert first["cell_type"] == "markdown"
    text = source(first)
    assert text.startswith("# "), "the first cell starts with the lesson's title"
    assert tfs.badges(path.name) in text, "badges must be tfs.badges(<file name>)"
    assert "What you'll do" in text or "What you’ll do" in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_setup_and_parameters_cells(path):
    cells = code_cells(load(path))
    setup = source(cells[0])
    assert f'TFS = "{tfs.INSTALL_URL}"' in setup, "the set-up cell installs tfs from INSTALL_URL"
    assert "env.quiet()" in setup
    assert "print(env.about())" in setup, "the set-up cell says which tfs it uses"
    tagged = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1, "exactly one cell is tagged 'parameters'"
    holds_seed = re.search(r"^SEED = 42\b", source(tagged[0]), re.M)
    assert holds_seed, "the parameters cell holds SEED = 42"
    after = "".join(source(c) for c in cells[: cells.index(tagged[0]) + 3])
    for call in ("env.seed_everything(SEED)", "COLORS = use_course_style()", "print(\"device:\""):
        assert call in after, f"the set-up calls {call} right after the parameters"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_outputs_come_from_one_clean_run(path):
    cells = [cell for cell in code_cells(load(path)) if source(cell).strip()]
    counts = [cell.get("execution_count") for cell in cells]
    assert None not in counts, "every code cell is executed"
    assert counts == list(range(1, len(counts) + 1)), "cells ran once each, top to bottom"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_outputs_are_clean(path):
    for cell in code_cells(load(path)):
        for kind, text in output_texts(cell):
            where = f"cell starting {source(cell)[:60]!r}"
            assert kind not in ("stderr", "error"), f"{kind} output in {where}: {text[:200]}"
            assert not re.search(r"0x[0-9a-fA-F]{6,}", text), f"a memory address in {where}"
            assert "Warning" not in text, f"a warning in {where}"
            assert "\r" not in text and "it/s]" not in text, f"progress-bar residue in {where}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_excused_cells_say_why_and_are_really_excused(path):
    for cell in code_cells(load(path)):
        lines = [line.strip() for line in source(cell).splitlines()]
        tagged = "nbval-ignore-output" in cell["metadata"].get("tags", [])
        marked = [i for i, line in enumerate(lines) if "NBVAL_IGNORE_OUTPUT" in line]
        assert "NBVAL_SKIP" not in source(cell), "lessons are executed whole: no NBVAL_SKIP"
        assert "nbval-skip" not in cell["metadata"].get("tags", []), "no nbval-skip tags"
        if not marked and not tagged:
            continue
        assert marked, "a cell tagged nbval-ignore-output says why in a # NBVAL_IGNORE_OUTPUT line"
        exact = any(lines[i] == "# NBVAL_IGNORE_OUTPUT" for i in marked)
        # nbval honours only the exact comment, or the cell tag
        assert tagged or exact, f"nbval ignores {lines[marked[0]]!r}: tag the cell too"
        i = marked[0]
        reason = lines[i].split("NBVAL_IGNORE_OUTPUT", 1)[1].strip(" :-—")
        if not reason and i + 1 < len(lines) and lines[i + 1].startswith("#"):
            reason = lines[i + 1].lstrip("# ")
        assert len(reason) >= 10, f"say why the output is excused: {lines[i]!r}"
