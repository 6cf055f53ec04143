#!/usr/bin/env python3
"""Every partition of a model into K x 2 chunks' stages, planned: how the partitions that tie on
the slowest rank, and on the slowest stage, simulate, against the one `pipeline.partition: auto`
takes (docs/design/planner.md, "Partitioner").

Usage: scripts/bench/partition_ties.py CONFIG K SCHEDULE M [mpipe plan options...]
  e.g. scripts/bench/partition_ties.py configs/scaling_mlp.yaml 2 zbv 4
SCHEDULE is zbv or interleaved (2 chunks a rank); the plan is at the assumed rates (the rates
the planner chooses at), for $OMP_NUM_THREADS threads. Binary: $MPIPE (build/release/apps/mpipe).
"""
import itertools
import json
import os
import subprocess
import sys


def plan(command, extra=()):
    out = subprocess.run(command + list(extra), capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


def main():
    if len(sys.argv) < 5 or sys.argv[3] not in ("zbv", "interleaved"):
        sys.exit(__doc__)
    config, num_ranks, schedule, micro_batches = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    command = [os.environ.get("MPIPE", "build/release/apps/mpipe"), "plan", config,
               "--set", f"pipeline.stages={num_ranks}", "--set", f"pipeline.schedule={schedule}",
               "--set", f"pipeline.micro_batches={micro_batches}", "--set", "pipeline.virtual_stages=2",
               "--assumed-rates", "--json"] + sys.argv[5:]
    stages = 2 * num_ranks
    if schedule == "zbv":  # rank r holds stages r and 2K-1-r
        ranks = [(r, stages - 1 - r) for r in range(num_ranks)]
    else:  # rank r holds stages r and r+K
        ranks = [(r, r + num_ranks) for r in range(num_ranks)]
    auto = plan(command)
    if auto is None:
        sys.exit(f"mpipe plan failed: {' '.join(command)}")
    num_layers = auto["num_layers"]
    rows = []  # (step, slowest rank, slowest stage, counts)
    for cuts in itertools.combinations(range(1, num_layers), stages - 1):
        bounds = (0,) + cuts + (num_layers,)
        counts = [bounds[i + 1] - bounds[i] for i in range(stages)]
        d = plan(command, ["--set", "pipeline.partition=[%s]" % ",".join(map(str, counts))])
        if d is None:  # (over a memory limit)
            continue
        times = [s["compute_s"] + s.get("optimizer_s", 0.0) for s in d["stage_plans"]]
        rows.append((d["step_s"], max(times[a] + times[b] for a, b in ranks), max(times), counts))
    ms = lambda s: f"{s * 1e3:.1f}"  # noqa: E731
    print(f"{config}: K = {num_ranks}, {schedule}, M = {micro_batches}, {len(rows)} partitions")
    print(f"  auto: {ms(auto['step_s'])} ms")
    for name, column in (("slowest rank", 1), ("slowest stage", 2)):
        best = min(r[column] for r in rows)
        ties = sorted(r for r in rows if r[column] <= best * (1 + 1e-9))
        print(f"  tied on the {name} ({ms(best)} ms of compute): {len(ties)}, steps "
              f"{ms(ties[0][0])}-{ms(ties[-1][0])} ms, the fastest {ties[0][3]}")
    fastest = min(rows)
    print(f"  fastest of all: {ms(fastest[0])} ms {fastest[3]}")


if __name__ == "__main__":
    main()
