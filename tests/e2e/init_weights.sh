#!/usr/bin/env bash
# train --init-weights: a new run starts from a weights file. The loaded weights equal the file
# (a run of 0 steps on K = 2 x D = 2 exports it unchanged); 2 steps from it give bit-identical
# weights at K = 1 and K = 2 (at K = 2 x D = 2 the same to rounding, as data parallelism gives),
# which differ from a run without it; --init-skip keeps a new head (of another shape) at its
# initialisation; --resume-or-start reads the file only when it starts, so a resumed run equals
# an uninterrupted one. A file that does not fit the model (a tensor missing, extra, of another
# shape or dtype, or non-finite), a --init-skip that matches nothing or comes alone, and
# --init-weights with --resume are refused in one line with exit status 2.
# Usage: init_weights.sh CONFIG
source "$(dirname "$0")/checkpoint_lib.sh"
config=$1
train 1 source "$config"  # seed 5
w=$WORK/source.safetensors
from=(--init-weights "$w" --set train.seed=6)
edit=$(dirname "$0")/safetensors_edit.py

d2=(--set pipeline.stages=2 --set pipeline.data_parallel=2 --set pipeline.micro_batches=2)
train 4 loaded "$config" "${from[@]}" --set train.steps=0 "${d2[@]}"
same source loaded
train 1 k1 "$config" "${from[@]}" --set train.steps=2
train 2 k2 "$config" "${from[@]}" --set train.steps=2
same k1 k2
# Data parallelism sums the gradients in another order (see equivalence.sh), so it agrees to
# rounding; a replica that kept its own initialisation would be far off.
train 4 k2d2 "$config" "${from[@]}" --set train.steps=2 "${d2[@]}"
same k1 k2d2 1e-5
train 1 own "$config" --set train.seed=6 --set train.steps=2
if "$MPIPE" compare "$WORK/k1.safetensors" "$WORK/own.safetensors" > /dev/null; then
  echo "FAILED: --init-weights left the weights unchanged"
  exit 1
fi

# A new head of 3 classes: layers 0-3 from the file, layer 5 as a fresh run initialises it.
head=(--set 'model.layers=[{type: linear, units: 64}, {type: relu}, {type: dropout, rate: 0.2}, {type: linear, units: 48}, {type: tanh}, {type: linear, units: 3}]'
  --set data.classes=3 --set train.steps=0)
train 2 head "$config" "${from[@]}" "${head[@]}" --init-skip layers.5
train 2 fresh "$config" --set train.seed=6 "${head[@]}"
# without_head FILE: FILE's tensors but layer 5's, in $WORK/FILE-body.safetensors.
without_head() {
  python3 "$edit" "$WORK/$1.safetensors" "$WORK/$1-w.safetensors" drop layers.5.weight
  python3 "$edit" "$WORK/$1-w.safetensors" "$WORK/$1-body.safetensors" drop layers.5.bias
}
without_head source
without_head head
same source-body head-body
"$MPIPE" compare "$WORK/head.safetensors" "$WORK/fresh.safetensors" --only '^layers\.5\.' \
  > /dev/null || { echo "FAILED: --init-skip did not keep the head's initialisation"; exit 1; }
info_line "$WORK/head.log" "started from the weights in $w (kept at their initialisation: layers.5)"

# --resume-or-start: the file starts the run; the resumed part does not read it.
train 2 cut "$config" "${from[@]}" --set train.steps=2 --set checkpoint.every=2 --resume-or-start
train 2 cut "$config" "${from[@]}" --set train.steps=4 --set checkpoint.every=2 --resume-or-start
info_line "$WORK/cut.log" "not reading --init-weights $w: the run resumes from its checkpoint of step 2"
train 2 whole "$config" "${from[@]}" --set train.steps=4
same cut whole

# refused NAME MESSAGE ARGS...: `mpipe train CONFIG ARGS` fails on every rank with MESSAGE.
refused() { fails "$1" 2 "$2" "$config" --run-dir "$WORK/$1" "${@:3}"; }
edit() { python3 "$edit" "$w" "$WORK/bad.safetensors" "$@"; }
bad=(--init-weights "$WORK/bad.safetensors")
edit drop layers.3.bias
refused missing "$WORK/bad.safetensors: tensor layers.3.bias is missing" "${bad[@]}"
edit copy layers.3.bias layers.9.bias
refused extra "$WORK/bad.safetensors: tensor layers.9.bias is not in the model" \
  "${bad[@]}"
refused shape "$w: tensor layers.5.weight has shape [4, 48], the model needs [3, 48]" \
  "${from[@]}" "${head[@]}"
edit dtype layers.3.weight F16
refused dtype "$WORK/bad.safetensors: tensor 'layers.3.weight': dtype F16 is not supported (only F32)" \
  "${bad[@]}"
edit nan layers.0.weight
refused nan "$WORK/bad.safetensors: tensor 'layers.0.weight' holds a non-finite value (nan) at index 0" \
  "${bad[@]}"
refused skip_nothing "--init-skip 'layers.9': matches no tensor of the model" \
  "${from[@]}" --init-skip layers.9
refused with_resume "--resume excludes --init-weights (\`mpipe train --help\` lists the options)" \
  "${from[@]}" --resume
refused skip_alone "--init-skip requires --init-weights (\`mpipe train --help\` lists the options)" \
  --init-skip layers.5
echo "init weights: loaded as written, bit-identical at K=1, 2 and 2x2, a new head kept, read only at the start; mismatches refused in one line"
