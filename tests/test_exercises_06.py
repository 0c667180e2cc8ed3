"""The exercises of lesson 06: the usual mistakes, each rejected with a message naming it."""

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

from tfs import bpe
from tfs.exercises import lesson06 as check

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("solutions_lesson06",
                                               ROOT / "solutions" / "lesson06.py")
solutions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solutions)


def unweighted(word_counts):  # every distinct word once, whatever its frequency
    return solutions.count_pairs(dict.fromkeys(word_counts, 1))


def across_words(word_counts):  # the words glued together before counting
    symbols = [s for word, n in word_counts.items() for _ in range(n) for s in word]
    return Counter(zip(symbols, symbols[1:], strict=False))


@pytest.mark.parametrize("answer, phrase", [
    (unweighted, "each distinct word once"),
    (across_words, "a pair never spans two words"),
])
def test_count_pairs_mistakes(answer, phrase):
    verdict = check.count_pairs.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


def right_to_left(symbols, pair):
    out, i = [], len(symbols) - 1
    while i >= 0:
        if i > 0 and (symbols[i - 1], symbols[i]) == pair:
            out.append(symbols[i - 1] + symbols[i])
            i -= 2
        else:
            out.append(symbols[i])
            i -= 1
    return out[::-1]


def overlapping(symbols, pair):  # every position where the pair starts, even inside another
    out, covered = [], set()
    for i, symbol in enumerate(symbols):
        if i + 1 < len(symbols) and (symbol, symbols[i + 1]) == pair:
            out.append(symbol + symbols[i + 1])
            covered |= {i, i + 1}
        elif i not in covered:
            out.append(symbol)
    return out


def first_only(symbols, pair):
    for i in range(len(symbols) - 1):
        if (symbols[i], symbols[i + 1]) == pair:
            return symbols[:i] + [symbols[i] + symbols[i + 1]] + symbols[i + 2 :]
    return list(symbols)


@pytest.mark.parametrize("answer, phrase", [
    (right_to_left, "left to right"),
    (overlapping, "no overlaps"),
    (first_only, "every occurrence"),
])
def test_apply_merge_mistakes(answer, phrase):
    verdict = check.apply_merge.verdict(answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


def merging_by(pick):
    """An encoder that merges, at each step, the ranked pair that `pick` chooses."""

    def encode(symbols, ranks):
        symbols = list(symbols)
        while ranked := [(ranks[p], p) for p in zip(symbols, symbols[1:], strict=False)
                         if p in ranks]:
            symbols = solutions.apply_merge(symbols, pick(ranked)[1])
        return symbols

    return encode


leftmost_first = merging_by(lambda ranked: ranked[0])
highest_rank_first = merging_by(max)


@pytest.mark.parametrize("answer", [leftmost_first, highest_rank_first])
def test_encode_word_mistakes(answer):
    verdict = check.encode_word.verdict(answer)
    assert verdict.status == "wrong" and "LOWEST rank first" in verdict.message, verdict.message


def test_the_clinic_rejects_the_planted_bug_and_a_half_fix():
    verdict = check.clinic_pair_counts.verdict(check.pair_counts_with_a_bug)
    assert verdict.status == "wrong" and "planted bug" in verdict.message

    def words_only(texts):  # splits on spaces only: punctuation stays glued to its word
        counts = Counter()
        for text in texts:
            for word in text.split(" "):
                piece = bpe.SPACE + word
                counts.update(zip(piece, piece[1:], strict=False))
        return counts

    verdict = check.clinic_pair_counts.verdict(words_only)
    assert verdict.status == "wrong" and "not inside any pre-token" in verdict.message


def test_the_planted_bug_counts_pairs_that_end_in_a_space_mark():
    buggy = check.pair_counts_with_a_bug(["She said, that was it."])
    assert buggy[",", bpe.SPACE] == 1
    assert solutions.clinic_pair_counts(["She said, that was it."])[",", bpe.SPACE] == 0
