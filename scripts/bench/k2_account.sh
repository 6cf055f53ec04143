#!/usr/bin/env bash
# Where K = 2's step goes against K = 1 M = 1's (issue 36: K = 2 >= 1.6x K = 1 M = 1 on 2 cores):
# configs/scaling_mlp.yaml at K = 1, M = 1 (one process, one thread) and at K = 2 at each M of MICRO
# under SCHEDULE with the weight gradients grouped by GROUP (one rank and one thread per core), ROUNDS
# rounds interleaved, each configuration run at two lengths (STEPS_SHORT and STEPS_LONG) at
# log.level: trace under `perf stat` per rank. k2_account.py prints per rank the step's compute,
# waiting, sending and the rest, each op kind's time and GFLOP/s at its rows, and what perf counted
# per step (the long run's counts less the short one's); then each product's rate alone on one
# CPU and beside the same product on the other (bench_gemm), a stage's four weights in turn.
#
#   scripts/bench/k2_account.sh      # about 2 minutes on the 2-core machine at ROUNDS=3
#
# Environment: ROUNDS (3), MICRO (8; a list such as "4 8" runs each), SCHEDULE (zbv), GROUP (default
# each M: one product over the step's rows; 1: weight_grads: accumulate), STEPS_SHORT (8),
# STEPS_LONG (32), MPIPE_BIN, BENCH_DIR, RUNS (a directory to keep the runs in; default a temporary one), BEFORE (an
# older mpipe binary: its two runs too, named before-*, in each round before this binary's).
# perf on a VM without hardware counters counts the software events only.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${MPIPE_BIN:-build/release/apps/mpipe}
gemm=${BENCH_DIR:-build/release/apps/bench}/bench_gemm
rounds=${ROUNDS:-3} schedule=${SCHEDULE:-zbv}
read -r -a micros <<<"${MICRO:-8}"
steps_short=${STEPS_SHORT:-8} steps_long=${STEPS_LONG:-32}
for exe in "$bin" "$gemm" ${BEFORE:+"$BEFORE"}; do
  [[ -x "$exe" ]] || { echo "k2_account.sh: $exe is not an executable (build it)" >&2; exit 2; }
done
command -v perf >/dev/null || { echo "k2_account.sh: needs perf (linux-perf)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
work=${RUNS:-$(mktemp -d /tmp/mpipe-k2-account.XXXXXX)}
mkdir -p "$work"
[[ -n "${RUNS:-}" ]] || trap 'rm -rf "$work"' EXIT
config=configs/scaling_mlp.yaml
# zbv: two chunks per rank, four stages of two blocks (the head on the last); otherwise one each.
k2_partition="[8,9]"
[[ $schedule == zbv || $schedule == interleaved ]] && k2_partition="[4,4,4,5]"
# k2_sets M: the K = 2 run's settings at M micro-batches.
k2_sets() {
  local group=${GROUP:-$1}
  printf -- '--set\n%s\n' "pipeline.schedule=$schedule" "pipeline.partition=$k2_partition"
  [[ $schedule == interleaved ]] && printf -- '--set\npipeline.virtual_stages=2\n'
  if ((group > 1)); then
    printf -- '--set\n%s\n' pipeline.weight_grads=grouped "pipeline.weight_group=$group"
  else  # (weight_grads: auto would group them)
    printf -- '--set\npipeline.weight_grads=accumulate\n'
  fi
}

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime)"
# run BIN NAME K M [--set ...]: the configuration at both lengths, each rank under perf stat.
run() {
  local bin=$1 name=$2 k=$3 m=$4 length steps dir
  shift 4
  for length in short long; do
    steps=$steps_short
    [[ $length == long ]] && steps=$steps_long
    dir=$work/$name-$length
    rm -rf "$dir" && mkdir -p "$dir"
    # shellcheck disable=SC2016  # expanded by each rank's bash: its own rank
    local cmd=(mpirun -n "$k" --bind-to core bash -c
      'exec perf stat -x, -o "$0/perf.$OMPI_COMM_WORLD_RANK" -e task-clock,page-faults,context-switches,cpu-migrations "$@"'
      "$dir" "$bin" train "$config" --run-dir "$dir/run" --set "train.steps=$steps"
      --set log.every=4 --set log.level=trace --set "pipeline.stages=$k"
      --set "pipeline.micro_batches=$m" "$@")
    echo "train.steps=$steps ${cmd[*]}" >"$dir/run.log"
    "${cmd[@]}" >>"$dir/run.log" 2>&1 || { tail -5 "$dir/run.log"; echo "$name: failed" >&2; }
    cp "$dir/run/metrics.jsonl" "$dir/" 2>/dev/null || true
  done
}
for ((r = 1; r <= rounds; r++)); do
  echo "round $r: $(uptime)"
  for which in ${BEFORE:+before} this; do
    exe=$bin prefix=""
    [[ $which == before ]] && exe=$BEFORE prefix=before-
    run "$exe" "${prefix}k1-m1-r$r" 1 1 --set "pipeline.partition=[17]"
    for m in "${micros[@]}"; do
      mapfile -t sets < <(k2_sets "$m")
      run "$exe" "${prefix}k2-m$m-r$r" 2 "$m" "${sets[@]}"
    done
  done
done
echo "commands (each at train.steps=$steps_short and $steps_long):"
sed -n '1s/^train.steps=[0-9]* /  /p' "$work/k1-m1-r1-long/run.log" "$work/k2-m"*-r1-long/run.log
echo "load after: $(uptime)"
specs=()
for prefix in ${BEFORE:+before-} ""; do
  specs+=("${prefix}k1-m1:1:gpipe:[17]:256:1")
  for m in "${micros[@]}"; do
    specs+=("${prefix}k2-m$m:2:$schedule:$k2_partition:$((256 / m)):${GROUP:-$m}")
  done
done
python3 scripts/bench/k2_account.py "$work" "${specs[@]}"

echo
echo "one product at one thread, a stage's 4 weights in turn, GFLOP/s: alone on CPU 0, and on"
echo "CPUs 0 and 1 at once (the two ranks' products side by side):"
printf '  %-20s %8s %16s\n' product alone "together (0/1)"
gemm_rows=(256)
for m in "${micros[@]}"; do gemm_rows+=($((256 / m))); done
for n in $(printf '%s\n' "${gemm_rows[@]}" | sort -un); do
  args=(--rows "$n" --in 1024 --out 1024 --weights 4 --seconds 0.5)
  alone=$(taskset -c 0 "$gemm" "${args[@]}" | awk '{ print $(NF - 1) }')
  taskset -c 0 "$gemm" "${args[@]}" >"$work/gemm.0" &
  taskset -c 1 "$gemm" "${args[@]}" >"$work/gemm.1" &
  wait
  printf '  %-20s %8s %16s\n' "$n x 1024 -> 1024" "$alone" \
    "$(awk '{ print $(NF - 1) }' "$work/gemm.0")/$(awk '{ print $(NF - 1) }' "$work/gemm.1")"
done
