#!/usr/bin/env bash
# The largest model (Transformer blocks of configs/largest_model.yaml) that trains for 2 steps
# under one per-rank memory limit, for K = 1 without recompute, K = 1 with recompute and
# K = 2, 4, 8 with recompute (issue 8's table): the block count from `mpipe plan --json` (binary
# search), then a 2-step run of each, with the predicted peak per stage next to the measured peak
# RSS (and the allocator's high-water mark where summary.json has one).
#
#   scripts/bench/largest_model.sh OUT_DIR      # writes OUT_DIR/largest_model.{md,csv,png}
#
# Environment: LIMIT (default 128MiB: pipeline.memory_limit, on the predicted peak), MPIPE_BIN
# (default build/release/apps/mpipe), CONFIG (default configs/largest_model.yaml; one `repeat:`),
# MAX_BLOCKS (search bound, default 1024), WAIT_IDLE (wait up to this many seconds for idle CPUs
# first; default 60, 0 = no). One OpenMP thread per rank; K > cores runs oversubscribed.
# MALLOC_MMAP_THRESHOLD_=65536 fixes glibc's mmap threshold, so that freed tensors leave the
# resident set (glibc otherwise raises the threshold as large blocks are freed and keeps them in
# its heap, and the peak RSS then varies by tens of MiB from run to run). About 5 minutes on an
# idle 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: scripts/bench/largest_model.sh OUT_DIR}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x "$bin" ]] || { echo "largest_model.sh: $bin is not an executable (build it or set MPIPE_BIN)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE MALLOC_MMAP_THRESHOLD_=65536
work=$(mktemp -d /tmp/mpipe-largest.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [[ "${WAIT_IDLE:-60}" != 0 ]]; then scripts/bench/wait_for_idle.sh "${WAIT_IDLE:-60}" || true; fi
echo "load before: $(uptime)"
start=$SECONDS
/usr/bin/python3 scripts/bench/largest_model.py "$out" "$work"
echo "load after: $(uptime)"
echo "largest_model.sh: $((SECONDS - start)) s; wrote $out/largest_model.md, .csv, .png"
