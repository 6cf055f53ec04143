#!/usr/bin/env bash
# Communication overlap, on shared memory and on TCP (`--mca btl tcp,self`, what multi-host
# runs use): about 2-3 minutes on the 2-core machine.
#
#   scripts/bench/overlap.sh
#
# 1. bench_comm (2 ranks): transfer time by message size, and the share of transfer time hidden
#    behind compute, hidden = 1 - (overlapped - compute alone) / transfer alone, for the
#    activation exchange of a stage of configs/scaling_mlp.yaml (4 blocks; 32 rows = M 8, 256
#    rows = M 1) and for its per-layer bucketed gradient allreduce (16.8 MB), without progress,
#    with progress between layers, and with the MPI progress thread (comm.progress_thread).
# 2. Where the step time goes in training (log.level: debug, step_times.py): K=2 M=8 and a
#    data-parallel run (K=1, D=2, M=1) of configs/scaling_mlp.yaml, each without and with the
#    progress thread.
#
# The progress thread pays off only with a core of its own: on a machine with 4 cores or more
# every run binds each rank to 2 cores (1 compute thread, 1 spare); on fewer, each rank to 1 core,
# where the thread can only cost.
#
# Environment: MPIPE_BIN (default build/release/apps/mpipe), BENCH_DIR (default
# build/release/apps/bench), STEPS (default 20), WAIT_IDLE (default 10 s before each run).
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${MPIPE_BIN:-build/release/apps/mpipe}
bench=${BENCH_DIR:-build/release/apps/bench}
steps=${STEPS:-20}
wait_idle=${WAIT_IDLE:-10}
for exe in "$bin" "$bench/bench_comm"; do
  [[ -x "$exe" ]] || { echo "overlap.sh: $exe is not an executable (build it)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
export OMP_NUM_THREADS=1
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
bind=(--bind-to core)
if ((cores >= 4)); then bind=(--map-by slot:PE=2 --bind-to core); fi
work=$(mktemp -d /tmp/mpipe-overlap.XXXXXX)
trap 'rm -rf "$work"' EXIT

run() {  # prints and runs a command, its output to $log
  echo "\$ OMP_NUM_THREADS=1 $*"
  if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
  "$@" >"$log" 2>&1 || { echo "overlap.sh: failed:" >&2; tail "$log" >&2; exit 1; }
}

echo "machine: $cores cores, $(lscpu | sed -n 's/^Model name: *//p'); each rank bound with ${bind[*]}"
echo "load before: $(uptime)"
for transport in "shared memory:" "TCP:--mca btl tcp,self"; do
  name=${transport%%:*}
  mca=${transport#*:}
  echo
  echo "=== $name"
  for rows in 32 256; do
    log=$work/comm-$rows.log
    # shellcheck disable=SC2086  # the transport is a word list
    run mpirun -n 2 "${bind[@]}" $mca "$bench/bench_comm" "$rows" 4
    if ((rows == 32)); then sed -n '/transfer time/,/^$/p' "$log"; fi
    sed -n '/overlap with compute/,$p' "$log"
  done
  for layout in "K=2 M=8:--set pipeline.stages=2 --set pipeline.micro_batches=8 --set pipeline.partition=[8,9]" \
    "K=1 D=2 M=1:--set pipeline.stages=1 --set pipeline.data_parallel=2"; do
    for thread in false true; do
      log=$work/train.log
      rm -rf "$work/run"
      # shellcheck disable=SC2086
      run mpirun -n 2 "${bind[@]}" $mca "$bin" train configs/scaling_mlp.yaml --run-dir "$work/run" \
        --set log.level=debug --set train.steps="$steps" --set comm.progress_thread=$thread \
        ${layout#*:}
      echo "${layout%%:*}, progress thread $thread, samples/s $(python3 scripts/bench/throughput.py "$work/run"):"
      python3 scripts/bench/step_times.py "$log" 3
    done
  done
done
echo
echo "load after:  $(uptime)"
