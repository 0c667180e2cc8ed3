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
- builds a tiny Marian with random weights, offline, for tests and for the lessons
  (`tiny_marian`), and writes it as a Hub folder with a tokenizer (`save_tiny_marian`).

Only `convert` and `from_marian` on a folder work without `transformers`; the rest imports it.
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
    these arguments (for comparing the two token for token)."""
    return dict(
        num_beams=beam_size,
        length_penalty=length_penalty,
        early_stopping=False,
        do_sample=False,
        bad_words_ids=[[model.pad_id]],
        max_new_tokens=max_len or model.max_len - 1,
        num_return_sequences=1,
        forced_eos_token_id=None,  # opus-mt's config forces <eos> at max_length; ours cuts there
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
    from transformers import MarianConfig, MarianMTModel

    config = MarianConfig(
        vocab_size=vocab_size,
        decoder_vocab_size=vocab_size,
        d_model=TINY["d_model"],
        encoder_layers=TINY["n_layers"],
        decoder_layers=TINY["n_layers"],
        encoder_attention_heads=TINY["n_heads"],
        decoder_attention_heads=TINY["n_heads"],
        encoder_ffn_dim=TINY["d_ff"],
        decoder_ffn_dim=TINY["d_ff"],
        max_position_embeddings=TINY["max_len"],
        activation_function="swish",
        scale_embedding=True,
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
        pad_token_id=vocab_size - 1,
        decoder_start_token_id=vocab_size - 1,
        eos_token_id=0,
        bos_token_id=None,
        forced_eos_token_id=None,  # opus-mt's 0 would force <eos> at max_length only
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
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
