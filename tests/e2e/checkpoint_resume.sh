#!/usr/bin/env bash
# --resume and --resume-or-start: never a silent start from step 0, nothing done for a finished
# run, settings compared with the checkpoint's (the layout may change, the mathematics may not),
# and metrics.jsonl with each step once after a resume. Usage: checkpoint_resume.sh CONFIG
source "$(dirname "$0")/checkpoint_lib.sh"
config=$1

# --resume with no committed checkpoint: one line saying what was found; nothing created.
fails typo 2 "$WORK/typo: --resume: no committed checkpoint (the directory does not exist)" \
  "$config" --run-dir "$WORK/typo" --resume
[[ ! -e "$WORK/typo" ]] || { echo "FAILED: --resume created the run directory"; exit 1; }
mkdir -p "$WORK/empty/checkpoints/step_00000002"  # a step that was never committed
fails empty 2 "$WORK/empty: --resume: no committed checkpoint (checkpoints/ holds no committed step)" \
  "$config" --run-dir "$WORK/empty" --resume
mkdir -p "$WORK/bare"
fails bare 2 "$WORK/bare: --resume: no committed checkpoint (it has no checkpoints/ folder)" \
  "$config" --run-dir "$WORK/bare" --resume

# --resume-or-start with none: says so, and starts.
train 2 fresh "$config" --set train.steps=2 --resume-or-start
info_line "$WORK/fresh.log" "$WORK/fresh: no committed checkpoint; starting a new run from step 0"

# A finished run: nothing to do, exit 0, summary.json, metrics.jsonl and the weights untouched.
train 2 "done" "$config" --set train.steps=4 --set checkpoint.every=2
mkdir "$WORK/before"
cp -p "$WORK/done/summary.json" "$WORK/done/metrics.jsonl" "$WORK/done.safetensors" "$WORK/before/"
train 2 "done" "$config" --set train.steps=4 --set checkpoint.every=2 --resume
info_line "$WORK/done.log" "$WORK/done: already finished at step 4 (train.steps = 4); nothing to do"
for file in done/summary.json done/metrics.jsonl done.safetensors; do
  cmp "$WORK/$file" "$WORK/before/$(basename "$file")" || { echo "FAILED: $file changed"; exit 1; }
done
! grep -q "final:" "$WORK/done.log" || { echo "FAILED: a finished run printed a result"; exit 1; }

# Settings the training depends on: refused, each difference listed.
allowed="a resumed run may change only train.steps, optimizer.schedule.total_steps, train.eval_*, log.*, checkpoint.* and the pipeline layout, keeping pipeline.micro_batches × data_parallel; start a new run with another --run-dir"
fails settings 2 "$WORK/done: cannot resume step 4 with other settings: optimizer.lr: 0.01 → 0.02; train.seed: 5 → 6 ($allowed)" \
  "$config" --run-dir "$WORK/done" --set train.steps=6 --set optimizer.lr=0.02 --set train.seed=6 --resume
if grep -qw avx512_bf16 /proc/cpuinfo; then  # elsewhere preflight refuses bf16 itself, first
  fails precision 2 "$WORK/done: cannot resume step 4 with other settings: train.precision: f32 → bf16 ($allowed)" \
    "$config" --run-dir "$WORK/done" --set train.steps=6 --set train.precision=bf16 --resume
fi
fails micro_batches 2 "$WORK/done: cannot resume step 4 with other settings: pipeline.micro_batches × data_parallel: 4 → 2 ($allowed)" \
  "$config" --run-dir "$WORK/done" --set train.steps=6 --set pipeline.micro_batches=2 --resume
fails model 2 "$WORK/done: cannot resume step 4 with other settings: model.layers[3].units: 48 → 40 ($allowed)" \
  "$config" --run-dir "$WORK/done" --set train.steps=6 --resume \
  --set 'model.layers=[{type: linear, units: 64}, {type: relu}, {type: dropout, rate: 0.2}, {type: linear, units: 40}, {type: tanh}, {type: linear, units: 4}]'

# Steps, cadences and the layout may change: 2 replicas of 1 stage with 2 micro-batches each
# keep the 4 global micro-batches (weight_grads: auto's group of 4 no longer fits M = 2: it is
# chosen again, and the change listed).
train 2 "done" "$config" --set train.steps=6 --set checkpoint.every=3 --set log.every=2 \
  --set train.eval_every=5 --set pipeline.stages=1 --set pipeline.data_parallel=2 \
  --set pipeline.micro_batches=2 --resume
info_line "$WORK/done.log" "$WORK/done: resuming with changed settings: checkpoint.every: 2 → 3; log.every: 1 → 2; pipeline.data_parallel: 1 → 2; pipeline.micro_batches: 4 → 2; pipeline.resolved_weight_group: 4 → 2; pipeline.stages: auto → 1; train.eval_every: 0 → 5; train.steps: 4 → 6"

# Without its settings a checkpoint cannot be checked: refused, even with meta.json's checksum
# recomputed to match.
meta=$WORK/done/checkpoints/step_00000006/meta.json
python3 "$(dirname "$0")/checkpoint_edit.py" drop "$meta" settings
python3 "$(dirname "$0")/checkpoint_edit.py" seal "$meta"
fails no_settings 2 "$meta: missing key 'settings'" \
  "$config" --run-dir "$WORK/done" --set train.steps=7 --set optimizer.lr=0.02 --resume

# Each step once in metrics.jsonl: steps 5 and 6 were logged, but their checkpoint is lost
# (and the last line torn), so the resume from step 4 runs them again.
train 2 cut "$config" --set train.steps=6 --set checkpoint.every=4
rm -r "$WORK/cut/checkpoints/step_00000006"
printf '{"step":7,"lo' >> "$WORK/cut/metrics.jsonl"
train 2 cut "$config" --set train.steps=8 --set checkpoint.every=4 --resume
info_line "$WORK/cut.log" "$WORK/cut/metrics.jsonl: dropped 4 records after step 4 (those steps are run again)"
steps=$(grep -o '^{"step":[0-9]*,"loss"' "$WORK/cut/metrics.jsonl" | grep -o '[0-9]*' | tr '\n' ' ')
[[ $steps == "1 2 3 4 5 6 7 8 " ]] || { cat "$WORK/cut/metrics.jsonl"; echo "FAILED: train steps $steps"; exit 1; }
evals=$(grep -c '"split"' "$WORK/cut/metrics.jsonl")
[[ $evals -eq 1 ]] || { cat "$WORK/cut/metrics.jsonl"; echo "FAILED: $evals eval records"; exit 1; }
echo "checkpoint resume: no silent start, finished runs untouched, settings checked, metrics once per step"
