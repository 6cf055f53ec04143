#!/usr/bin/env bash
# Pipeline scaling table: training throughput of configs/scaling_mlp.yaml for K stages x M micro-batches.
#
#   scripts/bench/scaling.sh                       # K = 1 2, M = 1 4 8 16 (a 2-core machine)
#   STAGES="1 2 4 8" MICRO="1 4 8 16 32" scripts/bench/scaling.sh     # a bigger machine
#
# Environment: STAGES, MICRO (lists), REPEATS (runs per cell, the fastest is shown; default 2),
# WAIT_IDLE (before each run, wait up to this many seconds for idle CPUs; default 10, 0 = no;
# the defaults keep the script within about 5 minutes on the 2-core machine),
# STEPS (default: the config's), THREADS (OpenMP threads per rank, default 1), MPIPE_BIN
# (default build/release/apps/mpipe), CONFIG (default configs/scaling_mlp.yaml), MPIRUN_ARGS
# (replaces the binding options), UNIFORM_PARTITION=1 (don't balance the stages), KEEP_RUNS=1
# (keep the run directories; each holds a 34 MB final checkpoint). Extra arguments go to every
# `mpipe train` (e.g. --set pipeline.recompute=always).
#
# Throughput of a run (scripts/bench/throughput.py): the logged windows of metrics.jsonl after
# the first (warm-up), combined as total samples / total time. The global batch is fixed, so M
# only changes the micro-batch size (256/M rows). "ideal" is K*M/(M+K-1), the GPipe bubble bound
# on the speedup over one stage at the same M, for balanced stages and free communication.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/best.sh
source scripts/bench/best.sh
# shellcheck source=scripts/bench/partition.sh
source scripts/bench/partition.sh

stages_list=${STAGES:-1 2}
micro_list=${MICRO:-1 4 8 16}
repeats=${REPEATS:-2}
wait_idle=${WAIT_IDLE:-10}
threads=${THREADS:-1}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
config=${CONFIG:-configs/scaling_mlp.yaml}
[[ -x "$bin" ]] || { echo "scaling.sh: $bin is not an executable (build it or set MPIPE_BIN)" >&2; exit 2; }
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # nproc obeys OMP_NUM_THREADS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=$threads
# Idle OpenMP threads sleep at once (PASSIVE) only where ranks share cores; otherwise libgomp's
# default (spin a while, then sleep), as a run with cores of its own has.
largest_k=$(tr ' ' '\n' <<<"$stages_list" | sort -n | tail -1)
if ((largest_k * threads > cores)); then export OMP_WAIT_POLICY=PASSIVE; else unset OMP_WAIT_POLICY; fi

work=$(mktemp -d /tmp/mpipe-scaling.XXXXXX)
if [[ "${KEEP_RUNS:-0}" == 1 ]]; then
  trap 'echo "run directories kept in $work"' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi

# Layer counts per stage that give each stage the same number of (linear, relu) blocks of the
# default config (8 blocks + 1 head layer, which goes to the last stage); uniform with
# UNIFORM_PARTITION=1; the config's own partition (by default the planner's, auto) otherwise.
partition_args() {  # K
  if [[ "${UNIFORM_PARTITION:-0}" == 1 ]]; then echo "--set pipeline.partition=uniform"; return 0; fi
  [[ "$config" == configs/scaling_mlp.yaml ]] || return 0
  echo "--set pipeline.partition=$(block_partition 8 "$1")"
}

mpirun_args() {  # K
  if [[ -n "${MPIRUN_ARGS:-}" ]]; then
    echo "$MPIRUN_ARGS"
  elif (($1 * threads > cores)); then
    echo "--oversubscribe --bind-to none"
  elif ((threads == 1)); then
    echo "--bind-to core"
  else
    echo "--map-by slot:PE=$threads --bind-to core"
  fi
}

# Sets `cmd` to the command of one run.
make_cmd() {  # K M dir
  # shellcheck disable=SC2046,SC2207  # the helpers print word lists
  cmd=(mpirun -n "$1" $(mpirun_args "$1") "$bin" train "$config" --run-dir "$3"
    --set pipeline.stages="$1" --set pipeline.micro_batches="$2" $(partition_args "$1"))
  if [[ -n "${STEPS:-}" ]]; then cmd+=(--set train.steps="$STEPS"); fi
  cmd+=("${extra[@]}")
}

extra=("$@")
for k in $stages_list; do
  if [[ "$config" == configs/scaling_mlp.yaml ]] && ((k > 8)); then
    echo "scaling.sh: $config has 8 blocks: at most 8 stages" >&2
    exit 2
  fi
done
echo "machine: $cores cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime)"
echo "OpenMP: $threads thread(s) per rank, OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-default}"
echo "commands (each repeated $repeats times, interleaved; the fastest shown):"
declare -A samples
for ((r = 1; r <= repeats; ++r)); do
  for k in $stages_list; do
    for m in $micro_list; do
      dir=$work/k$k-m$m-r$r
      make_cmd "$k" "$m" "$dir"
      if ((r == 1)); then echo "  OMP_NUM_THREADS=$threads ${cmd[*]}"; fi
      if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
      "${cmd[@]}" >"$dir.log" 2>&1 || { echo "scaling.sh: run failed:" >&2; tail "$dir.log" >&2; exit 1; }
      samples[$k,$m]+="$(python3 scripts/bench/throughput.py "$dir") "
    done
  done
done
echo "load after:  $(uptime)"

first_k=${stages_list%% *}
first_m=${micro_list%% *}
base=$(best <<<"${samples[$first_k,$first_m]}")
echo
printf '%3s %4s %12s %14s %16s %8s   %s\n' K M samples/s "vs K=$first_k" "vs K=$first_k,M=$first_m" ideal \
  "runs (samples/s)"
for k in $stages_list; do
  for m in $micro_list; do
    fast=$(best <<<"${samples[$k,$m]}")
    same_m=$(best <<<"${samples[$first_k,$m]}")
    awk -v k="$k" -v m="$m" -v s="$fast" -v a="$same_m" -v b="$base" -v k0="$first_k" \
      -v runs="${samples[$k,$m]}" 'BEGIN {
        ideal = (k * m / (m + k - 1)) / (k0 * m / (m + k0 - 1))
        n = split(runs, v, " "); list = ""
        for (i = 1; i <= n; ++i) list = list sprintf("%s%.0f", i > 1 ? " " : "", v[i])
        printf "%3d %4d %12.0f %13.2fx %15.2fx %7.2fx   %s\n", k, m, s, s / a, s / b, ideal, list
      }'
  done
done
# The headline: K stages (1 thread per rank by default) against one stage without micro-batches.
for k in $stages_list; do
  [[ "$k" == "$first_k" ]] && continue
  best_m="" best_ratio=0
  for m in $micro_list; do
    ratio=$(awk -v s="$(best <<<"${samples[$k,$m]}")" -v b="$base" 'BEGIN { printf "%.2f", s / b }')
    if awk -v r="$ratio" -v b="$best_ratio" 'BEGIN { exit !(r > b) }'; then best_ratio=$ratio best_m=$m; fi
  done
  echo "K=$k vs K=$first_k M=$first_m: ${best_ratio}x at best (M=$best_m), $threads thread(s) per rank"
done
