#!/usr/bin/env bash
# The daemon assumes one host no more than `train` does: with Open MPI's TCP transport only and a
# different working directory per rank (an MPMD command line with --wdir) and a relative spool,
# rank 1 sees none of rank 0's files. The experiment reaches it by broadcast, each rank writes
# its own copy of experiment.yaml and its own checkpoint shard, and the weights are bit-identical
# to a `train` run on shared memory. Usage: serve_multihost.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$(realpath "$1")
MPIPE=$(realpath "$MPIPE")
steps=(--set train.steps=6 --set checkpoint.every=3)

mkdir -p "$WORK/host0" "$WORK/host1"
(cd "$WORK/host0" && "$MPIPE" submit spool "$config" --name x "${steps[@]}") ||
  { echo "FAILED: submit"; exit 1; }
apps=()
for r in 0 1; do
  ((r > 0)) && apps+=(:)
  apps+=(-n 1 --wdir "$WORK/host$r" "$MPIPE" serve --spool spool --idle-exit 1s)
done
timeout 120 mpirun --oversubscribe --bind-to none --mca btl tcp,self "${apps[@]}" \
  > "$WORK/serve.log" 2>&1 || { cat "$WORK/serve.log"; echo "FAILED: daemon"; exit 1; }
grep -q "x: done at step 6" "$WORK/serve.log" || { cat "$WORK/serve.log"; echo "FAILED: x not done"; exit 1; }
cmp "$WORK/host0/spool/runs/x/experiment.yaml" "$WORK/host1/spool/runs/x/experiment.yaml" ||
  { echo "FAILED: rank 1's experiment file"; exit 1; }
[[ -e $WORK/host1/spool/runs/x/checkpoints/step_00000006/stage_1.safetensors &&
   -e $WORK/host0/spool/runs/x/checkpoints/step_00000006/meta.json ]] ||
  { ls -R "$WORK/host0" "$WORK/host1"; echo "FAILED: shards not in each rank's folder"; exit 1; }
[[ ! -e $WORK/host1/spool/status.json && ! -e $WORK/host1/spool/queue ]] ||
  { echo "FAILED: rank 1 touched the spool"; exit 1; }

train 2 straight "$config" "${steps[@]}"
"$MPIPE" compare "$WORK/straight.safetensors" "$WORK/host0/spool/runs/x/weights.safetensors" ||
  { echo "FAILED: weights differ from train"; exit 1; }
echo "serve_multihost: TCP only, one working directory per rank: the daemon's run == train"
