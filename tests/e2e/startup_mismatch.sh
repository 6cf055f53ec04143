#!/usr/bin/env bash
# Start-up agreement: ranks that run different configs or different mpipe builds (an MPMD command
# line, one binary faked with MPIPE_TEST_VERSION) are refused before the first step with one line
# saying what differs; every rank exits non-zero, nobody aborts or hangs, nothing is written.
# Usage: startup_mismatch.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
version=$("$MPIPE" --version)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || { echo "FAILED: --version printed '$version'"; exit 1; }

# refused NAME MESSAGE [second rank's mpipe train arguments...]: rank 0 runs `train CONFIG`, rank 1
# the given arguments (both into $WORK/NAME); the job fails with MESSAGE on one line.
refused() {
  local name=$1 message=$2 status=0
  shift 2
  timeout 60 mpirun --oversubscribe --bind-to none \
    -n 1 "$MPIPE" train "$config" --run-dir "$WORK/$name" : \
    -n 1 "$@" --run-dir "$WORK/$name" > "$WORK/$name.out" 2>&1 || status=$?
  failed_in_one_line "$name" "$status" "$message" "$WORK/$name"
}

host=$(hostname)
refused steps "[rank 0/2] [error] rank 1 (host $host): config differs from rank 0's: optimizer.schedule.total_steps is 7 here, 3 on rank 0; train.steps is 7 here, 3 on rank 0" \
  "$MPIPE" train "$config" --set train.steps=7
sed 's/units: 48/units: 40/' "$config" > "$WORK/narrow.yaml"
refused layer "rank 1 (host $host): config differs from rank 0's: model.layers[3].units is 40 here, 48 on rank 0" \
  "$MPIPE" train "$WORK/narrow.yaml"
refused version "rank 1 (host $host): mpipe version 0.0.1-other differs from rank 0's $version (host $host)" \
  env MPIPE_TEST_VERSION=0.0.1-other "$MPIPE" train "$config"
# An MPI library whose MPI_TAG_UB is below the run's largest message tag (faked with
# MPIPE_TEST_TAG_UB): 4 micro-batches and 6 weight tensors take 13 bits, 4096 > 1000.
status=0
MPIPE_TEST_TAG_UB=1000 timeout 60 mpirun -n 2 --oversubscribe --bind-to none \
  "$MPIPE" train "$config" --run-dir "$WORK/tags" > "$WORK/tags.out" 2>&1 || status=$?
line=$(grep -n "micro_batches" "$config" | cut -d: -f1)
failed_in_one_line tags "$status" "[rank 0/2] [error] $config:$line: pipeline.micro_batches: 4 \
micro-batches: message tags need 13 bits (8 round, 0 chunk, 2 micro-batch, 2 kind, 1 stream; 4 \
for 6 tensors), but this MPI library's MPI_TAG_UB is 1000 (10 bits)" "$WORK/tags"
echo "startup_mismatch: a different config or mpipe version on one rank is refused at start-up," \
  "and so is an MPI library whose tags are too small"
