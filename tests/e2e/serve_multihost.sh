#!/usr/bin/env bash
# The daemon assumes one host no more than `train` does: with Open MPI's TCP transport only and a
# different working directory per rank (an MPMD command line with --wdir) and a relative spool,
# rank 1 sees none of rank 0's files. The experiment reaches it by broadcast, each rank writes
# its own copy of experiment.yaml and its own checkpoint shard, and the weights are bit-identical
# to a `train` run on shared memory. An experiment that passes its memory limit on rank 1 ends the
# job (exit 4) with the failure note in rank 1's folder only; the next daemon still finds it
# (every rank reads its own), records the experiment as failed and runs the next one.
# Usage: serve_multihost.sh CONFIG (memory_limit.yaml next to it)
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
# serve LOG: the daemon on both "hosts"; $status is its exit status.
serve() {
  status=0
  timeout 120 mpirun --oversubscribe --bind-to none --mca btl tcp,self "${apps[@]}" \
    > "$1" 2>&1 || status=$?
}
serve "$WORK/serve.log"
((status == 0)) || { cat "$WORK/serve.log"; echo "FAILED: daemon"; exit 1; }
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
# Rank 1 passes its memory limit: its note is in its own folder, which rank 0 cannot see.
(cd "$WORK/host0" && "$MPIPE" submit spool "$(dirname "$config")/memory_limit.yaml" --name big &&
  "$MPIPE" submit spool "$config" --name after --set train.steps=3) || { echo "FAILED: submit"; exit 1; }
serve "$WORK/big.log"
((status == 4)) || { cat "$WORK/big.log"; echo "FAILED: big: exit status $status (expected 4)"; exit 1; }
[[ -e $WORK/host1/spool/runs/big/failure.json && ! -e $WORK/host0/spool/runs/big/failure.json ]] ||
  { ls -R "$WORK/host0/spool/runs" "$WORK/host1/spool/runs"; echo "FAILED: big: notes"; exit 1; }
serve "$WORK/after.log"
((status == 0)) || { cat "$WORK/after.log"; echo "FAILED: daemon after big"; exit 1; }
grep -q "\[error\] big: failed: rank 1 (pipeline rank 1): memory limit exceeded" "$WORK/after.log" &&
  grep -q "after: done at step 3" "$WORK/after.log" && ! grep -q "big: starting" "$WORK/after.log" ||
  { cat "$WORK/after.log"; echo "FAILED: big not recorded as failed, or after not run"; exit 1; }
[[ ! -e $WORK/host1/spool/runs/big/failure.json ]] || { echo "FAILED: rank 1's note left"; exit 1; }

echo "serve_multihost: TCP only, one working directory per rank: the daemon's run == train"
