"""scripts/run_course.py: what `make course` runs."""

import importlib.util
from pathlib import Path

import nbformat
import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "run_course.py"
spec = importlib.util.spec_from_file_location("run_course", SCRIPT)
run_course = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_course)


def test_parameters_are_python_literals_or_strings():
    assert run_course.parse_parameter("SEED=7") == ("SEED", 7)
    assert run_course.parse_parameter("SCALE=0.5") == ("SCALE", 0.5)
    assert run_course.parse_parameter("NAME=tiny") == ("NAME", "tiny")


@pytest.mark.parametrize("bad", ["SEED", "7=SEED", "=3"])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(Exception, match="NAME=VALUE"):
        run_course.parse_parameter(bad)


def lesson(folder, name, code):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("SEED = 42", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(code),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, folder / name)


def test_runs_lessons_with_parameters_and_reports_failures(tmp_path, monkeypatch, capsys):
    notebooks, output = tmp_path / "notebooks", tmp_path / "build"
    notebooks.mkdir()
    lesson(notebooks, "01_fine.ipynb", "assert SEED == 7")
    lesson(notebooks, "02_broken.ipynb", "raise ValueError('lesson broke')")
    monkeypatch.setattr(run_course, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(run_course, "OUTPUT", output)
    monkeypatch.setattr(run_course, "ROOT", tmp_path)

    assert run_course.main(["--lesson", "01", "-p", "SEED=7"]) == 0
    assert (output / "01_fine.ipynb").is_file()
    assert run_course.main(["-p", "SEED=7"]) == 1
    printed = capsys.readouterr().out
    assert "[2/2] 02_broken ... FAILED" in printed
    assert "1 ok, 1 failed" in printed
    assert run_course.main(["--lesson", "99"]) == 2
