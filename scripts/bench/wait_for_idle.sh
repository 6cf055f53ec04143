#!/usr/bin/env bash
# Waits until the machine's CPUs are idle (other jobs would skew a benchmark), at most a while.
#
#   scripts/bench/wait_for_idle.sh [MAX_WAIT_S=120] [MIN_IDLE_PERCENT=90]
#
# Samples /proc/stat over 2 s until the idle share reaches MIN_IDLE_PERCENT; after MAX_WAIT_S
# it gives up and warns on stderr. Prints nothing when the machine was idle; exit status 0.
set -euo pipefail
max_wait=${1:-120}
min_idle=${2:-90}

idle_percent() {  # over a 2 s sample
  local a b
  read -ra a < <(grep '^cpu ' /proc/stat)
  sleep 2
  read -ra b < <(grep '^cpu ' /proc/stat)
  local total=0 i
  for ((i = 1; i < ${#a[@]}; ++i)); do total=$((total + b[i] - a[i])); done
  local idle=$((b[4] + b[5] - a[4] - a[5]))  # idle + iowait
  echo $((total > 0 ? 100 * idle / total : 100))
}

start=$SECONDS
while :; do
  idle=$(idle_percent)
  if ((idle >= min_idle)); then
    if ((SECONDS - start > 2)); then echo "wait_for_idle: waited $((SECONDS - start))s" >&2; fi
    exit 0
  fi
  if ((SECONDS - start >= max_wait)); then
    echo "wait_for_idle: CPUs still only ${idle}% idle after ${max_wait}s; measuring anyway" >&2
    exit 0
  fi
done
