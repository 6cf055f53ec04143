#!/usr/bin/env bash
# mpipe export: the weights file made from a committed checkpoint is byte-equal to the one
# --export-weights writes at that step (the newest checkpoint, and an earlier one by --step, of a
# 2-stage run, equal to a 1-stage run's export); a missing run, a missing step, a FIFO to write
# to, a damaged shard, a non-finite value whose crc32 matches, a FIFO shard, a weight renamed or
# reshaped (crc32 and manifest forged), alone or with its optimizer state, and settings that are
# not strings are refused in one line with the newest intact checkpoint to export instead, exit
# status 2, no file written.
# Usage: export.sh CONFIG
source "$(dirname "$0")/checkpoint_lib.sh"
config=$1
train 2 run "$config" --set train.steps=4 --set checkpoint.every=2 --set checkpoint.keep=2
train 1 half "$config" --set train.steps=2

"$MPIPE" export "$WORK/run" "$WORK/latest.safetensors" > "$WORK/latest.out"
[[ "$(cat "$WORK/latest.out")" == "exported step 4 of $WORK/run (6 tensors, "*") to $WORK/latest.safetensors" ]] \
  || { cat "$WORK/latest.out"; echo "FAILED: export's report"; exit 1; }
cmp "$WORK/run.safetensors" "$WORK/latest.safetensors" || { echo "FAILED: newest step"; exit 1; }
"$MPIPE" export "$WORK/run" --step 2 "$WORK/step2.safetensors" > /dev/null
cmp "$WORK/half.safetensors" "$WORK/step2.safetensors" || { echo "FAILED: --step 2"; exit 1; }

# refused NAME MESSAGE ARGS...: `mpipe export ARGS` exits 2 with MESSAGE as its one error line
# and writes nothing at $WORK/out.safetensors.
refused() {
  local name=$1 message=$2 status=0
  shift 2
  "$MPIPE" export "$@" > "$WORK/$name.log" 2>&1 || status=$?
  local problem=""
  if [[ $status -ne 2 ]]; then
    problem="exit status $status"
  elif [[ $(grep -c '\[error\]' "$WORK/$name.log") -ne 1 ]]; then
    problem="not exactly one error line"
  elif [[ "$(grep '\[error\]' "$WORK/$name.log" | sed 's/.*\[error\] //')" != "$message" ]]; then
    problem="message differs; expected: $message"
  elif compgen -G "$WORK/out.safetensors*" > /dev/null; then
    problem="a file was written"
  fi
  [[ -z $problem ]] || { cat "$WORK/$name.log"; echo "FAILED: $name: $problem"; exit 1; }
}
out=$WORK/out.safetensors
refused no_run "$WORK/typo: not a run directory (it does not exist)" "$WORK/typo" "$out"
mkdir "$WORK/empty"
refused no_checkpoints "$WORK/empty: no committed checkpoint (it has no checkpoints/ folder)" \
  "$WORK/empty" "$out"
refused no_step "$WORK/run: no committed checkpoint at step 3 (committed: 2, 4)" "$WORK/run" \
  --step 3 "$out"
refused no_folder "$WORK/nowhere/w.safetensors: the folder $WORK/nowhere does not exist" \
  "$WORK/run" "$WORK/nowhere/w.safetensors"
refused to_folder "$WORK/empty: is a directory, not a file" "$WORK/run" "$WORK/empty"
# A FIFO (or a device such as /dev/null) as the file to write: the rename into place replaced it.
mkfifo "$WORK/fifo"
refused to_fifo "$WORK/fifo: exists and is not a regular file (export writes a new file or replaces a regular one)" \
  "$WORK/run" "$WORK/fifo"
[[ -p "$WORK/fifo" ]] || { echo "FAILED: the FIFO was replaced"; exit 1; }
ck=$WORK/run/checkpoints
shard=$ck/step_00000004/stage_1.safetensors
intact="the newest intact checkpoint is step 2 ($ck/step_00000002): export it with --step 2"
cp "$shard" "$WORK/good"
before=$(crc32 "$shard")
flip_bit "$shard" 3
refused damaged "$shard: checksum mismatch (crc32 $(crc32 "$shard"), meta.json says $before); $intact" \
  "$WORK/run" "$out"
cp "$WORK/good" "$shard"
meta=$ck/step_00000004/meta.json
cp "$meta" "$WORK/good_meta"
tensor=$(python3 "$(dirname "$0")/checkpoint_edit.py" nan "$meta" 1)  # crc32s made to match
refused nan "$shard: tensor '$tensor' holds a non-finite value (nan) at index 0; $intact" \
  "$WORK/run" "$out"
cp "$WORK/good" "$shard"
cp "$WORK/good_meta" "$meta"
# A FIFO in a shard's place: one line with the advice (a resume blocked in open()).
rm "$shard" && mkfifo "$shard"
refused shard_fifo "$shard: not a regular file; $intact" "$WORK/run" "$out"
rm "$shard" && cp "$WORK/good" "$shard"
# A weight renamed or reshaped, the shard's crc32 and the manifest forged to match (a resume refuses
# it; export wrote it): refused by the weight's optimizer state.
edit() { python3 "$(dirname "$0")/checkpoint_edit.py" "$@"; }
edit rename "$meta" 1 layers.3.weight layers.3.weigxt
refused renamed "$shard: tensor 'optim.exp_avg.layers.3.weight' is the optimizer state of 'layers.3.weight', which no shard holds; $intact" \
  "$WORK/run" "$out"
cp "$WORK/good" "$shard" && cp "$WORK/good_meta" "$meta"
edit reshape "$meta" 1 layers.3.weight '[64, 48]'
refused reshaped "$shard: tensor 'layers.3.weight' has shape [64, 48], its optimizer state 'optim.exp_avg.layers.3.weight' (in stage_1.safetensors) has [48, 64]; $intact" \
  "$WORK/run" "$out"
cp "$WORK/good" "$shard" && cp "$WORK/good_meta" "$meta"
# A weight and its optimizer state renamed alike (crc32 and manifest forged): refused as a resume
# refuses it, by the model rebuilt from the manifest's settings and inputs.
for name in layers.3.weight optim.exp_avg.layers.3.weight optim.exp_avg_sq.layers.3.weight; do
  edit rename "$meta" 1 "$name" "${name/weight/weigxt}"
done
refused renamed_with_state "$ck/step_00000004: tensor layers.3.weight is missing; $intact" \
  "$WORK/run" "$out"
cp "$WORK/good" "$shard" && cp "$WORK/good_meta" "$meta"
# A manifest whose settings are not strings (resealed): one line with the advice, exit status 2.
edit set "$meta" settings '{"optimizer.lr": 1}' && edit seal "$meta"
refused settings "$meta: settings.optimizer.lr: must be a string; $intact" "$WORK/run" "$out"
cp "$WORK/good_meta" "$meta"
echo "export: byte-equal to --export-weights at the newest step and at --step 2; a missing run or step, a FIFO to write, a damaged shard, a NaN, a FIFO shard, a renamed or reshaped weight (with its optimizer state too) and bad settings refused in one line"
