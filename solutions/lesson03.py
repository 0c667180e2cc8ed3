"""Reference solutions for the exercises of lesson 03 (assembly, training, inference).

Open this file only when you are stuck: the checker in the lesson (`check.<name>(...)`)
tells you what is wrong with your own attempt first. Each function here passes its checker.
"""

import torch


# Section 3: the parameters of a GPT-2-style decoder-only model. Per layer: one attention
# (four d × d projections with biases), a feed-forward network (d → d_ff → d, with biases)
# and two LayerNorms (gamma and beta). Around the layers: the token embedding, tied to the
# output layer (counted once), a LEARNED positional table, and one final LayerNorm.
# GPT-2 small (50,257, 768, 3,072, 12, 1,024) has 124,439,808.
def decoder_only_parameters(vocab_size, d_model, d_ff, n_layers, max_len):
    attention = 4 * (d_model * d_model + d_model)
    feed_forward = 2 * d_model * d_ff + d_ff + d_model
    layer_norms = 2 * (2 * d_model)
    layer = attention + feed_forward + layer_norms
    return n_layers * layer + vocab_size * d_model + max_len * d_model + 2 * d_model


# Section 6, the bug clinic: the loop read the scores of position 0, the prediction made
# after <bos> alone; with the causal mask, that position never sees the tokens appended
# after it, so the same token came out at every step. The next token's scores are those of
# the LAST position, the only one that has read the whole prefix.
@torch.no_grad()
def clinic_repeats(model, src, n_tokens):
    memory = model.encode(src)  # (B, T_src, d_model): once
    out = torch.full((src.shape[0], 1), 1, device=src.device)  # (B, 1): <bos> is token 1
    for _ in range(n_tokens):
        scores = model.decode(out, memory, src)[:, -1]  # (B, |V|): was [:, 0]
        out = torch.cat([out, scores.argmax(dim=-1, keepdim=True)], dim=1)  # (B, t + 1)
    return out[:, 1:]  # without <bos>


# Section 6: greedy decoding that stops. The lesson's loop, plus three things: the scores of
# <pad> and <bos> set to -inf, <pad> written for every answer that already has its <eos>, and
# a stop as soon as all of them have one.
@torch.no_grad()
def greedy_until_eos(model, src, max_len):
    memory = model.encode(src)  # (B, T_src, d_model): once
    out = torch.full((src.shape[0], 1), 1, device=src.device)  # (B, 1): <bos> is token 1
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)  # (B,)
    for _ in range(max_len):
        scores = model.decode(out, memory, src)[:, -1]  # (B, |V|)
        scores[:, [0, 1]] = float("-inf")  # never <pad> (0) or <bos> (1)
        next_token = scores.argmax(dim=-1).masked_fill(finished, 0)  # <pad> after <eos>
        out = torch.cat([out, next_token[:, None]], dim=1)  # (B, t + 1)
        finished |= next_token == 2  # <eos> is token 2
        if finished.all():
            break
    return out[:, 1:]  # without <bos>


# Section 7: log p(out | src) = Σ_t log p(out_t | out_<t, src), one teacher-forced pass:
# the decoder reads <bos> + out without its last token, position t is scored on out[t], and
# the <pad> after <eos> is left out.
def sequence_log_probability(model, src, out, bos_id):
    bos = torch.full((out.shape[0], 1), bos_id, dtype=out.dtype, device=out.device)
    decoder_input = torch.cat([bos, out[:, :-1]], dim=1)  # (B, T)
    log_p = model(src, decoder_input).log_softmax(dim=-1)  # (B, T, |V|)
    per_token = log_p.gather(-1, out[..., None]).squeeze(-1)  # (B, T)
    return per_token.masked_fill(out == model.pad_id, 0.0).sum(dim=1)  # (B,)
