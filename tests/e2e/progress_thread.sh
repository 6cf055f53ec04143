#!/usr/bin/env bash
# comm.progress_thread only moves messages sooner: K=2 and K=2 x D=2 runs with the MPI progress
# thread end with weights bit-identical to the same runs without it, and every rank ran one; a
# run that fails (a non-finite loss) with the thread still ends with one line and a non-zero exit
# on every rank (the thread is joined while the error unwinds), no hang, no MPI_ABORT. A rank
# bound to as many cores as it has compute threads warns that the thread has no core of its own;
# one with a spare core does not.
# Usage: progress_thread.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
for layout in "2 k2 --set pipeline.stages=2" \
  "4 k2d2 --set pipeline.stages=2 --set pipeline.data_parallel=2"; do
  read -r ranks name sets <<< "$layout"
  # shellcheck disable=SC2086  # sets is a word list
  train "$ranks" "$name" "$config" $sets
  # shellcheck disable=SC2086
  train "$ranks" "$name-thread" "$config" $sets --set comm.progress_thread=true --set log.level=debug
  same "$name" "$name-thread"
  (($(nproc) <= OMP_NUM_THREADS)) || ! grep -q "has no core of its own" "$WORK/$name-thread.log" ||
    { cat "$WORK/$name-thread.log"; echo "FAILED: $name: a warning with spare cores"; exit 1; }
  started=$(grep -c "MPI progress thread started" "$WORK/$name-thread.log" || true)
  [[ $started -eq $ranks ]] ||
    { cat "$WORK/$name-thread.log"; echo "FAILED: $name: $started of $ranks ranks started the thread"; exit 1; }
done
OMP_NUM_THREADS=1 timeout 120 mpirun -n 2 --bind-to core "$MPIPE" train "$config" --run-dir "$WORK/bound" \
  --set pipeline.stages=2 --set comm.progress_thread=true > "$WORK/bound.log" 2>&1 ||
  { cat "$WORK/bound.log"; echo "FAILED: bound: the run"; exit 1; }
warning="comm.progress_thread: this rank is bound to 1 core and computes with 1 thread, so the \
progress thread has no core of its own and slows the compute; bind each rank to one core more \
than its threads (mpirun --map-by slot:PE=2)"
[[ $(grep -cF "$warning" "$WORK/bound.log") -eq 2 ]] ||
  { cat "$WORK/bound.log"; echo "FAILED: bound: not one warning per rank"; exit 1; }

status=0
timeout 120 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$config" --run-dir "$WORK/diverge" \
  --set pipeline.stages=2 --set comm.progress_thread=true --set optimizer.kind=sgd \
  --set optimizer.lr=1e3 --set optimizer.clip_norm=0 --set train.steps=300 > "$WORK/diverge.log" 2>&1 ||
  status=$?
cat "$WORK/diverge.log"
[[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: diverge: exit status $status"; exit 1; }
[[ $(grep -c "\[error\]" "$WORK/diverge.log") -eq 1 ]] || { echo "FAILED: diverge: not one error line"; exit 1; }
grep -q "loss is .*stopped (train.on_nonfinite: stop" "$WORK/diverge.log" || { echo "FAILED: diverge: message"; exit 1; }
! grep -qE "MPI_ABORT|terminate called" "$WORK/diverge.log" || { echo "FAILED: diverge: aborted"; exit 1; }
echo "progress_thread: K=2 and K=2 x D=2 with the progress thread == without it (bit-identical); a failing run with it ends cleanly"
