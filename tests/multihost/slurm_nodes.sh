# Sourced after hosts.sh by the two-node Slurm tests: a Slurm cluster on the test's hosts (slurmctld and munged on h1, slurmd on h2 and h3), torn down with the hosts.
# shellcheck shell=bash
#
#   source "$(dirname "$0")/hosts.sh"
#   source "$(dirname "$0")/slurm_nodes.sh"   # exits 77 (skipped) without slurm-wlm or munge
#   start_hosts
#   start_slurm_nodes                          # nodes h2 and h3 idle, partition "nodes"
#   on_head sbatch -N2 ...                     # Slurm's commands run on h1, the head node
#
# The daemons are Debian's own, started on their host with `nsenter --net` and `unshare --uts`
# (a host name of their own); `ip netns exec` would remount /sys and break slurmd's cgroup
# set-up. They are processes in the hosts' namespaces, so the harness's teardown kills them by
# pid with everything else. slurm.conf names each node's address (NodeAddr=10.77.0.N) and gives
# each node its own TmpFS, spool and log (%n), so that pmix on the two nodes never shares a
# folder in /tmp. Jobs see the root file system, as a cluster's shared file system: the submit
# directory $WORK/jobs is the same folder on every node (unlike the per-host $LOCAL).
for tool in munged slurmctld slurmd sbatch scontrol nsenter; do
  command -v "$tool" >/dev/null || skip "$tool not found (scripts/test installs scripts/packages-test.txt)"
done
export SLURM_CONF=$WORK/slurm/slurm.conf
JOBS=$WORK/jobs

# on_node HOST COMMAND...: runs COMMAND in HOST's network namespace, under HOST's name.
on_node() {
  local host=$1
  shift
  # shellcheck disable=SC2016  # $0 and $@ are the inner shell's: the host name and the command
  nsenter --net="/var/run/netns/$PREFIX$host" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
    "$host" "$@"
}
# on_head COMMAND...: a command on the head node h1, where Slurm's commands reach slurmctld.
on_head() { on_node h1 "$@"; }
# Slurm's commands, for the test and the waits of tests/slurm/job_waits.sh: run on the head.
# sbatch passes its environment to the job: the ranks' TCP traffic stays on the hosts' network.
sbatch() { OMPI_MCA_btl_tcp_if_include=10.77.0.0/24 on_head sbatch "$@"; }
scontrol() { on_head scontrol "$@"; }
scancel() { on_head scancel "$@"; }
squeue() { on_head squeue "$@"; }
sinfo() { on_head sinfo "$@"; }

# fail MESSAGE: ends the test, with the jobs' output and the daemons' logs.
fail() {
  local f
  echo "FAILED: $*"
  for f in "$JOBS"/runs/slurm-*.out "$WORK"/slurm/*.log; do
    [[ -f "$f" ]] && { echo "--- $f"; tail -n 30 "$f"; }
  done
  exit 1
}
# shellcheck source=tests/slurm/job_waits.sh
source "$(dirname "${BASH_SOURCE[0]}")/../slurm/job_waits.sh"
# shellcheck source=tests/slurm/slurm_settings.sh
source "$(dirname "${BASH_SOURCE[0]}")/../slurm/slurm_settings.sh"

start_slurm_nodes() {
  local dir=$WORK/slurm n
  mkdir -p "$dir/state" "$JOBS/runs"
  for n in 2 3; do mkdir -p "$dir/spool-h$n" "$dir/tmp-h$n"; done
  dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge.key"
  on_head munged --force --origin=10.77.0.1 --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
    --log-file="$dir/munged.log" --pid-file="$dir/munged.pid" --seed-file="$dir/munged.seed"
  cat > "$SLURM_CONF" <<EOF
ClusterName=mpipe-hosts
SlurmctldHost=h1(10.77.0.1)
$(slurm_shared_settings "$dir")
SlurmdSpoolDir=$dir/spool-%n
TmpFS=$dir/tmp-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
# A node set DOWN stays down until scontrol sets it back (2 would let it return as soon
# as its slurmd registers again, a second later).
ReturnToService=1
# A lost node (tests/multihost/slurm.sh, 5.): srun ends a step that lost one KillWait + 2 s after
# the step was aborted (30 s by default), and slurmctld sets it DOWN, ending what the job still
# holds there, after SlurmdTimeout without an answer (Slurm's default, written out: the test's
# bound on a recovery must stay far below it).
KillWait=5
SlurmdTimeout=300
NodeName=h2 NodeAddr=10.77.0.2 CPUs=2 State=UNKNOWN
NodeName=h3 NodeAddr=10.77.0.3 CPUs=2 State=UNKNOWN
PartitionName=nodes Nodes=h2,h3 Default=YES MaxTime=INFINITE State=UP
EOF
  on_head slurmctld -f "$SLURM_CONF"
  for n in 2 3; do on_node "h$n" slurmd -f "$SLURM_CONF" -N "h$n"; done
  local deadline=$((SECONDS + 60))
  until [[ $(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l) == 2 ]]; do
    ((SECONDS < deadline)) || fail "the nodes h2 and h3 did not become idle"
    sleep 0.5
  done
}
