#!/usr/bin/env bash
# `mpipe cancel` on a serving daemon: a queued experiment leaves the queue at once and never runs;
# the running one stops at a step boundary with a checkpoint and is recorded as cancelled; the
# daemon goes on serving. Cancelling a name the spool does not know, or one that has ended, is
# refused with one line. An experiment interrupted by SIGUSR1 (to mpirun) and cancelled while
# no daemon runs is recorded as cancelled by the next daemon, not resumed.
# Usage: serve_cancel.sh CONFIG
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
config=$1

# expect_refused MESSAGE ARGS...: `mpipe cancel ARGS` exits 2 with MESSAGE as its one line.
expect_refused() {
  local message=$1 status=0
  shift
  timeout 30 "$MPIPE" cancel "$@" > "$WORK/refused.out" 2>&1 || status=$?
  [[ $status -eq 2 && $(wc -l < "$WORK/refused.out") -eq 1 ]] &&
    grep -qF -- "[error] $message" "$WORK/refused.out" ||
    { cat "$WORK/refused.out"; echo "FAILED: cancel $* ($status)"; exit 1; }
}

submit "$config" --name endless --set train.steps=100000000 --set log.every=1
submit "$config" --name waiting --set train.steps=5
start_daemon "$WORK/serve.log"
wait_lines "$SPOOL/runs/endless/metrics.jsonl" 3
for _ in $(seq 1200); do [[ $(field endless step) -gt 0 ]] && break; sleep 0.05; done
"$MPIPE" status "$SPOOL" > "$WORK/running.out"
grep -qE "^endless +running +2x1 +[1-9][0-9]*/100000000 +[0-9]+\.[0-9]{4} +[0-9]+ +([0-9]+[hms])+$" "$WORK/running.out" ||
  { cat "$WORK/running.out"; echo "FAILED: progress of a running experiment"; exit 1; }

"$MPIPE" cancel "$SPOOL" waiting > "$WORK/cancel_waiting.out"
grep -qx "cancelled waiting (it was queued)" "$WORK/cancel_waiting.out" || { echo "FAILED: cancel output"; exit 1; }
[[ -z $(ls "$SPOOL/queue") ]] || { ls "$SPOOL/queue"; echo "FAILED: still queued"; exit 1; }
"$MPIPE" status "$SPOOL" | grep -qE "^waiting +cancelled " || { echo "FAILED: status of waiting"; exit 1; }

"$MPIPE" cancel "$SPOOL" endless > "$WORK/cancel_endless.out"
grep -q "cancelling endless: it stops with a checkpoint at its next step" "$WORK/cancel_endless.out" ||
  { echo "FAILED: cancel output"; exit 1; }
wait_state endless cancelled "$WORK/serve.log"
step=$(field endless step)
[[ -f $SPOOL/runs/endless/checkpoints/step_$(printf %08d "$step")/meta.json ]] ||
  { echo "FAILED: no checkpoint at step $step"; exit 1; }
[[ ! -e $SPOOL/runs/waiting && ! -e $SPOOL/runs/endless/weights.safetensors ]] ||
  { echo "FAILED: a cancelled experiment ran on"; exit 1; }
[[ $(field waiting state) == cancelled ]] || { echo "FAILED: waiting in status.json"; exit 1; }

expect_refused "$SPOOL: no experiment named 'nobody'" "$SPOOL" nobody
expect_refused "$SPOOL: 'endless' is neither queued nor running (it has ended)" "$SPOOL" endless
expect_refused "$WORK/none: not a spool (no queue/ folder)" "$WORK/none" endless

submit "$config" --name after --set train.steps=5
wait_state after "done" "$WORK/serve.log"

# An experiment interrupted by a signal and cancelled while no daemon runs is not resumed.
submit "$config" --name later --set train.steps=100000000 --set log.every=1
wait_lines "$SPOOL/runs/later/metrics.jsonl" 3
signal_mpirun USR1  # what docs/signals.md recommends under mpirun
wait_daemon "$WORK/serve.log"
grep -q "stopped by a signal" "$WORK/serve.log" || { echo "FAILED: no stop line"; exit 1; }
[[ $(field later state) == interrupted ]] || { echo "FAILED: later not interrupted"; exit 1; }
interrupted=$(field later step)
"$MPIPE" cancel "$SPOOL" later > /dev/null || { echo "FAILED: cancel later"; exit 1; }
start_daemon "$WORK/restart.log" --idle-exit 1s
wait_daemon "$WORK/restart.log"
grep -q "later: cancelled" "$WORK/restart.log" && ! grep -q "later: starting" "$WORK/restart.log" ||
  { cat "$WORK/restart.log"; echo "FAILED: later resumed"; exit 1; }
[[ $(field later state) == cancelled && $(field later step) == "$interrupted" ]] ||
  { "$MPIPE" status "$SPOOL"; echo "FAILED: later in status.json"; exit 1; }
[[ -z $(ls "$SPOOL/active") ]] || { echo "FAILED: later still active"; exit 1; }
echo "serve_cancel: queued one dropped, running one stopped at step $step with a checkpoint," \
  "daemon still serving; an interrupted one cancelled without a daemon is not resumed"
