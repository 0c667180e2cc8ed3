"""A learnability probe for the generated corpus (data/gen_en_ru/): is it a task, not a lookup?

Trains the course's Transformer (tfs.model) at a small size for a fixed number of steps on
train, then prints greedy exact match on 300 sentences of each held-out split, how often the
model prefers the right Russian of test_agreement, and its translation of the course sentence
and its twin. Step counts, not time budgets: the numbers do not depend on the machine's load.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/probe_corpus.py --steps 1500

Not part of the tests (it takes minutes); lesson 05 trains and measures for itself.
"""

from __future__ import annotations

import argparse
import random
import time

import torch
import torch.nn.functional as F

from tfs import data
from tfs.decoding import greedy
from tfs.model import Transformer

PAD, BOS, EOS = 0, 1, 2


def pad(seqs: list[list[int]]) -> torch.Tensor:
    width = max(map(len, seqs))
    return torch.tensor([s + [PAD] * (width - len(s)) for s in seqs])  # (B, T)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    tokenizer = data.load_tokenizer()
    vocab = tokenizer.get_vocab_size()
    train = [(tokenizer.encode(r["en"]).ids, [BOS] + tokenizer.encode(r["ru"]).ids + [EOS])
             for r in data.load_pairs("train")]
    model = Transformer(vocab, 128, 4, 512, 2, 0.1, PAD, max_len=64)  # d_model, heads, d_ff, layers
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        batch = rng.sample(train, args.batch)
        src, tgt = pad([s for s, _ in batch]), pad([t for _, t in batch])
        scores = model(src, tgt[:, :-1])  # (B, T, |V|)
        loss = F.cross_entropy(scores.reshape(-1, vocab), tgt[:, 1:].reshape(-1),
                               ignore_index=PAD, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 250 == 0:
            print(f"step {step}: loss {loss.item():.2f}", flush=True)
    print(f"{args.steps} steps in {time.perf_counter() - start:.0f} s (wall time: depends on load)")

    model.eval()

    def translate(sentences: list[str]) -> list[str]:
        out = greedy(model, pad([tokenizer.encode(s).ids for s in sentences]), BOS, EOS,
                     max_len=40)
        return [tokenizer.decode([i for i in row if i not in (PAD, EOS)]) for row in out.tolist()]

    for split in ("valid", "test_combinations", "test_systematic", "test_longer"):
        rows = data.load_pairs(split)[:300]
        right = sum(hyp == row["ru"] for i in range(0, len(rows), 100)
                    for hyp, row in zip(translate([r["en"] for r in rows[i:i + 100]]),
                                        rows[i:i + 100], strict=True))
        print(f"{split}: exact match {right / len(rows):.0%}")

    def log_prob(en: str, ru: str) -> float:
        tgt = pad([[BOS] + tokenizer.encode(ru).ids + [EOS]])
        with torch.no_grad():
            scores = model(pad([tokenizer.encode(en).ids]), tgt[:, :-1]).log_softmax(-1)
        return scores.gather(-1, tgt[:, 1:, None]).sum().item()

    rows = data.load_pairs("test_agreement")
    right = sum(log_prob(r["en"], r["ru"]) > log_prob(r["en"], r["ru_broken"]) for r in rows)
    print(f"test_agreement: the right Russian preferred {right / len(rows):.0%}")
    for en in ("The researcher said she was exhausted.", "The researcher said he was exhausted."):
        print(f"{en} -> {translate([en])[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
