#!/usr/bin/env bash
# A host lost in the middle of a step ends the whole job within a bound, with one line that names
# the host: h3's link set down (the watchdog's line names rank 2 and h3; TCP then gives up on
# h3's daemon, and h3's daemon on mpirun, so nothing is left running on any host), every
# process on h2 killed (the line of the rsh agent, the test's ssh, names h2), and every process
# on h2 stopped, a frozen node (the watchdog's line names h2; the rsh agent, like ssh with
# ServerAliveInterval, gives up on h2, and with it mpirun). Prints how long each took from the
# failure to the end of mpirun. About 40 s. Usage: failures.sh CONFIG
: "${MPIPE_MULTIHOST_BUDGET:=250}"  # hosts.sh's own deadline: three jobs on a loaded machine
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
start_hosts
# Once the watchdog's MPI_Abort has mpirun send to h3's daemon, and h3's daemon forward its rank's
# output to mpirun, both wait for TCP to give up on the other: 6.2 s, not 15 minutes.
lost_hosts_give_up_fast
# Each bound says "does not hang" and follows from the settings: comm.timeout 3 s, the roll call
# (at most 5 s), TCP giving up (6.2 s), the rsh agent giving up (15 s), mpirun's teardown (2 x
# odls_base_sigkill_timeout, 1 s), and $slack s for a loaded machine. A hang lasts until
# `timeout` (120 s), or 15 minutes.
slack=30

# lose NAME HOST ACTION: starts an endless K=3 run on h1-h3, waits until 5 steps are logged (past
# the warm-up), runs ACTION (a shell command line, $ns: HOST's namespace) and sets $status and
# $took (seconds from ACTION to the end of mpirun); output in $WORK/NAME.log.
lose() {
  local name=$1 ns=$PREFIX$2 action=$3 launcher start metrics=$WORK/h1/$1/metrics.jsonl
  on_hosts h1:1 h2:1 h3:1 -- train "$config" --run-dir "$LOCAL/$name" --set pipeline.stages=3 \
    --set train.steps=100000000 --set log.every=1 --set comm.timeout=3s > "$WORK/$name.log" 2>&1 &
  launcher=$!
  for _ in $(seq 1200); do
    [[ -f "$metrics" && $(wc -l < "$metrics") -ge 5 ]] && break
    sleep 0.05
  done
  [[ -f "$metrics" && $(wc -l < "$metrics") -ge 5 ]] ||
    { cat "$WORK/$name.log"; echo "FAILED: $name: never reached step 5"; exit 1; }
  start=$(date +%s.%N)
  ns=$ns eval "$action"
  status=0
  wait "$launcher" || status=$?
  took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  cat "$WORK/$name.log"
}

# expect NAME MAX_SECONDS PATTERN: the job failed (not by timeout) within MAX_SECONDS with
# exactly one line matching PATTERN, and at most one mpipe error line.
expect() {
  local name=$1 max=$2 pattern=$3
  [[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: $name: exit status $status"; exit 1; }
  awk -v t="$took" -v m="$max" 'BEGIN { exit !(t <= m) }' ||
    { echo "FAILED: $name: the job took $took s to end (at most $max s)"; exit 1; }
  [[ $(grep -cE -- "$pattern" "$WORK/$name.log") -eq 1 ]] ||
    { echo "FAILED: $name: not one line matching $pattern"; exit 1; }
  [[ $(grep -c "\[error\]" "$WORK/$name.log") -le 1 ]] || { echo "FAILED: $name: several error lines"; exit 1; }
}

# left_nothing NAME SECONDS [HOST...]: fails unless within SECONDS no process is left on the
# hosts (all by default; hosts.sh's nothing_left).
left_nothing() {
  local name=$1 seconds=$2 hosts=("${HOSTS[@]}")
  shift 2
  (($# == 0)) || hosts=("$@")
  nothing_left "$seconds" "${hosts[@]}" ||
    { echo "FAILED: $name: processes left $seconds s after the job ended"; exit 1; }
}

# shellcheck disable=SC2016  # (ACTION is a command line run by lose, with its $ns)
lose link h3 'ip -n "$ns" link set eth0 down'
expect link $((3 + 5 + 7 + 2 + slack)) '\[rank [01]/3\] \[error\] watchdog: step [0-9]+: waited 3\.[0-9] s for .*rank 2 \(pipeline rank 2, host h3\),? (which )?does not answer; ending the job$'
link_took=$took
left_nothing link $((7 + 2 + slack))
ip -n "$PREFIX"h3 link set eth0 up

# shellcheck disable=SC2016
lose killed h2 'for pid in $(ip netns pids "$ns"); do kill -KILL "$pid"; done'
expect killed $((1 + 2 + slack)) '^rsh_agent: lost host h2: its Open MPI daemon was killed \(signal 9\)$'
killed_took=$took
left_nothing killed $((2 + slack))

# Every process on h2 stopped: the watchdog's line names h2 after comm.timeout, and the rsh agent
# gives up on h2 15 s after the stop (after the watchdog's line, whatever the load), which ends mpirun (without it mpirun waits for h2's daemon
# until h2 resumes). The processes on h1 and h3 end with the job; h2's stay stopped (a frozen
# node's processes end once it thaws and finds mpirun gone; here the teardown kills them).
# shellcheck disable=SC2016
lose stopped h2 'for pid in $(ip netns pids "$ns"); do kill -STOP "$pid"; done'
expect stopped $((3 + 5 + 15 + 2 + slack)) '\[rank [02]/3\] \[error\] watchdog: step [0-9]+: waited 3\.[0-9] s for .*rank 1 \(pipeline rank 1, host h2\),? (which )?does not answer; ending the job$'
grep -q '^rsh_agent: lost host h2: it does not answer (every process there is stopped)$' \
  "$WORK/stopped.log" || { echo "FAILED: stopped: no line from the rsh agent"; exit 1; }
stopped_took=$took
left_nothing stopped $((2 + slack)) h1 h3

passed=1
echo "multihost failures: h3's link down ends the job after ${link_took} s (comm.timeout 3 s," \
  "tcp_retries2 4), every process on h2 killed after ${killed_took} s, every process on h2" \
  "stopped after ${stopped_took} s; one line names the host"
