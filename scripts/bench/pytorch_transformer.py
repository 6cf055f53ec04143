#!/usr/bin/python3
"""PyTorch reference for configs/char_transformer.yaml: ms/step and samples/s of the same training step.

The model of configs/char_transformer.yaml: a byte embedding (vocab 256, width 128, learned
positions), 4 pre-LayerNorm GPT blocks (4 heads, causal attention, MLP 128 -> 512 -> 128 with
tanh-GELU, dropout 0.1 on the attention probabilities, the attention output and the MLP output),
a final LayerNorm and Linear(128, 256); sequence length 64, batch 32, cross-entropy over every
position, AdamW (lr 0.003, weight decay 0.01) with gradient clipping at norm 1.0, as mpipe runs
it on one stage without micro-batches or recompute (scripts/bench/compare_pytorch.sh). The
tokens are random bytes: the step's cost does not depend on them. Needs Debian's python3-torch
(PyTorch 1.13; run it with /usr/bin/python3) and libopenblas0-openmp.

    /usr/bin/python3 scripts/bench/pytorch_transformer.py [--threads 1 2] [--steps 30] [--warmup 5]

Prints one line per thread count (scripts/bench/twin_timing.py).
"""
import math
from typing import Callable

import torch
import torch.nn.functional as F

import twin_timing  # (after torch, which it imports)

BATCH, SEQ, VOCAB, WIDTH, HEADS, BLOCKS, DROPOUT = 32, 64, 256, 128, 4, 4, 0.1


class Block(torch.nn.Module):
    """y = x1 + Dropout(MLP(LN2(x1))), x1 = x + Dropout(Attn(LN1(x))): mpipe's transformer_block."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(WIDTH)
        self.qkv = torch.nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = torch.nn.Linear(WIDTH, WIDTH)
        self.ln2 = torch.nn.LayerNorm(WIDTH)
        self.fc1 = torch.nn.Linear(WIDTH, 4 * WIDTH)
        self.fc2 = torch.nn.Linear(4 * WIDTH, WIDTH)
        self.drop = torch.nn.Dropout(DROPOUT)
        mask = torch.ones(SEQ, SEQ, dtype=torch.bool).tril()
        self.register_buffer("causal", mask.view(1, 1, SEQ, SEQ))

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape  # x: [batch, T, d]
        q, k, v = self.qkv(x).split(d, dim=2)
        # q, k, v: [batch, heads, T, head_dim]
        q, k, v = (z.view(b, t, HEADS, d // HEADS).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // HEADS))
        scores = scores.masked_fill(~self.causal, float("-inf"))
        probs = self.drop(F.softmax(scores, dim=-1))
        merged = (probs @ v).transpose(1, 2).contiguous().view(b, t, d)
        return self.proj(merged)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attention(self.ln1(x)))
        hidden = F.gelu(self.fc1(self.ln2(x)), approximate="tanh")
        return x + self.drop(self.fc2(hidden))


class CharTransformer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.token = torch.nn.Embedding(VOCAB, WIDTH)
        self.position = torch.nn.Parameter(0.02 * torch.randn(SEQ, WIDTH))
        self.blocks = torch.nn.Sequential(*[Block() for _ in range(BLOCKS)])
        self.ln = torch.nn.LayerNorm(WIDTH)
        self.head = torch.nn.Linear(WIDTH, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # ids: [batch, T]
        x = self.token(ids) + self.position
        return self.head(self.ln(self.blocks(x)))  # [batch, T, vocab]


def make_step() -> Callable[[], None]:
    """The model, optimizer and data of one training step, and the step."""
    model = CharTransformer()
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.003, weight_decay=0.01)
    return twin_timing.language_model_step(model, optimizer, VOCAB, BATCH, SEQ)


if __name__ == "__main__":
    twin_timing.main(__doc__.splitlines()[0],
                     f"seq {SEQ}, {BLOCKS} pre-LN blocks of width {WIDTH}, {HEADS} heads, AdamW, clip 1.0",
                     BATCH, make_step)
