#!/usr/bin/env bash
# A resume takes the settings stored with the run: the --set of its start need not be given
# again (the resumed run equals an uninterrupted one, and log.tensorboard goes on), the file's
# differences are listed and not taken (a larger train.steps in the file does not extend a
# finished run), and a finished run extended by --set train.steps keeps the learning-rate
# schedule's length unless optimizer.schedule.total_steps is set too, saying which.
# Usage: resume_settings.sh CONFIG (a constant schedule, `steps: 3,` and `clip_norm: 0.5}` in it)
source "$(dirname "$0")/checkpoint_lib.sh"
config=$1

# lr_of RUN STEP: the learning rate metrics.jsonl records for STEP of RUN (6 digits).
lr_of() {
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("step") == int(sys.argv[2]) and "lr" in r: print("%.6g" % r["lr"])' "$WORK/$1/metrics.jsonl" "$2"
}

# 1. Started with --set, resumed without: the same weights as 6 steps straight with them, the
# restored settings listed, and a second event file.
start=(--set optimizer.lr=0.02 --set train.seed=7 --set pipeline.schedule=1f1b
  --set log.tensorboard=true)
train 2 straight "$config" --set train.steps=6 "${start[@]}"
train 2 resumed "$config" --set train.steps=3 "${start[@]}"
train 2 resumed "$config" --set train.steps=6 --resume
same straight resumed
info_line "$WORK/resumed.log" "$WORK/resumed: resuming with the settings stored with step 3 where $config with this --set differs: log.tensorboard: true (file: false); optimizer.lr: 0.02 (file: 0.01); optimizer.schedule.total_steps: 3 (file: 6); pipeline.schedule: 1f1b (file: gpipe); train.seed: 7 (file: 5)"
events=$(compgen -G "$WORK/resumed/events.out.tfevents.*" | wc -l)
[[ $events -eq 2 ]] || { ls "$WORK/resumed"; echo "FAILED: $events event files, expected one per part"; exit 1; }

# 2. A finished cosine run of 4 steps; the same file with 8 steps does not extend it.
sed 's/steps: 3,/steps: 4,/; s/clip_norm: 0.5}/clip_norm: 0.5, schedule: {kind: cosine, min_lr: 0.001}}/' \
  "$config" > "$WORK/cosine.yaml"
sed 's/steps: 4,/steps: 8,/' "$WORK/cosine.yaml" > "$WORK/longer.yaml"
grep -q 'steps: 8,.*kind: cosine' <(tr '\n' ' ' < "$WORK/longer.yaml") ||
  { echo "FAILED: $config is not as this test expects"; exit 1; }
train 2 extended "$WORK/cosine.yaml"
cp -r "$WORK/extended" "$WORK/stretched"
train 2 extended "$WORK/longer.yaml" --resume
info_line "$WORK/extended.log" "$WORK/extended: resuming with the settings stored with step 4 where $WORK/longer.yaml differs: optimizer.schedule.total_steps: 4 (file: 8); train.steps: 4 (file: 8)"
info_line "$WORK/extended.log" "$WORK/extended: already finished at step 4 (train.steps = 4); nothing to do"

# 3. --set train.steps=8 extends it; the schedule keeps its 4 steps: min_lr from step 5 on.
train 2 extended "$WORK/cosine.yaml" --set train.steps=8 --resume
info_line "$WORK/extended.log" "$WORK/extended: train.steps changed from 4 to 8; the learning-rate schedule keeps its length of 4 steps (optimizer.schedule.total_steps): the next step's rate is 0.001 and the last step's 0.001 (--set optimizer.schedule.total_steps=8 stretches it to the new end)"
for step in 5 8; do
  [[ $(lr_of extended $step) == 0.001 ]] || { echo "FAILED: extended: lr of step $step is $(lr_of extended $step)"; exit 1; }
done

# 4. With optimizer.schedule.total_steps=8 too, the cosine is stretched to step 8, and the jump
# of the rate is a warning.
train 2 stretched "$WORK/cosine.yaml" --set train.steps=8 --set optimizer.schedule.total_steps=8 --resume
info_line "$WORK/stretched.log" "$WORK/stretched: optimizer.schedule.total_steps changed from 4 to 8: the learning-rate schedule is stretched to end at step 8, so the next step's rate is 0.0055 instead of 0.001"
[[ $(lr_of stretched 5) == 0.0055 ]] || { echo "FAILED: stretched: lr of step 5 is $(lr_of stretched 5)"; exit 1; }

# 5. weight_grads: auto keeps what the checkpoint's run summed with: recorded in meta.json
# (section 1's 1f1b run grouped by all 4 micro-batches); a checkpoint from before it was recorded,
# of a run under auto (then accumulating here: meta.json edited to one), resumes accumulating,
# saying so, and equals a run that accumulated straight.
/usr/bin/python3 - "$WORK/resumed/checkpoints" <<'PY' || { echo "FAILED: the recorded weight gradients"; exit 1; }
import glob, json, sys
settings = json.load(open(sorted(glob.glob(sys.argv[1] + "/step_*/meta.json"))[-1]))["settings"]
recorded = (settings["pipeline.resolved_weight_grads"], settings["pipeline.resolved_weight_group"])
assert recorded == ("grouped", "4"), recorded
PY
accumulate=(--set pipeline.weight_grads=accumulate)
train 2 accumulated "$config" --set train.steps=6 "${accumulate[@]}"
train 2 older "$config" --set train.steps=3 "${accumulate[@]}"
meta=$WORK/older/checkpoints/step_00000003/meta.json
/usr/bin/python3 - "$meta" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
meta["settings"]["pipeline.weight_grads"] = "auto"
del meta["settings"]["pipeline.resolved_weight_grads"]
json.dump(meta, open(sys.argv[1], "w"))
PY
python3 "$(dirname "$0")/checkpoint_edit.py" seal "$meta"
train 2 older "$config" --set train.steps=6 --resume
info_line "$WORK/older.log" "pipeline.weight_grads: auto keeps accumulate, as $WORK/older's checkpoint was trained (set pipeline.weight_grads to change it)"
same accumulated older
# 6. A layout fixed by a resume's --set is stored too, so a later resume on another world size
# fails on it: the restored settings are listed before the error, which names the file whose
# value (auto) is not the one in force.
train 2 layout "$config"
train 2 layout "$config" --set train.steps=4 --set pipeline.stages=2 --resume
status=0
OMPI_MCA_odls_base_sigkill_timeout=0 timeout 60 mpirun -n 1 "$MPIPE" train "$config" \
  --run-dir "$WORK/layout" --set train.steps=5 --resume > "$WORK/one_rank.log" 2>&1 || status=$?
[[ $status -eq 2 ]] || { cat "$WORK/one_rank.log"; echo "FAILED: one_rank: exit status $status"; exit 1; }
info_line "$WORK/one_rank.log" "$WORK/layout: resuming with the settings stored with step 4 where $config with this --set differs: optimizer.schedule.total_steps: 3 (file: 5); pipeline.stages: 2 (file: auto)"
info_line "$WORK/one_rank.log" "$config: pipeline.stages (2) x pipeline.data_parallel (1) = 2 ranks, but mpirun started 1"
echo "resume settings: the start's --set kept, the file's differences listed (before an error too), extensions explicit about the schedule, weight_grads: auto as the checkpoint ran"
