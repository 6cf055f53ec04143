#!/usr/bin/env python3
"""Prints the training throughput (samples/s) of an mpipe run directory, from its metrics.jsonl.

Skips the first logged window (warm-up: oneDNN primitive creation, first memory touches) and
combines the rest as total samples / total time, i.e. the harmonic mean of the windows'
samples/s (each window covers log.every steps).

    python3 scripts/bench/throughput.py RUN_DIR
"""
import json
import sys


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: throughput.py RUN_DIR")
    with open(f"{sys.argv[1]}/metrics.jsonl") as f:
        records = [json.loads(line) for line in f if line.strip()]
    rates = [r["samples_per_s"] for r in records if "samples_per_s" in r][1:]
    if not rates:
        sys.exit(f"{sys.argv[1]}: need at least two logged windows "
                 "(raise train.steps or lower log.every)")
    print(f"{len(rates) / sum(1.0 / r for r in rates):.1f}")


if __name__ == "__main__":
    main()
