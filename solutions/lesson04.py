"""Reference solutions for the exercises of lesson 04 (real-model blueprints).

Open this file only when you are stuck: the checker in the lesson (`check.<name>(...)`)
tells you what is wrong with your own attempt first. Each function here passes its checker.
"""

import math

import torch.nn.functional as F


# Section 1: the bytes the KV cache of one sequence takes. Every layer keeps, for every token,
# one key and one value vector of d_k numbers per key/value head. Llama 3.1 shares each
# key/value head among several query heads (grouped-query attention): num_key_value_heads,
# not num_attention_heads, says how many there are.
def kv_cache_bytes(config, tokens, bytes_per_number=2):
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads  # absent: one per query head
    d_k = config["hidden_size"] // heads
    per_token = 2 * config["num_hidden_layers"] * kv_heads * d_k  # keys and values
    return per_token * tokens * bytes_per_number


# Section 1: the parameters of a Llama-style model. Per layer: W_Q and W_O (d x d), W_K and
# W_V (d x kv_heads * d_k), a gated feed-forward network of three d x d_ff matrices, and two
# RMSNorm weight vectors; no biases anywhere. Then the embedding, a final RMSNorm, and an
# output matrix unless it is tied to the embedding.
def llama_parameters(config):
    d = config["hidden_size"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    d_k = d // heads
    vocab = config["vocab_size"]
    attention = 2 * d * d + 2 * d * kv_heads * d_k
    feed_forward = 3 * d * config["intermediate_size"]
    layer = attention + feed_forward + 2 * d
    output = 0 if config.get("tie_word_embeddings") else vocab * d
    return vocab * d + config["num_hidden_layers"] * layer + d + output


# Section 4: how often the top-scoring token is the token just read, over the positions
# whose target is a real token (padding left out).
def parrot_share(logits, tgt_in, tgt_out, pad_id):
    real = tgt_out != pad_id  # (B, T)
    top = logits.argmax(dim=-1)  # (B, T): the highest score over the vocabulary
    return (top == tgt_in)[real].float().mean().item()


# Section 5: the first loss of a model with opus-mt-en-ru's vocabulary (|V| = 62,518) and
# scores of mean 0 and variance 1, without the parrot: log|V| + sigma^2/2, in nats.
first_loss = math.log(62_518) + 1 / 2  # 11.54


# Section 5, the bug clinic: the colleague's loss averaged over every position, <pad> ones
# included; an untrained tied model parrots <pad> after <pad>, so those positions cost almost
# nothing and drag the average below log|V|. ignore_index leaves them out of the average.
def clinic_pad_loss(logits, tgt_out, pad_id):
    vocab = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1), ignore_index=pad_id)
