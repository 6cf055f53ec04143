#!/usr/bin/env bash
# An experiment that passes pipeline.memory_limit mid-run ends the daemon's job (exit 4, one error
# line, no timeout) after its failing rank left a failure note; `mpipe status` then shows it
# failed with that line. The daemon started again records it as failed (not resumed: it would
# fail the same way), removes it from the active slot, and runs the rest of the queue to done.
# Usage: serve_memory_limit.sh MEMORY_LIMIT_CONFIG OTHER_CONFIG
# (tests/e2e/files/memory_limit.yaml: its weight export passes the limit; mlp.yaml)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
big=$1
other=$2
line=$(grep -n "memory_limit:" "$big" | cut -d: -f1)
message="rank 1 (pipeline rank 1): memory limit exceeded in the weight export: asked 1.0 MiB \
with 4.2 MiB in use; pipeline.memory_limit is 4.75 MiB ($SPOOL/runs/big/experiment.yaml:$line)"

submit "$big" --name big
submit "$other" --name after --set train.steps=5

status=0
timeout 120 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" serve --spool "$SPOOL" \
  --idle-exit 1s > "$WORK/first.log" 2>&1 || status=$?
grep -vE "^[A-Za-z0-9._-]+: step " "$WORK/first.log"
[[ $status -eq 4 ]] || { echo "FAILED: first daemon exited with $status (expected 4)"; exit 1; }
[[ $(grep -c "\[error\]" "$WORK/first.log") -eq 1 ]] || { echo "FAILED: not one error line"; exit 1; }
grep -qF "[error] $message" "$WORK/first.log" ||
  { echo "FAILED: message, expected: $message"; exit 1; }
! grep -q "after: starting" "$WORK/first.log" || { echo "FAILED: after ran"; exit 1; }
# Rank 1 failed: its note is next to the experiment, and `mpipe status` reads it (status.json,
# written by rank 0 alone, still says running).
[[ $(/usr/bin/python3 -c 'import json,sys; n=json.load(open(sys.argv[1])); print(n["failure"], n["rank"])' \
  "$SPOOL/runs/big/failure.json") == "memory_limit 1" ]] ||
  { cat "$SPOOL/runs/big/failure.json"; echo "FAILED: failure note"; exit 1; }
"$MPIPE" status "$SPOOL" > "$WORK/status.txt"
cat "$WORK/status.txt"
grep -qF "$message" "$WORK/status.txt" || { echo "FAILED: status does not show the error"; exit 1; }
grep -qE "^big +failed " "$WORK/status.txt" || { echo "FAILED: status does not say failed"; exit 1; }

# The second daemon records it, goes on with the queue and ends once idle.
start_daemon "$WORK/second.log" --idle-exit 1s
wait_daemon "$WORK/second.log"
grep -vE "^[A-Za-z0-9._-]+: step " "$WORK/second.log"
grep -qF "[error] big: failed: $message" "$WORK/second.log" ||
  { echo "FAILED: second daemon's line about big"; exit 1; }
! grep -q "big: starting" "$WORK/second.log" || { echo "FAILED: big ran again"; exit 1; }
[[ $(field big state) == failed && $(field big error) == "$message" ]] ||
  { "$MPIPE" status "$SPOOL"; echo "FAILED: big is not failed with the message"; exit 1; }
[[ $(field after state) == "done" && $(field after step) == 5 ]] ||
  { "$MPIPE" status "$SPOOL"; echo "FAILED: after did not run to done"; exit 1; }
[[ -z $(ls "$SPOOL/active") && ! -e $SPOOL/runs/big/failure.json ]] ||
  { ls "$SPOOL/active" "$SPOOL/runs/big"; echo "FAILED: active slot or note left"; exit 1; }
"$MPIPE" status "$SPOOL" | grep -qE "^big +failed " || { echo "FAILED: status after"; exit 1; }
echo "serve_memory_limit: OK"
