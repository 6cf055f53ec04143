# Sourced by the tests in tests/multihost/: three hosts on this machine (network namespaces on a bridge, own host names and node-local run directories), mpirun across them, and teardown on every exit.
# shellcheck shell=bash
#
#   source "$(dirname "$0")/hosts.sh"   # exits 77 (skipped) without root, ip or network namespaces
#   start_hosts                         # h1 h2 h3 at 10.77.0.1-3/24 (start_host 2: h2 again)
#   on_hosts h1:1 h2:1 h3:1 -- train EXP.yaml --run-dir "$LOCAL/run" ...   # mpirun from h1
#   same A B                            # compares $WORK/A.safetensors with $WORK/B.safetensors
#
# Host hN is the network namespace ${PREFIX}hN (PREFIX is unique to this test run, so runs never
# share a namespace, link or bridge): a veth pair whose outer end is in the bridge ${PREFIX}br
# in the root namespace (which holds no address: two test runs' 10.77.0.0/24 never meet), and
# inside, eth0 with 10.77.0.N/24 and lo. Every process on a host runs under `host_exec` (a
# script): `ip netns exec`, then `unshare --uts --mount` with its own host name and
# $WORK/hN bind-mounted on $LOCAL, so the same path is a different, node-local directory on
# each host (no shared file system for run directories; the binary and configs are on the
# root file system, the same copy on every host). Its mounts are slaves of the root namespace's,
# so a host started again (start_host), whose namespace file `ip netns add` mounts there, is
# seen from the hosts already running. mpirun runs on h1 and starts the other hosts'
# orted through the plm_rsh_agent script `rsh_agent`, which runs its arguments through a shell
# on that host. Teardown (trap on EXIT, INT, TERM): every process in a host's namespace killed
# by pid (`ip netns pids`), the namespaces, veth links and bridge deleted, whatever the test
# mounted under $WORK unmounted; $WORK removed unless
# KEEP_WORK is set or a test failed (then its path is printed).
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=${MPIPE_TEST_THREADS:-1} OMP_WAIT_POLICY=PASSIVE  # threads per rank
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}  # (the one selected anyway: see tests/e2e/lib.sh)

skip() {
  echo "SKIPPED: $*"
  exit 77
}
((EUID == 0)) || skip "needs root (network namespaces)"
for tool in ip unshare mpirun mount; do
  command -v "$tool" >/dev/null || skip "$tool not found (scripts/test installs scripts/packages-test.txt)"
done
MPIPE=$(realpath "${MPIPE:?path of the mpipe binary}")
PREFIX=mh$$
HOSTS=(h1 h2 h3)
WORK=$(mktemp -d /tmp/mpipe-multihost.XXXXXX)
LOCAL=$WORK/local  # each host's own run directories, at the same path on every host
passed=0 budget=

# The Open MPI settings every multi-host run uses: the transports and the one network
# (10.77.0.0/24) for Open MPI's own traffic (oob) and the ranks' (btl).
MCA=(--mca plm_rsh_agent "$WORK/rsh_agent" --mca oob_tcp_if_include 10.77.0.0/24
  --mca btl_tcp_if_include 10.77.0.0/24)

# Removes everything start_hosts made, by name and pid; safe to call twice and after a
# partial start. A namespace is deleted once its processes are gone: a process still exiting
# holds its mount namespace, and with it a copy of the namespace's file, which `ip netns del`
# then cannot remove.
stop_hosts() {
  local host ns pid
  for host in "${HOSTS[@]}"; do
    for pid in $(ip netns pids "$PREFIX$host" 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  for host in "${HOSTS[@]}"; do
    ns=$PREFIX$host
    for _ in $(seq 50); do
      [[ -e /var/run/netns/$ns ]] || break
      [[ -n $(ip netns pids "$ns" 2>/dev/null) ]] || ip netns del "$ns" 2>/dev/null || true
      [[ -e /var/run/netns/$ns ]] && sleep 0.1
    done
    [[ ! -e /var/run/netns/$ns ]] || echo "multihost: could not delete the namespace $ns" >&"$console"
  done
  # (A deleted namespace takes its veth pair along, so most of these are gone already.)
  for host in "${HOSTS[@]}"; do
    ip link del "${PREFIX}$host" 2>/dev/null || true
  done
  ip link del "${PREFIX}br" 2>/dev/null || true
  # A test's own mounts in the root namespace (a host's disk made small), innermost first.
  findmnt -rn -o TARGET | grep "^$WORK/" | sort -r | xargs -r -n 1 umount -l 2>/dev/null || true
}

# The EXIT trap: tears the hosts down; keeps $WORK when a check failed or KEEP_WORK is set.
finish() {
  local status=$?
  kill "$budget" 2>/dev/null || true
  stop_hosts
  if ((passed)) && [[ -z "${KEEP_WORK:-}" ]]; then
    rm -rf "$WORK"
  else
    echo "multihost: files kept in $WORK" >&"$console"
  fi
  exit "$status"
}
exec {console}>&2  # the test's own stderr, for the traps (which may run inside a redirection)
trap finish EXIT
trap 'echo "FAILED: stopped by a signal" >&"$console"; exit 1' INT TERM
# ctest ends a test past its TIMEOUT with SIGKILL, which no trap sees: end it (and tear down)
# earlier, after MPIPE_MULTIHOST_BUDGET seconds (150 by default; a wait already under way, at
# most 120 s, finishes first).
(
  sleep "${MPIPE_MULTIHOST_BUDGET:-150}" &
  trap 'kill $!; exit 0' TERM
  wait $! && echo "FAILED: over the budget of ${MPIPE_MULTIHOST_BUDGET:-150} s" >&2 && kill -TERM $$
) &
budget=$!

# start_host N: host hN on the bridge: its namespace, veth pair and address; again, after
# lose_host_after deleted it (a node that comes back, its disk $WORK/hN as it was).
start_host() {
  local n=$1 host=h$1
  local ns=$PREFIX$host
  mkdir -p "$WORK/$host" "$LOCAL"
  # (A deleted namespace's veth pair may take a moment to go.)
  for _ in $(seq 50); do
    ip link show "${PREFIX}$host" > /dev/null 2>&1 || break
    sleep 0.1
  done
  ip netns add "$ns"
  ip link add "${PREFIX}$host" type veth peer name "${PREFIX}e$n"
  ip link set "${PREFIX}e$n" netns "$ns"
  ip link set "${PREFIX}$host" master "${PREFIX}br" up
  ip -n "$ns" link set "${PREFIX}e$n" name eth0
  ip -n "$ns" addr add "10.77.0.$n/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}

start_hosts() {
  ip netns add "${PREFIX}probe" 2>/dev/null || skip "ip netns add does not work here"
  ip netns exec "${PREFIX}probe" unshare --uts --mount true 2>/dev/null || {
    ip netns del "${PREFIX}probe"
    skip "no host names or mounts of its own in a network namespace here (unshare --uts --mount)"
  }
  ip netns del "${PREFIX}probe"
  ip link add "${PREFIX}br" type bridge
  ip link set "${PREFIX}br" up
  for n in 1 2 3; do start_host "$n"; done
  # host_exec HOST COMMAND...: runs COMMAND (one shell command line) on HOST.
  cat > "$WORK/host_exec" <<EOF
#!/bin/sh
# Runs a shell command line on host \$1 (one of this test's network namespaces).
host=\$1
shift
exec ip netns exec "$PREFIX\$host" unshare --uts --mount --propagation slave sh -c \\
  "hostname \$host && mount --bind $WORK/\$host $LOCAL && exec \$*"
EOF
  # Open MPI calls the agent as `rsh_agent HOST COMMAND...` to start its daemon on HOST. Like
  # ssh, it stays on the calling host while the command runs there, and says so when the other
  # end dies (ssh: "Connection to HOST closed by remote host."). Like ssh with
  # `-o ServerAliveInterval=5 -o ServerAliveCountMax=3` (docs/multinode.md), it gives up on a
  # host that does not answer for 15 s (every process there stopped: a frozen node), and exits
  # 255 (ssh: "Timeout, server HOST not responding."): after the watchdog has ended the ranks.
  cat > "$WORK/rsh_agent" <<EOF
#!/bin/sh
# Open MPI's plm_rsh_agent for this test's hosts (its ssh): runs its command line on host \$1.
"$WORK/host_exec" "\$@" <&0 &
command=\$!
silent=0
while [ -n "\$(ps -o stat= -p \$command | grep -v '^Z')" ]; do
  answers=0
  for pid in \$(ip netns pids "$PREFIX\$1"); do
    [ "\$(ps -o stat= -p \$pid | cut -c1)" = T ] || answers=1
  done
  if [ \$answers = 1 ]; then silent=0; else silent=\$((silent + 1)); fi
  if [ \$silent -ge 15 ]; then
    echo "rsh_agent: lost host \$1: it does not answer (every process there is stopped)" >&2
    exit 255
  fi
  sleep 1
done
status=0
wait \$command || status=\$?
if [ \$status -gt 128 ]; then
  echo "rsh_agent: lost host \$1: its Open MPI daemon was killed (signal \$((status - 128)))" >&2
  exit 255
fi
exit \$status
EOF
  chmod +x "$WORK/host_exec" "$WORK/rsh_agent"
}

# on_hosts HOST:SLOTS... -- MPIPE_ARGS...: runs mpipe on the given hosts (one rank per slot,
# in host order) with mpirun started on the first host, the btl from $BTL (tcp,self by
# default). Output goes to stdout; the exit status is mpirun's (timeout 120 s: 124).
on_hosts() {
  local hostlist=() first=
  while [[ $1 != -- ]]; do
    hostlist+=("$1")
    [[ -n $first ]] || first=${1%%:*}
    shift
  done
  shift
  local hosts ranks=0 spec
  hosts=$(IFS=,; echo "${hostlist[*]}")
  for spec in "${hostlist[@]}"; do ranks=$((ranks + ${spec#*:})); done
  local command=(timeout 120 mpirun -n "$ranks" --host "$hosts" --wdir "$LOCAL" --bind-to none
    --mca btl "${BTL:-tcp,self}" "${MCA[@]}" -x OMP_NUM_THREADS
    -x OMP_WAIT_POLICY "$MPIPE" "$@")
  "$WORK/host_exec" "$first" "$(printf '%q ' "${command[@]}")"
}

# train_on NAME HOST:SLOTS... -- [mpipe train args...]: trains into $LOCAL/NAME on every
# host and copies the first host's exported weights to $WORK/NAME.safetensors; output in
# $WORK/NAME.log, shown with the failure.
train_on() {
  local name=$1 hostlist=()
  shift
  while [[ $1 != -- ]]; do
    hostlist+=("$1")
    shift
  done
  shift
  on_hosts "${hostlist[@]}" -- train "$@" --run-dir "$LOCAL/$name" \
    --export-weights "$LOCAL/$name.safetensors" > "$WORK/$name.log" 2>&1 || {
    local status=$?
    cat "$WORK/$name.log"
    echo "FAILED: $name (exit status $status)"
    exit 1
  }
  cp "$WORK/${hostlist[0]%%:*}/$name.safetensors" "$WORK/$name.safetensors"
}

# train_here RANKS NAME [mpipe train args...]: the same run on one host (this machine, shared
# memory), into $WORK/NAME, weights in $WORK/NAME.safetensors.
train_here() {
  local ranks=$1 name=$2
  shift 2
  timeout 120 mpirun -n "$ranks" --oversubscribe --bind-to none "$MPIPE" train "$@" \
    --run-dir "$WORK/$name" --export-weights "$WORK/$name.safetensors" \
    > "$WORK/$name.log" 2>&1 || {
    local status=$?
    cat "$WORK/$name.log"
    echo "FAILED: $name (exit status $status)"
    exit 1
  }
}

# lost_hosts_give_up_fast: a lost host is given up by TCP, not by Open MPI: mpirun's messages to a
# lost host's daemon, and that daemon's forwarding of its rank's output, wait for the kernel's
# retransmissions to give up, and the default (net.ipv4.tcp_retries2 = 15) takes about 15
# minutes. 4 gives up after 6.2 s (0.2 s doubling 5 times); set per host, like a node's sysctl.
lost_hosts_give_up_fast() {
  local host
  for host in "${HOSTS[@]}"; do
    ip netns exec "$PREFIX$host" sysctl -qw net.ipv4.tcp_retries2=4
  done
}

# lose_host_after HOST METRICS STEPS LOG: once METRICS (a metrics.jsonl) holds STEPS lines, every
# process of HOST killed and then HOST itself gone (its namespace deleted, so a probe finds no
# host); sets $killed_at_step (the lines logged then). Fails, showing LOG, when the run never
# gets there (a minute at most).
lose_host_after() {
  local host=$1 metrics=$2 steps=$3 log=$4 pid
  for _ in $(seq 1200); do
    [[ -f $metrics && $(wc -l < "$metrics") -ge $steps ]] && break
    sleep 0.05
  done
  [[ -f $metrics && $(wc -l < "$metrics") -ge $steps ]] ||
    { cat "$log"; echo "FAILED: never reached step $steps"; exit 1; }
  # shellcheck disable=SC2034  # (read by the test that called)
  killed_at_step=$(wc -l < "$metrics")
  for pid in $(ip netns pids "$PREFIX$host"); do kill -KILL "$pid"; done
  for _ in $(seq 50); do
    ip netns del "$PREFIX$host" 2>/dev/null && break
    sleep 0.1
  done
}

# lose_host_at_launch HOST N: after start_hosts, the Nth start of an Open MPI daemon on HOST (its
# Nth call of the rsh agent: a job's or a probe's) finds HOST gone: every process there killed
# and its namespace deleted first (a host lost while mpirun launches a job).
lose_host_at_launch() {
  rm -f "$WORK/$1.launches"
  mv "$WORK/rsh_agent" "$WORK/rsh_agent.hosts"
  cat > "$WORK/rsh_agent" <<EOF
#!/bin/sh
# The rsh agent, but host $1 is lost at its daemon's start number $2.
if [ "\$1" = $1 ]; then
  echo >> "$WORK/$1.launches"
  if [ "\$(wc -l < "$WORK/$1.launches")" -eq $2 ]; then
    for pid in \$(ip netns pids "$PREFIX$1"); do kill -KILL "\$pid"; done
    for _ in \$(seq 50); do ip netns del "$PREFIX$1" 2>/dev/null && break; sleep 0.1; done
  fi
fi
exec "$WORK/rsh_agent.hosts" "\$@"
EOF
  chmod +x "$WORK/rsh_agent"
}

# nothing_left SECONDS HOST...: whether within SECONDS no process is left on the HOSTs (each
# host's daemon ends its ranks and itself once it has lost mpirun); lists what is left if not.
nothing_left() {
  local seconds=$1 host left
  shift
  for _ in $(seq $((seconds * 10))); do
    left=
    for host in "$@"; do left+=$(ip netns pids "$PREFIX$host" 2>/dev/null); done
    [[ -z $left ]] && return 0
    sleep 0.1
  done
  for host in "$@"; do ip netns pids "$PREFIX$host" 2>/dev/null | xargs -r ps -o pid,stat,args -p; done
  return 1
}

# same A B: the exported weights of runs A and B are bit-identical.
same() {
  "$MPIPE" compare "$WORK/$1.safetensors" "$WORK/$2.safetensors" --rtol 0 ||
    { echo "FAILED: $1 vs $2"; exit 1; }
}
