"""Run every lesson the way Colab and Kaggle run it: `tfs` installed from its wheel, no checkout.

What `make colab` and the weekly workflow (.github/workflows/latest.yml) run:

    .venv/bin/python scripts/colab.py               # every lesson
    .venv/bin/python scripts/colab.py --lesson 00   # the lessons whose name starts with 00
    .venv/bin/python scripts/colab.py --lesson 00 --lesson 04   # lessons 00 and 04

1. builds tfs's wheel (`pip wheel --no-deps`) from a copy of the files git would commit, in a
   temporary folder (the checkout gets no build/ or *.egg-info from it);
2. installs it with `pip install --no-deps --target` into an empty folder: the wheel brings
   tfs and its copy of data/ (tfs/_data), the dependencies are this Python's;
3. copies the lessons into a temporary folder outside the repository and runs each there with
   papermill, in a kernel whose only extra path is that folder (PYTHONPATH) and whose working
   folder is the copy's: the repository is nowhere on its path, as on Colab. The lessons'
   asserts are the checks; stored outputs are not compared.

One line per lesson with its time and status, then a table; the executed lessons are kept in
build/colab/ (git ignores it). The exit code is 1 if any lesson failed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "build" / "colab"
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
# Variables that would point a lesson back at the checkout, or at another Hub or data folder.
UNSET = ("PYTHONPATH", "TFS_DATA_DIR", "TFS_WORK_DIR", "HF_ENDPOINT", "HF_HUB_CACHE", "HF_HOME")


def _run_course():
    """scripts/run_course.py as a module: the lesson list and the failure lines `make course`
    prints."""
    spec = importlib.util.spec_from_file_location("run_course", ROOT / "scripts" / "run_course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def source_files(root: Path = ROOT) -> list[str]:
    """The files git would commit (tracked, and new ones it does not ignore), relative to
    `root`: what a clone of the course holds once they are committed."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, check=True,
    ).stdout.decode("utf-8")
    return sorted(name for name in listing.split("\0") if name and (root / name).is_file())


def copy_sources(destination: Path, root: Path = ROOT) -> Path:
    """Copy `source_files(root)` into `destination`, as a fresh clone would hold them."""
    for name in source_files(root):
        target = Path(destination) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return Path(destination)


def build(kind: str, destination: Path, root: Path = ROOT) -> Path:
    """Build tfs's "wheel" or "sdist" into `destination` from a copy of `source_files(root)`
    (the checkout gets no build/ or *.egg-info); its path.

    No build isolation: setuptools comes from this Python (requirements.txt pins it), so the
    build needs no network.
    """
    if kind not in ("wheel", "sdist"):
        raise ValueError(f"kind must be 'wheel' or 'sdist', got {kind!r}")
    destination = Path(destination).resolve()
    destination.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tfs-source-") as copy:
        copy_sources(Path(copy), root)
        if kind == "wheel":
            command = [*PIP, "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                       "--wheel-dir", str(destination), copy]
        else:  # the PEP 517 hook pip's wheel build calls too, for the source distribution
            command = [sys.executable, "-c", "import sys; from setuptools import build_meta; "
                       "build_meta.build_sdist(sys.argv[1])", str(destination)]
        subprocess.run(command, cwd=copy, check=True, capture_output=True, text=True)
    pattern = "tfs-*.whl" if kind == "wheel" else "tfs-*.tar.gz"
    built = sorted(destination.glob(pattern))
    if len(built) != 1:
        raise RuntimeError(f"expected one {pattern} in {destination}, found {built}")
    return built[0]


def build_wheel(destination: Path, root: Path = ROOT) -> Path:
    """tfs's wheel, built into `destination` (see `build`)."""
    return build("wheel", destination, root)


def install_wheel(wheel: Path, target: Path) -> Path:
    """`pip install --no-deps --target target wheel`: tfs alone, in an empty folder."""
    subprocess.run(
        [*PIP, "install", "--quiet", "--no-deps", "--no-compile", "--target", str(target),
         str(wheel)],
        check=True, capture_output=True, text=True,
    )
    return Path(target)


def reader_environment(site: Path, work: Path, base: dict | None = None) -> dict:
    """The environment of a reader with tfs installed in `site` and no checkout: PYTHONPATH
    is `site` only, the lessons' files go to `work`, the Hub is offline, progress bars off."""
    environment = {k: v for k, v in (os.environ if base is None else base).items()
                   if k not in UNSET}
    environment.update(PYTHONPATH=str(site), TFS_WORK_DIR=str(work), TFS_QUIET="1",
                       HF_HUB_OFFLINE="1", HF_HOME=str(Path(work) / "hf-home"),
                       PYDEVD_DISABLE_FILE_VALIDATION="1")
    return environment


def run_lessons(paths: list[Path], folder: Path, environment: dict, output: Path | None = None,
                timeout: int = 900) -> list[tuple[str, float, str]]:
    """Copy `paths` into `folder` and run each there with papermill, its kernel in
    `environment`; one line each. Returns (lesson, seconds, status) per lesson; an executed
    lesson is written to `output` (default: beside its copy)."""
    import papermill

    run_course = _run_course()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environment)  # the kernel papermill starts inherits it
    try:
        for number, path in enumerate(paths, start=1):
            copy = folder / path.name
            shutil.copy2(path, copy)
            executed = (Path(output) if output else folder) / f"{path.stem}.executed.ipynb"
            print(f"[{number}/{len(paths)}] {path.stem} ...", end=" ", flush=True)
            start = time.perf_counter()
            try:
                papermill.execute_notebook(
                    str(copy), str(executed), cwd=str(folder), kernel_name="python3",
                    progress_bar=False, execution_timeout=timeout,
                    extra_arguments=run_course.KERNEL_QUIET,
                )
                status, detail = "ok", ""
            except Exception as error:  # papermill raises PapermillExecutionError and friends
                status, detail = "FAILED", ": " + run_course.describe_failure(error)
            seconds = time.perf_counter() - start
            results.append((path.stem, seconds, status))
            print(f"{status} ({seconds:.1f} s){detail}", flush=True)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", action="append", default=[], metavar="PREFIX",
                        help="run only the lessons whose file name starts with this (repeatable)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds allowed per cell")
    args = parser.parse_args(argv)

    run_course = _run_course()
    selected = [path for path in run_course.lessons(None)
                if not args.lesson or path.name.startswith(tuple(args.lesson))]
    if not selected:
        print(f"no lesson matches {args.lesson} in {run_course.NOTEBOOKS}", file=sys.stderr)
        return 2
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tfs-colab-") as temporary:
        temporary = Path(temporary)
        start = time.perf_counter()
        wheel = build_wheel(temporary / "dist")
        site = install_wheel(wheel, temporary / "site")
        print(f"{wheel.name} built and installed in {time.perf_counter() - start:.0f} s; "
              f"{len(selected)} lesson(s) run in {temporary / 'lessons'}, outside the checkout")
        environment = reader_environment(site, temporary / "work")
        results = run_lessons(selected, temporary / "lessons", environment, OUTPUT, args.timeout)
    print()
    return run_course.summary(results)


if __name__ == "__main__":
    sys.exit(main())
