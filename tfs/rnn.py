"""Lesson 00's GRU translator with attention, reusable: the baseline lesson 05 compares with.

The same model as lesson 00's `Translator(attention=True)`: a bidirectional GRU encoder, a
GRU decoder whose starting state is the encoder's summary (its two final states side by
side), additive (Bahdanau) attention scores v . tanh(W_q h_t + W_k s_k) queried with the
decoder's current state h_t, and a linear layer over [h_t; c_t] (Luong's placement, so that
teacher-forced training runs every step at once). Two things lesson 00 did not need, since
its strings in a batch all had one length: padding is handled (the encoder reads each
sentence only up to its end, attention never looks at <pad>), and generation stops at <eos>.

It follows `tfs.model.Transformer`'s conventions, so `tfs.train` trains and evaluates both:
`forward(src, tgt_in)` returns scores (B, T_tgt, |V|); `generate(src, bos_id, eos_id,
max_len)` returns greedy outputs shaped like `tfs.decoding.greedy`'s (no <bos>, <eos>
included, <pad> after it); `pad_id` is an attribute.
"""

from __future__ import annotations

import numbers

import torch
import torch.nn as nn

from tfs.model import _check_int


class GRUTranslator(nn.Module):
    """A GRU encoder-decoder with additive attention (lesson 00, section 5)."""

    def __init__(self, vocab_size, d_emb, d_hid, pad_id):
        super().__init__()
        vocab_size = _check_int(vocab_size, "vocab_size")
        d_emb = _check_int(d_emb, "d_emb")
        d_hid = _check_int(d_hid, "d_hid")
        if d_hid % 2:
            raise ValueError(f"d_hid must be even (the two directions share it), got {d_hid}")
        if isinstance(pad_id, bool) or not isinstance(pad_id, numbers.Integral):
            raise TypeError(f"pad_id must be an integer token id, got {pad_id!r}")
        if not 0 <= pad_id < vocab_size:
            raise ValueError(f"pad_id must be in the vocabulary 0..{vocab_size - 1}, got {pad_id}")
        self.vocab_size, self.pad_id = vocab_size, int(pad_id)
        self.source_embedding = nn.Embedding(vocab_size, d_emb, padding_idx=pad_id)
        self.target_embedding = nn.Embedding(vocab_size, d_emb, padding_idx=pad_id)
        self.encoder = nn.GRU(d_emb, d_hid // 2, batch_first=True, bidirectional=True)
        self.decoder = nn.GRU(d_emb, d_hid, batch_first=True)
        self.W_q = nn.Linear(d_hid, d_hid, bias=False)  # additive scores (Bahdanau)
        self.W_k = nn.Linear(d_hid, d_hid, bias=False)
        self.v = nn.Linear(d_hid, 1, bias=False)
        self.out = nn.Linear(2 * d_hid, vocab_size)
        self.weights = None  # the attention weights of the last call, (B, T_tgt, T_src)

    def _check(self, ids, name):
        if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.long, torch.int32):
            raise TypeError(f"{name} must be a tensor of integer token ids")
        if ids.dim() != 2 or ids.numel() == 0:
            raise ValueError(f"{name} must have shape (B, T), got {tuple(ids.shape)}")
        if int(ids.min()) < 0 or int(ids.max()) >= self.vocab_size:
            raise ValueError(f"{name} holds ids outside the vocabulary 0..{self.vocab_size - 1}")

    def encode(self, src):
        """S (B, T_src, d_hid): one state per source token; summary (B, d_hid)."""
        self._check(src, "src")
        lengths = (src != self.pad_id).sum(dim=1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(
            self.source_embedding(src), lengths, batch_first=True, enforce_sorted=False)
        S, last = self.encoder(packed)  # each sentence read up to its own end
        S, _ = nn.utils.rnn.pad_packed_sequence(S, batch_first=True, total_length=src.shape[1])
        summary = torch.cat([last[0], last[1]], dim=-1)  # (B, d_hid): both directions' ends
        return S, summary

    def scores(self, H, S):
        """e[b, t, k] = v . tanh(W_q h_t + W_k s_k), every t and k at once: (B, T_tgt, T_src)."""
        mixed = self.W_q(H)[:, :, None, :] + self.W_k(S)[:, None, :, :]  # (B, n, m, d_hid)
        return self.v(torch.tanh(mixed)).squeeze(-1)

    def decode(self, previous_tokens, S, src, state):
        H, state = self.decoder(self.target_embedding(previous_tokens), state)  # (B, n, d_hid)
        e = self.scores(H, S).masked_fill((src == self.pad_id)[:, None, :], float("-inf"))
        alpha = e.softmax(dim=-1)  # (B, n, m): never on <pad>
        context = alpha @ S  # (B, n, d_hid)
        self.weights = alpha.detach()
        return self.out(torch.cat([H, context], dim=-1)), state  # (B, n, |V|)

    def forward(self, src, tgt_in):
        """Teacher forcing: scores (B, T_tgt, |V|) for every target position at once."""
        self._check(tgt_in, "tgt_in")
        if src.shape[0] != tgt_in.shape[0]:
            raise ValueError(f"src and tgt_in must hold the same number of sentences, got "
                             f"{src.shape[0]} and {tgt_in.shape[0]}")
        S, summary = self.encode(src)
        scores, _ = self.decode(tgt_in, S, src, summary[None].contiguous())
        return scores

    @torch.no_grad()
    def generate(self, src, bos_id, eos_id, max_len):
        """Greedy decoding, one step at a time: (B, T) ids without <bos>, <eos> included,
        <pad> after it (as `tfs.decoding.greedy`); <pad> and <bos> are never generated."""
        max_len = _check_int(max_len, "max_len")
        was_training = self.training
        self.eval()
        S, summary = self.encode(src)
        state = summary[None].contiguous()
        token = src.new_full((src.shape[0], 1), bos_id)
        finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        outputs = []
        for _ in range(max_len):
            scores, state = self.decode(token, S, src, state)
            scores[:, -1, [self.pad_id, bos_id]] = float("-inf")
            token = scores[:, -1].argmax(dim=-1).masked_fill(finished, self.pad_id)[:, None]
            outputs.append(token)
            finished |= token[:, 0] == eos_id
            if finished.all():
                break
        self.train(was_training)
        return torch.cat(outputs, dim=1)
