#!/usr/bin/env bash
# checkpoint.peer_copy with the copies overlapped with the steps after a checkpoint (a copy thread
# on each rank, the commit at a later step boundary): K=2 on two hosts, a checkpoint every 2
# steps, each host holds its shard, the other host's copy and the commit of every kept step, and
# the run is bit-identical to the same run on one host (no copies). Then rank 1 stops itself
# (MPIPE_TEST_STOP_AT ...:peer_copy, in its copy thread) as the copies of step 5 start (past the
# watchdog's warm-up steps, which get the start-up deadline): the stop freezes the whole process,
# its main thread wherever it is then (still in step 5's checkpoint, or in step 6), and rank 0's
# watchdog ends the job (exit status 3) after comm.timeout in one line naming rank 1 and h2, in
# step 5 or 6; step 5 is committed nowhere (its copies never finished). About 15 s.
# Usage: peer_copy_overlap.sh CONFIG
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
start_hosts
settings=(--set train.steps=6 --set pipeline.stages=2 --set checkpoint.every=2
  --set checkpoint.keep=2 --set log.every=1)

train_here 2 here "$config" "${settings[@]}"
train_on over h1:1 h2:1 -- "$config" "${settings[@]}" --set checkpoint.peer_copy=true
same here over
for step in step_00000004 step_00000006; do
  for host in h1 h2; do
    dir=$WORK/$host/over/checkpoints/$step
    [[ -e $dir/meta.json && -e $dir/stage_0.safetensors && -e $dir/stage_1.safetensors &&
      $(find "$dir" -type f | wc -l) -eq 3 ]] ||
      { ls -R "$WORK"/h?/over; echo "FAILED: over: $host does not hold $step whole"; exit 1; }
  done
done
[[ ! -e $WORK/h1/over/checkpoints/step_00000002 && ! -e $WORK/h2/over/checkpoints/step_00000002 ]] ||
  { ls -R "$WORK"/h?/over; echo "FAILED: over: step 2 not pruned"; exit 1; }

# Rank 1 (h2) frozen in its copy thread while the copies of step 5 are pending.
status=0
"$WORK/host_exec" h1 "env MPIPE_TEST_STOP_AT=1:peer_copy:5 $(printf '%q ' timeout 120 mpirun -n 2 \
  --host h1:1,h2:1 --wdir "$LOCAL" --bind-to none --mca btl tcp,self "${MCA[@]}" \
  -x OMP_NUM_THREADS -x OMP_WAIT_POLICY -x MPIPE_TEST_STOP_AT "$MPIPE" train "$config" \
  --run-dir "$LOCAL/lost" --set train.steps=100000000 --set pipeline.stages=2 \
  --set checkpoint.every=5 --set checkpoint.peer_copy=true --set log.every=1 \
  --set comm.timeout=3s)" > "$WORK/lost.log" 2>&1 || status=$?
cat "$WORK/lost.log"
[[ $status -eq 3 ]] || { echo "FAILED: lost: exit status $status (the watchdog's is 3)"; exit 1; }
[[ $(grep -cE "watchdog: step [56]: .*rank 1 \(pipeline rank 1, host h2\)" "$WORK/lost.log") -eq 1 ]] ||
  { echo "FAILED: lost: not one watchdog line in step 5 or 6 naming rank 1 on h2"; exit 1; }
for host in h1 h2; do
  [[ ! -e $WORK/$host/lost/checkpoints/step_00000005/meta.json ]] ||
    { echo "FAILED: lost: step 5 committed on $host"; exit 1; }
done

passed=1
echo "multihost peer_copy_overlap: copies overlapped with the steps after each checkpoint," \
  "committed on both hosts and bit-identical to one host; a rank frozen in its copy thread ends" \
  "the job by the watchdog, the step committed nowhere"
