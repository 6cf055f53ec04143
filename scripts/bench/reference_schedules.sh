#!/usr/bin/env bash
# The issue's reference model (or CONFIG's) at K stages under each schedule, against its slowest
# stage's compute and PyTorch's pipelining schedules, interleaved round by round.
#
#   bash .portable/run.sh scripts/bench/reference_schedules.sh      # a 16-core machine, K = 8
#   CONFIG=configs/scaling_mlp.yaml STAGES=2 MICRO="4 8 16" THREADS=1 ROUNDS=1 PT_SCHEDULES= \
#     scripts/bench/reference_schedules.sh                          # this 2-core machine: minutes
#
# Reference: 16 x (Linear(1024,1024) + ReLU) + Linear(1024,10), batch 2048, M = 32, SGD,
# recompute never, each rank on THREADS cores of its own (--map-by slot:PE=THREADS --bind-to
# core). Per round: one K=1 run (the whole model on one rank: the compute the K stages share),
# then each mpipe schedule, then each PyTorch schedule (pt_schedules.py over gloo, where python3
# has torch.distributed.pipelining). Per mpipe run: samples/s (throughput.py: the logged windows
# after the first), and from summary.json the step, each stage's compute and waiting per step and
# the bubble; "step / slowest" is the step over the slowest stage's compute (1.00 = the pipeline
# runs at the speed of its slowest stage). The planner's predicted step and bubble (mpipe plan, at
# its default rates unless PLAN_ARGS says otherwise, e.g. "--calibrate") are printed beside the
# measured ones.
#
# Environment: CONFIG (an experiment YAML to run instead of the reference model; its
# pipeline.micro_batches, stages, schedule and train.steps are overridden; PyTorch runs only with
# the reference model), STAGES (8), MICRO (32; a list runs each: "4 8 16"), K1_MICRO (the K=1
# run's micro-batches; default: the same M as the K runs), THREADS (2), ROUNDS
# (3), STEPS (12), SCHEDULES ("gpipe 1f1b zb_h1"; an entry may add settings:
# "gpipe:pipeline.balance=measured,log.every=1"), PT_SCHEDULES ("gpipe 1f1b interleaved izb";
# empty: none), EXTRA (more --set arguments for every mpipe run), PLAN_ARGS (more mpipe plan
# options), PLAN_BEFORE (an older mpipe binary: its predicted step too, right after this one's,
# "before N ms"), TRACE_DIR (where set: one traced K run per schedule at the first M, its
# trace.json copied there), MPIPE_BIN, MPIRUN, PT_SCRIPT (default .portable/pt_schedules.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
stages=${STAGES:-8}
read -r -a micros <<<"${MICRO:-32}"
k1_micro=${K1_MICRO:-}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
steps=${STEPS:-12}
schedules=${SCHEDULES:-gpipe 1f1b zb_h1}
pt_schedules=${PT_SCHEDULES-gpipe 1f1b interleaved izb}
read -r -a extra <<<"${EXTRA:-}"
read -r -a plan_args <<<"${PLAN_ARGS:-}"
bin=${MPIPE_BIN:-build/release/apps/mpipe}
mpirun=${MPIRUN:-mpirun}
pt_script=${PT_SCRIPT:-.portable/pt_schedules.py}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=$threads
work=$(mktemp -d /tmp/mpipe-reference.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Settings every mpipe run and plan of CONFIG gets (the reference model has them in its YAML).
common=()
if [[ -n "${CONFIG:-}" ]]; then
  config=$CONFIG
  common=(--set "train.steps=$steps" --set checkpoint.every=0 --set log.every=2)
  pt_schedules=""
else
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
pipeline: {schedule: gpipe, recompute: never}
checkpoint: {every: 0}
log: {every: 2}
YAML
fi

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "load before: $(uptime)"
if [[ -n "${CONFIG:-}" ]]; then
  echo "model: $CONFIG, M in ${micros[*]}, $threads threads per rank"
else
  echo "reference: 16 x Linear(1024)+ReLU + head, batch 2048, M in ${micros[*]}, $threads threads per rank"
fi

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

# run NAME K M ENTRY: one mpipe run at M micro-batches; prints "samples/s step_ms slowest_ms
# step/slowest bubble per-stage".
run() {
  local name=$1 k=$2 m=$3 entry=$4
  local dir=$work/$name
  local -a set_args
  mapfile -t set_args < <(settings "$entry" | tr ' ' '\n')
  local cmd=("$mpirun" -n "$k" --map-by "slot:PE=$threads" --bind-to core "$bin" train "$config"
    --run-dir "$dir" --set "pipeline.stages=$k" --set "pipeline.micro_batches=$m" "${set_args[@]}"
    "${common[@]}" "${extra[@]}")
  echo "  ${cmd[*]}" >>"$work/commands"
  "${cmd[@]}" >"$dir.log" 2>&1 || { tail -5 "$dir.log"; echo "$name: failed"; return 0; }
  python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/summary.json"))
rates = [r["samples_per_s"] for r in map(json.loads, open(f"{d}/metrics.jsonl")) if "samples_per_s" in r][1:]
rate = len(rates) / sum(1 / r for r in rates)
compute, waiting = s["compute_ms_per_rank"], s["waiting_ms_per_rank"]
step = compute[0] + waiting[0]
print(f"{rate:9.1f} {step:8.1f} {max(compute):8.1f} {step / max(compute):6.2f} {100 * s['bubble']:6.1f}%"
      f"  compute {' '.join(f'{c:.0f}' for c in compute)}")
PY
  # pipeline.balance: measured says what it did in one line.
  grep -oE '(re-partitioned|kept) \[.*' "$dir.log" | head -1 | sed 's/^/      /' || true
}

# plan_json BIN ENTRY M: BIN's plan of ENTRY at K stages and M micro-batches, as JSON.
plan_json() {
  local -a set_args
  mapfile -t set_args < <(settings "$2" | tr ' ' '\n')
  "$1" plan "$config" --stages "$stages" --micro-batches "$3" "${set_args[@]}" "${common[@]}" \
    "${extra[@]}" "${plan_args[@]}" --json 2>/dev/null
}

# predicted ENTRY M: the planner's step (ms) and bubble for ENTRY at K stages and M micro-batches
# (and PLAN_BEFORE's step).
predicted() {
  local line
  line=$(plan_json "$bin" "$1" "$2" | python3 -c 'import json,sys; p = json.load(sys.stdin)
print("predicted %.1f ms, bubble %.1f%%" % (1e3 * p["step_s"], 100 * p["bubble_fraction"]))') ||
    line="predicted ?"
  if [[ -n "${PLAN_BEFORE:-}" ]]; then
    line+="; before $(plan_json "$PLAN_BEFORE" "$1" "$2" |
      python3 -c 'import json,sys; print("%.1f ms" % (1e3 * json.load(sys.stdin)["step_s"]))' ||
      echo "?")"
  fi
  echo "$line"
}

has_torch=0
if [[ -n "$pt_schedules" && -f "$pt_script" ]] &&
  python3 -c 'import torch.distributed.pipelining' 2>/dev/null; then
  has_torch=1
  echo "PyTorch: $(python3 -c 'import torch; print(torch.__version__)')"
fi

for ((r = 1; r <= rounds; r++)); do
  echo "round $r:"
  printf '  %-18s %9s %8s %8s %6s %7s\n' run samples/s step_ms slowest step/sl bubble
  for m in "${micros[@]}"; do
    printf '  %-18s %s\n' "k1-m${k1_micro:-$m}" "$(run "k1-m$m-r$r" 1 "${k1_micro:-$m}" gpipe)" |
      tee -a "$work/k1-m$m"
    for entry in $schedules; do
      printf '  %-18s %s  (%s)\n' "k$stages-m$m-$entry" \
        "$(run "k$stages-m$m-$(label "$entry")-r$r" "$stages" "$m" "$entry")" \
        "$(predicted "$entry" "$m")" | tee -a "$work/mpipe-m$m-$(label "$entry")"
    done
    if ((has_torch)); then
      for schedule in $pt_schedules; do
        line=$(timeout 300 python3 -m torch.distributed.run --standalone --nproc-per-node "$stages" \
          "$pt_script" --schedule "$schedule" --threads "$threads" --micro-batches "$m" 2>&1 |
          grep '^pt ' | tail -1 || true)
        rate=$(sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
        printf '  %-18s %9s\n' "pt-m$m-$schedule" "${rate:-failed}" | tee -a "$work/pt-m$m-$schedule"
      done
    fi
  done
done

echo "summary (samples/s: median [range] of $rounds rounds; predicted step and bubble from mpipe plan):"
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
    print(f"  {label:<18} {statistics.median(rates):9.1f} [{min(rates):.1f}-{max(rates):.1f}] {extra}")
PY
}
for m in "${micros[@]}"; do
  summarize "k1-m${k1_micro:-$m}" "$work/k1-m$m"
  for entry in $schedules; do
    summarize "k$stages-m$m-$entry" "$work/mpipe-m$m-$(label "$entry")" "$(predicted "$entry" "$m")"
  done
  for schedule in $pt_schedules; do summarize "pt-m$m-$schedule" "$work/pt-m$m-$schedule"; done
done

if [[ -n "${TRACE_DIR:-}" ]]; then
  mkdir -p "$TRACE_DIR"
  for entry in $schedules; do
    traced=traced-$(label "$entry")
    mapfile -t set_args < <(settings "$entry" | tr ' ' '\n')
    if "$mpirun" -n "$stages" --map-by "slot:PE=$threads" --bind-to core "$bin" train "$config" \
      --run-dir "$work/$traced" --set "pipeline.stages=$stages" \
      --set "pipeline.micro_batches=${micros[0]}" "${set_args[@]}" --set "log.trace_steps=[6]" \
      "${common[@]}" "${extra[@]}" >"$work/$traced.log" 2>&1; then
      cp "$work/$traced/trace.json" "$TRACE_DIR/trace-k$stages-$(label "$entry").json"
    fi
  done
fi
echo "commands:"
cat "$work/commands"
echo "load after: $(uptime)"
