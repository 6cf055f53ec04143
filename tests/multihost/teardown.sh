#!/usr/bin/env bash
# The harness leaves nothing behind when a test fails: a run across the hosts abandoned by a
# failed check, and one whose test is stopped by SIGTERM (ctest's Ctrl-C, the budget), leave no
# namespace, link or bridge of theirs and no process (mpirun, daemons, ranks). About 10 s.
# Usage: teardown.sh CONFIG
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"  # (for its skips; this test starts no hosts of its own)
config=$(realpath "$1")
here=$(dirname "$0")

# run_left_nothing NAME OUTPUT: no namespace, link or process of the abandoned run that printed
# OUTPUT ("work PATH", "prefix NAME").
run_left_nothing() {
  local name=$1 output=$2 work prefix
  work=$(sed -n 's/^work //p' "$output")
  prefix=$(sed -n 's/^prefix //p' "$output")
  [[ -n $work && -n $prefix ]] || { cat "$output"; echo "FAILED: $name: the run never started"; exit 1; }
  ! ip netns list | grep -q "^$prefix" || { ip netns list; echo "FAILED: $name: namespaces left"; exit 1; }
  ! ip -o link show | grep -q ": $prefix" || { ip -o link show; echo "FAILED: $name: links left"; exit 1; }
  ! pgrep -f -- "$work" > /dev/null ||
    { pgrep -af -- "$work"; echo "FAILED: $name: processes left"; exit 1; }
  rm -rf "$work"  # (kept by the failed run for its post-mortem)
}

status=0
"$here/abandoned_run.sh" "$config" fail > "$WORK/fail.out" 2>&1 || status=$?
((status == 1)) || { cat "$WORK/fail.out"; echo "FAILED: fail: exit status $status"; exit 1; }
run_left_nothing fail "$WORK/fail.out"

"$here/abandoned_run.sh" "$config" wait > "$WORK/term.out" 2>&1 &
child=$!
for _ in $(seq 1200); do
  grep -q '^prefix ' "$WORK/term.out" && break
  sleep 0.05
done
kill -TERM "$child"
status=0
wait "$child" || status=$?
((status == 1)) || { cat "$WORK/term.out"; echo "FAILED: term: exit status $status"; exit 1; }
run_left_nothing term "$WORK/term.out"

passed=1
echo "multihost teardown: a failed check and a SIGTERM each leave no namespace, link or process"
