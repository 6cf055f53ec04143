#!/usr/bin/env python3
"""Writes a small classification data set as a safetensors file, with the standard library only
(as numpy's tobytes() would lay it out): `inputs` [rows, 8] U8 and `targets` [rows] I64, the
label of a row being which of its first two bytes are above 127 (4 classes).

  write_tensors.py OUT [ROWS] [VARIANT]

VARIANT makes a file the tensors dataset must refuse: no_targets, f16_inputs, short_targets,
negative_label, fractional_label (F32 targets holding 1.5).
"""
import json
import random
import struct
import sys

out = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 320
variant = sys.argv[3] if len(sys.argv) > 3 else ""
rng = random.Random(7)
inputs = bytes(rng.randrange(256) for _ in range(rows * 8))
labels = [(inputs[8 * r] > 127) + 2 * (inputs[8 * r + 1] > 127) for r in range(rows)]
tensors = {"inputs": ("U8", [rows, 8], inputs)}
if variant == "f16_inputs":
    tensors["inputs"] = ("F16", [rows, 4], inputs)
if variant == "short_targets":
    labels = labels[:-1]
if variant == "negative_label":
    labels[3] = -1
if variant == "fractional_label":
    tensors["targets"] = ("F32", [rows], struct.pack(f"<{rows}f", *labels[:2], 1.5, *labels[3:]))
elif variant != "no_targets":
    tensors["targets"] = ("I64", [len(labels)], struct.pack(f"<{len(labels)}q", *labels))
header, offset = {}, 0
for name, (dtype, shape, data) in tensors.items():
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
    offset += len(data)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(d for _, _, d in tensors.values()))
