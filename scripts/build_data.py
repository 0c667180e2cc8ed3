"""Build the course's offline data from the corpus in data/corpus/.

Reads the English-Russian pairs written by hand for this project
(data/corpus/*.tsv, one `en<TAB>ru` pair a line), checks every line, splits the
pairs into train and validation, writes both splits as Parquet and trains a BPE
tokenizer on them (the course's one recipe, tfs.bpe.train_course_tokenizer):

    data/corpus/train.parquet        columns en, ru
    data/corpus/validation.parquet   columns en, ru
    data/corpus/tokenizer.json       BPE, <pad>=0, <bos>=1, <eos>=2, <unk>=3

These are the course's own data, under its own name. Offline, tfs.hub serves
them in place of the course's Hub repositories xmarva/tfs-tatoeba-en-ru and
xmarva/tfs-bpe-en-ru-16k (which are far larger), and prints a line saying so.

The build is deterministic: run it twice and every file is identical, byte
for byte (with the versions of pyarrow and tokenizers pinned in
requirements.txt).

    .venv/bin/python scripts/build_data.py              # rebuild data/corpus/*.parquet, .json
    .venv/bin/python scripts/build_data.py --out DIR    # build into another folder
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from tokenizers import Tokenizer

from tfs.bpe import check_round_trip, train_course_tokenizer

ROOT = Path(__file__).resolve().parent.parent

CORPUS_DIR = ROOT / "data" / "corpus"
OUT_DIR = CORPUS_DIR  # the derived files sit beside the .tsv files they come from

TOKENIZER_FILE = "tokenizer.json"
SPLIT_FILES = {"train": "train.parquet", "validation": "validation.parquet"}

# The sentence the course follows from lesson to lesson; it must be in validation.
COURSE_PAIR = (
    "The researcher said she was exhausted.",
    "Исследовательница сказала, что вымоталась.",
)

VOCAB_SIZE = 2000
MIN_PAIR_FREQUENCY = 2  # a merge must be seen at least twice

VALIDATION_PAIRS = 250  # the target size of the validation split
MAX_TRANSLATIONS = 2  # alternative Russian translations of one English sentence
MIN_WORDS, MAX_WORDS = 2, 15  # English words (str.split); Russian may have 1 ("Входи!")

# What a field may contain: letters of its own script, digits, spaces, ordinary punctuation.
EN_ALLOWED = re.compile(r"[A-Za-z0-9 .,!?'\-:;]+")
RU_ALLOWED = re.compile(r"[А-Яа-яЁё0-9 .,!?\-:;—]+")
SENTENCE_END = (".", "!", "?")


@dataclass(frozen=True)
class Pair:
    en: str
    ru: str
    source: str  # "family.tsv:12", for error messages


class CorpusError(ValueError):
    """A line of the corpus breaks one of its rules."""


def check_field(text: str, language: str, where: str) -> None:
    """Raise CorpusError if one side of a pair is not a clean sentence of its language."""
    allowed = EN_ALLOWED if language == "en" else RU_ALLOWED
    words = text.split()
    low = MIN_WORDS if language == "en" else 1
    problems = []
    if not text:
        problems.append("empty")
    elif text != text.strip():
        problems.append("leading or trailing space")
    if "  " in text:
        problems.append("double space")
    if unicodedata.normalize("NFC", text) != text:
        problems.append("not NFC-normalized")
    if text and not allowed.fullmatch(text):
        bad = sorted({ch for ch in text if not allowed.fullmatch(ch)})
        problems.append(f"characters outside the {language} alphabet: {bad}")
    if language == "en" and not re.search(r"[A-Za-z]", text):
        problems.append("no Latin letter")
    if language == "ru" and not re.search(r"[А-Яа-яЁё]", text):
        problems.append("no Cyrillic letter")
    if not low <= len(words) <= MAX_WORDS:
        problems.append(f"{len(words)} words, expected {low} to {MAX_WORDS}")
    if text and not text.endswith(SENTENCE_END):
        problems.append("does not end with . ! or ?")
    if problems:
        raise CorpusError(f"{where}: {language} {text!r}: " + "; ".join(problems))


def read_corpus(corpus_dir: Path = CORPUS_DIR) -> list[Pair]:
    """Every pair of data/corpus/*.tsv, in file order, checked line by line."""
    files = sorted(Path(corpus_dir).glob("*.tsv"))
    if not files:
        raise CorpusError(f"no .tsv file in {corpus_dir}")
    pairs: list[Pair] = []
    seen: dict[tuple[str, str], str] = {}
    for path in files:
        raw = path.read_bytes()
        if b"\r" in raw:
            raise CorpusError(f"{path.name}: Windows line endings; use \\n only")
        if raw and not raw.endswith(b"\n"):
            raise CorpusError(f"{path.name}: the last line must end with a newline")
        for number, line in enumerate(raw.decode("utf-8").split("\n")[:-1], start=1):
            where = f"{path.name}:{number}"
            fields = line.split("\t")
            if len(fields) != 2:
                raise CorpusError(f"{where}: expected 2 tab-separated fields, got {len(fields)}")
            en, ru = fields
            check_field(en, "en", where)
            check_field(ru, "ru", where)
            if (en, ru) in seen:
                raise CorpusError(f"{where}: duplicate pair, first seen at {seen[en, ru]}")
            if en.endswith("?") != ru.endswith("?"):
                raise CorpusError(f"{where}: a question on one side only: {en!r} / {ru!r}")
            seen[en, ru] = where
            pairs.append(Pair(en, ru, where))
    translations = defaultdict(list)
    for pair in pairs:
        translations[pair.en].append(pair)
    for en, group in translations.items():
        if len(group) > MAX_TRANSLATIONS:
            places = ", ".join(p.source for p in group)
            raise CorpusError(f"{en!r} has {len(group)} translations ({places}), "
                              f"at most {MAX_TRANSLATIONS}")
    if COURSE_PAIR not in seen:
        raise CorpusError(f"the course pair {COURSE_PAIR} is missing from the corpus")
    return pairs


def english_key(en: str) -> str:
    """A stable pseudo-random order of English sentences (the same on every machine)."""
    return hashlib.sha256(en.encode("utf-8")).hexdigest()


def split_corpus(pairs: list[Pair], validation_pairs: int = VALIDATION_PAIRS):
    """Split into (train, validation), both lists of (en, ru), deterministically.

    All translations of one English sentence go to the same split. The split is
    stratified by the English word count, so validation has short and long
    sentences in the corpus's proportions; within each length the English
    sentences are taken in the order of their SHA-256, and the course sentence
    always goes to validation. Both splits are ordered by that hash (a shuffle
    that never changes), alternatives of one sentence next to each other.
    """
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for pair in pairs:
        groups[pair.en].append((pair.en, pair.ru))
    by_length: dict[int, list[str]] = defaultdict(list)
    for en in groups:
        by_length[len(en.split())].append(en)

    total = len(pairs)
    chosen: set[str] = {COURSE_PAIR[0]}
    for _, sentences in sorted(by_length.items()):
        bucket_pairs = sum(len(groups[en]) for en in sentences)
        quota = round(validation_pairs * bucket_pairs / total)
        taken = sum(len(groups[en]) for en in sentences if en in chosen)
        for en in sorted(sentences, key=english_key):
            if taken >= quota:
                break
            if en not in chosen:
                chosen.add(en)
                taken += len(groups[en])

    order = sorted(groups, key=english_key)
    train = [pair for en in order if en not in chosen for pair in groups[en]]
    validation = [pair for en in order if en in chosen for pair in groups[en]]
    return train, validation


def write_parquet(rows: list[tuple[str, str]], path: Path) -> None:
    """Two string columns, en and ru; no index column; fixed compression and settings."""
    table = pa.table(
        {
            "en": pa.array([en for en, _ in rows], type=pa.string()),
            "ru": pa.array([ru for _, ru in rows], type=pa.string()),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        table,
        path,
        compression="snappy",
        use_dictionary=False,
        write_statistics=False,
        version="2.6",
        data_page_version="1.0",
    )


def train_tokenizer(texts: list[str], vocab_size: int = VOCAB_SIZE) -> Tokenizer:
    """Train the shared English-Russian BPE on `texts` (the course's one recipe, tfs.bpe)."""
    return train_course_tokenizer(texts, vocab_size, MIN_PAIR_FREQUENCY)


def output_paths(out_dir: Path = OUT_DIR) -> dict[str, Path]:
    """Where build() writes each file: keys "tokenizer", "train", "validation"."""
    paths = {split: Path(out_dir) / name for split, name in SPLIT_FILES.items()}
    paths["tokenizer"] = Path(out_dir) / TOKENIZER_FILE
    return paths


def build(out_dir: Path = OUT_DIR, corpus_dir: Path = CORPUS_DIR) -> dict[str, Path]:
    """Read, check and split the corpus; write both splits and the tokenizer."""
    pairs = read_corpus(corpus_dir)
    train, validation = split_corpus(pairs)
    if COURSE_PAIR not in validation:
        raise RuntimeError("the course pair must be in validation")
    texts = [text for pair in train + validation for text in pair]
    tokenizer = train_tokenizer(texts)
    check_round_trip(tokenizer, texts)

    paths = output_paths(out_dir)
    write_parquet(train, paths["train"])
    write_parquet(validation, paths["validation"])
    # pretty=True: one token a line, so a rebuild shows up as a readable diff
    paths["tokenizer"].write_text(tokenizer.to_str(pretty=True) + "\n", encoding="utf-8")
    return paths


def summary(paths: dict[str, Path]) -> str:
    """A few numbers about what build() wrote."""
    tokenizer = Tokenizer.from_file(str(paths["tokenizer"]))
    lines = []
    for split in SPLIT_FILES:
        table = pq.read_table(paths[split])
        en, ru = table.column("en").to_pylist(), table.column("ru").to_pylist()
        en_tokens = sum(len(e.ids) for e in tokenizer.encode_batch(en)) / len(en)
        ru_tokens = sum(len(e.ids) for e in tokenizer.encode_batch(ru)) / len(ru)
        lines.append(
            f"{split:>10}: {len(en)} pairs, {len(set(en))} English sentences, "
            f"tokens per sentence en {en_tokens:.1f}, ru {ru_tokens:.1f}"
        )
    lines.append(f" tokenizer: {tokenizer.get_vocab_size()} tokens")
    for path in paths.values():
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        lines.append(f"{digest}  {path.stat().st_size:>7} B  {path.relative_to(ROOT)}"
                     if path.is_relative_to(ROOT) else f"{digest}  {path}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="the output folder")
    args = parser.parse_args(argv)
    try:
        paths = build(args.out)
    except CorpusError as error:
        print(f"corpus error: {error}", file=sys.stderr)
        return 1
    print(summary(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
