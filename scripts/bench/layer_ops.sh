#!/usr/bin/env bash
# Where a stage's layer ops spend their time beyond the products (issue 36: the plan's `K=2 deep`
# cell): bench_layer_ops (BLOCKS x (Linear(1024) + ReLU) run op by op through the layer interface
# against the bare products on the same weights, each layer's fastest of PASSES) at one thread,
# first alone at each of BLOCKS_ALONE, then two processes of BLOCKS_PAIR blocks side by side on
# the two cores (K=2 deep's two ranks), at ROWS rows. Prints the load before and after.
#
#   scripts/bench/layer_ops.sh        # about a minute on the 2-core machine
#
# Environment: ROWS ("1 16 32 256"), BLOCKS_ALONE ("4 8 12 24"), BLOCKS_PAIR (12), PASSES (10),
# BENCH_DIR (build/release/apps/bench).
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=${BENCH_DIR:-build/release/apps/bench}/bench_layer_ops
rows=${ROWS:-1 16 32 256}
passes=${PASSES:-10}
export OMP_NUM_THREADS=1
read -r -a row_args <<<"$rows"
echo "load before: $(uptime)"
for blocks in ${BLOCKS_ALONE:-4 8 12 24}; do
  echo "== alone, $blocks blocks"
  taskset -c 0 "$bench" --blocks "$blocks" --passes "$passes" --rows "${row_args[@]}"
done
pair=${BLOCKS_PAIR:-12}
echo "== two side by side, $pair blocks each (cores 0 and 1)"
work=$(mktemp -d /tmp/mpipe-layer-ops.XXXXXX)
trap 'rm -rf "$work"' EXIT
taskset -c 0 "$bench" --blocks "$pair" --passes "$passes" --rows "${row_args[@]}" >"$work/0" &
first=$!
taskset -c 1 "$bench" --blocks "$pair" --passes "$passes" --rows "${row_args[@]}" >"$work/1"
wait "$first"
for core in 0 1; do
  echo "-- core $core"
  cat "$work/$core"
done
echo "load after: $(uptime)"
