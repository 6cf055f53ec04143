#!/usr/bin/env bash
# Where a training step's time goes, for the targets issue 10 left unmet: oneDNN's per-primitive
# times (GEMMs by shape, reorders, element-wise, ...) against the step time, and, where `perf`
# works, the hottest functions outside oneDNN.
#
#   scripts/bench/profile.sh             # about 2.5 minutes on 2 cores
#
# Cases, one stage (K=1):
#   configs/scaling_mlp.yaml at M=1 and M=8, f32, 1 thread (target 3: what a micro-batch costs);
#   configs/char_transformer.yaml (d=128, M=4, recompute always), f32 and bf16 at 1 and 2 threads
#   (target 1: what bf16 cannot speed up).
# Each case runs REPEATS times (default 2) three runs: one plain for the step time
# (scripts/bench/throughput.py; 4 x LONG steps, whose start-up, final evaluation and checkpoint are
# in perf's shares; the fastest counts), two with ONEDNN_VERBOSE=1 at SHORT and LONG steps, whose
# difference is the per-step oneDNN time (scripts/bench/onednn_profile.py; the least of the
# repeats counts). Environment: SHORT (default 4), LONG (default 12),
# PERF (default 1: profile the plain run with perf where it works; 0: never), WAIT_IDLE
# (default 10 s), MPIPE_BIN (default build/release/apps/mpipe).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/best.sh
source scripts/bench/best.sh

short=${SHORT:-4}
repeats=${REPEATS:-2}
long=${LONG:-12}
use_perf=${PERF:-1}
wait_idle=${WAIT_IDLE:-10}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x "$bin" ]] || { echo "profile.sh: $bin is not an executable (set MPIPE_BIN)" >&2; exit 2; }
((long > short)) || { echo "profile.sh: LONG ($long) must exceed SHORT ($short)" >&2; exit 2; }
# One process whose threads have the cores to themselves: libgomp's default wait policy.
unset OMP_WAIT_POLICY
work=$(mktemp -d /tmp/mpipe-profile.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [[ "$use_perf" == 1 ]] && ! perf record -q -o "$work/probe.data" true >/dev/null 2>&1; then
  use_perf=0
fi
transformer="--set train.eval_every=0 --set train.eval_batches=1 --set checkpoint.every=0"
# name | config | batch size | threads | settings
cases=(
  "scaling_mlp M=1 f32|configs/scaling_mlp.yaml|256|1|--set pipeline.micro_batches=1"
  "scaling_mlp M=8 f32|configs/scaling_mlp.yaml|256|1|--set pipeline.micro_batches=8"
  "char_transformer f32|configs/char_transformer.yaml|32|1|$transformer --set train.precision=f32"
  "char_transformer bf16|configs/char_transformer.yaml|32|1|$transformer --set train.precision=bf16"
  "char_transformer f32|configs/char_transformer.yaml|32|2|$transformer --set train.precision=f32"
  "char_transformer bf16|configs/char_transformer.yaml|32|2|$transformer --set train.precision=bf16"
)

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime)"
echo "per-step oneDNN time: (ONEDNN_VERBOSE=1 at $long steps - at $short steps) / $((long - short));" \
  "step time: a plain run of $((4 * long)) steps (throughput.py); each run repeated $repeats times;" \
  "perf: $([[ $use_perf == 1 ]] && echo "the first plain run" || echo no)"
for i in "${!cases[@]}"; do
  IFS='|' read -r name config batch threads settings <<<"${cases[$i]}"
  echo
  echo "### $name, $threads thread(s)"
  run_dir=$work/c$i
  read -ra extra <<<"$settings"
  base=("$bin" train "$config" --set pipeline.stages=1 "${extra[@]}")
  rates=() pairs=()
  for ((r = 1; r <= repeats; ++r)); do
    if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
    plain=("${base[@]}" --run-dir "$run_dir-plain-r$r" --set train.steps=$((4 * long))
      --set log.every="$long")
    ((r > 1)) || echo "  OMP_NUM_THREADS=$threads ${plain[*]}"
    profiler=()
    if [[ "$use_perf" == 1 && $r == 1 ]]; then profiler=(perf record -q -o "$work/c$i.perf" --); fi
    OMP_NUM_THREADS=$threads "${profiler[@]}" "${plain[@]}" >"$work/c$i.log" 2>&1 ||
      { echo "profile.sh: failed:" >&2; tail "$work/c$i.log" >&2; exit 1; }
    rates+=("$(python3 scripts/bench/throughput.py "$run_dir-plain-r$r")")
    for steps in "$short" "$long"; do
      verbose=("${base[@]}" --run-dir "$run_dir-v$steps-r$r" --set train.steps="$steps"
        --set log.every="$steps")
      ((r > 1)) || echo "  ONEDNN_VERBOSE=1 OMP_NUM_THREADS=$threads ${verbose[*]}"
      log=$work/c$i-v$steps-r$r.log
      ONEDNN_VERBOSE=1 OMP_NUM_THREADS=$threads "${verbose[@]}" >"$log" 2>&1 ||
        { echo "profile.sh: failed:" >&2; tail "$log" >&2; exit 1; }
      pairs+=("$log")
    done
  done
  samples=$(echo "${rates[*]}" | best)
  step_ms=$(awk -v b="$batch" -v s="$samples" 'BEGIN { printf "%.3f", 1000 * b / s }')
  echo "  samples/s ${rates[*]} (the fastest counts): step $step_ms ms"
  echo
  python3 scripts/bench/onednn_profile.py "$name, $threads thread(s)" "$step_ms" "$short" "$long" \
    "${pairs[@]}"
  if [[ "$use_perf" == 1 ]]; then
    echo
    echo "  hottest functions outside oneDNN (perf, share of all samples of the first plain run):"
    perf report -q -i "$work/c$i.perf" --no-children --sort dso,sym --stdio -g none 2>/dev/null |
      awk '$2 !~ /^\[JIT\]|libdnnl/ && $1 ~ /%$/ { $3 = ""; if (n++ < 8) print "   ", $0 }'
  fi
done
echo
echo "load after: $(uptime)"
