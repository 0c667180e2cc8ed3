"""Byte-pair encoding written out (lesson 06): the trainer, the encoder and the decoder.

    from tfs import bpe
    tok = bpe.train(texts, vocab_size=1200)          # the course tokenizer's recipe, by hand
    ids = bpe.encode("Она сказала.", tok)            # merges applied by rank
    bpe.decode(ids, tok)                              # 'Она сказала.'

Two kinds of vocabulary:

- **characters** (`train`): the pre-tokenization of the course's tokenizers (Metaspace:
  a space becomes "▁" glued to the next word; Punctuation: every punctuation mark on its
  own), an alphabet of the characters seen, and the tie-break and minimum frequency of the
  `tokenizers` library's `BpeTrainer` (tokenizers/src/models/bpe/trainer.rs): the merges and
  the vocabulary are exactly that library's;
- **bytes** (`train_bytes`): 256 byte tokens, GPT-2's pre-tokenization regex, ties broken
  towards the lexicographically greater pair of byte strings. `from_ranks` reads a
  production merge table (OpenAI's cl100k_base, see `cl100k_base`) into the same encoder.

Both trainers count each distinct pre-token once, weighted by its frequency, count pairs
only inside a pre-token, and update the pair counts after each merge instead of counting
again. Special tokens are split off first and never merged into anything.

The course tokenizers themselves are trained by the `tokenizers` library, with the one
recipe of `train_course_tokenizer` (scripts/build_data.py and scripts/build_corpus.py).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import regex

#: The course's special tokens, ids 0, 1, 2, 3 in this order.
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
#: What Metaspace writes for a space ("▁", U+2581), glued to the word after it.
SPACE = "\u2581"
#: GPT-2's pre-tokenization (contractions, letters, digits, other symbols, spaces).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
#: cl100k_base's pre-tokenization, as in tiktoken's tiktoken_ext/openai_public.py.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
#: sha256 of cl100k_base.tiktoken, tiktoken's `expected_hash` for the file it downloads.
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_FOLDER = "cl100k_base"
CL100K_FILE = "cl100k_base.tiktoken"


# ------------------------------------------------------------------------ the tokenizer itself


@dataclass
class BPE:
    """A trained BPE: `tokens[i]` is token i (str for characters, bytes for bytes),
    `merges` the pairs of ids in rank order, `special` the special tokens' ids.

    A merge (a, b) makes the token tokens[a] + tokens[b], which must be in `tokens`.
    """

    tokens: list
    merges: list[tuple[int, int]]
    special: dict[str, int] = field(default_factory=dict)
    byte_level: bool = False
    pattern: str | None = None
    unk: str | None = None

    def __post_init__(self):
        self.cache = {}  # pre-token -> its ids: a text repeats its words
        kind = bytes if self.byte_level else str
        if not all(isinstance(t, kind) for t in self.tokens):
            raise TypeError(f"every token of a {'byte' if self.byte_level else 'character'}-level"
                            f" BPE is {kind.__name__}")
        self.token_id = {t: i for i, t in enumerate(self.tokens)}
        if len(self.token_id) != len(self.tokens):
            raise ValueError("a token appears twice in the vocabulary")
        self.merged = {}  # (a, b) -> (rank, id of the merged token)
        for rank, (a, b) in enumerate(self.merges):
            if not (0 <= a < len(self.tokens) and 0 <= b < len(self.tokens)):
                raise ValueError(f"merge {rank} ({a}, {b}) names an id outside the vocabulary: "
                                 "merges and vocabulary differ")
            new = self.token_id.get(self.tokens[a] + self.tokens[b])
            if new is None:
                raise ValueError(f"merge {rank} makes {self.tokens[a] + self.tokens[b]!r}, "
                                 "which is not in the vocabulary: merges and vocabulary differ")
            self.merged.setdefault((a, b), (rank, new))
        for name, i in self.special.items():
            if not 0 <= i < len(self.tokens) or self.tokens[i] != _as_token(name, self):
                raise ValueError(f"special token {name!r} is not token {i} of the vocabulary")
        if self.unk is not None and self.unk not in self.special:
            raise ValueError(f"the unknown token {self.unk!r} is not a special token")

    def __len__(self):
        return len(self.tokens)


def _as_token(name: str, tok: BPE):
    return name.encode("utf-8") if tok.byte_level else name


# ------------------------------------------------------------------------- pre-tokenization


def _check_text(text, what="text"):
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}")


#: What the Punctuation pre-tokenizer cuts off: Unicode punctuation (P*) or ASCII punctuation.
PUNCTUATION = r"\p{P}!-/:-@\[-`{-~"
#: A pre-token: a punctuation mark, or "▁" and what follows it up to the next "▁" or mark, or
#: such a run at the start of a text that begins with "▁" already.
PRETOKEN = rf"[{PUNCTUATION}]|{SPACE}[^{SPACE}{PUNCTUATION}]*|[^{SPACE}{PUNCTUATION}]+"
_PRETOKEN = regex.compile(PRETOKEN)  # \p{P}: the `regex` package, not `re`


def pretokenize(text: str) -> list[str]:
    """The course tokenizers' pre-tokenization: spaces become "▁" glued to the next word
    (one "▁" in front of the text), then every punctuation mark is a piece of its own."""
    _check_text(text)
    if not text:
        return []
    marked = text.replace(" ", SPACE)
    if not marked.startswith(SPACE):
        marked = SPACE + marked
    return _PRETOKEN.findall(marked)


def pretokenize_bytes(text: str, pattern: str = GPT2_PATTERN) -> list[bytes]:
    """A GPT-style pre-tokenization: the regex's matches, as UTF-8 bytes."""
    _check_text(text)
    return [piece.encode("utf-8") for piece in _compiled(pattern).findall(text)]


@functools.lru_cache(maxsize=16)
def _compiled(pattern: str):
    return regex.compile(pattern)


@functools.lru_cache(maxsize=16)
def _special_splitter(names: tuple[str, ...]):
    longest_first = sorted(names, key=len, reverse=True)  # "<|a|>" before "<|a"
    return re.compile("(" + "|".join(map(re.escape, longest_first)) + ")")


def split_special(text: str, special) -> list[tuple[str, bool]]:
    """Cut `text` at every special token: [(piece, is_special), ...], in order."""
    _check_text(text)
    if not special:
        return [(text, False)] if text else []
    parts = _special_splitter(tuple(special)).split(text)
    return [(part, i % 2 == 1) for i, part in enumerate(parts) if part]


def word_counts(texts, special=(), byte_level=False, pattern=GPT2_PATTERN) -> Counter:
    """How often each distinct pre-token occurs in `texts` (special tokens cut off first)."""
    if isinstance(texts, str) or not hasattr(texts, "__iter__"):
        raise TypeError("texts must be a list (or iterable) of str, not a single "
                        f"{type(texts).__name__}")
    counts = Counter()
    for text in texts:
        _check_text(text, "every text")
        for piece, is_special in split_special(text, special):
            if not is_special:
                counts.update(pretokenize_bytes(piece, pattern) if byte_level
                              else pretokenize(piece))
    return counts


# ---------------------------------------------------------------------------------- training


class _Greater:
    """Orders the heap by the largest key first (heapq pops the smallest)."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __lt__(self, other):
        return self.key > other.key

    def __eq__(self, other):
        return self.key == other.key


def merge_word(word: list[int], a: int, b: int, new: int) -> list[tuple[tuple[int, int], int]]:
    """Replace every (a, b) in `word` by `new`, left to right, in place; return the changes
    of its pair counts: ((left, right), +1 or -1) for each pair made or broken."""
    changes = []
    i = 0
    while i < len(word) - 1:
        if word[i] == a and word[i + 1] == b:
            if i > 0:
                changes += [((word[i - 1], a), -1), ((word[i - 1], new), 1)]
            word[i : i + 2] = [new]
            if i < len(word) - 1:
                changes += [((b, word[i + 1]), -1), ((new, word[i + 1]), 1)]
        i += 1
    return changes


def _merge_loop(words, counts, tokens, vocab_size, min_frequency, priority):
    """The incremental BPE loop of `tokenizers`' BpeTrainer: a heap of pairs whose stale
    counts are corrected when they come out; `priority(pair, count)` orders it."""
    token_id = {t: i for i, t in enumerate(tokens)}
    pair_counts = defaultdict(int)
    where = defaultdict(set)  # pair -> the words it occurs in
    for i, word in enumerate(words):
        for pair in zip(word, word[1:], strict=False):
            pair_counts[pair] += counts[i]
            where[pair].add(i)
    heap = []
    order = itertools.count()  # keeps equal entries apart; never decides between pairs

    def push(pair, pos):
        count = pair_counts[pair]
        heapq.heappush(heap, (priority(pair, count), next(order), count, pair, pos))

    for pair, pos in where.items():
        push(pair, pos)
    merges = []
    while len(token_id) < vocab_size and heap:
        _, _, pushed, pair, pos = heapq.heappop(heap)
        count = pair_counts[pair]
        if count != pushed:  # merges since it was pushed changed its count: put it back
            push(pair, pos)
            continue
        if count < 1 or count < min_frequency:
            break
        new_token = tokens[pair[0]] + tokens[pair[1]]
        if new_token not in token_id:
            token_id[new_token] = len(tokens)
            tokens.append(new_token)
        new = token_id[new_token]
        merges.append(pair)
        made = defaultdict(set)
        for i in pos:
            for changed, sign in merge_word(words[i], *pair, new):
                pair_counts[changed] += sign * counts[i]
                if sign > 0:
                    made[changed].add(i)
        for changed, where_made in made.items():
            if pair_counts[changed] > 0:
                push(changed, where_made)
    return merges


def _check_training(texts, vocab_size, min_frequency, special):
    if isinstance(texts, str):
        raise TypeError("texts must be a list of str, not one str")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, int) or min_frequency < 0:
        raise ValueError(f"min_frequency must be an int >= 0, got {min_frequency!r}")
    if isinstance(special, str) or not all(isinstance(s, str) and s for s in special):
        raise TypeError("special_tokens must be a list of non-empty str")
    if len(set(special)) != len(special):
        raise ValueError(f"a special token appears twice in {list(special)}")


def train(texts, vocab_size: int, *, min_frequency: int = 2,
          special_tokens=SPECIAL_TOKENS, unk: str | None = "<unk>") -> BPE:
    """A character-level BPE with the course tokenizers' pre-tokenization and the rules of
    `tokenizers`' BpeTrainer: the special tokens first, then the alphabet sorted by code
    point, then one token per merge; the most frequent pair wins, a tie goes to the pair of
    smaller ids; training stops at `vocab_size` tokens or when the best pair is seen fewer
    than `min_frequency` times."""
    special = list(special_tokens)
    _check_training(texts, vocab_size, min_frequency, special)
    counts = word_counts(texts, special)
    alphabet = sorted({char for word in counts for char in word})
    tokens = special + [c for c in alphabet if c not in special]
    if vocab_size < len(tokens):
        raise ValueError(f"vocab_size {vocab_size} is smaller than the special tokens and the "
                         f"alphabet of the text ({len(tokens)} tokens)")
    token_id = {t: i for i, t in enumerate(tokens)}
    words = [[token_id[c] for c in word] for word in counts]
    merges = _merge_loop(words, list(counts.values()), tokens, vocab_size, min_frequency,
                         lambda pair, count: (-count, pair))
    return BPE(tokens, merges, {s: i for i, s in enumerate(special)},
               unk=unk if unk in special else None)


def train_bytes(texts, vocab_size: int, *, pattern: str = GPT2_PATTERN,
                special_tokens=("<|endoftext|>",), min_frequency: int = 1) -> BPE:
    """A byte-level BPE: tokens 0-255 are the bytes, then one token per merge, then the
    special tokens; a tie goes to the lexicographically greater pair of byte strings."""
    special = list(special_tokens)
    _check_training(texts, vocab_size, min_frequency, special)
    if vocab_size < 256 + len(special):
        raise ValueError(f"vocab_size {vocab_size} is smaller than the 256 bytes and "
                         f"{len(special)} special tokens")
    counts = word_counts(texts, special, byte_level=True, pattern=pattern)
    tokens = [bytes([i]) for i in range(256)]
    words = [list(word) for word in counts]
    merges = _merge_loop(words, list(counts.values()), tokens, vocab_size - len(special),
                         min_frequency,
                         lambda pair, count: (-count, _Greater((tokens[pair[0]], tokens[pair[1]]))))
    special_ids = {}
    for name in special:
        if name.encode("utf-8") in tokens:
            raise ValueError(f"special token {name!r} is also an ordinary token")
        special_ids[name] = len(tokens)
        tokens.append(name.encode("utf-8"))
    return BPE(tokens, merges, special_ids, byte_level=True, pattern=pattern)


def truncate(tok: BPE, vocab_size: int) -> BPE:
    """The first `vocab_size` tokens of a character-level BPE: what `train` with that size
    gives (merges are learned one after another, so a smaller vocabulary is a prefix)."""
    if not isinstance(tok, BPE) or tok.byte_level:
        raise TypeError("truncate takes a character-level tfs.bpe.BPE (made by train)")
    made = [new for _, new in tok.merged.values()]
    base = min(made, default=len(tok.tokens))  # the special tokens and the alphabet
    if not base <= vocab_size <= len(tok.tokens):
        raise ValueError(f"vocab_size must be between {base} (no merge) and {len(tok.tokens)}")
    merges = []
    for pair in tok.merges if vocab_size > base else ():
        merges.append(pair)
        if tok.merged[pair][1] == vocab_size - 1:  # training stops once it has this token
            break
    return BPE(tok.tokens[:vocab_size], merges, dict(tok.special), unk=tok.unk)


# ----------------------------------------------------------------------- encoding, decoding


def encode_piece(symbols: list[int], tok: BPE) -> list[int]:
    """Apply the merges inside one pre-token: always the adjacent pair of lowest rank."""
    symbols = list(symbols)
    while len(symbols) > 1:
        pairs = zip(symbols, symbols[1:], strict=False)
        ranked = [(tok.merged[p][0], p) for p in pairs if p in tok.merged]
        if not ranked:
            break
        _, pair = min(ranked)
        merge_word(symbols, *pair, tok.merged[pair][1])
    return symbols


def encode(text: str, tok: BPE, special: bool = True) -> list[int]:
    """The ids of `text`: special tokens cut off first (when `special`), then every pre-token
    spelled in characters (or bytes) and merged by rank. An unknown character becomes the
    unknown token, or raises when there is none."""
    _check_text(text)
    if not isinstance(tok, BPE):
        raise TypeError(f"tok must be a tfs.bpe.BPE, got {type(tok).__name__}")
    ids = []
    cache = tok.cache
    for part, is_special in split_special(text, tok.special if special else ()):
        if is_special:
            ids.append(tok.special[part])
            continue
        pieces = (pretokenize_bytes(part, tok.pattern) if tok.byte_level else pretokenize(part))
        for piece in pieces:
            if piece not in cache:
                cache[piece] = encode_piece(_spell(piece, tok), tok)
            ids += cache[piece]
    return ids


def _spell(piece, tok: BPE) -> list[int]:
    if tok.byte_level:
        return [tok.token_id[bytes([b])] for b in piece]
    ids = []
    for char in piece:
        i = tok.token_id.get(char)
        if i is None:
            if tok.unk is None:
                raise ValueError(f"the character {char!r} is not in the vocabulary")
            i = tok.special[tok.unk]
        ids.append(i)
    return ids


def decode(ids, tok: BPE) -> str:
    """The text of `ids`. Bytes that are not whole UTF-8 characters become "\ufffd"."""
    if not isinstance(tok, BPE):
        raise TypeError(f"tok must be a tfs.bpe.BPE, got {type(tok).__name__}")
    ids = list(ids)
    bad = [i for i in ids if isinstance(i, bool) or not isinstance(i, int)
           or not 0 <= i < len(tok.tokens)]
    if bad:
        raise ValueError(f"ids outside the vocabulary of {len(tok.tokens)} tokens: {bad[:5]}")
    if tok.byte_level:
        return b"".join(tok.tokens[i] for i in ids).decode("utf-8", errors="replace")
    text = "".join(tok.tokens[i] for i in ids).replace(SPACE, " ")
    return text[1:] if text.startswith(" ") else text  # the "▁" put in front of the text


# ------------------------------------------------------- other tokenizers in the same form


def from_tokenizers(tokenizer) -> BPE:
    """A `tokenizers` BPE tokenizer (the course's tokenizer.json) as a `BPE`."""
    import json

    model = json.loads(tokenizer.to_str())["model"]
    if model.get("type") != "BPE":
        raise ValueError(f"expected a BPE model, got {model.get('type')!r}")
    vocab = model["vocab"]
    tokens = [None] * len(vocab)
    for token, i in vocab.items():
        tokens[i] = token
    if None in tokens:
        raise ValueError("the vocabulary's ids are not 0 .. n-1")
    token_id = {t: i for i, t in enumerate(tokens)}
    merges = []
    for merge in model["merges"]:
        a, b = merge.split(" ") if isinstance(merge, str) else merge
        if a not in token_id or b not in token_id:
            raise ValueError(f"merge {a!r} + {b!r} uses a token not in the vocabulary")
        merges.append((token_id[a], token_id[b]))
    special = {t.content: t_id for t_id, t in tokenizer.get_added_tokens_decoder().items()
               if t.special}
    return BPE(tokens, merges, special, unk=model.get("unk_token"))


def merges_from_ranks(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merges of a byte-level rank table (token bytes -> rank, as tiktoken stores it):
    each token of rank r >= 256 is the pair that the tokens of lower rank merge into."""
    merges = []
    get = ranks.get
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) == 1:
            continue
        parts = [token[i : i + 1] for i in range(len(token))]
        while len(parts) > 2:  # merge by rank, as the encoder would, below rank r
            lowest, best = min((get(parts[i] + parts[i + 1], rank), i)
                               for i in range(len(parts) - 1))
            if lowest >= rank:
                raise ValueError(f"token {token!r} cannot be made from tokens of lower rank")
            parts[best : best + 2] = [parts[best] + parts[best + 1]]
        if len(parts) != 2 or max(get(parts[0], rank), get(parts[1], rank)) >= rank:
            raise ValueError(f"token {token!r} cannot be made from tokens of lower rank")
        merges.append((parts[0], parts[1]))
    return merges


def from_ranks(ranks: dict[bytes, int], pattern: str, special: dict[str, int]) -> BPE:
    """A byte-level rank table (tiktoken's form) as a `BPE` whose ids are its ranks."""
    size = max(list(ranks.values()) + list(special.values())) + 1
    tokens = [None] * size
    for token, rank in ranks.items():
        tokens[rank] = token
    for name, i in special.items():
        if tokens[i] is not None:
            raise ValueError(f"special token {name!r} has the id {i} of an ordinary token")
        tokens[i] = name.encode("utf-8")
    for i, token in enumerate(tokens):
        if token is None:  # ids that the table leaves unused (cl100k: 100256, 100261-100275)
            tokens[i] = f"<|unused {i}|>".encode()
    if sorted(ranks.get(bytes([b]), -1) for b in range(256)) != list(range(256)):
        raise ValueError("a byte-level table gives the 256 single bytes the ranks 0-255")
    merges = [(ranks[a], ranks[b]) for a, b in merges_from_ranks(ranks)]
    return BPE(tokens, merges, dict(special), byte_level=True, pattern=pattern)


def cl100k_path() -> Path:
    """The shipped copy of cl100k_base's rank file (data/cl100k_base/cl100k_base.tiktoken)."""
    from tfs.hub import data_dir

    return data_dir() / CL100K_FOLDER / CL100K_FILE


def cl100k_base():
    """OpenAI's cl100k_base (GPT-4's tokenizer) as a `tiktoken.Encoding`, built by tiktoken's
    own recipe (`tiktoken_ext.openai_public`: its regex, its special tokens, its sha256 of the
    rank file), fed the shipped copy of the rank file when there is one; else downloaded by
    tiktoken. Nothing of it comes from this module's copies (`CL100K_PATTERN`, ...)."""
    import tiktoken
    from tiktoken_ext import openai_public

    from tfs.hub import HubFileMissing

    try:
        path = cl100k_path()
    except HubFileMissing:
        path = None
    if path is None or not path.is_file():
        return tiktoken.get_encoding("cl100k_base")
    download = openai_public.load_tiktoken_bpe

    def shipped(url, expected_hash=None):  # the recipe's download, read from the copy instead
        return download(str(path), expected_hash=expected_hash)

    openai_public.load_tiktoken_bpe = shipped
    try:
        recipe = openai_public.cl100k_base()
    finally:
        openai_public.load_tiktoken_bpe = download
    return tiktoken.Encoding(**recipe)


# ----------------------------------------------- the course's tokenizers, by the library


def new_course_tokenizer():
    """An untrained `tokenizers` BPE whose tokens show real letters ("▁сказала", not bytes).

    Metaspace turns each space into "▁" glued to the next word; Punctuation then cuts
    punctuation marks off into tokens of their own (",", ".", "!"). Nothing is normalized,
    so decode(encode(s)) gives back s exactly.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True),
            pre_tokenizers.Punctuation(behavior="isolated"),
        ]
    )
    tokenizer.decoder = decoders.Metaspace(replacement=SPACE, prepend_scheme="always", split=True)
    return tokenizer


def train_course_tokenizer(texts, vocab_size: int, min_frequency: int = 2):
    """The course tokenizers' recipe: `new_course_tokenizer` trained by `tokenizers`'
    BpeTrainer on `texts` (sorted first: the order does not matter), <pad>, <bos>, <eos>,
    <unk> = 0, 1, 2, 3."""
    from tokenizers import trainers

    _check_training(texts, vocab_size, min_frequency, list(SPECIAL_TOKENS))
    tokenizer = new_course_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        show_progress=False,
    )
    tokenizer.train_from_iterator(sorted(texts), trainer=trainer)
    for expected_id, token in enumerate(SPECIAL_TOKENS):
        if tokenizer.token_to_id(token) != expected_id:
            raise RuntimeError(f"special token {token} did not get id {expected_id}")
    return tokenizer


def check_round_trip(tokenizer, texts) -> None:
    """Every text must decode back to itself, with no <unk> (RuntimeError naming it if not)."""
    unk = tokenizer.token_to_id("<unk>")
    for text in texts:
        ids = tokenizer.encode(text).ids
        if unk in ids:
            raise RuntimeError(f"<unk> in the encoding of {text!r}")
        if tokenizer.decode(ids) != text:
            raise RuntimeError(f"{text!r} decodes to {tokenizer.decode(ids)!r}")
