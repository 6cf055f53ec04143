#!/usr/bin/env bash
# Starts a throwaway single-node Slurm (munged, slurmctld, slurmd) and checks scripts/slurm/train.sbatch under it.
#
#   MPIPE_BIN=build/release/apps/mpipe tests/slurm/run_local_slurm.sh     # ctest: slurm.train_sbatch
#
# Needs root (it runs the daemons) and the Debian packages slurm-wlm and munge, which
# scripts/test installs from scripts/packages-test.txt. Everything lives in a scratch folder
# under /tmp that is removed afterwards (kept, and its path printed, when a check fails or
# MPIPE_KEEP_SCRATCH=1); the daemons are stopped on every exit. They listen on two free TCP
# ports, so another Slurm on the machine is not disturbed. Slurm holds a requeued job for its
# credential lifetime plus 1 s (2 min by default); here 5 + 1 s (AuthInfo cred_expire), and the
# schedulers look every second. A 240 s deadline of its own (MPIPE_SLURM_BUDGET) ends it, and
# stops the daemons, before ctest's timeout would kill it with SIGKILL.
# Checks (about 45 s on 2 idle cores):
#   1. an uninterrupted run of 400 steps ends COMPLETED with summary.json and its weights;
#   2. a job submitted with extra options (--job-name, --mem, --time, --comment, --account,
#      --signal, --output elsewhere) and MPIPE_RESUBMIT=1, stopped by SIGUSR1 to the batch
#      shell (what --signal=B:USR1@120 sends before the time limit), checkpoints, stops and
#      requeues itself: the same job restarts with every option (scontrol show job, which
#      does not show --signal; --qos is dropped without accounting, and there is no GRES) and
#      continues from the checkpoint; stopped again, it does not requeue a second time
#      (MPIPE_RESUBMIT=1); `scontrol requeue` of the finished job continues it to the end,
#      with the weights of run 1, bit for bit, and all three runs' logs in its output file;
#   3. SIGTERM stops a job the same way, prints the resume command and never requeues;
#   4. that MPIPE_RESUME=1 command (with a step count within reach) finishes the run;
#   5. a bad experiment file makes the job FAILED, with mpipe's error in the output.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
MPIPE_BIN=$(realpath "${MPIPE_BIN:-$repo/build/release/apps/mpipe}")
export MPIPE_BIN
timeout_s=${MPIPE_SLURM_TIMEOUT:-180}
sbatch_script=$repo/scripts/slurm/train.sbatch
config=$repo/tests/e2e/files/mlp.yaml

[[ -x "$MPIPE_BIN" ]] || { echo "FAIL: $MPIPE_BIN is not an executable (set MPIPE_BIN)"; exit 1; }
for tool in munged slurmctld slurmd sbatch scontrol; do
  command -v "$tool" >/dev/null || {
    echo "FAIL: $tool not found: install slurm-wlm and munge (scripts/test installs" \
      "scripts/packages-test.txt)"
    exit 1
  }
done
((EUID == 0)) || { echo "FAIL: run as root (it starts munged, slurmctld and slurmd)"; exit 1; }

scratch=$(mktemp -d /tmp/mpipe-slurm.XXXXXX)
export SLURM_CONF=$scratch/slurm.conf
failed=1

stop_daemon() {  # pid file
  [[ -f "$1" ]] || return 0
  local pid
  pid=$(cat "$1")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  set +e  # stop every daemon, whatever fails on the way
  if [[ -n "${watchdog:-}" ]]; then pkill -P "$watchdog" 2>/dev/null; kill "$watchdog" 2>/dev/null; fi
  if [[ -f "$scratch/slurmctld.pid" ]]; then
    scancel --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 50); do  # let the jobs' processes end before their daemons do
      [[ -z "$(squeue -h -o %i 2>/dev/null)" ]] && break
      sleep 0.2
    done
  fi
  stop_daemon "$scratch/slurmd.pid"
  stop_daemon "$scratch/slurmctld.pid"
  stop_daemon "$scratch/munged.pid"
  if ((failed)) || [[ "${MPIPE_KEEP_SCRATCH:-0}" == 1 ]]; then
    echo "scratch kept in $scratch"
  else
    rm -rf "$scratch"
  fi
}
trap cleanup EXIT
# ctest kills a test that runs past its TIMEOUT with SIGKILL, which skips the EXIT trap and
# would leave the daemons running: end the test (and stop them) well before that.
trap 'echo "FAIL: stopped by a signal"; exit 1' TERM INT
(sleep "${MPIPE_SLURM_BUDGET:-240}" && kill -TERM $$) >/dev/null 2>&1 &
watchdog=$!

fail() {
  echo "FAIL: $*"
  for f in "$scratch"/work/runs/slurm-*.out "$scratch"/work/logs/*.log; do
    [[ -f "$f" ]] && { echo "--- $f"; tail -n 30 "$f"; }
  done
  for f in slurmctld.log slurmd.log; do
    [[ -f "$scratch/$f" ]] && { echo "--- $f"; tail -n 15 "$scratch/$f"; }
  done
  exit 1
}

port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {  # a free TCP port above $1
  local p=$1
  while ! port_is_free "$p"; do p=$((p + 1)); done
  echo "$p"
}

# --- munge with its own key and socket -----------------------------------------------------
dd if=/dev/urandom of="$scratch/munge.key" bs=1024 count=1 status=none
chmod 0400 "$scratch/munge.key"
munged --force --socket="$scratch/munge.sock" --key-file="$scratch/munge.key" \
  --log-file="$scratch/munged.log" --pid-file="$scratch/munged.pid" \
  --seed-file="$scratch/munged.seed"

# --- slurm.conf: one node (this machine), one partition --------------------------------------
ctld_port=$(free_port $((20000 + RANDOM % 20000)))
slurmd_port=$(free_port $((ctld_port + 1)))
cpus=$(nproc)
((cpus >= 2)) || cpus=2
mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
mkdir -p "$scratch/state" "$scratch/spool" "$scratch/work/runs"
cat >"$SLURM_CONF" <<EOF
ClusterName=mpipe-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$scratch/munge.sock,cred_expire=5
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool
SlurmctldPidFile=$scratch/slurmctld.pid
SlurmdPidFile=$scratch/slurmd.pid
SlurmctldLogFile=$scratch/slurmctld.log
SlurmdLogFile=$scratch/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=pmix
ReturnToService=2
# Start a requeued job as soon as its hold ends (the defaults look every 30 to 60 s).
SchedulerParameters=bf_interval=1,sched_interval=1
SlurmdParameters=config_overrides
NodeName=localhost CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF" -N localhost

deadline=$((SECONDS + 60))
until scontrol show node localhost 2>/dev/null | grep -q 'State=IDLE'; do
  ((SECONDS < deadline)) || fail "node did not become idle"
  sleep 1
done
echo "slurm up after ${SECONDS} s (ports $ctld_port/$slurmd_port, $cpus CPUs), scratch $scratch"


# --- helpers ------------------------------------------------------------------------------------
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
  local deadline=$((SECONDS + timeout_s))
  until (($(grep -cF -- "$2" "$1" 2>/dev/null || true) >= ${3:-1})); do
    ((SECONDS < deadline)) || fail "timed out waiting for '$2' in $1"
    sleep 0.2
  done
}

training_after() {  # file, marker: wait for a progress line after the last line holding marker
  local deadline=$((SECONDS + timeout_s))
  until awk -v m="$2" 'index($0, m) { seen = 1; next } seen && /^step [0-9]+\// { ok = 1 }
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

cd "$scratch/work"
mkdir -p logs
out() { echo "runs/slurm-$1.out"; }
# Steps of a few milliseconds: long enough to be stopped before the end, short enough to finish.
steps=400
model=(--set train.batch_size=4096 --set data.num_examples=4096 --set log.every=25)

# --- 1. an uninterrupted run: the reference ----------------------------------------------------
job=$(sbatch --parsable --ntasks 2 "$sbatch_script" "$config" "${model[@]}" \
  --set train.steps=$steps --run-dir runs/straight --export-weights runs/straight.safetensors)
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state"
grep -q "\"steps\": $steps" runs/straight/summary.json 2>/dev/null ||
  fail "runs/straight/summary.json does not say $steps steps"
grep -q '"stages": 2' runs/straight/summary.json || fail "summary.json does not say 2 stages"
[[ -f runs/straight.safetensors ]] || fail "job $job exported no weights"
echo "ok 1 (${SECONDS} s): job $job ran $steps steps uninterrupted"

# --- 2. SIGUSR1: checkpoint, stop and requeue with every option ---------------------------------
opts=(--job-name=mpipe-requeue --ntasks=2 --mem=1000 --time=30 --comment=requeue-check
  --account=test-account --signal=B:USR1@600 --output=logs/%x-%j.log)
job=$(MPIPE_RESUBMIT=1 sbatch --parsable "${opts[@]}" "$sbatch_script" "$config" "${model[@]}" \
  --set train.steps=$steps --run-dir runs/requeued --export-weights runs/requeued.safetensors)
log=logs/mpipe-requeue-$job.log
declare -A before=()
for field in JobName Account Comment TimeLimit MinMemoryNode NumTasks StdOut Requeue Partition; do
  before[$field]=$(job_field "$job" "$field")
done
[[ "${before[Comment]}" == requeue-check && "${before[MinMemoryNode]}" == 1000M ]] ||
  fail "job $job was not submitted with the extra options: $(scontrol show job "$job")"
training_after "$log" "train.sbatch: job $job "
scancel --signal=USR1 --batch "$job"
wait_for_line "$log" "requeueing job $job"
step1=$(newest_checkpoint_step runs/requeued) || fail "no checkpoint after the first stop"
wait_for_line "$log" "resumed from step $step1"  # the same job, started again
training_after "$log" "(restart 1)"
[[ $(job_field "$job" Restarts) == 1 ]] || fail "job $job: Restarts=$(job_field "$job" Restarts)"
for field in "${!before[@]}"; do
  now=$(job_field "$job" "$field")
  [[ "$now" == "${before[$field]}" ]] ||
    fail "requeued job $job changed $field from '${before[$field]}' to '$now'"
done
scancel --signal=USR1 --batch "$job"  # a second stop: MPIPE_RESUBMIT=1 allows no second requeue
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state after its second stop"
step2=$(newest_checkpoint_step runs/requeued) || fail "no checkpoint"
((step2 > step1)) || fail "job $job did not get past step $step1 (newest checkpoint $step2)"
(($(grep -c "requeueing job" "$log") == 1)) || fail "job $job requeued itself more than once"
echo "ok 2 (${SECONDS} s): job $job stopped at $step1 on SIGUSR1, requeued itself with all its options," \
  "resumed, stopped at $step2 and stayed stopped (MPIPE_RESUBMIT=1)"

scontrol requeue "$job"  # continue the finished job: same id, same options, resumes again
wait_for_line "$log" "resumed from step $step2"
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state after scontrol requeue"
grep -q "\"steps\": $steps" runs/requeued/summary.json 2>/dev/null ||
  fail "runs/requeued/summary.json does not say $steps steps"
"$MPIPE_BIN" compare runs/straight.safetensors runs/requeued.safetensors ||
  fail "the stopped and requeued run's weights differ from the uninterrupted run's"
for r in 0 1 2; do grep -qF "(restart $r)" "$log" || fail "$log lost the log of run $r"; done
echo "ok 2 (${SECONDS} s): scontrol requeue $job finished the run: weights bit-identical to job 1's"

# --- 3. SIGTERM: checkpoint and stop, never requeue ----------------------------------------------
long=("${model[@]}" --set train.steps=1000000)
job=$(MPIPE_RESUBMIT=5 sbatch --parsable --ntasks 2 "$sbatch_script" "$config" "${long[@]}")
run_dir=runs/mlp-$job
training_after "$(out "$job")" "train.sbatch: job $job "
scancel --signal=TERM --batch "$job"
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state"
grep -q 'stopped at step' "$(out "$job")" || fail "mpipe did not report the stop"
[[ ! -f "$run_dir/summary.json" ]] || fail "a stopped run wrote summary.json"
step3=$(newest_checkpoint_step "$run_dir") || fail "no checkpoint after SIGTERM"
if grep -q 'requeueing' "$(out "$job")"; then fail "SIGTERM must not requeue"; fi
[[ $(job_field "$job" Restarts) == 0 ]] || fail "job $job was restarted"
grep -qF -- 'MPIPE_RESUME=1 sbatch --dependency=afterany:' "$(out "$job")" ||
  fail "job $job printed no resume command"
echo "ok 3 (${SECONDS} s): job $job stopped on SIGTERM at step $step3, printed the resume command, no requeue"

# --- 4. resume by hand with the printed command, to a step count within reach ------------------
final=$((step3 + 20))
job=$(MPIPE_RESUME=1 sbatch --parsable --ntasks 2 "$sbatch_script" "$config" "${long[@]}" \
  --run-dir "$run_dir" --set train.steps=$final)
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "resumed job $job ended $state"
grep -q "\"steps\": $final" "$run_dir/summary.json" 2>/dev/null ||
  fail "no summary.json with $final steps in $run_dir"
echo "ok 4 (${SECONDS} s): job $job resumed at $step3 and finished at step $final"

# --- 5. a bad experiment fails the job ----------------------------------------------------------
job=$(sbatch --parsable --ntasks 2 "$sbatch_script" "$config" --set optimizer.lr=-1)
state=$(wait_until_done "$job")
[[ "$state" == FAILED ]] || fail "job $job with optimizer.lr=-1 ended $state, not FAILED"
grep -q 'optimizer.lr: must be > 0, got -1' "$(out "$job")" ||
  fail "job $job did not report the bad key"
echo "ok 5 (${SECONDS} s): job $job with a bad config FAILED and named the key"

failed=0
echo "PASS: local Slurm checks of scripts/slurm/train.sbatch (${SECONDS} s)"
