#!/usr/bin/env bash
# The issue's reference model at K stages under each schedule, against its slowest stage's
# compute and PyTorch's pipelining schedules, interleaved round by round.
#
#   bash .portable/run.sh scripts/bench/reference_schedules.sh      # a 16-core machine, K = 8
#
# Reference: 16 x (Linear(1024,1024) + ReLU) + Linear(1024,10), batch 2048, M = 32, SGD,
# recompute never, each rank on THREADS cores of its own (--map-by slot:PE=THREADS --bind-to
# core). Per round: one K=1 run (the whole model on one rank: the compute the K stages share),
# then each mpipe schedule, then each PyTorch schedule (pt_schedules.py over gloo, where python3
# has torch.distributed.pipelining). Per mpipe run: samples/s (throughput.py: the logged windows
# after the first), and from summary.json the step, each stage's compute and waiting per step and
# the bubble; "step / slowest" is the step over the slowest stage's compute (1.00 = the pipeline
# runs at the speed of its slowest stage). The planner's predicted bubble is printed beside it.
#
# Environment: STAGES (8), MICRO (32), THREADS (2), ROUNDS (3), STEPS (12), SCHEDULES ("gpipe
# 1f1b zb_h1"; an entry may add settings: "gpipe:pipeline.balance=measured,log.every=1"), PT_SCHEDULES ("gpipe 1f1b interleaved izb"; empty: none), EXTRA (more --set
# arguments for every mpipe run), TRACE_DIR (where set: one traced K run per schedule, its
# trace.json copied there), MPIPE_BIN, MPIRUN, PT_SCRIPT (default .portable/pt_schedules.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
stages=${STAGES:-8}
micro=${MICRO:-32}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
steps=${STEPS:-12}
schedules=${SCHEDULES:-gpipe 1f1b zb_h1}
pt_schedules=${PT_SCHEDULES-gpipe 1f1b interleaved izb}
read -r -a extra <<<"${EXTRA:-}"
bin=${MPIPE_BIN:-build/release/apps/mpipe}
mpirun=${MPIRUN:-mpirun}
pt_script=${PT_SCRIPT:-.portable/pt_schedules.py}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=$threads
work=$(mktemp -d /tmp/mpipe-reference.XXXXXX)
trap 'rm -rf "$work"' EXIT

config=$work/reference.yaml
cat >"$config" <<YAML
model:
  loss: cross_entropy
  layers:
    - repeat: 16
      layers: [{type: linear, units: 1024}, {type: relu}]
    - {type: linear, units: 10}
data: {dataset: synthetic, num_examples: 4096, features: 1024, classes: 10}
train: {steps: $steps, batch_size: 2048, seed: 1, eval_batches: 1}
optimizer: {kind: sgd, lr: 0.01}
pipeline: {micro_batches: $micro, schedule: gpipe, recompute: never}
checkpoint: {every: 0}
log: {every: 2}
YAML

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "load before: $(uptime)"
echo "reference: 16 x Linear(1024)+ReLU + head, batch 2048, M=$micro, $threads threads per rank"

# settings ENTRY: the --set arguments of a SCHEDULES entry ("schedule[:key=value,...]").
settings() {
  local entry=$1 more
  echo "--set pipeline.schedule=${entry%%:*}"
  [[ $entry == *:* ]] || return 0
  IFS=, read -r -a more <<<"${entry#*:}"
  printf -- '--set %s\n' "${more[@]}"
}
# label ENTRY: the entry as a file name.
label() { echo "${1//[^A-Za-z0-9._-]/_}"; }

# run NAME K ENTRY: one mpipe run; prints "samples/s step_ms slowest_ms waiting% per-stage".
run() {
  local name=$1 k=$2 entry=$3
  local dir=$work/$name
  local -a set_args
  mapfile -t set_args < <(settings "$entry" | tr ' ' '\n')
  local cmd=("$mpirun" -n "$k" --map-by "slot:PE=$threads" --bind-to core "$bin" train "$config"
    --run-dir "$dir" --set "pipeline.stages=$k" "${set_args[@]}" "${extra[@]}")
  echo "  ${cmd[*]}" >>"$work/commands"
  "${cmd[@]}" >"$dir.log" 2>&1 || { tail -5 "$dir.log"; echo "$name: failed"; return 0; }
  python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/summary.json"))
rates = [r["samples_per_s"] for r in map(json.loads, open(f"{d}/metrics.jsonl")) if "samples_per_s" in r][1:]
rate = len(rates) / sum(1 / r for r in rates)
compute, waiting = s["compute_ms_per_stage"], s["waiting_ms_per_stage"]
step = compute[0] + waiting[0]
print(f"{rate:9.1f} {step:8.1f} {max(compute):8.1f} {step / max(compute):6.2f} {100 * s['bubble']:6.1f}%"
      f"  compute {' '.join(f'{c:.0f}' for c in compute)}")
PY
  # pipeline.balance: measured says what it did in one line.
  grep -oE '(re-partitioned|kept) \[.*' "$dir.log" | head -1 | sed 's/^/      /' || true
}

predicted_bubble() {
  local -a set_args
  mapfile -t set_args < <(settings "$1" | tr ' ' '\n')
  "$bin" plan "$config" --stages "$stages" "${set_args[@]}" "${extra[@]}" --json 2>/dev/null |
    python3 -c 'import json,sys; print("%.1f%%" % (100 * json.load(sys.stdin)["bubble_fraction"]))' ||
    echo "?"
}

has_torch=0
if [[ -n "$pt_schedules" && -f "$pt_script" ]] &&
  python3 -c 'import torch.distributed.pipelining' 2>/dev/null; then
  has_torch=1
  echo "PyTorch: $(python3 -c 'import torch; print(torch.__version__)')"
fi

for ((r = 1; r <= rounds; r++)); do
  echo "round $r:"
  printf '  %-12s %9s %8s %8s %6s %7s\n' run samples/s step_ms slowest step/sl bubble
  printf '  %-12s %s\n' "k1" "$(run "k1-r$r" 1 gpipe)" | tee -a "$work/k1"
  for entry in $schedules; do
    printf '  %-12s %s\n' "k$stages-$entry" "$(run "k$stages-$(label "$entry")-r$r" "$stages" "$entry")" |
      tee -a "$work/mpipe-$(label "$entry")"
  done
  if ((has_torch)); then
    for schedule in $pt_schedules; do
      line=$(timeout 300 python3 -m torch.distributed.run --standalone --nproc-per-node "$stages" \
        "$pt_script" --schedule "$schedule" --threads "$threads" --micro-batches "$micro" 2>&1 |
        grep '^pt ' | tail -1 || true)
      rate=$(sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
      printf '  %-12s %9s\n' "pt-$schedule" "${rate:-failed}" | tee -a "$work/pt-$schedule"
    done
  fi
done

echo "summary (samples/s: median [range] of $rounds rounds; predicted bubble from mpipe plan):"
summarize() {
  local label=$1 file=$2 extra_text=${3:-}
  [[ -s $file ]] || return 0
  python3 - "$label" "$file" "$extra_text" <<'PY'
import statistics, sys
label, path, extra = sys.argv[1:]
rates = []
for line in open(path):
    try:
        rates.append(float(line.split()[1]))
    except (IndexError, ValueError):
        pass
if rates:
    print(f"  {label:<14} {statistics.median(rates):9.1f} [{min(rates):.1f}-{max(rates):.1f}] {extra}")
PY
}
summarize k1 "$work/k1"
for entry in $schedules; do
  summarize "k$stages-$entry" "$work/mpipe-$(label "$entry")" "predicted bubble $(predicted_bubble "$entry")"
done
for schedule in $pt_schedules; do summarize "pt-$schedule" "$work/pt-$schedule"; done

if [[ -n "${TRACE_DIR:-}" ]]; then
  mkdir -p "$TRACE_DIR"
  for entry in $schedules; do
    traced=traced-$(label "$entry")
    mapfile -t set_args < <(settings "$entry" | tr ' ' '\n')
    if "$mpirun" -n "$stages" --map-by "slot:PE=$threads" --bind-to core "$bin" train "$config" \
      --run-dir "$work/$traced" --set "pipeline.stages=$stages" "${set_args[@]}" \
      --set "log.trace_steps=[6]" "${extra[@]}" >"$work/$traced.log" 2>&1; then
      cp "$work/$traced/trace.json" "$TRACE_DIR/trace-k$stages-$(label "$entry").json"
    fi
  done
fi
echo "commands:"
cat "$work/commands"
echo "load after: $(uptime)"
