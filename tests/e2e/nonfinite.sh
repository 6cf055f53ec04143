#!/usr/bin/env bash
# A diverging run (SGD, lr 1e3, no clipping) on 2 stages: with on_nonfinite: stop it ends at the
# first non-finite step with one line naming the step, the stage and the layer, every rank exits
# non-zero, and the newest committed checkpoint holds the last finite weights (none was written
# from non-finite ones, none was pruned for one). With skip, the update is dropped and the run
# stops after max_skips_in_a_row such steps in a row. With the optimizer state sharded (ZeRO-1,
# D = 2: each replica checks its shard of the gradients), the line names the same step and layers
# as the unsharded run's. Usage: nonfinite.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
diverge=(--set optimizer.kind=sgd --set optimizer.lr=1e3 --set optimizer.clip_norm=0
  --set train.steps=300 --set checkpoint.every=2 --set checkpoint.keep=1 --set log.every=1)

# fails NAME PATTERN ARGS...: the run exits non-zero (not a timeout), its log has PATTERN on
# exactly one line and no MPI_ABORT banner.
fails() {
  local name=$1 pattern=$2 status=0
  shift 2
  timeout 120 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$config" \
    --run-dir "$WORK/$name" "$@" > "$WORK/$name.log" 2>&1 || status=$?
  cat "$WORK/$name.log"
  [[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: $name: exit status $status"; exit 1; }
  [[ $(grep -cE "$pattern" "$WORK/$name.log") -eq 1 ]] || { echo "FAILED: $name: message"; exit 1; }
  ! grep -q "MPI_ABORT" "$WORK/$name.log" || { echo "FAILED: $name: MPI_ABORT"; exit 1; }
}

fails stop "\[error\] step [0-9]+: loss is (nan|infinite); non-finite gradients in [0-9]+ layers?, first in backward order: layer [0-9]+ \((linear|relu)\) on stage [01]; stopped \(train.on_nonfinite: stop" \
  "${diverge[@]}"
step=$(sed -nE 's/.*\[error\] step ([0-9]+):.*/\1/p' "$WORK/stop.log")
checkpoints=("$WORK"/stop/checkpoints/step_*/meta.json)
[[ ${#checkpoints[@]} -eq 1 && -e "${checkpoints[0]}" ]] || { echo "FAILED: no committed checkpoint"; exit 1; }
saved=$(basename "$(dirname "${checkpoints[0]}")")
saved=$((10#${saved#step_}))
((saved == (step - 1) / 2 * 2)) || { echo "FAILED: newest checkpoint is step $saved, non-finite step $step"; exit 1; }
for shard in "$WORK"/stop/checkpoints/step_*/stage_*.safetensors; do
  /usr/bin/python3 "$(dirname "$0")/all_finite.py" "$shard" || { echo "FAILED: non-finite checkpoint"; exit 1; }
done

fails skip "\[error\] step [0-9]+: .*stopped after 3 non-finite steps in a row \(train.max_skips_in_a_row: 3\)" \
  "${diverge[@]}" --set train.on_nonfinite=skip --set train.max_skips_in_a_row=3
grep -q "update skipped (train.on_nonfinite: skip)" "$WORK/skip.log" || { echo "FAILED: skip warning"; exit 1; }
grep -q '"skipped_steps":2' "$WORK/skip/metrics.jsonl" || { echo "FAILED: skipped_steps in metrics"; exit 1; }
for shard in "$WORK"/skip/checkpoints/step_*/stage_*.safetensors; do
  /usr/bin/python3 "$(dirname "$0")/all_finite.py" "$shard" || { echo "FAILED: non-finite checkpoint"; exit 1; }
done
replicas=(--set pipeline.stages=1 --set pipeline.data_parallel=2)
fails whole-d2 "\[error\] step [0-9]+: .*non-finite gradients" "${diverge[@]}" "${replicas[@]}"
fails sharded-d2 "\[error\] step [0-9]+: .*non-finite gradients" "${diverge[@]}" "${replicas[@]}" \
  --set optimizer.shard_across_replicas=true
whole=$(sed -nE 's/.*\[error\] (step [0-9]+: .*)/\1/p' "$WORK/whole-d2.log")
sharded=$(sed -nE 's/.*\[error\] (step [0-9]+: .*)/\1/p' "$WORK/sharded-d2.log")
[[ "$whole" == "$sharded" ]] || { echo "FAILED: sharded: '$sharded', unsharded: '$whole'"; exit 1; }
echo "nonfinite: stop ends at step $step with checkpoint $saved intact; skip drops and then stops;" \
  "sharded names the unsharded run's layers"
