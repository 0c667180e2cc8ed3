"""Checkers for the exercises of lesson 04 (real-model blueprints).

In the lesson::

    from tfs.exercises import lesson04 as check

    check.kv_cache_bytes(my_kv_cache_bytes)      # section 1: a config -> the KV cache's size
    check.llama_parameters(my_llama_parameters)  # section 1: a config -> parameter count
    check.parrot_share(my_parrot_share)          # section 4: how often the model parrots
    check.first_loss(my_prediction)              # section 5: a value, opus-mt-en-ru's first loss
    check.clinic_pad_loss(fixed_loss)            # section 5, the bug clinic: <pad> in the loss

The configs the checkers use are written here as the fields of the Hub's `config.json`
(Llama 3.1 8B's are those of unsloth/Meta-Llama-3.1-8B); the parameter formula is tested
against `transformers`' own LlamaForCausalLM in tests/test_exercises_04.py. The reference
answers are in `solutions/lesson04.py` (`SOLUTIONS`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from tfs.exercises._core import Mistake, call, close, exercise, number, solution_url

SOLUTIONS = solution_url("04")

__all__ = [
    "CONFIGS",
    "SOLUTIONS",
    "OPUS_VOCAB",
    "clinic_pad_loss",
    "first_loss",
    "kv_cache_bytes",
    "llama_parameters",
    "parrot_share",
]

#: Llama-style configs (the fields of config.json the exercises need), by a short name.
CONFIGS = {
    "Llama 3.1 8B": {
        "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
        "num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 128256,
        "tie_word_embeddings": False,
    },
    # a small model that ties its output layer to the embedding (Llama 3.2 1B's shape)
    "a small tied model": {
        "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
        "num_key_value_heads": 8, "num_hidden_layers": 16, "vocab_size": 128256,
        "tie_word_embeddings": True,
    },
    # no num_key_value_heads: every query head has its own keys and values
    "a config without num_key_value_heads": {
        "hidden_size": 512, "intermediate_size": 1376, "num_attention_heads": 8,
        "num_hidden_layers": 4, "vocab_size": 1000, "tie_word_embeddings": False,
    },
    # one key/value head shared by all query heads (multi-query attention)
    "a config with one key/value head": {
        "hidden_size": 768, "intermediate_size": 2048, "num_attention_heads": 12,
        "num_key_value_heads": 1, "num_hidden_layers": 6, "vocab_size": 3000,
        "tie_word_embeddings": True,
    },
}


def _sizes(config):
    """d_model, layers, query heads, key/value heads, d_k, d_ff, |V| of a Llama-style config."""
    d = config["hidden_size"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    return (d, config["num_hidden_layers"], heads, kv_heads, d // heads,
            config["intermediate_size"], config["vocab_size"])


def _as_count(value, what):
    """The reader's answer as a number; a count may come as an int, a float or a tensor."""
    return number(value, what)


def _exact(got, want):
    return abs(got - want) < 0.5


# ---------------------------------------------------------------------------------------------
# section 1: the KV cache of Llama 3.1 8B, from its config


def _kv_bytes(config, tokens, bytes_per_number=2):
    d, layers, heads, kv_heads, d_k, d_ff, vocab = _sizes(config)
    return 2 * layers * kv_heads * d_k * tokens * bytes_per_number  # keys and values


@exercise
def kv_cache_bytes(fn):
    """`fn(config, tokens, bytes_per_number=2)`: the bytes the KV cache of one sequence of
    `tokens` tokens takes, for a Llama-style `config` (a dict of config.json's fields)."""
    llama = CONFIGS["Llama 3.1 8B"]
    d, layers, heads, kv_heads, d_k, d_ff, vocab = _sizes(llama)
    got = _as_count(call(fn, llama, 1, what="Llama 3.1 8B's config and tokens=1"),
                    "your size for one token")
    want = _kv_bytes(llama, 1)
    if not _exact(got, want):
        ratio = got / want
        if math.isclose(ratio, 0.5):
            raise Mistake(
                "half the right size: the cache keeps the keys AND the values of every token "
                "(2 vectors per head and layer)"
            )
        if math.isclose(ratio, heads / kv_heads):
            raise Mistake(
                f"{heads // kv_heads} times too large: you gave every query head its own keys "
                f"and values. Llama 3.1 shares each key/value head among {heads // kv_heads} "
                f"query heads (grouped-query attention): use num_key_value_heads ({kv_heads}), "
                f"not num_attention_heads ({heads})"
            )
        if math.isclose(ratio, 1 / layers):
            raise Mistake(
                f"{layers} times too small: every one of the {layers} layers "
                "(num_hidden_layers) keeps its own keys and values"
            )
        if math.isclose(ratio, 2):
            raise Mistake(
                "twice the right size: a bfloat16 number takes bytes_per_number = 2 bytes "
                "(did you use 4, or count keys and values twice?)"
            )
        if math.isclose(ratio, 1 / d_k):
            raise Mistake(
                f"{d_k} times too small: each head keeps a vector of d_k = hidden_size / "
                f"num_attention_heads = {d_k} numbers for the key, and as many for the value"
            )
        raise Mistake(
            f"for one token of Llama 3.1 8B the cache should hold {want:,} bytes; yours says "
            f"{got:,.0f}: 2 (keys and values) x layers x key/value heads x d_k x bytes"
        )
    long = _as_count(call(fn, llama, 8192, what="Llama 3.1 8B's config and tokens=8192"),
                     "your size for 8,192 tokens")
    if not _exact(long, 8192 * want):
        raise Mistake(
            f"with 8,192 tokens the cache should be 8,192 times the size of one token's "
            f"({8192 * want:,} bytes); yours is {long:,.0f}: every token adds its own keys and "
            "values, so the size grows in proportion to `tokens`"
        )
    in_float32 = _as_count(
        call(fn, llama, 1, 4, what="Llama 3.1 8B's config, tokens=1, bytes_per_number=4"),
        "your size with bytes_per_number=4",
    )
    if not _exact(in_float32, 2 * want):
        raise Mistake(
            "your function ignores bytes_per_number: with 4 bytes a number (float32) the cache "
            f"is twice as large, {2 * want:,} bytes for one token; yours says {in_float32:,.0f}"
        )
    for name in ("a config without num_key_value_heads", "a config with one key/value head"):
        config = CONFIGS[name]
        got = _as_count(call(fn, config, 10, what=f"{name} and tokens=10"), f"your size for {name}")
        right = _kv_bytes(config, 10)
        if not _exact(got, right):
            hint = ("without num_key_value_heads, every query head has its own keys and values"
                    if "without" in name else
                    "one key/value head serves all the query heads")
            raise Mistake(
                f"for {name} and 10 tokens the cache should be {right:,} bytes; yours says "
                f"{got:,.0f} ({hint})"
            )
    full = _kv_bytes(llama, 131_072)
    return (f"Llama 3.1 8B keeps {want // 1024} KiB per token: {full / 2**30:.0f} GiB for one "
            "sequence of 131,072 tokens; right for 3 other configs too")


# ---------------------------------------------------------------------------------------------
# section 1: Llama's parameters, from its config


def _llama_parameters(config):
    d, layers, heads, kv_heads, d_k, d_ff, vocab = _sizes(config)
    attention = d * d + 2 * d * kv_heads * d_k + d * d  # W_Q, W_K, W_V, W_O; no biases
    feed_forward = 3 * d * d_ff  # gate, up, down; no biases
    norms = 2 * d  # two RMSNorm weight vectors (no bias)
    output = 0 if config.get("tie_word_embeddings") else vocab * d
    return vocab * d + layers * (attention + feed_forward + norms) + d + output


def _parameter_mistakes(config):
    """(difference = yours - right, message) for the usual mistakes on `config`."""
    d, layers, heads, kv_heads, d_k, d_ff, vocab = _sizes(config)
    tied = bool(config.get("tie_word_embeddings"))
    mistakes = []
    if kv_heads < heads:
        mistakes.append((
            layers * 2 * d * (d - kv_heads * d_k),
            f"W_K and W_V are not d_model x d_model here: with grouped-query attention they "
            f"project to num_key_value_heads x d_k = {kv_heads} x {d_k} = {kv_heads * d_k} "
            f"numbers, not {d}",
        ))
    mistakes += [
        (-layers * d * d_ff,
         "one d_model x d_ff matrix per layer is missing: Llama's feed-forward network is gated "
         "(SwiGLU), three matrices: gate, up and down"),
        (-(2 * layers * d + d),
         "the RMSNorm weights are missing: two vectors of d_model per layer, and one at the top"),
        (-2 * layers * d,
         "the two RMSNorm weight vectors (d_model each) of every layer are missing"),
        (-d, "the final RMSNorm, one vector of d_model after the last layer, is missing"),
        (layers * (2 * d + 2 * kv_heads * d_k + 2 * d_ff + d),
         "Llama's linear layers have no biases (attention_bias and mlp_bias are false)"),
        (layers * (2 * d + 2 * kv_heads * d_k),
         "Llama's attention projections have no biases (attention_bias is false)"),
        (layers * (2 * d_ff + d),
         "Llama's feed-forward matrices have no biases (mlp_bias is false)"),
        (2 * layers * d + d, "RMSNorm has a weight vector only, no bias (unlike LayerNorm)"),
    ]
    if tied:
        mistakes.append((
            vocab * d,
            "this config ties the output layer to the embedding (tie_word_embeddings is true): "
            "the shared matrix counts once",
        ))
    else:
        mistakes.append((
            -vocab * d,
            "the output layer is missing: tie_word_embeddings is false, so the model has its own "
            "|V| x d_model output matrix besides the embedding",
        ))
    return mistakes


@exercise
def llama_parameters(fn):
    """`fn(config)`: the number of parameters of a Llama-style model from its config dict."""
    passed = []
    for name, config in CONFIGS.items():
        if name == "a config with one key/value head":
            continue  # kept for the KV cache; three configs are enough here
        got = _as_count(call(fn, config, what=f"the config of {name}"), f"your count for {name}")
        want = _llama_parameters(config)
        if _exact(got, want):
            passed.append(name)
            continue
        for difference, message in _parameter_mistakes(config):
            if _exact(got - want, difference):
                raise Mistake(f"{name}: {message}")
        raise Mistake(
            f"{name} has {want:,} parameters; yours says {got:,.0f} ({got - want:+,.0f}). "
            "Per layer: W_Q, W_K, W_V, W_O, three feed-forward matrices and two RMSNorm "
            "vectors; then the embedding, a final RMSNorm and (unless tied) an output matrix"
        )
    return (f"Llama 3.1 8B has {_llama_parameters(CONFIGS['Llama 3.1 8B']):,} parameters, as "
            f"transformers counts; right for {len(passed) - 1} other configs too")


# ---------------------------------------------------------------------------------------------
# section 5: how often the untrained model parrots the token it has just read


def _parrot_batch(generator, lengths, vocab=40, pad_id=0, bos_id=1, eos_id=2):
    # (a checker that needs another <pad> id swaps ids afterwards: the words use 3..vocab-1)
    """Decoder input, target and scores for sentences of `lengths` real tokens (<eos> included),
    right-padded; the scores parrot the token just read at some positions, the right answer at
    others, and <pad> wherever <pad> was read (as an untrained tied model does)."""
    longest = max(lengths)
    tgt_out = torch.full((len(lengths), longest), pad_id)
    for row, n in enumerate(lengths):
        words = torch.randint(3, vocab, (n - 1,), generator=generator)
        tgt_out[row, :n] = torch.cat([words, torch.tensor([eos_id])])
    tgt_in = torch.cat([torch.full((len(lengths), 1), bos_id), tgt_out[:, :-1]], dim=1)
    tgt_in = tgt_in.masked_fill(tgt_out == pad_id, pad_id)  # pad where the target is pad
    logits = torch.randn(len(lengths), longest, vocab, generator=generator)
    draw = torch.rand(len(lengths), longest, generator=generator)
    parrot = draw < 0.5
    right = (draw >= 0.5) & (draw < 0.75)
    logits += 8.0 * F.one_hot(tgt_in, vocab) * parrot[..., None]
    logits += 8.0 * F.one_hot(tgt_out, vocab) * right[..., None]
    logits += 8.0 * F.one_hot(tgt_in, vocab) * (tgt_out == pad_id)[..., None]
    return logits, tgt_in, tgt_out


def _parrot_share(logits, tgt_in, tgt_out, pad_id):
    real = tgt_out != pad_id
    return (logits.argmax(dim=-1) == tgt_in)[real].float().mean().item()


@exercise
def parrot_share(fn):
    """`fn(logits, tgt_in, tgt_out, pad_id)`: the share of real target positions (target not
    <pad>) at which the top-scoring token is the token just read (tgt_in)."""
    generator = torch.Generator().manual_seed(4)
    cases = [
        ("a padded batch of 5", [6, 2, 9, 1, 4], 0),
        ("a batch of 1 without padding", [7], 0),
        ("a padded batch whose <pad> id is 5", [3, 8, 5], 5),
    ]
    for what, lengths, pad_id in cases:
        logits, tgt_in, tgt_out = _parrot_batch(generator, lengths)  # <pad> = 0
        if pad_id != 0:  # move <pad> to id 5: swap ids 0 and 5 everywhere
            swap = torch.arange(logits.shape[-1])
            swap[[0, 5]] = swap[[5, 0]]
            logits, tgt_in, tgt_out = logits[..., swap], swap[tgt_in], swap[tgt_out]
        share = number(call(fn, logits.clone(), tgt_in.clone(), tgt_out.clone(), pad_id,
                            what=what), "your share")
        want = _parrot_share(logits, tgt_in, tgt_out, pad_id)
        if abs(share - want) < 1e-6:
            continue
        real = tgt_out != pad_id
        top = logits.argmax(dim=-1)
        n_real = int(real.sum())
        if abs(share - 100 * want) < 1e-4:
            raise Mistake(f"a share is between 0 and 1; yours looks like a percentage ({share:g})")
        if abs(share - want * n_real) < 1e-4:
            raise Mistake(
                f"{share:g} is a count; the share divides it by the number of real positions "
                f"({n_real} on {what})"
            )
        if abs(share - (top == tgt_in).float().mean().item()) < 1e-6:
            raise Mistake(
                f"on {what} your share counts the padded positions too, where the model reads "
                "<pad> and parrots <pad>: count only the positions whose target is not <pad>"
            )
        if abs(share - (top == tgt_out)[real].float().mean().item()) < 1e-6:
            raise Mistake(
                "you compared the top token with the target, the token that comes NEXT; the "
                "parrot repeats the token it has just read, tgt_in"
            )
        if pad_id != 0 and abs(share - _parrot_share(logits, tgt_in, tgt_out, 0)) < 1e-6:
            raise Mistake("use the pad_id argument: on this batch <pad> is id 5, not 0")
        raise Mistake(
            f"on {what} the share should be {want:.3f}; yours is {share:.3f}: the top-scoring "
            "token (the largest score over the vocabulary, the last dimension) equal to the "
            "token just read, over the positions whose target is not <pad>"
        )
    return "right on 3 batches: padding, a batch of 1, and a <pad> id that is not 0"


# ---------------------------------------------------------------------------------------------
# section 5: the first loss of a model with opus-mt-en-ru's vocabulary, without the parrot

#: opus-mt-en-ru's vocabulary, `vocab_size` in its config.json.
OPUS_VOCAB = 62_518


@exercise
def first_loss(value):
    """The predicted loss before training of a model with |V| = 62,518 whose scores are
    random with mean 0 and variance 1, with no parrot (a value)."""
    got = number(value, "your prediction")
    want = math.log(OPUS_VOCAB) + 0.5
    if abs(got - want) < 0.01:
        return (f"log|V| + sigma^2/2 = {math.log(OPUS_VOCAB):.2f} + 0.5 = {want:.2f} nats, "
                "where such a model starts (a tied one, parroting, starts higher)")
    wrong = [
        (math.log(OPUS_VOCAB), "that is log|V| alone, the loss of a uniform guess; random scores "
         "of variance sigma^2 cost sigma^2/2 more (the mean of e^z is e^(sigma^2/2))"),
        (math.log(OPUS_VOCAB) + 1.0, "the mean of e^z for a normal z is e^(sigma^2/2): add "
         "sigma^2/2 = 0.5, not sigma^2"),
        (math.log10(OPUS_VOCAB) + 0.5, "the loss uses the natural logarithm (math.log), not "
         "log base 10"),
        (math.log10(OPUS_VOCAB), "the loss uses the natural logarithm (math.log), not log base "
         "10, and random scores add sigma^2/2"),
        (math.log2(OPUS_VOCAB) + 0.5, "the loss is in nats (natural logarithm), not bits "
         "(log base 2)"),
        (math.log2(OPUS_VOCAB), "the loss is in nats (natural logarithm), not bits (log base 2)"),
        (math.log(2000) + 0.5, "that is for our vocabulary of 2,000 tokens; opus-mt-en-ru's "
         f"has {OPUS_VOCAB:,}"),
    ]
    for value_of_mistake, message in wrong:
        if abs(got - value_of_mistake) < 0.01:
            raise Mistake(message)
    raise Mistake(
        f"{got:g} is not the prediction: the loss at a position is log sum_j e^(z_j) - "
        "z_right; with |V| random scores of mean 0 and variance 1, what is the sum near, and "
        "what is z_right on average?"
    )


# ---------------------------------------------------------------------------------------------
# section 5, bug clinic: a loss that beats a uniform guess before any training


def _reference_loss(logits, tgt_out, pad_id):
    vocab = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1), ignore_index=pad_id)


def _untrained_parrot(generator, lengths, vocab=500):
    """Scores like an untrained tied model's: normal, plus a large score for the token just
    read (<pad> after <pad>)."""
    logits, tgt_in, tgt_out = _parrot_batch(generator, lengths, vocab=vocab)
    logits = torch.randn(logits.shape, generator=generator)
    logits += 10.0 * F.one_hot(tgt_in, vocab)  # the parrot, everywhere
    return logits, tgt_out


@exercise
def clinic_pad_loss(fn):
    """`fn(logits, tgt_out, pad_id)`: the colleague's loss with its bug fixed."""
    generator = torch.Generator().manual_seed(5)
    vocab = 500
    log_v = math.log(vocab)
    cases = [
        ("an untrained model's scores on a batch that is half padding", [4, 12, 2, 3, 5, 2], 0),
        ("a batch of 1 without padding", [9], 0),
        ("a padded batch whose <pad> id is 7", [10, 3, 6], 7),
    ]
    for what, lengths, pad_id in cases:
        logits, tgt_out = _untrained_parrot(generator, lengths, vocab=vocab)
        if pad_id != 0:
            swap = torch.arange(vocab)
            swap[[0, pad_id]] = swap[[pad_id, 0]]
            logits, tgt_out = logits[..., swap], swap[tgt_out]
        logits.requires_grad_(True)
        loss = call(fn, logits, tgt_out.clone(), pad_id, what=what)
        if not isinstance(loss, torch.Tensor) or loss.grad_fn is None:
            raise Mistake(
                "return the loss as a tensor that training can differentiate (no .item(), "
                "no float): the training loop calls loss.backward() on it"
            )
        got = number(loss.detach(), "your loss")
        want = _reference_loss(logits, tgt_out, pad_id).item()
        if abs(got - want) < 1e-4:
            continue
        real = tgt_out != pad_id
        per_position = F.cross_entropy(logits.detach().reshape(-1, vocab), tgt_out.reshape(-1),
                                       reduction="none").reshape(tgt_out.shape)
        if pad_id != 0 and abs(got - _reference_loss(logits, tgt_out, 0).item()) < 1e-4:
            raise Mistake(f"use the pad_id argument: on {what} it is {pad_id}, not 0")
        if abs(got - per_position.mean().item()) < 1e-4:
            symptom = (f", below log|V| = {log_v:.2f}, as if an untrained model beat a uniform "
                       "guess (it parrots <pad> after <pad>)" if got < log_v else "")
            raise Mistake(
                f"your loss still counts the <pad> positions: on {what} it is {got:.2f}"
                f"{symptom}. Leave out the positions whose target is <pad>"
            )
        if abs(got - (per_position * real).sum().item() / real.numel()) < 1e-4:
            raise Mistake(
                "you zeroed the <pad> positions but still divide by all positions; divide by "
                "the number of real ones"
            )
        if abs(got - per_position[real].sum().item()) < 1e-3 * max(1.0, abs(got)):
            raise Mistake("the loss is the average over the real positions, not their sum")
        not_eos = real & (tgt_out != 2)
        if not_eos.any() and abs(got - per_position[not_eos].mean().item()) < 1e-4:
            raise Mistake(
                "you left out <eos> too: it is a real target, the model must learn to stop"
            )
        close(got, want, f"your loss on {what}")
    return (f"the <pad> positions are out: an untrained parrot's loss on a batch that is half "
            f"padding is above log|V| = {log_v:.2f} again")
