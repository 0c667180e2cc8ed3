"""Lesson 05's Transformer and GRU with attention, trained on the same budget for several seeds.

    python scripts/compare_seeds.py                     # seeds 1 2 3 4 42, one CPU thread
    python scripts/compare_seeds.py --seeds 7 13 --threads 2

Each seed trains both models with lesson 05's recipe (the same batches, steps, loss,
schedule, clipping, validation every EVAL_EVERY steps on `valid`, best exact match kept),
then scores them (greedy) on every test split and on the far selection
(`tfs.data.far_pairs`): exact match and chrF, and the contrastive agreement pairs. It writes

- data/gen_en_ru/seed_runs.tsv: one row per seed, model and score;
- data/gen_en_ru/seed_table.tsv: per model and score, the mean, min and max over the seeds.

Both are what lesson 05 prints beside its own run.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from tfs import env
from tfs import train as T
from tfs.data import corpus_dir, far_pairs, load_pairs, load_tokenizer
from tfs.model import Transformer
from tfs.rnn import GRUTranslator

# lesson 05's recipe (its parameters cell and sections 3-5)
TRAIN_STEPS = 900
MAX_TOKENS = 3000
D_MODEL, N_HEADS, D_FF, N_LAYERS, DROPOUT = 128, 4, 256, 2, 0.1
GRU_EMB, GRU_HID = 128, 256
PEAK_LR, SMOOTHING, CLIP_NORM = 2e-3, 0.1, 1.0
EVAL_EVERY = TRAIN_STEPS // 9  # as the lesson: nine validations
SPLITS = ("test_combinations", "test_far", "test_systematic", "test_longer")


def arguments(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 42])
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for the two tables (default: the corpus's folder)")
    p.add_argument("--append", action="store_true",
                   help="keep the runs of other seeds already in seed_runs.tsv")
    return p.parse_args(argv)


def main(argv=None):
    args = arguments(argv)
    torch.set_num_threads(args.threads)
    out = args.out or corpus_dir()
    tokenizer = load_tokenizer()
    pad, bos, eos = (tokenizer.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>"))
    vocab = tokenizer.get_vocab_size()
    train = load_pairs("train")
    data = {s: load_pairs(s) for s in SPLITS if s != "test_far"}
    data["test_far"] = far_pairs()
    agreement = load_pairs("test_agreement")

    def ids(text):
        return tokenizer.encode(text, add_special_tokens=False).ids

    src_ids = [ids(r["en"]) for r in train]
    tgt_ids = [ids(r["ru"]) for r in train]
    lengths = T.example_lengths(src_ids, tgt_ids)
    valid_en = [r["en"] for r in load_pairs("valid")]
    valid_ru = [r["ru"] for r in load_pairs("valid")]

    def evaluate(model):
        return T.corpus_scores(T.translate(model, tokenizer, valid_en, bos, eos), valid_ru)

    def batches(seed):
        for indices in T.batch_stream(lengths, MAX_TOKENS, seed):
            yield T.collate(src_ids, tgt_ids, indices, pad, bos, eos)

    runs = []
    for seed in args.seeds:
        for name in ("Transformer", "GRU + attention"):
            env.seed_everything(seed)
            if name == "Transformer":
                model = Transformer(vocab, D_MODEL, N_HEADS, D_FF, N_LAYERS, DROPOUT, pad,
                                    max_len=128)
            else:
                model = GRUTranslator(vocab, d_emb=GRU_EMB, d_hid=GRU_HID, pad_id=pad)
            start = time.perf_counter()
            T.train(model, batches(seed), TRAIN_STEPS, peak_lr=PEAK_LR, smoothing=SMOOTHING,
                    clip_norm=CLIP_NORM, evaluate=evaluate, eval_every=EVAL_EVERY,
                    best="exact_match", progress=False,
                    checkpoint=env.work_dir("compare_seeds") / f"{seed}.pt")
            seconds = time.perf_counter() - start
            for split in SPLITS:
                rows = data[split]
                hyp = T.translate(model, tokenizer, [r["en"] for r in rows], bos, eos)
                scores = T.corpus_scores(hyp, [r["ru"] for r in rows])
                runs.append((seed, name, f"{split} exact %", scores["exact_match"]))
                runs.append((seed, name, f"{split} chrF", scores["chrf"]))
            good = T.log_probabilities(model, tokenizer, [r["en"] for r in agreement],
                                       [r["ru"] for r in agreement], bos, eos)
            bad = T.log_probabilities(model, tokenizer, [r["en"] for r in agreement],
                                      [r["ru_broken"] for r in agreement], bos, eos)
            runs.append((seed, name, "agreement %", 100 * float(np.mean(np.greater(good, bad)))))
            print(f"seed {seed}, {name}: {seconds:.0f} s; " + ", ".join(
                f"{k} {v:.1f}" for s, n, k, v in runs if s == seed and n == name), flush=True)

    if args.append and (out / "seed_runs.tsv").exists():  # read back as written (one decimal)
        with open(out / "seed_runs.tsv", encoding="utf-8") as f:
            kept = [(int(r["seed"]), r["model"], r["score"], float(r["value"]))
                    for r in csv.DictReader(f, delimiter="\t") if int(r["seed"]) not in args.seeds]
        runs = sorted(kept + runs, key=lambda run: run[0])  # by seed, each seed's rows in order
    with open(out / "seed_runs.tsv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["seed", "model", "score", "value"])
        w.writerows((s, n, k, T.one_decimal(v)) for s, n, k, v in runs)
    keys = list(dict.fromkeys((n, k) for _, n, k, _ in runs))
    with open(out / "seed_table.tsv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["model", "score", "seeds", "mean", "min", "max"])
        for n, k in keys:
            values = [v for _, m, s, v in runs if (m, s) == (n, k)]
            w.writerow([n, k, len(values), T.one_decimal(statistics.mean(values)),
                        T.one_decimal(min(values)), T.one_decimal(max(values))])
    print(f"wrote {out / 'seed_runs.tsv'} and {out / 'seed_table.tsv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
