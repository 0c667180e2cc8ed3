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


# what a lesson calls when it draws random numbers (and so needs SEED and its parameters cell)
RANDOM_DRAWS = (r"\bSEED\b|seed_everything|torch\.(?:rand\w*|manual_seed|multinomial|normal)\b"
                r"|np\.random|\brandom\.|nn\.Dropout|\.train\(\)|train_steps")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_setup_and_parameters_cells(path):
    cells = code_cells(load(path))
    setup = source(cells[0])
    assert f'TFS = "{tfs.INSTALL_URL}"' in setup, "the set-up cell installs tfs from INSTALL_URL"
    assert "env.quiet()" in setup
    assert "print(env.about())" in setup, "the set-up cell says which tfs it uses"
    tagged = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
    if not tagged:  # a lesson that draws no random numbers has no seed to set
        everything = "".join(source(c) for c in cells)
        draws = re.search(RANDOM_DRAWS, everything)
        assert not draws, f"a lesson without a 'parameters' cell draws {draws and draws[0]!r}"
        assert "COLORS = use_course_style()" in "".join(source(c) for c in cells[:2])
        return
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


def split_streams(cell):
    """Consecutive outputs of one stream: Jupyter shows them as one, a dump as several."""
    outputs = cell.get("outputs", [])
    return sum(a["output_type"] == b["output_type"] == "stream" and a["name"] == b["name"]
               for a, b in zip(outputs, outputs[1:], strict=False))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_streams_are_joined(path):
    for cell in code_cells(load(path)):
        assert split_streams(cell) == 0, (
            f"split stream outputs in cell starting {source(cell)[:60]!r}: "
            "re-execute with scripts/execute_notebooks.py, which joins them")


def test_the_execute_script_joins_split_streams():
    import importlib.util

    import nbformat

    spec = importlib.util.spec_from_file_location(
        "execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    stream = nbformat.v4.new_output
    cell = nbformat.v4.new_code_cell(outputs=[
        stream("stream", name="stdout", text="a\n"), stream("stream", name="stdout", text="b\n"),
        stream("display_data", data={"text/plain": "x"}),
        stream("stream", name="stdout", text="c\n"), stream("stream", name="stderr", text="d\n")])
    assert split_streams(cell) == 1
    joined = script.join_streams(nbformat.v4.new_notebook(cells=[cell])).cells[0]
    assert [o.get("text") for o in joined.outputs] == ["a\nb\n", None, "c\n", "d\n"]
    assert split_streams(joined) == 0


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_excused_cells_say_why_in_their_metadata(path):
    """nbval honours the cell tag `nbval-ignore-output`; the reason sits beside it in the
    cell's metadata ("excused"), where the learner does not read about the test harness."""
    for cell in code_cells(load(path)):
        where = f"cell starting {source(cell)[:60]!r}"
        assert "NBVAL" not in source(cell), (
            f"{where}: no NBVAL comment in what the learner reads; tag the cell "
            "'nbval-ignore-output' and put the reason in its metadata field 'excused'"
        )
        tags = cell["metadata"].get("tags", [])
        assert "nbval-skip" not in tags, "lessons are executed whole: no nbval-skip tags"
        reason = cell["metadata"].get("excused")
        if "nbval-ignore-output" not in tags:
            assert reason is None, f"{where}: 'excused' without the nbval-ignore-output tag"
            continue
        assert isinstance(reason, str) and len(reason) >= 10, (
            f"{where}: an excused cell says why in its metadata field 'excused' "
            "(e.g. 'wall times differ between machines')"
        )


# ---------------------------------------------------------------------------------------
# What the learner reads: no talk about how the course is made, numbers instead of bare
# booleans, and no assert that cannot fail. Each check is tried on a planted example below.

#: Words that belong to the course's maintenance, not to the lesson (case-insensitive).
PROCESS_TALK = (
    r"\bthe series\b", r"\bissues?\b", r"closing note", r"\bNBVAL", r"\bnbval\b",
    r"\bmake (course|test|lab|execute|latest|colab|nbval|unit)\b", r"`make\b",
    r"stored outputs?", r"\bheadless\b", r"\bour runs?\b", r"while it was written",
    r"\bpapermill\b", r"HF_HUB_OFFLINE", r"TFS_QUIET", r"goals? table", r"\bCI\b",
    r"an earlier (version|draft) of (the|this) (corpus|lesson)", r"\bthe cell's tag\b",
)
#: Calls whose result is a bare True/False.
BOOLEAN_CALLS = {"allclose", "equal", "isclose", "array_equal", "all", "any", "bool"}


def _comments(code):
    """The comments of a code cell (tokenize's COMMENT tokens; a rough split for magics)."""
    import io
    import tokenize

    try:
        tokens = tokenize.generate_tokens(io.StringIO(code).readline)
        return [tok.string for tok in tokens if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [line[line.index("#"):] for line in code.splitlines() if "#" in line]


def learner_text(notebook):
    """(cell index, text) for everything a learner reads: markdown, code comments, outputs."""
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "markdown":
            yield index, source(cell)
        elif cell["cell_type"] == "code":
            for comment in _comments(source(cell)):
                yield index, comment
            for _, text in output_texts(cell):
                yield index, text


def process_talk(notebook):
    found = []
    for index, text in learner_text(notebook):
        for pattern in PROCESS_TALK:
            for match in re.finditer(pattern, text, re.I):
                found.append(f"[{index}] {match.group(0)!r} in {text[:80]!r}")
    return found


def _parse(cell):
    import ast

    code = "\n".join(
        line for line in source(cell).splitlines() if not line.lstrip().startswith(("%", "!"))
    )
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def _is_boolean(node):
    import ast

    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return True
    if isinstance(node, ast.Call):
        name = getattr(node.func, "attr", getattr(node.func, "id", None))
        return name in BOOLEAN_CALLS
    if isinstance(node, ast.JoinedStr):  # f"...{a == b}"
        return any(_is_boolean(part.value) for part in node.values
                   if isinstance(part, ast.FormattedValue))
    return False


def boolean_prints(notebook):
    """print(...) calls that show a claim as True/False instead of the measured number."""
    import ast

    found = []
    for index, cell in enumerate(notebook["cells"]):
        tree = cell["cell_type"] == "code" and _parse(cell)
        for node in ast.walk(tree) if tree else ():
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"
                    and any(_is_boolean(arg) for arg in node.args)):
                found.append(f"[{index}] {ast.unparse(node)[:100]}")
        for _, text in output_texts(cell) if cell["cell_type"] == "code" else ():
            for line in text.splitlines():
                if re.search(r":\s*(True|False)\s*$", line):
                    found.append(f"[{index}] output line {line.strip()[:100]!r}")
    return found


def _constant_names(notebook):
    """Names that the lesson only ever assigns literal values to (SEED = 42, D_MODEL = 128)."""
    import ast

    literal, other = set(), set()
    for cell in code_cells(notebook):
        tree = _parse(cell)
        for node in ast.walk(tree) if tree else ():
            targets = []
            if isinstance(node, ast.Assign):
                targets = [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [(node.target, None)]
            elif isinstance(node, ast.For | ast.comprehension):
                targets = [(node.target, None)]
            elif isinstance(node, ast.FunctionDef):
                other.update(a.arg for a in node.args.args)
            for target, value in targets:
                if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                    pairs = list(zip(target.elts, value.elts, strict=False))
                else:
                    pairs = [(target, value)]
                for name, val in pairs:
                    for sub in ast.walk(name):
                        if isinstance(sub, ast.Name):
                            is_literal = val is not None and _is_literal(val, set())
                            (literal if is_literal else other).add(sub.id)
    return literal - other


def _is_literal(node, constants):
    import ast

    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id not in constants:
            return False
        if isinstance(sub, ast.Call | ast.Attribute | ast.Subscript | ast.Lambda | ast.Starred):
            return False
    return True


def constant_asserts(notebook):
    """asserts whose every leaf is a literal or a name only ever bound to one: they cannot fail."""
    import ast

    constants = _constant_names(notebook)
    found = []
    for index, cell in enumerate(notebook["cells"]):
        tree = cell["cell_type"] == "code" and _parse(cell)
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Assert) and _is_literal(node.test, constants):
                found.append(f"[{index}] assert {ast.unparse(node.test)[:100]}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_lesson_speaks_to_the_learner_only(path):
    found = process_talk(load(path))
    assert not found, "talk about the course's making in what the learner reads:\n" + "\n".join(
        found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_claims_print_numbers_not_bare_booleans(path):
    found = boolean_prints(load(path))
    assert not found, "print the measured value, then assert the claim on it:\n" + "\n".join(
        found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_assert_between_constants(path):
    found = constant_asserts(load(path))
    assert not found, "asserts that cannot fail (only literals and constants):\n" + "\n".join(
        found)


def planted(*cells):
    """A notebook of the given (cell_type, source, outputs) cells, as the checks read it."""
    made = []
    for kind, text, *outputs in cells:
        cell = {"cell_type": kind, "metadata": {}, "source": text}
        if kind == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": t}
                               for t in (outputs[0] if outputs else [])]
        made.append(cell)
    return {"cells": made}


@pytest.mark.parametrize("kind, text", [
    ("markdown", "As the series showed, attention helps."),
    ("markdown", "Run `make course LESSON=05` to try another seed."),
    ("markdown", "The stored outputs come from a CPU run."),
    ("code", "x = 1  # NBVAL_IGNORE_OUTPUT: wall time"),
    ("code", "x = 1  # this check holds in headless runs"),
    ("markdown", "In our runs the loss fell to 0.1."),
    ("markdown", "See the closing note for the seeds."),
    ("markdown", "This fixes issue 17."),
])
def test_process_talk_is_found_in_a_planted_example(kind, text):
    assert process_talk(planted((kind, text)))
    assert not process_talk(planted((kind, "Attention lets every token look at every other.")))


def test_process_talk_is_found_in_outputs_but_not_in_code():
    assert process_talk(planted(("code", "x = 1", ["the stored outputs differ\n"])))
    assert not process_talk(planted(("code", 'headless = "a variable name, not talk"')))


@pytest.mark.parametrize("code", [
    'print("equal:", torch.allclose(a, b))',
    'print(f"causal: {(w.triu(1) == 0).all()}")',
    "print(a == b)",
    'print("done", True)',
])
def test_a_bare_boolean_print_is_found_in_a_planted_example(code):
    assert boolean_prints(planted(("code", code)))


def test_a_true_output_line_is_found_and_numbers_pass():
    assert boolean_prints(planted(("code", "x = 1", ["same weights: True\n"])))
    assert not boolean_prints(planted(("code", 'print(f"largest difference: {d:.1e}")',
                                       ["largest difference: 0.0e+00\n"])))


@pytest.mark.parametrize("code", [
    "assert 2 + 2 == 4",
    "assert True",
    "D_MODEL = 512\nN_HEADS = 8\nassert D_MODEL % N_HEADS == 0",
    "assert (1, 2) == (1, 2)",
])
def test_an_assert_that_cannot_fail_is_found_in_a_planted_example(code):
    assert constant_asserts(planted(("code", code)))


def test_asserts_on_measured_values_pass():
    nb = planted(("code", "D_MODEL = 512\nloss = train(D_MODEL)\nassert loss < 0.1"),
                 ("code", "n = 3\nn = count()\nassert n == 3"))
    assert not constant_asserts(nb)
