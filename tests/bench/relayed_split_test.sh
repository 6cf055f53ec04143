#!/usr/bin/env bash
# translate_speed.sh's step split (scripts/bench/relayed_split.py) on a made-up K=2 plan, trace
# and bench_comm table: the relayed tensors' bytes, share and transfer time per rank, and a trace
# whose bytes disagree with the plan's live set refused.
set -euo pipefail
split=$(dirname "$0")/../../scripts/bench/relayed_split.py
work=$(mktemp -d /tmp/relayed-split-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The translation model's cut at K=2: the main stream, the source ids, the memory and the skip y;
# batch 32 in 4 micro-batches of 8 rows. Rank 0 sends 4 x 788480 bytes forward, rank 1 4 x
# 786432 bytes of gradient back (SENT_SCALE scales rank 0's, to break the agreement).
write_fixture() {
  python3 - "$work" "$1" <<'PY'
import json, sys
work, scale = sys.argv[1], float(sys.argv[2])
live = [{"name": "layers.39", "shape": [64, 128], "needs_grad": True},
        {"name": "source", "shape": [64], "needs_grad": False},
        {"name": "memory", "shape": [64, 128], "needs_grad": True},
        {"name": "y", "shape": [64, 128], "needs_grad": True}]
plan = {"stages": 2, "virtual_stages": 1, "data_parallel": 1, "batch_size": 32,
        "micro_batch_rows": 8, "micro_batches": 4, "schedule": "1f1b", "recompute": "never",
        "cuts": [{"before_layer": 40, "bytes_per_example": 98560, "grad_bytes_per_example": 98304,
                  "live": live}]}
json.dump(plan, open(f"{work}/plan.json", "w"))
events = []
def x(pid, tid, name, ts, dur, **args):
    events.append({"ph": "X", "pid": pid, "tid": tid, "name": name, "ts": ts, "dur": dur,
                   "args": {"step": 5, "micro_batch": 0, "chunk": 0, **args}})
# Rank 0: 4 forwards (10 ms each) and sends, waits 20 ms, 4 backwards (20 ms each, a nested
# recompute inside the first), the optimizer (5 ms): compute 125 ms, waiting 20 ms, span 145 ms.
for m in range(4):
    x(0, 0, f"F{m}", 10e3 * m, 10e3)
    x(0, 1, f"SA{m}", 10e3 * (m + 1), 1, bytes=int(788480 * scale))
x(0, 1, "RG0", 40e3, 20e3, bytes=786432)
x(0, 0, "R0", 60e3, 5e3)
for m in range(4):
    x(0, 0, f"B{m}", 60e3 + 20e3 * m, 20e3)
x(0, 0, "optimizer", 140e3, 5e3)
# Rank 1: waits 10 ms, then F and B of each micro-batch (30 ms) and sends its gradient, the
# optimizer (5 ms) and the loss allreduce (5 ms): compute 125 ms, waiting 15 ms, span 140 ms.
x(1, 1, "RA0", 0, 10e3, bytes=788480)
for m in range(4):
    x(1, 0, f"F{m}", 10e3 + 30e3 * m, 10e3)
    x(1, 0, f"B{m}", 20e3 + 30e3 * m, 20e3)
    x(1, 1, f"SG{m}", 40e3 + 30e3 * m, 1, bytes=786432)
x(1, 0, "optimizer", 130e3, 5e3)
x(1, 1, "loss allreduce", 135e3, 5e3)
events.append({"ph": "i", "pid": 0, "tid": 1, "name": "SA0 done", "ts": 11e3, "args": {"step": 5}})
json.dump({"traceEvents": events}, open(f"{work}/trace.json", "w"))
# Two runs of bench_comm's table: the fastest per size counts (8 GB/s at 1 MiB).
with open(f"{work}/comm.log", "w") as f:
    for rate in (4.0, 8.0):
        f.write("transfer time by message size (one way, half a ping-pong):\n")
        f.write("       bytes           us         GB/s\n")
        f.write(f"       65536         12.0         {rate / 2:.2f}\n")
        f.write(f"     1048576        131.1         {rate:.2f}\n\n")
PY
}

write_fixture 1
python3 "$split" "$work/plan.json" "$work" "$work/comm.log" > "$work/out" ||
  { cat "$work/out"; echo "FAILED: relayed_split.py refused a consistent trace"; exit 1; }
cat "$work/out"
# expect LINE_PATTERN: the output has a line matching it.
expect() {
  grep -qE "$1" "$work/out" || { echo "FAILED: no line matching: $1"; exit 1; }
}
# Rank 0 relays the source ids and the memory: 32 x (256 + 32768) bytes of 32 x 98560, 0.132 ms
# at 8 GB/s, 0.091% of its 145 ms; rank 1 the memory's gradient: 32 x 32768 of 32 x 98304.
expect '^ +0 +125\.0 +20\.0 +145\.0 +3\.15 +1\.06 +33\.5% +8\.00 +0\.132 +0\.091%$'
expect '^ +1 +125\.0 +15\.0 +140\.0 +3\.15 +1\.05 +33\.3% +8\.00 +0\.131 +0\.094%$'
expect '^39\|40 +layers\.39 \[64, 128\] 32768 g, \*source \[64\] 256, \*memory \[64, 128\] 32768 g, y \[64, 128\] 32768 g$'

write_fixture 0.5
if python3 "$split" "$work/plan.json" "$work" "$work/comm.log" > "$work/out" 2>&1; then
  echo "FAILED: relayed_split.py accepted a trace whose bytes disagree with the plan"; exit 1
fi
expect "^rank 0: the trace's 1576960 bytes per step != the plan's 3153920$"
echo "relayed_split: relayed shares and times as computed by hand; a disagreeing trace refused"
