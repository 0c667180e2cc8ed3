"""Run every lesson of the course headless, the way `make course` does.

Each lesson is executed with papermill into build/course/ (git ignores it);
the notebooks in notebooks/ are never written. One line per lesson while it
runs, then a summary table; the exit code is 1 if any lesson failed.

    python scripts/run_course.py                    # every lesson
    python scripts/run_course.py --lesson 02        # lessons whose name starts with 02
    python scripts/run_course.py -p SEED=7          # parameters for the `parameters` cell
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
OUTPUT = ROOT / "build" / "course"
# The kernel's own start-up log (e.g. a notice about local TCP transport) would break the
# one-line-per-lesson progress; errors still show.
KERNEL_QUIET = ["--IPKernelApp.log_level=ERROR"]


def parse_parameter(text: str) -> tuple[str, object]:
    """'SEED=7' -> ('SEED', 7); values are Python literals, or strings if they aren't."""
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def describe_failure(error: Exception) -> str:
    """One line: the failing cell (its number and first line) and the error it raised."""
    lines = [line for line in str(error).strip().splitlines() if line.strip("- ")]
    if not hasattr(error, "cell_index"):
        # A cell that ran out of time (nbclient's CellTimeoutError) names it in a preview
        # after its first lines; any other error of papermill's own has no cell.
        if "preview of the cell contents:" in str(error):
            preview = str(error).split("preview of the cell contents:", 1)[1]
            source = [line for line in preview.splitlines() if line.strip("- ")]
            return f"{lines[0]} Cell: {shorten(source[0] if source else '')!r}"
        return lines[-1] if lines else type(error).__name__
    first_line = next((line for line in error.source.splitlines() if line.strip()), "")
    return (f"cell {error.cell_index} (In [{error.exec_count}]: {shorten(first_line)!r}) "
            f"raised {error.ename}: {error.evalue}")


def shorten(line: str, width: int = 60) -> str:
    line = line.strip()
    return line if len(line) <= width else line[: width - 3] + "..."


def lessons(prefix: str | None) -> list[Path]:
    found = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if prefix:
        found = [path for path in found if path.name.startswith(prefix)]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", help="run only the lessons whose file name starts with this")
    parser.add_argument("-p", "--parameter", action="append", default=[], type=parse_parameter,
                        metavar="NAME=VALUE", help="a parameter for every lesson (repeatable)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds allowed per cell")
    args = parser.parse_args(argv)

    os.environ.setdefault("TFS_QUIET", "1")  # no progress bars in headless runs
    import papermill

    selected = lessons(args.lesson)
    if not selected:
        print(f"no lesson matches {args.lesson!r} in {NOTEBOOKS}", file=sys.stderr)
        return 2
    parameters = dict(args.parameter)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shown = ", ".join(f"{k}={v!r}" for k, v in parameters.items()) or "the stored defaults"
    print(f"Running {len(selected)} lesson(s) with {shown}; outputs in {OUTPUT.relative_to(ROOT)}/")

    results = []
    for number, path in enumerate(selected, start=1):
        print(f"[{number}/{len(selected)}] {path.stem} ...", end=" ", flush=True)
        start = time.perf_counter()
        try:
            papermill.execute_notebook(
                str(path),
                str(OUTPUT / path.name),
                parameters=parameters,
                cwd=str(NOTEBOOKS),
                kernel_name="python3",
                progress_bar=False,
                execution_timeout=args.timeout,
                extra_arguments=KERNEL_QUIET,
            )
            status = "ok"
        except Exception as error:  # papermill raises PapermillExecutionError and friends
            status = "FAILED"
            detail = describe_failure(error)
        seconds = time.perf_counter() - start
        results.append((path.stem, seconds, status))
        print(f"{status} ({seconds:.1f} s)" + ("" if status == "ok" else f": {detail}"), flush=True)
        if status != "ok" and os.environ.get("GITHUB_ACTIONS") == "true":
            # An annotation on the workflow run's page, pointing at the lesson.
            message = detail.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            print(f"::error file=notebooks/{path.name},title={path.stem} failed::{message}")

    print()
    return summary(results)


def summary(results: list[tuple[str, float, str]]) -> int:
    """The table after the run (also `make colab`'s): a line per lesson, a total; 1 if any
    lesson failed, else 0."""
    width = max(len(name) for name, _, _ in results)
    print(f"{'lesson':<{width}}  {'seconds':>8}  status")
    for name, seconds, status in results:
        print(f"{name:<{width}}  {seconds:>8.1f}  {status}")
    total = sum(seconds for _, seconds, _ in results)
    failed = sum(status != "ok" for _, _, status in results)
    print(f"{'total':<{width}}  {total:>8.1f}  {len(results) - failed} ok, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
