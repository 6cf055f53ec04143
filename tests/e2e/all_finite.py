#!/usr/bin/env python3
"""Exits 1 naming the first tensor of a safetensors file that holds a NaN or an infinity."""
import json
import math
import struct
import sys

path = sys.argv[1]
with open(path, "rb") as f:
    (header_len,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(header_len))
    data = f.read()
for name, info in header.items():
    if name == "__metadata__" or info["dtype"] != "F32":
        continue
    begin, end = info["data_offsets"]
    values = struct.unpack(f"<{(end - begin) // 4}f", data[begin:end])
    if not all(math.isfinite(v) for v in values):
        print(f"{path}: {name} is not finite")
        sys.exit(1)
print(f"{path}: all tensors finite")
