"""The course's hand-written English-Russian corpus and its tokenizer (data/corpus/).

scripts/build_data.py made train.parquet, validation.parquet and tokenizer.json
from data/corpus/*.tsv; the last tests rebuild them and compare. Offline, tfs.hub
serves them in place of the course's Hub repositories (tests/test_hub.py).
"""

import hashlib
import importlib.util
import re
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = ROOT / "data" / "corpus"

spec = importlib.util.spec_from_file_location("build_data", ROOT / "scripts" / "build_data.py")
build_data = importlib.util.module_from_spec(spec)
sys.modules["build_data"] = build_data  # dataclasses look their module up there
spec.loader.exec_module(build_data)

COURSE_EN = "The researcher said she was exhausted."
COURSE_RU = "Исследовательница сказала, что вымоталась."
LATIN_WORD = re.compile(r"[A-Za-z]")
CYRILLIC_WORD = re.compile(r"[А-Яа-яЁё]")
ANY_LETTER = re.compile(r"[^\W\d_]")  # a letter of any script


def read_split(name):
    table = pq.read_table(CORPUS_DIR / f"{name}.parquet")
    assert table.column_names == ["en", "ru"], f"{name}: columns {table.column_names}"
    return list(zip(table.column("en").to_pylist(), table.column("ru").to_pylist(), strict=True))


@pytest.fixture(scope="module")
def train():
    return read_split("train")


@pytest.fixture(scope="module")
def validation():
    return read_split("validation")


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer.from_file(str(CORPUS_DIR / "tokenizer.json"))


def words(text):
    return len(text.split())


# --- the splits -----------------------------------------------------------------


def test_sizes(train, validation):
    assert len(set(train) | set(validation)) >= 1000, "at least 1,000 distinct pairs"
    assert len(validation) >= 200
    assert len(train) > len(validation)


def test_columns_are_plain_strings_without_an_index():
    schema = pq.read_schema(CORPUS_DIR / "validation.parquet")
    assert [str(schema.field(name).type) for name in schema.names] == ["string", "string"]
    assert b"pandas" not in (schema.metadata or {}), "no pandas metadata, no index column"


def test_no_english_sentence_is_in_both_splits(train, validation):
    shared = {en for en, _ in train} & {en for en, _ in validation}
    assert not shared, f"in both splits: {sorted(shared)[:5]}"


def test_alternative_translations_exist_and_stay_together(validation):
    english = [en for en, _ in validation]
    alternatives = {en for en in english if english.count(en) == 2}
    assert len(alternatives) >= 3, "validation keeps some sentences with two translations"
    for en in alternatives:
        first = english.index(en)
        assert english[first + 1] == en, f"the translations of {en!r} are not adjacent"


@pytest.mark.parametrize("split", ["train", "validation"])
def test_english_is_latin_and_russian_is_cyrillic(split, request):
    for en, ru in request.getfixturevalue(split):
        assert all(LATIN_WORD.fullmatch(ch) for ch in ANY_LETTER.findall(en)), en
        assert all(CYRILLIC_WORD.fullmatch(ch) for ch in ANY_LETTER.findall(ru)), ru
        assert LATIN_WORD.search(en) and CYRILLIC_WORD.search(ru), (en, ru)


def test_no_empty_or_duplicate_pairs(train, validation):
    pairs = train + validation
    assert all(en.strip() and ru.strip() for en, ru in pairs)
    assert all(en == en.strip() and ru == ru.strip() for en, ru in pairs)
    assert not any("  " in en or "  " in ru or "\t" in en + ru for en, ru in pairs)
    assert len(set(pairs)) == len(pairs), "a pair appears twice"


def test_word_counts(train, validation):
    for en, ru in train + validation:
        assert 2 <= words(en) <= 15, en
        assert 1 <= words(ru) <= 15, ru  # "Come in!" is one Russian word: "Входи!"


def test_the_course_sentence_is_in_validation(train, validation):
    assert (COURSE_EN, COURSE_RU) in validation
    assert COURSE_EN not in {en for en, _ in train}


def test_validation_has_what_the_lessons_pick(validation):
    english = {en for en, _ in validation}
    assert len(english - {COURSE_EN}) >= 15, "16 pairs to learn by heart, ours included"
    assert sum(words(en) == 2 for en in english) >= 5, "2-word sentences for the padding demo"
    assert sum(words(en) == 10 for en in english) >= 5, "10-word sentences for the padding demo"


def test_the_shipped_splits_are_the_corpus(train, validation):
    sources = {(pair.en, pair.ru) for pair in build_data.read_corpus()}
    assert set(train) | set(validation) == sources


# --- the tokenizer ----------------------------------------------------------------


def test_special_tokens(tokenizer):
    ids = {token: tokenizer.token_to_id(token) for token in ["<pad>", "<bos>", "<eos>", "<unk>"]}
    assert ids == {"<pad>": 0, "<bos>": 1, "<eos>": 2, "<unk>": 3}
    assert tokenizer.get_vocab_size() == build_data.VOCAB_SIZE
    assert tokenizer.token_to_id("!") is not None, "lesson 02 swaps the final '.' for '!'"


def test_encoding_adds_no_special_tokens(tokenizer):
    ids = tokenizer.encode(COURSE_RU).ids
    assert not {0, 1, 2, 3} & set(ids), "lessons add <bos>/<eos> themselves"


def test_tokens_show_real_letters(tokenizer):
    tokens = tokenizer.encode(COURSE_RU).tokens
    assert "".join(tokens).replace("▁", " ") == " " + COURSE_RU
    assert all(CYRILLIC_WORD.search(token) or not ANY_LETTER.search(token) for token in tokens)


def test_one_vocabulary_for_both_languages(tokenizer):
    vocab = tokenizer.get_vocab()
    assert sum(bool(LATIN_WORD.search(token)) for token in vocab) >= 300
    assert sum(bool(CYRILLIC_WORD.search(token)) for token in vocab) >= 300


def test_bpe_learned_subwords_not_only_whole_words(tokenizer, train, validation):
    texts = [text for pair in train + validation for text in pair]
    encoded = tokenizer.encode_batch(texts)
    words_in_texts = sum(len(text.split()) for text in texts)
    tokens = sum(len(encoding.ids) for encoding in encoded)
    assert tokens > words_in_texts, "some words are cut into several tokens"
    assert any(not token.startswith("▁") and len(token) >= 3 for token in tokenizer.get_vocab())


def test_every_sentence_round_trips(tokenizer, train, validation):
    unk = tokenizer.token_to_id("<unk>")
    for en, ru in train + validation:
        for text in (en, ru):
            ids = tokenizer.encode(text).ids
            assert unk not in ids, text
            assert tokenizer.decode(ids) == text


# --- the build -------------------------------------------------------------------


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_rebuilding_gives_identical_files(tmp_path):
    shipped = build_data.output_paths(CORPUS_DIR)
    rebuilt = build_data.build(tmp_path)
    assert rebuilt.keys() == shipped.keys()
    for name in shipped:
        assert digest(rebuilt[name]) == digest(shipped[name]), (
            f"{shipped[name].relative_to(ROOT)} differs from a fresh build: run "
            "`.venv/bin/python scripts/build_data.py` (pinned pyarrow and tokenizers) or "
            "`git checkout -- data/`"
        )


def test_the_split_is_stable_under_reordering_of_the_sources():
    pairs = build_data.read_corpus()
    train, validation = build_data.split_corpus(pairs)
    again = build_data.split_corpus(list(reversed(pairs)))
    assert {en for en, _ in again[1]} == {en for en, _ in validation}
    assert len(again[0]) == len(train)


# --- the build's checks catch bad lines -----------------------------------------------

GOOD = f"{COURSE_EN}\t{COURSE_RU}\nTom left.\tТом ушёл.\n"


@pytest.mark.parametrize(
    "text, message",
    [
        ("Tom left.\tТом ушел.\nTom left.\tТом ушел.\n", "duplicate pair"),
        ("Tom left.\tTom ушёл.\n", "outside the ru alphabet"),
        ("Том left.\tТом ушёл.\n", "outside the en alphabet"),
        ("Tom  left.\tТом ушёл.\n", "double space"),
        ("Tom left. \tТом ушёл.\n", "trailing space"),
        ("Tom left.\t\n", "empty"),
        ("Left.\tУшёл.\n", "1 words"),
        ("Tom left.\tТом ушёл.\tlate\n", "2 tab-separated fields"),
        ("Tom left?\tТом ушёл.\n", "question on one side"),
        ("Hi!\tПривет!\nHi!\tЗдравствуй!\nHi!\tЗдравствуйте!\n".replace("Hi!", "Hi there!"),
         "3 translations"),
    ],
)
def test_bad_lines_are_rejected(tmp_path, text, message):
    (tmp_path / "a.tsv").write_text(GOOD, encoding="utf-8")
    (tmp_path / "b.tsv").write_text(text, encoding="utf-8")
    with pytest.raises(build_data.CorpusError, match=message):
        build_data.read_corpus(tmp_path)


def test_the_course_pair_is_required(tmp_path):
    (tmp_path / "a.tsv").write_text("Tom left.\tТом ушёл.\n", encoding="utf-8")
    with pytest.raises(build_data.CorpusError, match="course pair"):
        build_data.read_corpus(tmp_path)


# --- the card and the licence ----------------------------------------------------------


def test_the_card_and_the_licence_are_beside_the_data(train, validation):
    card = (CORPUS_DIR / "CARD.md").read_text(encoding="utf-8")
    total = len(train) + len(validation)
    assert f"{total:,} English–Russian sentence pairs" in card
    assert f"({len(train):,} for training, {len(validation):,} for validation)" in card
    assert "CC BY 4.0" in card and "CC BY 4.0" in (CORPUS_DIR / "LICENSE").read_text()


def test_english_is_spelled_one_way():
    # American spelling throughout (the corpus's majority): no British variant is left
    british = re.compile(r"\b(\w+our|\w+tre|cancelled|travell\w+|\w+ise[ds]?|grey|mum)\b", re.I)
    allowed = {"your", "our", "four", "hour", "sour", "surprise", "surprised", "raise", "noise",
               "promised", "promise"}
    found = set()
    for pair in build_data.read_corpus():
        found |= {w.lower() for w in british.findall(pair.en)} - allowed
    assert not found, sorted(found)
