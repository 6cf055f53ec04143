#!/usr/bin/env bash
# mpipe supervise growing back: h2 lost mid-training (every process there killed, its namespace
# deleted), the job relaunches on h1 and h3 (K=3 re-planned to K=2); then h2 comes back (its
# namespace made again, as a rebooted node): the supervisor, probing it every --regrow-interval,
# stops the job at a step boundary with a checkpoint and relaunches it on h1, h2 and h3 as K=3,
# no step redone. The job finishes bit-identical to an uninterrupted K=3 run, with one recovery
# and one widening (its lines, its records in metrics.jsonl and summary.json, the progress line),
# and nothing left running. Then the same under the serve daemon: its experiment is stopped
# (interrupted with a checkpoint) and resumed on the wider daemon, bit-identical, its records in
# its own run directory. Then a spare: a K=2 job on h1 and h2 with h3 spare (--spare) loses h2
# and is relaunched on h1 and h3, still K=2, bit-identical. The test hook MPIPE_TEST_STOP_AT
# holds rank 1 at the forward of step 30 (in each narrow job too), so neither a loss nor a return
# races the training. About 32 s.
# Usage: supervise_grow.sh CONFIG
: "${MPIPE_MULTIHOST_BUDGET:=200}"  # hosts.sh's own deadline
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
start_hosts
lost_hosts_give_up_fast  # 6.2 s instead of 15 minutes
SHARED=$WORK/shared  # on the root file system: the same folder on every host
mkdir -p "$SHARED"
steps=60 every=20
# comm.timeout: longer than rank 1 is held below (a lost host ends the job through mpirun).
settings=(--set pipeline.stages=3 --set "train.steps=$steps" --set log.every=1
  --set "checkpoint.every=$every" --set comm.timeout=60s)

train_here 3 whole "$config" "${settings[@]}"

marker=$WORK/held  # made by the hook as it holds rank 1
# held_rank HOST LOG: the pid of the rank the hook holds (stopped) on HOST, once the marker is
# there; fails, showing LOG, when none is within a minute.
held_rank() {
  local pid
  for _ in $(seq 1200); do
    [[ -e $marker ]] && for pid in $(ip netns pids "$PREFIX$1"); do
      [[ $(ps -o stat= -p "$pid") == T* ]] && { echo "$pid"; return 0; }
    done
    sleep 0.05
  done
  cat "$2" >&2
  echo "FAILED: no rank held on $1" >&2
  return 1
}

# supervise_held LOG OPTIONS... -- JOB...: `mpipe supervise` from h1 over $hosts with
# --probe-timeout 10 and OPTIONS, running JOB, rank 1 held by the test hook at the forward of step
# 30 (the marker made as it holds); in the background, its output in LOG, its pid in $supervisor.
supervise_held() {
  local log=$1 options=()
  shift
  while [[ $1 != -- ]]; do
    options+=("$1")
    shift
  done
  shift
  local command=("$MPIPE" supervise --hosts "$hosts" --probe-timeout 10 "${options[@]}"
    --mpirun-args "--bind-to none --mca btl tcp,self ${MCA[*]} -x OMP_NUM_THREADS -x OMP_WAIT_POLICY -x MPIPE_TEST_STOP_AT -x MPIPE_TEST_STOP_MARKER"
    -- "$@")
  "$WORK/host_exec" h1 "env MPIPE_TEST_STOP_AT=1:forward:30 MPIPE_TEST_STOP_MARKER=$marker $(printf '%q ' "${command[@]}")" \
    > "$log" 2>&1 &
  supervisor=$!
}

# lose_and_bring_back_h2 LOG METRICS: h2 lost while its rank is held at step 30 (the marker
# removed first: the next job's rank 1, on h3, is held there too); once the narrow job is held
# there, h2 comes back, and once the supervisor has sent its stop (its line in LOG), the held rank
# goes on and takes it.
lose_and_bring_back_h2() {
  local held
  held_rank h2 "$1" > /dev/null || exit 1
  rm "$marker"
  lose_host_after h2 "$2" 0 "$1"
  held=$(held_rank h3 "$1") || exit 1
  start_host 2
  lost_hosts_give_up_fast
  for _ in $(seq 600); do
    grep -q "supervise: h2 answers again; stopping" "$1" && break
    sleep 0.05
  done
  kill -CONT "$held"
}

# --- a train job ---
metrics=$SHARED/grown/metrics.jsonl
hosts=h1:1,h2:1,h3:1
supervise_held "$WORK/grown.log" --regrow-interval 1 -- train "$config" --run-dir "$SHARED/grown" \
  --export-weights "$SHARED/grown.safetensors" "${settings[@]}"

lose_and_bring_back_h2 "$WORK/grown.log" "$metrics"
lost_at_step=$killed_at_step
status=0
wait "$supervisor" || status=$?
cat "$WORK/grown.log"
[[ $status -eq 0 ]] || { echo "FAILED: exit status $status"; exit 1; }
grep -q "^final: " "$WORK/grown.log" || { echo "FAILED: the job did not finish"; exit 1; }
[[ $(grep -c "supervise: restart" "$WORK/grown.log") -eq 1 ]] ||
  { echo "FAILED: not one recovery line"; exit 1; }
grep -qE "^\[warning\] supervise: restart 1 of at most 3: exit status (205|137|3): .*; h2 does not answer; relaunching on h1:1,h3:1 as 2 stages x 1 replica" \
  "$WORK/grown.log" || { echo "FAILED: the recovery line"; exit 1; }
grep -qxF "[info] supervise: h2 answers again; stopping the job at its next step boundary to relaunch it on h1:1,h2:1,h3:1 as 3 stages x 1 replica, 4 micro-batches each (now 2 stages x 1 replica, 4 micro-batches each on h1:1,h3:1), bit-identical" \
  "$WORK/grown.log" || { echo "FAILED: the stop line"; exit 1; }
grep -q "stopped at step [0-9]* by a signal; checkpoint saved" "$WORK/grown.log" ||
  { echo "FAILED: the narrow job did not stop with a checkpoint"; exit 1; }
widening=$(grep -oE "supervise: widening 1: relaunching on h1:1,h2:1,h3:1 as 3 stages x 1 replica, 4 micro-batches each, resuming from step [0-9]+ \(0 steps to redo\)$" \
  "$WORK/grown.log") || { echo "FAILED: the widening line"; exit 1; }
[[ $(grep -c "supervise: widening" "$WORK/grown.log") -eq 1 ]] ||
  { echo "FAILED: not one widening line"; exit 1; }
grep -qE "^step [0-9]+/$steps \| .* \| 1 recovery \| 1 widening$" "$WORK/grown.log" ||
  { echo "FAILED: no progress line with its recovery and widening"; exit 1; }
nothing_left 30 h1 h2 h3 || { echo "FAILED: processes left"; exit 1; }
cp "$SHARED/grown.safetensors" "$WORK/grown.safetensors"
same whole grown
record=$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
r, w = s["recoveries"], s["widenings"]
assert len(r) == 1 and r[0]["lost_hosts"] == ["h2"] and r[0]["new_layout"]["stages"] == 2, r
assert len(w) == 1 and w[0]["returned_hosts"] == ["h2"], w
assert w[0]["old_layout"]["stages"] == 2 and w[0]["new_layout"]["stages"] == 3, w
assert w[0]["old_hosts"] == "h1:1,h3:1" and w[0]["new_hosts"] == "h1:1,h2:1,h3:1", w
assert w[0]["steps_redone"] == 0 and w[0]["bit_identical"] and w[0]["seconds"] >= 0, w
events = [json.loads(line) for line in open(sys.argv[2]) if "event" in line]
assert [e["event"] for e in events] == ["recovery", "widening"], events
assert events[1]["step"] == w[0]["resumed_from"], events
print("widened at step %d, %.1f s from the stop signal to the next step"
      % (w[0]["resumed_from"], w[0]["seconds"]))' "$SHARED/grown/summary.json" "$metrics") ||
  { echo "FAILED: the records in summary.json or metrics.jsonl"; exit 1; }

# --- the serve daemon: the same, its experiment left interrupted by the stop and resumed wider ---
stop_hosts
start_hosts
lost_hosts_give_up_fast
rm -f "$marker"
spool=$SHARED/spool
"$MPIPE" submit "$spool" "$config" --name first "${settings[@]}" > /dev/null ||
  { echo "FAILED: submit first"; exit 1; }
metrics=$spool/runs/first/metrics.jsonl
supervise_held "$WORK/serve.log" --regrow-interval 1 -- serve --spool "$spool" --idle-exit 1s
lose_and_bring_back_h2 "$WORK/serve.log" "$metrics"
status=0
wait "$supervisor" || status=$?
cat "$WORK/serve.log"
[[ $status -eq 0 ]] || { echo "FAILED: serve: exit status $status"; exit 1; }
grep -q "first: done at step $steps" "$WORK/serve.log" || { echo "FAILED: serve: first not done"; exit 1; }
grep -qE "supervise: restart 1 of at most 3: .*; h2 does not answer; relaunching on h1:1,h3:1, experiment first as 2 stages" \
  "$WORK/serve.log" || { echo "FAILED: serve: the recovery line"; exit 1; }
grep -qxF "[info] supervise: h2 answers again; stopping the job at its next step boundary to relaunch it on h1:1,h2:1,h3:1, experiment first as 3 stages x 1 replica, 4 micro-batches each (now 2 stages x 1 replica, 4 micro-batches each on h1:1,h3:1), bit-identical" \
  "$WORK/serve.log" || { echo "FAILED: serve: the stop line"; exit 1; }
grep -qE "supervise: widening 1: relaunching on h1:1,h2:1,h3:1, experiment first as 3 stages x 1 replica, 4 micro-batches each, resuming from step [0-9]+ \(0 steps to redo\)$" \
  "$WORK/serve.log" || { echo "FAILED: serve: the widening line"; exit 1; }
nothing_left 30 h1 h2 h3 || { echo "FAILED: serve: processes left"; exit 1; }
cp "$spool/runs/first/weights.safetensors" "$WORK/first.safetensors"
same whole first
python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
r, w = s["recoveries"], s["widenings"]
assert len(r) == 1 and r[0]["experiment"] == "first", r
assert len(w) == 1 and w[0]["experiment"] == "first" and w[0]["returned_hosts"] == ["h2"], w
assert w[0]["new_layout"]["stages"] == 3 and w[0]["steps_redone"] == 0 and w[0]["seconds"] >= 0, w
events = [json.loads(line) for line in open(sys.argv[2]) if "event" in line]
assert [e["event"] for e in events] == ["recovery", "widening"], events' \
  "$spool/runs/first/summary.json" "$metrics" ||
  { echo "FAILED: serve: the records in summary.json or metrics.jsonl"; exit 1; }

# --- a spare: h1 and h2 with h3 spare; h2 lost, the relaunch takes h3 and keeps K=2 ---
stop_hosts
start_hosts
lost_hosts_give_up_fast
rm -f "$marker"
two=(--set pipeline.stages=2 --set "train.steps=$steps" --set log.every=1
  --set "checkpoint.every=$every" --set comm.timeout=60s)
train_here 2 whole2 "$config" "${two[@]}"
metrics=$SHARED/spared/metrics.jsonl
hosts=h1:1,h2:1
supervise_held "$WORK/spared.log" --spare h3:1 -- train "$config" --run-dir "$SHARED/spared" \
  --export-weights "$SHARED/spared.safetensors" "${two[@]}"
held_rank h2 "$WORK/spared.log" > /dev/null || exit 1
lose_host_after h2 "$metrics" 0 "$WORK/spared.log"
status=0
wait "$supervisor" || status=$?
cat "$WORK/spared.log"
[[ $status -eq 0 ]] || { echo "FAILED: spare: exit status $status"; exit 1; }
grep -qE "^\[warning\] supervise: restart 1 of at most 3: .*; h2 does not answer; relaunching on h1:1,h3:1 as 2 stages x 1 replica, 4 micro-batches each \(was 2 stages x 1 replica, 4 micro-batches each on h1:1,h2:1\)" \
  "$WORK/spared.log" || { echo "FAILED: spare: the recovery line"; exit 1; }
! grep -q "supervise: widening" "$WORK/spared.log" || { echo "FAILED: spare: widened"; exit 1; }
nothing_left 30 h1 h3 || { echo "FAILED: spare: processes left"; exit 1; }
cp "$SHARED/spared.safetensors" "$WORK/spared.safetensors"
same whole2 spared

passed=1
echo "multihost supervise_grow: h2 killed once step $lost_at_step of $steps was logged, back at" \
  "step 30 of the K=2 relaunch; ${widening#supervise: }; $record; bit-identical; the daemon" \
  "widened the same way, its experiment bit-identical; a spare (h3) kept a job that lost h2 at K=2," \
  "bit-identical"
