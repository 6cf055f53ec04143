#!/usr/bin/env bash
# A host's node-local disk fails the run across three hosts: h2's run directory on a full disk (a 100 KiB tmpfs), and h2's run directory removed mid-run. Each ends the job with one line that names the host, and the checkpoints left are whole.
#
#   1. full: the checkpoint that no longer fits on h2 fails on every rank (not by timeout) with
#      one line "rank 1 (pipeline rank 1, host h2): ...stage_1.safetensors: write failed: No space left
#      on device"; no temporary file and no step folder newer than the last commit is left on
#      any host; with room again, and the committed step's folder copied together on every
#      host, --resume finishes the run with the weights of one host's uninterrupted run, bit
#      for bit.
#   2. removed: the run directory on h2 removed between two checkpoints (a node's scratch
#      wiped) ends the job at the next checkpoint with one line "rank 1 (pipeline rank 1, host h2):
#      .../gone: the run directory was removed or replaced during the run, ..." instead of
#      making it again and going on without its earlier checkpoints.
# About 15 s. Usage: disks.sh CONFIG
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
start_hosts
layout=(--set pipeline.stages=3)

# ended_with NAME STATUS PATTERN: the job failed, not by timeout, with exactly one error line,
# and it matches PATTERN.
ended_with() {
  local name=$1 status=$2 pattern=$3
  [[ $status -ne 0 && $status -ne 124 ]] ||
    { cat "$WORK/$name.log"; echo "FAILED: $name: exit status $status"; exit 1; }
  [[ $(grep -c "\[error\]" "$WORK/$name.log") -eq 1 ]] ||
    { cat "$WORK/$name.log"; echo "FAILED: $name: not one error line"; exit 1; }
  grep -qE -- "$pattern" "$WORK/$name.log" ||
    { cat "$WORK/$name.log"; echo "FAILED: $name: no line matching $pattern"; exit 1; }
}

# --- 1. a full disk on h2 --------------------------------------------------------------------
steps=(--set train.steps=8 --set checkpoint.every=2 --set checkpoint.keep=3)
train_here 1 reference "$config" "${steps[@]}"
mount -t tmpfs -o size=100k tmpfs "$WORK/h2"
status=0
on_hosts h1:1 h2:1 h3:1 -- train "$config" --run-dir "$LOCAL/full" "${layout[@]}" "${steps[@]}" \
  > "$WORK/full.log" 2>&1 || status=$?
ended_with full "$status" "\[error\] rank 1 \(pipeline rank 1, host h2\): $LOCAL/full/checkpoints/step_[0-9]+/stage_1\.safetensors: write failed: No space left on device$"
leftovers=$(find "$WORK"/h[123]/full -name '*.tmp-*')
[[ -z $leftovers ]] || { echo "FAILED: full: temporary files left: $leftovers"; exit 1; }
committed=$(find "$WORK/h1/full/checkpoints" -name meta.json | sort | tail -n 1)
[[ -n $committed ]] || { echo "FAILED: full: no checkpoint was committed before the disk filled"; exit 1; }
last=$(basename "$(dirname "$committed")")
for host in h1 h2 h3; do
  newer=$(find "$WORK/$host/full/checkpoints" -mindepth 1 -maxdepth 1 -name 'step_*' | sort |
    awk -v last="$last" '{ n = split($0, p, "/") } p[n] > last')
  [[ -z $newer ]] || { echo "FAILED: full: $host keeps a step past the commit ($last): $newer"; exit 1; }
done
# Room again: h2's files move to an ordinary folder, and the run resumes where it stopped.
cp -a "$WORK/h2" "$WORK/h2.saved"
umount "$WORK/h2"
cp -a "$WORK/h2.saved/." "$WORK/h2/"
# Every rank verifies every shard of the step before it reads its own (docs/multinode.md): the
# committed step's folder is copied together on every host, as from node-local disks.
for from in h1 h2 h3; do
  for to in h1 h2 h3; do
    [[ $from == "$to" ]] || cp -an "$WORK/$from/full/checkpoints/$last/." "$WORK/$to/full/checkpoints/$last/"
  done
done
train_on full h1:1 h2:1 h3:1 -- "$config" "${layout[@]}" "${steps[@]}" --resume
grep -q "resumed from step $((10#${last#step_}))" "$WORK/full.log" ||
  { echo "FAILED: full: the resume did not start from $last"; exit 1; }
same reference full
echo "ok 1: h2's full disk ended the job at one line naming h2; resumed from $last, bit-identical"

# --- 2. h2's run directory removed mid-run ------------------------------------------------------
on_hosts h1:1 h2:1 h3:1 -- train "$config" --run-dir "$LOCAL/gone" "${layout[@]}" \
  --set train.steps=100000000 --set checkpoint.every=200 --set checkpoint.keep=2 \
  > "$WORK/gone.log" 2>&1 &
launcher=$!
# Removed just after h2's first shard is in place (renamed there at the end of its write), so
# that no write is under way: the next is 200 steps later.
for _ in $(seq 1200); do
  [[ -e $WORK/h2/gone/checkpoints/step_00000200/stage_1.safetensors ]] && break
  sleep 0.05
done
rm -rf "$WORK/h2/gone"
status=0
wait "$launcher" || status=$?
ended_with gone "$status" "\[error\] rank 1 \(pipeline rank 1, host h2\): $LOCAL/gone: the run directory was removed or replaced during the run, and the checkpoints it held on this disk with it$"
echo "ok 2: h2's run directory removed mid-run ended the job at the next checkpoint, naming h2"
passed=1
