#!/usr/bin/env bash
# The end of a run loses nothing, and what of it failed is done again:
# - the final checkpoint is committed before the final evaluation: a job killed while it
#   evaluates (checkpoint.every: 0) keeps every step it trained;
# - a finished run whose summary.json or export is missing is not "nothing to do": --resume
#   writes them from the final checkpoint, the same weights as a run that never lost them;
# - an export that fails on a full disk (root only: a tmpfs too small for the weights) is written
#   by --resume once there is room.
# Usage: end_of_run.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
steps=(--set train.steps=4 --set checkpoint.every=0)

# run NAME [args...]: a run into $WORK/NAME; its exit status in $status.
run() {
  local name=$1
  shift
  status=0
  timeout 120 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$config" "${steps[@]}" \
    --run-dir "$WORK/$name" "$@" > "$WORK/$name.log" 2>&1 || status=$?
}

# 1. Killed during the final evaluation, a long one: 160000 test examples in batches of 2 (3 s
# on an idle 2-core machine, longer under load), as soon as step 4's commit is there (the final
# checkpoint takes milliseconds; a summary first means the evaluation ended before it).
timeout 120 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$config" "${steps[@]}" \
  --set data.num_examples=1280000 --set train.eval_batch_size=2 --run-dir "$WORK/killed" \
  > "$WORK/killed.log" 2>&1 &
job=$!
wait_for_steps killed 4 100
for _ in $(seq 2000); do
  [[ -e "$WORK/killed/checkpoints/step_00000004/meta.json" || -e "$WORK/killed/summary.json" ]] &&
    break
  sleep 0.05
done
[[ ! -e "$WORK/killed/summary.json" ]] ||
  { echo "FAILED: the evaluation ended before the kill, or before the commit"; exit 1; }
for pid in $(pgrep -f -- "--run-dir $WORK/killed( |$)"); do kill -KILL "$pid" 2> /dev/null || true; done
wait "$job" || true
cat "$WORK/killed.log"
[[ -e "$WORK/killed/checkpoints/step_00000004/meta.json" ]] ||
  { ls -R "$WORK/killed"; echo "FAILED: killed in the final evaluation, step 4 was lost"; exit 1; }

# 2. A finished run without its summary and export: --resume writes both from step 4, once.
run finished --export-weights "$WORK/finished.safetensors"
[[ $status -eq 0 ]] || { cat "$WORK/finished.log"; echo "FAILED: finished (exit status $status)"; exit 1; }
cp "$WORK/finished/summary.json" "$WORK/finished.summary.json"
cp "$WORK/finished.safetensors" "$WORK/straight.safetensors"
rm "$WORK/finished/summary.json" "$WORK/finished.safetensors"
run finished --export-weights "$WORK/finished.safetensors" --resume
cat "$WORK/finished.log"
[[ $status -eq 0 ]] || { echo "FAILED: resume of finished (exit status $status)"; exit 1; }
grep -qF "$WORK/finished: finished at step 4 but summary.json and the export $WORK/finished.safetensors \
missing: writing them from its checkpoint" "$WORK/finished.log" || { echo "FAILED: message"; exit 1; }
same straight finished
/usr/bin/python3 - "$WORK/finished.summary.json" "$WORK/finished/summary.json" << 'PY' || exit 1
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:])
for key in ("steps", "final_train_loss", "final_eval_loss", "final_eval_accuracy"):
    if before[key] != after[key]:
        sys.exit(f"FAILED: summary.json {key}: {before[key]} before, {after[key]} after")
PY
run finished --export-weights "$WORK/finished.safetensors" --resume
grep -qF "already finished at step 4 (train.steps = 4); nothing to do" "$WORK/finished.log" ||
  { cat "$WORK/finished.log"; echo "FAILED: a complete run was not left alone"; exit 1; }

# 3. The export on a full disk: the run fails with that line, step 4 committed; with room again,
# --resume writes the export and summary.json.
if [[ $(id -u) -ne 0 ]]; then
  echo "end of run: OK (the full-disk export skipped: mount needs root)"
  exit 0
fi
mkdir "$WORK/disk"
mount -t tmpfs -o size=16k tmpfs "$WORK/disk"
trap 'umount "$WORK/disk" 2>/dev/null; [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"' EXIT
run full --export-weights "$WORK/disk/full.safetensors"
cat "$WORK/full.log"
[[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: full (exit status $status)"; exit 1; }
grep -qE "\[error\] $WORK/disk/full.safetensors.*No space left on device" "$WORK/full.log" ||
  { echo "FAILED: full: message"; exit 1; }
[[ -e "$WORK/full/checkpoints/step_00000004/meta.json" && ! -e "$WORK/full/summary.json" ]] ||
  { ls -R "$WORK/full"; echo "FAILED: full: step 4 not committed, or a summary"; exit 1; }
mount -o remount,size=1m "$WORK/disk"
run full --export-weights "$WORK/disk/full.safetensors" --resume
cat "$WORK/full.log"
[[ $status -eq 0 && -e "$WORK/full/summary.json" ]] ||
  { echo "FAILED: resume of full (exit status $status)"; exit 1; }
cp "$WORK/disk/full.safetensors" "$WORK/full.safetensors"
same straight full
echo "end of run: OK (step 4 kept through a kill in the evaluation; summary and export rewritten)"
