#!/usr/bin/env bash
# optimizer.shard_across_replicas (ZeRO-1) side by side with the unsharded run: the step time and
# the measured peak tensor bytes (summary.json: the largest replica's) of configs/scaling_mlp.yaml
# under Adam at K = 1, D = 2 (2 ranks) and D = 4 (4 ranks; oversubscribed on a 2-core machine). Each round runs both, interleaved (which goes first
# alternates by round); a run's step time is its batch over its samples/s after the first logged
# window (scripts/bench/throughput.py). Prints per D the median and range over the rounds of each
# and the median of the rounds' sharded / unsharded ratios, beside the plan's step for each.
#
#   scripts/bench/optimizer_shards.sh      # about 6 minutes on 2 cores
#
# Environment: REPLICAS (list, default "2 4"), STEPS (default 30), THREADS (OpenMP threads per
# rank, default 1), ROUNDS (default 5), WAIT_IDLE (before each run, wait up to this many seconds
# for idle CPUs; default 10, 0 = no), MPIPE_BIN (default build/release/apps/mpipe).
set -euo pipefail
cd "$(dirname "$0")/../.."

replicas_list=${REPLICAS:-2 4}
steps=${STEPS:-30}
threads=${THREADS:-1}
rounds=${ROUNDS:-5}
wait_idle=${WAIT_IDLE:-10}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x "$bin" ]] || { echo "optimizer_shards.sh: $bin is not an executable (set MPIPE_BIN)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
export OMP_NUM_THREADS=$threads
batch=256  # configs/scaling_mlp.yaml's train.batch_size

work=$(mktemp -d /tmp/mpipe-optimizer-shards.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime)"
echo "commands ($rounds rounds, interleaved):"
results=$work/results.txt  # D, sharded, round, step ms, peak bytes
for ((r = 1; r <= rounds; ++r)); do
  order=(false true)
  ((r % 2 == 0)) && order=(true false)
  for d in $replicas_list; do
    for sharded in "${order[@]}"; do
      dir=$work/d$d-$sharded-r$r
      cmd=(mpirun -n "$d" --oversubscribe --bind-to none "$bin" train configs/scaling_mlp.yaml
        --run-dir "$dir" --set train.steps="$steps" --set pipeline.stages=1
        --set pipeline.data_parallel="$d" --set optimizer.kind=adam
        --set optimizer.shard_across_replicas="$sharded")
      if ((r == 1)); then echo "  OMP_NUM_THREADS=$threads ${cmd[*]}"; fi
      if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
      "${cmd[@]}" >"$dir.log" 2>&1 || { echo "optimizer_shards.sh: run failed:" >&2; tail "$dir.log" >&2; exit 1; }
      samples=$(python3 scripts/bench/throughput.py "$dir")
      # The measured peak, and the plan's step (ms) for the run.
      read -r peak planned < <(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(s["peak_tensor_bytes_per_rank"][0], 1000 * int(sys.argv[2]) / s["predicted_samples_per_s"])' \
        "$dir/summary.json" "$batch")
      echo "$d $sharded $r $(awk -v b="$batch" -v s="$samples" 'BEGIN { print 1000 * b / s }') $peak $planned" >>"$results"
      rm -rf "$dir"
    done
  done
done
echo "load after:  $(uptime)"
echo
python3 - "$results" <<'PY'
import statistics, sys
from collections import defaultdict
runs = defaultdict(dict)  # (D, sharded) -> round -> (ms, peak, planned ms)
for line in open(sys.argv[1]):
    d, sharded, r, ms, peak, planned = line.split()
    runs[int(d), sharded == "true"][int(r)] = (float(ms), float(peak), float(planned))
print("| D | unsharded step ms, median [range] | sharded step ms, median [range] | sharded / "
      "unsharded, median [range] of rounds | unsharded peak MB | sharded peak MB | plan's step ms, "
      "unsharded / sharded |")
print("|---|---|---|---|---|---|---|")
for d in sorted({d for d, _ in runs}):
    whole, shard = runs[d, False], runs[d, True]
    def cell(r):
        ms = [v[0] for v in r.values()]
        return f"{statistics.median(ms):.1f} [{min(ms):.1f}-{max(ms):.1f}]"
    ratios = [shard[r][0] / whole[r][0] for r in whole if r in shard]
    print(f"| {d} | {cell(whole)} | {cell(shard)} | {statistics.median(ratios):.3f} "
          f"[{min(ratios):.3f}-{max(ratios):.3f}] | {max(v[1] for v in whole.values()) / 1e6:.2f} "
          f"| {max(v[1] for v in shard.values()) / 1e6:.2f} "
          f"| {statistics.median(v[2] for v in whole.values()):.1f} / "
          f"{statistics.median(v[2] for v in shard.values()):.1f} |")
PY
