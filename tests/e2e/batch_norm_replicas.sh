#!/usr/bin/env bash
# Batch norm with data parallelism: the running statistics do not depend on D. Same global
# micro-batches: D=1 with M=4 against D=2 with M=2 (and D=2 x K=2): after one step the running
# statistics are bit-identical, after six they agree to float rounding, and at D=2 the test loss
# is the same with and without a reload. Usage: batch_norm_replicas.sh CONFIG (with batch norm)
source "$(dirname "$0")/lib.sh"
config=$(fashion_mnist_subset "$1")
replicas=(--set pipeline.data_parallel=2 --set pipeline.micro_batches=2)

# same_stats A B RTOL: the running statistics of runs A and B agree (bit-identical when RTOL is 0).
same_stats() {
  "$MPIPE" compare "$WORK/$1.safetensors" "$WORK/$2.safetensors" --only running_ --rtol "$3" \
    > "$WORK/compare.out" || { cat "$WORK/compare.out"; echo "FAILED: $1 vs $2"; exit 1; }
  cat "$WORK/compare.out"
}

# test_loss NAME: the final test loss a run printed.
test_loss() {
  grep -o 'test loss [0-9.]*' "$WORK/$1.log" || { cat "$WORK/$1.log"; echo "FAILED: $1 printed no test loss"; exit 1; }
}

train 1 d1 "$config" --set train.steps=1 --set pipeline.micro_batches=4
train 2 d2 "$config" --set train.steps=1 "${replicas[@]}"
train 4 d2k2 "$config" --set train.steps=1 --set pipeline.stages=2 "${replicas[@]}"
same_stats d1 d2 0
# Every batch norm's two running statistics are compared (the model has 8 batch norms: its own,
# the residual blocks' 5 and the separable cells' 2).
grep -q "^same: 16 tensors" "$WORK/compare.out" || { echo "FAILED: not 16 tensors"; exit 1; }
same_stats d1 d2k2 0

train 1 d1-6 "$config" --set train.steps=6 --set pipeline.micro_batches=4
train 2 d2-6 "$config" --set train.steps=6 "${replicas[@]}"
same_stats d1-6 d2-6 1e-5

# Reload: 3 steps, then a resume to 6 (each replica loads replica 0's saved statistics) ends
# with the test loss of the 6 steps run straight (training itself uses batch statistics).
train 2 reloaded "$config" --set train.steps=3 "${replicas[@]}"
train 2 reloaded "$config" --set train.steps=6 "${replicas[@]}" --resume
before=$(test_loss d2-6) after=$(test_loss reloaded)
echo "D=2: $before before the reload, $after after"
[[ "$before" == "$after" ]] || { echo "FAILED: the test loss changed on reload"; exit 1; }

# --only refuses a pattern that is not a regular expression or matches no tensor: one line, exit 2.
only_refuses() {
  local status=0
  "$MPIPE" compare "$WORK/d1.safetensors" "$WORK/d2.safetensors" --only "$1" \
    > "$WORK/only.out" 2>&1 || status=$?
  cat "$WORK/only.out"
  [[ $status -eq 2 ]] || { echo "FAILED: exit status $status for --only '$1'"; exit 1; }
  [[ $(wc -l < "$WORK/only.out") -eq 1 ]] || { echo "FAILED: not one line"; exit 1; }
  grep -qF -- "$2" "$WORK/only.out" || { echo "FAILED: message for --only '$1'"; exit 1; }
}
only_refuses '(' "--only '(': not a valid regular expression"
only_refuses no_such_tensor "--only 'no_such_tensor': no tensor name matches"
echo "batch norm replicas: running statistics independent of D, test loss unchanged by a reload"
