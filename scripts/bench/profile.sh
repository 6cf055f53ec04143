#!/usr/bin/env bash
# Where a training step's time goes, for the targets issue 10 left unmet: oneDNN's per-primitive
# times (GEMMs by shape, reorders, element-wise, ...) against the step time, and, where `perf`
# works, the hottest functions outside oneDNN.
#
#   scripts/bench/profile.sh             # about 2 minutes on 2 cores
#
# Cases, one stage (K=1):
#   configs/scaling_mlp.yaml at M=1 and M=8, f32, 1 thread (target 3: what a micro-batch costs);
#   configs/char_transformer.yaml (d=128, M=4, recompute always), f32 and bf16 at 1 and 2 threads
#   (target 1: what bf16 cannot speed up).
# Each case runs three times: once plain for the step time (scripts/bench/throughput.py; 4 x LONG
# steps, whose start-up, final evaluation and checkpoint are in perf's shares), twice
# with ONEDNN_VERBOSE=1 at SHORT and LONG steps, whose difference is the per-step oneDNN time
# (scripts/bench/onednn_profile.py). Environment: SHORT (default 4), LONG (default 12),
# PERF (default 1: profile the plain run with perf where it works; 0: never), WAIT_IDLE
# (default 10 s), MPIPE_BIN (default build/release/apps/mpipe).
set -euo pipefail
cd "$(dirname "$0")/../.."

short=${SHORT:-4}
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
  "step time: a plain run of $((4 * long)) steps (throughput.py); perf: $([[ $use_perf == 1 ]] && echo yes || echo no)"
for i in "${!cases[@]}"; do
  IFS='|' read -r name config batch threads settings <<<"${cases[$i]}"
  echo
  echo "### $name, $threads thread(s)"
  run_dir=$work/c$i
  read -ra extra <<<"$settings"
  base=("$bin" train "$config" --set pipeline.stages=1 "${extra[@]}")
  if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
  plain=("${base[@]}" --run-dir "$run_dir-plain" --set train.steps=$((4 * long))
    --set log.every="$long")
  echo "  OMP_NUM_THREADS=$threads ${plain[*]}"
  if [[ "$use_perf" == 1 ]]; then
    OMP_NUM_THREADS=$threads perf record -q -o "$work/c$i.perf" -- "${plain[@]}" >"$work/c$i.log" 2>&1
  else
    OMP_NUM_THREADS=$threads "${plain[@]}" >"$work/c$i.log" 2>&1
  fi
  samples=$(python3 scripts/bench/throughput.py "$run_dir-plain")
  step_ms=$(awk -v b="$batch" -v s="$samples" 'BEGIN { printf "%.3f", 1000 * b / s }')
  for steps in "$short" "$long"; do
    verbose=("${base[@]}" --run-dir "$run_dir-v$steps" --set train.steps="$steps"
      --set log.every="$steps")
    echo "  ONEDNN_VERBOSE=1 OMP_NUM_THREADS=$threads ${verbose[*]}"
    ONEDNN_VERBOSE=1 OMP_NUM_THREADS=$threads "${verbose[@]}" >"$work/c$i-v$steps.log" 2>&1 ||
      { echo "profile.sh: failed:" >&2; tail "$work/c$i-v$steps.log" >&2; exit 1; }
  done
  echo "  $samples samples/s; step $step_ms ms"
  echo
  python3 scripts/bench/onednn_profile.py "$work/c$i-v$short.log" "$short" \
    "$work/c$i-v$long.log" "$long" "$step_ms"
  if [[ "$use_perf" == 1 ]]; then
    echo
    echo "  hottest functions outside oneDNN (perf, share of all samples of the plain run):"
    perf report -q -i "$work/c$i.perf" --no-children --sort dso,sym --stdio -g none 2>/dev/null |
      awk '$2 !~ /^\[JIT\]|libdnnl/ && $1 ~ /%$/ { $3 = ""; if (n++ < 8) print "   ", $0 }'
  fi
done
echo
echo "load after: $(uptime)"
