#!/usr/bin/env bash
# Grouped weight gradients (pipeline.weight_grads: grouped, issue 36): configs/scaling_mlp.yaml
# at K = 2, M = 8, 1 thread per rank, gpipe (batched: weight_grads auto under recompute never)
# against zb_h1, zbv and interleaved (v = 2) each accumulating per micro-batch and grouped by
# each of WEIGHT_GROUPS, and K = 1 at M = 1; rounds interleaved, samples/s as median [range] of
# the rounds, beside the planner's predicted step (scripts/bench/reference_schedules.sh runs them).
#
#   scripts/bench/weight_groups.sh       # about 5 minutes on the 2-core machine at ROUNDS=3
#
# Environment: WEIGHT_GROUPS (default "2 4 8"), ROUNDS (3), STEPS (30), MICRO (8), PLAN_ARGS (e.g.
# "--calibrate"), MPIPE_BIN.
set -euo pipefail
cd "$(dirname "$0")/../.."
schedules="gpipe"
for schedule in zb_h1 zbv interleaved; do
  chunks=""
  [[ $schedule == interleaved ]] && chunks=",pipeline.virtual_stages=2"
  schedules+=" $schedule:pipeline.weight_grads=accumulate$chunks"
  for group in ${WEIGHT_GROUPS:-2 4 8}; do
    schedules+=" $schedule:pipeline.weight_grads=grouped,pipeline.weight_group=$group$chunks"
  done
done
CONFIG=configs/scaling_mlp.yaml STAGES=2 MICRO=${MICRO:-8} K1_MICRO=1 THREADS=1 \
  ROUNDS=${ROUNDS:-3} STEPS=${STEPS:-30} PT_SCHEDULES="" SCHEDULES=$schedules \
  exec scripts/bench/reference_schedules.sh
