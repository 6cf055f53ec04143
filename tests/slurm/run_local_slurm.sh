#!/usr/bin/env bash
# Starts a throwaway single-node Slurm (munged, slurmctld, slurmd) and checks scripts/slurm/train.sbatch under it.
#
#   MPIPE_BIN=build/release/apps/mpipe tests/slurm/run_local_slurm.sh
#
# Needs root (it installs slurm-wlm and munge with apt-get if they are missing, and runs the
# daemons). Everything lives in a scratch folder under /tmp that is removed afterwards (kept,
# and its path printed, when a check fails or MPIPE_KEEP_SCRATCH=1). The daemons listen on
# two free TCP ports, so it does not disturb another Slurm on the machine. Not part of ctest:
# installing Slurm is too slow for CI. Checks:
#   1. a 20-step run on 2 tasks ends COMPLETED with summary.json in runs/<stem>-<jobid>;
#   2. SIGUSR1 to the batch shell (what --signal=B:USR1@120 sends before the time limit)
#      reaches mpipe through srun: it checkpoints and stops, the job ends COMPLETED, and with
#      MPIPE_RESUBMIT=1 a follow-up job resumes from that checkpoint;
#   3. SIGTERM stops the follow-up the same way and does not resubmit;
#   4. the printed MPIPE_RESUME=1 command (with a step count within reach) finishes the run;
#   5. a bad experiment file makes the job FAILED, with mpipe's error in the output.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
MPIPE_BIN=$(realpath "${MPIPE_BIN:-$repo/build/release/apps/mpipe}")
export MPIPE_BIN
timeout_s=${MPIPE_SLURM_TIMEOUT:-180}
sbatch_script=$repo/scripts/slurm/train.sbatch
config=$repo/tests/e2e/files/mlp.yaml

[[ -x "$MPIPE_BIN" ]] || { echo "FAIL: $MPIPE_BIN is not an executable (set MPIPE_BIN)"; exit 1; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "installing slurm-wlm munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurm-wlm munge >/dev/null
fi

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
  if [[ -f "$scratch/slurmctld.pid" ]]; then scancel --user="$(id -un)" 2>/dev/null || true; fi
  sleep 1
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

fail() {
  echo "FAIL: $*"
  for f in "$scratch"/work/runs/slurm-*.out; do
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
AuthInfo=socket=$scratch/munge.sock
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
echo "slurm up (ports $ctld_port/$slurmd_port, $cpus CPUs), scratch $scratch"

# --- helpers ------------------------------------------------------------------------------------
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }

wait_until_done() {  # job id -> prints the final state
  local deadline=$((SECONDS + timeout_s)) state
  while :; do
    state=$(job_state "$1")
    case $state in
      PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | "") ;;
      *) echo "$state"; return 0 ;;
    esac
    ((SECONDS < deadline)) || { echo "TIMEOUT($state)"; return 0; }
    sleep 1
  done
}

wait_for_line() {  # file, fixed string: wait until the file contains it
  local deadline=$((SECONDS + timeout_s))
  until grep -qF -- "$2" "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "timed out waiting for '$2' in $1"
    sleep 0.5
  done
}

newest_checkpoint_step() {  # run dir -> step number of the newest checkpoint
  local newest
  newest=$(find "$1/checkpoints" -maxdepth 1 -name 'step_*' -printf '%f\n' | sort | tail -n 1)
  [[ -n "$newest" ]] || return 1
  echo $((10#${newest#step_}))
}

cd "$scratch/work"
out() { echo "runs/slurm-$1.out"; }

# --- 1. a short run completes -------------------------------------------------------------------
job=$(sbatch --parsable --ntasks 2 "$sbatch_script" "$config" --set train.steps=20)
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state"
summary=runs/mlp-$job/summary.json
[[ -f "$summary" ]] || fail "no $summary"
grep -q '"steps": 20' "$summary" || fail "$summary does not say 20 steps"
grep -q '"stages": 2' "$summary" || fail "$summary does not say 2 stages"
echo "ok 1: job $job COMPLETED, $summary written"

# --- 2. SIGUSR1 to the batch shell: checkpoint, stop, resubmit ---------------------------------
long=(--set train.steps=1000000 --set log.every=100)
job=$(MPIPE_RESUBMIT=1 sbatch --parsable --ntasks 2 "$sbatch_script" "$config" "${long[@]}")
run_dir=runs/mlp-$job
wait_for_line "$run_dir/metrics.jsonl" '"step"'  # mpipe is training (signal handlers installed)
scancel --signal=USR1 --batch "$job"
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "signalled job $job ended $state"
grep -q 'stopped at step' "$(out "$job")" || fail "mpipe did not report the stop"
[[ ! -f "$run_dir/summary.json" ]] || fail "a stopped run wrote summary.json"
step1=$(newest_checkpoint_step "$run_dir") || fail "no checkpoint after the stop"
next=$(sed -n 's/^train.sbatch: submitted job \([0-9]*\) to resume.*/\1/p' "$(out "$job")")
[[ -n "$next" ]] || fail "job $job did not resubmit itself"
echo "ok 2: job $job stopped on SIGUSR1 with checkpoint step $step1, resubmitted as job $next"

# --- 3. the follow-up resumes; SIGTERM stops it without another resubmission -------------------
wait_for_line "$(out "$next")" "resumed from step $step1"
sleep 2
scancel --signal=TERM --batch "$next"
state=$(wait_until_done "$next")
[[ "$state" == COMPLETED ]] || fail "job $next ended $state"
step2=$(newest_checkpoint_step "$run_dir") || fail "no checkpoint"
((step2 > step1)) || fail "job $next did not get past step $step1 (newest checkpoint $step2)"
if grep -q 'submitted job' "$(out "$next")"; then fail "SIGTERM must not resubmit"; fi
grep -qF -- 'MPIPE_RESUME=1 sbatch --dependency=afterany:' "$(out "$next")" ||
  fail "job $next printed no resume command"
echo "ok 3: job $next resumed at $step1, stopped on SIGTERM at $step2, no resubmission"

# --- 4. resume by hand with the printed command, to a step count within reach ------------------
final=$((step2 + 20))
job=$(MPIPE_RESUME=1 sbatch --parsable --ntasks 2 "$sbatch_script" "$config" "${long[@]}" \
  --run-dir "$run_dir" --set train.steps=$final)
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "resumed job $job ended $state"
grep -q "\"steps\": $final" "$run_dir/summary.json" 2>/dev/null ||
  fail "no summary.json with $final steps in $run_dir"
echo "ok 4: job $job resumed at $step2 and finished at step $final"

# --- 5. a bad experiment fails the job ----------------------------------------------------------
job=$(sbatch --parsable --ntasks 2 "$sbatch_script" "$config" --set train.steps=0)
state=$(wait_until_done "$job")
[[ "$state" == FAILED ]] || fail "job $job with train.steps=0 ended $state, not FAILED"
grep -q 'train.steps: must be >= 1' "$(out "$job")" || fail "job $job did not report the bad key"
echo "ok 5: job $job with a bad config FAILED and named the key"

failed=0
echo "PASS: local Slurm checks of scripts/slurm/train.sbatch"
