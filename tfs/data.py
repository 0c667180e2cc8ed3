"""The course's generated English–Russian corpus (data/gen_en_ru/), for lesson 05.

    from tfs.data import load_pairs, load_tokenizer
    train = load_pairs("train")    # [{"en": ..., "ru": ..., "structure": ..., "phenomena": ...}]
    tokenizer = load_tokenizer()   # a tokenizers.Tokenizer: <pad>=0, <bos>=1, <eos>=2

The corpus ships with the course (it is small); it is found the way `tfs.hub` finds the
shipped data: in TFS_DATA_DIR if set, else in the checkout's `data/`, else in the copy of
`data/` installed with tfs (`tfs.hub.data_dir`). How it was made,
and what each split holds, is in data/gen_en_ru/CARD.md.
"""

from __future__ import annotations

import csv
from pathlib import Path

CORPUS_NAME = "gen_en_ru"
#: The splits with the columns en, ru, structure, phenomena.
SPLITS = ("train", "valid", "test_combinations", "test_systematic", "test_longer")
#: The contrastive split: en, ru, ru_broken (one agreement broken), phenomenon.
AGREEMENT_SPLIT = "test_agreement"
ALL_SPLITS = SPLITS + (AGREEMENT_SPLIT,)
#: Hand-written everyday sentences (en, ru), not generated: `load_everyday`.
EVERYDAY = "everyday"
COLUMNS = {name: ("en", "ru", "structure", "phenomena") for name in SPLITS}
COLUMNS[AGREEMENT_SPLIT] = ("en", "ru", "ru_broken", "phenomenon")
#: The phenomenon tags used in the `phenomena` column.
PHENOMENA = (
    "gender", "past_agreement", "numbers", "negation", "aspect", "questions", "cases",
    "adjective_agreement", "relative_clause", "two_clauses",
)
#: How to restore a file of the checkout's data/ (the messages use `tfs.hub.restore_hint()`,
#: which also knows an installed tfs and TFS_DATA_DIR).
RESTORE = "restore it with `git checkout -- data/` in the course's folder (or clone it again)"


class CorpusMissing(FileNotFoundError):
    """The generated corpus (or one of its files) is not where the course keeps it."""


def _restore() -> str:
    from tfs.hub import restore_hint

    return restore_hint()


def corpus_dir() -> Path:
    """The folder of the generated corpus: <data>/gen_en_ru, <data> as in tfs.hub.data_dir."""
    from tfs.hub import HubFileMissing, data_dir

    try:
        folder = data_dir() / CORPUS_NAME
    except HubFileMissing as error:
        raise CorpusMissing(str(error).replace("shipped data", "generated corpus")) from None
    if not folder.is_dir():
        raise CorpusMissing(f"the generated corpus {folder} is missing; {_restore()}")
    return folder


def _file(name: str) -> Path:
    path = corpus_dir() / name
    if not path.is_file():
        raise CorpusMissing(f"the corpus file {path} is missing; {_restore()}")
    return path


def load_pairs(split: str) -> list[dict]:
    """The rows of one split, in file order, as dicts keyed by the split's columns.

    `split` is one of SPLITS ("train", "valid", "test_combinations", "test_systematic",
    "test_longer") or "test_agreement" (columns en, ru, ru_broken, phenomenon).
    """
    if not isinstance(split, str):
        raise TypeError(f"split must be a string, got {type(split).__name__}: {split!r}")
    if split not in ALL_SPLITS:
        raise ValueError(f"unknown split {split!r}; the splits are {', '.join(ALL_SPLITS)}")
    return _read(f"{split}.tsv", COLUMNS[split])


def _read(name: str, columns: tuple[str, ...]) -> list[dict]:
    path = _file(name)
    with open(path, encoding="utf-8", newline="") as file:
        reader = csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if tuple(header or ()) != columns:
            raise ValueError(
                f"the corpus file {path} is damaged: header {header}, expected "
                f"{list(columns)}; {_restore()}"
            )
        rows = []
        for number, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise ValueError(
                    f"the corpus file {path} is damaged at line {number}: {len(row)} fields, "
                    f"expected {len(header)}; {_restore()}"
                )
            rows.append(dict(zip(header, row, strict=True)))
    return rows


def load_everyday() -> list[dict]:
    """30 everyday sentences written by hand, none of them a training sentence, whose every
    English word and every Russian word occurs in train: {"en": ..., "ru": ...} dicts."""
    return _read(f"{EVERYDAY}.tsv", ("en", "ru"))


def load_tokenizer():
    """The corpus's BPE tokenizer (a `tokenizers.Tokenizer`): <pad>=0, <bos>=1, <eos>=2, <unk>=3.

    Encoding adds no special tokens; add <bos>/<eos> yourself.
    """
    from tokenizers import Tokenizer

    path = _file("tokenizer.json")
    try:
        return Tokenizer.from_file(str(path))
    except Exception as error:  # the tokenizers library raises a plain Exception
        raise ValueError(f"the corpus file {path} is damaged ({error}); {_restore()}") from None


#: The test splits the harder selection (`far_pairs`) draws from.
TEST_SPLITS = ("test_combinations", "test_systematic", "test_longer")


def far_pairs(min_words: int = 2) -> list[dict]:
    """The test sentences far from training: the rows of test_combinations, test_systematic
    and test_longer whose English differs in at least `min_words` words from every training
    sentence (words compared position by position, as `tfs.baselines.TranslationMemory`
    does). Each row gains `split` (the split it comes from) and `distance` (the differing
    words of its nearest training sentence)."""
    from tfs.baselines import TranslationMemory

    if isinstance(min_words, bool) or not isinstance(min_words, int):
        raise TypeError(f"min_words must be an integer, got {type(min_words).__name__}")
    if min_words < 1:
        raise ValueError(f"min_words must be at least 1, got {min_words}")
    memory = TranslationMemory(load_pairs("train"))
    rows = []
    for split in TEST_SPLITS:
        for row in load_pairs(split):
            distance = memory.nearest(row["en"])[1]
            if distance >= min_words:
                rows.append({**row, "split": split, "distance": distance})
    return rows
