#!/usr/bin/env bash
# Tokenizer against bytes at equal wall time: configs/gpt_kjv.yaml (BPE tokens) and its byte-level
# twin configs/gpt_kjv_bytes.yaml (the same GPT on the same text, vocabulary 256), each trained for
# BUDGET seconds, then evaluated on the whole held-out 5% of the King James Bible; validation bits
# per byte side by side (lower is better).
#
#   scripts/bench/kjv_bits_per_byte.sh          # BUDGET=240 seconds of training per model
#
# Each model's step time is first measured in a short run (CALIBRATE steps, the first logged
# window dropped); its run then gets floor(BUDGET / step time) steps, so both spend about BUDGET
# seconds training (the learning-rate schedule follows the step count). The table shows the
# training seconds each run actually spent (from its metrics.jsonl windows), so a load change on a
# shared machine shows. The calibrations and the runs are interleaved (tokens, bytes).
# Environment: BUDGET (default 240), CALIBRATE (default 30), WAIT_IDLE (seconds to wait for idle
# CPUs before each run, default 120; 0 = no), MPIPE_BIN (default build/release/apps/mpipe), DATA
# (default runs/kjv, written by scripts/data/kjv.sh when missing). About 2 x BUDGET + 3 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."

budget=${BUDGET:-240}
calibrate=${CALIBRATE:-30}
wait_idle=${WAIT_IDLE:-120}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
data=${DATA:-runs/kjv}
[[ -x "$bin" ]] || { echo "kjv_bits_per_byte.sh: $bin is not an executable (set MPIPE_BIN)" >&2; exit 2; }
[[ -f $data/kjv.txt && -f $data/tokenizer.model ]] || scripts/data/kjv.sh "$data"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

work=$(mktemp -d /tmp/mpipe-kjv-bpb.XXXXXX)
trap 'rm -rf "$work"' EXIT
models=(tokens bytes)
declare -A config=([tokens]=configs/gpt_kjv.yaml [bytes]=configs/gpt_kjv_bytes.yaml)
# Both read DATA instead of runs/kjv.
declare -A data_args=(
  [tokens]="--set data.train=$data/train_*.bin --set data.val=$data/val_*.bin --set data.tokenizer=$data/tokenizer.model"
  [bytes]="--set data.path=$data/kjv.txt")

# train MODEL NAME ARGS...: one mpirun run of MODEL's config into $work/NAME.
train() {
  local model=$1 name=$2
  shift 2
  local cmd
  # shellcheck disable=SC2206  # data_args holds whole words without blanks
  cmd=(mpirun -n 2 --bind-to core "$bin" train "${config[$model]}" --run-dir "$work/$name"
    ${data_args[$model]} --set train.eval_every=0 --set checkpoint.every=0 "$@")
  echo "  ${cmd[*]}"
  if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
  "${cmd[@]}" > "$work/$name.log" 2>&1 ||
    { echo "kjv_bits_per_byte.sh: $name failed:" >&2; tail "$work/$name.log" >&2; exit 1; }
}

# train_seconds RUN_DIR: the seconds its training steps took (batch 16), summed over the logged
# windows.
train_seconds() {
  python3 - "$1" <<'PY'
import json, sys
seconds, last = 0.0, 0
for line in open(f"{sys.argv[1]}/metrics.jsonl"):
    r = json.loads(line)
    if "samples_per_s" in r:
        seconds += (r["step"] - last) * 16 / r["samples_per_s"]
        last = r["step"]
print(f"{seconds:.1f}")
PY
}

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); mpipe $("$bin" --version)"
echo "load before: $(uptime)"
echo "calibration ($calibrate steps each, logged every 5, the first window dropped):"
declare -A steps
for model in "${models[@]}"; do
  train "$model" "calibrate-$model" --set train.steps="$calibrate" --set log.every=5 \
    --set train.eval_batches=1
  rate=$(python3 scripts/bench/throughput.py "$work/calibrate-$model")
  steps[$model]=$(awk -v b="$budget" -v r="$rate" 'BEGIN { print int(b * r / 16) }')
  echo "    $model: $rate samples/s (batch 16) -> ${steps[$model]} steps in ${budget} s"
done
echo "runs (the final evaluation covers the whole held-out split):"
for model in "${models[@]}"; do
  train "$model" "$model" --set train.steps="${steps[$model]}"
done
echo "load after:  $(uptime)"
echo
printf '%-7s %7s %9s %10s %10s\n' model steps "train s" "val loss" bits/byte
for model in "${models[@]}"; do
  python3 - "$work/$model" "$model" "${steps[$model]}" "$(train_seconds "$work/$model")" <<'PY'
import json, sys
run, model, steps, seconds = sys.argv[1:]
s = json.load(open(f"{run}/summary.json"))
# Token data reports bits per byte; byte-level text its bits per character, which is the same.
bits = s["final_eval_bits_per_byte"] if model == "tokens" else s["final_eval_bits_per_char"]
print(f"{model:<7} {int(steps):>7} {float(seconds):>9.1f} {s['final_eval_loss']:>10.4f} {bits:>10.4f}")
PY
done
echo "(bits/byte: the validation loss in bits over the bytes of held-out text it predicts)"
