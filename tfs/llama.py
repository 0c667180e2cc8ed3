"""Llama-architecture language models (`transformers.LlamaForCausalLM`) in `tfs.model`.

A Llama model is a stack of lesson 07's switches: `tfs.model.DecoderOnly` with
`tfs.model.llama_variant` (pre-LN with RMSNorm, SwiGLU, rotary positions, grouped-query
attention, no biases). This module

- reads a Llama checkpoint (a `LlamaForCausalLM`, or its config and state_dict) into that
  model, weight by weight through one name map (`names`), and refuses with a ValueError
  what our model cannot represent (rotary scaling, biases, another head size, ...):
  `variant_of`, `convert`, `from_llama`;
- generates text token by token with the KV cache, greedily or by sampling with
  `transformers`' defaults made explicit (`generate`);
- builds a tiny Llama with random weights, offline, from a config with Llama 3.1 8B's
  shape ratios (`tiny_llama_config`, `tiny_llama`);
- downloads a small Llama-architecture checkpoint from the Hub and converts it (online
  only): `SMOLLM2` (HuggingFaceTB/SmolLM2-135M), `load_pretrained`.

Hugging Face stores q_proj and k_proj with their rows permuted from Meta's original
checkpoints, so that its rotation pairs the two halves of each head (entries i and
i + d_k/2) where Meta's code pairs neighbours (2i, 2i+1): the weights here load with
`rotary_pairing="halves"`.
"""

from __future__ import annotations

import torch

from tfs.model import DecoderOnly, KVCache, _check_int, llama_variant

SMOLLM2 = "HuggingFaceTB/SmolLM2-135M"

#: Our name -> Hugging Face's, inside one layer (model.layers.i.*).
LAYER_NAMES = {
    "norm1.weight": "input_layernorm.weight",
    "self_attention.w_q.weight": "self_attn.q_proj.weight",
    "self_attention.w_k.weight": "self_attn.k_proj.weight",
    "self_attention.w_v.weight": "self_attn.v_proj.weight",
    "self_attention.w_o.weight": "self_attn.o_proj.weight",
    "norm2.weight": "post_attention_layernorm.weight",
    "feed_forward.w_gate.weight": "mlp.gate_proj.weight",
    "feed_forward.w_up.weight": "mlp.up_proj.weight",
    "feed_forward.w_down.weight": "mlp.down_proj.weight",
}


def names(n_layers, tied):
    """The name map, our state_dict name -> Hugging Face's, for `n_layers` layers.

    E.g. "layers.0.feed_forward.w_gate.weight" <- "model.layers.0.mlp.gate_proj.weight",
    "norm.weight" <- "model.norm.weight", "output.weight" <- "lm_head.weight" (untied only).
    """
    mapping = {"embedding.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight"}
    for i in range(_check_int(n_layers, "n_layers")):
        for ours, theirs in LAYER_NAMES.items():
            mapping[f"layers.{i}.{ours}"] = f"model.layers.{i}.{theirs}"
    if not tied:
        mapping["output.weight"] = "lm_head.weight"
    return mapping


def _getter(config):
    if isinstance(config, dict):
        return config.get
    return lambda name, default=None: getattr(config, name, default)


def _rope_theta(get):
    params = get("rope_parameters") or {}
    scaling = get("rope_scaling") or {}
    kind = params.get("rope_type", scaling.get("rope_type", scaling.get("type", "default")))
    theta = params.get("rope_theta", get("rope_theta", 10_000.0))
    return kind, float(theta)


def variant_of(config):
    """(sizes, variant, tied) of a Llama config (a `LlamaConfig` or its config.json as a
    dict): the arguments of `tfs.model.DecoderOnly`. A ValueError names what it cannot hold."""
    get = _getter(config)
    problems = []
    if get("model_type") != "llama":
        problems.append(f"model_type is {get('model_type')!r}, not 'llama'")
    if get("hidden_act", "silu") != "silu":
        problems.append(f"hidden_act {get('hidden_act')!r} (ours: SwiGLU with SiLU)")
    for name in ("attention_bias", "mlp_bias"):
        if get(name, False):
            problems.append(f"{name}: true (our Llama block has no biases)")
    d_model, heads = get("hidden_size"), get("num_attention_heads")
    head_dim = get("head_dim") or d_model // heads
    if head_dim * heads != d_model:
        problems.append(f"head_dim {head_dim} x {heads} heads != hidden_size {d_model}")
    kind, theta = _rope_theta(get)
    if kind != "default":
        problems.append(f"rotary scaling {kind!r} (ours: the plain rotation)")
    if get("attention_dropout", 0.0):
        problems.append(f"attention_dropout {get('attention_dropout')}")
    if problems:
        raise ValueError("tfs.model.DecoderOnly cannot represent this Llama model: "
                         + "; ".join(problems))
    sizes = dict(
        vocab_size=get("vocab_size"), d_model=d_model, n_heads=heads,
        d_ff=get("intermediate_size"), n_layers=get("num_hidden_layers"),
        max_len=get("max_position_embeddings"),
    )
    variant = llama_variant(n_kv_heads=get("num_key_value_heads") or heads,
                            rotary_base=theta, norm_eps=float(get("rms_norm_eps", 1e-6)))
    return sizes, variant, bool(get("tie_word_embeddings", False))


def convert(config, state_dict):
    """A `tfs.model.DecoderOnly` (in eval mode) holding a Llama checkpoint's weights.

    Every tensor must find its place and every weight of ours must be found (a tied
    checkpoint may carry lm_head.weight: it must then equal the embedding); otherwise a
    ValueError says what does not fit.
    """
    sizes, variant, tied = variant_of(config)
    theirs = dict(state_dict)
    if tied and "lm_head.weight" in theirs:
        head = theirs.pop("lm_head.weight")
        if not torch.equal(head, theirs.get("model.embed_tokens.weight", head)):
            raise ValueError("tie_word_embeddings is true but lm_head differs from the embedding")
    model = DecoderOnly(**sizes, variant=variant, tie_output=tied)
    weights, missing = {}, []
    for ours, their_name in names(sizes["n_layers"], tied).items():
        if their_name in theirs:
            weights[ours] = theirs.pop(their_name)
        else:
            missing.append(their_name)
    if missing:
        raise ValueError(f"the checkpoint lacks {len(missing)} weights, e.g. {missing[:3]}")
    if theirs:
        raise ValueError(f"{len(theirs)} tensors of the checkpoint have no place in our model, "
                         f"e.g. {sorted(theirs)[:3]}")
    model.load_state_dict(weights)  # strict: the same names and shapes
    return model.eval()


def from_llama(hf_model):
    """`convert` a `transformers` `LlamaForCausalLM` (its config and its weights)."""
    if not (hasattr(hf_model, "config") and hasattr(hf_model, "state_dict")):
        raise TypeError(f"from_llama() takes a LlamaForCausalLM, got {type(hf_model).__name__}")
    return convert(hf_model.config, hf_model.state_dict())


@torch.no_grad()
def generate(model, ids, max_new_tokens, do_sample=False, top_k=None, temperature=1.0,
             eos_id=None, pad_id=None):
    """Continue the prompts `ids` (B, T) by `max_new_tokens` tokens: (B, T + new).

    The prompt goes through the model once, filling the KV cache; then one token per step.
    Greedy takes the top score; sampling draws from softmax(scores / temperature), kept to
    the `top_k` best when given, with `torch.multinomial` on torch's global generator (what
    `transformers`' generate does: seeded alike, the two draw the same tokens). A sentence
    that wrote `eos_id` continues with `pad_id`; all done, generation stops.
    """
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a tfs.model.DecoderOnly, got {type(model).__name__}")
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        raise ValueError("ids must be a (B, T) tensor of token ids")
    max_new_tokens = _check_int(max_new_tokens, "max_new_tokens")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if eos_id is not None and pad_id is None:
        raise ValueError("with an eos_id, give the pad_id that follows it")
    was_training = model.training
    model.eval()
    cache = KVCache(model, ids, ids.shape[1] + max_new_tokens)
    scores = model(ids, cache)[:, -1]  # (B, |V|): the prompt at once
    out = [ids]
    done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    for step in range(max_new_tokens):
        if do_sample:
            scores = scores / temperature
            if top_k is not None and top_k < scores.shape[-1]:
                kth = scores.topk(top_k, dim=-1).values[:, -1:]
                scores = scores.masked_fill(scores < kth, float("-inf"))
            token = torch.multinomial(scores.softmax(dim=-1), num_samples=1)[:, 0]
        else:
            token = scores.argmax(dim=-1)
        if eos_id is not None:
            token = torch.where(done, torch.full_like(token, pad_id), token)
            done = done | (token == eos_id)
        out.append(token[:, None])
        if step + 1 == max_new_tokens or (eos_id is not None and bool(done.all())):
            break
        scores = model(token[:, None], cache)[:, -1]
    model.train(was_training)
    return torch.cat(out, dim=1)


def tiny_llama_config(vocab_size=256, n_layers=2, max_len=256):
    """A `LlamaConfig` with Llama 3.1 8B's shape ratios at d_model = 64: d_ff = 3.5 x d_model
    (14,336 / 4,096), 8 query heads and 2 key/value heads, 4 query heads per key/value head
    (8B: 32 / 8), rotary base 500,000, eps 1e-5, an untied output layer; d_k = 8 (8B: 128),
    no rotary scaling (8B: "llama3")."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab_size, hidden_size=64, intermediate_size=224, num_hidden_layers=n_layers,
        num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=max_len,
        rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 500_000.0},
        tie_word_embeddings=False, bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )


def tiny_llama(seed=0, **sizes):
    """A `LlamaForCausalLM` with random weights (seeded) from `tiny_llama_config(**sizes)`,
    built offline, in eval mode; its norms' weights are randomised too (not all ones)."""
    from transformers import LlamaForCausalLM

    state = torch.random.get_rng_state()
    torch.manual_seed(_check_int(seed, "seed", minimum=0))
    try:
        model = LlamaForCausalLM(tiny_llama_config(**sizes)).eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("norm.weight"):
                    p.uniform_(0.5, 1.5)
    finally:
        torch.random.set_rng_state(state)
    return model


def load_pretrained(repo_id=SMOLLM2):
    """Download a Llama-architecture checkpoint from the Hub with `transformers` and
    convert it: (our model, its tokenizer). Online only."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    hf_model = LlamaForCausalLM.from_pretrained(repo_id, dtype=torch.float32)
    return from_llama(hf_model), AutoTokenizer.from_pretrained(repo_id)
