#!/usr/bin/env python3
"""Writes an edited copy of a safetensors file (the standard library only), for the tests that
feed mpipe a weights file that does not fit.

  safetensors_edit.py IN OUT drop NAME        leaves the tensor NAME out
  safetensors_edit.py IN OUT copy NAME NEW    adds a copy of NAME named NEW
  safetensors_edit.py IN OUT dtype NAME TYPE  relabels NAME's dtype (its bytes unchanged)
  safetensors_edit.py IN OUT nan NAME         puts a NaN first in NAME
"""
import json
import struct
import sys

source, target, command, name = sys.argv[1:5]
with open(source, "rb") as f:
    (header_len,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(header_len))
    data = f.read()
metadata = header.pop("__metadata__", None)
tensors = {n: bytearray(data[i["data_offsets"][0]:i["data_offsets"][1]]) for n, i in header.items()}
order = sorted(header, key=lambda n: header[n]["data_offsets"][0])
if command == "drop":
    order.remove(name)
elif command == "copy":
    new = sys.argv[5]
    header[new] = dict(header[name])
    tensors[new] = bytearray(tensors[name])
    order.append(new)
elif command == "dtype":
    header[name]["dtype"] = sys.argv[5]
elif command == "nan":
    tensors[name][0:4] = struct.pack("<f", float("nan"))
else:
    sys.exit(f"unknown command {command}")
out_header = {} if metadata is None else {"__metadata__": metadata}
offset = 0
for n in order:
    out_header[n] = dict(header[n], data_offsets=[offset, offset + len(tensors[n])])
    offset += len(tensors[n])
text = json.dumps(out_header).encode()
text += b" " * (-len(text) % 8)
with open(target, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(tensors[n] for n in order))
