#!/usr/bin/env python3
"""Where a pipelined run's step went, rank by rank, and what the relayed tensors cost.

From `mpipe plan --json` (each cut's live set), the run's trace.json (log.trace_steps) and
bench_comm's transfer-time table: per rank (= stage; data_parallel 1), over the traced steps,
the mean compute (F, B, W and optimizer events; a B's nested R is inside it), waiting (RA, RG,
allreduce and loss allreduce) and step; the bytes it sent per step (SA and SG events), the part
of them that are relayed tensors (live tensors named in RELAYED: inputs and memories carried
beside the main stream to a later stage, and the gradients of those that have one), their share,
and an estimate of the relayed bytes' transfer time: bytes / the rate bench_comm measured at the
size nearest a whole message (a micro-batch's payload; the fastest where COMM_LOG holds several
tables). Then each cut's live set: name, shape,
bytes per example, relayed or not.

    python3 scripts/bench/relayed_split.py PLAN_JSON RUN_DIR COMM_LOG [RELAYED=source,target_in,memory]
"""
import json
import math
import re
import sys
from collections import defaultdict

COMPUTE = re.compile(r"^(F|B|W)\d*$|^optimizer$")
WAITING = re.compile(r"^(RA|RG)\d+$|^(loss )?allreduce$")


def transfer_rates(comm_log: str) -> list[tuple[int, float]]:
    """(bytes, GB/s) of bench_comm's "transfer time by message size" tables, the fastest of each
    size where the log holds several (other jobs only ever slow a ping-pong down)."""
    best: dict[int, float] = {}
    with open(comm_log) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and all(re.fullmatch(r"[0-9.]+", p) for p in parts):
                best[int(parts[0])] = max(best.get(int(parts[0]), 0.0), float(parts[2]))
    if not best:
        sys.exit(f"{comm_log}: no transfer-time table (bench_comm's output)")
    return sorted(best.items())


def rate_at(rates: list[tuple[int, float]], size: float) -> float:
    """GB/s at the table's size nearest `size` (on a log scale)."""
    return min(rates, key=lambda r: abs(math.log(r[0]) - math.log(max(size, 1))))[1]


def cut_bytes(cut: dict, relayed: set[str]) -> dict[str, float]:
    """A cut's bytes per example: forward and gradient, all and relayed."""
    elements = [math.prod(t["shape"]) for t in cut["live"]]
    per_element = cut["bytes_per_example"] / sum(elements)
    out = defaultdict(float)
    for t, n in zip(cut["live"], elements):
        b = n * per_element
        out["fwd"] += b
        out["grad"] += b if t["needs_grad"] else 0.0
        if t["name"] in relayed:
            out["fwd_relayed"] += b
            out["grad_relayed"] += b if t["needs_grad"] else 0.0
    if abs(out["grad"] - cut["grad_bytes_per_example"]) > 0.5:
        sys.exit(f"cut before layer {cut['before_layer']}: gradient bytes {out['grad']} != the plan's "
                 f"{cut['grad_bytes_per_example']}")
    return out


def main() -> None:
    if len(sys.argv) not in (4, 5):
        sys.exit("usage: relayed_split.py PLAN_JSON RUN_DIR COMM_LOG [RELAYED]")
    with open(sys.argv[1]) as f:
        plan = json.load(f)
    with open(f"{sys.argv[2]}/trace.json") as f:
        trace = json.load(f)
    rates = transfer_rates(sys.argv[3])
    relayed = set((sys.argv[4] if len(sys.argv) == 5 else "source,target_in,memory").split(","))
    if plan["data_parallel"] != 1 or plan["virtual_stages"] != 1:
        sys.exit("relayed_split.py: needs data_parallel 1 and virtual_stages 1")
    stages, batch, rows = plan["stages"], plan["batch_size"], plan["micro_batch_rows"]
    cuts = [cut_bytes(c, relayed) for c in plan["cuts"]]

    compute, waiting, sent = defaultdict(float), defaultdict(float), defaultdict(float)
    span, steps = defaultdict(lambda: [math.inf, -math.inf]), set()
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        rank, name, step = e["pid"], e["name"], e["args"]["step"]
        if COMPUTE.match(name):
            compute[rank] += e["dur"] / 1e3
        elif WAITING.match(name):
            waiting[rank] += e["dur"] / 1e3
        elif name.startswith(("SA", "SG")):
            sent[rank] += e["args"]["bytes"]
        else:
            continue  # R (inside a B), checkpoint, evaluation
        steps.add(step)
        span[(rank, step)][0] = min(span[(rank, step)][0], e["ts"])
        span[(rank, step)][1] = max(span[(rank, step)][1], e["ts"] + e["dur"])
    n = len(steps)
    print(f"K={stages}, M={plan['micro_batches']} ({rows} rows each), batch {batch}, "
          f"{plan['schedule']}, recompute {plan['recompute']}; traced steps {sorted(steps)}; ms per step")
    print(f"{'rank':>4} {'compute':>9} {'waiting':>9} {'step':>9} {'sent MB':>9} {'relayed MB':>11} "
          f"{'share':>7} {'GB/s':>6} {'relayed ms':>11} {'of step':>8}")
    for s in range(stages):
        fwd = cuts[s] if s < stages - 1 else defaultdict(float)
        back = cuts[s - 1] if s > 0 else defaultdict(float)
        planned = batch * (fwd["fwd"] + back["grad"])
        if abs(planned - sent[s] / n) > 0.5:
            sys.exit(f"rank {s}: the trace's {sent[s] / n:.0f} bytes per step != the plan's {planned:.0f}")
        rel = batch * (fwd["fwd_relayed"] + back["grad_relayed"])
        message = rows * max(fwd["fwd"], back["grad"])
        rate = rate_at(rates, message)
        rel_ms = rel / (rate * 1e9) * 1e3
        step = sum(b - a for (r, _), (a, b) in span.items() if r == s) / n / 1e3
        print(f"{s:>4} {compute[s] / n:9.1f} {waiting[s] / n:9.1f} {step:9.1f} {planned / 1e6:9.2f} "
              f"{rel / 1e6:11.2f} {rel / planned if planned else 0:7.1%} {rate:6.2f} {rel_ms:11.3f} "
              f"{rel_ms / step if step else 0:8.3%}")
    print("cut      live set (bytes per example; * relayed, g: has a gradient)")
    for c in plan["cuts"]:
        elements = [math.prod(t["shape"]) for t in c["live"]]
        per_element = c["bytes_per_example"] / sum(elements)
        live = ", ".join(f"{'*' if t['name'] in relayed else ''}{t['name']} {t['shape']} "
                         f"{k * per_element:.0f}{' g' if t['needs_grad'] else ''}"
                         for t, k in zip(c["live"], elements))
        print(f"{c['before_layer'] - 1}|{c['before_layer']:<5} {live}")


if __name__ == "__main__":
    main()
