#!/usr/bin/env python3
"""Edits a checkpoint the way an adversary would, computing its checksums independently of mpipe.

Usage:
  checkpoint_edit.py checksum META          prints the manifest checksum of META's content
  checkpoint_edit.py set META KEY JSON      sets META's KEY to the JSON value (checksum kept)
  checkpoint_edit.py drop META KEY          removes META's KEY (checksum kept)
  checkpoint_edit.py seal META              recomputes META's manifest_crc32
  checkpoint_edit.py nan META STAGE         puts a NaN first in the last tensor of shard STAGE,
                                            records its new crc32 in META, reseals META, and
                                            prints the tensor's name
  checkpoint_edit.py rename META STAGE OLD NEW
                                            renames tensor OLD of shard STAGE to NEW in its
                                            header, records the shard's new size and crc32 in
                                            META, and reseals META
  checkpoint_edit.py reshape META STAGE NAME SHAPE
                                            gives tensor NAME of shard STAGE the shape SHAPE (a
                                            JSON list of as many values), likewise
"""
import json
import os
import struct
import sys
import zlib

KEY = "manifest_crc32"


def checksum(meta):
    content = {k: v for k, v in meta.items() if k != KEY}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{zlib.crc32(text.encode()):08x}"


def poison_last_tensor(path):
    with open(path, "r+b") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        name, info = max(
            ((n, i) for n, i in header.items() if n != "__metadata__"),
            key=lambda item: item[1]["data_offsets"][0],
        )
        f.seek(8 + header_len + info["data_offsets"][0])
        f.write(struct.pack("<f", float("nan")))
    with open(path, "rb") as f:
        return name, f"{zlib.crc32(f.read()):08x}"


def edit_header(path, change):
    """Applies `change` to the header of safetensors file `path`; returns its new size and crc32."""
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        data = f.read()
    change(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    content = struct.pack("<Q", len(text)) + text + data
    with open(path, "wb") as f:
        f.write(content)
    return len(content), f"{zlib.crc32(content):08x}"


def rename(header, old, new):
    header[new] = header.pop(old)


def reshape(header, name, shape):
    header[name]["shape"] = shape


command, meta_path = sys.argv[1], sys.argv[2]
with open(meta_path) as f:
    meta = json.load(f)
if command == "checksum":
    print(checksum(meta))
    sys.exit(0)
if command == "set":
    meta[sys.argv[3]] = json.loads(sys.argv[4])
elif command == "drop":
    del meta[sys.argv[3]]
elif command == "seal":
    meta[KEY] = checksum(meta)
elif command == "nan":
    stage = int(sys.argv[3])
    shard = os.path.join(os.path.dirname(meta_path), f"stage_{stage}.safetensors")
    name, crc = poison_last_tensor(shard)
    meta["shards"][stage]["crc32"] = crc
    meta[KEY] = checksum(meta)
    print(name)
elif command in ("rename", "reshape"):
    stage = int(sys.argv[3])
    shard = os.path.join(os.path.dirname(meta_path), f"stage_{stage}.safetensors")
    if command == "rename":
        size, crc = edit_header(shard, lambda h: rename(h, sys.argv[4], sys.argv[5]))
    else:
        size, crc = edit_header(shard, lambda h: reshape(h, sys.argv[4], json.loads(sys.argv[5])))
    meta["shards"][stage]["size"] = size
    meta["shards"][stage]["crc32"] = crc
    meta[KEY] = checksum(meta)
else:
    sys.exit(f"unknown command {command}")
with open(meta_path, "w") as f:
    json.dump(meta, f, indent=2)
