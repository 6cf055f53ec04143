#!/usr/bin/env bash
# Grouped weight gradients (pipeline.weight_grads: grouped): the groups depend on M and the group
# size alone, so after 3 steps the exported weights are bit-identical at K = 1 (gpipe), K = 2
# (zb_h1, whose W ops copy the operands; zbv; interleaved with 2 chunks per rank) and K = 4
# (1f1b), each under another recompute mode; they differ from accumulating per micro-batch (the
# grouping is in effect), and groups of all M micro-batches give batched's bits.
# (The executor's test, mpi.executor_schedules_test, holds every schedule's gradients to one
# rank's at K = 2 and 4.)
# Usage: weight_groups.sh CONFIG (M = 4 micro-batches)
source "$(dirname "$0")/lib.sh"
config=$1
grouped=(--set pipeline.weight_grads=grouped --set pipeline.weight_group=3)
train 1 k1-grouped "$config" "${grouped[@]}"
train 2 k2-zb_h1 "$config" --set pipeline.schedule=zb_h1 --set pipeline.recompute=never \
  "${grouped[@]}"
same k1-grouped k2-zb_h1
train 2 k2-zbv "$config" --set pipeline.schedule=zbv --set pipeline.recompute=except_last \
  "${grouped[@]}"
same k1-grouped k2-zbv
train 2 k2-interleaved "$config" --set pipeline.schedule=interleaved \
  --set pipeline.virtual_stages=2 --set pipeline.recompute=per_layer "${grouped[@]}"
same k1-grouped k2-interleaved
train 4 k4-1f1b "$config" --set pipeline.schedule=1f1b "${grouped[@]}"
same k1-grouped k4-1f1b
train 1 k1-accumulate "$config" --set pipeline.weight_grads=accumulate
if "$MPIPE" compare "$WORK/k1-grouped.safetensors" "$WORK/k1-accumulate.safetensors" > /dev/null; then
  echo "FAILED: grouped weight gradients left the weights as accumulating them does"
  exit 1
fi
train 1 k1-group-of-all "$config" --set pipeline.weight_grads=grouped --set pipeline.weight_group=4
train 2 k2-batched "$config" --set pipeline.schedule=1f1b --set pipeline.weight_grads=batched
same k1-group-of-all k2-batched
echo "weight_groups: grouped bit-identical at K=1 gpipe, K=2 zb_h1/zbv/interleaved, K=4 1f1b;" \
  "not accumulate's; groups of M equal batched"
