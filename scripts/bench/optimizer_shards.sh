#!/usr/bin/env bash
# optimizer.shard_across_replicas (ZeRO-1) side by side with the unsharded run: samples/s and the
# measured peak tensor bytes (summary.json, replica 0's ranks) of configs/scaling_mlp.yaml under
# Adam at K = 1, D = 2 (2 ranks) and D = 4 (4 ranks; oversubscribed on a 2-core machine), runs
# interleaved.
#
#   scripts/bench/optimizer_shards.sh      # a few minutes on 2 cores
#
# Environment: REPLICAS (list, default "2 4"), STEPS (default 30), THREADS (OpenMP threads per
# rank, default 1), REPEATS (default 3; the fastest is shown), WAIT_IDLE (before each run, wait up
# to this many seconds for idle CPUs; default 10, 0 = no), MPIPE_BIN (default
# build/release/apps/mpipe). Throughput: scripts/bench/throughput.py (the logged windows after the
# first).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/best.sh
source scripts/bench/best.sh

replicas_list=${REPLICAS:-2 4}
steps=${STEPS:-30}
threads=${THREADS:-1}
repeats=${REPEATS:-3}
wait_idle=${WAIT_IDLE:-10}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x "$bin" ]] || { echo "optimizer_shards.sh: $bin is not an executable (set MPIPE_BIN)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
export OMP_NUM_THREADS=$threads

work=$(mktemp -d /tmp/mpipe-optimizer-shards.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime)"
echo "commands (each repeated $repeats times, interleaved; the fastest shown):"
declare -A samples peak
for ((r = 1; r <= repeats; ++r)); do
  for d in $replicas_list; do
    for sharded in false true; do
      dir=$work/d$d-$sharded-r$r
      cmd=(mpirun -n "$d" --oversubscribe --bind-to none "$bin" train configs/scaling_mlp.yaml
        --run-dir "$dir" --set train.steps="$steps" --set pipeline.stages=1
        --set pipeline.data_parallel="$d" --set optimizer.kind=adam
        --set optimizer.shard_across_replicas="$sharded")
      if ((r == 1)); then echo "  OMP_NUM_THREADS=$threads ${cmd[*]}"; fi
      if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
      "${cmd[@]}" >"$dir.log" 2>&1 || { echo "optimizer_shards.sh: run failed:" >&2; tail "$dir.log" >&2; exit 1; }
      samples[$d,$sharded]+="$(python3 scripts/bench/throughput.py "$dir") "
      peak[$d,$sharded]=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["peak_tensor_bytes_per_stage"][0])' "$dir/summary.json")
      rm -rf "$dir"
    done
  done
done
echo "load after:  $(uptime)"
echo
echo "| D | unsharded samples/s | sharded samples/s | sharded / unsharded | unsharded peak MB | sharded peak MB | runs unsharded | runs sharded |"
echo "|---|---|---|---|---|---|---|---|"
for d in $replicas_list; do
  u=$(best <<<"${samples[$d,false]}")
  s=$(best <<<"${samples[$d,true]}")
  awk -v d="$d" -v u="$u" -v s="$s" -v pu="${peak[$d,false]}" -v ps="${peak[$d,true]}" \
    -v ru="${samples[$d,false]}" -v rs="${samples[$d,true]}" 'BEGIN {
      printf "| %d | %.0f | %.0f | %.3f | %.2f | %.2f | %s| %s|\n", d, u, s, s / u, pu / 1e6,
        ps / 1e6, ru, rs }'
done
