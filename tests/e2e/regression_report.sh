#!/usr/bin/env bash
# A regression model (a loss that does not classify: mse) reports no accuracy anywhere: not in the
# evaluations during training, the final line, metrics.jsonl's evaluation records, summary.json or
# `mpipe eval`'s line (where a classifier's would read "test accuracy 0.00%").
# Usage: regression_report.sh CONFIG (a model with loss: mse)
source "$(dirname "$0")/lib.sh"
config=$1
train 2 run "$config" --set train.steps=2 --set train.eval_every=1 --set checkpoint.every=2
cat "$WORK/run.log"
grep -qE "\[info\] step 1: test loss [0-9.]+$" "$WORK/run.log" ||
  { echo "FAILED: the evaluation at step 1 is not a loss alone"; exit 1; }
grep -qE "^final: train loss [0-9.]+ \| test loss [0-9.]+ \| run dir " "$WORK/run.log" ||
  { echo "FAILED: the final line is not the losses alone"; exit 1; }
! grep -qi "accuracy" "$WORK/run.log" || { echo "FAILED: the run's output names an accuracy"; exit 1; }
python3 - "$WORK/run" << 'PY' || exit 1
import json, sys
records = [json.loads(line) for line in open(sys.argv[1] + "/metrics.jsonl")]
evals = [r for r in records if "split" in r]
summary = json.load(open(sys.argv[1] + "/summary.json"))
if len(evals) < 2 or any("accuracy" in r for r in evals) or "final_eval_accuracy" in summary:
    sys.exit(f"FAILED: an accuracy written: {evals} {sorted(summary)}")
PY
timeout 120 "$MPIPE" eval "$config" --checkpoint "$WORK/run" > "$WORK/eval.out" 2> "$WORK/eval.log" ||
  { cat "$WORK/eval.log" "$WORK/eval.out"; echo "FAILED: mpipe eval"; exit 1; }
cat "$WORK/eval.out"
grep -qE "^.*: test loss [0-9.e-]+ \| [0-9]+ examples$" "$WORK/eval.out" ||
  { echo "FAILED: mpipe eval's line is not the loss alone"; exit 1; }
echo "regression_report: no accuracy in the output, metrics.jsonl, summary.json or mpipe eval"
