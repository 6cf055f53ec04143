#!/usr/bin/env python3
"""Per-op times of a one-stage mpipe run logged at log.level: trace, for the calibrated simulator.

Prints three numbers in ms: the mean forward op (F<m>) and backward op (B<m>, its recompute
included) of one micro-batch over the whole stage, and the mean rest of a step (step time minus
compute: zeroing gradients, data, the loss allreduce, the optimizer update; plus the batched
weight gradients (WB) that run after the last backward, a per-step cost at the end of each stage
like the update), over the steps after the first SKIP (warm-up).

    python3 scripts/bench/op_times.py LOG [SKIP=3]
"""
import re
import sys


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: op_times.py LOG [SKIP]")
    skip = int(sys.argv[2]) if len(sys.argv) == 3 else 3
    op = re.compile(r"\[trace\] step (\d+) stage 0: ([FB])\d+ ([0-9.]+) ms")
    weight_grads = re.compile(r"\[trace\] step (\d+) stage 0: WB ([0-9.]+) ms")
    step = re.compile(
        r"\[debug\] step (\d+) pipeline rank 0 replica 0: compute ([0-9.]+) ms .*step ([0-9.]+) ms")
    times = {"F": [], "B": []}
    rest = []
    deferred = 0.0  # WB over the steps counted
    with open(sys.argv[1]) as f:
        for line in f:
            if m := op.search(line):
                if int(m.group(1)) > skip:
                    times[m.group(2)].append(float(m.group(3)))
            elif m := weight_grads.search(line):
                if int(m.group(1)) > skip:
                    deferred += float(m.group(2))
            elif m := step.search(line):
                if int(m.group(1)) > skip:
                    rest.append(float(m.group(3)) - float(m.group(2)))
    if not times["F"] or not times["B"] or not rest:
        sys.exit(f"{sys.argv[1]}: no trace op times after step {skip} (log.level: trace, K = 1)")
    mean = lambda v: sum(v) / len(v)
    print(f"{mean(times['F']):.4f} {mean(times['B']):.4f} {mean(rest) + deferred / len(rest):.4f}")


if __name__ == "__main__":
    main()
