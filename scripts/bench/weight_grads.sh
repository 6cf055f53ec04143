#!/usr/bin/env bash
# Weight gradients accumulated per micro-batch vs batched over the step (pipeline.weight_grads),
# side by side: samples/s of configs/scaling_mlp.yaml on one stage (K=1) at a fixed batch of 256
# split into M micro-batches, runs interleaved; 'vs M=1' is the micro-batch efficiency.
#
#   scripts/bench/weight_grads.sh           # about 3 minutes on 2 cores
#
# Environment: MICRO (list, default "1 4 8 16"), THREADS (OpenMP threads, default 1), REPEATS
# (default 3; the fastest is shown), WAIT_IDLE (before each run, wait up to this many seconds for
# idle CPUs; default 10, 0 = no), MPIPE_BIN (default build/release/apps/mpipe). Throughput:
# scripts/bench/throughput.py (the logged windows after the first).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/best.sh
source scripts/bench/best.sh

micro_list=${MICRO:-1 4 8 16}
threads=${THREADS:-1}
repeats=${REPEATS:-3}
wait_idle=${WAIT_IDLE:-10}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x "$bin" ]] || { echo "weight_grads.sh: $bin is not an executable (set MPIPE_BIN)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
export OMP_NUM_THREADS=$threads

work=$(mktemp -d /tmp/mpipe-weight-grads.XXXXXX)
trap 'rm -rf "$work"' EXIT


echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime)"
echo "commands (each repeated $repeats times, interleaved; the fastest shown):"
declare -A samples
for ((r = 1; r <= repeats; ++r)); do
  for m in $micro_list; do
    for mode in accumulate batched; do
      dir=$work/m$m-$mode-r$r
      cmd=(mpirun -n 1 --bind-to core "$bin" train configs/scaling_mlp.yaml --run-dir "$dir"
        --set pipeline.stages=1 --set pipeline.micro_batches="$m" --set pipeline.weight_grads="$mode")
      if ((r == 1)); then echo "  OMP_NUM_THREADS=$threads ${cmd[*]}"; fi
      if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
      "${cmd[@]}" >"$dir.log" 2>&1 || { echo "weight_grads.sh: run failed:" >&2; tail "$dir.log" >&2; exit 1; }
      samples[$m,$mode]+="$(python3 scripts/bench/throughput.py "$dir") "
      rm -rf "$dir"  # (its final checkpoint is 34 MB)
    done
  done
done
echo "load after:  $(uptime)"
echo
echo "| M | rows | accumulate samples/s | vs M=1 | batched samples/s | vs M=1 | batched / accumulate | runs accumulate | runs batched |"
echo "|---|---|---|---|---|---|---|---|---|"
first=${micro_list%% *}
a1=$(best <<<"${samples[$first,accumulate]}")
b1=$(best <<<"${samples[$first,batched]}")
for m in $micro_list; do
  a=$(best <<<"${samples[$m,accumulate]}")
  b=$(best <<<"${samples[$m,batched]}")
  awk -v m="$m" -v a="$a" -v b="$b" -v a1="$a1" -v b1="$b1" -v ra="${samples[$m,accumulate]}" \
    -v rb="${samples[$m,batched]}" 'BEGIN {
      printf "| %d | %d | %.0f | %.2f | %.0f | %.2f | %.2fx | %s| %s|\n", m, 256 / m, a, a / a1, b,
        b / b1, b / a, ra, rb }'
done
echo "(M=$first is the reference of 'vs M=1'; with one micro-batch both are the same GEMM)"
