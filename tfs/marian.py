"""Hugging Face's Marian translators (opus-mt-*) in the course's own Transformer.

A Marian model (`transformers.MarianMTModel`, e.g. Helsinki-NLP/opus-mt-en-ru) is the 2017
base model with four differences, which `tfs.model.Variant` names: a SiLU ("swish")
feed-forward, sines and cosines in two halves of the positional table, a fixed bias on the
output scores, and a decoder that starts from <pad>. This module

- reads a Marian checkpoint (a `MarianMTModel`, or a folder with `config.json` and
  `model.safetensors` or `pytorch_model.bin`) into `tfs.model.Transformer`, weight by
  weight through one name map (`NAMES`), and refuses with a ValueError what our model
  cannot represent (pre-LN, an untied output layer, other activations, separate source and
  target vocabularies, ...): `from_marian`, `convert`, `variant_of`;
- downloads opus-mt-en-ru from the Hub (`download_marian`) and converts it (`load_opus_mt`),
  online only;
- translates text with `tfs.decoding.beam_search` and a `MarianTokenizer` (`translate`),
  with the settings `MarianMTModel.generate` uses (4 beams, length penalty 1, <pad> banned);
- finds the folder to load (`marian_folder`): downloaded online; offline, the course's own
  translator that stands in for opus-mt-en-ru (data/tfs_translator_en_ru, `tfs.hub`'s
  STAND_IN_MODELS);
- builds a tiny Marian with random weights, offline, for tests (`tiny_marian`), and writes
  it as a Hub folder with a tokenizer (`save_tiny_marian`);
- goes the other way: `export_marian` saves a trained `tfs.model.Transformer` and the
  course's tokenizer as a `MarianMTModel` folder that `transformers` alone reloads
  (`from_pretrained`, `pipeline("translation", model=folder)`), translating token for token
  as `tfs.decoding` does. Marian's positional table is in halves, ours (by default)
  interleaved: `with_positions` reorders the d_model entries of every weight, which leaves
  every output unchanged, so the export is exact.
- `marian_config`: the one place a `MarianConfig` is built from our names (the tiny Marian,
  the export and benchmarks/bench.py use it).

Only `convert`, `from_marian` on a folder and `with_positions` work without
`transformers`; the rest imports it.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tfs.decoding import beam_search
from tfs.model import Transformer, Variant

OPUS_MT_EN_RU = "Helsinki-NLP/opus-mt-en-ru"

#: Hugging Face's names of the tied embedding: source, target and output layer are one matrix.
EMBEDDING_NAMES = (
    "model.shared.weight",
    "model.encoder.embed_tokens.weight",
    "model.decoder.embed_tokens.weight",
    "lm_head.weight",
)
#: Hugging Face's stored positional tables: not weights of ours (we compute the table), but
#: checked against ours when a checkpoint has them.
POSITION_NAMES = ("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight")
#: Our name -> Hugging Face's, inside one attention, one encoder layer, one decoder layer.
ATTENTION_NAMES = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}
ENCODER_LAYER_NAMES = {
    "self_attention": "self_attn",
    "norm1": "self_attn_layer_norm",
    "feed_forward.linear1": "fc1",
    "feed_forward.linear2": "fc2",
    "norm2": "final_layer_norm",
}
DECODER_LAYER_NAMES = {
    "self_attention": "self_attn",
    "norm1": "self_attn_layer_norm",
    "cross_attention": "encoder_attn",
    "norm2": "encoder_attn_layer_norm",
    "feed_forward.linear1": "fc1",
    "feed_forward.linear2": "fc2",
    "norm3": "final_layer_norm",
}
ACTIVATIONS = {"relu": "relu", "swish": "swish", "silu": "swish"}  # theirs -> Variant's


def names(n_layers):
    """The name map, our state_dict name -> Hugging Face's, for a model of `n_layers` layers.

    E.g. "encoder.0.self_attention.w_q.weight" <- "model.encoder.layers.0.self_attn.q_proj.weight",
    "decoder.2.norm2.bias" <- "model.decoder.layers.2.encoder_attn_layer_norm.bias",
    "embedding.weight" <- "model.shared.weight", "output_bias" <- "final_logits_bias".
    """
    mapping = {"embedding.weight": "model.shared.weight", "output_bias": "final_logits_bias"}
    for stack, layer_names in (("encoder", ENCODER_LAYER_NAMES), ("decoder", DECODER_LAYER_NAMES)):
        for i in range(n_layers):
            for ours, theirs in layer_names.items():
                parts = ATTENTION_NAMES.items() if "attention" in ours else [("", "")]
                for our_part, their_part in parts:
                    for kind in ("weight", "bias"):
                        our_name = ".".join(p for p in (stack, str(i), ours, our_part, kind) if p)
                        their_name = ".".join(
                            p for p in ("model", stack, "layers", str(i), theirs, their_part, kind)
                            if p
                        )
                        mapping[our_name] = their_name
    return mapping


# ---------------------------------------------------------------------------------------------
# the config: what we can represent


def variant_of(config):
    """(sizes, variant) of a Marian config (a `MarianConfig` or its config.json as a dict):
    the arguments of `tfs.model.Transformer`. Raises a ValueError naming what our model
    cannot represent."""
    get = config.get if isinstance(config, dict) else lambda name, default=None: getattr(
        config, name, default
    )
    problems = []
    if get("model_type") != "marian":
        problems.append(f"model_type is {get('model_type')!r}, not 'marian'")
    if get("normalize_before", False):
        problems.append("normalize_before: true (pre-LN layers; ours are post-LN)")
    for name in ("add_final_layer_norm", "normalize_embedding", "layernorm_embedding"):
        if get(name, False):
            problems.append(f"{name}: true (an extra LayerNorm our model does not have)")
    if not get("tie_word_embeddings", True):
        problems.append("tie_word_embeddings: false (an output layer of its own; ours is E)")
    if not get("share_encoder_decoder_embeddings", True):
        problems.append("share_encoder_decoder_embeddings: false (two embedding matrices)")
    vocab_size = get("vocab_size")
    decoder_vocab_size = get("decoder_vocab_size") or vocab_size
    if decoder_vocab_size != vocab_size:
        problems.append(
            f"decoder_vocab_size {decoder_vocab_size} != vocab_size {vocab_size} "
            f"(separate source and target vocabularies; ours is one)"
        )
    activation = get("activation_function", "gelu")
    if activation not in ACTIVATIONS:
        problems.append(f"activation_function {activation!r} (ours: relu or swish/silu)")
    for ours, encoder_name, decoder_name in (
        ("n_layers", "encoder_layers", "decoder_layers"),
        ("n_heads", "encoder_attention_heads", "decoder_attention_heads"),
        ("d_ff", "encoder_ffn_dim", "decoder_ffn_dim"),
    ):
        if get(encoder_name) != get(decoder_name):
            problems.append(
                f"{encoder_name} {get(encoder_name)} != {decoder_name} {get(decoder_name)} "
                f"(our encoder and decoder share {ours})"
            )
    for name in ("attention_dropout", "activation_dropout", "encoder_layerdrop",
                 "decoder_layerdrop"):
        if get(name, 0.0):
            problems.append(f"{name} {get(name)} (ours has dropout only after each sub-layer)")
    if get("pad_token_id") is None:
        problems.append("pad_token_id is not set")
    if problems:
        raise ValueError(
            "tfs.model.Transformer cannot represent this Marian model: " + "; ".join(problems)
        )
    sizes = dict(
        vocab_size=vocab_size,
        d_model=get("d_model"),
        n_heads=get("encoder_attention_heads"),
        d_ff=get("encoder_ffn_dim"),
        n_layers=get("encoder_layers"),
        dropout=float(get("dropout", 0.0)),
        pad_id=get("pad_token_id"),
        max_len=get("max_position_embeddings"),
    )
    variant = Variant(
        activation=ACTIVATIONS[activation],
        scale_embeddings=bool(get("scale_embedding", False)),
        positions="halves",
        output_bias=True,
        decoder_start_id=get("decoder_start_token_id"),
    )
    return sizes, variant


# ---------------------------------------------------------------------------------------------
# the weights


def convert(config, state_dict):
    """A `tfs.model.Transformer` (in eval mode) holding a Marian checkpoint's weights.

    `config`: a `MarianConfig` or its config.json as a dict; `state_dict`: the checkpoint's
    tensors by Hugging Face's names (with or without the leading "model."). Every tensor
    must find its place, and every weight of ours must be found (`final_logits_bias`, which
    Hugging Face may leave out, is then 0, as there); a stored positional table must be
    Marian's sinusoid (within 1e-4; it is then used, as Hugging Face uses it). Otherwise a
    ValueError says what does not fit.
    """
    sizes, variant = variant_of(config)
    theirs = {_full_name(name): tensor for name, tensor in state_dict.items()}
    embeddings = [theirs.pop(name) for name in EMBEDDING_NAMES if name in theirs]
    if not embeddings:
        raise ValueError(f"the checkpoint has no embedding matrix (one of {EMBEDDING_NAMES})")
    if any(not torch.equal(e, embeddings[0]) for e in embeddings[1:]):
        raise ValueError(
            "the checkpoint's embeddings and output layer (lm_head) differ: an untied "
            "output layer, which our model (one matrix E) cannot represent"
        )
    model = Transformer(**sizes, variant=variant)
    ours_from_theirs = names(sizes["n_layers"])
    table = model.pe  # (max_len, d_model): computed by positional_encoding(..., "halves")
    stored = {name: theirs.pop(name).float() for name in POSITION_NAMES if name in theirs}
    for name, their_table in stored.items():
        if their_table.shape != table.shape or not torch.allclose(their_table, table, atol=1e-4):
            raise ValueError(f"{name} is not the sinusoidal table Marian computes")
    if stored:  # Hugging Face reads the stored tables: so do we (ours, up to float rounding)
        first, *others = stored.values()
        if any(not torch.equal(first, other) for other in others):
            raise ValueError("the encoder's and the decoder's position tables differ; "
                             "our model has one table for both")
        table.copy_(first)
    weights = {"embedding.weight": embeddings[0]}
    if "final_logits_bias" in theirs:
        weights["output_bias"] = theirs.pop("final_logits_bias").reshape(-1)  # (1, |V|) -> (|V|,)
    else:
        weights["output_bias"] = torch.zeros(sizes["vocab_size"])
    missing = []
    for ours, their_name in ours_from_theirs.items():
        if ours in weights:
            continue
        if their_name not in theirs:
            missing.append(their_name)
        else:
            weights[ours] = theirs.pop(their_name)
    if missing:
        raise ValueError(f"the checkpoint lacks {len(missing)} weights, e.g. {missing[:3]}")
    if theirs:
        raise ValueError(
            f"{len(theirs)} tensors of the checkpoint have no place in our model, "
            f"e.g. {sorted(theirs)[:3]}"
        )
    model.load_state_dict(weights)  # strict: the same names and shapes
    return model.eval()


def from_marian(source):
    """`convert` a `MarianMTModel`, or a folder holding `config.json` and `model.safetensors`
    or `pytorch_model.bin` (what `save_pretrained` writes and the Hub serves)."""
    if isinstance(source, (str, Path)):
        folder = Path(source)
        config_file = folder / "config.json"
        if not config_file.is_file():
            raise ValueError(f"{folder} has no config.json")
        config = json.loads(config_file.read_text())
        return convert(config, load_weights(folder))
    if hasattr(source, "config") and hasattr(source, "state_dict"):
        return convert(source.config, source.state_dict())
    raise TypeError(
        f"from_marian() takes a MarianMTModel or a folder with config.json and the weights, "
        f"got {type(source).__name__}"
    )


def load_weights(folder):
    """The tensors of `folder`/model.safetensors, else of `folder`/pytorch_model.bin."""
    folder = Path(folder)
    if (folder / "model.safetensors").is_file():
        from safetensors.torch import load_file

        return load_file(folder / "model.safetensors")
    if (folder / "pytorch_model.bin").is_file():
        return torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    raise ValueError(f"{folder} has neither model.safetensors nor pytorch_model.bin")


def download_marian(repo_id=OPUS_MT_EN_RU, weights_file="pytorch_model.bin"):
    """Download a Marian model's config.json and weights (about 307 MB for opus-mt-en-ru)
    with `tfs.hub.hf_hub_download`; returns the local folder holding both, which
    `from_marian` and `MarianMTModel.from_pretrained` read (one download for both). Online
    only: offline, tfs.hub raises `tfs.hub.HubFileMissing` for the weights (the course does
    not ship them)."""
    from tfs.hub import hf_hub_download

    weights_path = Path(hf_hub_download(repo_id, weights_file))
    config_path = Path(hf_hub_download(repo_id, "config.json"))
    folder = weights_path.parent
    if config_path.parent != folder:  # e.g. another revision: keep the two together
        raise ValueError(f"{repo_id}: config.json and {weights_file} came from different "
                         f"snapshots ({config_path.parent} and {folder})")
    return folder


def marian_folder(repo_id=OPUS_MT_EN_RU, weights_file="pytorch_model.bin"):
    """The folder of a Marian model to load: online, `download_marian(repo_id)`; offline
    (tfs.hub raises `HubFileMissing` for the weights, which the course does not ship), the
    course's own model that stands in for it (`tfs.hub.STAND_IN_MODELS`: for opus-mt-en-ru,
    lesson 05's translator exported by `export_marian`, data/tfs_translator_en_ru), with a
    line saying so. Returns (folder, where) with `where` "downloaded" or "stand-in"."""
    from tfs import hub

    try:
        return download_marian(repo_id, weights_file), "downloaded"
    except hub.HubFileMissing:
        if repo_id not in hub.STAND_IN_MODELS:
            raise
    folder = hub.data_dir() / hub.STAND_IN_MODELS[repo_id]
    for name in ("config.json", "model.safetensors"):
        if not (folder / name).is_file():
            raise hub.HubFileMissing(
                f"the shipped file {folder / name} is missing; {hub.restore_hint()}")
    if repo_id not in hub._announced:
        hub._announced.add(repo_id)
        size = sum(p.numel() for p in from_marian(folder).parameters())
        print(hub.STAND_IN_LINES[repo_id].format(size=size))
    return folder, "stand-in"


def load_opus_mt(repo_id=OPUS_MT_EN_RU, weights_file="pytorch_model.bin"):
    """`download_marian` and `from_marian`: opus-mt-en-ru (or `repo_id`) in our Transformer."""
    return from_marian(download_marian(repo_id, weights_file))


def _full_name(name):
    if name.startswith("model.") or name in ("lm_head.weight", "final_logits_bias"):
        return name
    return "model." + name  # a checkpoint saved from MarianModel, without the prefix


# ---------------------------------------------------------------------------------------------
# translating


def translate(model, tokenizer, sentences, beam_size=4, length_penalty=1.0, max_len=None):
    """Translate a list of strings with `tfs.decoding.beam_search`; returns a list of strings.

    `model`: a converted Marian (`convert`); `tokenizer`: its `MarianTokenizer`. The defaults
    are what `MarianMTModel.generate` does for opus-mt-en-ru: 4 beams, length penalty 1,
    <pad> banned (its `bad_words_ids`), at most max_length - 1 = 511 new tokens (`max_len`
    defaults to the model's positions minus the start token).
    """
    batch = tokenizer(list(sentences), return_tensors="pt", padding=True)
    src = batch["input_ids"].to(model.embedding.weight.device)  # (B, T_src), right-padded
    out = beam_search(
        model, src, None, tokenizer.eos_token_id,
        max_len=max_len or model.max_len - 1, beam_size=beam_size, length_penalty=length_penalty,
    )
    return tokenizer.batch_decode(out, skip_special_tokens=True)


def generate_settings(model, beam_size=4, length_penalty=1.0, max_len=None):
    """The keyword arguments of `MarianMTModel.generate` that do what `beam_search` does with
    these arguments (for comparing the two token for token): <pad> and the decoder's start
    token never generated (Marian's start is <pad>; a model exported from the course starts
    from <bos>)."""
    start = model.variant.decoder_start_id
    banned = sorted({model.pad_id} | ({start} if start is not None else set()))
    return dict(
        num_beams=beam_size,
        length_penalty=length_penalty,
        early_stopping=False,
        do_sample=False,
        bad_words_ids=[[i] for i in banned],
        max_new_tokens=max_len or model.max_len - 1,
        num_return_sequences=1,
        forced_eos_token_id=None,  # opus-mt's config forces <eos> at max_length; ours cuts there
    )


# ---------------------------------------------------------------------------------------------
# the other way: our Transformer as a MarianMTModel folder


def halves_order(d_model):
    """The permutation from the interleaved positional layout to Marian's halves: entry k of
    a halves vector is entry `halves_order(d_model)[k]` of the interleaved one (sin 0,
    sin 1, ..., then cos 0, cos 1, ...: the even entries, then the odd ones)."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def _residual_axes(name):
    """The axes of our weight `name` that run along d_model (the residual stream's entries):
    a permutation of the stream reorders exactly these."""
    if name == "embedding.weight":
        return (1,)  # (|V|, d_model)
    if ".norm" in name:
        return (0,)  # LayerNorm's gamma and beta, (d_model,)
    if any(f".{w}." in name for w in ("w_q", "w_k", "w_v")) or ".linear1." in name:
        return (1,) if name.endswith("weight") else ()  # reads the stream: (out, d_model)
    if ".w_o." in name or ".linear2." in name:
        return (0,)  # writes the stream: weight (d_model, in), bias (d_model,)
    if name == "output_bias":
        return ()
    raise ValueError(f"{name}: a weight tfs.marian does not know how to reorder")


def _sizes_of(model):
    layer = model.encoder[0]
    return dict(
        vocab_size=model.vocab_size, d_model=model.d_model,
        n_heads=layer.self_attention.n_heads, d_ff=layer.feed_forward.linear1.out_features,
        n_layers=len(model.encoder), dropout=model.dropout.p, pad_id=model.pad_id,
        max_len=model.max_len,
    )


def with_positions(model, positions):
    """The same network with its positional table in `positions` layout ("interleaved" or
    "halves"): a new `tfs.model.Transformer` whose d_model entries are those of `model`
    reordered by one fixed permutation, applied to every weight on the residual stream's
    side (the embedding's columns, every LayerNorm, the input side of the query, key, value
    and first feed-forward projections, the output side of the attention's and the
    feed-forward's last projections). Attention scores, LayerNorm's mean and variance and
    the output scores x @ E^T do not depend on the order of the entries, so every output is
    the same (up to the float rounding of the two tables: below 1e-5)."""
    from dataclasses import replace

    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a tfs.model.Transformer, got {type(model).__name__}")
    if positions not in ("interleaved", "halves"):
        raise ValueError(f"positions must be 'interleaved' or 'halves', got {positions!r}")
    order = halves_order(model.d_model)  # interleaved -> halves
    if model.variant.positions == positions:
        order = torch.arange(model.d_model)
    elif positions == "interleaved":
        order = torch.argsort(order)  # halves -> interleaved
    weight = model.embedding.weight
    new = Transformer(**_sizes_of(model), variant=replace(model.variant, positions=positions))
    new = new.to(device=weight.device, dtype=weight.dtype)
    state = {}
    for name, tensor in model.state_dict().items():
        for axis in _residual_axes(name):
            tensor = tensor.index_select(axis, order.to(tensor.device))
        state[name] = tensor.clone()
    new.load_state_dict(state)
    return new.train(model.training)


SPECIAL_TOKENS = dict(pad_token="<pad>", bos_token="<bos>", eos_token="<eos>", unk_token="<unk>")


def export_marian(model, tokenizer, folder, num_beams=4, **special_tokens):
    """Save `model` (a trained `tfs.model.Transformer`) and `tokenizer` (the corpus's
    `tokenizers.Tokenizer`, `tfs.data.load_tokenizer()`) as a Hugging Face Marian folder
    that `transformers` alone loads: `MarianMTModel.from_pretrained(folder)`,
    `AutoTokenizer.from_pretrained(folder)` (a `PreTrainedTokenizerFast` that appends
    <eos> to each source, as the course's model reads it), `pipeline("translation",
    model=folder)`. Returns the folder.

    What it writes: config.json (`marian_config`: our sizes, activation and embedding scale;
    the decoder starts from <bos>, or from `variant.decoder_start_id` if the model has one),
    model.safetensors (our weights under Hugging Face's names, reordered into Marian's
    halves layout by `with_positions`; final_logits_bias = 0, or our output bias),
    generation_config.json (`num_beams` beams, length penalty 1, <pad> and the start token
    never generated: `generate()` then gives `tfs.decoding.beam_search`'s tokens, and
    `num_beams=1` greedy's) and the tokenizer's files. `special_tokens`: the names of
    pad_token, bos_token, eos_token, unk_token, if not the course's. A ValueError or
    TypeError names what does not fit (another vocabulary, a missing special token, ...).
    Loading the folder back checks every weight: `from_marian(folder)`.
    """
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import GenerationConfig, MarianMTModel, PreTrainedTokenizerFast

    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a tfs.model.Transformer, got {type(model).__name__}")
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be a tokenizers.Tokenizer (tfs.data.load_tokenizer()), "
                        f"got {type(tokenizer).__name__}")
    unknown = set(special_tokens) - set(SPECIAL_TOKENS)
    if unknown:
        raise TypeError(f"export_marian() got unexpected keyword arguments {sorted(unknown)}; "
                        f"special tokens are named by {sorted(SPECIAL_TOKENS)}")
    tokens = {**SPECIAL_TOKENS, **special_tokens}
    ids = {kind: tokenizer.token_to_id(token) for kind, token in tokens.items()}
    missing = [f"{kind} {tokens[kind]!r}" for kind, i in ids.items() if i is None]
    if missing:
        raise ValueError(f"the tokenizer has no {', '.join(missing)}")
    if tokenizer.get_vocab_size() != model.vocab_size:
        raise ValueError(f"the tokenizer has {tokenizer.get_vocab_size()} tokens, the model "
                         f"{model.vocab_size}: not the vocabulary it was trained with")
    if ids["pad_token"] != model.pad_id:
        raise ValueError(f"the tokenizer's {tokens['pad_token']!r} is id {ids['pad_token']}, "
                         f"the model's pad_id is {model.pad_id}")
    if isinstance(num_beams, bool) or not isinstance(num_beams, int) or num_beams < 1:
        raise ValueError(f"num_beams must be a positive integer, got {num_beams!r}")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} exists and is not a folder")
    pad, eos = ids["pad_token"], ids["eos_token"]
    start = model.variant.decoder_start_id
    start = ids["bos_token"] if start is None else start

    ours = with_positions(model, "halves").float().cpu().eval()
    sizes = _sizes_of(ours)
    config = marian_config(
        **{k: sizes[k] for k in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers",
                                 "max_len", "pad_id", "dropout")},
        eos_id=eos, decoder_start_id=start, activation=ours.variant.activation,
        scale_embeddings=ours.variant.scale_embeddings,
    )
    state = ours.state_dict()
    theirs = {their_name: state[our_name] for our_name, their_name in
              names(sizes["n_layers"]).items() if our_name in state}
    theirs["final_logits_bias"] = state.get(
        "output_bias", torch.zeros(sizes["vocab_size"])).reshape(1, -1)  # (1, |V|)
    marian = MarianMTModel(config)
    result = marian.load_state_dict(theirs, strict=False)
    tied = set(EMBEDDING_NAMES) | set(POSITION_NAMES)
    if result.unexpected_keys or set(result.missing_keys) - tied:
        raise ValueError(f"the weights do not fit MarianMTModel: missing "
                         f"{sorted(set(result.missing_keys) - tied)[:3]}, unexpected "
                         f"{result.unexpected_keys[:3]}")
    marian.tie_weights()
    if not torch.equal(marian.lm_head.weight, state["embedding.weight"]):
        raise ValueError("MarianMTModel did not tie its output layer to the embedding")
    table = marian.model.encoder.embed_positions.weight  # Marian computes its own table
    if not torch.allclose(table, ours.pe, atol=1e-6, rtol=0):
        raise ValueError("Marian's positional table differs from ours")
    marian.generation_config = GenerationConfig(
        decoder_start_token_id=start, eos_token_id=eos, pad_token_id=pad,
        bad_words_ids=[[i] for i in sorted({pad, start})], num_beams=num_beams,
        max_length=sizes["max_len"], length_penalty=1.0, early_stopping=False,
        forced_eos_token_id=None, do_sample=False,
    )
    marian.eval().save_pretrained(folder)

    fast = Tokenizer.from_str(tokenizer.to_str())  # a copy: the course's stays as it is
    fast.no_padding()
    fast.no_truncation()
    eos_token = tokens["eos_token"]
    fast.post_processor = TemplateProcessing(  # source + <eos>, as the course's model reads it
        single=f"$A {eos_token}", pair=f"$A $B {eos_token}", special_tokens=[(eos_token, eos)])
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=fast, **tokens, model_max_length=sizes["max_len"],
        padding_side="right", clean_up_tokenization_spaces=False,
        model_input_names=["input_ids", "attention_mask"],  # no token_type_ids: Marian has none
    )
    wrapped.save_pretrained(folder)
    settings_file = folder / "tokenizer_config.json"
    settings = json.loads(settings_file.read_text())
    settings["tokenizer_class"] = "PreTrainedTokenizerFast"  # the name transformers 4 and 5 know
    settings_file.write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n")
    return folder


# ---------------------------------------------------------------------------------------------
# a MarianConfig from our names


def marian_config(vocab_size, d_model, n_heads, d_ff, n_layers, max_len, pad_id, eos_id,
                  decoder_start_id, activation="relu", scale_embeddings=True, dropout=0.1):
    """The `MarianConfig` of a model with these sizes (our names: d_model, n_heads, d_ff,
    n_layers, max_len positions): one shared embedding tied to the output layer, post-LN,
    dropout only after each sub-layer (as ours), `activation` "relu" or "swish" (SiLU).
    `variant_of` reads it back into the same sizes."""
    from transformers import MarianConfig

    if activation not in ("relu", "swish"):
        raise ValueError(f"activation must be 'relu' or 'swish', got {activation!r}")
    return MarianConfig(
        vocab_size=vocab_size,
        decoder_vocab_size=vocab_size,
        d_model=d_model,
        encoder_layers=n_layers,
        decoder_layers=n_layers,
        encoder_attention_heads=n_heads,
        decoder_attention_heads=n_heads,
        encoder_ffn_dim=d_ff,
        decoder_ffn_dim=d_ff,
        max_position_embeddings=max_len,
        activation_function=activation,
        scale_embedding=bool(scale_embeddings),
        dropout=float(dropout),
        attention_dropout=0.0,
        activation_dropout=0.0,
        pad_token_id=pad_id,
        eos_token_id=eos_id,
        decoder_start_token_id=decoder_start_id,
        bos_token_id=None,
        forced_eos_token_id=None,  # opus-mt's 0 would force <eos> at max_length only
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
    )


# ---------------------------------------------------------------------------------------------
# a tiny Marian, offline

TINY = dict(d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=512)  # positions: opus-mt-en-ru's


def tiny_marian(seed=0, vocab_size=64, eos_bias=0.15, std=0.15, embedding_std=0.02, bias_std=0.02):
    """A tiny `MarianMTModel` with random weights (opus-mt-en-ru's conventions: SiLU,
    x sqrt(d_model), <pad> = the last token and the decoder's start, <eos> = 0), built
    offline from a `MarianConfig`, the usual way to test against Hugging Face without a
    download. Weights ~ N(0, std), LayerNorms near 1, final_logits_bias ~ N(0, 1) with
    `eos_bias` added to <eos>'s, so that outputs end at varied lengths."""
    from transformers import MarianMTModel

    config = marian_config(
        vocab_size=vocab_size, **TINY, activation="swish", scale_embeddings=True,
        dropout=0.1, pad_id=vocab_size - 1, eos_id=0, decoder_start_id=vocab_size - 1,
    )
    torch.manual_seed(seed)
    model = MarianMTModel(config)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "embed_positions" in name:
                continue  # the sinusoidal table stays
            noise = torch.randn(parameter.shape, generator=generator)
            if "layer_norm" in name and name.endswith("weight"):
                parameter.copy_(1 + 0.1 * noise)
            elif name == "model.shared.weight":
                parameter.copy_(embedding_std * noise)
            else:
                parameter.copy_(std * noise)
        bias = bias_std * torch.randn(1, vocab_size, generator=generator)
        bias[0, config.eos_token_id] += eos_bias
        model.final_logits_bias.copy_(bias)
    return model.eval()


def save_tiny_marian(folder, seed=0, texts=None, weights_file="model.safetensors",
                     **tiny_marian_kwargs):
    """Write a tiny random Marian as a Hub folder: config.json, the weights (`weights_file`:
    "model.safetensors", or "pytorch_model.bin" as opus-mt-en-ru's repository has them), a
    MarianTokenizer's files (source.spm, target.spm, vocab.json, tokenizer_config.json),
    with a SentencePiece model of a few dozen pieces trained on `texts` (default: a few
    English sentences); the model's vocabulary is the tokenizer's. Other keyword arguments
    go to `tiny_marian`. A local HTTP server serving this folder stands in for the Hub.
    Returns the folder."""
    import sentencepiece as spm

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    texts = list(texts or _TINY_TEXTS)
    model_file = folder / "source.spm"
    pieces = 56
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_prefix=str(folder / "spm"), vocab_size=pieces,
        model_type="unigram", character_coverage=1.0, bos_id=-1, eos_id=-1, unk_id=0,
        minloglevel=2,
    )
    (folder / "spm.model").rename(model_file)
    (folder / "spm.vocab").unlink()
    (folder / "target.spm").write_bytes(model_file.read_bytes())
    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    vocabulary = ["</s>", "<unk>"] + [
        processor.id_to_piece(i) for i in range(processor.get_piece_size())
        if processor.id_to_piece(i) not in ("<unk>", "</s>")
    ] + ["<pad>"]
    vocab = {piece: i for i, piece in enumerate(vocabulary)}
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "MarianTokenizer", "source_lang": "en", "target_lang": "ru",
        "model_max_length": TINY["max_len"], "eos_token": "</s>", "unk_token": "<unk>",
        "pad_token": "<pad>", "separate_vocabs": False,
    }))
    model = tiny_marian(seed, vocab_size=len(vocabulary), **tiny_marian_kwargs)
    if weights_file not in ("model.safetensors", "pytorch_model.bin"):
        raise ValueError(f"weights_file must be model.safetensors or pytorch_model.bin, "
                         f"got {weights_file!r}")
    model.save_pretrained(folder)  # config.json, generation_config.json, model.safetensors
    if weights_file == "pytorch_model.bin":
        (folder / "model.safetensors").unlink()
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    return folder


_TINY_TEXTS = [
    "I see the cat.", "The cat sees me.", "She said that she would come.",
    "We read a book every evening.", "They live in a small house by the river.",
    "The weather is nice today.", "He does not know where the station is.",
    "My friend bought a new bicycle.", "Where is the bus stop?", "Thank you very much.",
]
