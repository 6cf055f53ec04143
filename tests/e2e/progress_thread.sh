#!/usr/bin/env bash
# comm.progress_thread only moves messages sooner: K=2 and K=2 x D=2 runs with the MPI progress
# thread end with weights bit-identical to the same runs without it, and every rank ran one.
# Usage: progress_thread.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
for layout in "2 k2 --set pipeline.stages=2" \
  "4 k2d2 --set pipeline.stages=2 --set pipeline.data_parallel=2"; do
  read -r ranks name sets <<< "$layout"
  # shellcheck disable=SC2086  # sets is a word list
  train "$ranks" "$name" "$config" $sets
  # shellcheck disable=SC2086
  train "$ranks" "$name-thread" "$config" $sets --set comm.progress_thread=true --set log.level=debug
  same "$name" "$name-thread"
  started=$(grep -c "MPI progress thread started" "$WORK/$name-thread.log" || true)
  [[ $started -eq $ranks ]] ||
    { cat "$WORK/$name-thread.log"; echo "FAILED: $name: $started of $ranks ranks started the thread"; exit 1; }
done
echo "progress_thread: K=2 and K=2 x D=2 with the progress thread == without it (bit-identical)"
