#!/usr/bin/env bash
# Micro-batching and data parallelism change only rounding: M = 1 vs M = 4, and K=2 x D=2 vs
# K=2 x D=1 on the same global batch (also with batched weight gradients), agree to 1e-5
# relative. Usage: equivalence.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
train 2 m4 "$config" --set pipeline.micro_batches=4
train 2 m1 "$config" --set pipeline.micro_batches=1
same m4 m1 1e-5
train 4 d2 "$config" --set pipeline.stages=2 --set pipeline.data_parallel=2
same m4 d2 1e-5
# Batched weight gradients: each layer's gradient bucket may start only once that is complete.
train 4 d2-batched "$config" --set pipeline.stages=2 --set pipeline.data_parallel=2 \
  --set pipeline.weight_grads=batched
same m4 d2-batched 1e-5
echo "equivalence: M=1 == M=4 and D=2 == D=1 (weight gradients accumulated or batched) to 1e-5"
