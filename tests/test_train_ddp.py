"""tfs.train under torch.distributed: 2 processes (gloo, CPU) take the same steps as one.

Each process keeps half of every global batch (`Batch.shard`) and DDP averages the
gradients; `train_step` divides each process's loss by the global token count, so after a
few steps the weights must equal those of one process trained on the whole batches.
"""

import random

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tfs import train as T
from tfs.env import Precision
from tfs.model import Transformer

PAD, BOS, EOS, VOCAB = 0, 1, 2, 15
STEPS = 4
FLOAT32 = Precision(dtype=None, grad_scaler=False, why="tests run in float32")


def model():
    torch.manual_seed(0)
    return Transformer(VOCAB, d_model=16, n_heads=2, d_ff=32, n_layers=1, dropout=0.0,
                       pad_id=PAD, max_len=32)


def global_batches():
    rng = random.Random(0)
    src = [[rng.randrange(3, VOCAB) for _ in range(rng.randint(2, 9))] for _ in range(200)]
    tgt = [s[::-1] + [3] * rng.randint(0, 3) for s in src]  # uneven target lengths
    lengths = T.example_lengths(src, tgt)
    for indices in T.batch_stream(lengths, 160, seed=1, bucket=False):
        yield T.collate(src, tgt, indices, PAD, BOS, EOS)


def worker(rank, world_size, init_file, out_file):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world_size)
    try:
        net = model()
        history = T.train(net, global_batches(), steps=STEPS, peak_lr=3e-3, warmup_steps=1,
                          smoothing=0.1, clip_norm=0.5, precision=FLOAT32, progress=False)
        if rank == 0:
            torch.save({"weights": net.state_dict(), "loss": history.loss,
                        "grad_norm": history.grad_norm}, out_file)
    finally:
        dist.destroy_process_group()


def test_two_processes_take_the_same_steps_as_one(tmp_path):
    mp.spawn(worker, args=(2, str(tmp_path / "init"), str(tmp_path / "ddp.pt")), nprocs=2,
             join=True)
    ddp = torch.load(tmp_path / "ddp.pt", weights_only=True)

    single = model()
    history = T.train(single, global_batches(), steps=STEPS, peak_lr=3e-3, warmup_steps=1,
                      smoothing=0.1, clip_norm=0.5, precision=FLOAT32, progress=False)

    assert ddp["loss"] == pytest.approx(history.loss, rel=1e-5)
    assert ddp["grad_norm"] == pytest.approx(history.grad_norm, rel=1e-4)
    assert any(n > 0.5 for n in history.grad_norm)  # clipping took part
    start = model().state_dict()
    moved = False
    for name, value in single.state_dict().items():
        if name.endswith("w_k.bias"):
            # a key bias adds the same q.b to every score of a row, which softmax ignores:
            # its true gradient is 0, so what it gets is rounding noise, which Adam (eps
            # 1e-9) normalises into steps of size ~lr in either run. Nothing to compare.
            continue
        torch.testing.assert_close(ddp["weights"][name], value, atol=1e-5, rtol=1e-4,
                                   msg=lambda m, name=name: f"{name}: {m}")
        moved |= not torch.equal(value, start[name])
    assert moved  # the steps changed the weights, so equal weights mean equal steps


def test_shards_of_a_global_batch_hold_its_tokens():
    batch = next(global_batches())
    shards = [batch.shard(rank, 2) for rank in range(2)]
    assert sum(len(s) for s in shards) == len(batch)
    assert sum(s.target_tokens() for s in shards) == batch.target_tokens()
