#!/usr/bin/env bash
# The memory model against the allocator: trains each CONFIG on 2 stages for both schedules and
# every recompute mode and checks that the predicted peak of every stage
# (predicted_peak_bytes_per_rank) is within 10% of the measured high-water mark of tensor bytes
# (peak_tensor_bytes_per_rank) in summary.json, printing the table.
# Every mode runs with weight_grads: auto (batched under gpipe and never, else grouped by
# weight_group: auto's group); always also batched, never accumulating, and always grouped by 3 of
# the 4 micro-batches (a group's operands, then a shorter group's).
# The suite runs a third of each config's 12 (schedule, mode) pairs, taken in turn so that each
# config runs under both schedules and every mode runs for two of the configs (the stage-level
# bound, e2e.memory_stage_bound*, holds a CNN's and a Transformer's every mode within 3%);
# MPIPE_TEST_FULL=1 runs every mode under both.
# Usage: memory_model.sh CONFIG...
source "$(dirname "$0")/lib.sh"

schedules=(gpipe 1f1b)
modes=(always:auto except_last:auto never:auto per_layer:auto always:batched never:accumulate
  always:grouped)
failed=0
printf '%-22s %-6s %-24s %5s %12s %12s %7s\n' config sched "recompute:weight_grads" stage predicted \
  measured error
config_index=0
for config in "$@"; do
  config=$(fashion_mnist_subset "$config")
  config_index=$((config_index + 1))
  for schedule_index in "${!schedules[@]}"; do
    schedule=${schedules[schedule_index]}
    for mode_index in "${!modes[@]}"; do
      mode=${modes[mode_index]}
      [[ ${MPIPE_TEST_FULL:-0} == 1 || $(((mode_index + schedule_index + config_index) % 3)) == 0 ]] || continue
      name=$(basename "$config" .yaml)-$schedule-${mode/:/-}
      group=()
      [[ $mode != *:grouped ]] || group=(--set pipeline.weight_group=3)
      train 2 "$name" "$config" --set pipeline.stages=2 --set pipeline.schedule="$schedule" \
        --set pipeline.recompute="${mode%%:*}" --set pipeline.weight_grads="${mode#*:}" "${group[@]}"
      python3 - "$WORK/$name/summary.json" "$(basename "$config" .yaml)" "$schedule" \
        "$mode" <<'PY' || failed=1
import json, sys
summary = json.load(open(sys.argv[1]))
ok = True
pairs = zip(summary["predicted_peak_bytes_per_rank"], summary["peak_tensor_bytes_per_rank"])
for stage, (predicted, measured) in enumerate(pairs):
    error = (predicted - measured) / measured
    ok &= abs(error) <= 0.10
    print(f"{sys.argv[2]:22s} {sys.argv[3]:6s} {sys.argv[4]:24s} {stage:5d} {predicted:12.0f} "
          f"{measured:12.0f} {100 * error:+6.1f}%{'' if abs(error) <= 0.10 else '  FAILED'}")
sys.exit(0 if ok else 1)
PY
    done
  done
done
[[ $failed -eq 0 ]] || { echo "FAILED: a prediction is more than 10% off the measurement"; exit 1; }
