"""The exercises of lesson 04: the usual mistakes, each rejected with a message naming it.

The reference answers are those of solutions/lesson04.py; the wrong answers below are the
mistakes a learner makes most often, and each must be rejected with a message naming it.
The checkers' own formulas are tested against transformers (parameters, KV cache) and the
bug clinic's symptom against the course's untrained Transformer.
"""

import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tfs.exercises import lesson04 as check
from tfs.exercises.lesson04 import CONFIGS
from tfs.model import Transformer

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("solutions_lesson04",
                                               ROOT / "solutions" / "lesson04.py")
solutions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solutions)



def rejected(checker, answer, *phrases):
    verdict = checker.verdict(answer)
    assert verdict.status == "wrong", verdict
    for phrase in phrases:
        assert phrase in verdict.message, verdict.message
    return verdict.message


# --- section 1: the KV cache -----------------------------------------------------------------


def kv_with(factor_layers=True, kv_key="num_key_value_heads", both=2, use_bytes=True,
            use_tokens=True):
    """A KV-cache size with one knob per usual mistake."""

    def fn(config, tokens, bytes_per_number=2):
        heads = config["num_attention_heads"]
        kv_heads = config.get(kv_key) or heads
        d_k = config["hidden_size"] // heads
        layers = config["num_hidden_layers"] if factor_layers else 1
        size = both * layers * kv_heads * d_k
        return size * (tokens if use_tokens else 1) * (bytes_per_number if use_bytes else 2)

    return fn


def test_kv_cache_mistakes_are_named():
    rejected(check.kv_cache_bytes, kv_with(both=1), "keys AND the values")
    rejected(check.kv_cache_bytes, kv_with(kv_key="num_attention_heads"),
             "grouped-query attention", "num_key_value_heads")
    rejected(check.kv_cache_bytes, kv_with(factor_layers=False), "num_hidden_layers")
    rejected(check.kv_cache_bytes, kv_with(use_bytes=False), "ignores bytes_per_number")
    rejected(check.kv_cache_bytes, kv_with(use_tokens=False), "in proportion to `tokens`")


def test_kv_cache_a_config_without_kv_heads_is_tried():
    def no_default(config, tokens, bytes_per_number=2):  # KeyError on plain multi-head configs
        kv_heads = config["num_key_value_heads"]
        d_k = config["hidden_size"] // config["num_attention_heads"]
        return 2 * config["num_hidden_layers"] * kv_heads * d_k * tokens * bytes_per_number

    message = rejected(check.kv_cache_bytes, no_default, "KeyError", "without num_key_value_heads")
    assert "Traceback" not in message


def test_kv_cache_formula_matches_what_transformers_caches():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = {"hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 8,
              "num_key_value_heads": 2, "num_hidden_layers": 3, "vocab_size": 50}
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**config)).eval()
    tokens = 5
    with torch.no_grad():
        cache = model(torch.randint(0, 50, (1, tokens)), use_cache=True).past_key_values
    cached = sum(t.numel() * t.element_size() for layer in cache.layers
                 for t in (layer.keys, layer.values))
    assert cached == solutions.kv_cache_bytes(config, tokens, bytes_per_number=4)


# --- section 1: Llama's parameters -----------------------------------------------------------


def llama_with(kv_gqa=True, ffn_matrices=3, output="config", norms=True, biases=False):
    def fn(config):
        d = config["hidden_size"]
        heads = config["num_attention_heads"]
        kv_heads = (config.get("num_key_value_heads") or heads) if kv_gqa else heads
        d_k = d // heads
        vocab, d_ff = config["vocab_size"], config["intermediate_size"]
        attention = 2 * d * d + 2 * d * kv_heads * d_k
        if biases:
            attention += 2 * d + 2 * kv_heads * d_k
        layer = attention + ffn_matrices * d * d_ff + (2 * d if norms else 0)
        tied = config.get("tie_word_embeddings") if output == "config" else output == "tied"
        return (vocab * d + config["num_hidden_layers"] * layer + (d if norms else 0)
                + (0 if tied else vocab * d))

    return fn


def test_llama_parameter_mistakes_are_named():
    rejected(check.llama_parameters, llama_with(kv_gqa=False), "grouped-query attention")
    rejected(check.llama_parameters, llama_with(ffn_matrices=2), "three matrices")
    rejected(check.llama_parameters, llama_with(output="tied"), "output layer is missing")
    rejected(check.llama_parameters, llama_with(output="untied"), "a small tied model",
             "counts once")
    rejected(check.llama_parameters, llama_with(norms=False), "RMSNorm weights are missing")
    rejected(check.llama_parameters, llama_with(biases=True), "no biases")


@pytest.mark.parametrize("name", [n for n in CONFIGS if "one key/value" not in n])
def test_llama_formula_matches_transformers(name):
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.device("meta"):
        model = LlamaForCausalLM(LlamaConfig(**CONFIGS[name]))
    counted = sum(p.numel() for p in model.parameters())
    assert solutions.llama_parameters(CONFIGS[name]) == counted
    if name == "Llama 3.1 8B":
        assert counted == 8_030_261_248


# --- section 5: the parrot's share -----------------------------------------------------------


def share_with(mask="real", compare="tgt_in", scale=1.0, fixed_pad=None):
    def fn(logits, tgt_in, tgt_out, pad_id):
        pad = pad_id if fixed_pad is None else fixed_pad
        top = logits.argmax(dim=-1)
        hits = top == (tgt_in if compare == "tgt_in" else tgt_out)
        if mask == "real":
            hits = hits[tgt_out != pad]
        if scale == "count":
            return hits.sum().item()
        return scale * hits.float().mean().item()

    return fn


def test_parrot_share_mistakes_are_named():
    rejected(check.parrot_share, share_with(mask="all"), "padded positions")
    rejected(check.parrot_share, share_with(compare="tgt_out"), "NEXT", "tgt_in")
    rejected(check.parrot_share, share_with(scale=100), "percentage")
    rejected(check.parrot_share, share_with(scale="count"), "is a count")
    rejected(check.parrot_share, share_with(fixed_pad=0), "pad_id argument")


def test_parrot_share_accepts_a_tensor_and_the_decoder_input_mask():
    def tensor_answer(logits, tgt_in, tgt_out, pad_id):
        real = tgt_in != pad_id  # the same positions as tgt_out != pad_id
        return (logits.argmax(-1) == tgt_in)[real].float().mean()

    assert check.parrot_share.verdict(tensor_answer).passed


# --- section 5: the first loss of opus-mt-en-ru's vocabulary ---------------------------------


def test_first_loss_mistakes_are_named():
    v = check.OPUS_VOCAB
    rejected(check.first_loss, math.log(v), "uniform guess", "sigma^2/2")
    rejected(check.first_loss, math.log(v) + 1, "not sigma^2")
    rejected(check.first_loss, math.log2(v) + 0.5, "bits")
    rejected(check.first_loss, math.log10(v) + 0.5, "base 10")
    rejected(check.first_loss, math.log(2000) + 0.5, "our vocabulary")
    rejected(check.first_loss, "11.5", "should be a number")
    assert check.first_loss.verdict(math.log(v - 1) + 0.5).passed  # the parrot's token left out


def test_the_vocabulary_is_opus_mt_en_rus():
    shipped = ROOT / "data" / "hub" / "models--Helsinki-NLP--opus-mt-en-ru" / "snapshots"
    config = json.loads((shipped / ("0" * 40) / "config.json").read_text(encoding="utf-8"))
    assert config["vocab_size"] == check.OPUS_VOCAB


# --- section 5: the bug clinic, <pad> in the loss --------------------------------------------


def colleague_loss(logits, tgt_out, pad_id):
    """The lesson's planted bug: the average over every position, <pad> included."""
    vocab = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1))


def loss_with(divide_by="real", reduce="mean", drop_eos=False, fixed_pad=None, as_float=False):
    def fn(logits, tgt_out, pad_id):
        pad = pad_id if fixed_pad is None else fixed_pad
        vocab = logits.shape[-1]
        per = F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1),
                              reduction="none").reshape(tgt_out.shape)
        real = tgt_out != pad
        if drop_eos:
            real = real & (tgt_out != 2)
        if reduce == "sum":
            loss = per[real].sum()
        elif divide_by == "all":
            loss = (per * real).sum() / real.numel()
        else:
            loss = per[real].mean()
        return loss.item() if as_float else loss

    return fn


def test_clinic_mistakes_are_named():
    rejected(check.clinic_pad_loss, colleague_loss, "still counts the <pad> positions",
             "below log|V|")
    rejected(check.clinic_pad_loss, loss_with(divide_by="all"), "divide by the number of real")
    rejected(check.clinic_pad_loss, loss_with(reduce="sum"), "not their sum")
    rejected(check.clinic_pad_loss, loss_with(drop_eos=True), "<eos>")
    rejected(check.clinic_pad_loss, loss_with(fixed_pad=0), "pad_id argument")
    rejected(check.clinic_pad_loss, loss_with(as_float=True), "loss.backward()")


def untrained_batch(seed):
    """An untrained course Transformer's scores on a padded batch, as in the lesson."""
    torch.manual_seed(seed)
    vocab, pad, bos, eos = 300, 0, 1, 2
    model = Transformer(vocab, 64, 4, 128, 2, 0.1, pad).eval()
    lengths = [3, 12, 4, 2, 6, 3, 9, 2]
    tgt_out = torch.full((len(lengths), max(lengths)), pad)
    for row, n in enumerate(lengths):
        tgt_out[row, :n] = torch.cat([torch.randint(3, vocab, (n - 1,)), torch.tensor([eos])])
    tgt_in = torch.cat([torch.full((len(lengths), 1), bos), tgt_out[:, :-1]], dim=1)
    tgt_in = tgt_in.masked_fill(tgt_out == pad, pad)
    src = torch.randint(3, vocab, (len(lengths), 7))
    with torch.no_grad():
        logits = model(src, tgt_in)
    return logits, tgt_out, pad, math.log(vocab)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_clinic_bug_shows_its_symptom_and_the_fix_does_not(seed):
    logits, tgt_out, pad, log_v = untrained_batch(seed)
    assert colleague_loss(logits, tgt_out, pad).item() < log_v  # beats a uniform guess: bug
    assert solutions.clinic_pad_loss(logits, tgt_out, pad).item() > log_v  # honest again
