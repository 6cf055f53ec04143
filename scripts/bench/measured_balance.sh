#!/usr/bin/env bash
# pipeline.balance: measured against predicted when one rank of K = 2 is slow, on this 2-core
# machine (one core per rank, one thread each):
#   even            both ranks at full speed, balance: predicted (the throughput to recover)
#   slow/predicted  rank 1 slowed, the start-up partition kept
#   slow/measured   rank 1 slowed, re-partitioned after BALANCE_AFTER steps
# and, from the measured run's metrics.jsonl, its samples/s before and after the move side by
# side. Recovered = (measured - predicted) / (even - predicted) of the slow runs.
# SLOW=hook (default) slows rank 1 with the test hook MPIPE_TEST_SLOW_RANK=1:FACTOR (FACTOR 1.3:
# 30% slower); SLOW=busy instead pins a competing busy process to rank 1's core (about half of
# that core left to rank 1).
#   nice -n 19 scripts/bench/measured_balance.sh
# The default model, 24 x (Linear(512,512) + ReLU) + Linear(512,10) (written into the work folder),
# has layers fine enough for a partition near the balance point. (At K = 2 no partition
# recovers all that one slow rank costs: see docs/benchmarks.md for the bound.)
# Environment: CONFIG (that model), STEPS (40), EVERY (log.every, 4), BALANCE_AFTER (8), FACTOR
# (1.3), SLOW (hook or busy), MPIPE_BIN, MPIRUN.
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${STEPS:-40}
every=${EVERY:-4}
after=${BALANCE_AFTER:-8}
factor=${FACTOR:-1.3}
slow=${SLOW:-hook}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
mpirun=${MPIRUN:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
work=$(mktemp -d /tmp/measured-balance.XXXXXX)
busy_pid=
cleanup() {
  [[ -z $busy_pid ]] || kill "$busy_pid" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
config=${CONFIG:-$work/mlp24.yaml}
cat > "$work/mlp24.yaml" << 'YAML'
model:
  loss: cross_entropy
  layers:
    - repeat: 24
      layers: [{type: linear, units: 512}, {type: relu}]
    - {type: linear, units: 10}
data: {dataset: synthetic, num_examples: 2304, features: 512, classes: 10}
train: {steps: 40, batch_size: 256, seed: 1, eval_batches: 1}
optimizer: {kind: sgd, lr: 0.01}
pipeline: {stages: 2, micro_batches: 4, schedule: 1f1b, recompute: never}
checkpoint: {every: 0}
YAML

# run NAME SLOWED [--set ...]: trains K = 2 into $work/NAME, rank r bound to core r.
run() {
  local name=$1 slowed=$2
  shift 2
  local env=()
  if [[ $slowed == yes && $slow == hook ]]; then env=(-x "MPIPE_TEST_SLOW_RANK=1:$factor"); fi
  if [[ $slowed == yes && $slow == busy ]]; then
    taskset -c 1 bash -c 'while :; do :; done' &
    busy_pid=$!
  fi
  timeout 600 "$mpirun" -n 2 --bind-to core --map-by core "${env[@]}" "$bin" train "$config" \
    --run-dir "$work/$name" --set "train.steps=$steps" --set "log.every=$every" \
    --set pipeline.stages=2 "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
  if [[ -n $busy_pid ]]; then
    kill "$busy_pid"
    wait "$busy_pid" 2> /dev/null || true
    busy_pid=
  fi
}

measured=(--set pipeline.balance=measured --set "pipeline.balance_after=$after")
run even no
run slow-predicted yes
run slow-measured yes "${measured[@]}"
grep -hE "re-partitioned|kept \[" "$work/slow-measured.log" | sed 's/^.*\] //' || true
python3 - "$work" "$after" "$every" << 'PY'
import json, sys
work, after, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def windows(name):
    with open(f"{work}/{name}/metrics.jsonl") as f:
        return [r for r in map(json.loads, f) if "samples_per_s" in r]

def rate(records):  # total samples / total time of the windows (harmonic mean)
    return len(records) / sum(1.0 / r["samples_per_s"] for r in records) if records else float("nan")

after_first = {n: rate(windows(n)[1:]) for n in ("even", "slow-predicted", "slow-measured")}
history = json.load(open(f"{work}/slow-measured/summary.json"))["partition_history"]
print(f"partitions: {' -> '.join(str(h['partition']) for h in history)}")
for name, value in after_first.items():
    per_window = " ".join(f"{r['samples_per_s']:.0f}" for r in windows(name))
    print(f"{name:15s} {value:8.1f} samples/s (windows after the first; each: {per_window})")
measured = windows("slow-measured")
before = rate([r for r in measured[1:] if r["step"] <= after])
moved = rate([r for r in measured if r["step"] > after + every])
print(f"slow-measured, side by side: {before:.1f} samples/s before the move (steps {every + 1}-{after}), "
      f"{moved:.1f} after it (steps {after + every + 1}-)")
lost = after_first["even"] - after_first["slow-predicted"]
if lost > 0:
    print(f"recovered {100 * (after_first['slow-measured'] - after_first['slow-predicted']) / lost:.0f}% "
          f"of the {lost:.1f} samples/s lost")
PY
