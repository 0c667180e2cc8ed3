"""Open the lessons in JupyterLab with the course's own kernel: what `make lab` runs.

    python scripts/lab.py              # register the kernel, then start JupyterLab
    python scripts/lab.py --register   # only register the kernel (make setup does this)

Run it with the course's Python (`.venv/bin/python`, or `.venv\\Scripts\\python` on
Windows). The kernel is this Python, registered as "tfs-course" ("Transformers from
scratch (.venv)") inside the virtual environment itself (`--sys-prefix`, i.e.
.venv/share/jupyter/kernels/tfs-course), not in the user's Jupyter folder:

- the JupyterLab that `make lab` starts is the environment's own, and finds it there;
- a user-wide kernel named tfs-course would be shared by every checkout and every Python
  of that user, so a second clone would silently point it at the wrong Python;
- deleting .venv deletes the kernel with it; nothing outside the checkout changes.

JupyterLab is started with this kernel as the only one it offers, so a lesson (stored
with the generic "python3" kernel name, which Colab and Kaggle need) opens with it: a
notebook whose kernel is missing is offered the one kernel of its language, and the
environment's JupyterLab settings (.venv/share/jupyter/lab/settings/overrides.d/
tfs-course.json) start that preferred kernel without asking.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL_NAME = "tfs-course"
DISPLAY_NAME = "Transformers from scratch (.venv)"
# What the browser opens: the lessons' folder (README: start with lesson 00).
OPEN_AT = "/lab/tree/notebooks"


def register_kernel(prefix: str | Path = sys.prefix) -> Path:
    """Register this Python as the course's kernel under `prefix`; return the spec's folder."""
    from ipykernel.kernelspec import install

    folder = install(
        kernel_name=KERNEL_NAME,
        display_name=DISPLAY_NAME,
        prefix=str(prefix),
    )
    return Path(folder)


# JupyterLab settings for the environment's own JupyterLab: start the preferred kernel.
LAB_SETTINGS = {"@jupyterlab/notebook-extension:tracker": {"autoStartDefaultKernel": True}}


def write_lab_settings(prefix: str | Path = sys.prefix) -> Path:
    """Write LAB_SETTINGS as the course's own overrides file of the JupyterLab under `prefix`.

    A file of its own in overrides.d/, so a reader's overrides.json stays theirs.
    """
    path = Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.d"
    path = path / f"{KERNEL_NAME}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(LAB_SETTINGS, indent=2) + "\n", encoding="utf-8")
    return path


def lab_arguments(root: Path = ROOT) -> list[str]:
    """The options that make JupyterLab the course's: its root, its kernel, where it opens."""
    return [
        f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url={OPEN_AT}",
        f"--KernelSpecManager.allowed_kernelspecs={KERNEL_NAME}",
        f"--MappingKernelManager.default_kernel_name={KERNEL_NAME}",
    ]


def lab_command(root: Path = ROOT) -> list[str]:
    """The command that starts JupyterLab with this Python."""
    command = [sys.executable, "-m", "jupyterlab", *lab_arguments(root)]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # a container's root user, CI
        command.append("--allow-root")
    return command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--register", action="store_true", help="only register the kernel")
    args, extra = parser.parse_known_args(argv)
    folder = register_kernel()
    write_lab_settings()
    print(f"kernel {KERNEL_NAME!r} ({DISPLAY_NAME}) -> {sys.executable}  [{folder}]")
    if args.register:
        return 0
    # An interactive reader sees progress bars: the headless switch of `make` is dropped.
    env = {name: value for name, value in os.environ.items() if name != "TFS_QUIET"}
    command = [*lab_command(), *extra]
    if os.name == "posix":  # become JupyterLab, so that Ctrl-C reaches it alone
        os.execve(command[0], command, env)
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
