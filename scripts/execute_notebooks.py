"""Re-execute lessons in place, from a fresh kernel, to store their outputs.

The stored outputs are what `make test` (nbval) compares with, so they must
come from the same environment: run this through `make execute NB=...`, which
uses the course's .venv, HF_HUB_OFFLINE=1 and TFS_QUIET=1.

    python scripts/execute_notebooks.py notebooks/02_building_blocks.ipynb
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert.preprocessors import CoalesceStreamsPreprocessor


def join_streams(notebook):
    """Join consecutive outputs of one stream, as a reader's Jupyter shows them (nbconvert's
    preprocessor: a print that flushes twice would otherwise be stored as two outputs)."""
    notebook, _ = CoalesceStreamsPreprocessor().preprocess(notebook, {})
    return notebook


def execute(path: Path, timeout: int) -> float:
    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,  # no timestamps in the stored notebook
        extra_arguments=["--IPKernelApp.log_level=ERROR"],  # no start-up notices
    )
    client.execute()
    seconds = time.perf_counter() - start
    # Keep the stored notebook free of run-specific metadata.
    notebook.metadata.pop("papermill", None)
    notebook.metadata.pop("jupytext", None)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
    nbformat.write(join_streams(notebook), path)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=900, help="seconds allowed per cell")
    args = parser.parse_args(argv)
    os.environ.setdefault("TFS_QUIET", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for path in args.notebooks:
        print(f"executing {path} ...", end=" ", flush=True)
        print(f"done in {execute(path, args.timeout):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
