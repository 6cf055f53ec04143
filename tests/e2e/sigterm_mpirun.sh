#!/usr/bin/env bash
# SIGTERM to mpirun, launched with the repository's Open MPI settings (scripts/mpi_env.sh), leaves
# a committed checkpoint even when a step takes longer than Open MPI's default 1 s grace, and
# --resume from it ends with the same weights as a run that was never interrupted; and a run under
# Open MPI's default grace of 1 s, with steps longer than that, is warned that a SIGTERM would lose
# it.
# Usage: sigterm_mpirun.sh CONFIG (steps of 2 s or more; constant LR).
source "$(dirname "$0")/lib.sh"
config=$1
source "$(dirname "$0")/../../scripts/mpi_env.sh"
grace=${OMPI_MCA_odls_base_sigkill_timeout:?set by scripts/mpi_env.sh}

# A run far too long to finish; SIGTERM to mpirun as soon as the first step is logged.
endless 2 cut "$config" --export-weights "$WORK/cut.safetensors"
wait_for_steps cut 1 100
[[ -s "$WORK/cut/metrics.jsonl" ]] || { cat "$WORK/cut.log"; echo "FAILED: no step logged"; exit 1; }
batch=$(grep -o 'batch_size: [0-9]*' "$config" | head -n 1)
step_s=$(awk -F'"samples_per_s":' -v b="${batch##* }" \
  'NR == 1 { split($2, a, "}"); printf "%.1f", b / a[1] }' "$WORK/cut/metrics.jsonl")
start=$(date +%s.%N)
pkill -TERM -P "$launcher" -x mpirun
rc=0
wait "$launcher" || rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
((rc != 124)) || { cat "$WORK/cut.log"; echo "FAILED: mpirun did not exit within 120 s"; exit 1; }
stop=$(grep -o "stopped at step [0-9]*" "$WORK/cut.log") || {
  cat "$WORK/cut.log"
  echo "FAILED: the ranks were killed before they checkpointed (step ${step_s} s," \
    "odls_base_sigkill_timeout ${grace} s)"
  exit 1
}
stop=${stop##* }
[[ -d "$WORK/cut/checkpoints/step_$(printf %08d "$stop")" ]] ||
  { ls -R "$WORK/cut"; echo "FAILED: no checkpoint for step $stop"; exit 1; }
[[ ! -e "$WORK/cut.safetensors" ]] || { echo "FAILED: a stopped run exported weights"; exit 1; }

# --resume must find that checkpoint committed, and one more step must match a straight run.
steps=$((stop + 1))
train 2 cut "$config" --set train.steps=$steps --resume
grep -q "resumed from step $stop" "$WORK/cut.log" ||
  { cat "$WORK/cut.log"; echo "FAILED: did not resume from step $stop"; exit 1; }
# The straight run, under Open MPI's default grace (1 s), is warned that a SIGTERM would lose it.
(
  unset OMPI_MCA_odls_base_sigkill_timeout
  train 2 straight "$config" --set train.steps=$steps
)
same straight cut
grep -q "s, more than the 1 s mpirun leaves the ranks between its SIGTERM and its SIGKILL" \
  "$WORK/straight.log" || { cat "$WORK/straight.log"; echo "FAILED: no warning at a 1 s grace"; exit 1; }
echo "sigterm_mpirun: steps of ${step_s} s, odls_base_sigkill_timeout ${grace} s; mpirun exited" \
  "(status $rc) ${took} s after SIGTERM with step $stop committed; resumed to $steps, same" \
  "weights as the uninterrupted run"
