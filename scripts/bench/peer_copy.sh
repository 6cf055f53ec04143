#!/usr/bin/env bash
# What checkpoint.peer_copy costs a run (issue 34: at most 3% of the step): the same training on
# two hosts of tests/multihost/hosts.sh (network namespaces on this machine, node-local run
# directories, TCP between them), a checkpoint every EVERY steps, peer copies off and on, ROUNDS
# rounds interleaved. Prints each run's wall time (start-up and the final checkpoint included:
# the run waits for the final checkpoint's copies), the steps' own time (metrics.jsonl's windows:
# the periodic checkpoints and their overlapped copies in, start-up and the final checkpoint out),
# the median and range of each side, and the per-round ratios on / off, with the bytes a
# checkpoint copies. With MPIPE_BEFORE (another build of mpipe), each round also runs that binary with copies
# on, between the two, and prints its ratio too: a change measured against the code before it in
# one session, under the same load.
#
#   scripts/bench/peer_copy.sh      # as root (network namespaces), after building mpipe
#   MPIPE_BEFORE=/tmp/before/mpipe scripts/bench/peer_copy.sh
#
# Cases: configs/scaling_mlp.yaml at K=1, D=2 (one rank a host: replica 0's writer on h1 copies its
# shard to h2) and configs/gpt_kjv.yaml at K=2, D=1 (each rank's shard to the other host; only
# where runs/kjv holds scripts/data/kjv.sh's shards). Environment: ROUNDS (default 3), STEPS
# (default 200), EVERY (default 50), MPIPE_BIN (default build/release/apps/mpipe), MPIPE_BEFORE
# (default: none).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${ROUNDS:-3} steps=${STEPS:-200} every=${EVERY:-50}
export MPIPE=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x $MPIPE ]] || { echo "peer_copy.sh: $MPIPE is not an executable (build it)" >&2; exit 2; }
before=${MPIPE_BEFORE:-}
[[ -z $before || -x $before ]] ||
  { echo "peer_copy.sh: MPIPE_BEFORE=$before is not an executable" >&2; exit 2; }
after=$(realpath "$MPIPE")
[[ -n $before ]] && before=$(realpath "$before")
variants=(false true)
[[ -n $before ]] && variants=(false before true)
export MPIPE_MULTIHOST_BUDGET=$((rounds * ${#variants[@]} * 600))  # hosts.sh's own deadline
repo=$(pwd)
# shellcheck source=tests/multihost/hosts.sh
source tests/multihost/hosts.sh
start_hosts

cases=("scaling_mlp K=1 D=2|$repo/configs/scaling_mlp.yaml|--set pipeline.stages=1 --set pipeline.data_parallel=2")
if compgen -G "runs/kjv/train_*.bin" >/dev/null; then
  cases+=("gpt_kjv K=2 D=1|$repo/configs/gpt_kjv.yaml|--set pipeline.stages=2 --set pipeline.data_parallel=1 --set data.train=$repo/runs/kjv/train_*.bin --set data.val=$repo/runs/kjv/val_*.bin --set data.tokenizer=$repo/runs/kjv/tokenizer.model")
else
  echo "gpt_kjv: left out (runs/kjv has no shards: scripts/data/kjv.sh makes them)"
fi

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); mpipe $(git describe --always --dirty 2>/dev/null || echo '?')${before:+; before: $before}"
echo "two hosts (h1, h2) of tests/multihost/hosts.sh, one rank each, $steps steps, a checkpoint every $every, $rounds rounds interleaved"
echo "load before: $(uptime)"
# training_seconds RUN_DIR: the steps' wall time, from the first step's start to the last step's
# progress line, the periodic checkpoints (and their copies) between them included: the sum of
# metrics.jsonl's windows (window steps x batch / samples_per_s; the batch from summary.json).
# Start-up, the final checkpoint (whose copies the run must wait for) and the exit are left out.
training_seconds() {
  python3 - "$1" <<'PY'
import json, sys
run = sys.argv[1]
summary = json.load(open(f"{run}/summary.json"))
batch = round(summary["samples_per_s"] * summary["wall_time_s"] / summary["steps"])
rows = [json.loads(line) for line in open(f"{run}/metrics.jsonl")]
windows = [r for r in rows if "samples_per_s" in r and "step" in r]
total, before = 0.0, 0
for r in windows:
    total += (r["step"] - before) * batch / r["samples_per_s"]
    before = r["step"]
print(f"{total:.3f}")
PY
}
# median_range: reads numbers, prints "median (min-max)".
median_range() {
  sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.3f (%.3f-%.3f)", m, v[1], v[NR] }'
}
for c in "${!cases[@]}"; do
  IFS='|' read -r name config overrides <<<"${cases[c]}"
  read -ra extra <<<"$overrides"
  declare -A seconds=([false]="" [before]="" [true]="") training=([false]="" [before]="" [true]="")
  for ((r = 1; r <= rounds; ++r)); do
    for variant in "${variants[@]}"; do
      dir=case$c-$r-$variant copy=true MPIPE=$after
      [[ $variant == false ]] && copy=false
      [[ $variant == before ]] && MPIPE=$before
      start=$(date +%s.%N)
      on_hosts h1:1 h2:1 -- train "$config" --run-dir "$LOCAL/$dir" "${extra[@]}" \
        --set "train.steps=$steps" --set "checkpoint.every=$every" --set log.every=10 \
        --set "checkpoint.peer_copy=$copy" --set train.eval_every=0 > "$WORK/$dir.log" 2>&1 ||
        { cat "$WORK/$dir.log"; echo "peer_copy.sh: $name: run failed" >&2; exit 1; }
      seconds[$variant]+="$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }') "
      training[$variant]+="$(training_seconds "$WORK/h1/$dir") "
    done
  done
  MPIPE=$after
  # What one checkpoint copies: every shard the writers wrote (their own files, without copies).
  last=$(find "$WORK/h1/case$c-1-false/checkpoints" -mindepth 1 -maxdepth 1 -name 'step_*' -printf '%f\n' | sort | tail -n 1)
  copied=$(find "$WORK"/h[12]/case"$c"-1-false/checkpoints/"$last" -name 'stage_*.safetensors' \
    -printf '%s\n' | awk '{ s += $1 } END { printf "%.1f", s / 1e6 }')
  echo
  echo "=== $name ($config $overrides)"
  echo "  seconds a run, copies off: $(tr ' ' '\n' <<<"${seconds[false]}" | sed '/^$/d' | median_range)  runs: ${seconds[false]}"
  echo "  seconds a run, copies on:  $(tr ' ' '\n' <<<"${seconds[true]}" | sed '/^$/d' | median_range)  runs: ${seconds[true]}"
  ratios() {  # the per-round ratio of variant $1 to copies off
    paste <(tr ' ' '\n' <<<"${seconds[$1]}" | sed '/^$/d') \
      <(tr ' ' '\n' <<<"${seconds[false]}" | sed '/^$/d') | awk '{ print $1 / $2 }' | median_range
  }
  echo "  on / off by round: $(ratios true)"
  echo "  the steps' seconds (periodic checkpoints in; start-up and the final checkpoint out):"
  echo "    copies off: $(tr ' ' '\n' <<<"${training[false]}" | sed '/^$/d' | median_range)  runs: ${training[false]}"
  echo "    copies on:  $(tr ' ' '\n' <<<"${training[true]}" | sed '/^$/d' | median_range)  runs: ${training[true]}"
  training_ratios() {  # the per-round ratio of variant $1's steps to copies off
    paste <(tr ' ' '\n' <<<"${training[$1]}" | sed '/^$/d') \
      <(tr ' ' '\n' <<<"${training[false]}" | sed '/^$/d') | awk '{ print $1 / $2 }' | median_range
  }
  echo "    on / off by round: $(training_ratios true)"
  if [[ -n $before ]]; then
    echo "  before, copies on: $(tr ' ' '\n' <<<"${seconds[before]}" | sed '/^$/d' | median_range)  runs: ${seconds[before]}"
    echo "  before on / off by round: $(ratios before); the steps': $(training_ratios before)"
  fi
  echo "  a checkpoint's shards ($last): $copied MB, each copied once to the other host"
  unset seconds training
done
echo
echo "load after: $(uptime)"
passed=1  # (hosts.sh's teardown then removes its files)
