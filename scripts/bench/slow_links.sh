#!/usr/bin/env bash
# Communication over slow links: K=2 (M=8) and D=2 (batch 256, and 1024 for a backward long enough to hide the allreduce) of configs/scaling_mlp.yaml on two hosts (network namespaces, tests/multihost/hosts.sh), each link limited to 1 Gbit/s or 100 Mbit/s by tc's tbf, without and with comm.progress_thread. Needs root; about 8 minutes on 2 idle cores.
#
#   scripts/bench/slow_links.sh
#
# For each link rate (unlimited, 1gbit, 100mbit), layout and progress-thread setting, one run
# of STEPS steps (8 for D=2 at 100 Mbit/s; logged in 4 windows, the first dropped): samples/s, each stage's compute and
# waiting (summary.json), the bytes that crossed the links per step (the veth counters over the
# run, start-up and final evaluation included, divided by its steps), their transfer time at
# the link's rate (the busier host's link: K=2's activations and gradients, D=2's reduce-scatter
# and allgather each move over both links at once), mpipe plan's predicted step, and
# the share of that transfer hidden behind compute: hidden = 1 - (step -
# unlimited step) / transfer, where the unlimited step is the same layout and setting's on
# unlimited links. Each host is one rank with one thread. The rates run one after another, not
# interleaved: run it on an idle machine.
#
# Environment: MPIPE_BIN (default build/release/apps/mpipe), STEPS (default 20), RATES (default
# "unlimited 1gbit 100mbit").
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
export MPIPE=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x $MPIPE ]] || { echo "slow_links.sh: $MPIPE is not an executable (build it)" >&2; exit 2; }
export MPIPE_MULTIHOST_BUDGET=${MPIPE_MULTIHOST_BUDGET:-1200}
# shellcheck source=tests/multihost/hosts.sh
source tests/multihost/hosts.sh
steps=${STEPS:-20}
rates=${RATES:-unlimited 1gbit 100mbit}
start_hosts

# limit RATE: every host's outgoing traffic limited to RATE (tc tbf), or not ("unlimited").
limit() {
  local host
  for host in h1 h2; do
    ip netns exec "$PREFIX$host" tc qdisc del dev eth0 root 2>/dev/null || true
    [[ $1 == unlimited ]] ||
      ip netns exec "$PREFIX$host" tc qdisc add dev eth0 root tbf rate "$1" burst 64kb latency 400ms
  done
}
sent() {  # what host $1 sent over its link so far
  cat "/sys/class/net/${PREFIX}$1/statistics/rx_bytes"
}
bits_per_s() {  # 1gbit, 100mbit -> bits per second
  awk -v r="$1" 'BEGIN { n = r + 0; if (r ~ /gbit$/) n *= 1e9; else if (r ~ /mbit$/) n *= 1e6; print n }'
}

# NAME:BATCH:ARGS (the batch of configs/scaling_mlp.yaml is 256)
layouts=("K=2 M=8:256:--set pipeline.stages=2 --set pipeline.micro_batches=8 --set pipeline.partition=[8,9]"
  "D=2 M=1:256:--set pipeline.stages=1 --set pipeline.data_parallel=2 --set pipeline.micro_batches=1"
  "D=2 B=1024:1024:--set pipeline.stages=1 --set pipeline.data_parallel=2 --set pipeline.micro_batches=1 --set train.batch_size=1024")
echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); mpipe $("$MPIPE" --version 2>/dev/null | head -n 1)"
echo "load before: $(uptime)"
declare -A step_ms
# predicted_ms LAYOUT_ARGS... : mpipe plan's step at this link rate and this machine's GEMM rate.
predicted_ms() {
  local link=()
  [[ $rate == unlimited ]] || link=(--link-bandwidth "$rate")
  "$MPIPE" plan "$repo/configs/scaling_mlp.yaml" "$@" --threads-per-rank 1 --calibrate "${link[@]}" \
    --json | /usr/bin/python3 -c 'import json, sys; print("%.1f" % (1e3 * json.load(sys.stdin)["step_s"]))'
}
printf '%-8s %-9s %-8s %10s %9s %9s %22s %11s %12s %8s\n' layout rate progress samples/s "step ms" \
  "predicted" "compute/waiting ms" "MB/step" "transfer ms" hidden
for rate in $rates; do
  limit "$rate"
  for layout in "${layouts[@]}"; do
    name=${layout%%:*}
    batch=${layout#*:}
    batch=${batch%%:*}
    read -ra args <<<"${layout#*:*:}"
    predicted=$(predicted_ms "${args[@]}")
    # (The allreduce of D=2 takes seconds a step at 100 Mbit/s: fewer steps there.)
    run_steps=$steps
    [[ $rate == 100mbit && $name == D* ]] && run_steps=8
    for progress in false true; do
      run=r-${name//[ =]/}-$rate-$progress
      before1=$(sent h1) before2=$(sent h2)
      on_hosts h1:1 h2:1 -- train "$repo/configs/scaling_mlp.yaml" --run-dir "$LOCAL/$run" \
        "${args[@]}" --set train.steps="$run_steps" --set log.every=$((run_steps / 4)) \
        --set comm.progress_thread="$progress" > "$WORK/$run.log" 2>&1 ||
        { tail "$WORK/$run.log" >&2; echo "slow_links.sh: $run failed" >&2; exit 1; }
      sent1=$(($(sent h1) - before1)) sent2=$(($(sent h2) - before2))
      sps=$(python3 scripts/bench/throughput.py "$WORK/h1/$run")
      read -r step split < <(/usr/bin/python3 - "$WORK/h1/$run/summary.json" "$sps" "$batch" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
step = 1e3 * float(sys.argv[3]) / float(sys.argv[2])
split = " ".join(f"{c:.0f}/{w:.0f}" for c, w in zip(s["compute_ms_per_stage"], s["waiting_ms_per_stage"]))
print(f"{step:.1f} {split}")
EOF
)
      step_ms[$name,$progress,$rate]=$step
      base=${step_ms[$name,$progress,unlimited]:-}
      awk -v n="$name" -v r="$rate" -v p="$progress" -v sps="$sps" -v step="$step" \
        -v predicted="$predicted" -v stage_split="$split" \
        -v sent1="$sent1" -v sent2="$sent2" -v steps="$run_steps" -v bps="$(bits_per_s "$rate")" \
        -v base="$base" 'BEGIN {
          per_step = (sent1 + sent2) / steps
          # Both links carry their bytes at once (K=2: activations one way, gradients the other;
          # D=2: each half of the reduce-scatter and of the allgather).
          link_bytes = sent1 > sent2 ? sent1 : sent2
          if (bps > 0) transfer = 1e3 * link_bytes / steps * 8 / bps
          printf "%-8s %-9s %-8s %10.1f %9.1f %9.1f %22s %11.2f ", n, r, p, sps, step, predicted,
            stage_split, per_step / 1e6
          if (bps > 0 && base != "") printf "%12.1f %7.0f%%\n", transfer, 100 * (1 - (step - base) / transfer)
          else printf "%12s %8s\n", "-", "-"
        }'
    done
  done
done
limit unlimited
echo "load after:  $(uptime)"
echo "(predicted: mpipe plan --calibrate --link-bandwidth RATE, the step at this machine's GEMM rate"
echo " with the sends queued on each link, the allreduce (reduce-scatter + allgather) after the last"
echo " backward; goal: within 15%)"
echo "(hidden = 1 - (step - the unlimited step) / transfer time at the link rate; goals: >= 90% for"
echo " the activations of K=2, >= 60% for the allreduce of D=2)"
# shellcheck disable=SC2034  # read by hosts.sh at exit
passed=1
