#!/usr/bin/env bash
# ZB-V on 5 and 6 ranks: the steps run to their end and the weights are bit-identical to one
# rank's. With two receives posted ahead (all a step posted before plan::receives_ahead), ZB-V's
# warm-up sends more activations down than the next rank consumes before it waits for an answer,
# and from K = 5, M = 8 on every rank waited forever (until the watchdog's 10-minute start-up
# deadline); plan::step_deadlock names those waits (tests/plan/step_progress_test.cpp). Each
# message here is 16 rows x 128 floats, 8 KiB: above shared memory's 4 KiB eager limit, so a send
# completes only once its receive is posted (smaller ones may complete without it and hide it).
source "$(dirname "$0")/lib.sh"
config=$WORK/deep.yaml
cat > "$config" <<'YAML'
model:
  loss: cross_entropy
  layers:
    - repeat: 12
      layers: [{type: linear, units: 128}, {type: relu}]
    - {type: linear, units: 4}
data: {dataset: synthetic, num_examples: 256, features: 128, classes: 4}
train: {steps: 2, batch_size: 192, seed: 3}
optimizer: {kind: sgd, lr: 0.05}
pipeline: {micro_batches: 12, schedule: zbv, recompute: always}
checkpoint: {every: 0}
YAML
train 1 k1 "$config"
for k in 5 6; do
  train "$k" "k$k" "$config" --set pipeline.stages="$k"
  same k1 "k$k"
done
echo "zbv: K=5 and K=6 at M=12 ran every step and equal K=1 bit for bit"
