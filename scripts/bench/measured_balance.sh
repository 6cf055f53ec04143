#!/usr/bin/env bash
# pipeline.balance: measured against predicted when one rank of K is slow, three runs per round,
# interleaved round by round:
#   even            every rank at full speed, balance: predicted (the throughput to recover)
#   slow/predicted  one rank slowed, the start-up partition kept
#   slow/measured   the same rank slowed, re-partitioned after BALANCE_AFTER steps
# Each run's samples/s is taken over the same steps, those after the window in which the measured
# run moved its layers; recovered = (measured - predicted) / (even - predicted). The measured
# run's windows before and after its move are printed side by side.
# SLOW=hook (default) slows the rank with the test hook MPIPE_TEST_SLOW_RANK=RANK:FACTOR (FACTOR
# 1.3: 30% slower); SLOW=busy instead pins a competing busy process to the rank's first core.
#   nice -n 19 scripts/bench/measured_balance.sh                        # K = 2 on 2 cores
#   STAGES=8 THREADS=2 BLOCKS=256 BATCH=1024 MICRO=16 ROUNDS=3 \
#     bash .portable/run.sh scripts/bench/measured_balance.sh           # a 16-core machine
# The model, BLOCKS x (Linear(WIDTH,WIDTH) + ReLU) + Linear(WIDTH,10) (written into the work
# folder), has layers fine enough for a partition near the balance point. With one rank f times
# slower and layers of no size, the best partition recovers (K - 1) / K of the loss, whatever f:
# half at K = 2, 87.5% at K = 8 (docs/benchmarks.md).
# Environment: STAGES (2), THREADS (1, cores per rank), ROUNDS (1), BLOCKS (24), WIDTH (512), BATCH
# (256), MICRO (4), SCHEDULE (1f1b), CHUNKS (pipeline.virtual_stages, 1; 2 with SCHEDULE
# interleaved or zbv), STEPS (40), EVERY (log.every, 4), BALANCE_AFTER (8), FACTOR
# (1.3), SLOW (hook or busy), SLOW_RANK (the last), MPIPE_BIN, MPIRUN.
set -euo pipefail
cd "$(dirname "$0")/../.."
stages=${STAGES:-2}
threads=${THREADS:-1}
rounds=${ROUNDS:-1}
steps=${STEPS:-40}
every=${EVERY:-4}
after=${BALANCE_AFTER:-8}
factor=${FACTOR:-1.3}
slow=${SLOW:-hook}
slow_rank=${SLOW_RANK:-$((stages - 1))}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
mpirun=${MPIRUN:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=$threads
work=$(mktemp -d /tmp/measured-balance.XXXXXX)
busy_pid=
cleanup() {
  [[ -z $busy_pid ]] || kill "$busy_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
config=$work/mlp.yaml
cat >"$config" <<YAML
model:
  loss: cross_entropy
  layers:
    - repeat: ${BLOCKS:-24}
      layers: [{type: linear, units: ${WIDTH:-512}}, {type: relu}]
    - {type: linear, units: 10}
data: {dataset: synthetic, num_examples: $((9 * ${BATCH:-256})), features: ${WIDTH:-512}, classes: 10}
train: {steps: $steps, batch_size: ${BATCH:-256}, seed: 1, eval_batches: 1}
optimizer: {kind: sgd, lr: 0.01}
pipeline: {micro_batches: ${MICRO:-4}, schedule: ${SCHEDULE:-1f1b}, virtual_stages: ${CHUNKS:-1}, recompute: never}
checkpoint: {every: 0}
YAML
echo "K=$stages, $threads thread(s) per rank, rank $slow_rank slowed ($slow, factor $factor)," \
  "$(env -u OMP_NUM_THREADS nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# run NAME SLOWED [--set ...]: trains K ranks into $work/NAME, each on its own THREADS cores.
run() {
  local name=$1 slowed=$2
  shift 2
  local env=()
  if [[ $slowed == yes && $slow == hook ]]; then env=(-x "MPIPE_TEST_SLOW_RANK=$slow_rank:$factor"); fi
  if [[ $slowed == yes && $slow == busy ]]; then
    taskset -c $((slow_rank * threads)) bash -c 'while :; do :; done' &
    busy_pid=$!
  fi
  timeout 600 "$mpirun" -n "$stages" --map-by "slot:PE=$threads" --bind-to core "${env[@]}" "$bin" \
    train "$config" --run-dir "$work/$name" --set "train.steps=$steps" --set "log.every=$every" \
    --set "pipeline.stages=$stages" "$@" >"$work/$name.log" 2>&1 || {
    cat "$work/$name.log"
    exit 1
  }
  if [[ -n $busy_pid ]]; then
    kill "$busy_pid"
    wait "$busy_pid" 2>/dev/null || true
    busy_pid=
  fi
}

measured=(--set pipeline.balance=measured --set "pipeline.balance_after=$after")
for ((r = 1; r <= rounds; r++)); do
  run "even-$r" no
  run "slow-predicted-$r" yes
  run "slow-measured-$r" yes "${measured[@]}"
  grep -hE "re-partitioned|kept \[" "$work/slow-measured-$r.log" | sed "s/^.*\[info\] /round $r: /" || true
done
python3 - "$work" "$rounds" "$after" "$every" <<'PY'
import json, statistics, sys
work, rounds, after, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
first_after_move = after + every + 1  # the first step of the first window after the move's

def windows(name):
    with open(f"{work}/{name}/metrics.jsonl") as f:
        return [r for r in map(json.loads, f) if "samples_per_s" in r]

def rate(records):  # total samples / total time of the windows (harmonic mean)
    return len(records) / sum(1.0 / r["samples_per_s"] for r in records) if records else float("nan")

def steady(name):  # the windows after the move's (their first step >= first_after_move)
    return rate([r for r in windows(name) if r["step"] - every + 1 >= first_after_move])

runs = ("even", "slow-predicted", "slow-measured")
rates = {n: [] for n in runs}
recovered = []
for r in range(1, rounds + 1):
    row = {n: steady(f"{n}-{r}") for n in runs}
    for n in runs:
        rates[n].append(row[n])
    lost = row["even"] - row["slow-predicted"]
    share = 100 * (row["slow-measured"] - row["slow-predicted"]) / lost if lost > 0 else None
    if share is not None:
        recovered.append(share)
    history = json.load(open(f"{work}/slow-measured-{r}/summary.json"))["partition_history"]
    measured = windows(f"slow-measured-{r}")
    before = rate([w for w in measured[1:] if w["step"] <= after])
    print(f"round {r}: even {row['even']:.1f}, slow-predicted {row['slow-predicted']:.1f}, "
          f"slow-measured {row['slow-measured']:.1f} samples/s (steps {first_after_move}-); "
          + (f"recovered {share:.0f}%" if share is not None else "nothing lost to recover")
          + f"; the measured run {before:.1f} before its move (steps "
          f"{every + 1}-{after}), {row['slow-measured']:.1f} after; partitions "
          f"{' -> '.join(str(h['partition']) for h in history)}")
if rounds > 1:
    summary = ", ".join(f"{n} {statistics.median(v):.1f} [{min(v):.1f}-{max(v):.1f}]"
                        for n, v in rates.items())
    share = (f"recovered {statistics.median(recovered):.0f}% [{min(recovered):.0f}-"
             f"{max(recovered):.0f}%] of {len(recovered)} rounds that lost throughput"
             if recovered else "no round lost throughput")
    print(f"median [range] of {rounds} rounds: {summary} samples/s; {share}")
PY
