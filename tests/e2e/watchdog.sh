#!/usr/bin/env bash
# The watchdog: SIGSTOP one rank of a run and the job ends within comm.timeout plus a few seconds,
# non-zero, with one line in all naming the stopped rank and the step: on 2 ranks, also when
# mpirun's teardown resumes the stopped rank long before it kills it, and when the rank stops in
# a checkpoint; on 4 ranks, where three waits expire. SIGUSR1 while a wait hangs ends the job after comm.stop_grace with a line saying it
# cannot checkpoint; in the warm-up steps (no grace) it is said once that the stop waits. A rank
# stopped at start-up ends the job after comm.startup_timeout.
# Usage: watchdog.sh CONFIG (up to 4 stages).
source "$(dirname "$0")/lib.sh"
config=$1
stopped='' stopped_start=''

# No bound here is a benchmark: each says "does not hang", and follows from the settings: the
# deadline that ends the job, the roll call (at most 5 s), mpirun's teardown after MPI_Abort (2 x
# odls_base_sigkill_timeout, T) and $slack for a loaded machine. A hang would last
# comm.startup_timeout's default (600 s) or comm.timeout's (300 s), or end by `timeout` (120 s).
# comm.startup_timeout also bounds MPI_Init, which waits for every rank to start (4 s with 4 ranks
# at a load of 15): where the job must start, it is 10 s.
slack=30
# bound DEADLINE [T]: the seconds the job may take from the SIGSTOP to the end of mpirun.
bound() {
  awk -v d="$1" -v t="${2:-${OMPI_MCA_odls_base_sigkill_timeout:-1}}" -v s="$slack" \
    'BEGIN { print d + 5 + 2 * t + s }'
}

# The pid of world rank RANK of the run started with --run-dir DIR.
rank_pid() {
  local rank=$1 dir=$2 pid
  for pid in $(pgrep -f -- "--run-dir $dir( |$)"); do
    tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" &&
      echo "$pid"
  done
  return 0  # (the last rank tested need not be RANK)
}
# stat_fields PID: /proc/PID/stat from the state on (field 3 first, the start time 20th); fails
# when there is no such process.
stat_fields() { sed -E 's/^.*\) //' "/proc/$1/stat" 2>/dev/null; }
# The start time of process PID (clock ticks after boot: /proc/PID/stat's field 22), which tells
# it from a later process given the same pid (pids wrap at 32768 here, and the suite starts many).
start_time() {
  local fields
  read -ra fields <<< "$(stat_fields "$1")"
  echo "${fields[19]:-}"
}
# lives PID [START]: process PID, started at START if given, is there and not a zombie.
lives() {
  local fields
  fields=$(stat_fields "$1") || return 1
  read -ra fields <<< "$fields"
  [[ (-z ${2:-} || ${fields[19]} == "$2") && ${fields[0]} != Z ]]
}
# A stopped rank left behind by a failed check must not outlive the test.
trap '[[ -z "$stopped" ]] || ! lives "$stopped" "$stopped_start" || kill -KILL "$stopped"; [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"' EXIT

# hang NAME SIGNAL [--set ...]: starts an endless run on $ranks ranks, waits until $after steps
# are logged (5: past the warm-up), SIGSTOPs rank $victim, sends SIGNAL to mpirun unless it is
# "none", and sets $status, $took (seconds from the SIGSTOP to the end of mpirun) and $last (the
# last step in metrics.jsonl). The rank's pid is found first, so that the SIGSTOP follows the
# step's line in metrics.jsonl at once (finding it takes a while on a loaded machine).
ranks=2 victim=1 after=5
hang() {
  local name=$1 signal=$2 launcher start
  shift 2
  endless "$ranks" "$name" "$config" "$@"
  for _ in $(seq 1200); do
    stopped=$(rank_pid "$victim" "$WORK/$name")
    [[ -z "$stopped" ]] || break
    sleep 0.05
  done
  [[ -n "$stopped" ]] || { cat "$WORK/$name.log"; echo "FAILED: $name: no rank $victim"; exit 1; }
  stopped_start=$(start_time "$stopped")
  wait_for_steps "$name" "$after" 100
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
  # An orphan would live on forever; one that mpirun killed may take a loaded machine seconds to
  # go, so the bound is generous (the test's failure at 5 s, at load 14, was such a slow end).
  for _ in $(seq 600); do
    lives "$stopped" "$stopped_start" || break
    sleep 0.05
  done
  if lives "$stopped" "$stopped_start"; then
    ps -o pid,ppid,pgid,stat,etime,wchan:24,args -p "$stopped"
    echo "FAILED: $name: the stopped rank outlived the job by 30 s"
    exit 1
  fi
  stopped='' stopped_start=''
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
expect stop '\[rank 0/2\] \[error\] watchdog: step [0-9]+: waited 3\.[0-9] s for .*rank 1 \(pipeline rank 1, host [^)]+\),? (which )?does not answer; ending the job$' "$(bound 3)"
[[ $status -eq 3 ]] || { echo "FAILED: stop: exit status $status, not 3 (the watchdog's)"; exit 1; }
stop_took=$took

# A stop request while a wait hangs: no checkpoint is possible, the job ends after the grace.
hang preempted USR1 --set comm.timeout=10s --set comm.stop_grace=1s
expect preempted '\[rank 0/2\] \[error\] watchdog: step [0-9]+: stop requested, but still waiting after [0-9.]+ s for .*rank 1 \(pipeline rank 1, host [^)]+\),? (which )?does not answer; cannot checkpoint; ending the job$' "$(bound 1.5)"
preempted_took=$took

# mpirun's teardown resumes the stopped rank (SIGCONT) 10 s before it kills it: that rank's own
# wait expires meanwhile, but its peers gave up on it, so it leaves the job's one line to them.
OMPI_MCA_odls_base_sigkill_timeout=10 hang resumed none --set comm.timeout=3s
expect resumed '\[rank 0/2\] \[error\] watchdog: step [0-9]+: waited 3\.[0-9] s for .*rank 1 \(pipeline rank 1, host [^)]+\),? (which )?does not answer; ending the job$' "$(bound 3 10)"

# A peer lost in a checkpoint: a checkpoint's waits, once one checkpoint was measured, get the
# larger of comm.timeout and 20 times the slowest checkpoint so far (before: comm.startup_timeout,
# 10 min by default). Rank 1 stops itself in the checkpoint after step 6, its shard half written
# (the test hook MPIPE_TEST_STOP_AT, core/test_stop.h), after two measured ones; the bound allows
# checkpoints of up to 1.5 s each on a loaded machine (20 x 1.5 s = 30 s).
MPIPE_TEST_STOP_AT=1:checkpoint:6 endless 2 checkpoint "$config" --set comm.timeout=3s \
  --set checkpoint.every=2
wait_for_steps checkpoint 6 100
start=$(date +%s.%N)
stopped=$(rank_pid 1 "$WORK/checkpoint")
status=0
wait "$launcher" || status=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
last=$(tail -n 1 "$WORK/checkpoint/metrics.jsonl" | grep -o '"step":[0-9]*' | cut -d: -f2)
cat "$WORK/checkpoint.log"
[[ -z "$stopped" ]] || kill -KILL "$stopped" 2>/dev/null || true
stopped=
expect checkpoint '\[rank 0/2\] \[error\] watchdog: step 6: checkpoint: waited [0-9.]+ s for .*rank 1 \(pipeline rank 1, host [^)]+\),? (which )?does not answer; ending the job$' "$(bound 30)"
[[ $status -eq 3 ]] || { echo "FAILED: checkpoint: exit status $status, not 3"; exit 1; }
checkpoint_took=$took

# 4 stages, stage 1 stopped: ranks 0 and 2 wait for it, rank 3 for rank 2; one line in all.
ranks=4
hang four none --set comm.timeout=3s --set pipeline.stages=4
expect four '\[rank [0-3]/4\] \[error\] watchdog: step [0-9]+: waited 3\.[0-9] s for .*rank 1 \(pipeline rank 1, host [^)]+\),? (which )?does not answer; ending the job$' "$(bound 3)"

# A stop request in the warm-up steps while stage 3 is stopped: ranks 0-2 hang in waits without a
# grace; one warning that the stop waits, then comm.startup_timeout ends the job with one line.
# The SIGSTOP follows step 1's line; on a machine so slow that stage 3 is past step 3 by then
# (the line names a later step: the stop grace of a warmed-up step ended it), the case is tried
# again, at most 3 times in all.
victim=3 after=1
for try in 1 2 3; do
  hang "warmup$try" USR1 --set comm.startup_timeout=10s --set pipeline.stages=4 \
    --set data.num_examples=8192 --set train.batch_size=8192 --set data.features=512
  step=$(sed -nE 's/.*\[error\] watchdog: step ([0-9]+):.*/\1/p' "$WORK/warmup$try.log" | head -n 1)
  [[ -n $step && $step -gt 3 ]] || break
  echo "warmup: try $try: the SIGSTOP landed in step $step, past the warm-up; trying again"
done
expect "warmup$try" '\[rank [0-2]/4\] \[error\] watchdog: step [1-3]: waited 10\.[0-9] s for .*rank 3 \(pipeline rank 3, host [^)]+\),? (which )?does not answer; ending the job$' "$(bound 10)"
[[ $(grep -c "stop requested while waiting" "$WORK/warmup$try.log") -eq 1 ]] ||
  { echo "FAILED: warmup: not one warning that the stop waits"; exit 1; }

# Stopped at start-up: rank 1 is stopped in preflight (once it holds 200 MiB of the large dataset
# it generates there, past MPI_Init); rank 0 waits for it under comm.startup_timeout, which each
# rank reads before the first collective, and ends the job with one line.
timeout 120 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$config" \
  --run-dir "$WORK/startup" --set comm.startup_timeout=10s --set data.num_examples=400000 \
  --set data.features=256 > "$WORK/startup.log" 2>&1 &
launcher=$!
for _ in $(seq 1200); do
  stopped=$(rank_pid 1 "$WORK/startup")
  [[ -n "$stopped" && $(awk '/^VmRSS/ { print $2 }' "/proc/$stopped/status" 2>/dev/null || echo 0) -gt 204800 ]] &&
    break
  stopped=
  sleep 0.05
done
[[ -n "$stopped" ]] || { cat "$WORK/startup.log"; echo "FAILED: startup: rank 1 never grew"; exit 1; }
start=$(date +%s.%N)
kill -STOP "$stopped"
status=0
wait "$launcher" || status=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
cat "$WORK/startup.log"
kill -KILL "$stopped" 2>/dev/null || true
stopped=
[[ $status -eq 3 ]] || { echo "FAILED: startup: exit status $status, not 3"; exit 1; }
# Rank 0 still generates its own copy of the dataset after the SIGSTOP (seconds on a loaded
# machine, allowed $slack s more) before it waits: far below the 600 s default all the same.
awk -v t="$took" -v m="$(bound 10)" -v s="$slack" 'BEGIN { exit !(t <= m + s) }' ||
  { echo "FAILED: startup: the job took $took s after SIGSTOP (comm.startup_timeout 10 s)"; exit 1; }
[[ $(grep -c "\[error\]" "$WORK/startup.log") -eq 1 ]] || { echo "FAILED: startup: not one line"; exit 1; }
grep -qE '\[rank 0/2\] \[error\] watchdog: start-up: waited 10\.[0-9] s for .*rank 1 \(host [^)]+\),? (which )?does not answer; ending the job$' \
  "$WORK/startup.log" || { echo "FAILED: startup: message"; exit 1; }
startup_took=$took

# stopped_early NAME SECONDS PATTERN [mpirun args...]: a 2-rank job whose rank 1 stops itself at
# start-up, under comm.startup_timeout SECONDS, fails (not by timeout) within the bound with
# exactly one error line, which matches PATTERN; the job's own start-up (seconds on a loaded
# machine) counts here, allowed $slack s more. Sets $status and $took (seconds from the launch to
# the end).
stopped_early() {
  local name=$1 seconds=$2 pattern=$3
  shift 3
  start=$(date +%s.%N)
  timeout 120 mpirun -n 2 --oversubscribe --bind-to none "$@" train "$config" \
    --run-dir "$WORK/$name" --set "comm.startup_timeout=${seconds}s" > "$WORK/$name.log" 2>&1 &
  launcher=$!
  for _ in $(seq 1200); do
    stopped=$(rank_pid 1 "$WORK/$name")
    [[ -z "$stopped" ]] || break
    sleep 0.05
  done
  status=0
  wait "$launcher" || status=$?
  took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  cat "$WORK/$name.log"
  [[ -z "$stopped" ]] || kill -KILL "$stopped" 2>/dev/null || true
  stopped=
  [[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: $name: exit status $status"; exit 1; }
  awk -v t="$took" -v m="$(bound "$seconds")" -v s="$slack" 'BEGIN { exit !(t <= m + s) }' ||
    { echo "FAILED: $name: the job took $took s (comm.startup_timeout $seconds s)"; exit 1; }
  [[ $(grep -c "\[error\]" "$WORK/$name.log") -eq 1 ]] || { echo "FAILED: $name: not one line"; exit 1; }
  grep -qE "$pattern" "$WORK/$name.log" || { echo "FAILED: $name: message"; exit 1; }
}

# Rank 1 never reaches MPI_Init (stopped before mpirun's command execs mpipe), and MPI_Init waits
# for every rank: rank 0's start-up deadline, armed before MPI_Init with the comm.startup_timeout
# of the experiment read there, ends the job with one line naming rank 0 and its host.
# shellcheck disable=SC2016  # (the wrapper's script, run by bash -c)
stopped_early unstarted 3 '\[rank 0/2\] \[error\] watchdog: start-up: rank 0 \(host [^)]+\) waited 3\.[0-9] s in MPI_Init for the other ranks of the job, which have not all started \(a rank stopped, or never started by its launcher\); ending the job$' \
  bash -c '[[ $OMPI_COMM_WORLD_RANK != 1 ]] || kill -STOP $$; exec "$@"' wrapper "$MPIPE"
unstarted_took=$took

# Rank 1 stopped past MPI_Init, before the identity exchange (which gives the watchdog the hosts
# and its roll-call communicator): the roll call goes over the world's point-to-point messages and
# names rank 1.
MPIPE_TEST_STOP_AT=1:start-up stopped_early handshake 10 '\[rank 0/2\] \[error\] watchdog: start-up: waited 10\.[0-9] s for an allgather over the world \(2 ranks\); rank 1 does not answer; ending the job$' \
  "$MPIPE"
[[ $status -eq 3 ]] || { echo "FAILED: handshake: exit status $status, not 3"; exit 1; }

echo "watchdog: a stopped rank ends the job ${stop_took} s after SIGSTOP (comm.timeout 3 s);" \
  "SIGUSR1 during the hang ends it ${preempted_took} s after SIGSTOP (stop_grace 1 s, timeout" \
  "10 s); one stopped in a checkpoint ends it ${checkpoint_took} s after step 6's line" \
  "(comm.timeout 3 s); one line on 4 ranks, and when the stopped rank is resumed before it is killed; one" \
  "stopped at start-up ends it ${startup_took} s after SIGSTOP (comm.startup_timeout 10 s), one" \
  "that never reached MPI_Init ${unstarted_took} s after the launch (3 s)"
