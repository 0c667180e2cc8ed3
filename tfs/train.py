"""Training a translator: the loop that lessons 03, 04 and 05 share, written once.

Lesson 05 writes every piece inline first and then checks it equals the version here.

- Batches by length (`length_batches`, `batch_stream`): sentences of similar length share a
  batch, and a batch holds at most `max_tokens` padded tokens instead of a fixed number of
  sentences; `padding_share` measures what the padding wastes. `collate` pads a batch into a
  `Batch`: the source, the decoder's input (<bos> + target) and what it must predict
  (target + <eos>): teacher forcing.
- The loss (`loss_sum`): label-smoothed cross-entropy over the real target tokens only
  (<pad> contributes nothing), computed by PyTorch's own `F.cross_entropy`;
  `smoothing_floor` is the lowest value it can take.
- The schedule (`learning_rate`, `scheduler`): linear warm-up to a peak, then a cosine
  decay to zero; AdamW with the paper's betas (`optimizer`).
- `train_step`: one step, with gradient clipping (the norm before clipping is returned) and
  mixed precision (autocast to a float16/bfloat16 `dtype`, a GradScaler for float16).
- `train`: the loop: a fixed number of steps (never a time budget, so a run is
  reproducible), an evaluation hook every `eval_every` steps, the best checkpoint saved and
  reloaded, a progress bar for readers (none when headless), mixed precision as
  `tfs.env.precision(device)` advises, and DDP when `torch.distributed` is initialised:
  each process takes its share of every global batch (`Batch.shard`) and the loss is
  normalised by the global number of target tokens, so N processes compute the very step
  one process would compute on the whole batch (tests/test_train_ddp.py checks it).
- Evaluation: `translate` (greedy or beam search), `log_probabilities` (teacher-forced
  log p(target | source), for contrastive pairs) and `corpus_scores` (exact match, and chrF
  and BLEU from `sacrebleu`, the field's standard implementation).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

# ---------------------------------------------------------------------------------------------
# argument checks


def _check_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}: {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def _check_real(value, name, low=None, high=None, high_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}: {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    if high is not None and (value >= high if high_open else value > high):
        bound = f"below {high}" if high_open else f"at most {high}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def _costs(lengths):
    """lengths: ints, or (source, target) pairs of ints -> list of tuples of ints."""
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Sequence):
        raise TypeError(f"lengths must be a list of lengths, got {type(lengths).__name__}")
    if len(lengths) == 0:
        raise ValueError("lengths is empty: there is nothing to batch")
    rows = []
    for i, length in enumerate(lengths):
        row = tuple(length) if isinstance(length, (tuple, list)) else (length,)
        for value in row:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"lengths[{i}] must be an int or a (source, target) pair of "
                                f"ints, got {length!r}")
            if value < 1:
                raise ValueError(f"lengths[{i}] must be positive, got {length!r}")
        rows.append(tuple(int(v) for v in row))
    if len({len(row) for row in rows}) != 1:
        raise ValueError("lengths mixes single lengths and (source, target) pairs")
    return rows


# ---------------------------------------------------------------------------------------------
# batches by length


def batch_cost(lengths, indices):
    """Padded tokens of a batch: sentences x the longest of each column (source, target)."""
    rows = [lengths[i] if isinstance(lengths[i], (tuple, list)) else (lengths[i],)
            for i in indices]
    return len(rows) * sum(max(column) for column in zip(*rows, strict=True))


def length_batches(lengths, max_tokens, seed=0, bucket=True):
    """Split sentences into batches of at most `max_tokens` padded tokens; a list of index lists.

    `lengths[i]`: the length of sentence i, or a (source, target) pair of lengths; a batch
    costs (number of sentences) x (its longest source + its longest target). With
    `bucket=True` sentences are sorted by length first (ties in random order), so a batch
    holds sentences of about the same length and little padding; with `bucket=False` they
    are taken in random order. Batches come in random order either way (`seed`).
    """
    rows = _costs(lengths)
    max_tokens = _check_int(max_tokens, "max_tokens")
    _check_int(seed, "seed", minimum=0)
    longest = max(range(len(rows)), key=lambda i: sum(rows[i]))
    if sum(rows[longest]) > max_tokens:
        raise ValueError(f"sentence {longest} alone needs {sum(rows[longest])} tokens, more "
                         f"than max_tokens={max_tokens}: raise max_tokens")
    rng = random.Random(seed)
    order = list(range(len(rows)))
    rng.shuffle(order)
    if bucket:
        order.sort(key=lambda i: rows[i])  # stable: equal lengths keep their random order
    batches, current, widest = [], [], None
    for i in order:
        grown = rows[i] if widest is None else tuple(map(max, widest, rows[i]))
        if current and (len(current) + 1) * sum(grown) > max_tokens:
            batches.append(current)
            current, grown = [], rows[i]
        current.append(i)
        widest = grown
    batches.append(current)
    rng.shuffle(batches)
    return batches


def batch_stream(lengths, max_tokens, seed=0, bucket=True) -> Iterator[list[int]]:
    """Batches epoch after epoch, endlessly: epoch e is `length_batches(..., seed + e)`."""
    epoch = 0
    while True:
        yield from length_batches(lengths, max_tokens, seed + epoch, bucket)
        epoch += 1


def padding_share(lengths, batches):
    """The share of the padded tokens in `batches` that are padding, in [0, 1)."""
    rows = _costs(lengths)
    real = sum(sum(rows[i]) for batch in batches for i in batch)
    padded = sum(batch_cost(rows, batch) for batch in batches)
    return 1 - real / padded


@dataclass
class Batch:
    """A padded batch: src (B, T_src); tgt_in = <bos> + target, tgt_out = target + <eos>
    (both (B, T_tgt)): at position t the decoder reads tgt_in[:, :t+1] and must predict
    tgt_out[:, t] (teacher forcing)."""

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    pad_id: int = 0

    def __len__(self):
        return self.src.shape[0]

    def to(self, device):
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device),
                     self.pad_id)

    def target_tokens(self):
        """The number of real (not <pad>) tokens to predict: what the loss averages over."""
        return int((self.tgt_out != self.pad_id).sum())

    def shard(self, rank, world_size):
        """The rows of process `rank` out of `world_size` (rows rank, rank + N, ...), with the
        columns that are padding in every remaining row dropped."""
        world_size = _check_int(world_size, "world_size")
        rank = _check_int(rank, "rank", minimum=0)
        if rank >= world_size:
            raise ValueError(f"rank must be below world_size={world_size}, got {rank}")
        if len(self) < world_size:
            raise ValueError(f"a batch of {len(self)} sentences cannot be shared by "
                             f"{world_size} processes: raise max_tokens")
        rows = slice(rank, None, world_size)
        return Batch(_trim(self.src[rows], self.pad_id), _trim(self.tgt_in[rows], self.pad_id),
                     _trim(self.tgt_out[rows], self.pad_id, like=self.tgt_in[rows]), self.pad_id)


def _trim(ids, pad_id, like=None):
    used = ((ids if like is None else like) != pad_id).any(dim=0)  # (T,)
    width = int(used.nonzero().max()) + 1 if used.any() else 1
    return ids[:, :width]


def pad(sequences, pad_id):
    """Right-pad lists of token ids into a (B, T) LongTensor."""
    if not sequences:
        raise ValueError("pad() needs at least one sequence")
    width = max(len(s) for s in sequences)
    if width == 0:
        raise ValueError("pad() got only empty sequences")
    out = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    for row, ids in enumerate(sequences):
        out[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
    return out


def collate(src_ids, tgt_ids, indices, pad_id, bos_id, eos_id):
    """The `Batch` of sentences `indices`: source + <eos>; <bos> + target; target + <eos>.

    `src_ids`, `tgt_ids`: token ids of every sentence, without special tokens.
    """
    if len(src_ids) != len(tgt_ids):
        raise ValueError(f"src_ids and tgt_ids must have one entry per sentence, got "
                         f"{len(src_ids)} and {len(tgt_ids)}")
    if len(indices) == 0:
        raise ValueError("collate() needs at least one sentence index")
    src = pad([list(src_ids[i]) + [eos_id] for i in indices], pad_id)
    tgt_in = pad([[bos_id] + list(tgt_ids[i]) for i in indices], pad_id)
    tgt_out = pad([list(tgt_ids[i]) + [eos_id] for i in indices], pad_id)
    return Batch(src, tgt_in, tgt_out, int(pad_id))


def example_lengths(src_ids, tgt_ids):
    """(source + <eos>, <bos> + target) lengths of every sentence: what `collate` pads."""
    if len(src_ids) != len(tgt_ids):
        raise ValueError(f"src_ids and tgt_ids must have one entry per sentence, got "
                         f"{len(src_ids)} and {len(tgt_ids)}")
    return [(len(s) + 1, len(t) + 1) for s, t in zip(src_ids, tgt_ids, strict=True)]


# ---------------------------------------------------------------------------------------------
# the loss


def loss_sum(scores, targets, pad_id, smoothing=0.0):
    """Label-smoothed cross-entropy summed over the real target tokens (<pad> ignored).

    scores (B, T, |V|), targets (B, T). With smoothing eps the target distribution is
    (1 - eps) on the right token plus eps spread evenly over all |V| tokens (PyTorch's
    definition). Returns the sum; divide by the number of real tokens for the mean.
    """
    if not isinstance(scores, torch.Tensor) or not isinstance(targets, torch.Tensor):
        raise TypeError("loss_sum() takes scores and targets as tensors")
    if scores.dim() != 3 or targets.shape != scores.shape[:2]:
        raise ValueError(f"scores must be (B, T, |V|) and targets (B, T), got "
                         f"{tuple(scores.shape)} and {tuple(targets.shape)}")
    smoothing = _check_real(smoothing, "smoothing", 0.0, 1.0, high_open=True)
    return F.cross_entropy(scores.float().reshape(-1, scores.shape[-1]), targets.reshape(-1),
                           ignore_index=pad_id, label_smoothing=smoothing, reduction="sum")


def smoothing_floor(smoothing, vocab_size):
    """The lowest mean label-smoothed loss: the entropy of the smoothed target distribution
    (reached when the model predicts exactly that distribution)."""
    smoothing = _check_real(smoothing, "smoothing", 0.0, 1.0, high_open=True)
    vocab_size = _check_int(vocab_size, "vocab_size", minimum=2)
    right = 1 - smoothing + smoothing / vocab_size
    other = smoothing / vocab_size
    floor = -right * math.log(right)
    if other > 0:
        floor -= (vocab_size - 1) * other * math.log(other)
    return floor


# ---------------------------------------------------------------------------------------------
# optimizer and schedule


def learning_rate(step, peak_lr, warmup_steps, total_steps):
    """Linear warm-up over `warmup_steps` to `peak_lr`, then a cosine decay to 0 at
    `total_steps` (step counts from 0)."""
    step = _check_int(step, "step", minimum=0)
    peak_lr = _check_real(peak_lr, "peak_lr", 0.0)
    total_steps = _check_int(total_steps, "total_steps")
    warmup_steps = _check_int(warmup_steps, "warmup_steps", minimum=0)
    if warmup_steps >= total_steps:
        raise ValueError(f"warmup_steps ({warmup_steps}) must be fewer than total_steps "
                         f"({total_steps})")
    if step < warmup_steps:
        return peak_lr * (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))
    return peak_lr * 0.5 * (1 + math.cos(math.pi * progress))


def optimizer(model, peak_lr, weight_decay=0.01):
    """AdamW with the paper's betas (0.9, 0.98) and eps 1e-9."""
    _check_real(peak_lr, "peak_lr", 0.0)
    _check_real(weight_decay, "weight_decay", 0.0)
    return torch.optim.AdamW(model.parameters(), lr=peak_lr, betas=(0.9, 0.98), eps=1e-9,
                             weight_decay=weight_decay)


def scheduler(optim, warmup_steps, total_steps):
    """A LambdaLR that follows `learning_rate` (the optimizer's lr is the peak)."""
    peak = optim.param_groups[0]["lr"]
    learning_rate(0, peak, warmup_steps, total_steps)  # checks the arguments
    return torch.optim.lr_scheduler.LambdaLR(
        optim, lambda step: learning_rate(step, 1.0, warmup_steps, total_steps))


# ---------------------------------------------------------------------------------------------
# one step, distributed or not


def distributed():
    """(rank, world_size): (0, 1) unless torch.distributed is initialised."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def _all_sum(value: torch.Tensor) -> torch.Tensor:
    if distributed()[1] > 1:
        torch.distributed.all_reduce(value)
    return value


def _autocast(device, dtype):
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=dtype)


@dataclass
class StepResult:
    loss: float  # mean loss per real target token of the (global) batch
    grad_norm: float  # the gradients' norm before clipping
    tokens: int  # real target tokens in the (global) batch


def train_step(model, batch, optim, smoothing=0.0, clip_norm=1.0, dtype=None, scaler=None):
    """One optimizer step on `batch` (this process's share of it under DDP).

    The loss is the label-smoothed cross-entropy averaged over the real target tokens of
    the whole global batch: each process divides its sum by the global count (times the
    number of processes, since DDP averages the gradients), so the step equals one
    process's step on the whole batch. Gradients are clipped to `clip_norm` (None: no
    clipping); `dtype` (torch.bfloat16/float16) runs the forward under autocast; `scaler`
    (a torch.amp.GradScaler) scales the float16 loss.
    """
    if not isinstance(batch, Batch):
        raise TypeError(f"batch must be a tfs.train.Batch, got {type(batch).__name__}")
    module = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    if getattr(module, "pad_id", batch.pad_id) != batch.pad_id:
        raise ValueError(f"the batch pads with {batch.pad_id}, the model with {module.pad_id}")
    _, world_size = distributed()
    device = batch.src.device
    counts = _all_sum(torch.tensor([float(batch.target_tokens())], device=device))
    n_global = counts.item()
    if n_global == 0:
        raise ValueError("the batch holds no target token to learn from")
    model.train()
    with _autocast(device, dtype):
        scores = model(batch.src, batch.tgt_in)  # (B, T_tgt, |V|)
    total = loss_sum(scores, batch.tgt_out, batch.pad_id, smoothing)
    loss = total * (world_size / n_global)
    optim.zero_grad(set_to_none=True)
    (scaler.scale(loss) if scaler is not None else loss).backward()
    if scaler is not None:
        scaler.unscale_(optim)
    params = [p for p in module.parameters() if p.grad is not None]
    if clip_norm is None:
        norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))
    else:
        norm = nn.utils.clip_grad_norm_(params, _check_real(clip_norm, "clip_norm", 0.0))
    if scaler is not None:
        scaler.step(optim)
        scaler.update()
    else:
        optim.step()
    mean = _all_sum(total.detach().reshape(1)).item() / n_global
    return StepResult(mean, float(norm), int(n_global))


# ---------------------------------------------------------------------------------------------
# the loop


@dataclass
class History:
    """What `train` records: one entry per step, one per evaluation."""

    loss: list = field(default_factory=list)  # mean loss per target token, per step
    lr: list = field(default_factory=list)
    grad_norm: list = field(default_factory=list)  # before clipping
    tokens: list = field(default_factory=list)  # real target tokens per step
    seconds: list = field(default_factory=list)  # training time so far (evaluation excluded)
    evals: list = field(default_factory=list)  # dicts: step, seconds, and the hook's metrics
    best_step: int | None = None
    best_score: float | None = None
    clip_norm: float | None = None

    @property
    def clipped_share(self):
        """The share of steps whose gradients were clipped."""
        if self.clip_norm is None or not self.grad_norm:
            return 0.0
        return sum(n > self.clip_norm for n in self.grad_norm) / len(self.grad_norm)

    @property
    def train_seconds(self):
        return self.seconds[-1] if self.seconds else 0.0


def save_checkpoint(model, path):
    """Save the model's weights (state_dict) to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    module = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    torch.save(module.state_dict(), path)
    return path


def load_checkpoint(model, path):
    """Load weights saved by `save_checkpoint` into `model`; returns the model."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    module = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    device = next(module.parameters()).device
    module.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    return model


def train(
    model: nn.Module,
    batches: Iterable[Batch],
    steps: int,
    peak_lr: float = 1e-3,
    warmup_steps: int | None = None,
    smoothing: float = 0.1,
    clip_norm: float | None = 1.0,
    weight_decay: float = 0.01,
    evaluate: Callable[[nn.Module], dict] | None = None,
    eval_every: int | None = None,
    best: str | None = None,
    higher_is_better: bool = True,
    checkpoint: str | Path | None = None,
    device: torch.device | str | None = None,
    precision=None,
    progress: bool | None = None,
) -> History:
    """Train `model` for exactly `steps` optimizer steps on `batches`; returns a `History`.

    - `batches`: an iterable of `Batch` (e.g. `collate` over `batch_stream`), at least
      `steps` of them; under DDP every process gets the same global batches and keeps its
      share (`Batch.shard`).
    - schedule: `warmup_steps` (default a tenth of `steps`) to `peak_lr`, cosine to 0;
      AdamW, label smoothing `smoothing`, clipping at `clip_norm`.
    - `evaluate(model) -> dict of numbers`, called (in eval mode, without gradients, on
      process 0 only) every `eval_every` steps and after the last; with `best` (a key of
      that dict) and `checkpoint` (a file path), the weights of the best evaluation are
      saved there and loaded back at the end.
    - `precision`: an object with `.dtype` and `.grad_scaler` (default:
      `tfs.env.precision(device)`): autocast to that dtype, a GradScaler when asked.
    - `progress`: a progress bar (default: on, unless headless or not process 0).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    steps = _check_int(steps, "steps")
    warmup_steps = steps // 10 if warmup_steps is None else warmup_steps
    learning_rate(0, peak_lr, warmup_steps, steps)  # checks the schedule's arguments
    if evaluate is not None and not callable(evaluate):
        raise TypeError("evaluate must be a function model -> dict of metrics")
    if eval_every is not None:
        eval_every = _check_int(eval_every, "eval_every")
    if best is not None and (evaluate is None or checkpoint is None):
        raise ValueError("best= needs an evaluate function and a checkpoint path")
    if clip_norm is not None:
        clip_norm = _check_real(clip_norm, "clip_norm", 0.0)
    if device is None:
        device = next(model.parameters()).device
    device = torch.device(device)
    if precision is None:
        from tfs.env import precision as advise

        precision = advise(device)
    dtype = getattr(precision, "dtype", None)
    scaler = torch.amp.GradScaler(device.type) if getattr(precision, "grad_scaler", False) else None

    rank, world_size = distributed()
    model.to(device)
    net = model
    if world_size > 1 and not isinstance(model, nn.parallel.DistributedDataParallel):
        ids = [device.index] if device.type == "cuda" else None
        net = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    module = net.module if isinstance(net, nn.parallel.DistributedDataParallel) else net
    optim = optimizer(module, peak_lr, weight_decay)
    sched = scheduler(optim, warmup_steps, steps)

    from tfs.env import headless

    show = (not headless()) if progress is None else bool(progress)
    bar = None
    if show and rank == 0:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc="training", unit="step")

    history = History(clip_norm=clip_norm)
    checkpoint = Path(checkpoint) if checkpoint is not None else None

    def run_evaluation(step):
        if evaluate is None or rank != 0:
            return
        was_training = module.training
        module.eval()
        with torch.no_grad():
            metrics = dict(evaluate(module))
        module.train(was_training)
        entry = {"step": step, "seconds": history.train_seconds, **metrics}
        history.evals.append(entry)
        if best is not None:
            if best not in metrics:
                raise ValueError(f"best={best!r} is not among the metrics {sorted(metrics)}")
            score = float(metrics[best])
            better = history.best_score is None or (
                score > history.best_score if higher_is_better else score < history.best_score)
            if better:
                history.best_step, history.best_score = step, score
                save_checkpoint(module, checkpoint)
        if bar is not None:
            bar.set_postfix({k: round(v, 3) for k, v in metrics.items()
                             if isinstance(v, numbers.Real)})

    elapsed = 0.0
    stream = iter(batches)
    for step in range(1, steps + 1):
        try:
            batch = next(stream)
        except StopIteration:
            raise ValueError(f"batches ran out after {step - 1} of {steps} steps") from None
        if not isinstance(batch, Batch):
            raise TypeError(f"batches must yield tfs.train.Batch, got {type(batch).__name__}")
        if world_size > 1:
            batch = batch.shard(rank, world_size)
        start = time.perf_counter()
        result = train_step(net, batch.to(device), optim, smoothing, clip_norm, dtype, scaler)
        history.lr.append(optim.param_groups[0]["lr"])
        sched.step()
        elapsed += time.perf_counter() - start
        history.loss.append(result.loss)
        history.grad_norm.append(result.grad_norm)
        history.tokens.append(result.tokens)
        history.seconds.append(elapsed)
        if bar is not None:
            bar.update(1)
            bar.set_description(f"training (loss {result.loss:.3f})")
        if step == steps or (eval_every is not None and step % eval_every == 0):
            run_evaluation(step)
    if bar is not None:
        bar.close()
    if best is not None:
        if world_size > 1:
            torch.distributed.barrier()  # process 0 has written the file
        load_checkpoint(module, checkpoint)
    module.eval()
    return history


# ---------------------------------------------------------------------------------------------
# evaluation


def _ids(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False).ids


def _check_texts(texts, name):
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"{name} must be a list of strings, got {type(texts).__name__}")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{name}[{i}] must be a string, got {type(text).__name__}")
    return list(texts)


@torch.no_grad()
def translate(model, tokenizer, sentences, bos_id, eos_id, beam_size=1, batch_size=256,
              max_len=None, device=None):
    """Translate `sentences` (a list of strings): greedy (beam_size=1) or beam search.

    The model is a `tfs.model.Transformer` (decoded by tfs.decoding) or any model with a
    `generate(src, bos_id, eos_id, max_len)` method (e.g. `tfs.rnn.GRUTranslator`).
    Sentences are decoded in batches of similar length; the order of `sentences` is kept.
    `max_len`: tokens per output at most (default: twice the longest source + 10).
    """
    from tfs import decoding
    from tfs.model import Transformer

    sentences = _check_texts(sentences, "sentences")
    beam_size = _check_int(beam_size, "beam_size")
    batch_size = _check_int(batch_size, "batch_size")
    if not isinstance(model, Transformer) and not hasattr(model, "generate"):
        raise TypeError(f"translate() needs a tfs.model.Transformer or a model with a "
                        f"generate() method, got {type(model).__name__}")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    encoded = [_ids(tokenizer, s) + [eos_id] for s in sentences]
    order = sorted(range(len(sentences)), key=lambda i: len(encoded[i]))
    out = [None] * len(sentences)
    was_training = model.training
    model.eval()
    for first in range(0, len(order), batch_size):
        rows = order[first : first + batch_size]
        src = pad([encoded[i] for i in rows], model.pad_id).to(device)
        limit = max_len or 2 * src.shape[1] + 10
        if isinstance(model, Transformer):
            limit = min(limit, model.max_len)
            if beam_size == 1:
                tokens = decoding.greedy(model, src, bos_id, eos_id, max_len=limit)
            else:
                tokens = decoding.beam_search(model, src, bos_id, eos_id, max_len=limit,
                                              beam_size=beam_size)
        else:
            if beam_size != 1:
                raise ValueError(f"{type(model).__name__}.generate() decodes greedily only: "
                                 f"use beam_size=1")
            tokens = model.generate(src, bos_id, eos_id, limit)
        for row, ids in zip(rows, tokens.tolist(), strict=True):
            ids = ids[: ids.index(eos_id)] if eos_id in ids else ids
            out[row] = tokenizer.decode([t for t in ids if t != model.pad_id])
    model.train(was_training)
    return out


@torch.no_grad()
def log_probabilities(model, tokenizer, sources, targets, bos_id, eos_id, batch_size=256,
                      device=None):
    """log p(target + <eos> | source) under the model for each pair (teacher forcing):
    a list of floats, for scoring contrastive pairs (which of two targets it prefers)."""
    sources = _check_texts(sources, "sources")
    targets = _check_texts(targets, "targets")
    if len(sources) != len(targets):
        raise ValueError(f"sources and targets must pair up, got {len(sources)} and "
                         f"{len(targets)}")
    batch_size = _check_int(batch_size, "batch_size")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    src_ids = [_ids(tokenizer, s) for s in sources]
    tgt_ids = [_ids(tokenizer, t) for t in targets]
    was_training = model.training
    model.eval()
    out = []
    for first in range(0, len(sources), batch_size):
        rows = list(range(first, min(first + batch_size, len(sources))))
        batch = collate(src_ids, tgt_ids, rows, model.pad_id, bos_id, eos_id).to(device)
        log_probs = model(batch.src, batch.tgt_in).float().log_softmax(dim=-1)  # (B, T, |V|)
        per_token = log_probs.gather(-1, batch.tgt_out[..., None]).squeeze(-1)  # (B, T)
        per_token = per_token.masked_fill(batch.tgt_out == batch.pad_id, 0.0)
        out.extend(per_token.sum(dim=1).tolist())
    model.train(was_training)
    return out


def corpus_scores(hypotheses, references):
    """Exact match (% of sentences identical to the reference), chrF and BLEU (sacrebleu's
    corpus-level scores, 0-100)."""
    import sacrebleu

    hypotheses = _check_texts(hypotheses, "hypotheses")
    references = _check_texts(references, "references")
    if len(hypotheses) != len(references):
        raise ValueError(f"hypotheses and references must pair up, got {len(hypotheses)} "
                         f"and {len(references)}")
    if not hypotheses:
        raise ValueError("no sentences to score")
    exact = 100 * sum(h == r for h, r in zip(hypotheses, references, strict=True))
    return {
        "exact_match": exact / len(hypotheses),
        "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
        "bleu": sacrebleu.corpus_bleu(hypotheses, [references]).score,
    }


def one_decimal(score) -> str:
    """A score in percent written to one decimal, where a score below 100 never reads 100.0.

    `f"{99.96:.1f}"` is "100.0", which would hide that some sentence was wrong; this writes
    "99.9" for it. Every other score is rounded as usual (98.56 -> "98.6", 100 -> "100.0").
    """
    score = _check_real(score, "score")
    text = f"{score:.1f}"
    return "99.9" if text == "100.0" and score < 100 else text
