"""The course's generated corpus (data/gen_en_ru/) and tfs.data, which reads it.

The shipped files are read with tfs.data, as lesson 05 reads them; the build script
(scripts/build_corpus.py) is imported for what only it knows (its templates, the
forms test_systematic is built on) and to rebuild the files and compare bytes.
"""

import hashlib
import importlib.util
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tfs import data

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "data" / "gen_en_ru"

spec = importlib.util.spec_from_file_location("build_corpus", ROOT / "scripts" / "build_corpus.py")
build_corpus = importlib.util.module_from_spec(spec)
sys.modules["build_corpus"] = build_corpus  # dataclasses look their module up there
spec.loader.exec_module(build_corpus)

COURSE = ("The researcher said she was exhausted.", "Исследовательница сказала, что вымоталась.")
TWIN = ("The researcher said he was exhausted.", "Исследователь сказал, что вымотался.")
FILES = [f"{split}.tsv" for split in data.ALL_SPLITS] + ["tokenizer.json", "CARD.md", "LICENSE"]
# not made by the build: the everyday sentences (by hand), the seed runs (compare_seeds.py)
EXTRA = ["everyday.tsv", "seed_runs.tsv", "seed_table.tsv"]


@pytest.fixture(scope="module")
def splits():
    return {split: data.load_pairs(split) for split in data.ALL_SPLITS}


@pytest.fixture(scope="module")
def built():
    """The splits as the build script makes them (with each pair's structure and combination)."""
    return build_corpus.build_splits()


@pytest.fixture(scope="module")
def tokenizer():
    return data.load_tokenizer()


def forms(text):
    return build_corpus.ru_forms(text)


# --- the files and the interface -----------------------------------------------------


def test_every_file_is_shipped():
    assert sorted(p.name for p in SHIPPED.iterdir()) == sorted(FILES + EXTRA)


def test_the_splits_tfs_data_names_are_the_build_s():
    assert data.SPLITS == build_corpus.SPLITS
    assert data.AGREEMENT_SPLIT == build_corpus.AGREEMENT_SPLIT
    assert data.PHENOMENA == build_corpus.PHENOMENA


@pytest.mark.parametrize("split", data.ALL_SPLITS)
def test_headers_and_rows(split):
    lines = (SHIPPED / f"{split}.tsv").read_text(encoding="utf-8").split("\n")
    assert lines[0] == "\t".join(data.COLUMNS[split]) and lines[-1] == ""
    rows = data.load_pairs(split)
    assert len(rows) == len(lines) - 2 and rows
    assert all(list(row) == list(data.COLUMNS[split]) for row in rows)


def test_a_bad_split_name_is_named():
    with pytest.raises(ValueError, match="test_combinations"):
        data.load_pairs("test")
    with pytest.raises(TypeError, match="split"):
        data.load_pairs(3)


def test_missing_corpus_names_the_folder_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("TFS_DATA_DIR", str(tmp_path))
    with pytest.raises(data.CorpusMissing) as error:
        data.load_pairs("train")
    assert str(tmp_path / "gen_en_ru") in str(error.value)
    assert "git checkout -- data/" in str(error.value)
    (tmp_path / "gen_en_ru").mkdir()
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        data.load_tokenizer()


def test_a_damaged_file_is_named(tmp_path, monkeypatch):
    (tmp_path / "gen_en_ru").mkdir()
    (tmp_path / "gen_en_ru" / "valid.tsv").write_text("english\trussian\nHi.\tПривет.\n")
    (tmp_path / "gen_en_ru" / "tokenizer.json").write_text("{not json")
    monkeypatch.setenv("TFS_DATA_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="header"):
        data.load_pairs("valid")
    with pytest.raises(ValueError, match="tokenizer.json"):
        data.load_tokenizer()


def test_no_shipped_file_refers_to_a_path_outside_the_repository():
    for name in FILES:
        text = (SHIPPED / name).read_text(encoding="utf-8")
        assert not re.search(r"/work/|/tmp/|shared/|\.\./|/home/|[A-Z]:\\\\", text), name


def test_the_card_gives_the_shipped_sizes(splits):
    card = (SHIPPED / "CARD.md").read_text(encoding="utf-8")
    for split, rows in splits.items():
        assert f"| `{split}.tsv` | {len(rows):,} |" in card, split
    total = sum(len(splits[split]) for split in data.SPLITS)
    assert f"{total:,} pairs" in card
    assert "FINAL_SAMPLE_LINE" not in card
    assert f"{data.load_tokenizer().get_vocab_size():,}-token" in card


# --- sizes and coverage -----------------------------------------------------------------


def test_size_structures_and_vocabulary(splits):
    pairs = [row for split in data.SPLITS for row in splits[split]]
    assert 20_000 <= len(pairs) <= 60_000
    train_structures = {row["structure"] for row in splits["train"]}
    assert len(train_structures) >= 40
    english_words = {w.lower() for row in pairs for w in re.findall(r"[A-Za-z'-]+", row["en"])}
    assert 200 <= len(english_words) <= 600, "a few hundred English words"


def test_sentences_are_mostly_short(splits):
    lengths = [len(row["en"].split()) for row in splits["train"]]
    assert sum(4 <= n <= 16 for n in lengths) / len(lengths) >= 0.9
    assert max(lengths) <= 20


@pytest.mark.parametrize("phenomenon", data.PHENOMENA)
def test_every_phenomenon_is_trained_on(splits, phenomenon):
    tagged = [row for row in splits["train"] if phenomenon in row["phenomena"].split(",")]
    assert len(tagged) >= 500, (phenomenon, len(tagged))
    assert len({row["structure"] for row in tagged}) >= 2


def test_phenomenon_tags_are_the_known_ones(splits):
    for split in data.SPLITS:
        for row in splits[split]:
            tags = row["phenomena"].split(",")
            assert tags and set(tags) <= set(data.PHENOMENA), row
    assert {row["phenomenon"] for row in splits["test_agreement"]} <= set(data.PHENOMENA)


def test_numbers_cover_one_few_many_and_twenty_one_to_twenty_five(splits):
    russian = " ".join(row["ru"] for row in splits["train"])
    for phrase in ("одна книга", "две книги", "пять книг", "двадцать одна книга",
                   "двадцать две книги", "двадцать пять книг", "одну книгу", "двадцать одну",
                   "один билет", "два билета", "одиннадцать билетов", "двадцать один год",
                   "двадцать два года", "двадцать пять лет"):
        assert phrase in russian, phrase


def test_aspect_pairs_are_both_trained_on(splits):
    train = Counter(f for row in splits["train"] for f in forms(row["ru"]))
    for perfective, imperfective in (("купила", "покупала"), ("написал", "писал"),
                                     ("прочитала", "читала"), ("приготовил", "готовил")):
        assert train[perfective] >= 20 and train[imperfective] >= 20


def test_animate_and_inanimate_accusative(splits):
    russian = [row["ru"] for row in splits["train"]]
    # animate masculine: accusative = genitive; inanimate: accusative = nominative
    assert sum(bool(re.search(r" ищет (брата|сына|учителя|студента|певца)\.", ru))
               for ru in russian) >= 20
    assert sum(bool(re.search(r" ищет свой (телефон|чемодан|зонт|ключ|билет)\.", ru))
               for ru in russian) >= 20
    assert sum(bool(re.search(r" встретила? (учительницу|студентку|певицу),", ru))
               for ru in russian) >= 10


# --- splits --------------------------------------------------------------------------------


def test_no_sentence_is_in_two_splits(splits):
    seen = {}
    for split, rows in splits.items():
        for row in rows:
            for side in ("en", "ru"):
                where = seen.setdefault((side, row[side]), split)
                assert where == split, f"{row[side]!r} is in {where} and {split}"


def test_one_translation_per_english_sentence(splits):
    translations = defaultdict(set)
    for rows in splits.values():
        for row in rows:
            translations[row["en"]].add(row["ru"])
    assert all(len(ru) == 1 for ru in translations.values())


def test_the_course_sentence_and_its_twin_are_held_out(splits):
    held_out = {(row["en"], row["ru"]) for row in splits["test_combinations"]}
    assert COURSE in held_out and TWIN in held_out
    train = Counter(f for row in splits["train"] for f in forms(row["ru"]))
    for form in ("исследовательница", "исследователь", "сказала", "вымоталась", "вымотался"):
        assert train[form] >= 20, form


def test_every_russian_form_of_test_combinations_is_seen_20_times_in_train(splits):
    train = Counter(f for row in splits["train"] for f in forms(row["ru"]))
    rare = {f for row in splits["test_combinations"] for f in forms(row["ru"]) if train[f] < 20}
    assert not rare, sorted(rare)[:10]


def test_held_out_forms_are_known_in_their_role(built):
    # a form seen 20 times elsewhere is not enough: большой as a masculine nominative does not
    # teach большой as a feminine prepositional; so each form of a test_combinations or
    # test_agreement target also occurs in train in the same structure
    train = Counter((p.structure, f) for p in built.splits["train"] for f in forms(p.ru))
    for p in built.splits["test_combinations"] + built.agreement_pairs:
        for form in forms(p.ru):
            assert train[p.structure, form] >= build_corpus.MIN_STRUCTURE_COUNT, (p.ru, form)
    assert build_corpus.MIN_STRUCTURE_COUNT >= 5


def test_the_shipped_splits_are_the_build_s(splits, built):
    for split in data.SPLITS:
        assert [r["en"] for r in splits[split]] == [p.en for p in built.splits[split]], split
    assert [r["en"] for r in splits["test_agreement"]] == [p.en for p in built.agreement_pairs]


def test_test_combinations_are_new_combinations_of_known_parts(built):
    corpus = built
    seen = {(p.structure, p.combo) for p in corpus.splits["train"]}
    structures = {p.structure for p in corpus.splits["train"]}
    words = {w for p in corpus.splits["train"] for w in p.combo}
    for p in corpus.splits["test_combinations"]:
        assert (p.structure, p.combo) not in seen, p.en
        assert p.structure in structures and set(p.combo) <= words, p.en


def test_test_systematic_holds_only_what_its_definition_allows(splits):
    held = build_corpus.SYSTEMATIC_FORMS
    assert held
    for row in splits["test_systematic"]:
        assert set(forms(row["ru"])) & held, row["ru"]
    for split in ("train", "valid", "test_combinations", "test_longer", "test_agreement"):
        for row in splits[split]:
            assert not set(forms(row["ru"])) & held, (split, row["ru"])
    # the words are known in other forms: the masculines, and the nouns' other cases
    train = Counter(f for row in splits["train"] for f in forms(row["ru"]))
    for en, masculine, _, _ in build_corpus.PROFESSIONS:
        if en in build_corpus.SYSTEMATIC_FEMININES:
            assert train[masculine.split()[0]] >= 20, en
    for thing in ("словарь", "зонт", "компьютер"):
        assert train[thing] >= 20, thing
    found = {f for row in splits["test_systematic"] for f in forms(row["ru"])} & held
    assert len(found) >= 10, "held-out feminines in several cases, and held-out case forms"


def test_test_longer_has_more_clauses_than_any_training_sentence(splits):
    clauses = {t.name: t.clauses for t in build_corpus.TEMPLATES}
    most_in_train = max(clauses[row["structure"]] for row in splits["train"])
    longer = splits["test_longer"]
    assert len(longer) >= 300
    assert all(clauses[row["structure"]] > most_in_train for row in longer)
    assert not {row["structure"] for row in longer} & {row["structure"] for row in splits["train"]}
    train = set(f for row in splits["train"] for f in forms(row["ru"]))
    assert all(set(forms(row["ru"])) <= train for row in longer)


def test_test_agreement_pairs_differ_in_one_word(splits):
    rows = splits["test_agreement"]
    assert len(rows) >= 200
    assert len({row["phenomenon"] for row in rows}) >= 5
    for row in rows:
        right, wrong = row["ru"].split(), row["ru_broken"].split()
        assert len(right) == len(wrong), row
        assert sum(a != b for a, b in zip(right, wrong, strict=True)) == 1, row


def test_gender_minimal_pairs_are_complete(splits):
    # for every sentence with a profession whose gender a pronoun decides, the other gender's
    # twin (she <-> he, her <-> his) is in the corpus; and every profession has both genders
    # in every such structure where it occurs
    swap = {"she": "he", "he": "she", "her": "his", "his": "her", "herself": "himself",
            "himself": "herself"}
    rows = [row for rows in splits.values() for row in rows]
    english = {row["en"] for row in rows}
    professions = [en for en, *_ in build_corpus.PROFESSIONS]
    clauses = {t.name: t for t in build_corpus.TEMPLATES}
    checked = Counter()
    for row in rows:
        structure = row.get("structure")
        words = row["en"].rstrip(".?").split()
        if structure is None or "gender" not in clauses[structure].phenomena:
            continue
        if not any(f"the {p}" in row["en"].lower() for p in professions):
            continue
        twin = " ".join(swap.get(w, w) for w in words) + row["en"][-1]
        assert twin in english, f"{row['en']!r} has no twin {twin!r}"
        checked[structure] += 1
    assert len(checked) >= 6 and all(n >= 50 for n in checked.values()), checked


def test_each_profession_has_both_genders_in_the_corpus(splits):
    russian = Counter(f for rows in splits.values() for row in rows for f in forms(row["ru"]))
    for en, masculine, feminine, _ in build_corpus.PROFESSIONS:
        assert russian[masculine.split()[0]] >= 20 and russian[feminine.split()[0]] >= 20, en


# --- the text -----------------------------------------------------------------------


def test_sentences_are_clean(splits):
    for rows in splits.values():
        for row in rows:
            for side, alphabet in (("en", r"[A-Za-z0-9 ,.?'-]+"), ("ru", r"[А-Яа-яЁё ,.?-]+")):
                text = row[side]
                assert re.fullmatch(alphabet, text), text
                assert text[0].isupper() and text[-1] in ".?" and "  " not in text, text
            assert row["en"].endswith("?") == row["ru"].endswith("?"), row


def test_every_lexicon_entry_has_all_its_forms():
    for forms_ in [build_corpus.MY["m"], build_corpus.MY["f"]] + [
        t.sg for t in build_corpus.THINGS
    ] + [t.pl for t in build_corpus.THINGS] + [p.forms for p in build_corpus.PLACES]:
        assert set(forms_) == set(build_corpus.CASES)
        assert all(re.fullmatch(r"[а-яё]+", f) for f in forms_.values()), forms_


def test_numbers_take_the_right_noun_form():
    book = build_corpus.THING["book"]
    expected = {1: "одна книга", 2: "две книги", 4: "четыре книги", 5: "пять книг",
                11: "одиннадцать книг", 12: "двенадцать книг", 20: "двадцать книг",
                21: "двадцать одна книга", 22: "двадцать две книги", 25: "двадцать пять книг"}
    for n, phrase in expected.items():
        assert build_corpus.counted(n, book) == phrase
    assert build_corpus.counted(21, book, "acc") == "двадцать одну книгу"
    assert build_corpus.counted_unit(21, build_corpus.YEAR, "nom") == "двадцать один год"
    assert build_corpus.counted_unit(14, build_corpus.YEAR, "nom") == "четырнадцать лет"


# --- the tokenizer ---------------------------------------------------------------------


def test_special_tokens(tokenizer):
    assert [tokenizer.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>", "<unk>")] == [0, 1, 2, 3]
    assert 1_000 <= tokenizer.get_vocab_size() <= 3_000
    assert not {0, 1, 2} & set(tokenizer.encode(COURSE[1]).ids), "encoding adds no specials"


def test_every_sentence_round_trips_through_the_tokenizer(splits, tokenizer):
    texts = [row[c] for rows in splits.values() for row in rows
             for c in ("en", "ru", "ru_broken") if c in row]
    unk = tokenizer.token_to_id("<unk>")
    for text, encoding in zip(texts, tokenizer.encode_batch(texts), strict=True):
        assert unk not in encoding.ids, text
        assert tokenizer.decode(encoding.ids) == text


def test_every_held_out_sentence_is_spelled_with_tokens_seen_in_train(splits, tokenizer):
    # Else a model could never write it: test_systematic's feminines must be cut into
    # pieces that training targets contain (посети + тельница), not be one unseen token.
    seen = {t for row in splits["train"] for t in tokenizer.encode(row["ru"]).tokens}
    for split in ("valid", "test_combinations", "test_systematic", "test_longer"):
        for row in splits[split]:
            unseen = set(tokenizer.encode(row["ru"]).tokens) - seen
            assert not unseen, (split, row["ru"], unseen)


# --- the build ------------------------------------------------------------------------


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_rebuilding_gives_identical_files(tmp_path):
    build_corpus.build(tmp_path)
    for name in FILES:
        if name in ("CARD.md", "LICENSE"):
            continue  # written by hand
        assert digest(tmp_path / name) == digest(SHIPPED / name), (
            f"data/gen_en_ru/{name} differs from a fresh build: run "
            "`.venv/bin/python scripts/build_corpus.py` or `git checkout -- data/`"
        )


def test_no_everyday_sentence_is_a_training_sentence(splits):
    """Lesson 05's out-of-domain test (whose known-words claim the lesson asserts itself):
    30 distinct sentences, each at least one word from every training sentence."""
    from tfs.baselines import TranslationMemory

    everyday = data.load_everyday()
    assert len(everyday) == 30 and len({r["en"] for r in everyday}) == 30
    memory = TranslationMemory([(r["en"], r["ru"]) for r in splits["train"]])
    assert all(memory.nearest(r["en"])[1] >= 1 for r in everyday), "a training sentence"
