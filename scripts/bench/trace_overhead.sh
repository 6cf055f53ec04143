#!/usr/bin/env bash
# What log.trace_steps costs the steps it does not trace: samples/s of the untraced steps of a
# run that traces steps 5 and 6, beside the same run without tracing, and (with MPIPE_BASE) the
# same run on a binary without the trace code at all. Two stages, runs interleaved, the fastest
# of REPEATS shown. Each run logs windows of more than 7 steps, so the traced steps and the
# merge into trace.json fall in the first window, which throughput.py drops as warm-up: the
# numbers are those of untraced steps only.
#
#   scripts/bench/trace_overhead.sh                      # about 3 minutes on 2 cores
#   MPIPE_BASE=/path/to/old/mpipe scripts/bench/trace_overhead.sh
#
# Models: the e2e tests' tiny MLP (tests/e2e/files/mlp.yaml: about 1 ms a step, all latency, so
# a per-op cost would show most) and configs/scaling_mlp.yaml at M=8 (about 13 GFLOP a step).
# Environment: REPEATS (default 3), WAIT_IDLE (seconds to wait for idle CPUs before each run,
# default 10; 0 = no), MPIPE_BIN (default build/release/apps/mpipe), MPIPE_BASE (optional).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/best.sh
source scripts/bench/best.sh

repeats=${REPEATS:-3}
wait_idle=${WAIT_IDLE:-10}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
base=${MPIPE_BASE:-}
[[ -x "$bin" ]] || { echo "trace_overhead.sh: $bin is not an executable (set MPIPE_BIN)" >&2; exit 2; }
[[ -z "$base" || -x "$base" ]] || { echo "trace_overhead.sh: MPIPE_BASE $base is not an executable" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
export OMP_NUM_THREADS=1

work=$(mktemp -d /tmp/mpipe-trace-overhead.XXXXXX)
trap 'rm -rf "$work"' EXIT

declare -A model_args=(
  [tiny_mlp]="tests/e2e/files/mlp.yaml --set train.steps=3000 --set log.every=300 --set train.eval_batches=1"
  [scaling_mlp]="configs/scaling_mlp.yaml --set train.steps=48 --set log.every=8 --set pipeline.micro_batches=8 --set pipeline.partition=[8,9]"
)
models="tiny_mlp scaling_mlp"
modes="untraced traced"
[[ -n "$base" ]] && modes="base $modes"

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime)"
echo "commands (each repeated $repeats times, interleaved; the fastest shown):"
declare -A samples
for ((r = 1; r <= repeats; ++r)); do
  for model in $models; do
    for mode in $modes; do
      dir=$work/$model-$mode-r$r
      run_bin=$bin
      extra=()
      [[ $mode == base ]] && run_bin=$base
      [[ $mode == traced ]] && extra=(--set 'log.trace_steps=[5, 6]')
      # shellcheck disable=SC2206  # the model's arguments are words
      cmd=(mpirun -n 2 --bind-to core "$run_bin" train ${model_args[$model]} --run-dir "$dir"
        "${extra[@]}")
      if ((r == 1)); then echo "  OMP_NUM_THREADS=1 ${cmd[*]}"; fi
      if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
      "${cmd[@]}" >"$dir.log" 2>&1 || { echo "trace_overhead.sh: run failed:" >&2; tail "$dir.log" >&2; exit 1; }
      if [[ $mode == traced && ! -s $dir/trace.json ]]; then
        echo "trace_overhead.sh: $dir wrote no trace.json" >&2
        exit 1
      fi
      samples[$model,$mode]+="$(python3 scripts/bench/throughput.py "$dir") "
      rm -rf "$dir"
    done
  done
done
echo "load after:  $(uptime)"
echo
header="| model |"
rule="|---|"
for mode in $modes; do
  header+=" $mode samples/s | runs |"
  rule+="---|---|"
done
echo "$header traced / untraced |"
echo "$rule---|"
for model in $models; do
  row="| $model |"
  for mode in $modes; do row+=" $(best <<<"${samples[$model,$mode]}") | ${samples[$model,$mode]}|"; done
  ratio=$(awk -v t="$(best <<<"${samples[$model,traced]}")" -v u="$(best <<<"${samples[$model,untraced]}")" \
    'BEGIN { printf "%.3f", t / u }')
  echo "$row $ratio |"
done
echo "(untraced steps only: the first logged window, which holds steps 5 and 6 and the merge, is dropped)"
