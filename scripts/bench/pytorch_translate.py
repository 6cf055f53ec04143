#!/usr/bin/python3
"""PyTorch reference for configs/translate_bible.yaml: ms/step and samples/s of the same training step.

The model of configs/translate_bible.yaml as torch.nn.Transformer(norm_first=True,
batch_first=True): a source and a target embedding (vocabulary 4000, width 128, learned positions
up to 64), 3 pre-LN encoder and 3 pre-LN decoder layers (4 heads, MLP 128 -> 512 -> 128 with
tanh-GELU, as mpipe's gelu), the encoder's and the decoder's final LayerNorm, and a head without
bias; one token matrix for the source embedding, the target embedding and the head (the config's
`tie: embedding`; the position tables are the embeddings' own). Batch 32, source and target
length 64. Masks as mpipe's: the encoder's self-attention and the decoder's cross-attention skip
the source's padded keys (the key-padding mask from the source ids, pad id 0), the decoder's
self-attention is causal without padding. No dropout and no label smoothing, as the config.
Cross-entropy over the target positions that are not padding, AdamW (lr 0.0015, weight decay
0.01) with gradient clipping at norm 1.0 (a constant learning rate: the cosine schedule's cost is
nil), as mpipe runs it on one stage without micro-batches or recompute
(scripts/bench/translate_speed.sh). The batches are read from the pair shard of
scripts/data/bible_parallel.sh as data.dataset: pairs builds them (source + eos, bos + target,
target + eos, each padded with 0), 32 pairs in a fixed random order, a new batch each step.
Prints the parameter count, which equals `mpipe plan configs/translate_bible.yaml`'s (1917440).
Needs Debian's python3-torch (PyTorch 1.13; run it with /usr/bin/python3), python3-numpy and
libopenblas0-openmp.

    /usr/bin/python3 scripts/bench/pytorch_translate.py [--threads 1 2] [--steps 30] [--warmup 5] \
        [--pairs runs/bible/pairs_train.bin]

Prints one line per thread count (scripts/bench/twin_timing.py).
"""
import argparse
import functools
import os
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

import twin_timing  # (after torch, which it imports)

BATCH, SEQ, VOCAB, WIDTH, HEADS, LAYERS, HIDDEN = 32, 64, 4000, 128, 4, 3, 512
PAD, BOS, EOS = 0, 2, 3  # scripts/data/bible_parallel.sh's tokenizer
PAIRS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../runs/bible/pairs_train.bin")


class PairShard:
    """A pair shard (lib/data/pair_shard_format.h): 256 int32 of header (magic, version, pairs N,
    tokens T), 2N + 1 uint32 offsets, T uint16 tokens."""

    def __init__(self, path: str) -> None:
        header = np.fromfile(path, dtype="<i4", count=256)
        if header[0] != 20250601:
            raise SystemExit(f"{path}: not a pair shard with uint16 tokens (magic {header[0]})")
        pairs = int(header[2])
        self.offsets = np.fromfile(path, dtype="<u4", count=2 * pairs + 1, offset=1024)
        self.tokens = np.memmap(path, dtype="<u2", mode="r", offset=1024 + 4 * (2 * pairs + 1))
        self.pairs = pairs

    def batch(self, indices: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """source, target_in and targets [len(indices), SEQ], as mpipe's ParallelDataset."""
        source = np.full((len(indices), SEQ), PAD, dtype=np.int64)
        target_in, targets = source.copy(), source.copy()
        for row, i in enumerate(indices):
            s, t, end = self.offsets[2 * i:2 * i + 3]
            src, tgt = self.tokens[s:t], self.tokens[t:end]
            source[row, :len(src)], source[row, len(src)] = src, EOS
            target_in[row, 0], target_in[row, 1:len(tgt) + 1] = BOS, tgt
            targets[row, :len(tgt)], targets[row, len(tgt)] = tgt, EOS
        return torch.from_numpy(source), torch.from_numpy(target_in), torch.from_numpy(targets)


class Embedding(torch.nn.Module):
    """token[ids] + position[t]: mpipe's embedding layer (both tables N(0, 0.02^2))."""

    def __init__(self, token: torch.nn.Embedding) -> None:
        super().__init__()
        self.token = token
        self.position = torch.nn.Parameter(0.02 * torch.randn(SEQ, WIDTH))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # ids: [batch, T]
        return self.token(ids) + self.position[:ids.shape[1]]


class Translator(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        token = torch.nn.Embedding(VOCAB, WIDTH)  # the source's, the target's and the head's
        torch.nn.init.normal_(token.weight, std=0.02)
        self.source = Embedding(token)
        self.target = Embedding(token)
        self.transformer = torch.nn.Transformer(
            d_model=WIDTH, nhead=HEADS, num_encoder_layers=LAYERS, num_decoder_layers=LAYERS,
            dim_feedforward=HIDDEN, dropout=0.0, activation=functools.partial(F.gelu, approximate="tanh"),
            batch_first=True, norm_first=True)
        self.head = torch.nn.Linear(WIDTH, VOCAB, bias=False)
        self.head.weight = token.weight
        causal = torch.full((SEQ, SEQ), float("-inf")).triu(1)
        self.register_buffer("causal", causal)

    def forward(self, source: torch.Tensor, target_in: torch.Tensor) -> torch.Tensor:
        padded = source == PAD  # [batch, S]: keys no attention reads
        y = self.transformer(self.source(source), self.target(target_in), tgt_mask=self.causal,
                             src_key_padding_mask=padded, memory_key_padding_mask=padded)
        return self.head(y)  # [batch, T, vocab]


def make_step(pairs_path: str) -> Callable[[], None]:
    """The model, optimizer and data of one training step, and the step."""
    model = Translator()
    model.train()
    print(f"# parameters {sum(p.numel() for p in model.parameters())}", flush=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0015, weight_decay=0.01)
    shard = PairShard(pairs_path)
    order = np.random.default_rng(1).permutation(shard.pairs)
    position = 0

    def step() -> None:
        nonlocal position
        if position + BATCH > len(order):
            position = 0
        source, target_in, targets = shard.batch(order[position:position + BATCH])
        position += BATCH
        optimizer.zero_grad(set_to_none=True)
        logits = model(source, target_in)
        loss = F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1), ignore_index=PAD)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pairs", default=PAIRS, help="the training pair shard")


if __name__ == "__main__":
    twin_timing.main(__doc__.splitlines()[0],
                     f"source/target {SEQ}, {LAYERS}+{LAYERS} pre-LN layers of width {WIDTH}, "
                     f"{HEADS} heads, vocabulary {VOCAB} (one tied matrix), AdamW, clip 1.0",
                     BATCH, lambda args: make_step(args.pairs), add_arguments)
