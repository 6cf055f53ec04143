#!/usr/bin/env bash
# Throughput of configs/scaling_mlp.yaml with glibc's default malloc and with
# MALLOC_MMAP_THRESHOLD_=65536 (what largest_model.sh sets so that peak RSS follows the live
# tensor bytes), side by side and interleaved, for K=1 M=1 and K=2 M=8: the cost mpipe would pay
# if it fixed the threshold itself (mallopt at start-up). Prints the fastest of REPEATS runs.
#
#   scripts/bench/mmap_threshold.sh             # about 3 minutes on an idle 2-core machine
#
# Environment: MPIPE_BIN (default build/release/apps/mpipe), REPEATS (default 3), WAIT_IDLE
# (wait up to this many seconds for idle CPUs first; default 60, 0 = no).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x "$bin" ]] || { echo "mmap_threshold.sh: $bin is not an executable" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
work=$(mktemp -d /tmp/mpipe-mmap.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [[ "${WAIT_IDLE:-60}" != 0 ]]; then scripts/bench/wait_for_idle.sh "${WAIT_IDLE:-60}" || true; fi
echo "load before: $(uptime)"
declare -A best runs
for rep in $(seq "${REPEATS:-3}"); do
  for km in "1 1" "2 8"; do
    read -r k m <<<"$km"
    for mode in default 65536; do
      dir=$work/k${k}_m${m}_${mode}_$rep
      env_args=()
      [[ $mode == default ]] || env_args=(-x MALLOC_MMAP_THRESHOLD_="$mode")
      cmd=(mpirun -n "$k" --oversubscribe "${env_args[@]}" "$bin" train configs/scaling_mlp.yaml
           --run-dir "$dir" --set pipeline.micro_batches="$m")
      echo "+ ${cmd[*]}"
      "${cmd[@]}" >"$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
      rate=$(python3 scripts/bench/throughput.py "$dir")
      key="$k $m $mode"
      runs[$key]="${runs[$key]:-}$rate "
      if [[ -z "${best[$key]:-}" ]] || python3 -c "import sys; sys.exit(not $rate > ${best[$key]})"; then
        best[$key]=$rate
      fi
    done
  done
done
echo "load after: $(uptime)"
printf '%3s %3s %18s %18s %8s   %s\n' K M "default samples/s" "65536 samples/s" ratio "runs (default | 65536)"
for km in "1 1" "2 8"; do
  read -r k m <<<"$km"
  d=${best["$k $m default"]} f=${best["$k $m 65536"]}
  printf '%3s %3s %18s %18s %8s   %s| %s\n' "$k" "$m" "$d" "$f" \
    "$(python3 -c "print(f'{$f / $d:.3f}')")" "${runs["$k $m default"]}" "${runs["$k $m 65536"]}"
done
