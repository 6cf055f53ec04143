#!/usr/bin/env bash
# The daemon on 2 ranks tells its experiments apart and keeps their micro-batch size: an
# experiment that fixes 1 stage runs 1 stage x 2 replicas sharing its 4 micro-batches (2 each, of
# the 8 examples the file gives them), and ends with the weights of the same file run as 2 stages
# x 1 replica; one with a single micro-batch, which the replicas cannot share, fails with one
# line; status.json and `mpipe status` show each layout; every progress line names its
# experiment, and each experiment has its own log, runs/NAME/experiment.log.
# Usage: serve_layout.sh CONFIG (4 micro-batches of 8 examples)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
config=$1

submit "$config" --name shared --set pipeline.stages=1 --set train.steps=3
submit "$config" --name unshareable --set pipeline.stages=1 --set pipeline.micro_batches=1
submit "$config" --name pipe --set train.steps=3
start_daemon "$WORK/serve.log"
wait_state pipe "done" "$WORK/serve.log"
signal_daemon TERM
wait_daemon "$WORK/serve.log"

[[ $(field shared state) == "done" && $(field shared stages) == 1 && $(field shared replicas) == 2 &&
   $(field shared micro_batches) == 2 ]] || { cat "$SPOOL/status.json"; echo "FAILED: shared layout"; exit 1; }
[[ $(field pipe stages) == 2 && $(field pipe replicas) == 1 && $(field pipe micro_batches) == 4 ]] ||
  { cat "$SPOOL/status.json"; echo "FAILED: pipe layout"; exit 1; }
error="--set pipeline.micro_batches: 1 micro-batch of 32 examples cannot be shared by the 2 data-parallel replicas of 1 stage on 2 ranks without changing their size; set pipeline.micro_batches to a multiple of 2, or pipeline.data_parallel"
[[ $(field unshareable state) == failed && $(field unshareable error) == "$error" ]] ||
  { field unshareable error; echo "FAILED: unshareable not refused"; exit 1; }

"$MPIPE" status "$SPOOL" > "$WORK/status.out"
cat "$WORK/status.out"
for row in "NAME +STATE +LAYOUT +STEP" "shared +done +1x2 +3/3" "pipe +done +2x1 +3/3" \
  "unshareable +failed +- +0/3"; do
  grep -qE "^$row " "$WORK/status.out" || { echo "FAILED: no row '$row'"; exit 1; }
done

"$MPIPE" compare "$SPOOL/runs/shared/weights.safetensors" "$SPOOL/runs/pipe/weights.safetensors" \
  --rtol 1e-6 || { echo "FAILED: the layout changed the weights"; exit 1; }
grep -qE "runs/shared/experiment.yaml: .* x 2 replicas, 2 micro-batches of 8, " "$WORK/serve.log" ||
  { cat "$WORK/serve.log"; echo "FAILED: no layout line"; exit 1; }
[[ $(grep -cE "^shared: step [1-3]/3 \| loss" "$WORK/serve.log") -eq 3 &&
   $(grep -cE "^pipe: step [1-3]/3 \| loss" "$WORK/serve.log") -eq 3 &&
   $(grep -cE "^step " "$WORK/serve.log") -eq 0 ]] || { cat "$WORK/serve.log"; echo "FAILED: progress lines"; exit 1; }
for run in shared pipe; do
  other=$([[ $run == shared ]] && echo pipe || echo shared)
  log=$SPOOL/runs/$run/experiment.log
  [[ -f $log ]] || { echo "FAILED: no $log"; exit 1; }
  for line in "$run: starting" "\] $run: step 3/" "$run: done at step"; do
    grep -q "$line" "$log" || { cat "$log"; echo "FAILED: '$line' not in $log"; exit 1; }
  done
  ! grep -q "\] $other: " "$log" || { cat "$log"; echo "FAILED: $log holds $other's lines"; exit 1; }
done
grep -q "unshareable: failed: $error" "$SPOOL/runs/unshareable/experiment.log" ||
  { echo "FAILED: the error is not in unshareable's log"; exit 1; }
echo "serve_layout: 1 stage x 2 replicas keep the micro-batch size, an unshareable one refused, layouts shown, progress lines and logs per experiment"
