#!/usr/bin/env bash
# The same product's rate from one fresh process to the next (issue 36): bench_gemm (a Linear's
# forward, ROWS x IN -> OUT, default 16 x 1024 -> 1024: the deep model's micro-batch product) in
# PROCESSES fresh processes (default 20) per variant, the variants interleaved: `standalone`, and
# `mpi` (under mpirun -n 1, inside MPI_Init, as an mpipe rank runs). One thread, pinned to CPU
# (default 0; PIN=none leaves it to the scheduler). Prints each variant's median, range and spread
# ((max - min) / median), and every process's rate.
#
#   scripts/bench/gemm_processes.sh      # about 1 minute
#
# Environment: BENCH_DIR (default build/release/apps/bench), MPIRUN (default mpirun), PROCESSES,
# ROWS, IN_FEATURES, OUT_FEATURES, PIN, VARIANTS (default "standalone mpi"), SECONDS_EACH (default 0.5).
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=${BENCH_DIR:-build/release/apps/bench}/bench_gemm
[[ -x "$bench" ]] || { echo "gemm_processes.sh: $bench is not an executable (build it)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
pin=${PIN:-0}
args=(--rows "${ROWS:-16}" --in "${IN_FEATURES:-1024}" --out "${OUT_FEATURES:-1024}" --seconds "${SECONDS_EACH:-0.5}")
read -ra variants <<<"${VARIANTS:-standalone mpi}"
taskset_args=()
[[ $pin == none ]] || taskset_args=(taskset -c "$pin")
echo "machine: $(env -u OMP_NUM_THREADS nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'); load before: $(uptime)"
echo "commands (${PROCESSES:-20} times each, interleaved):"
for variant in "${variants[@]}"; do
  case $variant in
    standalone) echo "  ${taskset_args[*]} $bench ${args[*]}" ;;
    mpi) echo "  ${MPIRUN:-mpirun} -n 1 --bind-to none ${taskset_args[*]} $bench ${args[*]} --mpi" ;;
    *) echo "gemm_processes.sh: unknown variant '$variant' (standalone, mpi)" >&2; exit 2 ;;
  esac
done
declare -A rates
for ((i = 0; i < ${PROCESSES:-20}; ++i)); do
  for variant in "${variants[@]}"; do
    if [[ $variant == standalone ]]; then
      line=$("${taskset_args[@]}" "$bench" "${args[@]}")
    else
      line=$("${MPIRUN:-mpirun}" -n 1 --bind-to none "${taskset_args[@]}" "$bench" "${args[@]}" --mpi)
    fi
    rates[$variant]+="$(awk '{ print $(NF - 1) }' <<<"$line") "
  done
done
printf '%-11s %8s %8s %8s %7s  %s\n' variant median min max spread "GFLOP/s of each process"
for variant in "${variants[@]}"; do
  python3 - "$variant" ${rates[$variant]} <<'PY'
import statistics, sys
name, rates = sys.argv[1], [float(r) for r in sys.argv[2:]]
median = statistics.median(rates)
print(f"{name:11s} {median:8.1f} {min(rates):8.1f} {max(rates):8.1f} "
      f"{100 * (max(rates) - min(rates)) / median:6.0f}%  {' '.join(f'{r:.0f}' for r in rates)}")
PY
done
echo "load after: $(uptime)"
