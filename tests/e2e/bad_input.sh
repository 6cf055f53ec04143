#!/usr/bin/env bash
# Bad input on 2 ranks: a one-line error naming file, line and key, a non-zero exit, no hang,
# and nothing written into the run directory.
source "$(dirname "$0")/lib.sh"
printf 'model:\n  layers:\n    - {type: linear, units: 4}\noptimizer:\n  lr: -1\n' > "$WORK/bad.yaml"
status=0
timeout 60 mpirun -n 2 --oversubscribe "$MPIPE" train "$WORK/bad.yaml" --run-dir "$WORK/run" \
  > "$WORK/out" 2>&1 || status=$?
cat "$WORK/out"
[[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: exit status $status"; exit 1; }
grep -q "bad.yaml:5: optimizer.lr: must be > 0, got -1" "$WORK/out" || { echo "FAILED: message"; exit 1; }
[[ $(grep -c "optimizer.lr" "$WORK/out") -eq 1 ]] || { echo "FAILED: not one line"; exit 1; }
[[ ! -e "$WORK/run" ]] || { echo "FAILED: run directory was written"; exit 1; }

# World size and config disagree: every rank stops with the message.
status=0
timeout 60 mpirun -n 2 --oversubscribe "$MPIPE" train "$(dirname "$0")/files/mlp.yaml" \
  --set pipeline.stages=4 --run-dir "$WORK/run2" > "$WORK/out2" 2>&1 || status=$?
cat "$WORK/out2"
[[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: exit status $status"; exit 1; }
grep -q "pipeline.stages (4) x pipeline.data_parallel (1) = 4 ranks, but mpirun started 2" \
  "$WORK/out2" || { echo "FAILED: topology message"; exit 1; }
echo "bad input: one-line errors, non-zero exit, nothing written"
