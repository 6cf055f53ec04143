#!/usr/bin/env bash
# The plan against measured steps at K = 1 (one process on core 0, the other core idle: the time
# model without the second rank's noise): scaling_mlp at M = 8 accumulating and grouped by 8, at
# M = 1, and its 24-block variant at M = 16 (batched), ROUNDS rounds interleaved, each cell's run
# followed by mpipe plan's quick and --calibrate predictions (and BEFORE's, an older binary, beside
# them). Measured step = 256 / the median of the run's windows after the first. Prints each
# round's numbers, then per cell the medians [range] and each prediction's error.
#
#   BEFORE=/path/to/old/mpipe scripts/bench/plan_k1.sh      # about 2 minutes at ROUNDS=3
#
# Environment: ROUNDS (3), STEPS (16), MPIPE_BIN, BEFORE.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${MPIPE_BIN:-build/release/apps/mpipe}
rounds=${ROUNDS:-3} steps=${STEPS:-16}
bins=("$bin" ${BEFORE:+"$BEFORE"})
export OMP_NUM_THREADS=1
work=$(mktemp -d /tmp/mpipe-plan-k1.XXXXXX)
trap 'rm -rf "$work"' EXIT
sed 's/repeat: 8$/repeat: 24/' configs/scaling_mlp.yaml >"$work/deep.yaml"
cells=("configs/scaling_mlp.yaml 8 pipeline.weight_grads=accumulate"
  "configs/scaling_mlp.yaml 8 pipeline.weight_grads=grouped pipeline.weight_group=8"
  "configs/scaling_mlp.yaml 1 pipeline.weight_grads=accumulate"
  "$work/deep.yaml 16 pipeline.weight_grads=batched")
echo "load before: $(uptime)"
echo "columns: cell round measured_ms, then per binary (${bins[*]}): quick_ms calibrate_ms"
for r in $(seq "$rounds"); do
  for i in "${!cells[@]}"; do
    read -r config m settings <<<"${cells[$i]}"
    sets=()
    for s in $settings; do sets+=(--set "$s"); done
    rm -rf "$work/run"
    taskset -c 0 "$bin" train "$config" --run-dir "$work/run" --set pipeline.stages=1 \
      --set pipeline.micro_batches="$m" "${sets[@]}" --set train.steps="$steps" \
      --set checkpoint.every=0 --set log.every=2 >"$work/run.log" 2>&1
    line="$i $r $(python3 -c 'import json, statistics, sys
windows = [json.loads(l) for l in open(sys.argv[1])]
rates = [w["samples_per_s"] for w in windows if "samples_per_s" in w][1:]
print("%.1f" % (256e3 / statistics.median(rates)))' "$work/run/metrics.jsonl")"
    for b in "${bins[@]}"; do
      for mode in quick --calibrate; do
        args=()
        [[ $mode == --calibrate ]] && args=(--calibrate)
        line+=" $(taskset -c 0 "$b" plan "$config" --stages 1 --micro-batches "$m" "${sets[@]}" \
          "${args[@]}" --json | python3 -c 'import json, sys
print("%.1f" % (1e3 * json.load(sys.stdin)["step_s"]))')"
      done
    done
    echo "$line" | tee -a "$work/rows"
  done
done
echo "load after: $(uptime)"
python3 - "$work/rows" "${cells[@]}" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for i, cell in enumerate(sys.argv[2:]):
    mine = [[float(x) for x in row[2:]] for row in rows if row[0] == str(i)]
    columns = list(zip(*mine))
    measured = statistics.median(columns[0])
    text = "%.1f [%.1f-%.1f]" % (measured, min(columns[0]), max(columns[0]))
    for c in columns[1:]:
        text += "  %.1f (%+.1f%%)" % (statistics.median(c), 100 * (statistics.median(c) / measured - 1))
    print("cell %d (%s): %s" % (i, cell.split("/")[-1], text))
PY
