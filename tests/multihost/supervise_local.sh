#!/usr/bin/env bash
# mpipe supervise on three hosts with node-local run directories and checkpoint.peer_copy: every
# process of h2 killed and h2 gone after its checkpoints, the job relaunches by itself on h1 and h3
# (K=3 re-planned to K=2), gathers the newest checkpoint from the two survivors (h2's shard from
# its copy on h3) with no folder copied, and ends bit-identical to an uninterrupted run. Prints the
# time from the failure to the next completed step. About 10 s.
# Usage: supervise_local.sh CONFIG
: "${MPIPE_MULTIHOST_BUDGET:=200}"  # hosts.sh's own deadline
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
start_hosts
lost_hosts_give_up_fast  # 6.2 s instead of 15 minutes
steps=200 every=20
settings=(--set pipeline.stages=3 --set "train.steps=$steps" --set log.every=1
  --set "checkpoint.every=$every" --set comm.timeout=3s --set checkpoint.peer_copy=true)

train_here 3 whole "$config" "${settings[@]}"

# mpipe supervise from h1 over h1-h3, one slot each, the run directory node-local ($LOCAL is each
# host's own folder); bounded by hosts.sh's budget.
hosts=h1:1,h2:1,h3:1
command=("$MPIPE" supervise --hosts "$hosts" --probe-timeout 10
  --mpirun-args "--bind-to none --mca btl tcp,self ${MCA[*]} -x OMP_NUM_THREADS -x OMP_WAIT_POLICY"
  -- train "$config" --run-dir "$LOCAL/lost" --export-weights "$LOCAL/lost.safetensors"
  "${settings[@]}")
"$WORK/host_exec" h1 "$(printf '%q ' "${command[@]}")" > "$WORK/lost.log" 2>&1 &
supervisor=$!

# h2 lost (every process there, then the host itself) once 30 steps are logged, past the
# checkpoints of steps 20 and before.
lose_host_after h2 "$WORK/h1/lost/metrics.jsonl" 30 "$WORK/lost.log"
status=0
wait "$supervisor" || status=$?
cat "$WORK/lost.log"
[[ $status -eq 0 ]] || { echo "FAILED: exit status $status"; exit 1; }
grep -q "^final: " "$WORK/lost.log" || { echo "FAILED: the job did not finish"; exit 1; }
[[ $(grep -c "supervise: restart" "$WORK/lost.log") -eq 1 ]] ||
  { echo "FAILED: not one recovery line"; exit 1; }
recovery=$(grep -oE "h2 does not answer; relaunching on h1:1,h3:1 as 2 stages .*, resuming from step [0-9]+" \
  "$WORK/lost.log") || { echo "FAILED: the recovery line"; exit 1; }
resumed=${recovery##* }
((resumed >= every)) || { echo "FAILED: resumed from step $resumed, not a checkpoint"; exit 1; }
grep -q "resumed from step $resumed " "$WORK/lost.log" ||
  { echo "FAILED: the relaunched job did not resume step $resumed"; exit 1; }
# Each surviving host's daemon ends its ranks and itself with the job: nothing left within 30 s.
nothing_left 30 h1 h3 || { echo "FAILED: processes left on h1 or h3"; exit 1; }
cp "$WORK/h1/lost.safetensors" "$WORK/lost.safetensors"
same whole lost
lost=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["recoveries"]
assert len(r) == 1 and r[0]["lost_hosts"] == ["h2"], r
print("%.1f s" % r[0]["seconds_lost"])' "$WORK/h1/lost/summary.json") ||
  { echo "FAILED: the record in summary.json"; exit 1; }

passed=1
echo "multihost supervise_local: h2 killed once step $killed_at_step of $steps was logged; the" \
  "relaunch on h1 and h3 resumed step $resumed from node-local disks and peer copies, $lost from" \
  "the last step before the failure to the next; bit-identical"
