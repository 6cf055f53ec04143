#!/usr/bin/env bash
# Transparency across replicas under weight_grads: tree: each layer's micro-batch gradients are
# summed in a fixed pairwise tree of which each replica's share is a node, and the replicas' sums
# meet in the same tree, so the same global micro-batches give bit-identical weights for
# D = 1, 2, 4 replicas at K = 1, 2, 4 stages and every schedule (interleaved and zbv with 2 chunks
# per rank: each rank's buckets hold both chunks' gradients).
# Usage: replica_tree.sh CONFIG (its micro_batches must be 4)
source "$(dirname "$0")/lib.sh"
config=$(fashion_mnist_subset "$1")
tree=(--set pipeline.weight_grads=tree)
replicas=(--set pipeline.data_parallel=2 --set pipeline.micro_batches=2)
train 1 k1d1 "$config" "${tree[@]}" --set pipeline.stages=1 --set pipeline.micro_batches=4
train 2 k1d2 "$config" "${tree[@]}" --set pipeline.stages=1 "${replicas[@]}"
same k1d1 k1d2
train 4 k1d4 "$config" "${tree[@]}" --set pipeline.stages=1 --set pipeline.data_parallel=4 \
  --set pipeline.micro_batches=1
same k1d1 k1d4
for schedule in gpipe 1f1b zb_h1 interleaved zbv; do
  chunks=1
  [[ $schedule == interleaved || $schedule == zbv ]] && chunks=2
  train 4 "k2d2-$schedule" "$config" "${tree[@]}" --set pipeline.stages=2 \
    --set pipeline.schedule=$schedule --set pipeline.virtual_stages=$chunks "${replicas[@]}"
  same k1d1 "k2d2-$schedule"
done
train 4 k4d1 "$config" "${tree[@]}" --set pipeline.stages=4 --set pipeline.micro_batches=4 \
  --set pipeline.recompute=never
same k1d1 k4d1
# The default sum (in micro-batch order) is another one, so the comparisons above can fail.
train 2 k1d2-accumulate "$config" --set pipeline.weight_grads=accumulate --set pipeline.stages=1 \
  "${replicas[@]}"
train 1 k1d1-accumulate "$config" --set pipeline.weight_grads=accumulate --set pipeline.stages=1 \
  --set pipeline.micro_batches=4
if "$MPIPE" compare "$WORK/k1d1-accumulate.safetensors" "$WORK/k1d2-accumulate.safetensors" \
  > /dev/null; then
  echo "FAILED: D=2 gave D=1's exact weights summed in micro-batch order (were replicas in effect?)"
  exit 1
fi
echo "replica tree: D=1, 2, 4 x K=1, 2, 4 (gpipe, 1f1b, zb_h1, interleaved, zbv) bit-identical under weight_grads: tree"
