"""Reference solutions for the exercises of lesson 05 (learning to translate).

Open this file only when you are stuck: the checker in the lesson (`check.<name>(...)`)
tells you what is wrong with your own attempt first. Each function here passes its checker.
"""


import torch
import torch.nn.functional as F


# Section 2: batches by length under a token budget. Sort the sentences by length, then
# fill a batch until one more sentence would make (sentences) x (longest source + longest
# target) exceed the budget; the last, unfinished batch counts too.
def token_budget_batches(lengths, max_tokens):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches, current, longest_src, longest_tgt = [], [], 0, 0
    for i in order:
        src, tgt = lengths[i]
        grown_src, grown_tgt = max(longest_src, src), max(longest_tgt, tgt)
        if current and (len(current) + 1) * (grown_src + grown_tgt) > max_tokens:
            batches.append(current)
            current, grown_src, grown_tgt = [], src, tgt
        current.append(i)
        longest_src, longest_tgt = grown_src, grown_tgt
    batches.append(current)
    return batches


# Section 3, the bug clinic: F.cross_entropy averaged over EVERY position, the <pad> ones
# too, so the same sentence scored differently depending on how much padding it got.
# ignore_index=pad_id skips them, and the mean is over the real tokens.
def clinic_padding_loss(scores, targets, pad_id):
    return F.cross_entropy(scores.reshape(-1, scores.shape[-1]), targets.reshape(-1),
                           ignore_index=pad_id)


# Section 8: each process backpropagates its sum divided by the GLOBAL token count, times
# world_size, because DDP averages (divides by world_size) the processes' gradients.
def ddp_loss(local_sum, local_tokens, global_tokens, world_size):
    return local_sum * world_size / global_tokens


# Section 3: label smoothing. The target distribution is (1 − ε)·one-hot + ε/|V| (uniform
# over ALL tokens, the right one included: PyTorch's and the paper's definition); the loss
# is its cross-entropy with the model's distribution, averaged over the positions.
def label_smoothing_loss(scores, targets, epsilon):
    log_p = scores.log_softmax(dim=-1)  # (N, |V|), stable even for huge scores
    vocab_size = scores.shape[-1]
    q = torch.full_like(log_p, epsilon / vocab_size)
    q[torch.arange(len(targets)), targets] += 1 - epsilon
    return -(q * log_p).sum(dim=-1).mean()
