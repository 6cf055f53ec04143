#!/usr/bin/env bash
# data.dataset: tensors: a classification set written by a Python script (U8 inputs, I64 labels)
# trains well above chance, with bit-identical weights at K = 1 and 2; a file without `targets`,
# with F16 inputs, with rows that disagree, or with a negative or fractional label, and a
# val_fraction that leaves no validation row, are refused in one line naming the file and the
# tensor, exit status 2 on every rank; a model with fewer outputs than the labels' classes too.
source "$(dirname "$0")/checkpoint_lib.sh"
write() { python3 "$(dirname "$0")/write_tensors.py" "$@"; }
data=$WORK/data.safetensors
write "$data"
cat > "$WORK/tensors.yaml" <<YAML
model:
  loss: cross_entropy
  layers:
    - {type: linear, units: 32}
    - {type: relu}
    - {type: linear, units: 4}
data: {dataset: tensors, path: $data, val_fraction: 0.25}
train: {steps: 60, batch_size: 32, seed: 3}
optimizer: {kind: adam, lr: 0.01}
pipeline: {stages: auto, micro_batches: 2}
log: {every: 20, peak_flops: 1e11}  # (given: no GEMM peak measured at start-up)
YAML
config=$WORK/tensors.yaml
train 1 k1 "$config"
train 2 k2 "$config"
same k1 k2
accuracy=$(sed -n 's/.*val accuracy \([0-9.]*\)%.*/\1/p' "$WORK/k1.log")
python3 -c "import sys; sys.exit(0 if float('$accuracy') > 60 else 1)" \
  || { cat "$WORK/k1.log"; echo "FAILED: val accuracy $accuracy% (chance: 25%)"; exit 1; }

bad=$WORK/bad.safetensors
# refused NAME VARIANT MESSAGE [ARGS...]: a file of VARIANT (write_tensors.py) is refused.
refused() {
  write "$bad" 320 "$2"
  fails "$1" 2 "$3" "$config" --set "data.path=$bad" --run-dir "$WORK/$1" "${@:4}"
}
refused no_targets no_targets "$bad: no tensor 'targets' (the file holds inputs)"
refused f16 f16_inputs "$bad: tensor 'inputs': dtype F16 is not supported (only F32, U8 or I64)"
refused rows short_targets "$bad: tensor 'targets' has 319 rows, 'inputs' has 320"
refused negative negative_label \
  "$bad: tensor 'targets' holds -1 at index 3; class labels must be integers in [0, 2^24)"
refused fractional fractional_label \
  "$bad: tensor 'targets' holds 1.5 at index 2; class labels must be integers in [0, 2^24)"
refused no_validation "" \
  "$bad: 320 rows leave 0 for validation at data.val_fraction 0.001 (at least 1 each for training and validation)" \
  --set data.val_fraction=0.001
# The classes (the largest label + 1) are what the model's output must match.
sed 's/units: 4}/units: 3}/' "$config" > "$WORK/narrow.yaml"
fails narrow 2 "$WORK/narrow.yaml:6: model.layers[2] (linear): outputs 3 classes, but the data (tensors) has 4" \
  "$WORK/narrow.yaml" --run-dir "$WORK/narrow"
echo "tensors dataset: trains from a Python-written file, K=1 == K=2; bad files refused in one line"
