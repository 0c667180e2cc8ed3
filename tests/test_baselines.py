"""tfs.baselines on a toy corpus whose answers are known by hand; tfs.data.far_pairs."""

import pytest

from tfs import data
from tfs.baselines import MemoryWithSubstitution, TranslationMemory, word_alignment, words

TOY = [
    ("Anna bought bread.", "Анна купила хлеб."),
    ("Anna bought milk.", "Анна купила молоко."),
    ("Ivan bought bread.", "Иван купил хлеб."),
    ("Ivan saw milk.", "Иван видел молоко."),
    ("Anna saw bread.", "Анна видела хлеб."),
]


def test_words_ignore_case_and_punctuation():
    assert words("Anna bought bread, milk.") == ["anna", "bought", "bread", "milk"]
    with pytest.raises(TypeError, match="string"):
        words(3)


def test_distances_count_differing_positions_and_missing_words():
    memory = TranslationMemory(TOY)
    assert memory.distances("Anna bought bread.").tolist() == [0, 1, 1, 3, 1]
    assert memory.distances("Ivan saw bread today.").tolist() == [3, 4, 2, 2, 2]
    assert memory.distances("Tom ate fish.").tolist() == [3, 3, 3, 3, 3]


def test_the_memory_returns_the_nearest_and_the_first_of_ties():
    memory = TranslationMemory(TOY)
    assert memory.nearest("Anna bought milk.") == (1, 0)
    assert memory.nearest("Ivan bought milk.") == (1, 1)  # ties with 2 and 3: the first
    assert memory.translate(["Ivan saw milk.", "Tom saw milk."]) == [
        "Иван видел молоко.", "Иван видел молоко."]


def test_the_alignment_finds_each_words_translation():
    alignment = word_alignment(TOY)
    assert alignment["bread"] == "хлеб"
    assert alignment["milk"] == "молоко"
    assert alignment["ivan"] == "иван"
    assert alignment["anna"] == "анна"


def test_substitution_swaps_the_aligned_word_but_knows_no_agreement():
    swap = MemoryWithSubstitution(TOY)
    assert swap.alignment["bought"] == "купила"  # 2 of its 3 sentences: Anna's
    # nearest "Anna bought milk." (bought -> saw): купила is swapped for видела
    assert swap.translate_one("Anna saw milk.") == "Анна видела молоко."
    # nearest "Anna bought milk." (Anna -> Ivan): the name is swapped, the verb stays feminine
    assert swap.translate_one("Ivan bought milk.") == "Иван купила молоко."
    assert TranslationMemory(TOY).translate_one("Ivan bought milk.") == "Анна купила молоко."
    # nothing differs word for word from "Anna bought milk." (one word missing): kept as is
    assert swap.translate_one("Anna bought milk today.") == "Анна купила молоко."


def test_substitution_also_replaces_another_form_of_the_aligned_word():
    pairs = [("Anna was busy.", "Анна была занята."), ("Ivan was busy.", "Иван был занят."),
             ("Boris was busy.", "Борис был занят."), ("Ivan was tired.", "Иван устал.")]
    swap = MemoryWithSubstitution(pairs)
    assert swap.alignment["busy"] == "занят" and swap.alignment["tired"] == "устал"
    # nearest "Anna was busy.": its занята is a form of занят, and gets устал, masculine
    assert swap.translate_one("Anna was tired.") == "Анна была устал."


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="empty"):
        TranslationMemory([])
    with pytest.raises(TypeError, match="two strings"):
        TranslationMemory([("only English",)])
    with pytest.raises(ValueError, match="'en'"):
        TranslationMemory([{"english": "a", "ru": "б"}])
    with pytest.raises(TypeError, match="list of strings"):
        TranslationMemory(TOY).translate("Anna saw bread.")


def test_far_pairs_are_two_words_from_every_training_sentence():
    far = data.far_pairs()
    memory = TranslationMemory(data.load_pairs("train"))
    assert far and {r["split"] for r in far} <= set(data.TEST_SPLITS)
    for row in far[::50]:
        assert row["distance"] >= 2
        assert row["distance"] == memory.distances(row["en"]).min()
    near = [r for r in data.load_pairs("test_combinations") if r["en"] not in
            {f["en"] for f in far}]
    assert all(memory.nearest(r["en"])[1] == 1 for r in near[:50])
    with pytest.raises(ValueError, match="at least 1"):
        data.far_pairs(0)
    with pytest.raises(TypeError, match="integer"):
        data.far_pairs("2")
