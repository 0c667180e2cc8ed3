"""tfs.bpe: the trainer equal merge for merge to `tokenizers`, the encoders equal id for id to
the course's tokenizers and to tiktoken's cl100k_base, round trips, and the errors."""

import hashlib
import inspect
import random
import re
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import tiktoken_ext.openai_public as openai_public
from tiktoken.load import load_tiktoken_bpe
from tokenizers import Tokenizer

from tfs import bpe, data

ROOT = Path(__file__).resolve().parent.parent
MIXED = [
    "Crème brûlée 🍮 for two — naïve café!  Ёжик в тумане 😀👍🏽",
    "Ещё раз: «ёлка», а не «елка»… 漢字 and ½ of 3.14",
    "  leading spaces, trailing tab\t\nand a new line\n\n",
    "don't WE'LL I'm 12345 ５ $%^&",
]


def corpus_texts():
    """data/corpus: the texts build_data.py trains on (train + validation, both languages)."""
    tables = [pq.read_table(ROOT / "data" / "corpus" / f"{s}.parquet")
              for s in ("train", "validation")]
    return [text for table in tables
            for pair in zip(table.column("en").to_pylist(), table.column("ru").to_pylist(),
                            strict=True)
            for text in pair]


@pytest.fixture(scope="module")
def corpus():
    return corpus_texts()


@pytest.fixture(scope="module")
def generated():
    """data/gen_en_ru: build_corpus.py trains on the distinct training sentences."""
    return sorted({s for p in data.load_pairs("train") for s in (p["en"], p["ru"])})


@pytest.fixture(scope="module")
def generated_all():
    return [p[c] for split in data.SPLITS for p in data.load_pairs(split) for c in ("en", "ru")]


@pytest.fixture(scope="module")
def shipped():
    return {name: Tokenizer.from_file(str(ROOT / "data" / name / "tokenizer.json"))
            for name in ("corpus", "gen_en_ru")}


@pytest.fixture(scope="module")
def cl100k():
    encoding = bpe.cl100k_base()
    ranks = load_tiktoken_bpe(str(bpe.cl100k_path()), expected_hash=bpe.CL100K_SHA256)
    return encoding, bpe.from_ranks(ranks, bpe.CL100K_PATTERN, bpe.CL100K_SPECIAL_TOKENS)


# --- pre-tokenization ----------------------------------------------------------------------


def test_pretokenize_is_the_course_tokenizers(corpus, generated_all):
    library = bpe.new_course_tokenizer().pre_tokenizer
    for text in corpus + generated_all + MIXED + ["", " ", "a  b", "end ", "▁x", "x$y+z"]:
        assert bpe.pretokenize(text) == [w for w, _ in library.pre_tokenize_str(text)], text


def test_pretokenize_bytes_is_the_regex_s_matches():
    assert bpe.pretokenize_bytes("Hello world, it's 2024!") == [
        b"Hello", b" world", b",", b" it", b"'s", b" 2024", b"!"]
    assert b"".join(bpe.pretokenize_bytes(MIXED[0])) == MIXED[0].encode("utf-8")


def test_special_tokens_are_split_off_first():
    assert bpe.split_special("a<eos>b<eos>", ["<eos>"]) == [("a", False), ("<eos>", True),
                                                           ("b", False), ("<eos>", True)]
    assert bpe.split_special("<|a|><|a", ["<|a", "<|a|>"]) == [("<|a|>", True), ("<|a", True)]
    counts = bpe.word_counts(["the<eos>the"], ["<eos>"])
    assert counts == Counter({"▁the": 2})


# --- training: equal to the library, merge for merge ---------------------------------------


def test_train_gives_the_shipped_corpus_tokenizer(corpus, shipped):
    mine = bpe.train(corpus, 2000)
    library = bpe.from_tokenizers(shipped["corpus"])
    assert mine.tokens == library.tokens
    assert mine.merges == library.merges


def test_train_gives_the_shipped_generated_tokenizer(generated, shipped):
    mine = bpe.train(generated, 1200)
    library = bpe.from_tokenizers(shipped["gen_en_ru"])
    assert mine.tokens == library.tokens
    assert mine.merges == library.merges


@pytest.mark.parametrize("vocab_size, min_frequency", [(300, 2), (777, 1), (3000, 3)])
def test_train_is_the_library_at_other_settings(corpus, vocab_size, min_frequency):
    mine = bpe.train(corpus, vocab_size, min_frequency=min_frequency)
    library = bpe.from_tokenizers(
        bpe.train_course_tokenizer(corpus, vocab_size, min_frequency))
    assert (mine.tokens, mine.merges) == (library.tokens, library.merges)


def test_train_is_the_library_on_texts_full_of_ties():
    # a tiny alphabet: many pairs share a count, and one string is made by two merges
    for seed in range(40):
        rng = random.Random(seed)
        alphabet = rng.choice(["ab", "abc", "aб.", "xyz,"])
        texts = [" ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7)))
                          for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(5, 40))]
        for vocab_size, min_frequency in [(25, 0), (40, 1), (60, 2)]:
            try:
                mine = bpe.train(texts, vocab_size, min_frequency=min_frequency)
            except ValueError:  # the alphabet alone is larger than vocab_size
                continue
            library = bpe.from_tokenizers(
                bpe.train_course_tokenizer(texts, vocab_size, min_frequency))
            assert (mine.tokens, mine.merges) == (library.tokens, library.merges), seed


def test_ties_go_to_the_pair_of_smaller_ids():
    # "ab" and "cd" both occur twice; a, b, c, d get ids in code-point order after the specials
    tok = bpe.train(["ab cd", "cd ab"], 100, min_frequency=1, special_tokens=())
    first = tok.tokens[tok.merges[0][0]] + tok.tokens[tok.merges[0][1]]
    # (▁, a), (a, b), (▁, c), (c, d): all seen twice; "a" < "b" < "c" < "d" < "▁" by code point
    assert tok.tokens[:5] == ["a", "b", "c", "d", "▁"]
    assert first == "ab"


def test_min_frequency_stops_training():
    tok = bpe.train(["ab ab cd"], 100, min_frequency=2, special_tokens=())
    made = {tok.tokens[a] + tok.tokens[b] for a, b in tok.merges}
    assert made == {"ab", "▁ab"}, "only pairs seen twice are merged"


def test_special_tokens_are_never_merged():
    tok = bpe.train(["<eos>hello<eos>"] * 5 + ["hello"], 50, min_frequency=1)
    assert not any("<" in t or ">" in t for t in tok.tokens[len(bpe.SPECIAL_TOKENS):])
    assert bpe.encode("hi<eos>", tok)[-1] == tok.special["<eos>"]


def test_truncate_is_training_with_a_smaller_vocabulary(generated):
    big = bpe.train(generated, 2000)
    for size in (104, 105, 700, 1200):
        assert bpe.truncate(big, size) == bpe.train(generated, size)


# --- the byte-level trainer --------------------------------------------------------------


def recount_bytes(texts, vocab_size):
    """The slow reference: count every pair again after each merge, same tie rule."""
    words = Counter(tuple(bytes([b]) for b in piece)
                    for text in texts for piece in bpe.pretokenize_bytes(text))
    merges = []
    while 256 + len(merges) < vocab_size:
        pairs = Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:], strict=False):
                pairs[pair] += n
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        merged = Counter()
        for word, n in words.items():
            symbols = list(word)
            bpe.merge_word(symbols, *best, best[0] + best[1])
            merged[tuple(symbols)] += n
        words = merged
    return merges


def test_byte_level_training_is_the_recount_with_ties_to_the_greater_pair(corpus):
    texts = corpus[:300] + MIXED
    tok = bpe.train_bytes(texts, 256 + 150, special_tokens=())
    assert [(tok.tokens[a], tok.tokens[b]) for a, b in tok.merges] == recount_bytes(texts, 406)


def test_byte_level_tie_goes_to_the_lexicographically_greater_pair():
    tok = bpe.train_bytes(["ab cd"], 257, special_tokens=())
    # a b, " " c and c d are each seen once; (b"c", b"d") is the greatest
    assert (tok.tokens[tok.merges[0][0]], tok.tokens[tok.merges[0][1]]) == (b"c", b"d")


def test_byte_level_special_tokens_come_last_and_are_never_merged():
    tok = bpe.train_bytes(["<|endoftext|>abab<|endoftext|>"] * 4, 300)
    assert tok.tokens[-1] == b"<|endoftext|>" and tok.special == {"<|endoftext|>": len(tok) - 1}
    assert all(b"<" not in t for t in tok.tokens[256:-1])


# --- encoding and decoding ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["corpus", "gen_en_ru"])
def test_encode_gives_the_library_s_ids_and_round_trips(name, shipped, corpus, generated_all):
    library = shipped[name]
    tok = bpe.from_tokenizers(library)
    texts = corpus + generated_all + ["hi<eos>there<pad>", "unknown: 😀 ½"]
    for text in texts:
        ids = bpe.encode(text, tok)
        assert ids == library.encode(text).ids, text
        assert bpe.decode(ids, tok) == library.decode(ids, skip_special_tokens=False), text
    own = corpus if name == "corpus" else generated_all  # every character of it is known
    for text in own:
        ids = bpe.encode(text, tok)
        assert tok.special["<unk>"] not in ids and bpe.decode(ids, tok) == text


def test_an_unknown_character_is_the_unknown_token(shipped):
    tok = bpe.from_tokenizers(shipped["gen_en_ru"])
    assert tok.special["<unk>"] in bpe.encode("😀", tok)


def test_byte_level_round_trips_emoji_accents_and_cyrillic(corpus):
    tok = bpe.train_bytes(corpus, 600)
    for text in corpus + MIXED:
        assert bpe.decode(bpe.encode(text, tok), tok) == text


def test_decoding_part_of_a_character_gives_a_replacement_not_a_crash():
    tok = bpe.train_bytes(["сказала"], 256, special_tokens=())
    ids = bpe.encode("с", tok)
    assert len(ids) == 2
    assert bpe.decode(ids[:1], tok) == "\ufffd"
    assert bpe.decode(bpe.encode("ас", tok)[:3], tok) == "а\ufffd"


def test_the_shipped_cl100k_file_is_tiktoken_s():
    source = inspect.getsource(openai_public.cl100k_base)
    assert re.search(r'expected_hash="([0-9a-f]{64})"', source).group(1) == bpe.CL100K_SHA256
    digest = hashlib.sha256(bpe.cl100k_path().read_bytes()).hexdigest()
    assert digest == bpe.CL100K_SHA256


def test_cl100k_pattern_and_special_tokens_are_tiktoken_s(monkeypatch):
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    spec = openai_public.cl100k_base()
    assert spec["pat_str"] == bpe.CL100K_PATTERN
    assert spec["special_tokens"] == bpe.CL100K_SPECIAL_TOKENS


def test_byte_level_encoder_gives_cl100k_s_ids(cl100k, corpus, generated_all):
    encoding, tok = cl100k
    assert len(tok.merges) == 100_256 - 256
    for text in corpus + generated_all + MIXED + ["<|endoftext|>Hi<|fim_prefix|>x"]:
        ids = bpe.encode(text, tok)
        assert ids == encoding.encode(text, allowed_special="all"), text
        assert bpe.decode(ids, tok) == text


# --- bad input ---------------------------------------------------------------------------


def test_bad_input_is_named(shipped):
    with pytest.raises(ValueError, match="smaller than the special tokens and the alphabet"):
        bpe.train(["abcdef"], 8)
    with pytest.raises(ValueError, match="smaller than the 256 bytes"):
        bpe.train_bytes(["abc"], 200)
    with pytest.raises(TypeError, match="not one str"):
        bpe.train("a text, not a list", 100)
    with pytest.raises(TypeError, match="every text must be a str"):
        bpe.train(["ok", 3], 100)
    tok = bpe.from_tokenizers(shipped["gen_en_ru"])
    with pytest.raises(TypeError, match="text must be a str"):
        bpe.encode(b"bytes", tok)
    with pytest.raises(ValueError, match="special token '<sep>' is not token 4"):
        bpe.BPE(tok.tokens, tok.merges, {"<sep>": 4})
    with pytest.raises(ValueError, match="unknown token '<oov>' is not a special token"):
        bpe.BPE(tok.tokens, tok.merges, tok.special, unk="<oov>")
    with pytest.raises(ValueError, match="merges and vocabulary differ"):
        bpe.BPE(tok.tokens[:500], tok.merges, tok.special)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        bpe.decode([5, 99_999], tok)
    with pytest.raises(ValueError, match=r"between 100 \(no merge\)"):
        bpe.truncate(tok, 50)


def test_cl100k_base_is_tiktoken_s_recipe_fed_the_shipped_file():
    download = openai_public.load_tiktoken_bpe
    encoding = bpe.cl100k_base()
    assert openai_public.load_tiktoken_bpe is download  # put back afterwards
    assert encoding._pat_str == bpe.CL100K_PATTERN
    assert encoding._special_tokens == bpe.CL100K_SPECIAL_TOKENS
    assert encoding.encode("Исследовательница сказала") == encoding.encode(
        "Исследовательница сказала")
    assert encoding.n_vocab == 100_277
