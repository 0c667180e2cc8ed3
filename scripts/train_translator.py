"""Train lesson 05's translator outside the notebook, on one device or several.

One process (CPU or one GPU):

    python scripts/train_translator.py --steps 1200

Several GPUs on one machine (Kaggle's two T4s), the same loop under DDP:

    torchrun --nproc_per_node=2 scripts/train_translator.py --steps 1200

torchrun starts one process per GPU and sets RANK, LOCAL_RANK and WORLD_SIZE; each process
takes its share of every global batch of --max-tokens tokens (tfs.train.Batch.shard), so
the steps are those of one process on the whole batch. Mixed precision follows
tfs.env.precision (bfloat16 on Ampere and newer, float16 with a grad scaler on T4/P100,
float32 on the CPU). Process 0 shows a progress bar, evaluates on valid every --eval-every
steps, keeps the best checkpoint (--out) and prints the scores on the test splits.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from tfs import env
from tfs import train as T
from tfs.model import Transformer

PAD, BOS, EOS = 0, 1, 2


def arguments(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", choices=("course", "tatoeba"), default="course",
                   help="course: data/gen_en_ru (offline); tatoeba: the Hub dataset of lesson 04")
    p.add_argument("--steps", type=int, default=1200, help="optimizer steps (default 1200)")
    p.add_argument("--max-tokens", type=int, default=3000,
                   help="padded tokens per global batch (default 3000)")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--n-heads", type=int, default=4)
    p.add_argument("--d-ff", type=int, default=256)
    p.add_argument("--n-layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate")
    p.add_argument("--smoothing", type=float, default=0.1, help="label smoothing")
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", type=Path, default=None,
                   help="best checkpoint (default: tfs.env.work_dir('05')/translator.pt)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    for name in ("steps", "max_tokens", "eval_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def load_corpus(name):
    """(tokenizer, {split: [(en, ru)]}) of the course's corpus or the Tatoeba one."""
    if name == "course":
        from tfs.data import SPLITS, load_pairs, load_tokenizer

        splits = {s: [(r["en"], r["ru"]) for r in load_pairs(s)] for s in SPLITS}
        return load_tokenizer(), splits
    from tfs.hub import course_pairs, course_tokenizer

    splits = {"train": course_pairs("train"), "valid": course_pairs("validation")}
    return course_tokenizer(), {s: list(zip(d["en"], d["ru"], strict=True))
                                for s, d in splits.items()}


def setup_distributed():
    """Join torchrun's process group when WORLD_SIZE > 1; returns (rank, device)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if world_size > 1:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return T.distributed()[0], device


def main(argv=None):
    args = arguments(argv)
    env.quiet(progress_bars=not args.no_progress)
    rank, device = setup_distributed()
    env.seed_everything(args.seed)  # the same initial weights and batches in every process
    tokenizer, splits = load_corpus(args.corpus)
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False).ids  # noqa: E731
    src = [encode(en) for en, _ in splits["train"]]
    tgt = [encode(ru) for _, ru in splits["train"]]
    lengths = T.example_lengths(src, tgt)
    longest = max(a + b for a, b in lengths)

    def batches():
        for indices in T.batch_stream(lengths, args.max_tokens, seed=args.seed):
            yield T.collate(src, tgt, indices, PAD, BOS, EOS)

    model = Transformer(tokenizer.get_vocab_size(), args.d_model, args.n_heads, args.d_ff,
                        args.n_layers, args.dropout, PAD, max_len=max(256, 2 * longest))
    valid = splits["valid"][:1000]

    def evaluate(m):
        hypotheses = T.translate(m, tokenizer, [en for en, _ in valid], BOS, EOS)
        return T.corpus_scores(hypotheses, [ru for _, ru in valid])

    out = args.out or env.work_dir("05") / "translator.pt"
    precision = env.precision(device)
    if rank == 0:
        world = T.distributed()[1]
        print(f"{len(src):,} training pairs, {sum(p.numel() for p in model.parameters()):,} "
              f"parameters, {world} process(es) on {device}; {precision.why}")
    history = T.train(model, batches(), args.steps, peak_lr=args.lr, smoothing=args.smoothing,
                      evaluate=evaluate, eval_every=args.eval_every, best="chrf",
                      checkpoint=out, device=device, precision=precision,
                      progress=False if args.no_progress else None)
    if rank == 0:
        print(f"trained {args.steps} steps in {history.train_seconds:.0f} s; best valid chrF "
              f"{history.best_score:.1f} at step {history.best_step}, saved to {out}")
        for split, pairs in splits.items():
            if split == "train":
                continue
            hypotheses = T.translate(model, tokenizer, [en for en, _ in pairs], BOS, EOS)
            scores = T.corpus_scores(hypotheses, [ru for _, ru in pairs])
            print(f"{split:>18}: exact match {scores['exact_match']:5.1f}%  chrF "
                  f"{scores['chrf']:5.1f}  BLEU {scores['bleu']:5.1f}  (greedy)")
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
