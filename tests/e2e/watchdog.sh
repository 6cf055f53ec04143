#!/usr/bin/env bash
# The watchdog: SIGSTOP one rank of a 2-rank run and the other ends the job within comm.timeout
# plus a few seconds, non-zero, with one line naming the stopped rank and the step; SIGUSR1 while
# a wait hangs ends the job after comm.stop_grace with a line saying it cannot checkpoint.
# Usage: watchdog.sh CONFIG (2 stages).
source "$(dirname "$0")/lib.sh"
config=$1
stopped=

# The pid of world rank RANK of the run started with --run-dir DIR.
rank_pid() {
  local rank=$1 dir=$2 pid
  for pid in $(pgrep -f -- "--run-dir $dir( |$)"); do
    tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" &&
      echo "$pid"
  done
}
# A stopped rank left behind by a failed check must not outlive the test.
trap '[[ -z "$stopped" ]] || kill -KILL "$stopped" 2>/dev/null; [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"' EXIT

# hang NAME SIGNAL [--set ...]: starts an endless run, waits until 5 steps are logged (past the
# warm-up), SIGSTOPs rank 1, sends SIGNAL to mpirun unless it is "none", and sets $status, $took
# (seconds from the SIGSTOP to the end of mpirun) and $last (the last step in metrics.jsonl).
hang() {
  local name=$1 signal=$2 launcher start
  shift 2
  endless 2 "$name" "$config" "$@"
  wait_for_steps "$name" 5 60
  stopped=$(rank_pid 1 "$WORK/$name")
  [[ -n "$stopped" ]] || { cat "$WORK/$name.log"; echo "FAILED: $name: no rank 1"; exit 1; }
  start=$(date +%s.%N)
  kill -STOP "$stopped"
  if [[ $signal != none ]]; then
    sleep 0.5
    pkill "-$signal" -P "$launcher" -x mpirun
  fi
  status=0
  wait "$launcher" || status=$?
  took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  last=$(tail -n 1 "$WORK/$name/metrics.jsonl" | grep -o '"step":[0-9]*' | cut -d: -f2)
  cat "$WORK/$name.log"
  for _ in $(seq 100); do
    kill -0 "$stopped" 2>/dev/null && [[ $(ps -o stat= -p "$stopped") != Z* ]] || break
    sleep 0.05
  done
  ! kill -0 "$stopped" 2>/dev/null || [[ $(ps -o stat= -p "$stopped") == Z* ]] ||
    { echo "FAILED: $name: the stopped rank outlived the job by 5 s"; exit 1; }
  stopped=
}

# expect NAME PATTERN MAX_SECONDS: the job failed (not by timeout) within MAX_SECONDS, with
# exactly one [error] line, which matches PATTERN and names the step that hung.
expect() {
  local name=$1 pattern=$2 max=$3 line step
  [[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: $name: exit status $status"; exit 1; }
  awk -v t="$took" -v m="$max" 'BEGIN { exit !(t <= m) }' ||
    { echo "FAILED: $name: the job took $took s after SIGSTOP (at most $max s)"; exit 1; }
  [[ $(grep -c "\[error\]" "$WORK/$name.log") -eq 1 ]] || { echo "FAILED: $name: not one line"; exit 1; }
  line=$(grep "\[error\]" "$WORK/$name.log")
  [[ $line =~ $pattern ]] || { echo "FAILED: $name: message does not match: $pattern"; exit 1; }
  step=$(sed -E 's/.*watchdog: step ([0-9]+):.*/\1/' <<< "$line")
  [[ $step -eq $last || $step -eq $((last + 1)) ]] ||
    { echo "FAILED: $name: step $step, but the last logged step is $last"; exit 1; }
}

# A lost peer: rank 0 gives up after comm.timeout (3 s), asks who is there (1 s), and aborts.
hang stop none --set comm.timeout=3s
expect stop '\[rank 0/2\] \[error\] watchdog: step [0-9]+: waited 3\.[0-9] s for .*rank 1 \(stage 1, host [^)]+\),? (which )?does not answer; ending the job$' 10
[[ $status -eq 3 ]] || { echo "FAILED: stop: exit status $status, not 3 (the watchdog's)"; exit 1; }
stop_took=$took

# A stop request while a wait hangs: no checkpoint is possible, the job ends after the grace.
hang preempted USR1 --set comm.timeout=10s --set comm.stop_grace=1s
expect preempted '\[rank 0/2\] \[error\] watchdog: step [0-9]+: stop requested, but still waiting after [0-9.]+ s for .*rank 1 \(stage 1, host [^)]+\),? (which )?does not answer; cannot checkpoint; ending the job$' 8
echo "watchdog: a stopped rank ends the job ${stop_took} s after SIGSTOP (comm.timeout 3 s);" \
  "SIGUSR1 during the hang ends it ${took} s after SIGSTOP (stop_grace 1 s, timeout 10 s)"
