"""Reference solutions for the exercises of lesson 01 (why the Transformer).

Open this file only when you are stuck: the checker in the lesson (`check.<name>(...)`)
tells you what is wrong with your own attempt first. Each function here passes its checker.
"""

import torch


# Section 1: a stack of RNN layers. Step k of layer l needs step k-1 of the same layer and
# step k of the layer below. Layer 1 runs its n steps one after another; layer 2 can start
# as soon as layer 1 has finished its first step, so it ends one step after layer 1, and so
# on: a diagonal wave. The longest path is n steps along the first layer plus one step for
# each of the layers - 1 layers above it. (PyTorch's nn.RNN runs the stack layer by layer,
# a chain of n * layers; the question asks what the dependencies allow.)
def rnn_chain(n, layers):
    return n + layers - 1


# Section 5: the FLOPs of a self-attention layer on one sequence of n tokens of width d,
# 2 FLOPs per multiply-add. Four projections (x W_Q, x W_K, x W_V and the output W_O), each
# an (n × d) by (d × d) product: 4 · 2nd². Two n × n products: the scores Q K^T, (n × d) by
# (d × n), and the mix A V, (n × n) by (n × d): 2 · 2n²d. The softmax and the division by
# √d are element-wise and not counted.
def attention_layer_flops(n, d):
    return 8 * n * d * d + 4 * n * n * d


# Section 5: the attention layer costs at least a GRU layer's FLOPs when
# 8nd² + 4n²d ≥ 12nd², that is (dividing by 4nd) 2d + n ≥ 3d, n ≥ d.
def gru_crossover(d):
    return d


# Section 2, the bug clinic: the planted bug stored the new state in `state` while the next
# step reads `s`, which stayed 0, so every step forgot everything before it. Write the new
# state back into `s`.
def clinic_rnn_state(x, W_ih, W_hh):
    inputs = x @ W_ih  # (B, n, d): every input projected at once
    s = torch.zeros(x.shape[0], W_hh.shape[0], dtype=x.dtype, device=x.device)  # (B, d)
    for k in range(x.shape[1]):
        s = torch.tanh(inputs[:, k] + s @ W_hh)  # was: state = ...
    return s
