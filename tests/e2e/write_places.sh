#!/usr/bin/env bash
# Every place a run writes is checked at preflight, not at its first write: a summary.json that
# is a folder, and (root only: a read-only bind mount) a read-only checkpoints/ folder, each end
# the run before its first step with one line naming the path, exit status 2, and the run
# directory as it was. Usage: write_places.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1

# refused NAME MESSAGE [args...]: --resume-or-start into $WORK/NAME fails at preflight with
# MESSAGE, and writes nothing into it.
refused() {
  local name=$1 message=$2 status=0
  shift 2
  find "$WORK/$name" -printf '%p %s %T@\n' | sort > "$WORK/$name.before"
  timeout 60 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$config" \
    --run-dir "$WORK/$name" --resume-or-start "$@" > "$WORK/$name.out" 2>&1 || status=$?
  cat "$WORK/$name.out"
  [[ $status -eq 2 ]] || { echo "FAILED: $name: exit status $status (expected 2)"; exit 1; }
  [[ $(grep -c "\[error\]" "$WORK/$name.out") -eq 1 ]] || { echo "FAILED: $name: not one line"; exit 1; }
  grep -qF "[error] $message" "$WORK/$name.out" || { echo "FAILED: $name: message"; exit 1; }
  find "$WORK/$name" -printf '%p %s %T@\n' | sort | diff "$WORK/$name.before" - ||
    { echo "FAILED: $name: the run directory changed"; exit 1; }
}

mkdir -p "$WORK/summary_folder/summary.json"
refused summary_folder "$WORK/summary_folder/summary.json: summary file is a directory, not a file"

if [[ $(id -u) -ne 0 ]]; then
  echo "write places: OK (the read-only checkpoints/ skipped: mount needs root)"
  exit 0
fi
train 2 read_only "$config" --set train.steps=2
mount --bind "$WORK/read_only/checkpoints" "$WORK/read_only/checkpoints"
trap 'umount "$WORK/read_only/checkpoints" 2>/dev/null; [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"' EXIT
mount -o remount,bind,ro "$WORK/read_only/checkpoints"
refused read_only "$WORK/read_only/checkpoints: checkpoints folder is not writable" \
  --set train.steps=6
echo "write places: OK (a folder for summary.json and a read-only checkpoints/ refused at preflight)"
