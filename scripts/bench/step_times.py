#!/usr/bin/env python3
"""Where each rank's step time went, from an mpipe log at log.level: debug (or trace).

Prints one line per (pipeline rank, replica): the mean compute, waiting, sending, allreduce and step
time in ms over the steps after the first SKIP (warm-up).

    python3 scripts/bench/step_times.py LOG [SKIP=3]
"""
import re
import sys
from collections import defaultdict

FIELDS = ("compute", "waiting", "sending", "allreduce", "step")


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: step_times.py LOG [SKIP]")
    skip = int(sys.argv[2]) if len(sys.argv) == 3 else 3
    line_re = re.compile(r"\[debug\] step (\d+) pipeline rank (\d+) replica (\d+): (.*)")
    sums = defaultdict(lambda: defaultdict(float))
    counts = defaultdict(int)
    with open(sys.argv[1]) as f:
        for line in f:
            m = line_re.search(line)
            if not m or int(m.group(1)) <= skip:
                continue
            key = (int(m.group(2)), int(m.group(3)))
            counts[key] += 1
            for field in FIELDS:
                sums[key][field] += float(re.search(field + r" ([0-9.]+) ms", m.group(4)).group(1))
    if not counts:
        sys.exit(f"{sys.argv[1]}: no step times after step {skip} (log.level: debug)")
    for (rank, replica), n in sorted(counts.items()):
        values = " | ".join(f"{f} {sums[(rank, replica)][f] / n:7.2f}" for f in FIELDS)
        print(f"pipeline rank {rank} replica {replica}: {values} ms (mean of {n} steps)")


if __name__ == "__main__":
    main()
