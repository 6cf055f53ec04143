#!/usr/bin/env python3
"""Where a step's time goes on each rank, from k2_account.sh's runs (issue 36: K = 2 against K = 1).

For each run name, over its rounds: samples/s (median [range]); per rank the step's compute,
waiting, sending and the rest (loss allreduce, finiteness check, optimizer), from the debug
lines; each op kind's count per step, mean time and GFLOP/s at the rows it runs, from the trace
lines; and what perf stat counted per step (CPU time, page faults, context switches, migrations),
as the difference of a long and a short run of the same configuration. The model is
configs/scaling_mlp.yaml's: layer i < 16 is a Linear(1024, 1024) when i is even (ReLU when odd),
layer 16 the Linear(1024, 10) head; a stage's flops follow from its layer counts (PARTITION).

    python3 scripts/bench/k2_account.py DIR NAME:K:SCHEDULE:PARTITION:ROWS:GROUP... [SKIP=3]

DIR holds NAME-rROUND-{short,long}/ (run.log, perf.RANK, metrics.jsonl). K: ranks; SCHEDULE
places a partition of more stages than ranks (zbv: a V, rank 0 holding the first and the last;
otherwise in turn); ROWS: a micro-batch's; GROUP: the micro-batches per grouped
weight-gradient product (WB ops).
"""
import json
import os
import re
import statistics
import sys
from collections import defaultdict

UNITS, HEAD_UNITS, BLOCKS = 1024, 10, 8


def linear_sizes(first: int, count: int) -> list:
    """(in, out) of each Linear among layers [first, first + count)."""
    sizes = []
    for layer in range(first, first + count):
        if layer == 2 * BLOCKS:
            sizes.append((UNITS, HEAD_UNITS))
        elif layer % 2 == 0:
            sizes.append((UNITS, UNITS))
    return sizes


def stage_flops(partition: list, rows: int) -> list:
    """Per global stage: (forward flops of one micro-batch, input-gradient flops of one)."""
    out, first = [], 0
    for count in partition:
        sizes = linear_sizes(first, count)
        forward = sum(2.0 * rows * i * o for i, o in sizes)
        # Layer 0's input (the data) needs no gradient.
        data_grad = sum(2.0 * rows * i * o for k, (i, o) in enumerate(sizes) if first + 2 * k != 0)
        out.append((forward, data_grad))
        first += count
    return out


def op_flops(kind: str, stage: int, flops: list, group: int) -> float:
    forward, data_grad = flops[stage]
    if kind == "F":
        return forward
    if kind == "B":
        return forward + data_grad
    if kind == "I":
        return data_grad
    if kind == "W":  # grouped: it copies its operands, the group's WB multiplies them
        return forward if group == 1 else 0.0
    if kind == "WB":
        return forward * group
    return 0.0


def perf_counts(path: str) -> dict:
    counts = {}
    with open(path) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[2]:
                try:
                    counts[fields[2]] = float(fields[0])
                except ValueError:
                    pass
    return counts


def steps_of(run_dir: str) -> int:
    with open(f"{run_dir}/run.log") as f:
        return int(re.search(r"train\.steps=(\d+)", f.readline()).group(1))


def parse_log(path: str, skip: int):
    """Per rank: the debug line's fields (summed over the steps after skip) and the number of
    steps counted; per (stage, op kind): each op's ms over those steps."""
    step_re = re.compile(r"\[debug\] step (\d+) pipeline rank (\d+) replica 0: (.*)")
    op_re = re.compile(r"\[trace\] step (\d+) stage (\d+): ([A-Z]+)[0-9.]* ([0-9.]+) ms")
    fields = defaultdict(lambda: defaultdict(float))
    steps = defaultdict(int)
    ops = defaultdict(list)  # (stage, kind) -> each op's ms
    with open(path) as f:
        for line in f:
            if m := op_re.search(line):
                if int(m.group(1)) > skip:
                    ops[(int(m.group(2)), m.group(3))].append(float(m.group(4)))
            elif m := step_re.search(line):
                if int(m.group(1)) > skip:
                    rank = int(m.group(2))
                    steps[rank] += 1
                    for name, value in re.findall(r"(\w+) ([0-9.]+) ms", m.group(3)):
                        fields[rank][name] += float(value)
    return fields, steps, ops


def fast(times: list) -> float:
    """The tenth-fastest percentile of an op's times: what it takes when nothing preempts it."""
    return sorted(times)[len(times) // 10]


def throughput(run_dir: str) -> float:
    with open(f"{run_dir}/metrics.jsonl") as f:
        rates = [r["samples_per_s"] for r in map(json.loads, f) if "samples_per_s" in r][1:]
    return len(rates) / sum(1.0 / r for r in rates)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    specs = [a for a in sys.argv[2:] if ":" in a]
    skip = int(sys.argv[-1]) if ":" not in sys.argv[-1] else 3
    rounds = sorted({int(m.group(1)) for d in os.listdir(out_dir)
                     if (m := re.search(r"-r(\d+)-long$", d))})
    rates = {}
    for spec in specs:
        name, k, schedule, partition, rows, group = spec.split(":")
        partition = [int(c) for c in partition.strip("[]").split(",")]
        k, rows, group = int(k), int(rows), int(group)
        flops = stage_flops(partition, rows)
        stage_rank = {s: (2 * k - 1 - s if schedule == "zbv" and s >= k else s % k)
                      for s in range(len(partition))}
        samples, per_rank = [], defaultdict(lambda: defaultdict(list))
        per_op = defaultdict(lambda: defaultdict(list))  # (rank, kind) -> ms/step, GF/s, count
        perf = defaultdict(lambda: defaultdict(list))
        for r in rounds:
            long_dir, short_dir = (f"{out_dir}/{name}-r{r}-{n}" for n in ("long", "short"))
            if not os.path.exists(f"{long_dir}/metrics.jsonl"):
                continue
            samples.append(throughput(long_dir))
            fields, steps, ops = parse_log(f"{long_dir}/run.log", skip)
            for rank in steps:
                for field, total in fields[rank].items():
                    per_rank[rank][field].append(total / steps[rank])
            n = max(steps.values())
            kinds = defaultdict(lambda: [0.0, 0, 0.0, 0.0])  # ms, count, flops, fast ms
            for (stage, kind), times in ops.items():
                entry = kinds[(stage_rank[stage], kind)]
                entry[0] += sum(times)
                entry[1] += len(times)
                entry[2] += len(times) * op_flops(kind, stage, flops, group)
                entry[3] += len(times) * fast(times)
            for (rank, kind), (ms, count, fl, fast_ms) in kinds.items():
                per_op[(rank, kind)]["ms"].append(ms / n)
                per_op[(rank, kind)]["fast_ms"].append(fast_ms / n)
                per_op[(rank, kind)]["count"].append(count / n)
                if fl > 0:
                    per_op[(rank, kind)]["gflops"].append(fl / (ms * 1e-3) * 1e-9)
                    per_op[(rank, kind)]["fast_gflops"].append(fl / (fast_ms * 1e-3) * 1e-9)
            extra_steps = steps_of(long_dir) - steps_of(short_dir)
            for rank in range(k):
                a = perf_counts(f"{long_dir}/perf.{rank}")
                b = perf_counts(f"{short_dir}/perf.{rank}")
                for event in a:
                    if event in b:
                        perf[rank][event].append((a[event] - b[event]) / extra_steps)
        if not samples:
            continue
        med = statistics.median
        rates[name] = med(samples)
        print(f"\n### {name}: partition {partition}, {rows} rows per micro-batch"
              + (f", weight gradients grouped by {group}" if group > 1 else ""))
        print(f"samples/s {med(samples):.0f} [{min(samples):.0f}-{max(samples):.0f}] over "
              f"{len(samples)} rounds; per step, medians of the rounds:")
        print("| rank | step ms | compute | waiting | sending | rest | CPU ms | faults | "
              "switches | migrations |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for rank in sorted(per_rank):
            f = {key: med(v) for key, v in per_rank[rank].items()}
            rest = f["step"] - f["compute"] - f["waiting"] - f["sending"]
            p = {key: med(v) for key, v in perf[rank].items()}
            print(f"| {rank} | {f['step']:.1f} | {f['compute']:.1f} | {f['waiting']:.1f} | "
                  f"{f['sending']:.1f} | {rest:.1f} | {p.get('task-clock', float('nan')):.1f} | "
                  f"{p.get('page-faults', float('nan')):.0f} | "
                  f"{p.get('context-switches', float('nan')):.1f} | "
                  f"{p.get('cpu-migrations', float('nan')):.2f} |")
        print("\n| rank | op | per step | ms per op | ms per step | GFLOP/s | fastest tenth: "
              "ms per op | ms per step | GFLOP/s |")
        print("|---|---|---|---|---|---|---|---|---|")
        order = "F I B W WB RA SA RG SG".split()
        compute = defaultdict(float)  # per rank, the compute ops' ms per step at the fastest tenth
        for rank, kind in sorted(per_op, key=lambda key: (key[0], order.index(key[1]))):
            v = per_op[(rank, kind)]
            count, ms, fast_ms = med(v["count"]), med(v["ms"]), med(v["fast_ms"])
            rate = f"{med(v['gflops']):.1f}" if v["gflops"] else ""
            fast_rate = f"{med(v['fast_gflops']):.1f}" if v["fast_gflops"] else ""
            if kind in ("F", "I", "B", "W", "WB"):
                compute[rank] += fast_ms
            print(f"| {rank} | {kind} | {count:.0f} | {ms / count:.3f} | {ms:.2f} | {rate} | "
                  f"{fast_ms / count:.3f} | {fast_ms:.2f} | {fast_rate} |")
        print("\ncompute per step at the fastest tenth: "
              + ", ".join(f"rank {r} {ms:.1f} ms" for r, ms in sorted(compute.items())))
    for name, rate in rates.items():
        if not name.endswith("k1-m1"):
            k1 = name[:name.index("k2-")] + "k1-m1"
            if k1 in rates:
                print(f"\n{name}: {rate / rates[k1]:.2f}x {k1} (medians {rate:.0f} / {rates[k1]:.0f})")

if __name__ == "__main__":
    main()
