#!/usr/bin/env bash
# Run lock: while a job trains in a run directory, a second job there fails at once with one line
# naming the holder; a lock file left by a dead job is taken over with an info line; the lock
# file alone is not a run; a finished run leaves no lock file. Usage: checkpoint_lock.sh CONFIG
source "$(dirname "$0")/checkpoint_lib.sh"
config=$1

# A long run, holding the lock, until SIGUSR1 stops it.
endless 2 run "$config" --export-weights "$WORK/run.safetensors"
wait_for_steps run 3 100
holder=$(tr -d '\n' < "$WORK/run/.lock")
pid=$(sed 's/.*"pid":\([0-9]*\).*/\1/' <<< "$holder")
since=$(sed 's/.*"since":"\([^"]*\)".*/\1/' <<< "$holder")
kill -0 "$pid" || { echo "FAILED: the lock names pid $pid, which is not running"; exit 1; }
fails second 2 "$WORK/run: in use by pid $pid on host $(hostname) since $since (lock $WORK/run/.lock); wait for it or use another --run-dir" \
  "$config" --run-dir "$WORK/run" --resume
pkill -USR1 -P "$launcher" -x mpirun
wait "$launcher" || { cat "$WORK/run.log"; echo "FAILED: the first job failed"; exit 1; }
[[ ! -e "$WORK/run/.lock" ]] || { echo "FAILED: lock file left behind"; exit 1; }

# A job killed without cleaning up leaves its lock file; the flock died with it.
printf '{"pid":999999,"host":"gone","since":"2026-01-01T00:00:00Z"}\n' > "$WORK/run/.lock"
train 2 run "$config" --set train.steps=2 --resume  # it stopped past step 2: nothing else to do
info_line "$WORK/run.log" "$WORK/run: taking over the lock of pid 999999 on host gone since 2026-01-01T00:00:00Z, which is no longer running ($WORK/run/.lock)"
[[ ! -e "$WORK/run/.lock" ]] || { echo "FAILED: lock file left behind"; exit 1; }

# A stale lock file alone is not a run: a fresh run starts there.
mkdir -p "$WORK/fresh"
printf '{"pid":999999,"host":"gone","since":"2026-01-01T00:00:00Z"}\n' > "$WORK/fresh/.lock"
train 2 fresh "$config" --set train.steps=2
[[ -f "$WORK/fresh/summary.json" && ! -e "$WORK/fresh/.lock" ]] || { echo "FAILED: fresh run"; exit 1; }
echo "checkpoint lock: a second job is refused naming the holder; stale locks are taken over"
