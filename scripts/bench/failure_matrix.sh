#!/usr/bin/env bash
# The host-failure matrix of issue 34: `mpipe supervise` on three hosts of tests/multihost/hosts.sh
# (network namespaces on this machine, node-local run directories, checkpoint.peer_copy), with
# h2 lost at each of 10 moments (every process of h2 killed and h2 gone, or h2's link cut), and a
# second host lost during a recovery (three ways: second_host below). Each time the test hook MPIPE_TEST_STOP_AT (core/test_stop.h)
# freezes a rank on h2 at that moment and the script then kills h2 or cuts its link; the job must
# finish by itself on the survivors with final weights bit-identical to an uninterrupted run, at
# most checkpoint.every steps redone, and nothing left: no process in any host's namespace, no
# temporary file or incomplete step folder in the survivors' run directories, no namespace or link
# after the teardown. Prints a table (seconds from the failure to the next completed step, steps
# redone) with the median and the worst, and exits 1 if any case failed (its files kept).
#
#   scripts/bench/failure_matrix.sh      # as root (network namespaces), after building mpipe
#
# Environment: STEPS (default 60), EVERY (checkpoint.every, default 20), PROBE_TIMEOUT (the
# supervisor's --probe-timeout, default 10), CASES (a regular expression of case names, default
# all), MPIPE_BIN (default build/release/apps/mpipe). Bounded: each supervised job by `timeout`
# (300 s), each wait by a deadline, the whole script by hosts.sh's budget (30 minutes).
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${STEPS:-60} every=${EVERY:-20} probe_timeout=${PROBE_TIMEOUT:-10} only=${CASES:-.}
export MPIPE=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x $MPIPE ]] || { echo "failure_matrix.sh: $MPIPE is not an executable (build it)" >&2; exit 2; }
export MPIPE_MULTIHOST_BUDGET=1800  # hosts.sh's own deadline
config=$(realpath tests/e2e/files/mlp.yaml)
# shellcheck source=tests/multihost/hosts.sh
source tests/multihost/hosts.sh

# The failure moments, as steps: mid-run between two checkpoints, at the second checkpoint, and
# the final evaluation.
mid=$((every + every / 2)) at_checkpoint=$((2 * every))
settings=(--set "train.steps=$steps" --set log.every=1 --set "checkpoint.every=$every"
  --set comm.timeout=3s --set checkpoint.peer_copy=true)
one_slot=(--set pipeline.stages=3 --set pipeline.data_parallel=1)  # h1:1,h2:1,h3:1: rank 1 on h2
two_slots=(--set pipeline.stages=3 --set pipeline.data_parallel=2)  # h1:2,h2:2,h3:2: 2, 3 on h2

# Each case: name|hosts|layout (one_slot, two_slots)|MPIPE_TEST_STOP_AT|action (kill, cut)
cases=(
  "start-up/kill|h1:1,h2:1,h3:1|one_slot|1:start-up|kill"
  "forward/kill|h1:1,h2:1,h3:1|one_slot|1:forward:$mid|kill"
  "backward/kill|h1:1,h2:1,h3:1|one_slot|1:backward:$mid|kill"
  "allreduce/kill|h1:2,h2:2,h3:2|two_slots|2:allreduce:$mid|kill"
  "peer_copy/kill|h1:1,h2:1,h3:1|one_slot|1:peer_copy:$at_checkpoint|kill"
  "checkpoint/kill|h1:1,h2:1,h3:1|one_slot|1:checkpoint:$at_checkpoint|kill"
  "evaluation/kill|h1:1,h2:1,h3:1|one_slot|1:evaluation:$steps|kill"
  "forward/cut|h1:1,h2:1,h3:1|one_slot|1:forward:$mid|cut"
  "allreduce/cut|h1:2,h2:2,h3:2|two_slots|2:allreduce:$mid|cut"
  "checkpoint/cut|h1:1,h2:1,h3:1|one_slot|1:checkpoint:$at_checkpoint|cut"
)

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); mpipe $(git describe --always --dirty 2>/dev/null || echo '?')"
echo "$config, $steps steps, checkpoint.every $every, comm.timeout 3s, peer copies on node-local run directories, --probe-timeout $probe_timeout"
echo "load before: $(uptime)"

# The uninterrupted runs the recovered ones must equal, on one host.
train_here 3 ref1 "$config" "${settings[@]}" "${one_slot[@]}"
train_here 6 ref2 "$config" "${settings[@]}" "${two_slots[@]}"

failed=() rows=() to_next=()

# fail CASE WHY: records a failed check of CASE.
fail() {
  echo "FAILED: $1: $2"
  failed+=("$1: $2")
  why=$2
}

# seconds_since START: seconds from START (date +%s.%N) to now, to 0.1 s.
seconds_since() {
  awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}

# watch_next_step METRICS OUT: writes to OUT the time (date +%s.%N) when METRICS first holds a
# step record after a recovery record (the first step the relaunched job completes); stopped by
# the caller.
watch_next_step() {
  while ! awk '/"event":"recovery"/ { r = 1; next } r && /"lr":/ { found = 1; exit } END { exit !found }' \
    "$1" 2>/dev/null; do
    sleep 0.1
  done
  date +%s.%N > "$2"
}

# supervise_on NAME HOSTS STOP RUN_DIR ARGS...: mpipe supervise from h1 over HOSTS with the hook
# set to STOP (marker $WORK/NAME.stopped), in the background ($supervisor); output in
# $WORK/NAME.log.
supervise_on() {
  local name=$1 hosts=$2 stop=$3 run_dir=$4
  shift 4
  local command=("$MPIPE" supervise --hosts "$hosts" --probe-timeout "$probe_timeout"
    --mpirun-args "--bind-to none --mca btl tcp,self ${MCA[*]} -x OMP_NUM_THREADS -x OMP_WAIT_POLICY -x MPIPE_TEST_STOP_AT -x MPIPE_TEST_STOP_MARKER"
    -- train "$config" --run-dir "$run_dir/$name" --export-weights "$run_dir/$name.safetensors"
    "$@")
  timeout 300 "$WORK/host_exec" h1 "env MPIPE_TEST_STOP_AT=$stop MPIPE_TEST_STOP_MARKER=$WORK/$name.stopped $(printf '%q ' "${command[@]}")" \
    > "$WORK/$name.log" 2>&1 &
  supervisor=$!
}

# wait_for_marker NAME: waits (2 minutes at most) until the hook has frozen its rank; false if
# the job ended first or never got there.
wait_for_marker() {
  for _ in $(seq 1200); do
    [[ -e $WORK/$1.stopped ]] && sleep 0.2 && return 0  # (past the marker: the SIGSTOP)
    kill -0 "$supervisor" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# lose HOST ACTION: kill (every process of HOST killed, then its namespace deleted: a probe finds
# no host) or cut (its link set down, and the frozen rank let go: a host cut off, still running).
lose() {
  local ns=$PREFIX$1 pid
  if [[ $2 == kill ]]; then
    for pid in $(ip netns pids "$ns"); do kill -KILL "$pid"; done
    for _ in $(seq 50); do
      ip netns del "$ns" 2>/dev/null && break
      sleep 0.1
    done
  else
    ip -n "$ns" link set eth0 down
    for pid in $(ip netns pids "$ns"); do
      [[ $(ps -o stat= -p "$pid" 2>/dev/null) != T* ]] || kill -CONT "$pid" 2>/dev/null || true
    done
  fi
}

# no_stray_files DIR...: no temporary file and no step folder without meta.json under DIR...
no_stray_files() {
  local stray
  stray=$(find "$@" \( -name '*.tmp*' -o \( -type d -name 'step_*' \! -exec test -e '{}/meta.json' \; \) \) -print 2>/dev/null)
  [[ -z $stray ]] || { echo "$stray"; return 1; }
}

# torn_down: after stop_hosts, no namespace, veth link or bridge of this run is left.
torn_down() {
  stop_hosts
  [[ -z $(ip netns list | grep "^$PREFIX" || true) && -z $(ip -o link | grep "$PREFIX" || true) ]]
}

# recovery_facts RUN_DIR: "<recoveries> <the most steps one redid> <seconds lost>" from
# summary.json's records (two recoveries from one failure redo the same steps; seconds lost: the
# supervisor's, from the last step logged before the failure to the next step past it, summed; "-"
# where a recovery has none: a loss in the final evaluation, a relaunch that failed).
recovery_facts() {
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1])).get("recoveries", [])
print(len(r), max([x["steps_redone"] for x in r] or [0]),
      "%.1f" % sum(x["seconds_lost"] for x in r) if all("seconds_lost" in x for x in r) else "-")' \
    "$1/summary.json" 2>/dev/null || echo "0 - -"
}

for spec in "${cases[@]}"; do
  IFS='|' read -r name hosts layout stop action <<<"$spec"
  [[ $name =~ $only ]] || continue
  dir=${name//\//-} why=
  extra=("${one_slot[@]}") ref=ref1
  [[ $layout == one_slot ]] || extra=("${two_slots[@]}") ref=ref2
  start_hosts
  lost_hosts_give_up_fast
  supervise_on "$dir" "$hosts" "$stop" "$LOCAL" "${settings[@]}" "${extra[@]}"
  if ! wait_for_marker "$dir"; then
    wait "$supervisor" || true
    cat "$WORK/$dir.log"
    fail "$name" "the hook never froze the rank ($stop)"
    torn_down || true
    rows+=("$(printf '%-17s %8s %7s %9s  %s' "$name" - - - "FAILED: $why")")
    continue
  fi
  rm -f "$WORK/$dir.next"
  watch_next_step "$WORK/h1/$dir/metrics.jsonl" "$WORK/$dir.next" &
  watcher=$!
  failed_at=$(date +%s.%N)
  lose h2 "$action"
  status=0
  wait "$supervisor" || status=$?
  ended=$(seconds_since "$failed_at")
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  cat "$WORK/$dir.log"
  # The evaluation after the last step has no next step: the job's end stands for it.
  if [[ -s $WORK/$dir.next ]]; then
    next=$(awk -v a="$failed_at" -v b="$(cat "$WORK/$dir.next")" 'BEGIN { printf "%.1f", b - a }')
  else
    next=$ended
  fi
  read -r recoveries most lost <<<"$(recovery_facts "$WORK/h1/$dir")"
  [[ $status -eq 0 ]] || fail "$name" "exit status $status"
  [[ -z $why ]] && ! grep -q "^final: " "$WORK/$dir.log" && fail "$name" "the job did not finish"
  [[ -z $why && $recoveries -lt 1 ]] && fail "$name" "no recovery recorded in summary.json"
  if [[ -z $why ]]; then
    "$MPIPE" compare "$WORK/$ref.safetensors" "$WORK/h1/$dir.safetensors" --rtol 0 ||
      fail "$name" "final weights differ from the uninterrupted run's"
  fi
  [[ -z $why ]] && ((most > every)) && fail "$name" "$most steps redone (at most $every)"
  survivors=(h1 h3)
  [[ $action == cut ]] && survivors+=(h2)
  # The survivors' processes end with the job (each host's daemon ends its ranks and itself); a
  # host cut off ends its own once TCP gives up on mpirun (30 s allowed).
  [[ -z $why ]] && ! nothing_left 30 "${survivors[@]}" && fail "$name" "processes left"
  [[ -z $why ]] && ! no_stray_files "$WORK/h1/$dir" "$WORK/h3/$dir" && fail "$name" "stray files left"
  torn_down || fail "$name" "a namespace or link is left after the teardown"
  rows+=("$(printf '%-17s %8s %7s %9s  %s' "$name" "$next" "$most" "$lost" "${why:+FAILED: $why}")")
  [[ -n $why ]] || to_next+=("$next")
done

# second_host NAME RUN_DIR PEER_COPY WHEN: a second host lost during the recovery: the hook freezes
# rank 1 (h2) at a forward and h2 is lost; then h3: WHEN redo: the hook, its marker removed,
# freezes rank 1 of the relaunch on h1 and h3 (now on h3) at the same forward, redone, and h3 is
# lost; WHEN launch: h3 is lost as mpirun starts its daemon for the relaunch (lose_host_at_launch:
# its third start, after the first job's and the probe's). The job must go on with h1 alone and
# end bit-identical, or stop with one line. With a shared RUN_DIR h1 reads every shard, and the
# newest committed checkpoint must export (intact); with node-local ones and peer copies h1 holds
# every shard of a step only if the first relaunch gathered them there.
second_host() {
  local name=$1 run_dir=$2 peer_copy=$3 when=$4 dir outcome='' newest
  dir=${name//\//-} why=
  [[ $name =~ $only ]] || return 0
  start_hosts
  lost_hosts_give_up_fast
  [[ $when == redo ]] || lose_host_at_launch h3 3
  supervise_on "$dir" h1:1,h2:1,h3:1 "1:forward:$mid" "$run_dir" "${settings[@]}" \
    "${one_slot[@]}" --set "checkpoint.peer_copy=$peer_copy"
  if wait_for_marker "$dir"; then
    failed_at=$(date +%s.%N)
    rm -f "$WORK/$dir.stopped"
    lose h2 kill
    if [[ $when == redo ]]; then
      wait_for_marker "$dir" || fail "$name" "the relaunch never froze on h3"
      lose h3 kill
    fi
    status=0
    wait "$supervisor" || status=$?
    ended=$(seconds_since "$failed_at")
    cat "$WORK/$dir.log"
    read -r recoveries most lost <<<"$(recovery_facts "$WORK/h1/$dir")"
    [[ $run_dir == "$LOCAL" ]] || read -r recoveries most lost <<<"$(recovery_facts "$run_dir/$dir")"
    if ((status == 0)); then
      grep -q "^final: " "$WORK/$dir.log" || fail "$name" "the job did not finish"
      exported=$run_dir/$dir.safetensors
      [[ $run_dir != "$LOCAL" ]] || exported=$WORK/h1/$dir.safetensors
      "$MPIPE" compare "$WORK/ref1.safetensors" "$exported" --rtol 0 ||
        fail "$name" "final weights differ from the uninterrupted run's"
      outcome="finished on h1 alone $ended s after h2's loss ($recoveries recoveries, $most steps redone)"
    else
      [[ $(grep -c "\[error\]" "$WORK/$dir.log") -eq 1 ]] ||
        fail "$name" "exit status $status without exactly one error line"
      outcome="stopped $ended s after h2's loss, exit status $status: $(grep "\[error\]" "$WORK/$dir.log" | head -n 1)"
    fi
    if [[ $run_dir != "$LOCAL" ]]; then
      newest=$(find "$run_dir/$dir/checkpoints" -name meta.json -printf '%h\n' 2>/dev/null | sort | tail -n 1)
      if [[ -z $newest ]] || ! "$MPIPE" export "$run_dir/$dir" --step "$((10#${newest##*step_}))" \
        "$WORK/$dir-newest.safetensors" > "$WORK/$dir-export.log" 2>&1; then
        cat "$WORK/$dir-export.log" 2>/dev/null || true
        fail "$name" "the newest committed checkpoint is not intact"
      fi
      no_stray_files "$run_dir/$dir" || fail "$name" "stray files left"
    else
      no_stray_files "$WORK/h1/$dir" || fail "$name" "stray files left"
    fi
    nothing_left 30 h1 || fail "$name" "processes left on h1"
  else
    wait "$supervisor" || true
    cat "$WORK/$dir.log"
    fail "$name" "the hook never froze the rank"
  fi
  torn_down || fail "$name" "a namespace or link is left after the teardown"
  second_rows+=("$name: $outcome${why:+ FAILED: $why}")
}
second_rows=()
mkdir -p "$WORK/shared"
second_host second/shared "$WORK/shared" false redo
second_host second/local "$LOCAL" true redo
second_host second/launch "$WORK/shared" false launch

echo
echo "load after: $(uptime)"
printf '%-17s %8s %7s %9s  %s\n' case "to next" redone "s lost" ""  # (redone: the most of one recovery)
((${#rows[@]} == 0)) || printf '%s\n' "${rows[@]}"
if ((${#to_next[@]} > 0)); then
  printf '%s\n' "${to_next[@]}" | sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "seconds from the failure to the next completed step: median %.1f, worst %.1f (%d cases)\n", m, v[NR], NR }'
fi
((${#second_rows[@]} == 0)) || printf 'a second host (h3) lost during the recovery, %s\n' "${second_rows[@]}"
if ((${#failed[@]} > 0)); then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
passed=1  # (hosts.sh's teardown then removes its files)
