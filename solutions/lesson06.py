"""Reference solutions for the exercises of lesson 06 (where tokens come from).

Open this file only when you are stuck: the checker in the lesson (`check.<name>(...)`)
tells you what is wrong with your own attempt first. Each function here passes its checker.
"""

from collections import Counter

from tfs import bpe


# Section 2: pair counts. Each distinct word is counted once, weighted by how often it
# occurs; a pair is two neighbours inside one word ("a a a" holds (a, a) twice).
def count_pairs(word_counts):
    counts = Counter()
    for word, n in word_counts.items():
        for left, right in zip(word, word[1:], strict=False):
            counts[left, right] += n
    return counts


# Section 2: one merge. Walk left to right; where the pair starts, emit the merged symbol
# and jump over both halves, so that "a a a" merging (a, a) gives "aa a", never "a aa".
def apply_merge(symbols, pair):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


# Section 4: encoding one word. Among the neighbours that have a rank, merge the pair of
# lowest rank (learned first), wherever it is; stop when no pair has a rank.
def encode_word(symbols, ranks):
    symbols = list(symbols)
    while True:
        ranked = [(ranks[p], p) for p in zip(symbols, symbols[1:], strict=False) if p in ranks]
        if not ranked:
            return symbols
        _, pair = min(ranked)
        symbols = apply_merge(symbols, pair)


# The bug clinic: the planted bug glued the pre-tokens of a text back together before
# counting, so pairs such as (",", "▁") spanned two pre-tokens. Count each one on its own.
def clinic_pair_counts(texts):
    counts = Counter()
    for text in texts:
        for piece in bpe.pretokenize(text):
            counts.update(zip(piece, piece[1:], strict=False))
    return counts
