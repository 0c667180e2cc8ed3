"""Translators that only look things up: what a score owes to memory (lesson 05).

- `TranslationMemory(pairs)`: returns the Russian of the training sentence whose English
  differs from the query in the fewest words. Words are compared position by position
  (punctuation and capitals ignored), and each word one sentence has beyond the other's end
  counts as one more difference; ties go to the first training pair.
- `word_alignment(pairs)`: each English word's most likely Russian word, by the Dice
  coefficient of the sentences they occur in (2 c(e, r) / (c(e) + c(r))).
- `MemoryWithSubstitution(pairs)`: the translation memory, then, for each English word in
  which the query differs from the retrieved sentence, the Russian word aligned to the old
  English word (or another form of it) is replaced by the Russian word aligned to the new
  one, in its most frequent form: a lookup knows no agreement.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Sequence

import numpy as np

__all__ = ["MemoryWithSubstitution", "TranslationMemory", "words", "word_alignment"]

_PUNCTUATION = ".,!?;:"


def words(sentence: str) -> list[str]:
    """The words of a sentence, lower-cased, without punctuation."""
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a string, got {type(sentence).__name__}")
    return [w.strip(_PUNCTUATION).lower() for w in sentence.split() if w.strip(_PUNCTUATION)]


def _check_pairs(pairs) -> list[tuple[str, str]]:
    if isinstance(pairs, str) or not isinstance(pairs, Sequence):
        raise TypeError(f"pairs must be a list of (English, Russian) pairs or of dicts with "
                        f"'en' and 'ru', got {type(pairs).__name__}")
    out = []
    for i, pair in enumerate(pairs):
        if isinstance(pair, dict):
            if "en" not in pair or "ru" not in pair:
                raise ValueError(f"pairs[{i}] has no 'en' or no 'ru' key: {sorted(pair)}")
            pair = (pair["en"], pair["ru"])
        if len(pair) != 2 or not all(isinstance(s, str) for s in pair):
            raise TypeError(f"pairs[{i}] must be two strings (English, Russian), got {pair!r}")
        out.append((pair[0], pair[1]))
    if not out:
        raise ValueError("pairs is empty: a translation memory needs at least one pair")
    return out


class TranslationMemory:
    """The Russian of the nearest training sentence (fewest differing English words)."""

    def __init__(self, pairs):
        self.pairs = _check_pairs(pairs)
        self.vocab: dict[str, int] = {}
        rows = [self._encode(words(en)) for en, _ in self.pairs]
        self.width = max(len(r) for r in rows)
        self.matrix = np.full((len(rows), self.width), -1, dtype=np.int64)  # (N, L), -1 = none
        for i, row in enumerate(rows):
            self.matrix[i, : len(row)] = row

    def _encode(self, ws, grow=True):
        if grow:
            return [self.vocab.setdefault(w, len(self.vocab)) for w in ws]
        return [self.vocab.get(w, -2) for w in ws]  # -2: a word no training sentence has

    def distances(self, sentence: str) -> np.ndarray:
        """(N,): how many English words each training sentence differs from `sentence` in."""
        query = self._encode(words(sentence), grow=False)
        width = max(self.width, len(query))
        padded = np.full(width, -1, dtype=np.int64)
        padded[: len(query)] = query
        matrix = self.matrix
        if width > self.width:
            matrix = np.pad(matrix, ((0, 0), (0, width - self.width)), constant_values=-1)
        return (matrix != padded).sum(axis=1)

    def nearest(self, sentence: str) -> tuple[int, int]:
        """(index of the nearest training pair, how many words it differs in)."""
        d = self.distances(sentence)
        i = int(d.argmin())
        return i, int(d[i])

    def translate_one(self, sentence: str) -> str:
        return self.pairs[self.nearest(sentence)[0]][1]

    def translate(self, sentences: Sequence[str]) -> list[str]:
        if isinstance(sentences, str):
            raise TypeError("sentences must be a list of strings, not one string")
        return [self.translate_one(s) for s in sentences]


def word_alignment(pairs) -> dict[str, str]:
    """Each English word's Russian word: the one with the highest Dice coefficient
    2 c(e, r) / (c(e) + c(r)), c counting the pairs a word (or both words) occurs in."""
    pairs = _check_pairs(pairs)
    c_en, c_ru, c_both = collections.Counter(), collections.Counter(), collections.Counter()
    for en, ru in pairs:
        e, r = set(words(en)), set(words(ru))
        c_en.update(e)
        c_ru.update(r)
        c_both.update((a, b) for a in e for b in r)
    best: dict[str, tuple[float, str]] = {}
    for (e, r), both in c_both.items():
        dice = 2 * both / (c_en[e] + c_ru[r])
        if e not in best or (dice, r) > best[e]:
            best[e] = (dice, r)
    return {e: r for e, (_, r) in best.items()}


def _replace_word(russian: str, old: str, new: str) -> str:
    """`russian` with its first word equal to `old` (case and punctuation aside), else its
    first other form of `old` (sharing all of it but the last two letters, at least three),
    replaced by `new`, keeping the punctuation around it and a capital at the start."""
    tokens = russian.split()
    cores = [t.strip(_PUNCTUATION) for t in tokens]
    stem = max(3, len(old) - 2)
    exact = [i for i, c in enumerate(cores) if c.lower() == old]
    forms = [i for i, c in enumerate(cores)
             if len(os.path.commonprefix([c.lower(), old])) >= stem]
    for i in (exact or forms)[:1]:
        word = new.capitalize() if cores[i][:1].isupper() else new
        tokens[i] = tokens[i].replace(cores[i], word, 1)
    return " ".join(tokens)


class MemoryWithSubstitution(TranslationMemory):
    """The translation memory, then each differing English word's aligned Russian word
    replaced by the new word's aligned Russian word."""

    def __init__(self, pairs):
        super().__init__(pairs)
        self.alignment = word_alignment(self.pairs)

    def translate_one(self, sentence: str) -> str:
        i, _ = self.nearest(sentence)
        english, russian = self.pairs[i]
        for old, new in zip(words(english), words(sentence), strict=False):
            if old != new and old in self.alignment and new in self.alignment:
                russian = _replace_word(russian, self.alignment[old], self.alignment[new])
        return russian
