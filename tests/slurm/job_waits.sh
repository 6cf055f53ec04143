# Sourced by the Slurm tests (tests/slurm/local_slurm.sh, tests/multihost/slurm_nodes.sh): waiting for a job's state, a log line or a checkpoint; fail() comes from the sourcing script.
# shellcheck shell=bash
#
# Each wait ends the test with fail() after timeout_s seconds (MPIPE_SLURM_TIMEOUT, 180 by
# default). Slurm's commands are looked up as usual, so a test whose controller is elsewhere
# may define scontrol as a function that reaches it.
timeout_s=${MPIPE_SLURM_TIMEOUT:-180}

job_field() {  # job id, field name -> its value in `scontrol show job`
  scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}
job_state() { job_field "$1" JobState; }

wait_until_done() {  # job id -> prints the final state
  local deadline=$((SECONDS + timeout_s)) state
  while :; do
    state=$(job_state "$1")
    case $state in
      PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | REQUEUED | "") ;;
      *) echo "$state"; return 0 ;;
    esac
    ((SECONDS < deadline)) || { echo "TIMEOUT($state)"; return 0; }
    sleep 0.2
  done
}

wait_for_line() {  # file, fixed string[, nth]: wait until the file has it (at least nth times)
  local deadline=$((SECONDS + timeout_s)) n
  while :; do
    n=$(grep -cF -- "$2" "$1" 2>/dev/null || true)  # nothing when the file is not there yet
    ((${n:-0} >= ${3:-1})) && return 0
    ((SECONDS < deadline)) || fail "timed out waiting for '$2' in $1"
    sleep 0.2
  done
}

training_after() {  # file, marker: wait for a progress line (the daemon names its experiment first) after the last line holding marker
  local deadline=$((SECONDS + timeout_s))
  until awk -v m="$2" 'index($0, m) { seen = 1; next } seen && /^([^ :]+: )?step [0-9]+\// { ok = 1 }
                       END { exit !ok }' "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "timed out waiting for training after '$2' in $1"
    sleep 0.2
  done
}

newest_checkpoint_step() {  # run dir -> step number of the newest checkpoint
  local newest
  newest=$(find "$1/checkpoints" -maxdepth 1 -name 'step_*' -printf '%f\n' | sort | tail -n 1)
  [[ -n "$newest" ]] || return 1
  echo $((10#${newest#step_}))
}
