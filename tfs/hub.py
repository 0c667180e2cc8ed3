"""Hub files for the lessons: one loading path that works online and offline.

The lessons read a few files from the Hugging Face Hub: four models' `config.json`,
the size of one weights file, and the course's own tokenizer and sentence pairs
(the Hub repositories xmarva/tfs-bpe-en-ru-16k and xmarva/tfs-tatoeba-en-ru).

The first time a lesson asks for a file, this module decides where files come from,
once for the whole process, and prints one line saying which:

- online: the real Hub; downloads go to your usual Hugging Face cache
  (~/.cache/huggingface), never into the course's `data/`;
- offline: what the course ships, when HF_HUB_OFFLINE is set or when the Hub does not
  answer within PROBE_TIMEOUT_S seconds (so a reader without internet never waits
  through the client's retries).

Offline, two kinds of files are served, and they are named for what they are:

- the four models' `config.json` are copies of the real files (field by field, see
  data/README.md), kept in `data/hub/` laid out as a Hub cache;
- the course's own tokenizer and sentence pairs are NOT copies of the Hub repositories
  (those are far larger: a 16,000-token tokenizer, about half a million pairs). Offline,
  the course's small hand-written corpus and the tokenizer trained on it (`data/corpus/`)
  stand in for them, and the first time each is used a line says so, e.g.
  "offline: the course's own hand-written corpus (1,674 pairs) stands in for
  xmarva/tfs-tatoeba-en-ru".

The lesson's code is the same in both worlds:

    from tfs.hub import hf_hub_download, file_size
    path = hf_hub_download("openai-community/gpt2", "config.json")
    size = file_size("Helsinki-NLP/opus-mt-en-ru", "pytorch_model.bin")

The shipped data is found in TFS_DATA_DIR if set, else in the checkout's `data/`, else in
the copy of `data/` installed with tfs (`tfs/_data`: pyproject.toml puts every file of
`data/` into the package, so a lesson opened on Colab or Kaggle finds it without a checkout).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

from tfs import INSTALL_URL

DEFAULT_ENDPOINT = "https://huggingface.co"
#: How long the one reachability check may take, in seconds.
PROBE_TIMEOUT_S = 2.0
#: The revision the shipped cache stores every file under (refs/main holds it).
SHIPPED_REVISION = "0" * 40
#: How to restore a file of the checkout's data/ (`restore_hint()` says it for any data folder).
RESTORE = "restore it with `git checkout -- data/` in the course's folder (or clone it again)"
#: Reinstalling what a lesson's set-up cell installs restores the data installed with tfs.
REINSTALL = (
    f'restore it by reinstalling tfs: pip install --force-reinstall --no-deps "{INSTALL_URL}"'
)
#: The folder, inside the installed package, that holds the copy of data/ (pyproject.toml).
INSTALLED_DATA = "_data"

COURSE_TOKENIZER = ("xmarva/tfs-bpe-en-ru-16k", "tokenizer.json")
COURSE_DATASET = "xmarva/tfs-tatoeba-en-ru"
SPLITS = ("train", "validation")

#: Real Hub files whose copies the course ships in data/hub (a Hub cache).
COPIED_FILES = {
    ("model", "openai-community/gpt2"): ("config.json",),
    ("model", "Helsinki-NLP/opus-mt-en-ru"): ("config.json",),
    ("model", "unsloth/Meta-Llama-3.1-8B"): ("config.json",),
    ("model", "deepseek-ai/DeepSeek-V3"): ("config.json",),
}
#: The course's own Hub repositories, and the files of the course's own data that stand in
#: for them offline (paths relative to data/): not copies, smaller data under its own name.
STAND_INS = {
    ("model", COURSE_TOKENIZER[0]): {COURSE_TOKENIZER[1]: "corpus/tokenizer.json"},
    ("dataset", COURSE_DATASET): {
        f"data/{split}.parquet": f"corpus/{split}.parquet" for split in SPLITS
    },
}
#: Real models whose weights the course does not ship, and the folder of data/ holding the
#: course's own model that stands in for them offline (tfs.marian.marian_folder): not a copy,
#: a much smaller model of the same kind under its own name.
STAND_IN_MODELS = {"Helsinki-NLP/opus-mt-en-ru": "tfs_translator_en_ru"}
#: Every Hub file a lesson asks for, (repo_type, repo_id) -> file names; all are served offline.
SHIPPED_FILES = COPIED_FILES | {repo: tuple(files) for repo, files in STAND_INS.items()}

SOURCE_LINES = {
    "online": "Hub files: downloaded from the Hugging Face Hub",
    "offline": "Hub files: offline ({why}); the models' configs are copies that come with the "
    "course",
}
STAND_IN_LINES = {
    COURSE_DATASET: "offline: the course's own hand-written corpus ({size:,} pairs) stands in "
    "for " + COURSE_DATASET,
    COURSE_TOKENIZER[0]: "offline: the course's own tokenizer ({size:,} tokens, trained on its "
    "hand-written corpus) stands in for " + COURSE_TOKENIZER[0],
    "Helsinki-NLP/opus-mt-en-ru": "offline: the course's own translator ({size:,} parameters, "
    "trained on its generated corpus) stands in for "
    "Helsinki-NLP/opus-mt-en-ru's weights",
}


class HubFileMissing(FileNotFoundError):
    """A file the lesson asked for is not available: not shipped, or deleted from data/."""


class HubFileCorrupt(ValueError):
    """A file was found but cannot be read (damaged or truncated)."""


_source: str | None = None
_announced: set[str] = set()  # the stand-ins whose line was printed in this process


# ---------------------------------------------------------------- where the files come from


def data_dir() -> Path:
    """The folder with the course's shipped data.

    TFS_DATA_DIR if set; else the checkout's data/ when tfs is imported from a clone of the
    course; else the copy of data/ installed with tfs (tfs/_data), as on Colab and Kaggle.
    """
    if os.environ.get("TFS_DATA_DIR"):
        return Path(os.environ["TFS_DATA_DIR"])
    from tfs.env import repo_root  # imported here: tfs.env imports torch

    root = repo_root()
    if root is not None:
        return root / "data"
    installed = installed_data_dir()
    if not installed.is_dir():
        raise HubFileMissing(
            f"the shipped data is not available: tfs runs without the course's checkout, and "
            f"the copy of data/ installed with it ({installed}) is missing; {REINSTALL}, or "
            "clone the course (or set TFS_DATA_DIR to its data/ folder)"
        )
    return installed


def installed_data_dir() -> Path:
    """Where an installed tfs keeps its copy of data/: the folder tfs/_data of the package."""
    return Path(__file__).resolve().parent / INSTALLED_DATA


def restore_hint() -> str:
    """How to restore a missing or damaged shipped file, for where the data comes from now:
    `git checkout -- data/` in a checkout, reinstalling tfs when it was installed with its
    data, and that copied again when TFS_DATA_DIR points at a copy of data/."""
    if os.environ.get("TFS_DATA_DIR"):
        return f"{RESTORE}, then copy its data/ to TFS_DATA_DIR ({os.environ['TFS_DATA_DIR']})"
    from tfs.env import repo_root

    return RESTORE if repo_root() is not None else REINSTALL


def shipped_cache() -> Path:
    """The shipped Hub cache, data/hub, with the copied configs (read only)."""
    return data_dir() / "hub"


def stand_in_path(repo_id: str, filename: str, repo_type: str | None = None) -> Path | None:
    """The course's own file that stands in for a Hub file offline, or None if there is none."""
    relative = STAND_INS.get((repo_type or "model", repo_id), {}).get(filename)
    return None if relative is None else data_dir() / relative


def endpoint() -> str:
    """The Hub's address: HF_ENDPOINT, else https://huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def offline_requested() -> bool:
    """True when HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is 1, true, yes or on."""
    return any(
        os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def hub_reachable(timeout: float = PROBE_TIMEOUT_S) -> bool:
    """One HEAD request to the Hub, no retries: True if it answers within `timeout` seconds.

    Any answer below 500 counts (the Hub is up); no answer, a refused connection, a DNS
    or TLS failure, or a server error count as unreachable. The request runs in a thread,
    so even a name lookup that hangs cannot make the caller wait longer than `timeout`.
    """
    answers = []

    def probe():
        request = urllib.request.Request(endpoint() + "/", method="HEAD")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                answers.append(response.status)
        except urllib.error.HTTPError as error:  # the Hub answered, with an error status
            answers.append(error.code)
            error.close()
        except Exception:  # no network, refused, DNS, TLS, time-out
            pass

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answers) and answers[0] < 500


def source(announce: bool = True) -> str:
    """Where Hub files come from in this process: "online" or "offline".

    Decided once, at the first call, which also prints one line saying so (unless
    `announce` is False: a lesson that prints its own line). Offline also means offline
    for huggingface_hub itself: HF_HUB_OFFLINE is set for the process.
    """
    global _source
    if not isinstance(announce, bool):
        raise TypeError(f"announce must be True or False, got {announce!r}")
    if _source is None:
        if offline_requested():
            _source, why = "offline", "the environment asks for offline use"
        elif hub_reachable():
            _source, why = "online", ""
        else:
            _source, why = "offline", "the Hub cannot be reached"
        if _source == "offline":
            _tell_huggingface_hub_offline()
        if announce:
            print(SOURCE_LINES[_source].format(why=why))
    return _source


def _tell_huggingface_hub_offline() -> None:
    """Make huggingface_hub offline too, for the rest of the process.

    Otherwise, even when it serves a cached file, it may first try the Hub once
    (for its user-agent header) and wait for a time-out.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"  # read by huggingface_hub when it is imported
    if "huggingface_hub.constants" in sys.modules:  # already imported: update its setting
        sys.modules["huggingface_hub.constants"].HF_HUB_OFFLINE = True


def reset_source() -> None:
    """Forget the decision, so the next call decides (and prints) again. For tests."""
    global _source
    _source = None
    _announced.clear()


def _switch_to_shipped(what: str, error: Exception) -> None:
    global _source
    _source = "offline"
    _tell_huggingface_hub_offline()
    name = type(error).__name__
    print(f"Hub files: {what} failed ({name}); offline from now on (the course's shipped data)")


def _network_error(error: Exception) -> bool:
    """True if `error` means the Hub could not be reached (rather than a wrong request)."""
    try:
        from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled
    except ImportError:  # huggingface_hub < 0.23
        from huggingface_hub.utils import LocalEntryNotFoundError, OfflineModeIsEnabled
    network = (LocalEntryNotFoundError, OfflineModeIsEnabled, ConnectionError, TimeoutError)
    return isinstance(error, network) or not hub_reachable()


# ---------------------------------------------------------------- checks and messages


def _check_args(repo_id, filename, repo_type) -> str:
    for name, value in (("repo_id", repo_id), ("filename", filename)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}: {value!r}")
        if not value.strip():
            raise ValueError(f"{name} must not be empty")
    if repo_type not in (None, "model", "dataset", "space"):
        raise ValueError(f"repo_type must be None, 'model', 'dataset' or 'space': {repo_type!r}")
    return repo_type or "model"


def _is_shipped(repo_id: str, filename: str, repo_type: str) -> bool:
    return filename in SHIPPED_FILES.get((repo_type, repo_id), ())


def _shipped_list() -> str:
    return ", ".join(
        f"{repo_id}: {name}" + (" (dataset)" if kind == "dataset" else "")
        for (kind, repo_id), names in SHIPPED_FILES.items()
        for name in names
    )


def _into_shipped_cache(path) -> bool:
    """True if `path` lies in the shipped data/ (False when there is no shipped data)."""
    try:
        Path(path).resolve().relative_to(data_dir().resolve())
    except (ValueError, HubFileMissing):
        return False
    return True


def _missing(path) -> HubFileMissing:
    """The error for a shipped file that is not there: it names the file and how to restore it."""
    return HubFileMissing(f"the shipped file {path} is missing; {restore_hint()}")


def _corrupt(path, problem) -> HubFileCorrupt:
    """The error for a file that exists but cannot be read."""
    text = str(problem).strip()
    problem = text.splitlines()[0] if text else type(problem).__name__
    if _into_shipped_cache(path):
        return HubFileCorrupt(f"the shipped file {path} is damaged ({problem}); {restore_hint()}")
    return HubFileCorrupt(
        f"the downloaded file {path} is damaged ({problem}); delete it and run again, "
        "or call hf_hub_download(..., force_download=True)"
    )


def _check_readable(path: Path) -> None:
    """Cheap checks that a shipped file is what its name says (JSON, Parquet)."""
    try:
        if path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
        elif path.suffix == ".parquet":  # starts and ends with the magic bytes PAR1
            with open(path, "rb") as file:
                head = file.read(4)
                file.seek(max(path.stat().st_size - 4, 0))
                if path.stat().st_size < 12 or head != b"PAR1" or file.read(4) != b"PAR1":
                    raise ValueError("not a Parquet file")
    except (ValueError, UnicodeDecodeError, OSError) as error:
        raise _corrupt(path, error) from None


# ---------------------------------------------------------------- the API lessons use


def hf_hub_download(repo_id: str, filename: str, repo_type: str | None = None, **kwargs) -> str:
    """The local path of a Hub file, like `huggingface_hub.hf_hub_download`.

    Online, the real `hf_hub_download(repo_id, filename, repo_type=..., **kwargs)`: the file
    is downloaded into your usual cache. Offline (see `source()`), a model's config is the
    copy shipped in data/hub, and a file of the course's own repositories is the course's own
    stand-in for it (a line says so the first time); of the keyword arguments only `revision`
    matters there. If an online download fails because the Hub went away, the shipped file
    is used instead.
    """
    repo_type = _check_args(repo_id, filename, repo_type)
    if source() == "online":
        import huggingface_hub
        from huggingface_hub import constants

        cache_dir = kwargs.get("cache_dir") or constants.HF_HUB_CACHE
        if _into_shipped_cache(cache_dir):
            raise ValueError(
                f"refusing to download into the shipped cache {cache_dir}: unset HF_HUB_CACHE "
                "(or pass another cache_dir); the course's data/ is kept as shipped"
            )
        try:
            return huggingface_hub.hf_hub_download(repo_id, filename, repo_type=repo_type, **kwargs)
        except Exception as error:
            if not (_is_shipped(repo_id, filename, repo_type) and _network_error(error)):
                raise
            _switch_to_shipped(f"downloading {repo_id}/{filename}", error)
    return str(_shipped_file(repo_id, filename, repo_type, kwargs.get("revision")))


def _shipped_file(repo_id: str, filename: str, repo_type: str, revision=None) -> Path:
    """The file served offline: a copied config (through the real hf_hub_download, from
    data/hub) or the course's own stand-in for a file of its Hub repositories."""
    import huggingface_hub

    if revision not in (None, "main", SHIPPED_REVISION):
        raise HubFileMissing(f"only the main revision is shipped, not {revision!r}")
    if not _is_shipped(repo_id, filename, repo_type):
        raise HubFileMissing(
            f"{repo_id} ({repo_type}): {filename} is not shipped with the course, so it needs "
            f"the internet (unset HF_HUB_OFFLINE). Shipped files: {_shipped_list()}"
        )
    stand_in = stand_in_path(repo_id, filename, repo_type)
    if stand_in is not None:
        if not stand_in.is_file():
            raise _missing(stand_in)
        _check_readable(stand_in)
        _announce(repo_id)
        return stand_in
    cache = shipped_cache()
    if not cache.is_dir():
        raise HubFileMissing(f"the shipped Hub cache {cache} is missing; {restore_hint()}")
    try:
        path = huggingface_hub.hf_hub_download(
            repo_id,
            filename,
            repo_type=repo_type,
            revision=revision,
            cache_dir=cache,
            local_files_only=True,
        )
    except FileNotFoundError:  # LocalEntryNotFoundError: the shipped copy is gone
        folder = cache / f"{repo_type}s--{repo_id.replace('/', '--')}"
        ref = folder / "refs" / "main"
        missing = ref if not ref.is_file() else folder / "snapshots" / SHIPPED_REVISION / filename
        raise _missing(missing) from None
    _check_readable(Path(path))
    return Path(path)


def _announce(repo_id: str) -> None:
    """Print, once per process, which of the course's own data stands in for `repo_id`."""
    if repo_id in _announced:
        return
    _announced.add(repo_id)
    if repo_id == COURSE_DATASET:
        import pyarrow.parquet as pq

        size = 0
        for relative in STAND_INS["dataset", COURSE_DATASET].values():
            path = data_dir() / relative
            try:
                size += pq.read_metadata(path).num_rows
            except Exception as error:  # pyarrow's errors are not for the reader
                if not path.is_file():
                    raise _missing(path) from None
                raise _corrupt(path, error) from None
    else:
        from tokenizers import Tokenizer

        path = stand_in_path(*COURSE_TOKENIZER)
        try:
            size = Tokenizer.from_file(str(path)).get_vocab_size()
        except Exception as error:  # the tokenizers library raises a plain Exception
            raise _corrupt(path, error) from None
    print(STAND_IN_LINES[repo_id].format(size=size))


def file_size(repo_id: str, filename: str) -> int:
    """The size in bytes of a file in a model repository on the Hub.

    Online, from the Hub's file metadata (`HfApi().model_info(repo_id, files_metadata=True)`);
    offline, the size recorded in data/hub/file_sizes.json. Nothing is downloaded.
    """
    _check_args(repo_id, filename, None)
    if source() == "online":
        from huggingface_hub import HfApi

        try:
            info = HfApi().model_info(repo_id, files_metadata=True)
        except Exception as error:
            if not (_has_recorded_size(repo_id, filename) and _network_error(error)):
                raise
            _switch_to_shipped(f"asking the Hub about {repo_id}", error)
        else:
            for sibling in info.siblings or []:
                if sibling.rfilename == filename and sibling.size is not None:
                    return int(sibling.size)
            raise HubFileMissing(f"{repo_id} has no file {filename!r} on the Hub")
    size = _recorded_sizes().get(repo_id, {}).get(filename)
    if size is None:
        raise HubFileMissing(
            f"no size is recorded for {repo_id}: {filename}, so it needs the internet "
            f"(unset HF_HUB_OFFLINE). Recorded: {_recorded_sizes()}"
        )
    return size


def _has_recorded_size(repo_id: str, filename: str) -> bool:
    try:
        return filename in _recorded_sizes().get(repo_id, {})
    except (HubFileMissing, HubFileCorrupt):
        return False


def _recorded_sizes() -> dict:
    """{repo_id: {filename: bytes}} from data/hub/file_sizes.json."""
    path = shipped_cache() / "file_sizes.json"
    if not path.is_file():
        raise _missing(path)
    try:
        sizes = json.loads(path.read_text(encoding="utf-8"))["sizes"]
        numbers = [n for files in sizes.values() for n in files.values()]
        if not all(isinstance(n, int) and n > 0 for n in numbers):
            raise ValueError("sizes must be positive integers")
    except (ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as error:
        raise _corrupt(path, error) from None
    return sizes


def course_tokenizer():
    """The course's BPE tokenizer (English and Russian), a `tokenizers.Tokenizer`.

    From the Hub repository xmarva/tfs-bpe-en-ru-16k online (16,000 tokens); offline, the
    course's own smaller tokenizer stands in for it (a line says so and gives its size).
    """
    from tokenizers import Tokenizer

    path = hf_hub_download(*COURSE_TOKENIZER)
    try:
        return Tokenizer.from_file(path)
    except Exception as error:  # the tokenizers library raises a plain Exception
        raise _corrupt(path, error) from None


def course_pairs(split: str = "validation"):
    """The course's English–Russian sentence pairs: a pandas DataFrame with columns en, ru.

    `split` is "train" or "validation". From the Hub dataset xmarva/tfs-tatoeba-en-ru
    online; offline, the course's own hand-written corpus stands in for it (a line says so
    and gives its size; print a split's size rather than assuming it).
    """
    if not isinstance(split, str):
        raise TypeError(f"split must be a string, got {type(split).__name__}: {split!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    import pandas as pd

    path = hf_hub_download(COURSE_DATASET, f"data/{split}.parquet", repo_type="dataset")
    try:
        pairs = pd.read_parquet(path)
    except Exception as error:  # pyarrow's errors are not for the reader
        raise _corrupt(path, error) from None
    if not {"en", "ru"} <= set(pairs.columns):
        raise _corrupt(path, f"columns en and ru expected, found {list(pairs.columns)}")
    return pairs[["en", "ru"]].reset_index(drop=True)
