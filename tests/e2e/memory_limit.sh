#!/usr/bin/env bash
# pipeline.memory_limit at run time: a run that passes the preflight (its training and evaluation
# are predicted within the limit) but whose weight export exceeds it ends on every rank, non-zero
# (exit code 4, not a timeout), within seconds, with one line naming the rank, stage, what ran,
# the bytes asked and in use, and the limit with where it was set. The trained state was
# committed before the export, so --resume with the limit lifted trains nothing and writes the
# export and summary.json. Usage: memory_limit.sh CONFIG (tests/e2e/files/memory_limit.yaml)
source "$(dirname "$0")/lib.sh"
config=$1
line=$(grep -n "memory_limit:" "$config" | cut -d: -f1)

start=$(date +%s)
status=0
timeout 60 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$config" \
  --run-dir "$WORK/run" > "$WORK/run.out" 2>&1 || status=$?
took=$(($(date +%s) - start))
cat "$WORK/run.out"
[[ $status -eq 4 ]] || { echo "FAILED: exit status $status (expected 4)"; exit 1; }
[[ $took -le 30 ]] || { echo "FAILED: the job took $took s"; exit 1; }
message="rank 1 (stage 1): memory limit exceeded in the weight export: asked 1.0 MiB \
with 4.2 MiB in use; pipeline.memory_limit is 4.75 MiB ($config:$line)"
[[ $(grep -c "\[error\]" "$WORK/run.out") -eq 1 ]] || { echo "FAILED: not one error line"; exit 1; }
grep -qF "[error] $message" "$WORK/run.out" ||
  { echo "FAILED: message, expected: $message"; exit 1; }
# The last step was committed before the export; nothing else was written at the end.
[[ -e "$WORK/run/checkpoints/step_00000003/meta.json" ]] ||
  { ls -R "$WORK/run"; echo "FAILED: step 3 was not committed before the export"; exit 1; }
[[ ! -e "$WORK/run/summary.json" && ! -e "$WORK/run/weights.safetensors" ]] ||
  { ls -R "$WORK/run"; echo "FAILED: a summary or export after the failed export"; exit 1; }
# No rank outlives the job.
! pgrep -f -- "--run-dir $WORK/run( |$)" > /dev/null || { echo "FAILED: a rank is still running"; exit 1; }

# With the limit lifted, --resume writes the export and the summary from step 3.
timeout 60 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$config" \
  --run-dir "$WORK/run" --resume --set pipeline.memory_limit=none > "$WORK/resume.out" 2>&1 ||
  { cat "$WORK/resume.out"; echo "FAILED: resume"; exit 1; }
cat "$WORK/resume.out"
grep -qF "finished at step 3 but summary.json and the export $WORK/run/weights.safetensors missing" \
  "$WORK/resume.out" || { echo "FAILED: resume message"; exit 1; }
[[ -e "$WORK/run/summary.json" && -e "$WORK/run/weights.safetensors" ]] ||
  { ls -R "$WORK/run"; echo "FAILED: resume wrote no summary or export"; exit 1; }
echo "memory_limit: OK ($took s)"
