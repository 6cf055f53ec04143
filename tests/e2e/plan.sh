#!/usr/bin/env bash
# mpipe plan: --json parses with every stage and prediction (its run time is printed), recompute:
# auto chooses the mode by the limit, threads per rank divide the predicted compute (not the
# partition), the times are predicted at this machine's measured rates (the plan chosen at the
# assumed ones), a tied model's plan shows its copies' gradient exchange, schedule: auto shows its
# candidates and runs its choice, a plan over the memory limit exits 5, its option errors are one
# line with exit status 2, and --trace writes the predicted step's timeline as a run's trace.json.
source "$(dirname "$0")/lib.sh"
configs=$(dirname "$0")/../../configs

# The JSON of transformer_deep at K = 4: contiguous stages covering every layer, predictions.
start=$EPOCHREALTIME
"$MPIPE" plan "$configs/transformer_deep.yaml" --stages 4 --json > "$WORK/plan.json"
elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
/usr/bin/python3 - "$WORK/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
stages = plan["stage_plans"]
assert plan["stages"] == 4 and len(stages) == 4, plan["stages"]
assert stages[0]["first_layer"] == 0 and stages[-1]["last_layer"] == plan["num_layers"] - 1
for a, b in zip(stages, stages[1:]):
    assert b["first_layer"] == a["last_layer"] + 1, (a, b)
assert sum(s["num_params"] for s in stages) == plan["num_params"]
for s in stages:
    m = s["memory"]
    state = (m["params"] + m["grads"] + m["gradient_partials"] + m["optimizer_state"]
             + m["buffers"])
    step = (m["kept_activations"] + m["recompute_workspace"] + m["transient"]
            + m["weight_grad_operands"] + m["communication"] + m["allocator_rounding"])
    assert 0 < m["allocator_rounding"] < 0.05 * s["peak_bytes"], m  # a few bytes to a page a block
    expected = state + step
    assert "checkpoint_copy" not in m, m  # a checkpoint copies nothing
    assert abs(expected - s["peak_bytes"]) <= 1e-6 * s["peak_bytes"], s
    assert m["optimizer_state"] == 2 * m["params"], m  # Adam
    assert s["compute_s"] > 0 and s["fits"]
    assert s["tied_exchange_s"] == 0, s  # no tied weights
assert 0 < plan["bubble_fraction"] < 1 and plan["step_s"] > 0
assert abs(plan["samples_per_s"] - plan["batch_size"] / plan["step_s"]) < 1e-6 * plan["samples_per_s"]
assert plan["fits"] and plan["problem"] is None and plan["memory_limit_bytes"] is None
assert plan["partition"] == "auto" and plan["schedule"] == "1f1b"
PY
echo "plan --json of transformer_deep at K=4: ${elapsed}s (reported, not asserted: timings are benchmarks)"

# --micro-batches and --memory-limit override the config; a limit nothing meets is reported, with
# exit status 5 (a plan that fits: 0, as above).
status=0
"$MPIPE" plan "$configs/transformer_deep.yaml" --stages 2 --micro-batches 16 --memory-limit 32MiB \
  --json > "$WORK/limited.json" || status=$?
[[ $status -eq 5 ]] || { echo "FAILED: a plan that does not fit: exit status $status, not 5"; exit 1; }
/usr/bin/python3 - "$WORK/limited.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
assert plan["micro_batches"] == 16 and plan["micro_batch_rows"] == 2, plan["micro_batches"]
assert plan["memory_limit_bytes"] == 32 << 20 and not plan["fits"]
assert plan["problem"].startswith("--memory-limit 32MiB: layer "), plan["problem"]
PY

# recompute: auto (largest_model.yaml's) runs the fastest mode whose plan fits the limit, and an
# explicit mode over the limit is told the one that fits (K = 1 GPipe, 16 blocks: per_layer
# peaks at 70.2 MiB, always at 86.7, except_last at 123.0, never at 342.4).
auto_mode() {  # LIMIT -> the chosen mode
  "$MPIPE" plan "$configs/largest_model.yaml" --stages 1 --memory-limit "$1" \
    --set pipeline.schedule=gpipe --json |
    /usr/bin/python3 -c 'import json, sys; p = json.load(sys.stdin); assert p["fits"] and p["recompute_setting"] == "auto"; print(p["recompute"])'
}
for expected in 512MiB:never 128MiB:except_last 80MiB:per_layer; do
  got=$(auto_mode "${expected%%:*}")
  [[ $got == "${expected#*:}" ]] || { echo "FAILED: recompute auto at ${expected%%:*}: $got"; exit 1; }
done
"$MPIPE" plan "$configs/largest_model.yaml" --stages 1 --memory-limit 80MiB \
  --set pipeline.schedule=gpipe > "$WORK/auto.txt"
grep -q "recompute: per_layer (auto)," "$WORK/auto.txt" || { cat "$WORK/auto.txt"; echo "FAILED: auto text"; exit 1; }
status=0
"$MPIPE" plan "$configs/largest_model.yaml" --stages 1 --memory-limit 80MiB \
  --set pipeline.schedule=gpipe --set pipeline.recompute=always > "$WORK/always.txt" || status=$?
[[ $status -eq 5 ]] || { echo "FAILED: recompute always over the limit: exit status $status"; exit 1; }
grep -q "^advice: the largest stage exceeds the limit by 6.7 MiB; with pipeline.recompute: per_layer (and partition: auto) it fits$" "$WORK/always.txt" ||
  { cat "$WORK/always.txt"; echo "FAILED: recompute advice"; exit 1; }

# The text table.
"$MPIPE" plan "$configs/fashion_mnist_cnn.yaml" --stages 2 > "$WORK/plan.txt"
grep -q "^stage  layers " "$WORK/plan.txt" && grep -q "^predicted step " "$WORK/plan.txt" ||
  { cat "$WORK/plan.txt"; echo "FAILED: plan text"; exit 1; }

# A tied model on 2 stages: the copies' gradient exchange and adding after the step, on both
# stages: one window of its 256 x 16 floats at the assumed links (4 GB/s, 20 us), then both copies
# read and one written at the assumed 4 GB/s, in the text and the JSON.
"$MPIPE" plan "$(dirname "$0")/files/tied.yaml" --stages 2 --assumed-rates > "$WORK/tied.txt"
grep -qx "tied weights: the copies on stages 0, 1 sum their gradients after the step, before the optimizer update: 36 us" \
  "$WORK/tied.txt" || { cat "$WORK/tied.txt"; echo "FAILED: the tie exchange's line"; exit 1; }
"$MPIPE" plan "$(dirname "$0")/files/tied.yaml" --stages 2 --assumed-rates --json > "$WORK/tied.json"
/usr/bin/python3 - "$WORK/tied.json" <<'PY' || { echo "FAILED: the tie exchange's JSON"; exit 1; }
import json, sys
stages = json.load(open(sys.argv[1]))["stage_plans"]
assert [abs(s["tied_exchange_s"] - (2e-5 + 256 * 16 * 4 / 4e9 + 3 * 256 * 16 * 4 / 4e9)) < 1e-15 for s in stages] == [True, True], stages
PY

# Threads per rank: OMP_NUM_THREADS by default, --threads-per-rank over it; the same partition,
# each stage's compute in a quarter of the time at 4 threads (at the assumed rates, which do not
# change from run to run).
OMP_NUM_THREADS=1 "$MPIPE" plan "$configs/transformer_deep.yaml" --stages 4 --assumed-rates \
  --json > "$WORK/t1.json"
OMP_NUM_THREADS=4 "$MPIPE" plan "$configs/transformer_deep.yaml" --stages 4 --assumed-rates \
  --json > "$WORK/t4.json"
OMP_NUM_THREADS=1 "$MPIPE" plan "$configs/transformer_deep.yaml" --stages 4 --threads-per-rank 4 \
  --assumed-rates --json > "$WORK/t4_option.json"
cmp -s "$WORK/t4.json" "$WORK/t4_option.json" || { echo "FAILED: --threads-per-rank 4"; exit 1; }
/usr/bin/python3 - "$WORK/t1.json" "$WORK/t4.json" <<'PY' || { echo "FAILED: plan threads"; exit 1; }
import json, sys
one, four = (json.load(open(path)) for path in sys.argv[1:])
assert one["rates"]["threads"] == 1 and four["rates"]["threads"] == 4
for a, b in zip(one["stage_plans"], four["stage_plans"]):
    assert (a["first_layer"], a["last_layer"]) == (b["first_layer"], b["last_layer"]), (a, b)
    assert abs(b["compute_s"] - a["compute_s"] / 4) <= 1e-9 * a["compute_s"], (a, b)
assert one["step_s"] / 4 < four["step_s"] < one["step_s"]
PY

# plan_error MESSAGE ARGS...: exit status 2 and MESSAGE as the one output line.
plan_error() {
  local message=$1 status=0
  shift
  "$MPIPE" plan "$@" > "$WORK/error.out" 2>&1 || status=$?
  [[ $status -eq 2 && $(wc -l < "$WORK/error.out") -eq 1 ]] && grep -qF -- "$message" "$WORK/error.out" ||
    { cat "$WORK/error.out"; echo "FAILED: plan $*: status $status"; exit 1; }
}
plan_error "--memory-limit: expected a size such as 6GiB, 512MiB or 2G, got 'lots'" \
  "$configs/transformer_deep.yaml" --memory-limit lots
plan_error "transformer_deep.yaml:16: train.batch_size: must be divisible by pipeline.micro_batches x data-parallel replicas = 5 x 1 = 5, got 32" \
  "$configs/transformer_deep.yaml" --micro-batches 5
plan_error "--threads-per-rank: Value 0 not in range 1 to 65536" \
  "$configs/transformer_deep.yaml" --threads-per-rank 0
plan_error "--link-bandwidth: expected a rate such as 100mbit, 1gbit or 125MB, got 'fast'" \
  "$configs/transformer_deep.yaml" --link-bandwidth fast
plan_error "--calibrate excludes --assumed-rates" \
  "$configs/transformer_deep.yaml" --assumed-rates --calibrate
# The rates: by default this machine's, measured briefly and the plan's times predicted at them;
# the plan itself (partition, schedule, recompute mode) chosen at the assumed rates, as
# `mpipe train` chooses it on every rank, so it is the one --assumed-rates prints.
"$MPIPE" plan "$configs/fashion_mnist_mlp.yaml" --stages 2 --set pipeline.recompute=auto \
  --memory-limit 64MiB --json > "$WORK/measured.json"
"$MPIPE" plan "$configs/fashion_mnist_mlp.yaml" --stages 2 --set pipeline.recompute=auto \
  --memory-limit 64MiB --assumed-rates --json > "$WORK/assumed.json"
/usr/bin/python3 - "$WORK/measured.json" "$WORK/assumed.json" <<'PY'
import json, sys
measured, assumed = (json.load(open(p)) for p in sys.argv[1:])
assert assumed["rates_source"] == "assumed", assumed["rates_source"]
assert assumed["rates"]["flops_per_s"] == 1e11 and assumed["rates"]["bytes_per_s"] == 4e9, assumed["rates"]
# (weight_grads: auto groups the 4 micro-batches of 32 rows: their product is timed at 128 rows;
# element-wise traffic: a ReLU over that product's 32 x 512 output)
assert measured["rates_source"].startswith("measured in ") and measured["rates_source"].endswith(
    " s: linear 32 x 784 -> 512, weight gradient over 128 rows; element-wise: relu over 32 x 512"), measured["rates_source"]
rates = measured["rates"]
assert rates["flops_per_s"] != 1e11 and rates["optimizer_bytes_per_s"] not in (0, 4e9), rates
assert rates["bytes_per_s"] not in (0, 4e9) and assumed["rates"]["optimizer_bytes_per_s"] == 0, rates
assert rates["weight_flops_per_s"] > 0 and rates["batched_weight_flops_per_s"] > 0, rates
for key in ["schedule", "recompute", "advice", "rank_peak_bytes"]:
    assert measured[key] == assumed[key], (key, measured[key], assumed[key])
for a, b in zip(measured["stage_plans"], assumed["stage_plans"]):
    assert (a["first_layer"], a["last_layer"]) == (b["first_layer"], b["last_layer"]), (a, b)
    assert a["peak_bytes"] == b["peak_bytes"] and a["compute_s"] != b["compute_s"], (a, b)
assert abs(measured["samples_per_s"] - measured["batch_size"] / measured["step_s"]) < 1e-6 * measured["samples_per_s"]
PY
# --link-bandwidth and --calibrate: the links' rate and this machine's GEMM rate in the prediction.
"$MPIPE" plan "$configs/scaling_mlp.yaml" --stages 2 --set pipeline.micro_batches=8 --json \
  --assumed-rates > "$WORK/fast.json"
"$MPIPE" plan "$configs/scaling_mlp.yaml" --stages 2 --set pipeline.micro_batches=8 --json \
  --link-bandwidth 100mbit --calibrate > "$WORK/slow.json"
/usr/bin/python3 - "$WORK/fast.json" "$WORK/slow.json" <<'PY'
import json, sys
fast, slow = (json.load(open(p)) for p in sys.argv[1:])
assert slow["rates"]["link_bytes_per_s"] == 12.5e6, slow["rates"]
assert slow["rates"]["flops_per_s"] != fast["rates"]["flops_per_s"], slow["rates"]
assert slow["rates_source"].startswith("measured in ") and "(--calibrate)" in slow["rates_source"]
assert slow["step_s"] > fast["step_s"], (slow["step_s"], fast["step_s"])
PY
# --trace FILE: the predicted step's timeline as a run's trace.json has it, written beside --json's
# output (scaling_mlp at K = 2, M = 4, 1F1B: every rank's F and B of each micro-batch on its compute
# track, each rank's optimizer last, ending at the predicted step), which scripts/plot_timeline.py
# draws (not checked without matplotlib, which scripts.plot_timeline skips on); a file it cannot
# write is one line naming it, exit status 2, and nothing left behind.
"$MPIPE" plan "$configs/scaling_mlp.yaml" --stages 2 --micro-batches 4 --assumed-rates \
  --set pipeline.schedule=1f1b --trace "$WORK/plan_trace.json" --json > "$WORK/traced.json"
/usr/bin/python3 - "$WORK/traced.json" "$WORK/plan_trace.json" <<'PY' || { echo "FAILED: plan --trace"; exit 1; }
import json, sys
plan = json.load(open(sys.argv[1]))
events = json.load(open(sys.argv[2]))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
assert names == {0: "rank 0: stage 0, replica 0", 1: "rank 1: stage 1, replica 0"}, names
for pid in (0, 1):
    spans = [e for e in events if e["ph"] == "X" and e["pid"] == pid]
    compute = [e["name"] for e in spans if e["tid"] == 0]
    assert all(e["args"]["step"] == 1 for e in spans), spans
    for m in range(4):
        assert compute.count(f"F{m}") == 1 and compute.count(f"B{m}") == 1, compute
    assert compute[-1] == "optimizer", compute
    assert all(e["name"] in ("RA0", "RG0", "RA1", "RG1", "RA2", "RG2", "RA3", "RG3", "loss allreduce")
               for e in spans if e["tid"] == 1), spans
end_us = max(e["ts"] + e["dur"] for e in events if e["ph"] == "X")
assert abs(end_us - 1e6 * plan["step_s"]) < 1e-6 * end_us, (end_us, plan["step_s"])
PY
if /usr/bin/python3 -c 'import matplotlib' 2> /dev/null; then
  /usr/bin/python3 "$(dirname "$0")/../../scripts/plot_timeline.py" "$WORK/plan_trace.json" > /dev/null
  [[ -s $WORK/plan_trace.png ]] || { echo "FAILED: plot_timeline.py drew no plan_trace.png"; exit 1; }
else
  echo "matplotlib is missing: plan_trace.json not drawn"
fi
plan_error "--trace: $WORK/missing/plan.json: cannot create: No such file or directory" \
  "$configs/scaling_mlp.yaml" --stages 2 --assumed-rates --trace "$WORK/missing/plan.json"
mkdir "$WORK/folder.json"
plan_error "--trace: $WORK/folder.json: cannot rename into place: Is a directory" \
  "$configs/scaling_mlp.yaml" --stages 2 --assumed-rates --trace "$WORK/folder.json" --json
left=$(find "$WORK" -name '*.tmp-*')
[[ ! -e $WORK/missing && -z $(ls -A "$WORK/folder.json") && -z $left ]] ||
  { echo "FAILED: plan --trace left $left"; exit 1; }
# pipeline.schedule: auto: one row per schedule weighed (step, bubble, peak per stage), the chosen
# one marked, and the same choice in the JSON; nothing within the limit: the smallest need.
"$MPIPE" plan "$configs/transformer_deep.yaml" --stages 4 --set pipeline.schedule=auto \
  > "$WORK/auto.txt"
[[ $(grep -cE '^(gpipe|1f1b|zb_h1) +[a-z_]+ +[0-9.]+ m?s +[0-9.]+%  ([0-9.]+ [KMG]?i?B ?){4}' \
  "$WORK/auto.txt") -eq 3 && $(grep -c -- '<- chosen$' "$WORK/auto.txt") -eq 1 ]] ||
  { cat "$WORK/auto.txt"; echo "FAILED: schedule: auto's candidate table"; exit 1; }
"$MPIPE" plan "$configs/transformer_deep.yaml" --stages 4 --set pipeline.schedule=auto --json \
  > "$WORK/auto.json"
chosen=$(grep -- '<- chosen$' "$WORK/auto.txt" | cut -d' ' -f1)
/usr/bin/python3 - "$WORK/auto.json" "$chosen" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
assert plan["schedule_setting"] == "auto" and plan["schedule"] == sys.argv[2], plan["schedule"]
candidates = plan["schedule_candidates"]
assert [c["schedule"] for c in candidates] == ["gpipe", "1f1b", "zb_h1"], candidates
assert [c["chosen"] for c in candidates].count(True) == 1
fastest = min(c["step_s"] for c in candidates)
assert next(c for c in candidates if c["chosen"])["step_s"] == fastest
PY
status=0
"$MPIPE" plan "$configs/transformer_deep.yaml" --stages 4 --set pipeline.schedule=auto \
  --memory-limit 1KiB > "$WORK/auto_limit.txt" || status=$?
[[ $status -eq 5 ]] || { echo "FAILED: schedule: auto over the limit: exit status $status"; exit 1; }
grep -qE '^does not fit: --memory-limit 1KiB: no schedule fits 1\.0 KiB per rank; the smallest need is [0-9.]+ MiB \((gpipe|1f1b|zb_h1)\)$' \
  "$WORK/auto_limit.txt" ||
  { cat "$WORK/auto_limit.txt"; echo "FAILED: schedule: auto over the limit"; exit 1; }
# A run under schedule: auto runs the schedule the planner chose, says so in one line and
# records it in summary.json (two steps of memory_mlp on 2 ranks, a few seconds).
train 2 auto_run "$(dirname "$0")/files/memory_mlp.yaml" --set pipeline.schedule=auto
ran=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["schedule"])' \
  "$WORK/auto_run/summary.json")
[[ $(grep -cE "pipeline\.schedule: auto chose $ran \(predicted step [0-9.]+ s, bubble [0-9.]+%, the fastest of 3 schedules within the memory limit\)$" \
  "$WORK/auto_run.log") -eq 1 ]] ||
  { cat "$WORK/auto_run.log"; echo "FAILED: schedule: auto's run"; exit 1; }
echo "plan: JSON, text, the tie exchange, threads per rank, schedule: auto and errors"
