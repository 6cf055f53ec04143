#!/usr/bin/env bash
# Accuracy of bf16 training: configs/char_transformer.yaml (800 steps, as configured) trained in
# f32 and in bf16, side by side, and the validation bits/char of each evaluation compared.
#
#   scripts/bench/precision_accuracy.sh     # about 6 minutes on 2 quiet cores (16 when loaded)
#
# Both runs use one stage on one core each (the result does not depend on K: bit-identical
# across K), started together. Environment: MPIPE_BIN (default build/release/apps/mpipe), STEPS
# (default: the config's 800). Output: a markdown table for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x "$bin" ]] || { echo "precision_accuracy.sh: $bin is not an executable" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
export OMP_NUM_THREADS=1
work=$(mktemp -d /tmp/mpipe-precision-accuracy.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "load before: $(uptime)"
pids=()
for precision in f32 bf16; do
  cmd=("$bin" train configs/char_transformer.yaml --run-dir "$work/$precision"
    --set pipeline.stages=1 --set train.precision="$precision")
  if [[ -n "${STEPS:-}" ]]; then cmd+=(--set train.steps="$STEPS"); fi
  echo "  OMP_NUM_THREADS=1 ${cmd[*]}"
  "${cmd[@]}" >"$work/$precision.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || { echo "precision_accuracy.sh: a run failed:" >&2; tail "$work"/*.log >&2; exit 1; }
done
echo "load after:  $(uptime)"
echo
python3 - "$work" <<'PY'
import json, sys
def bits(precision):
    with open(f"{sys.argv[1]}/{precision}/metrics.jsonl") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {r["step"]: r["bits_per_char"] for r in rows if "bits_per_char" in r}
f32, bf16 = bits("f32"), bits("bf16")
print("| step | f32 bits/char | bf16 bits/char | bf16 - f32 |")
print("|---|---|---|---|")
for step in sorted(f32):
    print(f"| {step} | {f32[step]:.4f} | {bf16[step]:.4f} | {bf16[step] - f32[step]:+.4f} |")
PY
