#!/usr/bin/env bash
# pipeline.memory_limit's promise at the stage level: for CONFIG (a 1F1B Transformer) on K=4
# stages, every recompute mode, with mpipe's allocator setting and with glibc's mmap threshold
# lowered to 64 KiB (what scripts/bench/largest_model.sh runs with: every tensor of 64 KiB or more
# is then mapped, and the memory account counts its whole pages), the predicted peak of every
# stage (predicted_peak_bytes_per_rank) is never below the measured high-water mark of tracked
# tensor bytes (peak_tensor_bytes_per_rank) and at most 3% above it. A longer run (20 steps,
# evaluations and checkpoints between them) holds to the same bound: its middle stages meet the
# moment a short run seldom does, two sends in flight during a backward (issue 18, item 4).
# The same CONFIG under the gpipe schedule, under zb_h1 at M = 4, and interleaved and zbv with 2
# chunks per rank at M = 8 (every recompute mode, default allocator) holds too: the planner's moments come
# from each schedule's op list, a rank's every chunk at once (pipeline/program_memory.h). Mode
# 1f1b_mk (not a default) runs 1f1b at M = K, where a stage's last micro-batches have no message
# left to receive and the first has sent none (the messages held come from the op list too).
# The messages a rank holds are the plan's at every op: its link frees a send only at the op that
# releases it (pipeline::send_releases: a third in flight, known delivered, or the end), never when
# the receiver's MPI happened to take it, so a stage whose peak is a send packed beside the ones
# before it (the U-Net's first stage at K = 2) is within the bound in every run.
# Every run also checks that the bytes each rank sent per step, counted by its link, are the plan's.
# The suite runs two of the four recompute modes under each mode, taken in turn so that each
# recompute mode runs under several of them (default's and gpipe's: per_layer and never), but all
# four under default where the modes are given (a model's few modes, such as the LM's default and
# zb_h1); MPIPE_TEST_FULL=1 runs all four under every mode.
# The measured peak covers the final evaluation, and so does the prediction (the larger of
# training's and evaluation's): a U-Net's evaluation micro-batches, 4 times training's rows, are
# its peak (before evaluation was predicted as Executor::evaluate runs it, 13-66% below).
# Usage: memory_stage_bound.sh CONFIG [STAGES [MODE...]]: STAGES (ranks) 4 and the modes default,
# mmap64k, long, gpipe, zb_h1, interleaved and zbv unless given (the modes are the loop's "allocator"
# below); the recompute modes are RECOMPUTE_MODES's (all four unless set).
source "$(dirname "$0")/lib.sh"

config=$(fashion_mnist_subset "${1:?usage: memory_stage_bound.sh CONFIG [STAGES [MODE...]]}")
stages=${2:-4}
modes=("${@:3}")
every_mode_under=default  # (the suite's part)
if [[ ${#modes[@]} -eq 0 ]]; then
  modes=(default mmap64k long gpipe zb_h1 interleaved zbv)
  every_mode_under=none
fi
read -ra recompute_modes <<< "${RECOMPUTE_MODES:-per_layer never always except_last}"
rotation=0  # where the next mode's two recompute modes start (the suite's part)
failed=0
printf '%-10s %-11s %5s %12s %12s %7s\n' allocator recompute stage predicted measured error
for allocator in "${modes[@]}"; do
  recomputes=("${recompute_modes[@]}")
  if [[ $allocator == long ]]; then
    recomputes=(always)
  elif [[ ${MPIPE_TEST_FULL:-0} != 1 && $allocator != "$every_mode_under" ]]; then
    recomputes=("${recompute_modes[rotation % ${#recompute_modes[@]}]}"
      "${recompute_modes[(rotation + 1) % ${#recompute_modes[@]}]}")
    rotation=$((rotation + 2))
  fi
  for recompute in "${recomputes[@]}"; do
    name=$allocator-$recompute
    layout=(--set pipeline.stages="$stages" --set pipeline.recompute="$recompute")
    if [[ $allocator == gpipe || $allocator == zb_h1 ]]; then
      # (Not an allocator: the default one under another schedule; zb_h1 at M = K, where stage 0
      # runs all its forwards before its first backward and the later ones hold W ops back.)
      micro_batches=8
      [[ $allocator == zb_h1 ]] && micro_batches=$stages
      train "$stages" "$name" "$config" "${layout[@]}" --set pipeline.schedule="$allocator" \
        --set pipeline.micro_batches="$micro_batches"
    elif [[ $allocator == 1f1b_mk ]]; then
      train "$stages" "$name" "$config" "${layout[@]}" --set pipeline.schedule=1f1b \
        --set pipeline.micro_batches="$stages"
    elif [[ $allocator == interleaved || $allocator == zbv ]]; then
      train "$stages" "$name" "$config" "${layout[@]}" --set pipeline.schedule="$allocator" \
        --set pipeline.virtual_stages=2 --set pipeline.micro_batches=8
    elif [[ $allocator == long ]]; then
      train "$stages" "$name" "$config" "${layout[@]}" --set train.steps=20 \
        --set train.eval_every=5 --set checkpoint.every=5
    elif [[ $allocator == mmap64k ]]; then
      MALLOC_MMAP_THRESHOLD_=65536 train "$stages" "$name" "$config" "${layout[@]}"
    else
      train "$stages" "$name" "$config" "${layout[@]}"
    fi
    python3 - "$WORK/$name/summary.json" "$allocator" "$recompute" <<'PY' || failed=1
import json, sys
summary = json.load(open(sys.argv[1]))
ok = True
pairs = zip(summary["predicted_peak_bytes_per_rank"], summary["peak_tensor_bytes_per_rank"])
for stage, (predicted, measured) in enumerate(pairs):
    error = (predicted - measured) / measured
    good = 0.0 <= error <= 0.03
    ok &= good
    print(f"{sys.argv[2]:10s} {sys.argv[3]:11s} {stage:5d} {predicted:12.0f} {measured:12.0f} "
          f"{100 * error:+6.2f}%{'' if good else '  FAILED'}")
# The bytes each rank sent per step, counted by its link, are the plan's (the live sets' bytes).
sent = summary["sent_bytes_per_step_per_rank"]
if sent != summary["predicted_sent_bytes_per_step_per_rank"]:
    print(f"FAILED: sent {sent} bytes per step per stage, the plan says "
          f"{summary['predicted_sent_bytes_per_step_per_rank']}")
    ok = False
sys.exit(0 if ok else 1)
PY
  done
done
[[ $failed -eq 0 ]] || {
  echo "FAILED: a stage's predicted peak is below its measured peak or more than 3% above it"
  exit 1
}
