"""The platforms the course is kept running on: CI workflows, pins, sanitizer, newest releases.

- .github/workflows/*.yml pass the workflow linter of `make lint`, and the linter
  really rejects a broken workflow;
- CI runs the README's commands on the platforms and Pythons the README promises;
- requirements.txt installs on every Python that CI runs;
- .nbval-sanitize.cfg evens out platform differences without hiding a number;
- `make latest` (scripts/latest.py) unpins what it should, and a broken lesson is
  reported with its cell (scripts/run_course.py).
"""

import importlib.util
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
import yaml
from nbval.plugin import get_sanitize_patterns
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
# The linter exactly as `make lint` calls it (the schema ships with check-jsonschema: offline).
LINT = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows"]
NBVAL = "--nbval --nbval-current-env --nbval-sanitize-with .nbval-sanitize.cfg -p no:cacheprovider"


def load_script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def workflow(name):
    loaded = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text(encoding="utf-8"))
    loaded["on"] = loaded.pop(True, loaded.get("on"))  # YAML 1.1 reads the key `on` as True
    return loaded


def commands(job):
    return "\n".join(step.get("run", "") for step in job["steps"])


# --- the workflow linter ----------------------------------------------------------------


def test_make_lint_runs_the_workflow_linter_on_every_workflow():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml" in (
        makefile
    )
    assert [path.name for path in WORKFLOWS] == ["ci.yml", "latest.yml"]


def test_the_workflows_pass_the_linter():
    result = subprocess.run([*LINT, *map(str, WORKFLOWS)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


BROKEN = {
    "misspelt key": ("    setps:\n      - run: make test\n", "'setps' was unexpected"),
    "not a number": ("    timeout-minutes: ninety\n    steps:\n      - run: make test\n",
                     "'ninety' is not of type 'number'"),
    "uses and run": ("    steps:\n      - uses: actions/checkout@v4\n        run: make test\n",
                     "is not valid under any of the given schemas"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_the_linter_rejects_a_broken_workflow(tmp_path, case):
    job, complaint = BROKEN[case]
    broken = tmp_path / "broken.yml"
    broken.write_text("name: CI\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n" + job)
    result = subprocess.run([*LINT, "--verbose", str(broken)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    assert complaint in result.stdout


def test_the_linter_rejects_an_unknown_event(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text((ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8").replace(
        "  pull_request:", "  pull_requests:"))
    result = subprocess.run([*LINT, str(broken)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "pull_requests" in result.stdout


# --- CI: the README's commands, on the platforms and Pythons it promises ----------------------


def test_ci_runs_make_test_on_ubuntu_and_pytest_on_macos_and_windows():
    jobs = workflow("ci.yml")["jobs"]
    assert jobs["linux"]["runs-on"] == "ubuntu-latest"
    assert "make test" in commands(jobs["linux"])
    assert "OMP_NUM_THREADS=1 make nbval" in commands(jobs["linux"])
    assert set(jobs["macos-windows"]["strategy"]["matrix"]["os"]) == {"macos-latest",
                                                                      "windows-latest"}
    plain = " ".join(commands(jobs["macos-windows"]).split())
    assert "python -m pip install -r requirements.txt" in plain
    assert f"python -m pytest tests notebooks {NBVAL}" in plain
    # The same options as `make test` and the README's commands without make.
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    assert NBVAL in " ".join(makefile.split())
    assert NBVAL in (ROOT / "README.md").read_text(encoding="utf-8")


def test_ci_runs_the_oldest_python_pyproject_allows_and_a_current_one():
    # tfs is installed from this checkout (editable): its metadata is pyproject.toml's.
    oldest = re.fullmatch(r">=(3\.\d+)", metadata.metadata("tfs")["Requires-Python"]).group(1)
    for job in workflow("ci.yml")["jobs"].values():
        versions = job["strategy"]["matrix"]["python-version"]
        assert versions == [oldest, "3.12"]
        assert job["env"] if job["runs-on"] == "ubuntu-latest" else True


def test_requirements_pin_every_package_once_for_each_python_ci_runs():
    lines = [line.split("#", 1)[0].strip() for line in (ROOT / "requirements.txt").open()]
    requirements = [Requirement(line) for line in lines if line]
    names = {requirement.name for requirement in requirements}
    for python in ("3.10", "3.12"):
        environment = {**default_environment(), "python_version": python,
                       "python_full_version": python + ".0"}
        applying = [r for r in requirements if r.marker is None or r.marker.evaluate(environment)]
        assert sorted(r.name for r in applying) == sorted(names), python  # each exactly once
        assert all(str(r.specifier).startswith("==") for r in applying), python


def test_the_weekly_workflow_runs_make_latest_and_keeps_the_failing_lessons():
    latest = workflow("latest.yml")
    (cron,) = [entry["cron"] for entry in latest["on"]["schedule"]]
    minute, hour, day, month, weekday = cron.split()
    assert (day, month) == ("*", "*") and weekday.isdigit()  # once a week
    assert "workflow_dispatch" in latest["on"]  # and by hand
    (job,) = latest["jobs"].values()
    assert "make latest" in commands(job)
    upload = [step for step in job["steps"] if "upload-artifact" in step.get("uses", "")]
    assert upload and upload[0]["if"] == "failure()"


# --- the sanitizer: platform differences, not numbers ---------------------------------------


@pytest.fixture(scope="module")
def sanitize():
    patterns = get_sanitize_patterns((ROOT / ".nbval-sanitize.cfg").read_text(encoding="utf-8"))

    def apply(text):
        for regex, replace in patterns:
            text = re.sub(regex, replace, text)
        return text

    return apply


def test_the_sanitizer_has_no_carriage_returns():
    # nbval takes each pattern up to the line's end: a Windows checkout with CRLF line
    # endings would put a CR into every regex and silently switch the sanitizer off.
    # .gitattributes checks every text file out with LF.
    assert b"\r" not in (ROOT / ".nbval-sanitize.cfg").read_bytes()
    assert "eol=lf" in (ROOT / ".gitattributes").read_text(encoding="utf-8")


def test_the_sanitizer_evens_out_platforms(sanitize):
    windows, posix = r"saved to work\lesson_02\model.pt", "saved to work/lesson_02/model.pt"
    assert sanitize(windows) == sanitize(posix)
    assert sanitize("device: mps") == sanitize("device: cpu") == sanitize("device: cuda:0")
    assert sanitize("running on: kaggle") == sanitize("running on: local")
    assert sanitize("mean -0.000, max -0") == sanitize("mean 0.000, max 0")


@pytest.mark.parametrize(
    "text, other",
    [("loss 2.31", "loss 2.32"), ("mean -0.001", "mean 0.001"), ("lr 1e-05", "lr 1e-06"),
     ("-0.5", "0.5"), ("n = 10-0", "n = 10-1")],
)
def test_the_sanitizer_hides_no_number(sanitize, text, other):
    assert sanitize(text) == text and sanitize(text) != sanitize(other)


# --- make latest and the course runner's failure report -------------------------------------


def test_latest_unpins_the_runtime_dependencies(tmp_path):
    latest = load_script("latest")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(
        "# comment\ntorch==2.13.0\nnumpy==2.4.6; python_version >= '3.0'\n"
        "numpy==1.0; python_version < '3.0'\npapermill==2.7.0  # runner\n"
        "ruff==0.17.6\npytest==9.2.0\njupyterlab==4.6.6\n"
    )
    assert latest.install_arguments([], requirements) == ["torch", "numpy", "papermill"]
    assert latest.install_arguments(["Torch"], requirements) == [
        "torch==2.13.0", "numpy", "papermill"]
    with pytest.raises(ValueError, match="does not pin.*scipy"):
        latest.install_arguments(["scipy"], requirements)


def test_latest_covers_every_dependency_of_tfs():
    latest = load_script("latest")
    unpinned = {canonicalize_name(Requirement(argument).name)
                for argument in latest.install_arguments([])}
    needed = {canonicalize_name(Requirement(dep).name) for dep in metadata.requires("tfs")}
    assert needed <= unpinned
    assert {"papermill", "ipykernel"} <= unpinned


def test_a_broken_lesson_is_reported_with_its_cell(tmp_path, monkeypatch, capsys):
    run_course = load_script("run_course")
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# 07 · Broken"),
        nbformat.v4.new_code_cell("SEED = 42", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("ratio = 1 / 3\nassert ratio > 0.5, f'ratio {ratio:.2f}'"),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, notebooks / "07_broken.ipynb")
    monkeypatch.setattr(run_course, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(run_course, "OUTPUT", tmp_path / "build")
    monkeypatch.setattr(run_course, "ROOT", tmp_path)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")

    assert run_course.main([]) == 1
    printed = capsys.readouterr().out
    assert "07_broken ... FAILED" in printed
    assert "cell 2 (In [2]: 'ratio = 1 / 3') raised AssertionError: ratio 0.33" in printed
    assert "::error file=notebooks/07_broken.ipynb,title=07_broken failed::cell 2" in printed


def test_a_lesson_that_runs_out_of_time_is_reported_with_its_cell():
    from nbclient.exceptions import CellTimeoutError

    run_course = load_script("run_course")
    cell = nbformat.v4.new_code_cell("for step in range(10**9):\n    pass")
    error = CellTimeoutError.error_from_timeout_and_cell("Timeout waiting (900s).", 900, cell)
    assert run_course.describe_failure(error) == (
        "A cell timed out while it was being executed, after 900 seconds. "
        "Cell: 'for step in range(10**9):'"
    )
