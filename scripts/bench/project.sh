#!/usr/bin/env bash
# The calibrated simulator against measurement, then projected past this machine.
#
#   scripts/bench/project.sh             # about 3-5 minutes on the 2-core machine
#
# 1. Transfer time by bytes: `mpirun -n 2 bench_comm` (shared memory; TRANSPORT="--mca btl
#    tcp,self" for TCP), half a ping-pong.
# 2. For each M in MICRO (default "1 4 8 16"): one stage of configs/scaling_mlp.yaml at
#    log.level: trace gives the per-op times (op_times.py: F and B of one micro-batch over the 8
#    blocks, and the rest of a step); bench_project (pipeline::project_blocks) predicts K = 2 from
#    them; the real K = 2 run is measured (throughput.py, the fastest of REPEATS, default 2).
# 3. The issue's reference model (16 blocks of width 1024, batch 2048, M = 32, 2 OpenMP threads
#    per rank): one stage measured here, then K = 1, 2, 4, 8 projected for a 16-core machine
#    whose cores are as fast as this machine's, against PyTorch's pipelining (282, 501 and 702
#    samples/s on 1, 4 and 8 stages). Set REFERENCE=0 to skip it.
# 4. Where this machine has the cores (2 per rank), the reference model is also measured at each
#    K of STAGES (default "1 2 4 8"): mpipe, and PyTorch's own pipeline (pytorch_pipeline.py,
#    torch.distributed.pipelining over gloo, where the python3 on the PATH has it), each rank
#    pinned to 2 cores of its own; the projection is checked against the measured mpipe runs,
#    and bench_fc's GEMM rate per rank alone is compared with all ranks computing at once (the
#    projection assumes a busy core is as fast as one alone).
#
# Environment: MICRO, STAGES, REPEATS, WAIT_IDLE (default 10 s before each measured run),
# MPIPE_BIN (default build/release/apps/mpipe), BENCH_DIR (default build/release/apps/bench).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/best.sh
source scripts/bench/best.sh
# shellcheck source=scripts/bench/partition.sh
source scripts/bench/partition.sh

micro_list=${MICRO:-1 4 8 16}
stages_list=${STAGES:-1 2 4 8}
repeats=${REPEATS:-2}
wait_idle=${WAIT_IDLE:-10}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
bench=${BENCH_DIR:-build/release/apps/bench}
transport=${TRANSPORT:-}
config=configs/scaling_mlp.yaml
for exe in "$bin" "$bench/bench_comm" "$bench/bench_project" "$bench/bench_fc"; do
  [[ -x "$exe" ]] || { echo "project.sh: $exe is not an executable (build it)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No run has more threads than cores, so libgomp's default wait policy, as on the projected
# machine whose ranks have 2 cores each (the 2-thread calibration of the reference model).
unset OMP_WAIT_POLICY
work=$(mktemp -d /tmp/mpipe-project.XXXXXX)
trap 'rm -rf "$work"' EXIT

idle() { if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi; }
run() {  # prints and runs a command, its output to $log
  echo "  $*"
  "$@" >"$log" 2>&1 || { echo "project.sh: failed:" >&2; tail "$log" >&2; exit 1; }
}

cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # nproc obeys OMP_NUM_THREADS
echo "machine: $cores cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime)"
echo "commands:"
log=$work/comm.log
idle
# shellcheck disable=SC2086  # the transport is a word list
OMP_NUM_THREADS=1 run mpirun -n 2 --bind-to core $transport "$bench/bench_comm" 32 4
transfer_ms() {  # bytes → one-way ms from the ping-pong table (sizes are 4 x powers of 4)
  awk -v b="$1" '$1 ~ /^[0-9]+$/ && NF == 3 && $1 + 0 >= b { printf "%.4f", $2 / 1000; exit }' \
    "$work/comm.log"
}

# Costs of one stage holding every block, from a trace run: sets f, b, rest (ms).
measure_costs() {  # M threads extra-args...
  local m=$1 threads=$2
  shift 2
  log=$work/k1-m$m.log
  idle
  OMP_NUM_THREADS=$threads run mpirun -n 1 --bind-to none "$bin" train "$config" \
    --run-dir "$work/k1-m$m" --set pipeline.stages=1 --set pipeline.micro_batches="$m" \
    --set log.level=trace "$@"
  read -r f b rest < <(python3 scripts/bench/op_times.py "$log" 3)
}

# The reference model measured at each K that fits this machine's cores (2 per rank), against
# the projection in $work/projected.txt and PyTorch's pipeline on the same cores.
measure_reference() {
  local k mpipe torch_line pytorch projected fits=()
  for k in $stages_list; do ((2 * k <= cores)) && fits+=("$k"); done
  if ((${#fits[@]} < 2)); then
    echo "(not measured: $cores cores hold fewer than two of K = $stages_list at 2 cores per rank)"
    return 0
  fi
  local have_torch=0
  python3 -c 'import torch.distributed.pipelining' 2>/dev/null && have_torch=1
  echo
  echo "reference measured on this machine, each rank pinned to 2 cores:"
  declare -A mpipe_rate torch_rate
  for k in "${fits[@]}"; do
    log=$work/ref-k$k.log
    idle
    OMP_NUM_THREADS=2 run mpirun -n "$k" --map-by slot:PE=2 --bind-to core "$bin" train "$config" \
      --run-dir "$work/ref-k$k" --set pipeline.stages="$k" --set pipeline.micro_batches=32 \
      --set "pipeline.partition=$(block_partition 16 "$k")" --set train.batch_size=2048 \
      --set data.num_examples=4096 --set train.steps=5 --set log.every=1
    mpipe_rate[$k]=$(python3 scripts/bench/throughput.py "$work/ref-k$k")
    if ((have_torch)); then
      log=$work/ref-torch-k$k.log
      idle
      run python3 -m torch.distributed.run --standalone --nproc-per-node "$k" \
        scripts/bench/pytorch_pipeline.py --threads 2 --steps 3 --warmup 1
      torch_line=$(grep '^pytorch_pipeline' "$log")
      torch_rate[$k]=$(sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' <<<"$torch_line")
    fi
  done
  ((have_torch)) && echo "PyTorch: ${torch_line##* }" || echo "(PyTorch's pipelining: not installed)"
  printf '%3s %14s %14s %8s %14s %10s\n' K "projected" "mpipe meas" error "PyTorch meas" \
    "mpipe/PT"
  for k in "${fits[@]}"; do
    projected=$(awk -v k="$k" '$1 == "gpipe" && $2 == k && $3 == 32 { print $5 }' "$work/projected.txt")
    mpipe=${mpipe_rate[$k]}
    pytorch=${torch_rate[$k]:-}
    awk -v k="$k" -v p="$projected" -v m="$mpipe" -v t="$pytorch" -v k1="${mpipe_rate[${fits[0]}]}" \
      -v t1="${torch_rate[${fits[0]}]:-}" 'BEGIN {
        printf "%3d %14.0f %8.0f %4.2fx %+7.1f%%", k, p, m, m / k1, 100 * (p - m) / m
        if (t != "") printf " %8.0f %4.2fx %9.2fx\n", t, t / t1, m / t; else printf "\n"
      }'
  done
  # The projection takes its per-core speed from one rank computing alone. With every rank
  # busy, cores can run slower (a shared power budget, memory bandwidth): the same GEMM, alone
  # and on every rank at once.
  local kmax=${fits[-1]} alone all
  alone=$(OMP_NUM_THREADS=2 "$bench/bench_fc" | awk '/^ +2048 x 2048/ { print $6 }')
  OMP_NUM_THREADS=2 mpirun -n "$kmax" --map-by slot:PE=2 --bind-to core \
    --output-filename "$work/fc" "$bench/bench_fc" >/dev/null 2>&1
  all=$(cat "$work"/fc/1/rank.*/stdout | awk '/^ +2048 x 2048/ { s += $6; n++ }
    END { printf "%.1f", s / n }')
  echo "bench_fc's 2048^3 f32 GEMM at 2 threads: $alone GFLOP/s alone, $all per rank (mean)" \
    "with $kmax ranks at once"
}

declare -A measured predicted k1
for ((r = 1; r <= repeats; ++r)); do
  for m in $micro_list; do
    dir=$work/k2-m$m-r$r
    log=$dir.log
    idle
    # shellcheck disable=SC2086  # the transport is a word list
    OMP_NUM_THREADS=1 run mpirun -n 2 --bind-to core $transport "$bin" train "$config" \
      --run-dir "$dir" --set pipeline.stages=2 --set pipeline.micro_batches="$m" \
      --set "pipeline.partition=[8,9]"
    measured[$m]+="$(python3 scripts/bench/throughput.py "$dir") "
  done
done
echo
echo "scaling_mlp (8 blocks, batch 256), 1 thread per rank; K=1 calibrates, K=2 is predicted:"
printf '%4s %10s %10s %10s %10s %12s %10s\n' M "F ms" "B ms" "rest ms" "K=1 meas" "K=2 predict" \
  "K=2 meas"
for m in $micro_list; do
  measure_costs "$m" 1 --set train.steps=12 --set log.every=4
  k1[$m]=$(python3 scripts/bench/throughput.py "$work/k1-m$m")
  bytes=$((256 * 1024 * 4 / m))
  predicted[$m]=$("$bench/bench_project" --blocks 8 --batch 256 --micro-batches "$m" \
    --stages "2" --forward-ms "$(awk -v x="$f" 'BEGIN { print x / 8 }')" \
    --backward-ms "$(awk -v x="$b" 'BEGIN { print x / 8 }')" \
    --update-ms "$(awk -v x="$rest" 'BEGIN { print x / 8 }')" \
    --transfer-ms "$(transfer_ms $bytes)" | awk '$1 == "gpipe" && $2 == 2 { print $5 }')
  best_k2=$(best <<<"${measured[$m]}")
  printf '%4d %10.2f %10.2f %10.2f %10.0f %12.0f %10.0f   error %+.1f%%   (K=2 runs: %s)\n' \
    "$m" "$f" "$b" "$rest" "${k1[$m]}" "${predicted[$m]}" "$best_k2" \
    "$(awk -v p="${predicted[$m]}" -v x="$best_k2" 'BEGIN { print 100 * (p - x) / x }')" \
    "${measured[$m]}"
done

if [[ "${REFERENCE:-1}" == 1 ]]; then
  echo
  echo "reference: 16 x (Linear(1024,1024) + ReLU), batch 2048, M=32, 2 threads per rank:"
  sed 's/repeat: 8/repeat: 16/' "$config" >"$work/reference.yaml"
  config=$work/reference.yaml
  measure_costs 32 2 --set train.batch_size=2048 --set data.num_examples=4096 \
    --set train.steps=5 --set log.every=1
  "$bench/bench_project" --blocks 16 --batch 2048 --micro-batches 32 --stages "$stages_list" \
    --forward-ms "$(awk -v x="$f" 'BEGIN { print x / 16 }')" \
    --backward-ms "$(awk -v x="$b" 'BEGIN { print x / 16 }')" \
    --update-ms "$(awk -v x="$rest" 'BEGIN { print x / 16 }')" \
    --transfer-ms "$(transfer_ms $((64 * 1024 * 4)))" \
    --schedules "gpipe 1f1b interleaved" --virtual-stages 2 \
    --label "PROJECTED: 16-core machine, 2 threads per rank, this machine's per-core speed" |
    tee "$work/projected.txt"
  echo "PyTorch torch.distributed.pipelining over gloo (the issue's 16-core Xeon): 282 samples/s" \
    "on 1 rank, 501 on 4 stages, 702 on 8"
  measure_reference
fi
echo "load after:  $(uptime)"
