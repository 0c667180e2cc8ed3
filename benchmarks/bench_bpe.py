"""Benchmark of tfs.bpe's trainer (lesson 06) against the `tokenizers` library (not part of
`make test`).

The text: every sentence of the course's two corpora (the hand-written one, data/corpus, and
the generated one, data/gen_en_ru, all splits), repeated REPEAT times, so that counting the
text weighs as much as the merges do. Contenders, interleaved in rounds (their order
alternating) with medians taken:

  - tfs.bpe.train: the incremental trainer (pair counts updated after each merge);
  - tokenizers' BpeTrainer with the same settings (tfs.bpe.train_course_tokenizer);
  - the recount trainer (every pair counted again after each merge), for the first
    RECOUNT_MERGES merges only: the time per merge is what it says.

Before timing, the script asserts that tfs.bpe.train gives the library's merges and
vocabulary at every size. It writes a table to stdout and the figure to
benchmarks/bpe_trainer.png.

Usage (from the repository's root):
  .venv/bin/python benchmarks/bench_bpe.py                 # sizes 1,000 2,000 4,000, 3 rounds
  .venv/bin/python benchmarks/bench_bpe.py --quick         # 1 round, a smoke test
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tfs without installing it

from tfs import bpe, data  # noqa: E402
from tfs.viz import use_course_style  # noqa: E402

REPEAT = 5
SIZES = (1000, 2000, 4000)
RECOUNT_MERGES = 100


def course_text() -> list[str]:
    hand = [pq.read_table(ROOT / "data" / "corpus" / f"{s}.parquet")
            for s in ("train", "validation")]
    texts = [t for table in hand for c in ("en", "ru") for t in table.column(c).to_pylist()]
    texts += [p[c] for s in data.SPLITS for p in data.load_pairs(s) for c in ("en", "ru")]
    return texts * REPEAT


def recount(texts, merges):
    """The slow trainer: count every pair again after each merge (the lesson's first one)."""
    counts = bpe.word_counts(texts, bpe.SPECIAL_TOKENS)
    words = {tuple(w): n for w, n in counts.items()}
    for _ in range(merges):
        pairs = Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:], strict=False):
                pairs[pair] += n
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merged = Counter()
        for word, n in words.items():
            symbols = list(word)
            bpe.merge_word(symbols, *best, best[0] + best[1])
            merged[tuple(symbols)] += n
        words = merged


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 round: a smoke test")
    parser.add_argument("--figure", type=Path, default=ROOT / "benchmarks" / "bpe_trainer.png")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    texts = course_text()
    words = sum(len(t.split()) for t in texts)
    print(f"python {platform.python_version()}, CPU: {platform.processor() or platform.machine()}"
          f" ({os.cpu_count()} cores); load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"text: {len(texts):,} sentences ({REPEAT} x both corpora), {words:,} words, "
          f"{len(bpe.word_counts(texts)):,} distinct pre-tokens")
    for size in SIZES:  # the same result first
        ours = bpe.train(texts, size)
        theirs = bpe.from_tokenizers(bpe.train_course_tokenizer(texts, size))
        assert (ours.tokens, ours.merges) == (theirs.tokens, theirs.merges), size
    print(f"tfs.bpe.train = tokenizers' BpeTrainer, merge for merge, at {SIZES}")

    contenders = {f"tfs.bpe {size}": (lambda s=size: bpe.train(texts, s)) for size in SIZES}
    contenders |= {f"tokenizers {size}": (lambda s=size: bpe.train_course_tokenizer(texts, s))
                   for size in SIZES}
    contenders[f"recount {RECOUNT_MERGES} merges"] = lambda: recount(texts, RECOUNT_MERGES)
    times = {name: [] for name in contenders}
    for r in range(rounds):
        names = list(contenders) if r % 2 == 0 else list(reversed(contenders))
        for name in names:
            times[name].append(timed(contenders[name]))
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)
    median = {name: statistics.median(t) for name, t in times.items()}
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{rounds} rounds, medians")
    print("\n| vocabulary | merges | tfs.bpe.train | tokenizers | tfs / tokenizers |")
    print("|---:|---:|---:|---:|---:|")
    for size in SIZES:
        merges = len(bpe.train(texts, size).merges)
        a, b = median[f"tfs.bpe {size}"], median[f"tokenizers {size}"]
        print(f"| {size:,} | {merges:,} | {a:.2f} s | {b:.3f} s | {a / b:.2f} |")
    per_merge = median[f"recount {RECOUNT_MERGES} merges"] / RECOUNT_MERGES
    first_merges = len(bpe.train(texts, SIZES[0]).merges)
    incremental = median[f"tfs.bpe {SIZES[0]}"] / first_merges
    print(f"\nrecount: {per_merge * 1000:.0f} ms per merge (first {RECOUNT_MERGES}); "
          f"incremental at {SIZES[0]:,}: {incremental * 1000:.1f} ms per merge, counting "
          "the text included")

    colors = use_course_style(retina=False)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    x = range(len(SIZES))
    width = 0.38
    ours = [median[f"tfs.bpe {s}"] for s in SIZES]
    theirs = [median[f"tokenizers {s}"] for s in SIZES]
    ax.bar([i - width / 2 for i in x], ours, width, color=colors["enc"], label="tfs.bpe.train")
    ax.bar([i + width / 2 for i in x], theirs, width, color=colors["dec"],
           label="tokenizers (Rust)")
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        ax.text(i - width / 2, a, f"{a:.1f} s", ha="center", va="bottom", fontsize=8)
        ax.text(i + width / 2, b, f"{b:.2f} s", ha="center", va="bottom", fontsize=8)
    recount_total = per_merge * first_merges  # its first merges' pace, for all of them
    ax.axhline(recount_total, color=colors["muted"], linestyle="--", linewidth=1)
    ax.text(len(SIZES) - 0.5, recount_total, f"recount, {SIZES[0]:,} tokens (time per merge x "
            f"{first_merges:,} merges)", ha="right", va="bottom", fontsize=8,
            color=colors["muted"])
    ax.set_yscale("log")
    ax.set_xticks(list(x), [f"{s:,}" for s in SIZES])
    ax.set_xlabel("vocabulary size |V|")
    ax.set_ylabel("training time (s, median, log scale)")
    ax.set_title("The same merges: Python's incremental trainer vs the Rust library")
    ax.legend(loc="upper left")
    fig.savefig(args.figure)
    print(f"figure: {args.figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
