#!/usr/bin/env bash
# A stop signal to mpipe supervise before its job's ranks handle one (mpirun held at its start by
# a stand-in until the supervisor has the signal): the supervisor holds it until the job has
# logged a step, then passes it on as SIGUSR1, and the ranks checkpoint at the next step boundary:
# exit status 0, one committed checkpoint, no relaunch. (Passed on at once, the signal ended the
# job there: exit status 138, no checkpoint.)
# Usage: supervise_stop.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1

# On a failure, nothing left running: the supervisor, the stand-in and what it runs (its group).
cleanup() {
  if [[ -n ${launcher:-} ]]; then
    pkill -KILL -P "$launcher" || true
    kill -KILL "$launcher" 2>/dev/null || true
  fi
  [[ ! -s $WORK/launched ]] || kill -KILL -- "-$(cat "$WORK/launched")" 2>/dev/null || true
  [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"
}
trap cleanup EXIT

# The stand-in mpirun: says it started (its process group, which the supervisor made for it),
# waits for the test (at most a minute), then runs mpirun.
cat > "$WORK/mpirun" <<EOF_MPIRUN
#!/usr/bin/env bash
echo \$\$ > "$WORK/launched.next" && mv "$WORK/launched.next" "$WORK/launched"
for _ in \$(seq 1200); do [[ -e "$WORK/go" ]] && break; sleep 0.05; done
exec mpirun "\$@"
EOF_MPIRUN
chmod +x "$WORK/mpirun"

timeout 120 "$MPIPE" supervise --hosts localhost:2 --mpirun "$WORK/mpirun" \
  --mpirun-args "--bind-to none" -- train "$config" --run-dir "$WORK/run" \
  --set pipeline.stages=2 --set train.steps=100000000 --set log.every=1 \
  > "$WORK/supervise.log" 2>&1 &
launcher=$!

# until_seen WHAT COMMAND...: waits, while the supervisor runs, until COMMAND succeeds.
until_seen() {
  local what=$1
  shift
  while ! "$@"; do
    kill -0 "$launcher" 2>/dev/null ||
      { cat "$WORK/supervise.log"; echo "FAILED: the supervisor ended before $what"; exit 1; }
    sleep 0.05
  done
}
until_seen "it launched the job" test -e "$WORK/launched"
kill -USR1 "$(pgrep -P "$launcher")"  # the supervisor, under timeout
until_seen "it held the stop" \
  grep -q "supervise: a stop signal before the job has logged a step" "$WORK/supervise.log"
touch "$WORK/go"
status=0
wait "$launcher" || status=$?
launcher=
rm "$WORK/launched"  # (its group has ended)
cat "$WORK/supervise.log"
[[ $status -eq 0 ]] || { echo "FAILED: exit status $status"; exit 1; }
stop=$(grep -o "stopped at step [0-9]* by a signal; checkpoint saved" "$WORK/supervise.log") ||
  { echo "FAILED: no checkpoint at the stop"; exit 1; }
stop=${stop#stopped at step }
stop=${stop%% *}
[[ -f "$WORK/run/checkpoints/step_$(printf %08d "$stop")/meta.json" ]] ||
  { ls -R "$WORK/run"; echo "FAILED: step $stop not committed"; exit 1; }
! grep -q "supervise: restart" "$WORK/supervise.log" || { echo "FAILED: relaunched"; exit 1; }
echo "supervise_stop: held until the first step, stopped at step $stop with its checkpoint"
