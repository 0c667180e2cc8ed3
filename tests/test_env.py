import logging
import os
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import tfs
from tfs import env

ALL_MARKERS = env.KAGGLE_MARKERS + env.COLAB_MARKERS


@pytest.fixture
def clean_platform(monkeypatch):
    for name in ALL_MARKERS + ("TFS_WORK_DIR", "TFS_QUIET", "CI"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("marker", env.KAGGLE_MARKERS)
def test_where_kaggle(clean_platform, marker):
    clean_platform.setenv(marker, "Interactive")
    assert env.where() == "kaggle"


@pytest.mark.parametrize("marker", env.COLAB_MARKERS)
def test_where_colab(clean_platform, marker):
    clean_platform.setenv(marker, "release-2026")
    assert env.where() == "colab"


def test_where_local(clean_platform):
    assert env.where() == "local"


def test_where_ignores_empty_markers(clean_platform):
    clean_platform.setenv("KAGGLE_KERNEL_RUN_TYPE", "")
    assert env.where() == "local"


def test_device_is_cpu_without_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert env.device() == torch.device("cpu")  # mps only when asked for
    assert env.device(allow_mps=True) == torch.device("mps")


def test_device_prefers_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert env.device() == torch.device("cuda")


def draw_everything():
    return random.random(), np.random.rand(3).tolist(), torch.rand(3).tolist()


def test_seed_everything_makes_runs_repeat():
    env.seed_everything(123)
    first = draw_everything()
    env.seed_everything(123)
    assert draw_everything() == first
    env.seed_everything(124)
    assert draw_everything() != first


def test_seed_everything_accepts_numpy_integers():
    assert env.seed_everything(np.int64(5)) == 5


@pytest.mark.parametrize("bad", [1.5, "42", None, True, [1]])
def test_seed_everything_rejects_non_integers(bad):
    with pytest.raises(TypeError, match="seed must be an integer"):
        env.seed_everything(bad)


@pytest.mark.parametrize("bad", [-1, 2**32])
def test_seed_everything_rejects_out_of_range(bad):
    with pytest.raises(ValueError, match="seed must be between"):
        env.seed_everything(bad)


@pytest.fixture
def restore_warnings_and_env(monkeypatch):
    for name in ("HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE", "TFS_QUIET", "CI"):
        monkeypatch.delenv(name, raising=False)
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars

    levels = {name: logging.getLogger(name).level for name in env.NOISY_LIBRARIES}
    with warnings.catch_warnings():
        yield are_progress_bars_disabled
    enable_progress_bars()
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_quiet_headless_turns_progress_bars_off(restore_warnings_and_env, monkeypatch):
    are_progress_bars_disabled = restore_warnings_and_env
    monkeypatch.setenv("TFS_QUIET", "1")
    assert env.quiet() is None  # nothing to show in the set-up cell
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert os.environ["TQDM_DISABLE"] == "1"
    assert are_progress_bars_disabled()


def test_quiet_interactive_keeps_progress_bars(restore_warnings_and_env):
    are_progress_bars_disabled = restore_warnings_and_env
    env.quiet()
    assert "TQDM_DISABLE" not in os.environ
    assert not are_progress_bars_disabled()


def test_quiet_can_be_forced(restore_warnings_and_env):
    are_progress_bars_disabled = restore_warnings_and_env
    env.quiet(progress_bars=False)
    assert os.environ["TQDM_DISABLE"] == "1"
    assert are_progress_bars_disabled()
    with pytest.raises(TypeError):
        env.quiet(progress_bars="no")


def test_quiet_silences_library_warnings_and_logs(restore_warnings_and_env):
    env.quiet()
    with warnings.catch_warnings(record=True) as caught:
        warnings.warn_explicit("noise", UserWarning, "x.py", 1, module="torch.nn.modules")
        warnings.warn("old api", FutureWarning, stacklevel=1)
        warnings.warn("a learner's own warning", UserWarning, stacklevel=1)
        warnings.warn("IProgress not found. Please update jupyter and ipywidgets.", stacklevel=1)
    assert [str(w.message) for w in caught] == ["a learner's own warning"]
    assert logging.getLogger("huggingface_hub").getEffectiveLevel() == logging.ERROR


def test_work_dir_local_is_in_the_checkout_and_created(clean_platform):
    folder = env.work_dir("lesson_02")
    assert folder.is_dir()
    assert folder == Path(tfs.__file__).resolve().parent.parent / "work" / "lesson_02"


def test_work_dir_on_platforms(clean_platform, tmp_path, monkeypatch):
    created = []
    monkeypatch.setattr(Path, "mkdir", lambda self, **kw: created.append(self))
    clean_platform.setenv("KAGGLE_KERNEL_RUN_TYPE", "Batch")
    assert env.work_dir() == Path("/kaggle/working/tfs")
    clean_platform.delenv("KAGGLE_KERNEL_RUN_TYPE")
    clean_platform.setenv("COLAB_RELEASE_TAG", "x")
    assert env.work_dir() == Path("/content/tfs")
    assert created == [Path("/kaggle/working/tfs"), Path("/content/tfs")]


def test_work_dir_override(clean_platform, tmp_path):
    clean_platform.setenv("TFS_WORK_DIR", str(tmp_path / "mine"))
    assert env.work_dir() == tmp_path / "mine"
    assert (tmp_path / "mine").is_dir()


@pytest.mark.parametrize("bad", ["", "a/b", 3])
def test_work_dir_rejects_bad_names(bad):
    with pytest.raises(ValueError):
        env.work_dir(bad)


def test_badges_point_at_the_repository():
    text = tfs.badges("02_building_blocks.ipynb")
    url = f"github/{tfs.REPO}/blob/{tfs.BRANCH}/notebooks/02_building_blocks.ipynb"
    assert f"https://colab.research.google.com/{url}" in text
    assert f"src=https://github.com/{tfs.REPO}/blob/{tfs.BRANCH}/notebooks/" in text
    assert "Open in Colab" in text and "Open in Kaggle" in text
    assert tfs.INSTALL_URL == f"git+https://github.com/{tfs.REPO}@{tfs.BRANCH}"


@pytest.mark.parametrize("bad", ["lesson.py", "notebooks/02.ipynb", None])
def test_badges_reject_bad_names(bad):
    with pytest.raises(ValueError):
        tfs.badges(bad)


# precision(): one branch per kind of device, with the GPU's properties faked.
@pytest.fixture
def fake_gpu(monkeypatch):
    """Pretend a CUDA GPU of a given name and compute capability is present."""
    asked = []

    def install(name, capability):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: asked.append(d) or name)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: capability)
        return asked

    return install


@pytest.mark.parametrize("where_to", ["cpu", torch.device("cpu"), "mps"])
def test_precision_cpu_and_mps_use_float32(where_to):
    chosen = env.precision(where_to)
    assert chosen.dtype is None and chosen.grad_scaler is False
    assert torch.device(where_to).type in chosen.why and "no autocast" in chosen.why


def test_precision_defaults_to_the_course_device(monkeypatch, fake_gpu):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert env.precision().dtype is None
    fake_gpu("NVIDIA A100-SXM4-40GB", (8, 0))
    assert env.precision().dtype is torch.bfloat16


@pytest.mark.parametrize(
    "name, capability",
    [("NVIDIA A100-SXM4-40GB", (8, 0)), ("NVIDIA L4", (8, 9)), ("NVIDIA H100 80GB HBM3", (9, 0))],
)
def test_precision_ampere_and_newer_use_bf16(fake_gpu, name, capability):
    fake_gpu(name, capability)
    chosen = env.precision("cuda")
    assert chosen.dtype is torch.bfloat16 and chosen.grad_scaler is False
    assert name in chosen.why and f"{capability[0]}.{capability[1]}" in chosen.why


@pytest.mark.parametrize(
    "name, capability",
    [("Tesla T4", (7, 5)), ("Tesla P100-PCIE-16GB", (6, 0)), ("Tesla V100-SXM2-16GB", (7, 0))],
)
def test_precision_older_gpus_use_fp16_with_a_scaler(fake_gpu, name, capability):
    fake_gpu(name, capability)
    chosen = env.precision(torch.device("cuda"))
    assert chosen.dtype is torch.float16 and chosen.grad_scaler is True
    assert name in chosen.why and "grad scaler" in chosen.why


def test_precision_asks_about_the_given_gpu(fake_gpu):
    asked = fake_gpu("Tesla T4", (7, 5))
    env.precision("cuda:1")
    assert asked == [torch.device("cuda:1")]


def test_precision_is_frozen():
    chosen = env.precision("cpu")
    with pytest.raises(AttributeError):
        chosen.dtype = torch.float16


def test_precision_rejects_bad_devices(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no CUDA GPU"):
        env.precision("cuda")
    with pytest.raises(ValueError, match="knows cpu, mps and cuda"):
        env.precision("meta")
    with pytest.raises(ValueError, match="not a device"):
        env.precision("gpu0")
    with pytest.raises(TypeError, match="device must be"):
        env.precision(0)


def test_about_names_the_checkout_when_imported_from_one():
    assert env.about() == f"tfs {tfs.__version__} from your copy of the course"


@pytest.mark.parametrize(
    "record, expected",
    [
        ('{"url": "https://github.com/o/r", "vcs_info": {"vcs": "git", "commit_id": "abcdef123"}}',
         "installed from git+https://github.com/o/r (commit abcdef1)"),
        ('{"url": "file:///tmp/w/tfs-0.1.0-py3-none-any.whl", "archive_info": {}}',
         "installed from a wheel (tfs-0.1.0-py3-none-any.whl)"),
        (None, "installed from a package index"),
    ],
)
def test_about_says_how_pip_installed_tfs(monkeypatch, record, expected):
    class Distribution:
        def read_text(self, name):
            assert name == "direct_url.json"
            return record

    monkeypatch.setattr(env, "repo_root", lambda: None)
    monkeypatch.setattr(env.metadata, "distribution", lambda name: Distribution())
    assert env.about() == f"tfs {tfs.__version__} {expected}"
