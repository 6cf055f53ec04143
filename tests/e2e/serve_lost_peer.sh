#!/usr/bin/env bash
# A daemon's experiment that loses a peer (rank 1 SIGSTOPped) ends the job from rank 0 (exit 3,
# one line), which first records it in status.json: interrupted, with that line. The next daemon
# resumes it from its checkpoint; as it runs with --resume-lost-peer (as under mpipe supervise),
# an experiment that loses a peer again stays interrupted. The daemon after that, without it,
# resumes a lost peer's experiment once only: it records it as failed, removes it from the active
# slot and runs the rest of the queue.
# Usage: serve_lost_peer.sh CONFIG (2 stages)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
config=$1
stopped=
trap '[[ -z "$stopped" ]] || kill -KILL "$stopped" 2>/dev/null; [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"' EXIT
pattern='^\[[^]]*\] \[rank 0/2\] \[error\] watchdog: step [0-9]+: ([a-z ]+: )?waited [0-9.]+ s for .*rank 1 \(pipeline rank 1, host [^)]+\),? (which )?does not answer; ending the job$'

# A checkpoint's or evaluation's waits have comm.startup_timeout: rank 1 may stop in one.
submit "$config" --name lost --set train.steps=100000000 --set checkpoint.every=5 \
  --set log.every=1 --set comm.timeout=3s --set comm.startup_timeout=6s
submit "$config" --name after --set train.steps=5

# lose_rank_1 LOG STEPS [DAEMON OPTIONS]: starts a daemon, waits for runs/lost/metrics.jsonl to hold STEPS lines,
# SIGSTOPs rank 1 and checks the daemon ends with the watchdog's exit status and one line, which
# it leaves in $line.
lose_rank_1() {
  local log=$1 pid status=0
  start_daemon "$log" "${@:3}"
  wait_lines "$SPOOL/runs/lost/metrics.jsonl" "$2"
  for pid in $(daemon_ranks); do
    tr '\0' '\n' < "/proc/$pid/environ" | grep -qx "OMPI_COMM_WORLD_RANK=1" && stopped=$pid
  done
  [[ -n $stopped ]] || { echo "FAILED: no rank 1"; exit 1; }
  kill -STOP "$stopped"
  wait "$DAEMON" || status=$?
  kill -KILL "$stopped" 2> /dev/null || true
  stopped=
  grep -vE "^[A-Za-z0-9._-]+: step " "$log"
  [[ $status -eq 3 ]] || { echo "FAILED: $log: exit status $status (expected 3)"; exit 1; }
  [[ $(grep -c "\[error\]" "$log") -eq 1 ]] || { echo "FAILED: $log: not one error line"; exit 1; }
  line=$(grep "\[error\]" "$log")
  [[ $line =~ $pattern ]] || { echo "FAILED: $log: message does not match"; exit 1; }
  line=${line#*\[error\] }
}

# Rank 0 lost its peer: status.json says so before the job ended, and its note is there.
lose_rank_1 "$WORK/first.log" 8
[[ $(field lost state) == interrupted && $(field lost error) == "$line" ]] ||
  { "$MPIPE" status "$SPOOL"; echo "FAILED: lost is not interrupted with the line"; exit 1; }
"$MPIPE" status "$SPOOL" | grep -qE "^lost +interrupted .*watchdog: step" ||
  { "$MPIPE" status "$SPOOL"; echo "FAILED: status does not show why"; exit 1; }
grep -q '"failure": "lost_peer"' "$SPOOL/runs/lost/failure.json" || { echo "FAILED: note"; exit 1; }
first=$(wc -l < "$SPOOL/runs/lost/metrics.jsonl")

# The second daemon (--resume-lost-peer) resumes it from its checkpoint, and it loses its peer
# again: still interrupted, where a daemon without the option records it as failed at once.
lose_rank_1 "$WORK/second.log" $((first + 8)) --resume-lost-peer
grep -q "\[warning\] lost: the last job ended when it lost a peer (watchdog: step .*(under mpipe supervise)$" "$WORK/second.log" ||
  { echo "FAILED: second daemon's line about the resume"; exit 1; }
grep -qE "resumed from step [1-9][0-9]*" "$WORK/second.log" || { echo "FAILED: not resumed"; exit 1; }
[[ $(field lost state) == interrupted && $(field lost error) == "$line" &&
  $(field lost lost_peer_resumes) == 1 ]] ||
  { "$MPIPE" status "$SPOOL"; echo "FAILED: lost is not interrupted after its resume"; exit 1; }

# The third one, without the option, fails it (resumed once already), runs the rest of the queue
# and ends once idle.
start_daemon "$WORK/third.log" --idle-exit 1s
wait_daemon "$WORK/third.log"
grep -vE "^[A-Za-z0-9._-]+: step " "$WORK/third.log"
grep -qF "[error] lost: failed: $line" "$WORK/third.log" || { echo "FAILED: third daemon's line"; exit 1; }
! grep -q "lost: starting" "$WORK/third.log" || { echo "FAILED: lost ran a third time"; exit 1; }
[[ $(field lost state) == failed && $(field after state) == "done" ]] ||
  { "$MPIPE" status "$SPOOL"; echo "FAILED: states at the end"; exit 1; }
[[ -z $(ls "$SPOOL/active") && ! -e $SPOOL/runs/lost/failure.json ]] ||
  { echo "FAILED: active slot or note left"; exit 1; }
echo "serve_lost_peer: OK"
