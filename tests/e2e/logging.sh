#!/usr/bin/env bash
# What a run logs and exports: log.level debug prints each rank's step time split into compute,
# waiting, sending and allreduce; metrics.jsonl and summary.json hold each rank's compute,
# waiting, bubble and memory, and the MFU (the peak measured at start-up, or log.peak_flops);
# summary.json puts measured memory next to the prediction; the lists per rank are under
# "_per_rank" names, and their deprecated "_per_stage" ones beside them; the logged train loss is
# the mean over the logging window;
# train.steps 0 exports the initial weights (the same on any number of stages) and prints no train
# loss; the start line counts in the singular; evaluations during training are printed; the
# placement line says where the ranks run, and warns of a rank given fewer CPUs than threads.
# Usage: logging.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1

# (Accumulating: grouped weight gradients put the peak in a backward that holds a group's operands,
# where fewer micro-batches are kept than at the end of the forwards; the stash is checked below.)
train 2 debug "$config" --set log.level=debug --set train.steps=2 \
  --set pipeline.weight_grads=accumulate
for rank in 0 1; do
  grep -qE "\[debug\] step 2 pipeline rank $rank replica 0: compute [0-9.]+ ms \| waiting [0-9.]+ ms \| sending [0-9.]+ ms \| allreduce [0-9.]+ ms \| step [0-9.]+ ms" \
    "$WORK/debug.log" || { cat "$WORK/debug.log"; echo "FAILED: debug timings of pipeline rank $rank"; exit 1; }
done

# The placement line: these ranks are not bound (lib.sh: --bind-to none).
grep -qE "\[info\] placement: 2 ranks on 1 host \(.+\), 1 OpenMP thread each, not bound to CPUs \(each may run on all [0-9]+ of its host's\)" \
  "$WORK/debug.log" || { cat "$WORK/debug.log"; echo "FAILED: the placement line"; exit 1; }
# Bound by mpirun to one CPU each (its default for 2 ranks) with 2 threads: the CPUs, and a warning.
OMP_NUM_THREADS=2 timeout 120 mpirun -n 2 --bind-to core "$MPIPE" train "$config" \
  --run-dir "$WORK/bound" --set train.steps=1 > "$WORK/bound.log" 2>&1 ||
  { cat "$WORK/bound.log"; echo "FAILED: the bound run"; exit 1; }
grep -qE "\[info\] placement: 2 ranks on 1 host \(.+\), 2 OpenMP threads each, CPUs by rank: [0-9]+ \| [0-9]+$" "$WORK/bound.log" &&
  grep -qE "\[warning\] rank 0 \(host .+\) runs 2 OpenMP threads on 1 CPU \([0-9]+\): they share it; set OMP_NUM_THREADS or bind each rank to more" "$WORK/bound.log" ||
  { cat "$WORK/bound.log"; echo "FAILED: the bound ranks' placement and warning"; exit 1; }

# summary.json: the planner's prediction next to the measurement; stored activations are exact.
/usr/bin/python3 - "$WORK/debug/summary.json" <<'PY' || { echo "FAILED: summary memory"; exit 1; }
import json, sys
s = json.load(open(sys.argv[1]))
assert s["predicted_kept_activation_bytes_per_rank"] == s["peak_activation_bytes_per_rank"], s
assert len(s["peak_rss_bytes_per_rank"]) == 2 and min(s["peak_rss_bytes_per_rank"]) > 0, s
assert len(s["predicted_peak_bytes_per_rank"]) == 2 and s["predicted_samples_per_s"] > 0, s
# Each list of one number per rank also under its deprecated "_per_stage" name.
new = [k for k in s if k.endswith("_per_rank")]
assert len(new) == 10, new
for key in new:
    assert s[key[:-len("_per_rank")] + "_per_stage"] == s[key], key
PY

# (every1 measures the peak at start-up, whatever CONFIG gives: the fixtures give one.)
train 2 every1 "$config" --set train.steps=4 --set log.every=1 --set log.peak_flops=measured
train 2 every4 "$config" --set train.steps=4 --set log.every=4
# Each train record and the summary: every rank's compute and waiting per step and its bubble.
/usr/bin/python3 - "$WORK/every1" <<'PY' || { echo "FAILED: rank times"; exit 1; }
import json, sys
records = [r for r in map(json.loads, open(sys.argv[1] + "/metrics.jsonl")) if "lr" in r]
summary = json.load(open(sys.argv[1] + "/summary.json"))
assert len(records) == 4, records
for r in records + [summary]:
    compute, waiting, bubble = r["compute_ms_per_rank"], r["waiting_ms_per_rank"], r["bubble_per_rank"]
    assert len(compute) == len(waiting) == len(bubble) == 2, r
    assert all(c > 0 for c in compute) and all(w >= 0 for w in waiting), r
    assert all(0 <= b < 1 for b in bubble), r
    assert abs(r["bubble"] - sum(bubble) / 2) < 1e-12, r
    assert len(r["peak_tensor_bytes_per_rank"]) == 2 and min(r["peak_tensor_bytes_per_rank"]) > 0, r
    assert all(r[k[:-len("_per_rank")] + "_per_stage"] == r[k] for k in r if k.endswith("_per_rank")), r
PY
# The MFU: the peak measured at start-up and printed; with log.peak_flops, each window's MFU is its
# samples/s over the batch times the model's FLOPs per step over the ranks' peak.
grep -qE "\[info\] peak [0-9.]+ GFLOP/s per rank \(measured: 1024\^3 f32 GEMM, [0-9]+ threads?, [0-9.]+ s; ranks [0-9.]+-[0-9.]+\), [0-9.]+ GFLOP/s over 2 ranks; a step is [0-9.e-]+ GFLOP of the model" \
  "$WORK/every1.log" || { cat "$WORK/every1.log"; echo "FAILED: the measured peak"; exit 1; }
grep -qE "^step 4/4 \| .* samples/s \| MFU [0-9.]+% \| ETA" "$WORK/every1.log" ||
  { cat "$WORK/every1.log"; echo "FAILED: MFU on the progress line"; exit 1; }
train 2 peak "$config" --set train.steps=4 --set log.every=1 --set log.peak_flops=2.5e9
grep -qF "peak 2.5 GFLOP/s per rank (log.peak_flops), 5 GFLOP/s over 2 ranks" "$WORK/peak.log" ||
  { cat "$WORK/peak.log"; echo "FAILED: log.peak_flops"; exit 1; }
/usr/bin/python3 - "$WORK/every1" "$WORK/peak" <<'PY' || { echo "FAILED: MFU"; exit 1; }
import json, sys
for run in sys.argv[1:]:
    records = [r for r in map(json.loads, open(run + "/metrics.jsonl")) if "lr" in r]
    summary = json.load(open(run + "/summary.json"))
    assert len(records) == 4, records
    for r in records + [summary]:
        assert 0 < r["mfu"] < r["hfu"], r  # recompute: always (auto without a limit)
        # Below 1 against the measured peak; the made-up peak of 2.5 GFLOP/s is below what a
        # fast step reaches (an MFU of 2 or more on an idle machine).
        assert run != sys.argv[1] or r["hfu"] < 1, r
    assert summary["model_flops_per_step"] > 0 and summary["peak_flops_per_s"] > 0, summary
peak = json.load(open(sys.argv[2] + "/summary.json"))
assert peak["peak_flops_per_s"] == 5e9, peak
batch = 32
for r in [r for r in map(json.loads, open(sys.argv[2] + "/metrics.jsonl")) if "lr" in r]:
    expected = r["samples_per_s"] / batch * peak["model_flops_per_step"] / 5e9
    assert abs(r["mfu"] - expected) <= 1e-9 * expected, (r, expected)
PY
/usr/bin/python3 - "$WORK/every1/metrics.jsonl" "$WORK/every4/metrics.jsonl" <<'PY' || { echo "FAILED: window mean"; exit 1; }
import json, sys
def train_losses(path):
    return [r["loss"] for r in map(json.loads, open(path)) if "lr" in r]
per_step, windowed = train_losses(sys.argv[1]), train_losses(sys.argv[2])
mean = sum(per_step) / len(per_step)
assert len(per_step) == 4 and len(windowed) == 1, (per_step, windowed)
assert abs(windowed[0] - mean) <= 1e-12 * abs(mean), (windowed, mean)
assert windowed[0] != per_step[-1], "the window logged its last step only"
PY

train 1 init1 "$config" --set train.steps=0
train 2 init2 "$config" --set train.steps=0
same init1 init2
# The console: no train loss without steps, and one stage in the singular.
grep -qE "^final: no steps \(train.steps: 0\) \| test loss [0-9.]+ \| test accuracy" "$WORK/init1.log" &&
  ! grep -q "train loss nan" "$WORK/init1.log" ||
  { cat "$WORK/init1.log"; echo "FAILED: the final line of steps 0"; exit 1; }
grep -qF " 1 stage x 1 replica, 4 micro-batches of " "$WORK/init1.log" ||
  { cat "$WORK/init1.log"; echo "FAILED: 1 stage x 1 replica"; exit 1; }

# Evaluations during training are printed (a classification model: loss and accuracy).
train 2 evals "$config" --set train.steps=6 --set train.eval_every=2
for step in 2 4; do
  grep -qE "\[info\] step $step: test loss [0-9.]+ \| test accuracy [0-9.]+%$" "$WORK/evals.log" ||
    { cat "$WORK/evals.log"; echo "FAILED: evaluation at step $step not printed"; exit 1; }
done
train 1 step1 "$config" --set train.steps=1
! "$MPIPE" compare "$WORK/init1.safetensors" "$WORK/step1.safetensors" > /dev/null ||
  { echo "FAILED: steps 0 exported trained weights"; exit 1; }
[[ ! -e "$WORK/init1/checkpoints" ]] || { echo "FAILED: steps 0 wrote a checkpoint"; exit 1; }
echo "logging: debug timings per rank, window-mean loss, steps 0 exports the initial weights," \
  "evaluations printed"
