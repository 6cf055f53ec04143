#!/usr/bin/env bash
# Resume: 3 steps, stop, resume to 6 (on another number of stages) gives the same weights as
# 6 steps straight. Checkpoints hold a shard per global stage, so a run of K = 2 ranks with v = 2
# chunks each (interleaved) resumes at K = 2 with one chunk (1f1b) and at K = 1, and K = 1
# resumes at K = 2 v = 2, and zbv (2 chunks in a V) at 1f1b; `mpipe export` of the v = 2
# checkpoints equals their --export-weights; under weight_grads: tree, K = 2 with D = 1 resumes at
# K = 1 with D = 2 replicas (another schedule and recompute mode).
# Usage: resume.sh CONFIG (micro_batches: 4; also a model that is not a chain: files/unet_tiny.yaml,
# or the translator through translate_transparency.sh)
source "$(dirname "$0")/lib.sh"
config=$(fashion_mnist_subset "$1")
train 2 straight "$config" --set train.steps=6
train 2 resumed "$config" --set train.steps=3
train 4 resumed "$config" --set train.steps=6 --resume
same straight resumed
interleaved=(--set pipeline.schedule=interleaved --set pipeline.virtual_stages=2)
for to in 1f1b k1; do
  train 2 "chunks-to-$to" "$config" --set train.steps=3 "${interleaved[@]}"
done
"$MPIPE" export "$WORK/chunks-to-1f1b" "$WORK/chunks-exported.safetensors" > /dev/null
cmp "$WORK/chunks-to-1f1b.safetensors" "$WORK/chunks-exported.safetensors" ||
  { echo "FAILED: mpipe export of the v = 2 checkpoint differs from its --export-weights"; exit 1; }
# (A resume keeps the stored layout unless --set changes it.)
one_chunk=(--set pipeline.virtual_stages=1)
train 2 chunks-to-1f1b "$config" --set train.steps=6 --set pipeline.schedule=1f1b "${one_chunk[@]}" \
  --resume
same straight chunks-to-1f1b
train 1 chunks-to-k1 "$config" --set train.steps=6 --set pipeline.schedule=gpipe "${one_chunk[@]}" \
  --resume
same straight chunks-to-k1
train 1 k1-to-chunks "$config" --set train.steps=3
train 2 k1-to-chunks "$config" --set train.steps=6 "${interleaved[@]}" --resume
same straight k1-to-chunks
# ZB-V's V (rank 0 holding stages 0 and 3, rank 1 stages 1 and 2) resumes at 1f1b; its export
# gathers the stages from the ranks that hold them.
train 2 zbv-to-1f1b "$config" --set train.steps=3 --set pipeline.schedule=zbv
"$MPIPE" export "$WORK/zbv-to-1f1b" "$WORK/zbv-exported.safetensors" > /dev/null
cmp "$WORK/zbv-to-1f1b.safetensors" "$WORK/zbv-exported.safetensors" ||
  { echo "FAILED: mpipe export of the zbv checkpoint differs from its --export-weights"; exit 1; }
train 2 zbv-to-1f1b "$config" --set train.steps=6 --set pipeline.schedule=1f1b "${one_chunk[@]}" \
  --resume
same straight zbv-to-1f1b
# A change of D: weight_grads: tree sums the same micro-batches in the same tree for every D.
tree=(--set pipeline.weight_grads=tree)
train 2 tree-straight "$config" --set train.steps=6 "${tree[@]}"
train 2 tree-to-d2 "$config" --set train.steps=3 "${tree[@]}"
train 2 tree-to-d2 "$config" --set train.steps=6 "${tree[@]}" --set pipeline.stages=1 \
  --set pipeline.data_parallel=2 --set pipeline.micro_batches=2 --set pipeline.schedule=1f1b \
  --set pipeline.recompute=per_layer --resume
same tree-straight tree-to-d2
echo "resume: 3 + 3 steps (2 then 4 stages; 2 ranks x 2 chunks then 1f1b or 1 stage, and back; zbv then 1f1b; K = 2 D = 1 then K = 1 D = 2 under tree) == 6 steps"
