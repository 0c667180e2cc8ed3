"""tfs.rnn.GRUTranslator is lesson 00's attention translator: the same computation.

The lesson's class is rebuilt from the notebook cell that defines it, so the test follows
the lesson as it is written; trained-looking random weights are copied into the packaged
model and both must give the same scores and the same greedy translations.
"""

import json
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from tfs.rnn import GRUTranslator

LESSON = Path(__file__).resolve().parents[1] / "notebooks" / "00_seq2seq_intro.ipynb"


def lesson_namespace():
    """The lesson's `Translator` cell, executed: its constants, `reversal_batch`, the class."""
    cells = json.loads(LESSON.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    defining = [s for s in sources if "class Translator(nn.Module)" in s]
    assert len(defining) == 1, "lesson 00 defines Translator in exactly one cell"
    namespace = {"torch": torch, "nn": nn, "F": F, "DEVICE": torch.device("cpu")}
    exec(compile(defining[0], str(LESSON), "exec"), namespace)  # noqa: S102
    return namespace


@pytest.fixture(scope="module")
def pair():
    lesson = lesson_namespace()
    torch.manual_seed(0)
    ours = lesson["Translator"](attention=True).eval()
    with torch.no_grad():  # weights far from their initial scale, as after training
        for p in ours.parameters():
            p.mul_(3.0)
        ours.out.bias[lesson["START"]] = -100.0  # never written (the packaged model forbids it)
    vocab, pad = lesson["VOCAB"], lesson["VOCAB"]  # <pad>: an id the digit strings never use
    packaged = GRUTranslator(vocab + 1, lesson["D_EMB"], lesson["D_HID"], pad_id=pad).eval()
    trained = ours.state_dict()
    assert set(trained) == set(packaged.state_dict()), "the two models name their weights alike"
    with torch.no_grad():
        for name, tensor in packaged.state_dict().items():  # <pad> adds one row to the
            tensor[: trained[name].shape[0]] = trained[name]  # embeddings and the output
    return lesson, ours, packaged


@pytest.mark.parametrize("length", [1, 5, 16])
def test_same_scores_under_teacher_forcing(pair, length):
    lesson, ours, packaged = pair
    source, target = lesson["reversal_batch"](length, 8, torch.Generator().manual_seed(length))
    start = torch.full((8, 1), lesson["START"])
    previous = torch.cat([start, target[:, :-1]], dim=1)  # (B, n)
    with torch.no_grad():
        mine, alpha = ours(source, previous)  # (B, n, VOCAB)
        theirs = packaged(source, previous)[..., : lesson["VOCAB"]]  # drop the <pad> column
    assert (mine - theirs).abs().max().item() < 1e-5
    assert torch.allclose(alpha, packaged.weights, atol=1e-6)


def test_same_greedy_translations(pair):
    lesson, ours, packaged = pair
    source, _ = lesson["reversal_batch"](9, 16, torch.Generator().manual_seed(1))
    mine, _ = ours.translate(source)  # (B, m): as many steps as the source
    theirs = packaged.generate(source, bos_id=lesson["START"], eos_id=lesson["VOCAB"] + 5,
                               max_len=source.shape[1])  # an <eos> that never comes
    assert torch.equal(mine, theirs)


def test_a_different_model_is_told_apart(pair):
    """The comparison can fail: a perturbed copy gives other scores."""
    lesson, ours, packaged = pair
    source, target = lesson["reversal_batch"](6, 4, torch.Generator().manual_seed(2))
    previous = torch.cat([torch.full((4, 1), lesson["START"]), target[:, :-1]], dim=1)
    with torch.no_grad():
        packaged.W_q.weight.add_(0.5)
        theirs = packaged(source, previous)[..., : lesson["VOCAB"]]
        gap = (ours(source, previous)[0] - theirs).abs().max()
        packaged.W_q.weight.sub_(0.5)
    assert gap.item() > 1e-3
