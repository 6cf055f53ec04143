#!/usr/bin/env bash
# Transparency: after 3 steps the exported weights of K = 1, 2, 4 stages are bit-identical (and
# K = 1 with per-layer recompute to K = 1 with the default),
# for every schedule (gpipe, 1f1b, zb_h1 with its backwards split into I and W ops, also at
# K = 1; interleaved at K = 2 with v = 2 chunks per rank; zbv at K = 2, and at K = 1 in the
# default mode; both at K = 4 for a model of 8 layers or more) and all four recompute modes, with
# the default partition (auto: the planner's, which differs from
# uniform for every model here at K = 4) and with uniform.
# Weight gradients: weight_grads: auto groups them by weight_group: auto's g (the default), except
# under GPipe with recompute never, which batches them; so runs under never compare with K = 1 under
# never, which equals K = 1 batched under always and K = 4 batched under per_layer; batched must
# differ from K = 1 never accumulating in f32 (batched is in effect), and the default equals
# batched where g is M, accumulating where g is 1, and neither in f32 otherwise.
# Settings after CONFIG (--set train.precision=bf16) apply to every run; they must change the
# result (the K=1 weights differ from those of a run without them), so that they were in effect.
# With such settings the schedules run in two recompute modes (always, per_layer), not four: a
# setting such as the precision belongs to the kernels, not to what a stage stores, which the runs
# without settings cover in every mode (this halves the bf16 runs' share of the suite).
# The suite runs a representative part of the schedules' matrix: one recompute mode at K = 4
# (first, middle and last stages, every cut relayed) for each schedule, taken so that with the
# K = 4 per_layer run above every mode runs at K = 4 (gpipe's never, 1f1b's except_last, zb_h1's
# always), one mode at K = 2 and at K = 1, each schedule a different one, and interleaved and zbv
# in alternate modes; the uniform partition at K = 2; with settings, one mode at every K and no
# uniform partition.
# MPIPE_TEST_FULL=1 runs
# every mode at every K for each (about 2.4x the runs; `MPIPE_TEST_FULL=1 scripts/test` for every
# model and the other matrices that honour it).
# Usage: transparency.sh CONFIG [--set key=value ...]
source "$(dirname "$0")/lib.sh"
config=$(fashion_mnist_subset "$1")
shift
extra=("$@")
recompute_modes=(always except_last never per_layer)
if ((${#extra[@]} > 0)); then recompute_modes=(always per_layer); fi
if [[ " ${extra[*]} " == *" train.precision=bf16 "* ]] && ! grep -qw avx512_bf16 /proc/cpuinfo; then
  echo "SKIPPED: this CPU has no avx512_bf16 (train.precision: bf16 is refused here)"
  exit 77
fi
train 1 k1 "$config" "${extra[@]}"
train 1 k1-per_layer "$config" --set pipeline.recompute=per_layer "${extra[@]}"
same k1 k1-per_layer
if ((${#extra[@]} > 0)); then
  train 1 k1-without-extra "$config"
  if "$MPIPE" compare "$WORK/k1.safetensors" "$WORK/k1-without-extra.safetensors" > /dev/null; then
    echo "FAILED: ${extra[*]} left the weights unchanged"
    exit 1
  fi
fi
train 1 k1-never "$config" --set pipeline.recompute=never "${extra[@]}"
train 1 k1-batched "$config" --set pipeline.weight_grads=batched "${extra[@]}"
same k1-never k1-batched
train 4 k4-per_layer-batched "$config" --set pipeline.recompute=per_layer \
  --set pipeline.weight_grads=batched "${extra[@]}"
same k1-never k4-per_layer-batched
train 1 k1-never-accumulate "$config" --set pipeline.recompute=never \
  --set pipeline.weight_grads=accumulate "${extra[@]}"
# differs A B WHAT: in f32, runs A and B must differ (WHAT was in effect). (In bf16, products are
# exact and the CNN's one small linear layer may round alike either way.)
differs() {
  if ((${#extra[@]} == 0)) &&
    "$MPIPE" compare "$WORK/$1.safetensors" "$WORK/$2.safetensors" > /dev/null; then
    echo "FAILED: $3 left the weights as $2's"
    exit 1
  fi
}
differs k1-batched k1-never-accumulate "batched weight gradients"
read -r group micro_batches < <("$MPIPE" plan "$config" --json --assumed-rates "${extra[@]}" |
  python3 -c 'import json, sys; p = json.load(sys.stdin); print(p["weight_group"], p["micro_batches"])')
if ((group == micro_batches)); then
  same k1 k1-batched
elif ((group == 1)); then
  same k1 k1-never-accumulate
else
  differs k1 k1-batched "weight_grads: auto (grouped by $group)"
  differs k1 k1-never-accumulate "weight_grads: auto (grouped by $group)"
fi
full=${MPIPE_TEST_FULL:-0}
rotation=0  # which mode the next K below 4 runs in (the suite's part)
pair=2      # the next K = 4's mode (gpipe's: never; then every third: except_last, always)
for schedule in gpipe 1f1b zb_h1; do
  stage_counts=(2 4)
  [[ $schedule == zb_h1 ]] && stage_counts=(1 2 4)  # (one stage still runs I, then W)
  for k in "${stage_counts[@]}"; do
    modes=("${recompute_modes[@]}")
    n=${#recompute_modes[@]}
    if [[ $full != 1 && ($k != 4 || ${#extra[@]} -gt 0) ]]; then
      modes=("${recompute_modes[rotation % n]}")
      rotation=$((rotation + 1))
    elif [[ $full != 1 ]]; then
      modes=("${recompute_modes[pair % n]}")
      pair=$((pair + 3))
    fi
    for recompute in "${modes[@]}"; do
      name=k$k-$schedule-$recompute
      train "$k" "$name" "$config" --set pipeline.schedule=$schedule --set pipeline.recompute="$recompute" \
        "${extra[@]}"
      if [[ $recompute$schedule == nevergpipe ]]; then same k1-never "$name"; else same k1 "$name"; fi
    done
  done
done
for k in 2 4; do
  [[ $full == 1 || ${#extra[@]} -eq 0 ]] || break  # (the partition is not the kernels')
  [[ $full == 1 || $k == 2 ]] || break             # (the suite's part: uniform at K = 2)
  train "$k" "k$k-uniform" "$config" --set pipeline.partition=uniform "${extra[@]}"
  same k1 "k$k-uniform"
done
# Interleaved 1F1B: K = 2 ranks of v = 2 chunks each (4 stages, rank 0 holding stages 0 and 2).
# ZB-V: K = 2 ranks of 2 chunks in a V (rank 0 holding stages 0 and 3, rank 1 stages 1 and 2, its
# chunk 0 sending to its chunk 1), v = 2 implied; and K = 1 (one rank holding stages 0 and 1).
for index in "${!recompute_modes[@]}"; do
  recompute=${recompute_modes[index]}
  if [[ $full == 1 || $((index % 2)) == 0 ]]; then
    name=k2-interleaved-$recompute
    train 2 "$name" "$config" --set pipeline.schedule=interleaved --set pipeline.virtual_stages=2 \
      --set pipeline.recompute="$recompute" "${extra[@]}"
    same k1 "$name"
  fi
  if [[ $full == 1 || $((index % 2)) == 1 ]]; then
    name=k2-zbv-$recompute
    train 2 "$name" "$config" --set pipeline.schedule=zbv --set pipeline.recompute="$recompute" \
      "${extra[@]}"
    same k1 "$name"
  fi
done
train 1 k1-zbv "$config" --set pipeline.schedule=zbv "${extra[@]}"
same k1 k1-zbv
# And at K = 4 (8 stages) where the model has the layers for it (the CNN's 10).
layers=$("$MPIPE" plan "$config" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["num_layers"])')
if ((layers >= 8)); then
  for schedule in interleaved zbv; do
    train 4 "k4-$schedule" "$config" --set pipeline.schedule=$schedule \
      --set pipeline.virtual_stages=2 "${extra[@]}"
    same k1 "k4-$schedule"
  done
fi
matrix="two modes in turn at K=4, one at K=1 and 2; interleaved and zbv in alternate modes"
[[ $full != 1 ]] || matrix="every mode at every K (MPIPE_TEST_FULL)"
echo "transparency${extra[*]:+ (${extra[*]})}: K=1,2,4 x {gpipe,1f1b,zb_h1 (and zb_h1 at K=1)} x {${recompute_modes[*]}} (auto; $matrix), interleaved and zbv at K=2 v=2 (zbv also at K=1; both at K=4 with 8 layers or more), and uniform bit-identical, weight gradients grouped by $group (auto), batched or accumulated"
