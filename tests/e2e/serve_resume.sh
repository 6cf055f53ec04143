#!/usr/bin/env bash
# SIGTERM to a daemon's ranks during an experiment: it checkpoints, is recorded as interrupted and
# the daemon exits 0; a daemon started again on the spool resumes that experiment first. Killed
# with SIGKILL, a daemon loses nothing committed either: the next one resumes from the newest
# checkpoint, finishes with weights bit-identical to an uninterrupted `mpipe train` of the same
# file, and --idle-exit then ends it. Usage: serve_resume.sh CONFIG (constant LR)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
config=$1
long=(--set train.steps=1000 --set checkpoint.every=50 --set log.every=10)

submit "$config" --name long "${long[@]}"
submit "$config" --name next --set train.steps=5
start_daemon "$WORK/first.log"
wait_lines "$SPOOL/runs/long/metrics.jsonl" 2
signal_daemon TERM
wait_daemon "$WORK/first.log"
cat "$WORK/first.log" | grep -v "^step "
[[ $(field long state) == interrupted && $(field next state) == queued ]] ||
  { "$MPIPE" status "$SPOOL"; echo "FAILED: states after SIGTERM"; exit 1; }
stopped=$(field long step)
((stopped > 0 && stopped < 1000)) || { echo "FAILED: stopped at step $stopped"; exit 1; }
[[ -f $SPOOL/runs/long/checkpoints/step_$(printf %08d "$stopped")/meta.json ]] ||
  { ls "$SPOOL/runs/long/checkpoints"; echo "FAILED: no checkpoint at step $stopped"; exit 1; }
[[ ! -e $SPOOL/runs/long/weights.safetensors ]] || { echo "FAILED: interrupted run exported"; exit 1; }
grep -q "long: interrupted at step $stopped" "$WORK/first.log" || { echo "FAILED: log line"; exit 1; }

# Restarted, it resumes `long` first; killed without a signal once it has committed another
# checkpoint, it leaves `long` running in status.json and nothing else.
start_daemon "$WORK/second.log"
newest=0
for _ in $(seq 1200); do
  newest=$(ls "$SPOOL/runs/long/checkpoints" | sed -n 's/^step_0*//p' | sort -n | tail -1)
  [[ -f $SPOOL/runs/long/checkpoints/step_$(printf %08d "$newest")/meta.json ]] &&
    ((newest > stopped)) && break
  sleep 0.05
done
((newest > stopped)) || { echo "FAILED: no checkpoint after the restart"; exit 1; }
ranks=$(daemon_ranks)
signal_daemon KILL
wait "$DAEMON" || true
for _ in $(seq 200); do  # mpirun may end before its ranks
  alive=0
  for pid in $ranks; do kill -0 "$pid" 2> /dev/null && alive=1; done
  ((alive)) || break
  sleep 0.05
done
grep -vE "^[A-Za-z0-9._-]+: step " "$WORK/second.log"
grep -q "resumed from step $stopped" "$WORK/second.log" || { echo "FAILED: not resumed"; exit 1; }
! grep -q "next: starting" "$WORK/second.log" || { echo "FAILED: next ran before long"; exit 1; }
[[ $(field long state) == running ]] || { echo "FAILED: long not running after kill -9"; exit 1; }
"$MPIPE" status "$SPOOL" | grep -q "^daemon: gone (pid [0-9]* on host $(hostname) ended without stopping" ||
  { "$MPIPE" status "$SPOOL"; echo "FAILED: status of a killed daemon"; exit 1; }

# The third daemon finds the experiment of a daemon that died, resumes it from its newest
# committed checkpoint, runs the queue, and ends by itself once idle.
start_daemon "$WORK/third.log" --idle-exit 1s
wait_daemon "$WORK/third.log"
grep -vE "^[A-Za-z0-9._-]+: step " "$WORK/third.log"
grep -qE "resumed from step ([0-9]+)" "$WORK/third.log" || { echo "FAILED: not resumed"; exit 1; }
resumed=$(sed -nE 's/.*resumed from step ([0-9]+).*/\1/p' "$WORK/third.log")
((resumed >= newest)) || { echo "FAILED: resumed from $resumed, not the newest checkpoint $newest"; exit 1; }
[[ $(grep -n "long: starting" "$WORK/third.log" | cut -d: -f1) -lt $(grep -n "next: starting" "$WORK/third.log" | cut -d: -f1) ]] ||
  { echo "FAILED: the interrupted experiment did not come first"; exit 1; }
[[ $(field long state) == "done" && $(field long step) == 1000 && $(field next state) == "done" ]] ||
  { "$MPIPE" status "$SPOOL"; echo "FAILED: states after the restart"; exit 1; }
grep -q "idle for 1 s (--idle-exit): stopping" "$WORK/third.log" || { echo "FAILED: idle exit line"; exit 1; }
grep -q '"reason": "idle"' "$SPOOL/status.json" || { echo "FAILED: idle reason"; exit 1; }

train 2 straight "$config" "${long[@]}"
"$MPIPE" compare "$WORK/straight.safetensors" "$SPOOL/runs/long/weights.safetensors" ||
  { echo "FAILED: resumed weights differ from the uninterrupted run"; exit 1; }
echo "serve_resume: SIGTERM at step $stopped, SIGKILL after step $newest, resumed each time first, same weights as train; idle exit"
