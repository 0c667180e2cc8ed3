"""Run every lesson against the newest releases of the course's dependencies.

What `make latest` and the weekly workflow (.github/workflows/latest.yml) run, with
the Python of a separate virtual environment (never the pinned .venv):

    build/venv-latest/bin/python scripts/latest.py               # install, then run
    build/venv-latest/bin/python scripts/latest.py --lesson 00   # only lesson 00
    build/venv-latest/bin/python scripts/latest.py --hold torch  # keep torch at its pin

It installs the packages of requirements.txt without their pins (the newest
release of each, upgraded eagerly), except the tools that only lint or test and
those held with --hold, then `tfs` itself; prints the versions it got; and runs
the lessons with scripts/run_course.py: papermill executes each lesson and its
asserts, and stored outputs are not compared (a new release may print a number
differently and still be right). A failure names the lesson and the cell.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements.txt"
# Tools of `make test` only (lint, regression): no lesson or runner needs them.
TEST_TOOLS = {"ruff", "check-jsonschema", "jupytext", "pytest", "pytest-xdist", "nbval",
              "jupyterlab"}


def pinned(path: Path = REQUIREMENTS) -> dict[str, Requirement]:
    """requirements.txt's requirements that apply to this Python, by canonical name."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate():
            found[canonicalize_name(requirement.name)] = requirement
    return found


def install_arguments(held: list[str], path: Path = REQUIREMENTS) -> list[str]:
    """pip's arguments: each runtime dependency unpinned, or pinned where held."""
    requirements = pinned(path)
    unknown = sorted({canonicalize_name(name) for name in held} - set(requirements))
    if unknown:
        raise ValueError(f"--hold names packages that requirements.txt does not pin: {unknown}")
    held = {canonicalize_name(name) for name in held}
    arguments = []
    for name, requirement in requirements.items():
        if name in TEST_TOOLS:
            continue
        arguments.append(str(requirement).split(";")[0].strip() if name in held else name)
    return arguments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", action="append", default=[], metavar="NAME",
                        help="keep this package at requirements.txt's pin (repeatable)")
    parser.add_argument("--lesson", help="run only the lessons whose file name starts with this")
    parser.add_argument("--no-install", action="store_true", help="run with what is installed")
    args = parser.parse_args(argv)

    packages = install_arguments(args.hold)
    if not args.no_install:
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "--upgrade", "--upgrade-strategy", "eager", *packages], check=True)
        subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
    print("Newest releases under test:")
    for requirement in packages:
        name = Requirement(requirement).name
        print(f"  {name:<16} {metadata.version(name)}")

    spec = importlib.util.spec_from_file_location("run_course", ROOT / "scripts" / "run_course.py")
    run_course = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_course)
    return run_course.main(["--lesson", args.lesson] if args.lesson else [])


if __name__ == "__main__":
    sys.exit(main())
