#!/usr/bin/env bash
# Two mpipe binaries' `plan --calibrate` step for each (M, schedule) cell at K stages, calibrated
# in turn, ROUNDS times: how a change to the planner moves its prediction, beside a measurement of
# the same cells (reference_schedules.sh). Prints "round M schedule before|after step_ms".
#
#   BEFORE=/path/to/old/mpipe scripts/bench/plan_pair.sh
#
# Environment: BEFORE (required), AFTER (build/release/apps/mpipe), CONFIG
# (configs/scaling_mlp.yaml), STAGES (2), MICRO ("4 8 16"), SCHEDULES ("gpipe 1f1b zb_h1
# interleaved"; interleaved with 2 chunks per rank), THREADS (1), ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/../.."
before=${BEFORE:?BEFORE must name the mpipe binary to compare with}
after=${AFTER:-build/release/apps/mpipe}
config=${CONFIG:-configs/scaling_mlp.yaml}
read -r -a micros <<<"${MICRO:-4 8 16}"
read -r -a schedules <<<"${SCHEDULES:-gpipe 1f1b zb_h1 interleaved}"
export OMP_NUM_THREADS=${THREADS:-1}
for round in $(seq "${ROUNDS:-3}"); do
  for m in "${micros[@]}"; do
    for schedule in "${schedules[@]}"; do
      chunks=()
      [[ $schedule == interleaved ]] && chunks=(--set pipeline.virtual_stages=2)
      for which in before after; do
        bin=$after
        [[ $which == before ]] && bin=$before
        step=$("$bin" plan "$config" --stages "${STAGES:-2}" --micro-batches "$m" \
          --set pipeline.schedule="$schedule" "${chunks[@]}" --calibrate --json 2>/dev/null |
          python3 -c 'import json,sys; print("%.1f" % (1e3 * json.load(sys.stdin)["step_s"]))')
        echo "$round $m $schedule $which $step"
      done
    done
  done
done
