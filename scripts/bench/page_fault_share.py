#!/usr/bin/env python3
"""The share of a training run's steps spent in the kernel's page-fault handling, from perf.

Reads `perf record -g` data of an mpipe run: the steps are the span from the first to the last
sample inside Trainer::step; prints the share of that span's samples whose call chain passes
through exc_page_fault, over the whole span and after its first SKIP fraction (the first steps,
which touch the heap for the first time).

  perf record -g -F 499 -o run.perf.data build/release/apps/mpipe train ...
  scripts/bench/page_fault_share.py run.perf.data [SKIP, default 0.1]
"""
import subprocess
import sys


def main():
    data = sys.argv[1]
    skip = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
    out = subprocess.run(["perf", "script", "-i", data, "-F", "time,ip,sym"], check=True,
                         capture_output=True, text=True).stdout
    blocks = [b for b in out.split("\n\n") if b.strip()]
    samples = [(float(b.split("\n")[0].strip().rstrip(":")), "exc_page_fault" in b,
                "Trainer::step" in b) for b in blocks]
    in_steps = [t for t, _, step in samples if step]
    if not in_steps:
        sys.exit(f"{data}: no sample inside Trainer::step (recorded without -g?)")
    first, last = min(in_steps), max(in_steps)
    print(f"{data}: {len(samples)} samples, {sum(f for _, f, _ in samples)} in page faults; "
          f"steps {last - first:.2f} s")
    for start_fraction in (0.0, skip):
        start = first + (last - first) * start_fraction
        window = [fault for t, fault, _ in samples if start <= t <= last]
        print(f"  steps after their first {start_fraction:.0%}: {len(window)} samples, "
              f"{sum(window)} in page faults ({100 * sum(window) / max(len(window), 1):.2f}%)")


if __name__ == "__main__":
    main()
