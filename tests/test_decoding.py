"""tfs.decoding: the KV cache changes nothing but the speed; beam search; the outputs' format."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from tfs.decoding import KVCache, beam_search, greedy, log_probability
from tfs.model import Transformer

PAD, BOS, EOS = 0, 1, 2
N_LETTERS = 6  # tokens 3..8
VOCAB = 3 + N_LETTERS
D_MODEL, N_HEADS, N_LAYERS = 32, 4, 2


def random_model(seed, vocab_size=VOCAB):
    """A freshly built model, with a much smaller embedding matrix E (std 0.005).

    With the course's initialisation an untrained tied model parrots its input token forever;
    with E small, the positions drive its choices, so its outputs vary from step to step,
    which is what the tests need.
    """
    torch.manual_seed(seed)
    model = Transformer(vocab_size, D_MODEL, N_HEADS, 64, N_LAYERS, 0.1, PAD, max_len=40)
    with torch.no_grad():
        model.embedding.weight.normal_(0.0, 0.005)
    return model


def reversal_batch(n, generator, shortest=2, longest=7):
    """String reversal with <eos>: src right-padded; decoder input and target as in training."""
    lengths = torch.randint(shortest, longest + 1, (n,), generator=generator)
    width = int(lengths.max())
    positions = torch.arange(width + 1)[None, :]
    src = torch.randint(3, VOCAB, (n, width), generator=generator)
    src = src.masked_fill(positions[:, :width] >= lengths[:, None], PAD)
    reversed_index = (lengths[:, None] - 1 - positions).clamp(0, width - 1)
    target = src.gather(1, reversed_index).masked_fill(positions >= lengths[:, None], PAD)
    target = target.masked_fill(positions == lengths[:, None], EOS)  # (n, width + 1)
    decoder_input = torch.cat([torch.full((n, 1), BOS), target[:, :-1]], dim=1)
    return src, decoder_input, target


@pytest.fixture(scope="module")
def trained_model():
    """String reversal, trained briefly (100 steps): peaked, but still makes mistakes."""
    torch.manual_seed(0)
    model = Transformer(VOCAB, D_MODEL, N_HEADS, 64, N_LAYERS, 0.0, PAD, max_len=40)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(0)
    for _ in range(100):
        src, decoder_input, target = reversal_batch(64, generator)
        scores = model(src, decoder_input)
        loss = F.cross_entropy(scores.flatten(0, 1), target.flatten(), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model


def source_batch(seed, n=12):
    src, _, _ = reversal_batch(n, torch.Generator().manual_seed(seed))
    assert (src == PAD).any(), "the batch must contain padding"
    return src


def models(trained_model):
    # seeds whose untrained outputs vary from token to token (seed 2's barely do once <bos>
    # is banned)
    return [("random", random_model(seed)) for seed in (0, 1, 3)] + [("trained", trained_model)]


def first_eos(tokens):
    """The index of each row's first <eos>, or the row's width when it has none."""
    is_eos = tokens == EOS
    position = is_eos.float().argmax(dim=1)
    return torch.where(is_eos.any(dim=1), position, torch.full_like(position, tokens.shape[1]))


# --- the KV cache ------------------------------------------------------------------------------


def test_cache_gives_exactly_the_tokens_of_full_recomputation(trained_model):
    for name, model in models(trained_model):
        for seed in range(3):
            src = source_batch(seed)
            cached = greedy(model, src, BOS, EOS, max_len=20)
            recomputed = greedy(model, src, BOS, EOS, max_len=20, use_cache=False)
            assert torch.equal(cached, recomputed), f"{name} model, seed {seed}"
            distinct_per_sentence = [len(row.unique()) for row in cached]
            assert sum(distinct_per_sentence) >= 2 * len(cached), "outputs must vary"


def test_cached_scores_equal_the_scores_of_the_whole_prefix(trained_model):
    model = random_model(7).eval()
    src = source_batch(7, n=4)
    tgt = torch.randint(3, VOCAB, (4, 9), generator=torch.Generator().manual_seed(1))
    tgt[:, 0] = BOS
    with torch.no_grad():
        memory = model.encode(src)
        full = model.decode(tgt, memory, src)  # (B, T, |V|), causal mask
        cache = KVCache(model, memory, max_len=9)
        steps = [model.decode(tgt[:, t : t + 1], memory, src, cache) for t in range(9)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    assert cache.length == 9
    with pytest.raises(ValueError, match="cache is full"):
        model.decode(tgt[:, :1], memory, src, cache)


def test_cache_holds_2_N_t_d_numbers_per_sentence_and_the_real_keys(trained_model):
    src = source_batch(3, n=5)
    out, cache = greedy(trained_model, src, BOS, EOS, max_len=12, return_cache=True)
    batch, t = src.shape[0], out.shape[1]  # t decoder inputs: <bos> and all tokens but the last
    assert cache.length == t
    assert cache.numel("self") == batch * 2 * N_LAYERS * t * D_MODEL
    assert cache.numel("cross") == batch * 2 * N_LAYERS * src.shape[1] * D_MODEL
    keys, values = cache.keys_values("self")[0]  # layer 0
    assert keys.shape == values.shape == (batch, N_HEADS, t, D_MODEL // N_HEADS)
    decoder_input = torch.cat([torch.full((batch, 1), BOS), out[:, :-1]], dim=1)
    attention = trained_model.decoder[0].self_attention
    with torch.no_grad():  # layer 0 sees the embedded inputs: its keys, computed all at once
        expected = attention.split_heads(attention.w_k(trained_model.embed(decoder_input)))
    assert torch.allclose(keys, expected, atol=1e-5)


# --- the outputs -------------------------------------------------------------------------------


@pytest.mark.parametrize("decoder", ["greedy", "beam"])
def test_outputs_stop_at_eos_and_are_padded_after_it(decoder, trained_model):
    src = source_batch(11, n=32)
    for max_len in (3, 20):
        if decoder == "greedy":
            out = greedy(trained_model, src, BOS, EOS, max_len=max_len)
        else:
            out = beam_search(trained_model, src, BOS, EOS, max_len=max_len, beam_size=3)
        assert out.dtype == torch.long and out.shape[0] == 32 and out.shape[1] <= max_len
        end = first_eos(out)
        positions = torch.arange(out.shape[1])[None, :]
        assert (out[positions > end[:, None]] == PAD).all(), "only padding after <eos>"
        assert (out[positions < end[:, None]] != PAD).all(), "no padding before <eos>"
        has_eos = end < out.shape[1]
        assert (end[has_eos] < max_len).all()
        if not has_eos.all():  # a sentence without <eos> was cut at max_len
            assert out.shape[1] == max_len
        assert (out[:, -1] != PAD).any(), "no column of padding only at the end"
    assert has_eos.float().mean() > 0.5, "the trained model ends most sentences"


@pytest.mark.parametrize("decoder", ["greedy", "beam"])
def test_a_sentence_decodes_the_same_alone_and_in_a_padded_batch(decoder, trained_model):
    src = source_batch(5, n=6)

    def run(batch):
        if decoder == "greedy":
            return greedy(trained_model, batch, BOS, EOS, max_len=12)
        return beam_search(trained_model, batch, BOS, EOS, max_len=12, beam_size=3)

    together = run(src)
    for i in range(src.shape[0]):
        alone = run(src[i : i + 1, : int((src[i] != PAD).sum())])
        width = alone.shape[1]
        assert torch.equal(together[i, :width], alone[0])
        assert (together[i, width:] == PAD).all()


def test_decoding_leaves_the_model_as_it_was(trained_model):
    trained_model.train()
    out = greedy(trained_model, source_batch(1), BOS, EOS, max_len=5)
    assert trained_model.training and not out.requires_grad
    trained_model.eval()
    beam_search(trained_model, source_batch(1), BOS, EOS, max_len=5)
    assert not trained_model.training


@pytest.mark.parametrize("decoder", ["greedy", "beam"])
def test_neither_pad_nor_bos_is_ever_generated(decoder):
    """A model made to prefer <bos> at every step: the decoders never produce it."""
    model = random_model(5).eval()
    with torch.no_grad():  # every decoder output becomes the same vector b, and E[<bos>] = 10 b
        final_norm = model.decoder[-1].norm3
        final_norm.weight.zero_()
        final_norm.bias.normal_()
        model.embedding.weight[BOS] = 10 * final_norm.bias
        model.embedding.weight[PAD] = 5 * final_norm.bias
    src = source_batch(3, n=4)
    with torch.no_grad():
        first_scores = model(src, torch.full((4, 1), BOS))[:, 0]  # (B, |V|)
    assert (first_scores.argmax(dim=-1) == BOS).all()  # unbanned, <bos> would win every step
    if decoder == "greedy":
        out = greedy(model, src, BOS, EOS, max_len=8)
    else:
        out = beam_search(model, src, BOS, EOS, max_len=8, beam_size=3)
    assert not (out == BOS).any()
    assert not (out == PAD).any()  # nothing ends: <pad> never appears, not even after <eos>


@pytest.mark.parametrize("decoder", ["greedy", "beam"])
def test_token_ids_are_checked_once_per_call_not_at_every_step(decoder, monkeypatch):
    model = random_model(1)
    calls = []
    check_ids = model.check_ids
    monkeypatch.setattr(model, "check_ids", lambda *a, **k: calls.append(1) or check_ids(*a, **k))
    src = source_batch(2, n=3)
    counts = []
    for max_len in (2, 30):
        calls.clear()
        if decoder == "greedy":
            out = greedy(model, src, BOS, EOS, max_len=max_len)
        else:
            out = beam_search(model, src, BOS, EOS, max_len=max_len, beam_size=2)
        counts.append(len(calls))
    assert out.shape[1] > 10  # many steps were taken
    assert counts[0] == counts[1] == 1


# --- beam search -------------------------------------------------------------------------------


def test_a_beam_of_one_is_greedy(trained_model):
    for name, model in models(trained_model):
        for seed in range(2):
            src = source_batch(20 + seed)
            for length_penalty in (0.0, 1.0):
                beam = beam_search(model, src, BOS, EOS, max_len=15, beam_size=1,
                                   length_penalty=length_penalty)
                assert torch.equal(beam, greedy(model, src, BOS, EOS, max_len=15)), name


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_a_wide_enough_beam_finds_the_best_sequence_of_all(length_penalty):
    """A vocabulary of 3 letters, at most 3 tokens: a beam of 64 keeps every hypothesis, so it
    must return the best of all sequences, found here by trying each one."""
    model = random_model(4, vocab_size=6).eval()  # <pad>, <bos>, <eos> and 3 letters
    src = torch.tensor([[3, 4, 5], [5, 3, PAD], [4, PAD, PAD]])
    max_len = 3
    allowed = [3, 4, 5]  # anything but <pad>, <bos> and <eos> may come before the end
    candidates = []  # every possible output: ended by <eos>, or cut at max_len
    for n in range(max_len + 1):
        for prefix in itertools.product(allowed, repeat=n):
            candidates.append(list(prefix) + [EOS] if n < max_len else list(prefix))
    outputs = torch.tensor([c + [PAD] * (max_len - len(c)) for c in candidates])  # (S, 3)
    lengths = torch.tensor([len(c) for c in candidates], dtype=torch.float)

    beam = beam_search(model, src, BOS, EOS, max_len=max_len, beam_size=64,
                       length_penalty=length_penalty)
    greedy_out = greedy(model, src, BOS, EOS, max_len=max_len)
    for i in range(src.shape[0]):
        scores = log_probability(model, src[i : i + 1].expand(len(candidates), -1), outputs, BOS)
        best = int((scores / lengths**length_penalty).argmax())
        width = beam.shape[1]
        assert beam[i].tolist() == (candidates[best] + [PAD] * width)[:width]
    beam_log_prob = log_probability(model, src, beam, BOS)
    greedy_log_prob = log_probability(model, src, greedy_out, BOS)
    if length_penalty == 0:
        assert (beam_log_prob >= greedy_log_prob - 1e-5).all()


def test_beam_of_four_is_more_probable_than_greedy_on_average(trained_model):
    src = source_batch(13, n=64)
    greedy_out = greedy(trained_model, src, BOS, EOS, max_len=12)
    beam = beam_search(trained_model, src, BOS, EOS, max_len=12, beam_size=4, length_penalty=0)
    gain = log_probability(trained_model, src, beam, BOS) - log_probability(
        trained_model, src, greedy_out, BOS
    )
    assert gain.mean() > 0
    assert (gain >= -1e-5).float().mean() >= 0.9


def test_log_probability_adds_the_log_probabilities_up_to_eos(trained_model):
    src = source_batch(2, n=3)
    out = torch.tensor([[3, 4, EOS, PAD], [5, EOS, PAD, PAD], [3, 3, 3, 3]])
    got = log_probability(trained_model, src, out, BOS)
    with torch.no_grad():
        for i in range(3):
            n = int((out[i] != PAD).sum())
            tgt = torch.cat([torch.tensor([BOS]), out[i, : n - 1]])[None]
            sentence = src[i : i + 1, : int((src[i] != PAD).sum())]
            log_probs = trained_model(sentence, tgt).log_softmax(-1)[0]
            expected = log_probs[torch.arange(n), out[i, :n]].sum()
            assert torch.isclose(got[i], expected, atol=1e-4)


# --- clear errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda m, s: greedy(m, s, BOS, EOS, max_len=0), ValueError, "max_len"),
        (lambda m, s: beam_search(m, s, BOS, EOS, max_len=-3), ValueError, "max_len"),
        (lambda m, s: greedy(m, s, BOS, EOS, max_len=41), ValueError, "max_len"),
        (lambda m, s: greedy(m, s, BOS, EOS, max_len=2.5), TypeError, "max_len"),
        (lambda m, s: beam_search(m, s, BOS, EOS, beam_size=0), ValueError, "beam_size"),
        (lambda m, s: beam_search(m, s, BOS, EOS, beam_size=2.0), TypeError, "beam_size"),
        (lambda m, s: beam_search(m, s, BOS, EOS, length_penalty="1"), TypeError, "length_penalty"),
        (lambda m, s: greedy(m, s, PAD, EOS), ValueError, "bos_id"),
        (lambda m, s: greedy(m, s, None, EOS), ValueError, "bos_id is None"),
        (lambda m, s: greedy(m, s, BOS, PAD), ValueError, "eos_id"),
        (lambda m, s: greedy(m, s, BOS, VOCAB), ValueError, "eos_id"),
        (lambda m, s: greedy(m, s.float(), BOS, EOS), TypeError, "integer token ids"),
        (lambda m, s: greedy(m, s[0], BOS, EOS), ValueError, r"\(B, T\)"),
        (lambda m, s: greedy(m.state_dict(), s, BOS, EOS), TypeError, "Transformer"),
        (lambda m, s: greedy(m, s, BOS, EOS, use_cache=False, return_cache=True), ValueError,
         "use_cache"),
    ],
    ids=["max_len-0", "max_len-negative", "max_len-beyond-positions", "max_len-float",
         "beam_size-0", "beam_size-float", "length_penalty-str", "bos-is-pad", "bos-none",
         "eos-is-pad", "eos-outside",
         "float-src", "1-d-src", "not-a-model", "cache-without-cache"],
)
def test_bad_arguments_are_rejected_with_their_name(call, error, words):
    model = random_model(0)
    with pytest.raises(error, match=words):
        call(model, source_batch(0, n=2))
