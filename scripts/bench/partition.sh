# Sourced by the bench scripts: the stage layout of a model of (linear, relu) blocks and a head.
# shellcheck shell=bash

# block_partition BLOCKS K: pipeline.partition's layer counts for BLOCKS blocks of two layers
# over K stages, as equal in blocks as they divide (the first stages take one more when they do
# not), the head layer on the last stage: block_partition 8 2 prints [8,9].
block_partition() {
  local blocks=$1 k=$2 counts=() s
  for ((s = 0; s < k; ++s)); do counts+=($((2 * (blocks / k + (s < blocks % k ? 1 : 0))))); done
  counts[k - 1]=$((counts[k - 1] + 1))
  local IFS=,
  echo "[${counts[*]}]"
}
