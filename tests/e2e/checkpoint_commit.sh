#!/usr/bin/env bash
# Commit by agreement: with data parallelism only replica 0 writes shards; a shard that cannot
# be written fails every rank with one line, commits nothing, removes the step's other shards
# and keeps the last good checkpoint, from which the run then resumes to the same weights as an
# uninterrupted one. Usage: checkpoint_commit.sh CONFIG
source "$(dirname "$0")/checkpoint_lib.sh"
config=$1

# 1 stage x 2 replicas: one shard per checkpoint, listed in meta.json.
train 2 dp "$config" --set train.steps=2 --set pipeline.stages=1 --set pipeline.data_parallel=2 \
  --set pipeline.micro_batches=2
files=$(ls "$WORK/dp/checkpoints/step_00000002" | tr '\n' ' ')
[[ $files == "meta.json stage_0.safetensors " ]] || { echo "FAILED: files $files"; exit 1; }
[[ $(grep -c '"file"' "$WORK/dp/checkpoints/step_00000002/meta.json") -eq 1 ]] \
  || { echo "FAILED: meta.json does not list one shard"; exit 1; }

# Stage 1 cannot write step 6 (a directory is in the way).
train 2 run "$config" --set train.steps=4 --set checkpoint.every=2 --set checkpoint.keep=1
blocked=$WORK/run/checkpoints/step_00000006/stage_1.safetensors
mkdir -p "$blocked/in_the_way"
# Stage 1's rank finds it, and its line says so.
fails blocked 1 "rank 1 (pipeline rank 1, host $(hostname)): $blocked: cannot rename into place: Is a directory" \
  "$config" --run-dir "$WORK/run" --set train.steps=8 --set checkpoint.every=2 \
  --set checkpoint.keep=1 --resume
[[ -f "$WORK/run/checkpoints/step_00000004/meta.json" ]] || { echo "FAILED: good checkpoint lost"; exit 1; }
[[ ! -e "$WORK/run/checkpoints/step_00000006/meta.json" ]] || { echo "FAILED: step 6 committed"; exit 1; }
[[ ! -e "$WORK/run/checkpoints/step_00000006/stage_0.safetensors" ]] \
  || { echo "FAILED: uncommitted shard left behind"; exit 1; }

rm -r "$blocked"
train 2 run "$config" --set train.steps=8 --set checkpoint.every=2 --set checkpoint.keep=1 --resume
train 2 straight "$config" --set train.steps=8
same straight run
[[ $(ls "$WORK/run/checkpoints" | tr '\n' ' ') == "step_00000008 " ]] \
  || { ls "$WORK/run/checkpoints"; echo "FAILED: pruning"; exit 1; }
echo "checkpoint commit: one shard per stage of replica 0; a failed write commits nothing, keeps the last good checkpoint"
