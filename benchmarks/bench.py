"""Benchmarks of tfs.model and tfs.decoding (not part of `make test`).

One run measures, with the contenders interleaved in rounds (their order alternating) and
medians taken:

  (a) a training step of tfs.model.Transformer vs the same network built from PyTorch's
      nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (same sizes, same weights, the
      tied embedding, the same masks, dropout in the same places);
  (b) greedy decoding with vs without the KV cache, at 32, 64 and 128 new tokens;
  (c) beam search (4 beams) vs greedy;
  (d) greedy vs Hugging Face `MarianMTModel.generate` (random weights, built offline from a
      MarianConfig of the same sizes);
  (e) beam search (4 beams, 64 new tokens, B = 8) at opus-mt-en-ru's real sizes: a
      MarianMTModel with random weights, converted by tfs.marian, against its own
      `generate(num_beams=4)`, after checking both give the same tokens.

Usage (from the repository's root; transformers is in requirements.txt):
  .venv/bin/python benchmarks/bench.py                  # (a)-(e): see benchmarks/README.md
  .venv/bin/python benchmarks/bench.py --only e --threads 1
Options: --rounds N (default 7), --quick (fewer rounds, for a smoke test), --only abcde,
--threads N.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tfs without installing it

from tfs.decoding import beam_search, greedy  # noqa: E402
from tfs.model import Transformer, causal_mask, copy_to_torch, padding_mask  # noqa: E402

PAD, BOS, EOS = 0, 1, 2
COURSE = dict(vocab_size=16_000, d_model=256, n_heads=4, d_ff=1024, n_layers=3, dropout=0.1)
REVERSAL = dict(vocab_size=13, d_model=64, n_heads=4, d_ff=256, n_layers=2, dropout=0.1)


# --- the same network from PyTorch's layers -----------------------------------------------------


def copy_layer(ours, theirs):
    copy_to_torch(ours, theirs)
    # the course's layers have no dropout on attention weights nor inside the feed-forward
    for attention in (theirs.self_attn, getattr(theirs, "multihead_attn", None)):
        if attention is not None:
            attention.dropout = 0.0
    theirs.dropout = nn.Identity()  # (dropout1..3 after the sub-layers stay, as in ours)


class TorchTransformer(nn.Module):
    """tfs.model.Transformer's network, from nn.TransformerEncoder/Decoder (no final norms)."""

    def __init__(self, ours):
        super().__init__()
        vocab_size, d_model = ours.embedding.weight.shape
        n_heads = ours.encoder[0].self_attention.n_heads
        d_ff = ours.encoder[0].feed_forward.linear1.out_features
        p = ours.dropout.p
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.embedding.load_state_dict(ours.embedding.state_dict())
        self.register_buffer("pe", ours.pe.clone())
        self.dropout = nn.Dropout(p)
        encoder_layer = nn.TransformerEncoderLayer(d_model, n_heads, d_ff, p, batch_first=True)
        decoder_layer = nn.TransformerDecoderLayer(d_model, n_heads, d_ff, p, batch_first=True)
        n_layers = len(ours.encoder)
        self.encoder = nn.TransformerEncoder(encoder_layer, n_layers, enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(decoder_layer, n_layers)
        for our_layer, their_layer in zip(ours.encoder, self.encoder.layers, strict=True):
            copy_layer(our_layer, their_layer)
        for our_layer, their_layer in zip(ours.decoder, self.decoder.layers, strict=True):
            copy_layer(our_layer, their_layer)

    def embed(self, ids):
        x = self.embedding(ids) * math.sqrt(self.d_model) + self.pe[: ids.shape[1]]
        return self.dropout(x)

    def forward(self, src, tgt):
        src_padding = padding_mask(src, PAD)[:, 0, 0]  # (B, T_src), additive like ours
        tgt_padding = padding_mask(tgt, PAD)[:, 0, 0]
        memory = self.encoder(self.embed(src), src_key_padding_mask=src_padding)
        y = self.decoder(
            self.embed(tgt),
            memory,
            tgt_mask=causal_mask(tgt.shape[1], tgt.device)[0, 0],
            tgt_is_causal=True,
            tgt_key_padding_mask=tgt_padding,
            memory_key_padding_mask=src_padding,
        )
        return y @ self.embedding.weight.T


# --- timing -------------------------------------------------------------------------------------


def interleaved(contenders, rounds, repeat=1):
    """{name: median seconds per call}: every round calls each contender `repeat` times,
    in alternating order, so that a slow spell of the machine hits all of them alike."""
    times = {name: [] for name in contenders}
    names = list(contenders)
    for name in names:  # warm-up
        contenders[name]()
    for round_index in range(rounds):
        order = names if round_index % 2 == 0 else names[::-1]
        for name in order:
            for _ in range(repeat):
                start = time.perf_counter()
                contenders[name]()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(samples) for name, samples in times.items()}


def padded_batch(batch, shortest, longest, vocab_size, generator):
    lengths = torch.randint(shortest, longest + 1, (batch,), generator=generator)
    ids = torch.randint(3, vocab_size, (batch, int(lengths.max())), generator=generator)
    positions = torch.arange(ids.shape[1])[None, :]
    return ids.masked_fill(positions >= lengths[:, None], PAD)


# --- (a) training step --------------------------------------------------------------------------


def training_step(model, optimizer, src, tgt_in, tgt_out):
    scores = model(src, tgt_in)
    loss = F.cross_entropy(scores.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def bench_training(sizes, batch, shortest, longest, rounds, label):
    torch.manual_seed(0)
    ours = Transformer(**sizes, pad_id=PAD)
    theirs = TorchTransformer(ours)
    generator = torch.Generator().manual_seed(0)
    src = padded_batch(batch, shortest, longest, sizes["vocab_size"], generator)
    tgt = padded_batch(batch, shortest, longest, sizes["vocab_size"], generator)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    ours.eval(), theirs.eval()
    with torch.no_grad():  # the same function, before the timing starts
        real = tgt_in != PAD
        same = torch.allclose(ours(src, tgt_in)[real], theirs(src, tgt_in)[real], atol=1e-4)
    assert same, "the two networks must compute the same scores"
    ours.train(), theirs.train()
    unchecked = Transformer(**sizes, pad_id=PAD)  # ours without the input checks
    unchecked.load_state_dict(ours.state_dict())
    unchecked.check_ids = lambda *args, **kwargs: None
    optimizers = {
        "tfs": torch.optim.Adam(ours.parameters(), lr=1e-4),
        "torch": torch.optim.Adam(theirs.parameters(), lr=1e-4),
        "tfs-unchecked": torch.optim.Adam(unchecked.parameters(), lr=1e-4),
    }
    models = {"tfs": ours, "torch": theirs, "tfs-unchecked": unchecked}
    contenders = {
        name: (lambda m=m, o=optimizers[name]: training_step(m, o, src, tgt_in, tgt_out))
        for name, m in models.items()
    }
    medians = interleaved(contenders, rounds, repeat=2)
    shape = f"B={batch}, T={shortest}-{longest} padded"
    return [
        (f"(a) training step, {label}, {shape}", "tfs / nn.Transformer layers",
         medians["tfs"], medians["torch"]),
        (f"(a) input checks' cost, {label}", "tfs / tfs without checks",
         medians["tfs"], medians["tfs-unchecked"]),
    ]


# --- (b), (c) decoding --------------------------------------------------------------------------


def decoding_model():
    torch.manual_seed(0)
    return Transformer(**COURSE, pad_id=PAD).eval()


def decoding_source(batch=8):
    generator = torch.Generator().manual_seed(1)
    return padded_batch(batch, 20, 32, COURSE["vocab_size"], generator)


def recompute_last_only(model, src, n_tokens):
    """Greedy without a cache, scoring only the last position: the fairest recomputation."""
    with torch.no_grad():
        memory = model.encode(src)
        src_mask = padding_mask(src, PAD)
        tokens = src.new_full((src.shape[0], 1), BOS)
        for _ in range(n_tokens):
            x = model.embed(tokens)
            tgt_mask = causal_mask(tokens.shape[1])
            for layer in model.decoder:
                x = layer(x, memory, src_mask, tgt_mask)
            scores = x[:, -1] @ model.embedding.weight.T
            scores[:, PAD] = float("-inf")
            tokens = torch.cat([tokens, scores.argmax(-1, keepdim=True)], dim=1)
    return tokens[:, 1:]


def bench_cache(rounds):
    model, src = decoding_model(), decoding_source()
    rows = []
    for n in (32, 64, 128):
        cached = greedy(model, src, BOS, EOS, max_len=n)
        assert cached.shape == (8, n) and not (cached == EOS).any(), "must run all n steps"
        assert torch.equal(cached, greedy(model, src, BOS, EOS, max_len=n, use_cache=False))
        contenders = {
            "cache": lambda n=n: greedy(model, src, BOS, EOS, max_len=n),
            "recompute": lambda n=n: greedy(model, src, BOS, EOS, max_len=n, use_cache=False),
            "recompute-last": lambda n=n: recompute_last_only(model, src, n),
        }
        medians = interleaved(contenders, max(3, rounds // 2) if n == 128 else rounds)
        rows.append((f"(b) greedy, B=8, {n} tokens", "recompute / cache",
                     medians["recompute"], medians["cache"]))
        rows.append((f"(b) greedy, B=8, {n} tokens", "recompute (last position scored) / cache",
                     medians["recompute-last"], medians["cache"]))
    return rows


def bench_beam(rounds):
    model, src = decoding_model(), decoding_source()
    n = 128
    contenders = {
        "beam": lambda: beam_search(model, src, BOS, EOS, max_len=n, beam_size=4),
        "greedy": lambda: greedy(model, src, BOS, EOS, max_len=n),
    }
    assert beam_search(model, src, BOS, EOS, max_len=n, beam_size=4).shape == (8, n)
    medians = interleaved(contenders, rounds)
    return [(f"(c) beam 4 vs greedy, B=8, {n} tokens", "beam / greedy",
             medians["beam"], medians["greedy"])]


# --- (d) Hugging Face -------------------------------------------------------------------------


def bench_hugging_face(rounds):
    try:
        from transformers import MarianMTModel
        from transformers.utils import logging as hf_logging
    except ImportError:
        return []
    from tfs.marian import marian_config

    hf_logging.set_verbosity_error()
    config = marian_config(  # ours as a MarianConfig: ReLU, x sqrt(d_model), tied, post-LN
        **{k: COURSE[k] for k in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers")},
        max_len=256, pad_id=PAD, eos_id=EOS, decoder_start_id=BOS, activation="relu",
    )
    torch.manual_seed(0)
    marian = MarianMTModel(config).eval()
    model, src = decoding_model(), decoding_source()
    attention_mask = (src != PAD).long()
    n = 128
    ours_params = sum(p.numel() for p in model.parameters())
    theirs_params = sum(p.numel() for p in marian.parameters())

    def generate(num_beams=1):
        with torch.no_grad():
            return marian.generate(
                input_ids=src,
                attention_mask=attention_mask,
                num_beams=num_beams,
                do_sample=False,
                max_new_tokens=n,
                min_new_tokens=n,  # never <eos> before n tokens: exactly n steps
                bad_words_ids=[[PAD]],  # never <pad>, like ours (and like opus-mt's config)
                use_cache=True,
            )

    assert generate().shape == (8, n + 1)  # their output starts with the decoder's start token
    ours_out = greedy(model, src, BOS, EOS, max_len=n)
    assert ours_out.shape == (8, n) and not (ours_out == EOS).any(), "ours: exactly n steps too"
    contenders = {
        "tfs": lambda: greedy(model, src, BOS, EOS, max_len=n),
        "hf": generate,
    }
    medians = interleaved(contenders, rounds)
    rows = [(f"(d) greedy vs HF generate, B=8, {n} tokens "
             f"({ours_params:,} vs {theirs_params:,} params)", "tfs / transformers",
             medians["tfs"], medians["hf"])]
    contenders = {
        "tfs": lambda: beam_search(model, src, BOS, EOS, max_len=n, beam_size=4),
        "hf": lambda: generate(num_beams=4),
    }
    medians = interleaved(contenders, max(3, rounds // 2))
    rows.append((f"(d) beam 4 vs HF generate(num_beams=4), B=8, {n} tokens",
                 "tfs / transformers", medians["tfs"], medians["hf"]))
    return rows


# --- (e) opus-mt-en-ru's sizes, its weights converted by tfs.marian -------------------------------

OPUS_CONFIG = (Path(__file__).resolve().parent.parent / "data" / "hub"
               / "models--Helsinki-NLP--opus-mt-en-ru" / "snapshots" / ("0" * 40) / "config.json")


def bench_opus_mt(rounds, n=64, batch=8):
    """Our beam search on opus-mt-en-ru converted by tfs.marian vs MarianMTModel.generate."""
    try:
        from transformers import MarianConfig, MarianMTModel
        from transformers.utils import logging as hf_logging
    except ImportError:
        return []
    import json

    from tfs.marian import from_marian, generate_settings

    hf_logging.set_verbosity_error()
    config = MarianConfig.from_dict(json.loads(OPUS_CONFIG.read_text()))  # the real sizes
    torch.manual_seed(0)
    marian = MarianMTModel(config).eval()  # random weights: the time does not depend on them
    ours = from_marian(marian)
    pad = config.pad_token_id
    generator = torch.Generator().manual_seed(1)
    lengths = torch.randint(20, 33, (batch,), generator=generator)
    src = torch.randint(1, pad, (batch, int(lengths.max())), generator=generator)
    src = src.masked_fill(torch.arange(src.shape[1])[None, :] >= lengths[:, None], pad)
    settings = generate_settings(ours, beam_size=4, max_len=n)

    def generate():
        with torch.no_grad():
            return marian.generate(input_ids=src, attention_mask=(src != pad).long(), **settings)

    def ours_beam():
        return beam_search(ours, src, None, config.eos_token_id, max_len=n, beam_size=4)

    theirs_out, ours_out = generate(), ours_beam()
    assert torch.equal(theirs_out[:, 1:], ours_out), "the same tokens, or the timing means nothing"
    assert ours_out.shape == (batch, n), "every sentence runs the full n tokens"
    ours_params = sum(p.numel() for p in ours.parameters())
    medians = interleaved({"tfs": ours_beam, "hf": generate}, rounds)
    return [(f"(e) opus-mt-en-ru sizes ({ours_params:,} params), converted by tfs.marian: "
             f"beam 4 vs HF generate(num_beams=4), B={batch}, {n} tokens, identical tokens",
             "tfs / transformers", medians["tfs"], medians["hf"])]


# --- the report ---------------------------------------------------------------------------------


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2 rounds: a smoke test")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--only", default="abcde", help="which parts to run, e.g. 'ab'")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        import transformers

        hf_version = transformers.__version__
    except ImportError:
        hf_version = "not installed: (d) skipped"
    load_before = os.getloadavg()
    started = time.perf_counter()

    parts = {
        "a": lambda: bench_training(COURSE, 32, 10, 40, rounds, "course sizes (|V| 16000, d 256)")
        + bench_training(REVERSAL, 128, 11, 11, rounds, "lesson 03 reversal (|V| 13, d 64)"),
        "b": lambda: bench_cache(rounds),
        "c": lambda: bench_beam(rounds),
        "d": lambda: bench_hugging_face(rounds),
        "e": lambda: bench_opus_mt(max(3, rounds // 2)),
    }
    rows = []
    for part in args.only:
        part_started = time.perf_counter()
        new_rows = parts[part]()
        for what, ratio, a, b in new_rows:  # progress, on stderr: the table comes at the end
            print(f"{what}: {ratio} = {a / b:.2f}", file=sys.stderr, flush=True)
        print(f"  ({part}) took {time.perf_counter() - part_started:.0f} s", file=sys.stderr)
        rows += new_rows

    load_after = os.getloadavg()
    print(f"torch {torch.__version__}, transformers {hf_version}, "
          f"torch threads: {torch.get_num_threads()}, CPU: {cpu_model()} ({os.cpu_count()} cores)")
    print(f"load average (1/5/15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}, "
          f"after: {' '.join(f'{x:.2f}' for x in load_after)}; "
          f"{rounds} rounds, {time.perf_counter() - started:.0f} s in all")
    print()
    print("| measurement | ratio | A (median) | B (median) | A / B |")
    print("|---|---|---:|---:|---:|")
    for what, ratio, a, b in rows:
        print(f"| {what} | {ratio} | {a * 1000:.1f} ms | {b * 1000:.1f} ms | {a / b:.2f} |")


if __name__ == "__main__":
    main()
