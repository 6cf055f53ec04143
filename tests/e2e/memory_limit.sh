#!/usr/bin/env bash
# pipeline.memory_limit at run time: a run that passes the preflight (its training is predicted
# within the limit) but whose evaluation batches exceed it ends on every rank, non-zero (exit code
# 4, not a timeout), within seconds, with one line naming the rank, stage, what ran, the bytes
# asked and in use, and the limit with where it was set; the step being evaluated has no
# checkpoint (the one before it has).
# Usage: memory_limit.sh CONFIG (tests/e2e/files/memory_limit.yaml)
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
message="rank 1 (stage 1): memory limit exceeded in evaluation (outside the layers): asked 1.0 MiB \
with 7.1 MiB in use; pipeline.memory_limit is 7.20 MiB ($config:$line)"
[[ $(grep -c "\[error\]" "$WORK/run.out") -eq 1 ]] || { echo "FAILED: not one error line"; exit 1; }
grep -qF "[error] $message" "$WORK/run.out" ||
  { echo "FAILED: message, expected: $message"; exit 1; }
# The preflight passed and step 1 trained and committed its checkpoint; step 2 is evaluated
# before its checkpoint, which never started.
[[ -d "$WORK/run/checkpoints/step_00000001" ]] || { echo "FAILED: no checkpoint of step 1"; exit 1; }
[[ -z $(ls "$WORK/run/checkpoints" | grep -v '^step_00000001$' || true) ]] ||
  { ls -la "$WORK/run/checkpoints"; echo "FAILED: a checkpoint after step 1"; exit 1; }
# No rank outlives the job.
! pgrep -f -- "--run-dir $WORK/run( |$)" > /dev/null || { echo "FAILED: a rank is still running"; exit 1; }
echo "memory_limit: OK ($took s)"
