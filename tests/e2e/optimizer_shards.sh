#!/usr/bin/env bash
# ZeRO-1 (optimizer.shard_across_replicas): each replica updates its shard of every stage's
# parameters, holding only that shard's optimizer state, then the replicas allgather the values:
# bit-identical to the unsharded run. Under weight_grads: tree every D and K gives the same
# weights, so one unsharded K = 1 D = 1 run is the reference of sharded runs at D = 2 and 4, K = 1
# and 2 under every schedule (saving a checkpoint after every step: the state gathered whole and
# sharded again), with the config's clipping and without; a sharded run resumes unsharded on
# another K and D, and that one sharded again on another D.
# At K = 3 D = 2 the same, with the config changed by the further --set options, against its own
# unsharded K = 1 D = 1 run.
# Usage: optimizer_shards.sh CONFIG [--set KEY=VALUE...] (micro_batches: 4, clip_norm > 0;
# files/tied.yaml puts the tied embedding and head on two ranks at K = 2: Megatron-LM #844's case,
# its copies summed on the shards; with a vocabulary of 1024 its matrix spans 4 norm blocks, which
# the shards cut at different places in the two copies)
source "$(dirname "$0")/lib.sh"
config=$(fashion_mnist_subset "$1")
changed=("${@:2}")
steps=(--set train.steps=4)
tree=(--set pipeline.weight_grads=tree)
shard=(--set optimizer.shard_across_replicas=true)
d2=(--set pipeline.data_parallel=2 --set pipeline.micro_batches=2)
d4=(--set pipeline.data_parallel=4 --set pipeline.micro_batches=1)
train 1 k1d1 "$config" "${steps[@]}" "${tree[@]}" --set pipeline.stages=1
train 4 k1d4 "$config" "${steps[@]}" "${tree[@]}" "${shard[@]}" --set pipeline.stages=1 "${d4[@]}"
same k1d1 k1d4
for schedule in gpipe 1f1b zb_h1 interleaved zbv; do
  chunks=1
  [[ $schedule == interleaved || $schedule == zbv ]] && chunks=2
  train 4 "k2d2-$schedule" "$config" "${steps[@]}" "${tree[@]}" "${shard[@]}" \
    --set pipeline.stages=2 --set pipeline.schedule=$schedule \
    --set pipeline.virtual_stages=$chunks "${d2[@]}" --set checkpoint.every=1
  same k1d1 "k2d2-$schedule"
done
# Without clipping (the default sum: sharded against unsharded at the same layout).
no_clip=(--set optimizer.clip_norm=0 --set pipeline.stages=1 "${d2[@]}")
train 2 no-clip "$config" "${steps[@]}" "${no_clip[@]}"
train 2 no-clip-sharded "$config" "${steps[@]}" "${no_clip[@]}" "${shard[@]}"
same no-clip no-clip-sharded
# Checkpoints hold whole tensors: sharded K = 2 D = 2 for 2 steps, unsharded K = 1 D = 2 to 3,
# sharded K = 1 D = 4 to 4.
train 4 resumed "$config" --set train.steps=2 "${tree[@]}" "${shard[@]}" --set pipeline.stages=2 \
  "${d2[@]}"
train 2 resumed "$config" --set train.steps=3 --set optimizer.shard_across_replicas=false \
  --set pipeline.stages=1 --resume
train 4 resumed "$config" "${steps[@]}" "${shard[@]}" "${d4[@]}" --resume
same k1d1 resumed
train 1 k1d1-changed "$config" "${steps[@]}" "${tree[@]}" --set pipeline.stages=1 "${changed[@]}"
train 6 k3d2 "$config" "${steps[@]}" "${tree[@]}" "${shard[@]}" --set pipeline.stages=3 \
  "${d2[@]}" "${changed[@]}"
same k1d1-changed k3d2
echo "optimizer shards: D = 2, 4 x K = 1, 2 (every schedule), K = 3 D = 2, with and without clipping, resumed sharded -> unsharded -> sharded: bit-identical to unsharded"
