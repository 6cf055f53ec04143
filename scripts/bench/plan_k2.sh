#!/usr/bin/env bash
# The plan against measured steps at K = 2 (issue 36: within 10%): `K=2 deep` (scaling_mlp with
# 24 blocks, M = 16, gpipe, as scripts/bench/slow_links.sh runs it, here on one host's shared
# memory; the auto partition is slow_links.sh's [24, 25]) and scaling_mlp at M = 8 under gpipe,
# zb_h1, zbv and interleaved (v = 2), each accumulating and grouped by 8; one thread and one core
# per rank. First the runs, ROUNDS interleaved rounds with mpipe plan's prediction at its default
# quick calibration beside each (scripts/bench/reference_schedules.sh: the measured step, median
# [range]); then each cell's `mpipe plan --calibrate` step, ROUNDS times (median [range]); last,
# per cell the measured step (256 / the median samples/s) and both predictions' errors (the plans
# beside the runs: the median of the rounds'). Prints the load before and after. Run it on an idle
# machine: the plan assumes a core per rank.
#
#   scripts/bench/plan_k2.sh        # about 8 minutes on the 2-core machine at ROUNDS=3
#
# Environment: ROUNDS (3), STEPS (20), PARTS ("deep schedules"), MPIPE_BIN, PLAN_ARGS (passed to
# the plans beside the runs: "--calibrate" times them in the same minute as each run, which on a
# machine whose speed drifts over minutes says more than the --calibrate steps timed at the end),
# BEFORE (an older mpipe binary: its plan too beside each run, right after this one's, and its
# error in a column of its own).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${MPIPE_BIN:-build/release/apps/mpipe}
work=$(mktemp -d /tmp/mpipe-plan-k2.XXXXXX)
trap 'rm -rf "$work"' EXIT
rounds=${ROUNDS:-3}
steps=${STEPS:-20}
deep=$work/deep_mlp.yaml
sed 's/repeat: 8$/repeat: 24/' configs/scaling_mlp.yaml >"$deep"
grep -q 'repeat: 24$' "$deep" || { echo "plan_k2.sh: no 'repeat: 8' in scaling_mlp.yaml" >&2; exit 2; }
export OMP_NUM_THREADS=1
cells=()  # "CONFIG M SETTINGS..." for the --calibrate predictions
for part in ${PARTS:-deep schedules}; do
  echo "== $part"
  if [[ $part == deep ]]; then
    CONFIG=$deep STAGES=2 MICRO=16 THREADS=1 ROUNDS=$rounds STEPS=$steps PT_SCHEDULES="" \
      PLAN_BEFORE=${BEFORE:-} \
      SCHEDULES="gpipe" MPIPE_BIN=$bin \
      scripts/bench/reference_schedules.sh | tee -a "$work/runs"
    cells+=("$deep 16 pipeline.schedule=gpipe")
  else
    WEIGHT_GROUPS=8 ROUNDS=$rounds STEPS=$steps MPIPE_BIN=$bin PLAN_BEFORE=${BEFORE:-} \
      scripts/bench/weight_groups.sh |
      tee -a "$work/runs"
    cells+=("configs/scaling_mlp.yaml 8 pipeline.schedule=gpipe")
    for schedule in zb_h1 zbv interleaved; do
      chunks=""
      [[ $schedule == interleaved ]] && chunks=" pipeline.virtual_stages=2"
      cells+=("configs/scaling_mlp.yaml 8 pipeline.schedule=$schedule pipeline.weight_grads=accumulate$chunks")
      cells+=("configs/scaling_mlp.yaml 8 pipeline.schedule=$schedule pipeline.weight_grads=grouped pipeline.weight_group=8$chunks")
    done
  fi
done
echo "== mpipe plan --calibrate, step ms: median [range] of $rounds"
echo "load before: $(uptime)"
for cell in "${cells[@]}"; do
  read -r config m settings <<<"$cell"
  set_args=()
  for setting in $settings; do set_args+=(--set "$setting"); done
  for _ in $(seq "$rounds"); do
    "$bin" plan "$config" --stages 2 --micro-batches "$m" "${set_args[@]}" --calibrate --json |
      python3 -c 'import json,sys; print(1e3 * json.load(sys.stdin)["step_s"])'
  done | python3 -c 'import statistics,sys
steps = [float(x) for x in sys.stdin]
print("%.1f [%.1f-%.1f]" % (statistics.median(steps), min(steps), max(steps)), end="")' |
    tee -a "$work/calibrated"
  echo "" >>"$work/calibrated"
  echo "  M=$m $settings ($(basename "$config"))"
done
echo "load after: $(uptime)"
echo "== the plan against measured (batch 256; beside: the plans beside the runs, median of the rounds)"
python3 - "$work/runs" "$work/calibrated" <<'PY'
import re, statistics, sys
runs, beside, before = {}, {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"  (k2-\S+)\s+([\d.]+)\s.*\(predicted ([\d.]+) ms", line)
    if m:
        runs.setdefault(m.group(1), []).append(float(m.group(2)))
        beside.setdefault(m.group(1), []).append(float(m.group(3)))
        b = re.search(r"; before ([\d.]+) ms", line)
        if b:
            before.setdefault(m.group(1), []).append(float(b.group(1)))
calibrated = [float(line.split()[0]) for line in open(sys.argv[2]) if line.strip()]
for i, cell in enumerate(runs):
    measured = 256e3 / statistics.median(runs[cell])
    near = statistics.median(beside[cell])
    line = "  %-58s measured %6.1f ms  beside %6.1f (%+5.1f%%)" % (
        cell.replace("pipeline.", ""), measured, near, 100 * (near / measured - 1))
    if cell in before:
        then = statistics.median(before[cell])
        line += "  before %6.1f (%+5.1f%%)" % (then, 100 * (then / measured - 1))
    if i < len(calibrated):
        line += "  --calibrate %6.1f (%+5.1f%%)" % (calibrated[i], 100 * (calibrated[i] / measured - 1))
    print(line)
PY
