#!/usr/bin/env bash
# For teardown.sh: starts the hosts and an endless K=3 run across them, prints "work PATH" and
# "prefix NAME" once 3 steps are logged, then fails a check (exit 1), or with "wait" waits for
# the signal that ends it. Usage: abandoned_run.sh CONFIG fail|wait
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
start_hosts
on_hosts h1:1 h2:1 h3:1 -- train "$config" --run-dir "$LOCAL/endless" --set pipeline.stages=3 \
  --set train.steps=100000000 --set log.every=1 > "$WORK/endless.log" 2>&1 &
metrics=$WORK/h1/endless/metrics.jsonl
for _ in $(seq 1200); do
  [[ -f "$metrics" && $(wc -l < "$metrics") -ge 3 ]] && break
  sleep 0.05
done
echo "work $WORK"
echo "prefix $PREFIX"
[[ $2 == wait ]] || { echo "FAILED: a check failed on purpose"; exit 1; }
wait
