#!/usr/bin/env bash
# Two Slurm nodes (h2 and h3, stock slurmd in their own network namespaces; tests/multihost/slurm_nodes.sh): scripts/slurm's batch scripts across both, a stop by the time-limit signal, a node set down mid-job, and a node lost under the supervisor.
#
# Checks, one rank per node (TCP between the nodes), each training run's weights bit-identical
# to the same run on one host:
#   1. `sbatch -N2 scripts/slurm/train.sbatch` completes on both nodes;
#   2. `sbatch -N2 scripts/slurm/serve.sbatch` runs two experiments of different layouts
#      (2 stages; 2 replicas of 1 stage) from its spool and ends once idle;
#   3. SIGUSR1 to the batch shell (what --signal=B:USR1@120 sends before the time limit): every
#      rank checkpoints and stops, the job requeues itself and resumes on both nodes;
#   4. `scontrol update nodename=h3 state=down` during a job submitted with --no-kill=off (which
#      undoes train.sbatch's --no-kill): Slurm ends the job and requeues it,
#      it waits for two nodes, and once h3 is back it resumes from its newest checkpoint;
#   5. h3 lost during a train.sbatch job (its slurmd and every process there killed, SIGPIPE to
#      the rank on h2): h2's watchdog names rank 1 on h3 and ends the step, the job (--no-kill)
#      goes on, `mpipe supervise` relaunches the training on h2 alone, re-planned from 2 stages
#      to 1, from its newest checkpoint, within a bound from the configured timeouts (far below
#      SlurmdTimeout), and the job ends COMPLETED.
# About 70 s.
# Usage: slurm.sh CONFIG
: "${MPIPE_MULTIHOST_BUDGET:=270}"  # hosts.sh's own deadline: five jobs and three restarts
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
# shellcheck source=tests/multihost/slurm_nodes.sh
source "$(dirname "$0")/slurm_nodes.sh"
config=$(realpath "$1")
repo=$(cd "$(dirname "$0")/../.." && pwd)
export MPIPE_BIN=$MPIPE
start_hosts
start_slurm_nodes
echo "slurm up after $SECONDS s: nodes h2 and h3"
cd "$JOBS"
# Steps of a few milliseconds: long enough to be stopped before the end, short enough to finish.
steps=300
model=(--set train.batch_size=4096 --set data.num_examples=4096 --set log.every=25
  --set "train.steps=$steps" --set checkpoint.every=25)
nodes=(-N2 --ntasks-per-node=1)
out() { echo "runs/slurm-$1.out"; }
train_here 2 reference "$config" "${model[@]}"

# ran_on_both JOB: the job's output names both nodes.
ran_on_both() {
  grep -qE "on h\[2-3\]: 2 tasks" "$(out "$1")" || fail "job $1 did not run on h2 and h3"
}

# --- 1. train.sbatch across both nodes ---------------------------------------------------------
job=$(sbatch --parsable "${nodes[@]}" "$repo/scripts/slurm/train.sbatch" "$config" "${model[@]}" \
  --run-dir runs/straight --export-weights runs/straight.safetensors)
state=$(wait_until_done "$job")
[[ $state == COMPLETED ]] || fail "job $job ended $state"
ran_on_both "$job"
cp runs/straight.safetensors "$WORK/straight.safetensors"
same reference straight
echo "ok 1 (${SECONDS} s): job $job trained on h2 and h3, weights bit-identical to one host's"

# --- 2. serve.sbatch across both nodes ---------------------------------------------------------
spool=$JOBS/spool
"$MPIPE" submit "$spool" "$config" --name stages --set train.steps=40 > /dev/null
"$MPIPE" submit "$spool" "$config" --name replicas --set train.steps=40 \
  --set pipeline.stages=1 --set pipeline.data_parallel=2 > /dev/null
job=$(sbatch --parsable "${nodes[@]}" "$repo/scripts/slurm/serve.sbatch" "$spool" --idle-exit 3s)
state=$(wait_until_done "$job")
[[ $state == COMPLETED ]] || fail "serve job $job ended $state"
grep -qE "on h\[2-3\]" "$(out "$job")" || fail "serve job $job did not run on h2 and h3"
for name in stages replicas; do
  status=$(/usr/bin/python3 "$repo/tests/e2e/status_field.py" "$spool/status.json" "$name" state)
  [[ $status == "done" ]] || fail "the daemon's experiment $name is '$status', not done"
done
echo "ok 2 (${SECONDS} s): serve job $job ran a 2-stage and a 2-replica experiment on h2 and h3"

# --- 3. the time-limit signal: checkpoint, stop, requeue, resume on both nodes -------------------
job=$(MPIPE_RESUBMIT=1 sbatch --parsable "${nodes[@]}" "$repo/scripts/slurm/train.sbatch" \
  "$config" "${model[@]}" --run-dir runs/signal --export-weights runs/signal.safetensors)
training_after "$(out "$job")" "train.sbatch: job $job "
scancel --signal=USR1 --batch "$job"
wait_for_line "$(out "$job")" "requeueing job $job"
stopped=$(newest_checkpoint_step runs/signal) || fail "no checkpoint after the stop"
wait_for_line "$(out "$job")" "resumed from step $stopped"
state=$(wait_until_done "$job")
[[ $state == COMPLETED ]] || fail "job $job ended $state after its requeue"
grep -qE "job $job \(restart 1\) on h\[2-3\]" "$(out "$job")" ||
  fail "the requeued job $job did not run on h2 and h3"
cp runs/signal.safetensors "$WORK/signal.safetensors"
same reference signal
echo "ok 3 (${SECONDS} s): job $job stopped at step $stopped, requeued itself and finished on both" \
  "nodes, weights bit-identical"

# --- 4. a node set down mid-job: requeued, held until the node returns, resumed -------------------
job=$(sbatch --parsable "${nodes[@]}" --no-kill=off "$repo/scripts/slurm/train.sbatch" "$config" "${model[@]}" \
  --run-dir runs/down --export-weights runs/down.safetensors)
deadline=$((SECONDS + timeout_s))
until newest_checkpoint_step runs/down > /dev/null 2>&1; do
  ((SECONDS < deadline)) || fail "job $job wrote no checkpoint"
  sleep 0.2
done
scontrol update nodename=h3 state=down reason=mpipe-test
deadline=$((SECONDS + timeout_s))
until [[ $(job_field "$job" Restarts) == 1 && $(job_state "$job") == PENDING ]]; do
  ((SECONDS < deadline)) || fail "job $job was not requeued when h3 went down ($(job_state "$job"))"
  sleep 0.2
done
sleep 2
[[ $(job_state "$job") == PENDING ]] || fail "job $job did not wait for a second node"
scontrol update nodename=h3 state=resume
state=$(wait_until_done "$job")
[[ $state == COMPLETED ]] || fail "job $job ended $state after h3 came back"
grep -qE "job $job \(restart 1\) on h\[2-3\]" "$(out "$job")" ||
  fail "the requeued job $job did not run on h2 and h3"
grep -q "resumed from step" "$(out "$job")" || fail "the requeued job $job did not resume"
cp runs/down.safetensors "$WORK/down.safetensors"
same reference down
echo "ok 4 (${SECONDS} s): job $job, requeued when h3 went down, resumed once it was back;" \
  "weights bit-identical"

# --- 5. a node lost under the supervisor: the job goes on with the node left ---------------------
# comm.startup_timeout is the deadline of the waits outside steps, those of a checkpoint among
# them: h3 is lost as checkpoints are written.
job=$(sbatch --parsable "${nodes[@]}" "$repo/scripts/slurm/train.sbatch" "$config" "${model[@]}" \
  --set comm.timeout=3s --set comm.startup_timeout=20s --run-dir runs/lost \
  --export-weights runs/lost.safetensors)
deadline=$((SECONDS + timeout_s))
until newest_checkpoint_step runs/lost > /dev/null 2>&1; do
  ((SECONDS < deadline)) || fail "job $job wrote no checkpoint"
  sleep 0.2
done
# The surviving rank gets the SIGPIPE that Open MPI's next write to h3's reset connection raises
# (in 1 of 4 losses it came before anything else noticed the loss): ignored, so the rank's
# watchdog ends the step; otherwise it killed the rank, and srun waited for h3 until slurmctld
# set it DOWN (SlurmdTimeout).
signalled=0
for pid in $(ip netns pids "${PREFIX}h2"); do
  if [[ $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) == "$MPIPE train "* ]]; then
    kill -PIPE "$pid"
    signalled=1
  fi
done
((signalled)) || fail "job $job: no rank on h2"
lost_at=$SECONDS
for pid in $(ip netns pids "${PREFIX}h3"); do kill -KILL "$pid" 2>/dev/null || true; done
# The loss costs the watchdog's deadline (comm.timeout in a step, comm.startup_timeout in a
# checkpoint) and roll call (at most 5 s), srun's KillWait + 2 s after the abort, the probe of h3
# (--probe-timeout, 30 s) and the relaunch's start-up: a step of the relaunched training is
# logged within that, with 30 s of slack for the load, far below SlurmdTimeout.
kill_wait=$(sed -n 's/^KillWait=//p' "$SLURM_CONF")
slurmd_timeout=$(sed -n 's/^SlurmdTimeout=//p' "$SLURM_CONF")
bound=$((20 + 5 + kill_wait + 2 + 30 + 30))
((2 * bound < slurmd_timeout)) || fail "the bound of $bound s is not far below SlurmdTimeout"
until awk '/supervise: restart 1 of/ { seen = 1; next } seen && /^step [0-9]+\// { ok = 1 }
           END { exit !ok }' "$(out "$job")"; do
  ((SECONDS - lost_at < bound)) || fail "job $job: no step within $bound s of losing h3"
  sleep 0.2
done
resumed_after=$((SECONDS - lost_at))
# What slurmctld does SlurmdTimeout after the loss, done now: h3 set DOWN, so that the job's end
# does not wait for h3 to clean up.
scontrol update nodename=h3 state=down reason=lost
state=$(wait_until_done "$job")
[[ $state == COMPLETED ]] || fail "job $job ended $state after h3 was lost"
grep -qE "\[error\] watchdog: (after )?step [0-9]+: (checkpoint: )?waited .* rank 1 \(pipeline rank 1, host h3\)" \
  "$(out "$job")" ||
  fail "job $job: no watchdog line naming rank 1 on h3"
grep -qE "supervise: restart 1 of at most 3: exit status 3: .*; h3 does not answer; relaunching on h2:1 as 1 stage x 1 replica, 4 micro-batches each \(was 2 stages x 1 replica, 4 micro-batches each on h2:1,h3:1\), resuming from step [0-9]+ \([0-9]+ steps? to redo\), bit-identical$" \
  "$(out "$job")" || fail "job $job: no recovery line relaunching on h2"
[[ $(grep -c "supervise: restart" "$(out "$job")") == 1 ]] || fail "job $job: not one recovery"
redone=$(/usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["recoveries"]
assert len(r) == 1 and r[0]["lost_hosts"] == ["h3"], r
print("%d steps redone, %.1f s from the last step before the loss to the next"
      % (r[0]["steps_redone"], r[0]["seconds_lost"]))' runs/lost/summary.json) ||
  fail "job $job: the recovery in summary.json"
cp runs/lost.safetensors "$WORK/lost.safetensors"
same reference lost
echo "ok 5 (${SECONDS} s): job $job lost h3 and trained on h2 $resumed_after s after the loss" \
  "(at most $bound), finished $((SECONDS - lost_at)) s after it; $redone; weights bit-identical"
passed=1
