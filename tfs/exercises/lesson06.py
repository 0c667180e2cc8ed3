"""Checkers for the exercises of lesson 06 (tokenization).

In the lesson::

    from tfs.exercises import lesson06 as check

    check.count_pairs(my_count_pairs)          # section 2
    check.apply_merge(my_apply_merge)          # section 2
    check.encode_word(my_encode_word)          # section 4
    check.clinic_pair_counts(fixed_counts)     # section 2, the bug clinic

Every checker runs the answer on inputs of its own (an empty word, one symbol, repeated
symbols "a a a", ties) and compares it with `tfs.bpe`. The reference answers are in
`solutions/lesson06.py` (`SOLUTIONS`).
"""

from __future__ import annotations

from collections import Counter

from tfs import bpe
from tfs.exercises._core import Mistake, call, exercise, solution_url

SOLUTIONS = solution_url("06")

__all__ = [
    "SOLUTIONS",
    "apply_merge",
    "clinic_pair_counts",
    "count_pairs",
    "encode_word",
    "pair_counts_with_a_bug",
]


def _reference_pairs(word_counts):
    counts = Counter()
    for word, n in word_counts.items():
        for pair in zip(word, word[1:], strict=False):
            counts[pair] += n
    return counts


def _as_counts(value, what):
    if not hasattr(value, "items"):
        raise Mistake(f"{what} should be a dict {{(left, right): count}}; yours is a "
                      f"{type(value).__name__}")
    return Counter({pair: n for pair, n in value.items() if n})


# ---------------------------------------------------------------------------------------------
# section 2: pair counts, weighted by how often each word occurs


@exercise
def count_pairs(fn):
    """fn(word_counts) -> {(left, right): count}: word_counts maps a word, a tuple of symbols,
    to how often it occurs; a pair is counted once per occurrence of its word."""
    cases = [
        ({("▁", "t", "h", "e"): 5, ("▁", "t", "o"): 2}, "two words seen 5 and 2 times"),
        ({("▁", "a", "a", "a"): 3}, "a word with a repeated symbol (▁ a a a)"),
        ({("▁",): 4, (".",): 7}, "words of one symbol (no pair at all)"),
        ({("▁", "о", "н", "а"): 1, ("▁", "о", "н", "и"): 1, ("н", "а"): 2},
         "three words that share pairs"),
    ]
    for word_counts, what in cases:
        got = _as_counts(call(fn, dict(word_counts), what=what), "your answer")
        want = _reference_pairs(word_counts)
        if got == want:
            continue
        unweighted = _reference_pairs(dict.fromkeys(word_counts, 1))
        if got == unweighted and got != want:
            raise Mistake(f"on {what}: each word counts as often as it occurs; yours counts "
                          "each distinct word once")
        if any(p not in want for p in got if len(p) == 2):
            raise Mistake(f"on {what}: {next(p for p in got if p not in want)} is not a pair "
                          "of neighbours inside one word (a pair never spans two words)")
        if any(len(p) != 2 for p in got):
            raise Mistake("a pair is a tuple (left, right) of two symbols")
        raise Mistake(f"on {what}: expected {dict(want)}, got {dict(got)}")
    return "pairs counted inside each word, weighted by its frequency"


# ---------------------------------------------------------------------------------------------
# section 2: one merge, applied to a word


@exercise
def apply_merge(fn):
    """fn(symbols, pair) -> the symbols with every (left, right) replaced by left + right,
    left to right, without overlaps."""
    cases = [
        (["▁", "t", "h", "e"], ("t", "h"), "▁ t h e, merging (t, h)"),
        (["▁", "a", "a", "a"], ("a", "a"), "▁ a a a, merging (a, a)"),
        (["a", "b", "a", "b"], ("a", "b"), "a b a b, merging (a, b)"),
        (["x"], ("x", "y"), "a word of one symbol"),
        ([], ("a", "b"), "an empty word"),
        (["▁", "о", "н", "а"], ("н", "о"), "a pair that is not in the word"),
    ]
    for symbols, pair, what in cases:
        given = list(symbols)
        got = call(fn, given, pair, what=what)
        want = list(symbols)
        bpe.merge_word(want, *pair, pair[0] + pair[1])
        if not isinstance(got, list):
            raise Mistake(f"return a list of symbols; yours is a {type(got).__name__}")
        if got == want:
            continue
        if symbols == ["▁", "a", "a", "a"] and got == ["▁", "a", "aa"]:
            raise Mistake("on ▁ a a a: merges go left to right, so the first two a merge")
        if symbols == ["▁", "a", "a", "a"] and got == ["▁", "aa", "aa"]:
            raise Mistake("on ▁ a a a: an a can be in one merge only (no overlaps)")
        if symbols == ["a", "b", "a", "b"] and got == ["ab", "a", "b"]:
            raise Mistake("on a b a b: merge every occurrence of the pair, not just the first")
        raise Mistake(f"on {what}: expected {want}, got {got}")
    return "every occurrence merged, left to right, no overlaps"


# ---------------------------------------------------------------------------------------------
# section 4: encoding one word by rank


def _encode_reference(symbols, ranks):
    tokens = sorted({s for pair in ranks for s in pair} | set(symbols)
                    | {a + b for a, b in ranks})
    tok = bpe.BPE(tokens, [(tokens.index(a), tokens.index(b))
                           for a, b in sorted(ranks, key=ranks.get)])
    ids = bpe.encode_piece([tok.token_id[s] for s in symbols], tok)
    return [tok.tokens[i] for i in ids]


@exercise
def encode_word(fn):
    """fn(symbols, ranks) -> the word's tokens: ranks maps a pair to its rank (0 = learned
    first); merge the adjacent pair of lowest rank until no pair of the word has a rank."""
    ranks = {("e", "r"): 0, ("w", "e"): 1, ("l", "o"): 2, ("lo", "w"): 3, ("low", "er"): 4,
             ("we", "r"): 5}
    cases = [
        (list("wer"), "w e r: (e, r) has rank 0, (w, e) rank 1"),
        (list("lower"), "l o w e r"),
        (list("lowest"), "l o w e s t"),
        (list("x"), "one symbol"),
        ([], "an empty word"),
    ]
    for symbols, what in cases:
        got = call(fn, list(symbols), dict(ranks), what=what)
        want = _encode_reference(symbols, ranks)
        if got == want:
            continue
        if symbols == list("wer") and got in (["wer"], ["we", "r"]):
            raise Mistake("on w e r: merge the pair of LOWEST rank first, wherever it is in "
                          "the word: (e, r) before (w, e), and then (w, er) has no rank")
        raise Mistake(f"on {what}: expected {want}, got {got}")
    return "merges applied by rank inside the word"


# ---------------------------------------------------------------------------------------------
# the bug clinic: pairs counted across pre-token boundaries


def pair_counts_with_a_bug(texts):
    """Meant to count character pairs for BPE training, inside pre-tokens. It has a bug."""
    counts = Counter()
    for text in texts:
        joined = "".join(bpe.pretokenize(text))  # the pre-tokens glued back together
        counts.update(zip(joined, joined[1:], strict=False))
    return counts


def _texts():
    return ["She said, that was it.", "Она сказала, что это всё.", "Hi!", "", "a  b"]


@exercise
def clinic_pair_counts(fn):
    """fn(texts) -> Counter of (left, right) character pairs, counted inside pre-tokens."""
    texts = _texts()
    got = _as_counts(call(fn, list(texts), what="five short texts"), "your answer")
    want = Counter()
    for text in texts:
        for piece in bpe.pretokenize(text):
            want.update(zip(piece, piece[1:], strict=False))
    if got == want:
        return "no pair crosses a pre-token boundary"
    if got == _as_counts(pair_counts_with_a_bug(texts), ""):
        raise Mistake("that is still the planted bug: pairs like (\",\", \"▁\") span two "
                      "pre-tokens")
    across = [p for p in got if p not in want]
    if across:
        raise Mistake(f"{across[0]} is not inside any pre-token: count each pre-token on its "
                      "own")
    if sum(got.values()) < sum(want.values()):
        raise Mistake("some pairs inside pre-tokens are missing: count every pre-token of "
                      "every text, as often as it occurs")
    raise Mistake(f"expected {dict(want)}")
