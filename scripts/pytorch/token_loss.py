#!/usr/bin/python3
"""Mean cross-entropy of an mpipe export on a token shard, computed in PyTorch.

    /usr/bin/python3 scripts/pytorch/token_loss.py WEIGHTS.safetensors SHARD.bin --seq-len T

The shard is llm.c's format (what `mpipe tokenize` writes); its windows of T + 1 tokens start every
T tokens, as mpipe's `dataset: tokens` cuts them (docs/config.md), and the loss is the mean over
every target of every window: the validation loss that mpipe reports for that shard when it
evaluates all of it. Prints the loss with 9 significant digits. `--config EXP.yaml` gives the model
of an export that does not carry it (mpipe_model.load).
"""
import argparse
import struct

import torch
import torch.nn.functional as F

import mpipe_model

TOKEN_MAGIC = {20240520: torch.int16, 20240801: torch.int32}  # uint16 and uint32 tokens


def read_shard(path: str) -> torch.Tensor:
    """The tokens of an llm.c shard (a header of 256 int32: magic, version, count), as int64."""
    with open(path, "rb") as f:
        magic, _, count = struct.unpack("<3i", f.read(12))
        f.seek(256 * 4)
        data = bytearray(f.read())
    if magic not in TOKEN_MAGIC:
        raise ValueError(f"{path}: not a token shard (magic {magic})")
    tokens = torch.frombuffer(data, dtype=TOKEN_MAGIC[magic])[:count].to(torch.int64)
    if TOKEN_MAGIC[magic] == torch.int16:
        tokens &= 0xFFFF  # int16 read as uint16
    return tokens


def shard_windows(path: str, t: int) -> torch.Tensor:
    """The windows [n, T + 1] of a token shard, in mpipe's example order (one every T tokens)."""
    tokens = read_shard(path)
    return torch.stack([tokens[s: s + t + 1] for s in range(0, len(tokens) - t, t)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("weights")
    parser.add_argument("shard")
    parser.add_argument("--seq-len", type=int, required=True)
    parser.add_argument("--config", help="the experiment YAML, for an export without its model")
    args = parser.parse_args()
    model = mpipe_model.load(args.weights, args.config)
    windows = shard_windows(args.shard, args.seq_len)
    with torch.no_grad():
        logits = model(windows[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1))
    print(f"{loss.item():.9g}")


if __name__ == "__main__":
    main()
