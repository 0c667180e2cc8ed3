"""tfs.train (the shared training loop) and tfs.rnn (lesson 00's GRU translator)."""

import copy
import math
import random

import pytest
import sacrebleu
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer, models, pre_tokenizers

from tfs import train as T
from tfs.env import Precision
from tfs.model import Transformer
from tfs.rnn import GRUTranslator

PAD, BOS, EOS = 0, 1, 2
WORDS = [f"w{i}" for i in range(12)]
VOCAB = 3 + len(WORDS)
FLOAT32 = Precision(dtype=None, grad_scaler=False, why="tests run in float32")


def word_tokenizer():
    vocab = {"<pad>": PAD, "<bos>": BOS, "<eos>": EOS} | {w: 3 + i for i, w in enumerate(WORDS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tokenizer


def tiny_model(seed=0, dropout=0.0):
    torch.manual_seed(seed)
    return Transformer(VOCAB, d_model=16, n_heads=2, d_ff=32, n_layers=1, dropout=dropout,
                       pad_id=PAD, max_len=32)


def copy_task(n, seed=0, reverse=True):
    """Random word strings; the target is the source reversed (or the source itself)."""
    rng = random.Random(seed)
    src = [[rng.randrange(3, VOCAB) for _ in range(rng.randint(2, 6))] for _ in range(n)]
    return src, [s[::-1] if reverse else list(s) for s in src]


def stream(src, tgt, max_tokens=120, seed=0):
    lengths = T.example_lengths(src, tgt)
    for indices in T.batch_stream(lengths, max_tokens, seed):
        yield T.collate(src, tgt, indices, PAD, BOS, EOS)


# --------------------------------------------------------------------------------------------
# batches


def test_length_batches_cover_every_sentence_once_within_the_budget():
    rng = random.Random(1)
    lengths = [(rng.randint(1, 30), rng.randint(1, 30)) for _ in range(500)]
    for bucket in (True, False):
        batches = T.length_batches(lengths, 200, seed=3, bucket=bucket)
        assert sorted(i for b in batches for i in b) == list(range(500))
        assert all(T.batch_cost(lengths, b) <= 200 for b in batches)
    assert T.length_batches(lengths, 200, seed=3) == T.length_batches(lengths, 200, seed=3)
    assert T.length_batches(lengths, 200, seed=3) != T.length_batches(lengths, 200, seed=4)


def test_bucketing_wastes_less_padding():
    rng = random.Random(2)
    lengths = [rng.randint(1, 40) for _ in range(1000)]
    bucketed = T.padding_share(lengths, T.length_batches(lengths, 400, bucket=True))
    shuffled = T.padding_share(lengths, T.length_batches(lengths, 400, bucket=False))
    assert bucketed < 0.1 < shuffled


def test_padding_share_counts_the_padding():
    # one batch of lengths 2 and 4: padded to 2 x 4 = 8 tokens, 6 real
    assert T.padding_share([2, 4], [[0, 1]]) == pytest.approx(2 / 8)


def test_batch_stream_goes_on_epoch_after_epoch():
    lengths = [3] * 10
    batches = T.batch_stream(lengths, 9, seed=0)
    first = [next(batches) for _ in range(4)]  # 10 sentences, 3 per batch: 4 per epoch
    second = [next(batches) for _ in range(4)]
    assert sorted(i for b in first for i in b) == list(range(10))
    assert sorted(i for b in second for i in b) == list(range(10))
    assert first != second


def test_length_batches_errors():
    with pytest.raises(ValueError, match="max_tokens"):
        T.length_batches([5, 50], 40)
    with pytest.raises(ValueError, match="empty"):
        T.length_batches([], 40)
    with pytest.raises(TypeError, match="lengths"):
        T.length_batches(["long"], 40)
    with pytest.raises(ValueError, match="positive"):
        T.length_batches([0, 3], 40)
    with pytest.raises(TypeError, match="max_tokens"):
        T.length_batches([3], 4.5)


def test_collate_is_teacher_forcing():
    batch = T.collate([[5, 6], [7]], [[8, 9, 10], [11]], [0, 1], PAD, BOS, EOS)
    assert batch.src.tolist() == [[5, 6, EOS], [7, EOS, PAD]]
    assert batch.tgt_in.tolist() == [[BOS, 8, 9, 10], [BOS, 11, PAD, PAD]]
    assert batch.tgt_out.tolist() == [[8, 9, 10, EOS], [11, EOS, PAD, PAD]]
    assert batch.target_tokens() == 6
    assert T.example_lengths([[5, 6], [7]], [[8, 9, 10], [11]]) == [(3, 4), (2, 2)]


def test_shard_splits_rows_and_drops_shared_padding():
    batch = T.collate([[5, 6, 7], [8], [9, 10], [11]], [[3], [4, 5, 6], [7], [8]],
                      [0, 1, 2, 3], PAD, BOS, EOS)
    first, second = batch.shard(0, 2), batch.shard(1, 2)
    assert first.src.tolist() == [[5, 6, 7, EOS], [9, 10, EOS, PAD]]
    assert second.src.tolist() == [[8, EOS], [11, EOS]]
    assert second.tgt_out.tolist() == [[4, 5, 6, EOS], [8, EOS, PAD, PAD]]
    assert first.tgt_in.shape == first.tgt_out.shape == (2, 2)
    assert first.target_tokens() + second.target_tokens() == batch.target_tokens()
    with pytest.raises(ValueError, match="cannot be shared"):
        batch.shard(0, 5)
    with pytest.raises(ValueError, match="rank"):
        batch.shard(2, 2)


# --------------------------------------------------------------------------------------------
# the loss


def test_padding_contributes_nothing_to_the_loss():
    torch.manual_seed(0)
    scores = torch.randn(2, 4, VOCAB)
    targets = torch.tensor([[3, 4, 5, EOS], [6, EOS, PAD, PAD]])
    changed = scores.clone()
    changed[1, 2:] = torch.randn(2, VOCAB) * 100  # scores at the two <pad> positions
    for smoothing in (0.0, 0.1):
        assert T.loss_sum(changed, targets, PAD, smoothing) == pytest.approx(
            T.loss_sum(scores, targets, PAD, smoothing).item())


def test_label_smoothed_loss_written_out():
    torch.manual_seed(1)
    scores = torch.randn(3, 5, VOCAB)
    targets = torch.randint(3, VOCAB, (3, 5))
    targets[0, 3:] = PAD
    eps = 0.1
    log_p = scores.log_softmax(-1)
    nll = -log_p.gather(-1, targets[..., None]).squeeze(-1)
    uniform = -log_p.mean(-1)
    per_token = (1 - eps) * nll + eps * uniform
    expected = per_token[targets != PAD].sum()
    assert T.loss_sum(scores, targets, PAD, eps).item() == pytest.approx(expected.item(), rel=1e-5)


def test_smoothing_floor_is_the_lowest_loss():
    eps = 0.1
    floor = T.smoothing_floor(eps, VOCAB)
    target = torch.tensor([[4]])
    smoothed = torch.full((VOCAB,), eps / VOCAB)
    smoothed[4] += 1 - eps
    at_floor = T.loss_sum(smoothed.log()[None, None], target, PAD, eps).item()
    assert at_floor == pytest.approx(floor, rel=1e-5)
    confident = torch.full((1, 1, VOCAB), -20.0)
    confident[0, 0, 4] = 20.0  # all but certain of the right token: above the floor
    assert T.loss_sum(confident, target, PAD, eps).item() > floor + 0.1
    assert T.smoothing_floor(0.0, VOCAB) == 0.0
    with pytest.raises(ValueError, match="smoothing"):
        T.smoothing_floor(1.0, VOCAB)


def test_loss_errors():
    with pytest.raises(ValueError, match=r"\(B, T, \|V\|\)"):
        T.loss_sum(torch.randn(2, VOCAB), torch.zeros(2, dtype=torch.long), PAD)
    with pytest.raises(TypeError):
        T.loss_sum([1.0], torch.zeros(1), PAD)


# --------------------------------------------------------------------------------------------
# schedule


def test_learning_rate_warms_up_then_decays_to_zero():
    lrs = [T.learning_rate(s, 1e-3, 10, 100) for s in range(100)]
    assert lrs[0] == pytest.approx(1e-4)
    assert lrs[9] == pytest.approx(1e-3) == max(lrs)
    assert all(a <= b for a, b in zip(lrs[:10], lrs[1:10], strict=False))
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))
    assert lrs[-1] < 1e-5
    assert T.learning_rate(100, 1e-3, 10, 100) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="warmup_steps"):
        T.learning_rate(0, 1e-3, 100, 100)
    with pytest.raises(TypeError, match="step"):
        T.learning_rate(1.5, 1e-3, 10, 100)


def test_scheduler_follows_learning_rate():
    model = tiny_model()
    optim = T.optimizer(model, 2e-3)
    sched = T.scheduler(optim, 5, 40)
    seen = []
    for _ in range(40):
        seen.append(optim.param_groups[0]["lr"])
        optim.step()
        sched.step()
    assert seen == pytest.approx([T.learning_rate(s, 2e-3, 5, 40) for s in range(40)])


# --------------------------------------------------------------------------------------------
# one step, the loop


def test_train_step_clips_and_reports_the_norm_before_clipping():
    src, tgt = copy_task(32)
    batch = next(stream(src, tgt))
    model = tiny_model()
    optim = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the weights stay put
    result = T.train_step(model, batch, optim, clip_norm=1e-3)
    after = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()
                                                  if p.grad is not None]))
    assert result.grad_norm > 1e-3
    assert after.item() == pytest.approx(1e-3, rel=1e-3)
    assert result.tokens == batch.target_tokens()
    model.eval()
    with torch.no_grad():
        mean = T.loss_sum(model(batch.src, batch.tgt_in), batch.tgt_out, PAD) / result.tokens
    assert result.loss == pytest.approx(mean.item(), rel=1e-5)


def test_train_step_runs_under_bfloat16_autocast():
    src, tgt = copy_task(16)
    batch = next(stream(src, tgt))
    model = tiny_model()
    result = T.train_step(model, batch, T.optimizer(model, 1e-3), dtype=torch.bfloat16)
    assert math.isfinite(result.loss) and result.loss > 0
    assert all(p.dtype == torch.float32 for p in model.parameters())  # master weights stay


def test_train_learns_evaluates_and_keeps_the_best_checkpoint(tmp_path):
    src, tgt = copy_task(400)
    model = tiny_model()
    marks = iter([1.0, 3.0, 2.0, 0.5])  # the second evaluation (step 20) is the best
    kept = {}

    def evaluate(m):
        score = next(marks)
        kept[len(kept) + 1] = copy.deepcopy(m.state_dict())
        return {"score": score}

    path = tmp_path / "best.pt"
    history = T.train(model, stream(src, tgt), steps=40, peak_lr=3e-3, evaluate=evaluate,
                      eval_every=10, best="score", checkpoint=path, precision=FLOAT32,
                      progress=False)
    assert [e["step"] for e in history.evals] == [10, 20, 30, 40]
    assert history.best_step == 20 and history.best_score == 3.0
    for name, value in model.state_dict().items():
        assert torch.equal(value, kept[2][name]), name  # the best weights were reloaded
    assert len(history.loss) == len(history.grad_norm) == len(history.lr) == 40
    assert history.loss[-1] < history.loss[0] - 0.5
    assert history.seconds == sorted(history.seconds)
    assert history.lr[3] == pytest.approx(T.learning_rate(3, 3e-3, 4, 40))
    assert 0 <= history.clipped_share <= 1
    assert not model.training


def test_save_and_load_checkpoint_give_identical_outputs(tmp_path):
    src, tgt = copy_task(8)
    batch = next(stream(src, tgt))
    model, other = tiny_model(0).eval(), tiny_model(1).eval()
    T.save_checkpoint(model, tmp_path / "m.pt")
    T.load_checkpoint(other, tmp_path / "m.pt")
    assert torch.equal(model(batch.src, batch.tgt_in), other(batch.src, batch.tgt_in))
    with pytest.raises(FileNotFoundError):
        T.load_checkpoint(other, tmp_path / "missing.pt")


def test_train_errors(tmp_path):
    src, tgt = copy_task(40)
    model = tiny_model()
    with pytest.raises(TypeError, match="model"):
        T.train("model", stream(src, tgt), steps=2, precision=FLOAT32)
    with pytest.raises(ValueError, match="steps"):
        T.train(model, stream(src, tgt), steps=0, precision=FLOAT32)
    with pytest.raises(ValueError, match="best"):
        T.train(model, stream(src, tgt), steps=2, best="score", precision=FLOAT32)
    with pytest.raises(ValueError, match="ran out"):
        T.train(model, [next(stream(src, tgt))], steps=2, precision=FLOAT32, progress=False)
    with pytest.raises(TypeError, match="Batch"):
        T.train(model, [(1, 2)], steps=1, precision=FLOAT32, progress=False)
    with pytest.raises(ValueError, match="not among"):
        T.train(model, stream(src, tgt), steps=1, evaluate=lambda m: {"a": 1.0}, best="b",
                checkpoint=tmp_path / "x.pt", precision=FLOAT32, progress=False)


# --------------------------------------------------------------------------------------------
# evaluation


def test_translate_keeps_order_and_agrees_with_one_sentence_at_a_time():
    tokenizer = word_tokenizer()
    sentences = ["w1 w2 w3", "w4", "w5 w6 w7 w8 w9", "w10 w11"]
    for model in (tiny_model(3), GRUTranslator(VOCAB, 8, 16, PAD)):
        together = T.translate(model, tokenizer, sentences, BOS, EOS, batch_size=3, max_len=8)
        alone = [T.translate(model, tokenizer, [s], BOS, EOS, max_len=8)[0] for s in sentences]
        assert together == alone
        assert all(isinstance(t, str) for t in together)


def test_a_trained_model_translates_and_prefers_the_right_target():
    src, tgt = copy_task(600, seed=5, reverse=False)  # learn to copy
    torch.manual_seed(0)
    model = Transformer(VOCAB, d_model=32, n_heads=4, d_ff=64, n_layers=1, dropout=0.0,
                        pad_id=PAD, max_len=32)
    T.train(model, stream(src, tgt, max_tokens=300), steps=300, peak_lr=5e-3, smoothing=0.0,
            precision=FLOAT32, progress=False)
    tokenizer = word_tokenizer()
    sources = ["w1 w2 w3", "w4 w9 w7 w5"]
    right = ["w1 w2 w3", "w4 w9 w7 w5"]
    wrong = ["w1 w3 w2", "w4 w7 w9 w5"]
    assert T.translate(model, tokenizer, sources, BOS, EOS) == right
    assert T.translate(model, tokenizer, sources, BOS, EOS, beam_size=3) == right
    good = T.log_probabilities(model, tokenizer, sources, right, BOS, EOS)
    bad = T.log_probabilities(model, tokenizer, sources, wrong, BOS, EOS)
    assert all(g > b for g, b in zip(good, bad, strict=True))
    assert all(g < 0 for g in good)


def test_log_probabilities_equal_the_decoders_own():
    from tfs.decoding import log_probability

    model = tiny_model(2)
    tokenizer = word_tokenizer()
    src = T.pad([[4, 5, 6, EOS], [7, EOS]], PAD)
    out = T.pad([[8, 9, EOS], [10, 11, 12, EOS]], PAD)
    theirs = log_probability(model, src, out, BOS)
    ours = T.log_probabilities(model, tokenizer, ["w1 w2 w3", "w4"],
                               ["w5 w6", "w7 w8 w9"], BOS, EOS)
    assert ours == pytest.approx(theirs.tolist(), rel=1e-5)


def test_corpus_scores_are_sacrebleus():
    hyps = ["Я дома.", "Он сказал, что устал.", "Она читает книгу."]
    refs = ["Я дома.", "Она сказала, что устала.", "Она читает книгу."]
    scores = T.corpus_scores(hyps, refs)
    assert scores["exact_match"] == pytest.approx(200 / 3)
    assert scores["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score)
    assert scores["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert T.corpus_scores(refs, refs)["chrf"] == pytest.approx(100)
    with pytest.raises(ValueError, match="pair up"):
        T.corpus_scores(hyps, refs[:2])
    with pytest.raises(TypeError, match="list of strings"):
        T.corpus_scores("Я дома.", "Я дома.")


# --------------------------------------------------------------------------------------------
# tfs.rnn


def test_gru_translator_ignores_padding():
    torch.manual_seed(0)
    model = GRUTranslator(VOCAB, 8, 16, PAD).eval()
    src = torch.tensor([[4, 5, 6, EOS]])
    padded = torch.tensor([[4, 5, 6, EOS, PAD, PAD]])
    tgt = torch.tensor([[BOS, 7, 8]])
    assert torch.allclose(model(src, tgt), model(padded, tgt), atol=1e-6)
    assert model.weights[0, :, 4:].abs().max() == 0  # no attention on <pad>
    assert torch.allclose(model.weights.sum(-1), torch.ones(1, 3))


def test_gru_translator_generates_like_greedy_decoding():
    torch.manual_seed(1)
    model = GRUTranslator(VOCAB, 8, 16, PAD)
    src = torch.tensor([[4, 5, 6, EOS], [7, EOS, PAD, PAD]])
    out = model.generate(src, BOS, EOS, max_len=6)
    assert out.shape[0] == 2 and out.shape[1] <= 6
    assert not (out[:, 0] == PAD).any()  # <pad> is never generated
    # teacher-forcing the generated tokens reproduces them as each step's argmax
    for row in range(2):
        ids = out[row].tolist()
        ids = ids[: ids.index(EOS) + 1] if EOS in ids else ids
        tgt_in = torch.tensor([[BOS] + ids[:-1]])
        scores = model(src[row : row + 1], tgt_in)[0]
        scores[:, PAD] = float("-inf")
        assert scores.argmax(-1).tolist() == ids
    assert model.training  # generate() restores the mode


def test_gru_translator_trains_with_tfs_train():
    src, tgt = copy_task(400, seed=7)
    torch.manual_seed(0)
    model = GRUTranslator(VOCAB, 16, 32, PAD)
    history = T.train(model, stream(src, tgt), steps=60, peak_lr=1e-2, precision=FLOAT32,
                      progress=False)
    assert history.loss[-1] < history.loss[0] - 0.5


def test_gru_translator_errors():
    with pytest.raises(ValueError, match="even"):
        GRUTranslator(VOCAB, 8, 15, PAD)
    with pytest.raises(ValueError, match="pad_id"):
        GRUTranslator(VOCAB, 8, 16, VOCAB)
    model = GRUTranslator(VOCAB, 8, 16, PAD)
    with pytest.raises(TypeError, match="token ids"):
        model(torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="same number"):
        model(torch.ones(2, 3, dtype=torch.long), torch.ones(3, 3, dtype=torch.long))


def test_f_cross_entropy_is_the_reference():
    """The loss is PyTorch's own label-smoothed cross-entropy (never hand-rolled)."""
    scores = torch.randn(2, 3, VOCAB)
    targets = torch.tensor([[4, 5, PAD], [6, PAD, PAD]])
    ref = F.cross_entropy(scores.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=PAD,
                          label_smoothing=0.2, reduction="sum")
    assert T.loss_sum(scores, targets, PAD, 0.2).item() == pytest.approx(ref.item())


def test_one_decimal_never_writes_100_for_a_score_below_100():
    assert T.one_decimal(99.96) == "99.9"  # .1f alone would write 100.0
    assert T.one_decimal(99.94) == "99.9"
    assert T.one_decimal(100) == "100.0"
    assert T.one_decimal(98.56) == "98.6"  # otherwise rounded as usual
    assert T.one_decimal(7) == "7.0"


def test_one_decimal_rejects_what_is_not_a_number():
    with pytest.raises(TypeError, match="score must be a number"):
        T.one_decimal("99.9")
    with pytest.raises(ValueError, match="finite"):
        T.one_decimal(float("nan"))
