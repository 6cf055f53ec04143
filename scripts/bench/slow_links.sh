#!/usr/bin/env bash
# Communication over slow links: K=2 (M=8) and D=2 (batch 256, and 1024 for a backward long enough to hide the allreduce) of configs/scaling_mlp.yaml, and K=2 (M=16) of a 24-block version whose stages outrun a 100 Mbit/s link, on two hosts (network namespaces, tests/multihost/hosts.sh), each link limited to 1 Gbit/s or 100 Mbit/s by tc's tbf, without and with comm.progress_thread. Needs root; about 6 minutes a round on 2 idle cores (3 rounds by default).
#
#   scripts/bench/slow_links.sh
#
# ROUNDS rounds, each running every link rate (unlimited, 1gbit, 100mbit), layout and
# progress-thread setting once, STEPS steps a run (8 for D=2 at 100 Mbit/s; logged in 4 windows,
# the first dropped). Per cell, the median over the rounds (and the step's range) of: the step
# (from samples/s), each stage's compute and waiting (summary.json), the bytes that crossed the
# links per step (the veth counters over the run: start-up and the final evaluation included,
# about 0.5 MB per link per step at STEPS=20), the kernel's softirq CPU time per step; then
# mpipe plan's predicted step, the transfer time at the link's rate of what the step itself
# must move over the busier link (from the plan: a boundary's activations, M micro-batches of
# its rows, whose gradients cross the other link meanwhile; D=2's reduce-scatter and allgather,
# the stage's gradient, over both links at once), and the share of that transfer hidden behind
# compute, twice: by the step, 1 - (step - unlimited step) / transfer, and by the wait,
# 1 - (waiting - unlimited waiting) / transfer (the stages' mean waiting: D=2's is its wait for
# the allreduce, which the compute's run-to-run spread does not move), each against the same
# layout and setting on unlimited links. Each host is one rank with one thread. Run it on an
# idle machine.
#
# Environment: MPIPE_BIN (default build/release/apps/mpipe), STEPS (default 20), ROUNDS (default
# 3), RATES (default "unlimited 1gbit 100mbit"), LAYOUTS (names to run, default all: "K=2 M=8",
# "D=2 M=1", "D=2 B=1024", "K=2 deep").
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
export MPIPE=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x $MPIPE ]] || { echo "slow_links.sh: $MPIPE is not an executable (build it)" >&2; exit 2; }
export MPIPE_MULTIHOST_BUDGET=${MPIPE_MULTIHOST_BUDGET:-1200}
# shellcheck source=tests/multihost/hosts.sh
source tests/multihost/hosts.sh
steps=${STEPS:-20}
rounds=${ROUNDS:-3}
rates=${RATES:-unlimited 1gbit 100mbit}
start_hosts

bits_per_s() {  # 1gbit, 100mbit -> bits per second
  awk -v r="$1" 'BEGIN { n = r + 0; if (r ~ /gbit$/) n *= 1e9; else if (r ~ /mbit$/) n *= 1e6; print n }'
}
# limit RATE: every host's outgoing traffic limited to RATE (tc tbf), or not ("unlimited").
# TCP over veth sends segments of up to 64 KB, and tbf cuts a packet larger than its buckets into
# MTU-sized ones in software: with a 64 KB burst that cost 440 ms of softirq CPU per D=2 step at
# 1 Gbit/s (/proc/stat), taken from the compute the transfer was to hide behind (a real NIC
# shapes in hardware). Hence a 256 KB burst, and a peak rate of 1.01 x RATE over a 72000-byte
# bucket, so that a segment passes whole but an idle link's bucket cannot send a message faster
# than RATE: only one segment (5 ms at 100 Mbit/s) leaves at once.
limit() {
  local host peak
  peak=$(awk -v n="$(bits_per_s "$1")" 'BEGIN { printf "%.0fbit", 1.01 * n }')
  for host in h1 h2; do
    ip netns exec "$PREFIX$host" tc qdisc del dev eth0 root 2>/dev/null || true
    [[ $1 == unlimited ]] ||
      ip netns exec "$PREFIX$host" tc qdisc add dev eth0 root tbf rate "$1" burst 256kb \
        latency 400ms peakrate "$peak" mtu 72000
  done
}
softirq_ms() {  # CPU time in softirqs so far, all cores (the kernel's network work)
  local ticks
  read -r _ _ _ _ _ _ _ ticks _ </proc/stat
  echo $((ticks * 1000 / $(getconf CLK_TCK)))
}
sent() {  # what host $1 sent over its link so far
  cat "/sys/class/net/${PREFIX}$1/statistics/rx_bytes"
}

# NAME:BATCH:CONFIG:ARGS (the batch of both configs is 256). deep_mlp is scaling_mlp with 24
# blocks in place of 8: at 100 Mbit/s a stage's forward of a micro-batch (12 blocks) outlasts its
# activation's 15 ms on the link, which scaling_mlp's 4 blocks (6 ms) do not, so only there can
# a fill-drain pipeline hide nearly all of its transfers (M=16: the first activation and the last
# gradient, which nothing can hide, are 2 of 32 messages).
deep_mlp=$WORK/deep_mlp.yaml
sed 's/repeat: 8$/repeat: 24/' configs/scaling_mlp.yaml >"$deep_mlp"
grep -q 'repeat: 24$' "$deep_mlp" || { echo "slow_links.sh: no 'repeat: 8' in scaling_mlp.yaml" >&2; exit 2; }
mlp=$repo/configs/scaling_mlp.yaml
all_layouts=("K=2 M=8:256:$mlp:--set pipeline.stages=2 --set pipeline.micro_batches=8 --set pipeline.partition=[8,9]"
  "D=2 M=1:256:$mlp:--set pipeline.stages=1 --set pipeline.data_parallel=2 --set pipeline.micro_batches=1"
  "D=2 B=1024:1024:$mlp:--set pipeline.stages=1 --set pipeline.data_parallel=2 --set pipeline.micro_batches=1 --set train.batch_size=1024"
  "K=2 deep:256:$deep_mlp:--set pipeline.stages=2 --set pipeline.micro_batches=16 --set pipeline.partition=[24,25]")
layouts=()
for layout in "${all_layouts[@]}"; do
  [[ -z ${LAYOUTS:-} || " $LAYOUTS " == *" ${layout%%:*} "* ]] && layouts+=("$layout")
done
((${#layouts[@]} > 0)) || { echo "slow_links.sh: LAYOUTS names none of the layouts" >&2; exit 2; }
echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); mpipe $("$MPIPE" --version 2>/dev/null | head -n 1)"
echo "load before: $(uptime)"
# plan_step CONFIG LAYOUT_ARGS... : mpipe plan's step (ms) at this link rate and this machine's GEMM
# rate, and the bytes the step must move over the busier link: each boundary's activations
# (M micro-batches of its rows; their gradients go back over the other link), and with D
# replicas 2(D-1)/D of the largest stage's gradient (the reduce-scatter and the allgather).
plan_step() {
  local link=() config=$1
  shift
  [[ $rate == unlimited ]] || link=(--link-bandwidth "$rate")
  "$MPIPE" plan "$config" "$@" --threads-per-rank 1 --calibrate "${link[@]}" --json |
    /usr/bin/python3 -c '
import json, math, sys
p = json.load(sys.stdin)
rows = p["micro_batch_rows"] * p["micro_batches"]
stages = p["stage_plans"]
link = max([rows * 4 * math.prod(p["layers"][s["last_layer"]]["output"]) for s in stages[:-1]],
           default=0)
replicas = p["data_parallel"]
link += 2 * (replicas - 1) / replicas * 4 * max(s["num_params"] for s in stages)
print("%.1f %d" % (1e3 * p["step_s"], link))'
}
runs=$WORK/runs.tsv  # one line per run: its cell, then its numbers
for ((round = 1; round <= rounds; round++)); do
  for rate in $rates; do
    limit "$rate"
    for layout in "${layouts[@]}"; do
      name=${layout%%:*}
      batch=${layout#*:}
      batch=${batch%%:*}
      config=${layout#*:*:}
      config=${config%%:*}
      read -ra args <<<"${layout#*:*:*:}"
      read -r predicted link_bytes < <(plan_step "$config" "${args[@]}")
      # (The allreduce of D=2 takes seconds a step at 100 Mbit/s: fewer steps there.)
      run_steps=$steps
      [[ $rate == 100mbit && $name == D* ]] && run_steps=8
      for progress in false true; do
        run=r-${name//[ =]/}-$rate-$progress-$round
        before1=$(sent h1) before2=$(sent h2) softirq_before=$(softirq_ms)
        on_hosts h1:1 h2:1 -- train "$config" --run-dir "$LOCAL/$run" \
          "${args[@]}" --set train.steps="$run_steps" --set log.every=$((run_steps / 4)) \
          --set comm.progress_thread="$progress" >"$WORK/$run.log" 2>&1 ||
          { tail "$WORK/$run.log" >&2; echo "slow_links.sh: $run failed" >&2; exit 1; }
        sent1=$(($(sent h1) - before1)) sent2=$(($(sent h2) - before2))
        softirq=$(($(softirq_ms) - softirq_before))
        sps=$(python3 scripts/bench/throughput.py "$WORK/h1/$run")
        printf '%s\t' "$name" "$rate" "$progress" "$batch" "$predicted" "$sps" \
          "$WORK/h1/$run/summary.json" "$sent1" "$sent2" "$softirq" "$run_steps" "$link_bytes" \
          >>"$runs"
        bits_per_s "$rate" >>"$runs"
      done
    done
  done
  echo "round $round of $rounds done: $(uptime)"
done
limit unlimited
/usr/bin/python3 - "$runs" <<'EOF'
import json, statistics, sys

cells = {}  # (layout, rate, progress) -> its runs, cells in the order they first ran
for line in open(sys.argv[1]):
    name, rate, progress, batch, predicted, sps, summary, sent1, sent2, softirq, steps, \
        link_bytes, bps = line.rstrip("\n").split("\t")
    s = json.load(open(summary))
    steps, bps = int(steps), float(bps)
    cells.setdefault((name, rate, progress), []).append({
        "predicted": float(predicted),
        "step": 1e3 * float(batch) / float(sps),
        "compute": s["compute_ms_per_rank"], "waiting": s["waiting_ms_per_rank"],
        "mb": (int(sent1) + int(sent2)) / steps / 1e6,
        "softirq": int(softirq) / steps,
        # What the step must move over the busier link (the other carries its own meanwhile).
        "transfer": 1e3 * int(link_bytes) * 8 / bps if bps else None})


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def per_stage(runs, key):
    return [statistics.median(r[key][i] for r in runs) for i in range(len(runs[0][key]))]


print(f"{'layout':10} {'rate':9} {'progress':8} {'step ms (range)':>18} {'predicted':>9} "
      f"{'compute/waiting ms':>18} {'MB/step':>7} {'softirq':>7} {'transfer':>8} "
      f"{'hidden: by step':>15} {'by wait':>7}")
for (name, rate, progress), runs in cells.items():
    step = median(runs, "step")
    compute, waiting = per_stage(runs, "compute"), per_stage(runs, "waiting")
    split = " ".join(f"{c:.0f}/{w:.0f}" for c, w in zip(compute, waiting))
    spread = f"{step:.0f} ({min(r['step'] for r in runs):.0f}-{max(r['step'] for r in runs):.0f})"
    line = (f"{name:10} {rate:9} {progress:8} {spread:>18} {median(runs, 'predicted'):9.0f} "
            f"{split:>18} {median(runs, 'mb'):7.2f} {median(runs, 'softirq'):7.0f} ")
    base = cells.get((name, "unlimited", progress))
    if runs[0]["transfer"] is None or base is None:
        print(line + f"{'-':>8} {'-':>15} {'-':>7}")
        continue
    transfer = median(runs, "transfer")
    by_step = 1 - (step - median(base, "step")) / transfer
    by_wait = 1 - (statistics.mean(waiting) - statistics.mean(per_stage(base, "waiting"))) / transfer
    print(line + f"{transfer:8.0f} {100 * by_step:14.0f}% {100 * by_wait:6.0f}%")
EOF
echo "load after:  $(uptime)"
echo "(predicted: mpipe plan --calibrate --link-bandwidth RATE, the step at this machine's GEMM rate"
echo " with the sends queued on each link and each layer's allreduce (reduce-scatter + allgather)"
echo " queued on it from the end of the layer's part of the last backward; goal: within 15%)"
echo "(softirq: the kernel's softirq CPU time per step, all cores: the emulated links' network"
echo " work, which a real NIC does not take from the compute)"
echo "(hidden: the share of the transfer time by which the step, or the stages' mean waiting, does"
echo " not grow; goals: >= 90% for the activations of K=2, >= 60% for the allreduce of D=2)"
# shellcheck disable=SC2034  # read by hosts.sh at exit
passed=1
