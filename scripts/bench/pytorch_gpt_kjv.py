#!/usr/bin/python3
"""PyTorch reference for configs/gpt_kjv.yaml: ms/step and samples/s of the same training step.

The model of configs/gpt_kjv.yaml: a token embedding (vocabulary 4096, width 128, no position
table), 4 pre-norm GPT blocks (RMSNorm; causal attention over 4 heads with rotary position
embeddings on q and k, "rotate half" pairing, base 10000; a SwiGLU MLP 128 -> 2 x 384 -> 128;
biases on the block's linears, as mpipe's transformer_block has them; no dropout), a final
RMSNorm and an output layer without bias whose weight is the embedding's table (tied); sequence
length 128, batch 16, cross-entropy over every position, AdamW (lr 0.003, weight decay 0.1 on
the matrices only: optimizer.decay_exempt) with gradient clipping at norm 1.0, as mpipe runs it on
one stage without micro-batches or recompute (scripts/bench/compare_pytorch.sh). The tokens are
random: the step's cost does not depend on them. Needs Debian's python3-torch (PyTorch 1.13; run
it with /usr/bin/python3) and libopenblas0-openmp.

    /usr/bin/python3 scripts/bench/pytorch_gpt_kjv.py [--threads 1 2] [--steps 30] [--warmup 5]

Prints one line per thread count (scripts/bench/twin_timing.py).
"""
import math
from typing import Callable

import torch
import torch.nn.functional as F

import twin_timing  # (after torch, which it imports)

BATCH, SEQ, VOCAB, WIDTH, HEADS, BLOCKS, MLP_RATIO = 16, 128, 4096, 128, 4, 4, 3
EPS, ROTARY_BASE = 1e-5, 10000.0


class RmsNorm(torch.nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * weight over the last axis (PyTorch 1.13 has no RMSNorm)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def rotary_tables() -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of position t times frequency i, [SEQ, head_dim], each half repeated."""
    head_dim = WIDTH // HEADS
    inverse = ROTARY_BASE ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.outer(torch.arange(SEQ, dtype=torch.float64), inverse)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos().float(), angles.sin().float()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, rotate-half pairing: x [batch, heads, T, head_dim]."""
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-second, first], dim=-1) * sin


class Block(torch.nn.Module):
    """y = x1 + MLP(RMSNorm2(x1)), x1 = x + Attn(RMSNorm1(x)): mpipe's modern transformer_block."""

    def __init__(self) -> None:
        super().__init__()
        hidden = MLP_RATIO * WIDTH
        self.norm1 = RmsNorm()
        self.qkv = torch.nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = torch.nn.Linear(WIDTH, WIDTH)
        self.norm2 = RmsNorm()
        self.fc1 = torch.nn.Linear(WIDTH, 2 * hidden)  # the gate's rows, then up's
        self.fc2 = torch.nn.Linear(hidden, WIDTH)
        cos, sin = rotary_tables()
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        mask = torch.ones(SEQ, SEQ, dtype=torch.bool).tril()
        self.register_buffer("causal", mask.view(1, 1, SEQ, SEQ))

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape  # x: [batch, T, d]
        q, k, v = self.qkv(x).split(d, dim=2)
        # q, k, v: [batch, heads, T, head_dim]
        q, k, v = (z.view(b, t, HEADS, d // HEADS).transpose(1, 2) for z in (q, k, v))
        q, k = rotate(q, self.cos, self.sin), rotate(k, self.cos, self.sin)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // HEADS))
        scores = scores.masked_fill(~self.causal, float("-inf"))
        merged = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, d)
        return self.proj(merged)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        gate, up = self.fc1(self.norm2(x)).chunk(2, dim=-1)
        return x + self.fc2(F.silu(gate) * up)


class GptKjv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.token = torch.nn.Embedding(VOCAB, WIDTH)
        self.blocks = torch.nn.Sequential(*[Block() for _ in range(BLOCKS)])
        self.norm = RmsNorm()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # ids: [batch, T]
        x = self.norm(self.blocks(self.token(ids)))
        return x @ self.token.weight.t()  # the tied output layer: [batch, T, vocab]


def make_step() -> Callable[[], None]:
    """The model, optimizer and data of one training step, and the step."""
    model = GptKjv()
    model.train()
    matrices = [p for p in model.parameters() if p.dim() >= 2 and p is not model.token.weight]
    exempt = [p for p in model.parameters() if p.dim() < 2 or p is model.token.weight]
    optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": 0.1},
                                   {"params": exempt, "weight_decay": 0.0}], lr=0.003)
    return twin_timing.language_model_step(model, optimizer, VOCAB, BATCH, SEQ)


if __name__ == "__main__":
    twin_timing.main(__doc__.splitlines()[0],
                     f"seq {SEQ}, {BLOCKS} RMSNorm/rotary/SwiGLU blocks of width {WIDTH}, "
                     f"{HEADS} heads, vocab {VOCAB} tied, AdamW, clip 1.0",
                     BATCH, make_step)
