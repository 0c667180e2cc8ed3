"""Train lesson 05's translator with its recipe and seed, and ship it as a Hugging Face model.

    OMP_NUM_THREADS=1 nice python scripts/export_translator.py   # about 5-10 min on a CPU

The defaults are lesson 05's parameters and training cells: seed 42, 1,200 optimizer steps
of 3,000 padded tokens on data/gen_en_ru's train split, d_model 128, 4 heads, d_ff 256,
2 layers, dropout 0.1, 128 positions, AdamW with a tenth of the steps of warm-up to 2e-3
and cosine decay, label smoothing 0.1, clipping at 1; greedy exact match on valid every
steps / 8 steps, the best of those validations kept. The model is initialised right after
`torch.manual_seed(seed)`, as in the lesson, so the same seed gives the same start.

The trained `tfs.model.Transformer` is then exported with `tfs.marian.export_marian` into
--out (default data/tfs_translator_en_ru/): a MarianMTModel folder that `transformers`
alone loads. The script checks the folder before it writes the card: reloaded by
transformers, `generate()` (4 beams, the folder's defaults) gives token for token the
translations of `tfs.decoding.beam_search` on every sentence of test_combinations, and
greedy = greedy; it then writes CARD.md (the recipe, the scores, those checks) and LICENSE.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tfs import env  # noqa: E402
from tfs import train as T  # noqa: E402
from tfs.data import load_pairs, load_tokenizer  # noqa: E402
from tfs.decoding import beam_search, greedy  # noqa: E402
from tfs.marian import export_marian, from_marian  # noqa: E402
from tfs.model import Transformer  # noqa: E402

NAME = "tfs_translator_en_ru"
COURSE_SENTENCE = "The researcher said she was exhausted."
LICENSE = f"""The course's translator (data/{NAME}/: its weights, configuration and tokenizer
files) is licensed under the Creative Commons Attribution 4.0 International licence
(CC BY 4.0): https://creativecommons.org/licenses/by/4.0/

Attribution: "Transformers from scratch" course, translator trained on gen_en_ru.

It was trained by scripts/export_translator.py on the course's generated corpus
(data/gen_en_ru/, CC BY 4.0), whose sentences were generated for the course. The code
that trains and exports it is covered by the repository's MIT licence (LICENSE at the
top level).
"""


def arguments(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=42, help="lesson 05's SEED (default 42)")
    p.add_argument("--steps", type=int, default=1200, help="optimizer steps (default 1200)")
    p.add_argument("--max-tokens", type=int, default=3000, help="padded tokens per batch")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--n-heads", type=int, default=4)
    p.add_argument("--d-ff", type=int, default=256)
    p.add_argument("--n-layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--max-len", type=int, default=128, help="positions (default 128)")
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate")
    p.add_argument("--smoothing", type=float, default=0.1, help="label smoothing")
    p.add_argument("--clip-norm", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=None, help="default: steps // 8")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--check", type=int, default=256,
                   help="test_combinations sentences on which generate() is compared (default 256)")
    p.add_argument("--out", type=Path, default=ROOT / "data" / NAME)
    args = p.parse_args(argv)
    args.eval_every = args.eval_every or max(1, args.steps // 8)
    for name in ("steps", "max_tokens", "eval_every", "max_len"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def until_eos(row, eos):
    return row[: row.index(eos) + 1] if eos in row else row


def same_tokens(theirs, ours, eos):
    """How many rows agree up to and including their first <eos>."""
    return sum(until_eos(a, eos) == until_eos(b, eos)
               for a, b in zip(theirs[:, 1:].tolist(), ours.tolist(), strict=True))


def check_export(model, folder, sentences, bos, eos, max_new_tokens=60):
    """Reload `folder` with transformers alone and read it back into tfs (`from_marian`, as
    lesson 04 does); count the sentences whose generate() tokens equal tfs.decoding's, with
    beam 4 (the folder's default) and greedy, for the model read back and for the trained
    model itself (its interleaved table is computed in float32, Marian's in float64: a
    difference of about 1e-6 that can flip a near tie). Returns a dict of counts."""
    from transformers import AutoTokenizer, MarianMTModel

    theirs = MarianMTModel.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    back = from_marian(folder)
    counts = {"sentences": len(sentences)}
    for beams in (4, 1):
        for name in ("read back", "trained"):
            counts[f"{name}, {'greedy' if beams == 1 else 'beam 4'}"] = 0
        for first in range(0, len(sentences), 64):
            batch = tokenizer(sentences[first : first + 64], return_tensors="pt", padding=True)
            with torch.no_grad():
                out = theirs.generate(**batch, num_beams=beams, max_new_tokens=max_new_tokens)
            for name, ours_model, start in (("read back", back, None), ("trained", model, bos)):
                if beams == 1:
                    ours = greedy(ours_model, batch["input_ids"], start, eos,
                                  max_len=max_new_tokens)
                else:
                    ours = beam_search(ours_model, batch["input_ids"], start, eos,
                                       max_len=max_new_tokens, beam_size=beams)
                key = f"{name}, {'greedy' if beams == 1 else 'beam 4'}"
                counts[key] += same_tokens(out, ours, eos)
    src = T.pad([tokenizer(s)["input_ids"] for s in sentences[:64]], model.pad_id)
    tgt = torch.full((src.shape[0], 1), bos)
    with torch.no_grad():
        difference = (back(src, tgt) - model(src, tgt)).abs().max().item()
    counts["round_trip_max_score_difference"] = difference
    return counts


def command_line(args):
    """The command that rebuilds this folder: the script and the arguments that differ
    from its defaults (lesson 05's recipe)."""
    defaults = vars(arguments([]))
    changed = [f"--{name.replace('_', '-')} {value}" for name, value in vars(args).items()
               if value != defaults[name] and name not in ("out", "threads")]
    return " ".join(["python scripts/export_translator.py", *changed])


def card(args, scores, checks, seconds, n_params, size):
    command = command_line(args)
    full = arguments([]).steps
    budget_note = "" if args.steps >= full else (
        f"This build stopped at {args.steps:,} of lesson 05's {full:,} steps, and its scores "
        f"below show the mistakes that leaves; `python scripts/export_translator.py` trains "
        f"with the whole budget.")
    recipe = (f"seed {args.seed}, {args.steps:,} steps of {args.max_tokens:,} padded tokens, "
              f"d_model {args.d_model}, {args.n_heads} heads, d_ff {args.d_ff}, "
              f"{args.n_layers} layers, dropout {args.dropout:g}, {args.max_len} positions, "
              f"peak learning rate {args.lr:g} (warm-up {args.steps // 10} steps, cosine "
              f"decay), label smoothing {args.smoothing:g}, clipping at {args.clip_norm:g}; "
              f"greedy exact match on valid every {args.eval_every} steps, best kept")
    rows = "\n".join(f"| `{split}` | {s['exact_match']:.1f} | {s['chrf']:.1f} | {s['bleu']:.1f} |"
                     for split, s in scores.items())
    return f"""# {NAME}: lesson 05's translator as a Hugging Face Marian model

**What.** The course's own Transformer (`tfs.model.Transformer`: the 2017 encoder-decoder,
post-LN, ReLU, shared embedding x sqrt(d_model), sinusoidal positions) at lesson 05's
sizes, trained by `tfs.train` as lesson 05 trains it (the budget is below) on the course's
generated corpus (`data/gen_en_ru/`),
exported by `tfs.marian.export_marian` as a `MarianMTModel` folder with its tokenizer as a
`PreTrainedTokenizerFast`. {n_params:,} parameters, {size / 1e6:.1f} MB. It translates
English sentences of the corpus's closed domain (people and their jobs, family, places in
town, everyday things) into Russian; outside that domain it fails (lesson 05 shows how).

Lesson 04 uses it offline, under its own name, in place of Helsinki-NLP/opus-mt-en-ru, to
show the same thing the real model shows online: Hugging Face's `generate` and the course's
beam search write the same tokens.

```python
from transformers import AutoTokenizer, MarianMTModel
folder = "data/{NAME}"
tokenizer = AutoTokenizer.from_pretrained(folder)   # appends <eos> to each source
model = MarianMTModel.from_pretrained(folder)
batch = tokenizer(["{COURSE_SENTENCE}"], return_tensors="pt")
print(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True))
```

(`generate()` uses 4 beams by default here, as opus-mt does. With transformers 4,
`pipeline("translation", model=folder)` runs it too; transformers 5 removed that pipeline.)

**Licence:** CC BY 4.0 (`LICENSE`), as the corpus it was trained on; attribution:
"Transformers from scratch" course, translator trained on gen_en_ru.

## How it was made

`{command}` (the script's defaults are lesson 05's recipe): {recipe}.
Training took {seconds:.0f} s on a CPU (`--threads {args.threads or torch.get_num_threads()}`).
{budget_note}

In the folder: `config.json` (Marian's names: `activation_function` relu, `scale_embedding`
true, `decoder_start_token_id` = <bos> = 1, `pad_token_id` 0, `eos_token_id` 2, one shared
vocabulary of 1,200 tokens, embeddings tied to the output layer), `model.safetensors`
(`final_logits_bias` is 0: the course's model has no output bias),
`generation_config.json` (4 beams, length penalty 1, <pad> and <bos> never generated, at
most {args.max_len} positions), `tokenizer.json` (the corpus's BPE tokenizer with a
post-processor appending <eos>) and `tokenizer_config.json`.

Marian's positional table puts the sines in the first half of each vector and the cosines
in the second; the course's interleaves them. The export reorders the d_model entries of
every weight by the same fixed permutation (`tfs.marian.with_positions`), which changes no
output: the files hold the course's weights, reordered.

## Checks (made by the script before it wrote this card)

- reloaded by transformers alone, `generate(num_beams=4)` writes the same tokens as
  `tfs.decoding.beam_search` on the folder read back into tfs (`tfs.marian.from_marian`, as
  lesson 04 does) for {checks['read back, beam 4']} of the first {checks['sentences']}
  test_combinations sentences, and `generate(num_beams=1)` the same as `tfs.decoding.greedy` for
  {checks['read back, greedy']} of {checks['sentences']};
- against the trained model itself (before the export): {checks['trained, beam 4']} and
  {checks['trained, greedy']} of {checks['sentences']}. Its positional table is computed in
  float32, Marian's in float64; the two differ by about 1e-6, which can flip a near tie;
- read back into tfs (`tfs.marian.from_marian`), its scores differ from the trained model's
  by at most {checks['round_trip_max_score_difference']:.0e}.

Scores of the exported model (greedy, `tfs.train.corpus_scores`):

| split | exact match (%) | chrF | BLEU |
|---|---|---|---|
{rows}

The course sentence, *{COURSE_SENTENCE}*, becomes *{checks['course_sentence']}*
"""


def main(argv=None):
    args = arguments(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    env.quiet(progress_bars=False)
    env.seed_everything(args.seed)
    tokenizer = load_tokenizer()
    pad, bos, eos = (tokenizer.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>"))
    train = load_pairs("train")
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False).ids  # noqa: E731
    src = [encode(r["en"]) for r in train]
    tgt = [encode(r["ru"]) for r in train]
    lengths = T.example_lengths(src, tgt)
    valid = load_pairs("valid")

    def batches():
        for indices in T.batch_stream(lengths, args.max_tokens, args.seed):
            yield T.collate(src, tgt, indices, pad, bos, eos)

    def evaluate(model):
        hypotheses = T.translate(model, tokenizer, [r["en"] for r in valid], bos, eos)
        return T.corpus_scores(hypotheses, [r["ru"] for r in valid])

    torch.manual_seed(args.seed)  # lesson 05 seeds again right before it builds the model
    model = Transformer(tokenizer.get_vocab_size(), args.d_model, args.n_heads, args.d_ff,
                        args.n_layers, args.dropout, pad, max_len=args.max_len)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{len(train):,} training pairs, {n_params:,} parameters, "
          f"{torch.get_num_threads()} thread(s)", flush=True)
    start = time.perf_counter()
    checkpoint = env.work_dir("export") / "translator.pt"
    history = T.train(model, batches(), args.steps, peak_lr=args.lr, smoothing=args.smoothing,
                      clip_norm=args.clip_norm, evaluate=evaluate, eval_every=args.eval_every,
                      best="exact_match", checkpoint=checkpoint, progress=False)
    seconds = time.perf_counter() - start
    print(f"trained {args.steps} steps in {seconds:.0f} s; best valid exact match "
          f"{history.best_score:.1f} % at step {history.best_step}", flush=True)
    model.eval()

    if args.out.exists():
        shutil.rmtree(args.out)
    folder = export_marian(model, tokenizer, args.out)
    scores = {}
    for split in ("valid", "test_combinations"):
        rows = load_pairs(split)
        hypotheses = T.translate(model, tokenizer, [r["en"] for r in rows], bos, eos)
        scores[split] = T.corpus_scores(hypotheses, [r["ru"] for r in rows])
        print(f"{split:>18}: exact match {scores[split]['exact_match']:5.1f} %  chrF "
              f"{scores[split]['chrf']:5.1f}  BLEU {scores[split]['bleu']:5.1f}", flush=True)
    sentences = [r["en"] for r in load_pairs("test_combinations")][: args.check]
    checks = check_export(model, folder, sentences, bos, eos)
    checks["course_sentence"] = T.translate(model, tokenizer, [COURSE_SENTENCE], bos, eos,
                                            beam_size=4)[0]
    print(json.dumps(checks, ensure_ascii=False), flush=True)
    if any(checks[f"read back, {d}"] != checks["sentences"] for d in ("beam 4", "greedy")):
        raise SystemExit("generate() and tfs.decoding disagree: not writing the card")
    size = sum(p.stat().st_size for p in folder.iterdir())
    (folder / "CARD.md").write_text(card(args, scores, checks, seconds, n_params, size))
    (folder / "LICENSE").write_text(LICENSE)
    print(f"wrote {folder} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
