#!/usr/bin/env bash
# ZeRO-1's memory (optimizer.shard_across_replicas): CONFIG (optimizer state well above the
# activations) at K = 1 on D = 2 and 4 replicas, sharded and not, a checkpoint saved after every
# step. Every run's measured peak of tensor bytes (peak_tensor_bytes_per_rank in summary.json,
# the largest of the replicas') is within 1% of its plan's (predicted_peak_bytes_per_rank), and
# sharding lowers the measured peak by the plan's saving, (D-1)/D of the optimizer state (the plan
# counts the last shard from (D-1)·n/D; cut on the norm's 4096-float blocks, each replica's is
# within a block of it), within 1% of it: a save gathers one tensor at a time.
# Usage: optimizer_shards_memory.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
failed=0
printf '%2s %-9s %12s %12s %7s\n' D optimizer predicted measured error
for d in 2 4; do
  for sharded in false true; do
    train "$d" "d$d-$sharded" "$config" --set pipeline.data_parallel="$d" \
      --set optimizer.shard_across_replicas="$sharded" --set checkpoint.every=1
  done
  python3 - "$WORK/d$d-false/summary.json" "$WORK/d$d-true/summary.json" "$d" <<'PY' || failed=1
import json, sys
runs = {name: json.load(open(path)) for name, path in zip(("whole", "sharded"), sys.argv[1:3])}
ok = True
for name, summary in runs.items():
    predicted = summary["predicted_peak_bytes_per_rank"][0]
    measured = summary["peak_tensor_bytes_per_rank"][0]
    error = (predicted - measured) / measured
    ok &= abs(error) <= 0.01
    print(f"{sys.argv[3]:>2} {name:9s} {predicted:12.0f} {measured:12.0f} {100 * error:+6.2f}%"
          f"{'' if abs(error) <= 0.01 else '  FAILED'}")
saving = {kind: runs["whole"][key][0] - runs["sharded"][key][0]
          for kind, key in (("predicted", "predicted_peak_bytes_per_rank"),
                            ("measured", "peak_tensor_bytes_per_rank"))}
error = (saving["measured"] - saving["predicted"]) / max(saving["predicted"], 1.0)
good = saving["predicted"] > 0 and abs(error) <= 0.01
ok &= good
print(f"{sys.argv[3]:>2} {'saving':9s} {saving['predicted']:12.0f} {saving['measured']:12.0f} "
      f"{100 * error:+6.2f}%{'' if good else '  FAILED'}")
sys.exit(0 if ok else 1)
PY
done
[[ $failed -eq 0 ]] || { echo "FAILED: a peak or the saving is more than 1% off the plan"; exit 1; }
echo "optimizer shards: the measured peak and its saving at D = 2 and 4 within 1% of the plan"
