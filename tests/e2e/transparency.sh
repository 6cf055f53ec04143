#!/usr/bin/env bash
# Transparency: after 3 steps the exported weights of K = 1, 2, 4 stages are bit-identical,
# for both schedules and all three recompute modes. Usage: transparency.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
train 1 k1 "$config"
for schedule in gpipe 1f1b; do
  for recompute in always except_last never; do
    for k in 2 4; do
      name=k$k-$schedule-$recompute
      train "$k" "$name" "$config" --set pipeline.schedule=$schedule --set pipeline.recompute=$recompute
      same k1 "$name"
    done
  done
done
echo "transparency: K=1,2,4 x {gpipe,1f1b} x {always,except_last,never} bit-identical"
