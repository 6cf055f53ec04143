#!/usr/bin/env bash
# A stage sends its last gradient on before it computes the batched weight gradients. A message
# above the eager limit moves only while its sender calls into MPI (over TCP, and on shared
# memory without single-copy: each call moves a few 32 KB fragments),
# so a send left pending through the weight gradients makes the previous stage wait them out,
# and at K stages the waits add up down the chain. K = 2, M = 8, recompute never, shared memory
# without single-copy: stage 1 holds 3 of the 4 wide blocks, so its weight gradients (WB) take
# several times its last backward; the 512 KB last gradient must reach stage 0 in well under W.
# Usage: last_gradient.sh
source "$(dirname "$0")/lib.sh"
cat > "$WORK/wide.yaml" <<'YAML'
model:
  loss: cross_entropy
  layers:
    - repeat: 4
      layers: [{type: linear, units: 1024}, {type: relu}]
    - {type: linear, units: 10}
data: {dataset: synthetic, num_examples: 1024, features: 1024, classes: 10}
train: {steps: 5, batch_size: 1024, seed: 1, eval_batches: 1}
optimizer: {kind: sgd, lr: 0.01}
pipeline: {stages: 2, micro_batches: 8, schedule: gpipe, recompute: never, partition: [2, 7]}
checkpoint: {every: 0}
log: {every: 1, level: trace}
YAML
timeout 120 mpirun -n 2 --oversubscribe --bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none "$MPIPE" train \
  "$WORK/wide.yaml" --run-dir "$WORK/run" > "$WORK/run.log" 2>&1 ||
  { cat "$WORK/run.log"; echo "FAILED: the run"; exit 1; }
# Medians over steps 2-5 of stage 0's wait for gradient 7 (RG7) and stage 1's W.
median() { sort -n | awk '{ v[NR] = $1 } END { print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2 }'; }
wait_ms=$(sed -n 's/.*step [2-5] stage 0: RG7 \([0-9.]*\) ms.*/\1/p' "$WORK/run.log" | median)
w_ms=$(sed -n 's/.*step [2-5] stage 1: WB \([0-9.]*\) ms.*/\1/p' "$WORK/run.log" | median)
echo "stage 0 waited ${wait_ms} ms for the last gradient; stage 1's weight gradients took ${w_ms} ms"
awk -v w="$wait_ms" -v g="$w_ms" 'BEGIN { exit !(g > 0 && w < g / 2) }' ||
  { grep -E 'RG7|: WB ' "$WORK/run.log"; echo "FAILED: the last gradient waited for the weight gradients"; exit 1; }
echo "last_gradient: the last gradient is sent before the weight gradients"
