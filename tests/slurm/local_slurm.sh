# Sourced by the tests in tests/slurm/: starts a throwaway single-node Slurm (munged, slurmctld, slurmd) and stops it on every exit; fail() and wait helpers.
# shellcheck shell=bash disable=SC2034  # the variables it sets are for the test that sources it
#
#   source "$(dirname "$0")/local_slurm.sh"
#   start_local_slurm      # exits the test with FAIL when something is missing or does not start
#   cd "$scratch/work"     # runs/ exists; jobs' logs there and in logs/ are shown by fail()
#   ... sbatch, wait_until_done JOB, fail "message" ...
#   failed=0               # at the end of a passing test: the scratch folder is removed
#
# Needs root (it runs the daemons) and the Debian packages slurm-wlm and munge, which
# scripts/test installs from scripts/packages-test.txt. Everything lives in a scratch folder
# under /tmp that is removed afterwards (kept, and its path printed, when a check fails or
# MPIPE_KEEP_SCRATCH=1); the daemons are stopped on every exit. They listen on two free TCP
# ports, so another Slurm on the machine is not disturbed. Slurm holds a requeued job for its
# credential lifetime plus 1 s (2 min by default); here 5 + 1 s (AuthInfo cred_expire), and the
# schedulers look every second. A deadline of its own (MPIPE_SLURM_BUDGET seconds, 240 by
# default) ends the test, and stops the daemons, before ctest's timeout would kill it with SIGKILL.
# Sets: repo, MPIPE_BIN (absolute, exported), SLURM_CONF (exported), scratch, timeout_s (each
# wait's limit, MPIPE_SLURM_TIMEOUT or 180 s: tests/slurm/job_waits.sh, whose helpers it
# brings), failed (1 until the test sets 0), fail_logs (more files for fail() to show).

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MPIPE_BIN=$(realpath "${MPIPE_BIN:-$repo/build/release/apps/mpipe}")
export MPIPE_BIN
fail_logs=()
# shellcheck source=tests/slurm/job_waits.sh
source "$repo/tests/slurm/job_waits.sh"
# shellcheck source=tests/slurm/slurm_settings.sh
source "$repo/tests/slurm/slurm_settings.sh"

start_local_slurm() {
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
  trap cleanup EXIT
  # ctest kills a test that runs past its TIMEOUT with SIGKILL, which skips the EXIT trap and
  # would leave the daemons running: end the test (and stop them) well before that.
  trap 'echo "FAIL: stopped by a signal"; exit 1' TERM INT
  (sleep "${MPIPE_SLURM_BUDGET:-240}" && kill -TERM $$) >/dev/null 2>&1 &
  watchdog=$!

  # --- munge with its own key and socket -----------------------------------------------------
  dd if=/dev/urandom of="$scratch/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$scratch/munge.key"
  munged --force --socket="$scratch/munge.sock" --key-file="$scratch/munge.key" \
    --log-file="$scratch/munged.log" --pid-file="$scratch/munged.pid" \
    --seed-file="$scratch/munged.seed"

  # --- slurm.conf: one node (this machine), one partition --------------------------------------
  # Below the kernel's ephemeral range (32768 on): a port picked there could be handed to another
  # test's connection (Open MPI's, multihost.slurm's) between the check and slurmctld's bind
  # ("Address already in use" once, with multihost.slurm beside it).
  ctld_port=$(free_port $((20000 + RANDOM % 12000)))
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
$(slurm_shared_settings "$scratch")
SlurmdSpoolDir=$scratch/spool
SlurmctldPidFile=$scratch/slurmctld.pid
SlurmdPidFile=$scratch/slurmd.pid
SlurmctldLogFile=$scratch/slurmctld.log
SlurmdLogFile=$scratch/slurmd.log
ReturnToService=2
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
}

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

fail() {
  echo "FAIL: $*"
  for f in "$scratch"/work/runs/slurm-*.out "$scratch"/work/logs/*.log "${fail_logs[@]}"; do
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
