#!/usr/bin/env bash
# Why equal stages compute at different speeds on a many-core machine (issue 36, item 2): the
# CPUs' topology; each CPU's GEMM rate alone, with every CPU busy, and beside CPU 0 (a pair that
# shares a physical core, or a cache, runs slower together); then the reference model (16 x
# Linear(1024) + ReLU and a head, batch 2048, M = 32, 2 threads per rank) at K = 8 under three
# placements, ROUNDS rounds interleaved: each stage's compute per step (summary.json), and per
# rank what the kernel counted (scripts/bench/rank_usage.py: involuntary context switches, page
# faults, the CPUs it was bound to). And K = 1 (2 threads) for the speed-up.
#   core-pairs      mpirun --map-by slot:PE=2 --bind-to core (each rank 2 CPUs of its own; its
#                   OpenMP threads free to move between them: the setting docs/benchmarks-16-cores.md
#                   measured)
#   core-pairs+omp  the same, each OpenMP thread on one CPU (OMP_PROC_BIND=close OMP_PLACES=cores)
#   unbound         mpirun --bind-to none
#   NAME+measured   NAME with pipeline.balance: measured (layers moved from the ranks measured
#                   slowest after balance_after steps: issue 36's "equal stages", adapted to)
#
#   bash .portable/run.sh scripts/bench/core_placement.sh   # about 4 minutes on 16 CPUs
#
# Environment: MPIPE_BIN, BENCH_DIR (defaults build/release/apps/...), MPIRUN (default mpirun),
# ROUNDS (default 3), STEPS (default 8), PLACEMENTS (default the first three), GEMM (default 1;
# 0 skips the per-CPU rates).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/partition.sh
bin=${MPIPE_BIN:-build/release/apps/mpipe}
gemm=${BENCH_DIR:-build/release/apps/bench}/bench_gemm
mpirun=${MPIRUN:-mpirun}
for exe in "$bin" "$gemm"; do
  [[ -x "$exe" ]] || { echo "core_placement.sh: $exe is not an executable (build it)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset OMP_WAIT_POLICY OMP_PROC_BIND OMP_PLACES  # libgomp's defaults, as a user's run has
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
work=$(mktemp -d /tmp/mpipe-placement.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "machine: $cpus CPUs, $(lscpu | sed -n 's/^Model name: *//p'); load before: $(uptime)"
lscpu | grep -E '^(Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node|L2|L3|CPU (max )?MHz)' |
  sed 's/^/  /'
echo "  CPUs sharing a core (thread_siblings_list): $(cat /sys/devices/system/cpu/cpu*/topology/thread_siblings_list 2>/dev/null | sort -un | tr '\n' ' ')"
echo "  transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"

# gemm CPU...: bench_gemm at one thread on each CPU given, all at once; prints "cpu rate" lines.
gemm_args=(--rows 256 --in 1024 --out 1024 --seconds 0.4)
gemm_on() {
  local cpu
  for cpu in "$@"; do
    OMP_NUM_THREADS=1 taskset -c "$cpu" "$gemm" "${gemm_args[@]}" >"$work/gemm.$cpu" &
  done
  wait
  for cpu in "$@"; do echo "$cpu $(awk '{ print $(NF - 1) }' "$work/gemm.$cpu")"; done
}
if [[ ${GEMM:-1} != 0 ]]; then
echo
echo "GEMM 256 x 1024 -> 1024 f32 at one thread, GFLOP/s per CPU:"
alone=() busy=() pair=()
for ((c = 0; c < cpus; ++c)); do alone+=("$(gemm_on "$c" | cut -d' ' -f2)"); done
mapfile -t all < <(gemm_on $(seq 0 $((cpus - 1))) | cut -d' ' -f2)
for ((c = 0; c < cpus; ++c)); do busy+=("${all[c]}"); done
pair+=("-")
for ((c = 1; c < cpus; ++c)); do
  pair+=("$(gemm_on 0 "$c" | awk '{ printf "%s%s", sep, $2; sep = "/" }')")
done
printf '%5s %8s %10s %14s\n' cpu alone "all busy" "with cpu 0"
for ((c = 0; c < cpus; ++c)); do
  printf '%5d %8s %10s %14s\n' "$c" "${alone[c]}" "${busy[c]}" "${pair[c]}"
done
echo "  ('with cpu 0': CPU 0's rate / this CPU's, the two running at once)"
fi

# The reference model at K = 8 (fewer where the machine has fewer than 16 CPUs) and K = 1.
config=$work/reference.yaml
sed 's/repeat: 8/repeat: 16/' configs/scaling_mlp.yaml >"$config"
k=$((cpus / 2 >= 8 ? 8 : cpus / 2))
read -ra placements <<<"${PLACEMENTS:-core-pairs core-pairs+omp unbound}"
train_args=(--set train.batch_size=2048 --set data.num_examples=4096 --set pipeline.micro_batches=32
  --set train.steps="${STEPS:-8}" --set log.every=1)
echo
echo "reference model, batch 2048, M = 32, 2 threads per rank, ${STEPS:-8} steps, ${ROUNDS:-3} rounds interleaved; commands:"
run_k() {  # run_k NAME K PLACEMENT: one run into $work/NAME; prints its line of the table
  local name=$1 ranks=$2 placement=${3%+measured} mpi_args=(--map-by slot:PE=2 --bind-to core)
  local env_args=() layout=(--set "pipeline.partition=$(block_partition 16 "$ranks")")
  [[ $3 != *+measured ]] || layout=(--set pipeline.partition=auto --set pipeline.balance=measured)
  [[ $placement != unbound ]] || mpi_args=(--bind-to none)
  [[ $placement != core-pairs+omp ]] || env_args=(-x OMP_PROC_BIND=close -x OMP_PLACES=cores)
  mkdir -p "$work/$name.usage"
  local cmd=("$mpirun" -n "$ranks" "${mpi_args[@]}" -x OMP_NUM_THREADS=2 "${env_args[@]}"
    python3 scripts/bench/rank_usage.py "$work/$name.usage" "$bin" train "$config"
    --run-dir "$work/$name" "${train_args[@]}" --set pipeline.stages="$ranks"
    "${layout[@]}")
  echo "  ${cmd[*]}" >>"$work/commands"
  "${cmd[@]}" >"$work/$name.log" 2>&1 || { tail "$work/$name.log" >&2; exit 1; }
  python3 - "$work/$name" "$name" "$(python3 scripts/bench/throughput.py "$work/$name")" <<'PY'
import glob, json, sys
run, name, rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
summary = json.load(open(f"{run}/summary.json"))
compute = summary.get("compute_ms_per_rank", [])
usage = sorted((json.load(open(p)) for p in glob.glob(f"{run}.usage/usage.*.json")),
               key=lambda u: u["rank"])
spread = (max(compute) / min(compute) - 1) * 100 if compute else float("nan")
print(f"{name:24s} {rate:9.0f} {' '.join(f'{c:5.0f}' for c in compute):48s} {spread:5.0f}%  "
      + " ".join(f"{u['cpus']}:{u['involuntary_switches']}/{u['minor_faults'] // 1000}k" for u in usage))
PY
}
{
  printf '%-24s %9s %-48s %6s  %s\n' run samples/s "compute ms per step, by stage" spread \
    "rank CPUs:involuntary switches/minor faults"
  for ((round = 1; round <= ${ROUNDS:-3}; ++round)); do
    run_k "k1-r$round" 1 core-pairs
    for placement in "${placements[@]}"; do run_k "k$k-$placement-r$round" "$k" "$placement"; done
  done
} >"$work/table"
grep -- '-r1 ' "$work/commands"
cat "$work/table"
echo "load after: $(uptime)"
