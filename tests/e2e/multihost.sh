#!/usr/bin/env bash
# Nothing assumes one host: Open MPI's TCP transport only (what crosses a network) and a
# different working directory per rank (an MPMD command line with --wdir), with a relative run
# directory, so each rank writes its checkpoint shard into its own folder like a node-local
# disk. K = 2 gives weights bit-identical to one rank, K = 2 x D = 2 to the same layout on shared
# memory, and the checkpoint commits by agreement, not by rank 0 looking at other ranks' files.
# Usage: multihost.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$(realpath "$1")
MPIPE=$(realpath "$MPIPE")
train 1 k1 "$config" --set train.steps=4 --set checkpoint.every=2

# tcp_run NAME RANKS [--set ...]: rank r runs in $WORK/NAME/host<r>, run dir "run" (relative).
tcp_run() {
  local name=$1 ranks=$2
  shift 2
  local apps=() r
  for ((r = 0; r < ranks; ++r)); do
    mkdir -p "$WORK/$name/host$r"
    ((r > 0)) && apps+=(:)
    apps+=(-n 1 --wdir "$WORK/$name/host$r" "$MPIPE" train "$config" --run-dir run
      --export-weights weights.safetensors --set train.steps=4 --set checkpoint.every=2
      --set checkpoint.keep=1 "$@")
  done
  timeout 120 mpirun --oversubscribe --bind-to none --mca btl tcp,self "${apps[@]}" \
    > "$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log"; echo "FAILED: $name"; exit 1; }
  cp "$WORK/$name/host0/weights.safetensors" "$WORK/$name.safetensors"
}

tcp_run tcp2 2
same k1 tcp2
# Each "host" holds only its own shard; rank 0's holds the manifest of both.
[[ -e "$WORK/tcp2/host0/run/checkpoints/step_00000004/meta.json" ]] || { echo "FAILED: no commit"; exit 1; }
[[ -e "$WORK/tcp2/host1/run/checkpoints/step_00000004/stage_1.safetensors" ]] ||
  { echo "FAILED: stage 1's shard is not in its own folder"; exit 1; }
[[ ! -e "$WORK/tcp2/host0/run/checkpoints/step_00000004/stage_1.safetensors" ]] ||
  { echo "FAILED: stage 1's shard on host 0"; exit 1; }
# checkpoint.keep 1: every host keeps only the newest step, host 1 by its own pruning.
for host in host0 host1; do
  [[ $(ls "$WORK/tcp2/$host/run/checkpoints") == step_00000004 ]] ||
    { ls -R "$WORK/tcp2/$host/run/checkpoints"; echo "FAILED: old checkpoints left on $host"; exit 1; }
done

# A checkpoint file missing on rank 1's node only (its shard, deleted here; that node holds no
# manifest either): the resume is refused on every rank with one line, which names rank 1 and its
# host (rank 0 prints it).
rm "$WORK/tcp2/host1/run/checkpoints/step_00000004/stage_1.safetensors"
status=0
resume=(train "$config" --run-dir run --resume --set train.steps=6)
timeout 120 mpirun --oversubscribe --bind-to none --mca btl tcp,self \
  -n 1 --wdir "$WORK/tcp2/host0" "$MPIPE" "${resume[@]}" : \
  -n 1 --wdir "$WORK/tcp2/host1" "$MPIPE" "${resume[@]}" > "$WORK/lost_shard.out" 2>&1 || status=$?
cat "$WORK/lost_shard.out"
[[ $status -eq 2 && $(grep -c "\[error\]" "$WORK/lost_shard.out") -eq 1 ]] ||
  { echo "FAILED: lost_shard: exit status $status, or not one error line"; exit 1; }
grep -qE "^\[[^]]*\] \[rank 0/2\] \[error\] rank 1 \(pipeline rank 1, host $(hostname)\): run/checkpoints/step_00000004/[^ ]+: missing" \
  "$WORK/lost_shard.out" || { echo "FAILED: lost_shard: the line names no rank 1 and host"; exit 1; }

layout=(--set pipeline.stages=2 --set pipeline.data_parallel=2)
tcp_run tcp4 4 "${layout[@]}"
train 4 shm4 "$config" --set train.steps=4 "${layout[@]}"
same shm4 tcp4
echo "multihost: TCP only, one working directory per rank: K=2 == K=1, K=2 x D=2 == shared memory;" \
  "a shard missing on one node names the rank and host"
