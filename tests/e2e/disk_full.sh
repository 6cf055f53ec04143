#!/usr/bin/env bash
# A full disk during a checkpoint (the run directory on a small tmpfs): every rank exits non-zero
# with one line naming the file, no MPI_ABORT banner, no temporary or partial file is left, and
# the last committed checkpoint stays intact and resumable. Needs root (mount); otherwise skipped
# (exit 77). Usage: disk_full.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
[[ $(id -u) -eq 0 ]] || { echo "disk full: skipped (mount needs root)"; exit 77; }
mkdir "$WORK/disk"
mount -t tmpfs -o size=100k tmpfs "$WORK/disk"
trap 'umount "$WORK/disk" 2>/dev/null; [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"' EXIT

status=0
timeout 120 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$config" \
  --run-dir "$WORK/disk/run" --set train.steps=8 --set checkpoint.every=2 --set checkpoint.keep=3 \
  > "$WORK/full.log" 2>&1 || status=$?
cat "$WORK/full.log"
[[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: exit status $status"; exit 1; }
[[ $(grep -c "\[error\]" "$WORK/full.log") -eq 1 ]] || { echo "FAILED: not one error line"; exit 1; }
grep -qE "\[error\] $WORK/disk/run/checkpoints/step_[0-9]+/[a-z_0-9.]+: .*No space left on device" \
  "$WORK/full.log" || { echo "FAILED: message"; exit 1; }
! grep -q "MPI_ABORT" "$WORK/full.log" || { echo "FAILED: MPI_ABORT banner"; exit 1; }
leftovers=$(find "$WORK/disk/run" -name '*.tmp-*')
[[ -z "$leftovers" ]] || { echo "FAILED: temporary files left: $leftovers"; exit 1; }
committed=("$WORK"/disk/run/checkpoints/step_*/meta.json)
[[ -e "${committed[0]}" ]] || { echo "FAILED: no committed checkpoint survived"; exit 1; }

# The committed checkpoint is whole: with room again, --resume finishes the run, and it ends with
# the weights of a run that never hit the full disk.
cp -r "$WORK/disk/run" "$WORK/run"
train 2 run "$config" --set train.steps=8 --set checkpoint.every=2 --set checkpoint.keep=3 --resume
train 2 straight "$config" --set train.steps=8
same straight run
echo "disk full: one line on every rank, nothing partial, $(basename "$(dirname "${committed[-1]}")") intact"
