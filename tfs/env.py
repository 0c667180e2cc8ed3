"""Where a lesson runs, and how it sets itself up.

Every lesson's set-up cell calls `quiet()`, `seed_everything(SEED)` and prints
`device()`; lessons write their files to `work_dir()`; lessons that train ask
`precision()` whether, and in which dtype, to use mixed precision.
"""

from __future__ import annotations

import json
import logging
import numbers
import os
import random
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import torch

# The platforms' own markers: environment variables their notebook servers set.
KAGGLE_MARKERS = ("KAGGLE_KERNEL_RUN_TYPE", "KAGGLE_URL_BASE", "KAGGLE_DATA_PROXY_TOKEN")
COLAB_MARKERS = ("COLAB_RELEASE_TAG", "COLAB_BACKEND_VERSION", "COLAB_GPU")

# Libraries whose warnings and log messages are noise in a lesson's stored outputs.
NOISY_LIBRARIES = (
    "torch",
    "huggingface_hub",
    "tokenizers",
    "transformers",
    "pandas",
    "pyarrow",
    "matplotlib",
    "numpy",
    "papermill",
    "jupyter_client",
    "tqdm",
)


def where() -> str:
    """Where the notebook runs: "kaggle", "colab" or "local"."""
    if any(os.environ.get(name) for name in KAGGLE_MARKERS):
        return "kaggle"
    if any(os.environ.get(name) for name in COLAB_MARKERS):
        return "colab"
    return "local"


def device(allow_mps: bool = False) -> torch.device:
    """The device lessons compute on: "cuda" if a GPU is available, else "cpu".

    Apple's "mps" is used only when asked for (`allow_mps=True`): some of the
    course's checks compare results to 1e-5, and some kernels on mps (float64,
    a few reductions) are missing or round differently, so by default a Mac
    runs the lessons on the CPU, where every stored output was produced.
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    if allow_mps and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


_default_device = device


# bfloat16 tensor cores arrived with Ampere (compute capability 8.0: A100, RTX 30xx, L4, H100).
BF16_MIN_CAPABILITY = (8, 0)


@dataclass(frozen=True)
class Precision:
    """How a lesson that trains should use a device's arithmetic.

    `dtype`: the dtype for `torch.autocast` (bfloat16 or float16), or None for
    plain float32 without autocast. `grad_scaler`: True when the loss must be
    scaled (`torch.amp.GradScaler`), i.e. float16, whose small range lets
    gradients underflow. `why`: one sentence for the reader, saying what was
    chosen and why.
    """

    dtype: torch.dtype | None
    grad_scaler: bool
    why: str


def precision(device: torch.device | str | None = None) -> Precision:
    """The mixed precision a device supports, for training.

    - CPU and Apple's mps: no autocast (float32), as every stored output was computed;
    - CUDA with compute capability 8.0 or newer (Ampere, Ada, Hopper): bfloat16,
      which has float32's range, so no gradient scaler;
    - older CUDA GPUs (Colab's T4: 7.5, Kaggle's P100: 6.0, V100: 7.0): float16
      with a gradient scaler.

    `device` defaults to `device()`. `torch.compile` is never needed.
    """
    if device is None:
        device = _default_device()  # the argument's name hides the function device()
    if not isinstance(device, (str, torch.device)):
        raise TypeError(
            f"device must be a torch.device, a string such as 'cuda' or None, "
            f"got {type(device).__name__}: {device!r}"
        )
    try:
        device = torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"not a device: {device!r} ({error})") from None

    if device.type in ("cpu", "mps"):
        return Precision(
            dtype=None,
            grad_scaler=False,
            why=f"{device.type}: float32 throughout, no autocast",
        )
    if device.type != "cuda":
        raise ValueError(f"precision() knows cpu, mps and cuda devices, got {device.type!r}")
    if not torch.cuda.is_available():
        raise ValueError(f"{device} was asked for, but torch sees no CUDA GPU")

    name = torch.cuda.get_device_name(device)
    major, minor = torch.cuda.get_device_capability(device)
    gpu = f"{name} (compute capability {major}.{minor})"
    if (major, minor) >= BF16_MIN_CAPABILITY:
        return Precision(
            dtype=torch.bfloat16,
            grad_scaler=False,
            why=f"{gpu}: autocast to bfloat16, which keeps float32's range, so no grad scaler",
        )
    return Precision(
        dtype=torch.float16,
        grad_scaler=True,
        why=f"{gpu} has no fast bfloat16: autocast to float16 with a grad scaler",
    )


def seed_everything(seed: int) -> int:
    """Seed Python's `random`, NumPy and torch (CPU and every GPU) with one integer.

    Returns the seed, so a lesson can print or store it.
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}: {seed!r}")
    seed = int(seed)
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be between 0 and 2**32 - 1, got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # seeds the CPU and, when present, every CUDA device
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    return seed


def headless() -> bool:
    """True when nobody watches the outputs live: CI, `make course`, `make test`."""
    return bool(os.environ.get("TFS_QUIET") or os.environ.get("CI"))


def quiet(progress_bars: bool | None = None) -> None:
    """Keep stored outputs clean: no library warnings, no log chatter, no progress bars.

    Progress bars are turned off only when the run is headless (`headless()`:
    the course's make targets and CI set TFS_QUIET=1), so a reader running a
    lesson by hand still sees a download's progress. Pass `progress_bars=False`
    to turn them off anyway, or `True` to keep them. Returns None, so the set-up
    cell that calls it shows nothing.
    """
    if progress_bars is not None and not isinstance(progress_bars, bool):
        raise TypeError(f"progress_bars must be True, False or None, got {progress_bars!r}")
    show_bars = not headless() if progress_bars is None else progress_bars

    for library in NOISY_LIBRARIES:
        pattern = rf"^{library}(\.|$)"
        warnings.filterwarnings("ignore", module=pattern)
        logging.getLogger(library).setLevel(logging.ERROR)
    # tqdm warns once, on import, that ipywidgets is missing for notebook progress bars.
    warnings.filterwarnings("ignore", message="IProgress not found")
    # Deprecation notices are for library authors, not for the course's readers.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"

    if not show_bars:
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        os.environ["TQDM_DISABLE"] = "1"
        try:
            from huggingface_hub.utils import disable_progress_bars
        except ImportError:  # pragma: no cover - huggingface_hub is a dependency
            pass
        else:
            disable_progress_bars()


def repo_root() -> Path | None:
    """The course's checkout when `tfs` is installed from one (editable), else None."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "data").is_dir() else None


def about() -> str:
    """One line for a lesson's set-up cell: which `tfs` it imports, and where it comes from.

    "from your copy of the course" when `tfs` is imported from a clone of the course (its
    data is the checkout's data/); otherwise how pip installed it: from git (with the
    commit), from a wheel or a folder, as the package's install record says.
    """
    from tfs import __version__

    if repo_root() is not None:
        return f"tfs {__version__} from your copy of the course"
    try:
        record = metadata.distribution("tfs").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        record = None
    if not record:
        return f"tfs {__version__} installed from a package index"
    origin = json.loads(record)
    url = origin.get("url", "")
    vcs = origin.get("vcs_info")
    if vcs:
        commit = vcs.get("commit_id", "")[:7]
        at = f" (commit {commit})" if commit else ""
        return f"tfs {__version__} installed from git+{url}{at}"
    name = url.rstrip("/").rsplit("/", 1)[-1]
    kind = "a wheel" if name.endswith(".whl") else "a folder"
    return f"tfs {__version__} installed from {kind} ({name})"


def work_dir(name: str | None = None) -> Path:
    """A writable folder for a lesson's files, created if missing.

    Kaggle: /kaggle/working/tfs; Colab: /content/tfs; locally: `work/` in the
    course's checkout (git ignores it), or ./tfs-work when `tfs` was installed
    without a checkout. TFS_WORK_DIR overrides all of them. With `name`, a
    sub-folder of that name.
    """
    if name is not None and (not isinstance(name, str) or not name or "/" in name):
        raise ValueError(f"name must be a plain folder name, got {name!r}")
    if os.environ.get("TFS_WORK_DIR"):
        folder = Path(os.environ["TFS_WORK_DIR"])
    elif where() == "kaggle":
        folder = Path("/kaggle/working/tfs")
    elif where() == "colab":
        folder = Path("/content/tfs")
    elif repo_root() is not None:
        folder = repo_root() / "work"
    else:
        folder = Path.cwd() / "tfs-work"
    if name is not None:
        folder = folder / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
