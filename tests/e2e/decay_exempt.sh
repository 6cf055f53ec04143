#!/usr/bin/env bash
# optimizer.decay_exempt: after one step, the exempt parameters (biases, norm gains and shifts,
# embedding tables) equal a run without weight decay's and the others a run with it, while
# exempt and decayed differ where the rule says; the result is bit-identical at K = 1, 2 and 4.
# The MLP starts from trained weights (its biases start at zero, where decay does nothing).
# Usage: decay_exempt.sh MLP_CONFIG TRANSFORMER_CONFIG
source "$(dirname "$0")/lib.sh"
mlp=$1 transformer=$2

# only A B REGEX: the tensors of runs A and B whose names match REGEX are bit-identical.
only() { "$MPIPE" compare "$WORK/$1.safetensors" "$WORK/$2.safetensors" --only "$3" > /dev/null; }
# expect WHAT A B REGEX: `only A B REGEX` gives WHAT (same or different).
expect() {
  local result=different
  if only "$2" "$3" "$4"; then result=same; fi
  [[ $result == "$1" ]] || { echo "FAILED: $2 vs $3 on '$4': $result, expected $1"; exit 1; }
}

# triplet NAME CONFIG ARGS...: NAME-exempt, NAME-decayed and NAME-plain after 1 step.
triplet() {
  local name=$1 config=$2
  shift 2
  local one=(--set train.steps=1 --set optimizer.kind=adamw --set optimizer.weight_decay=0.1 "$@")
  train 1 "$name-exempt" "$config" "${one[@]}" --set optimizer.decay_exempt=true
  train 1 "$name-decayed" "$config" "${one[@]}"
  train 1 "$name-plain" "$config" "${one[@]}" --set optimizer.weight_decay=0
}

train 1 source "$mlp"
triplet mlp "$mlp" --init-weights "$WORK/source.safetensors"
expect same mlp-exempt mlp-plain '\.bias$'
expect same mlp-exempt mlp-decayed '\.weight$'
expect different mlp-exempt mlp-decayed '\.bias$'
expect different mlp-exempt mlp-plain '\.weight$'

# Layers: 0 embedding, 1-2 transformer blocks, 3 layer_norm, 4 linear.
triplet gpt "$transformer"
expect same gpt-exempt gpt-plain '^layers\.[03]\.'
expect same gpt-exempt gpt-decayed '^layers\.4\.weight$'
expect different gpt-exempt gpt-decayed '^layers\.0\.'
expect different gpt-exempt gpt-plain '^layers\.4\.weight$'

for k in 1 2 4; do
  train "$k" "k$k" "$transformer" --set optimizer.kind=adamw --set optimizer.weight_decay=0.1 \
    --set optimizer.decay_exempt=true
done
same k1 k2
same k1 k4
echo "decay_exempt: exempt tensors step as without weight decay, the others as with it; K=1,2,4 bit-identical"
