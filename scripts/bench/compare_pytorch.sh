#!/usr/bin/env bash
# mpipe vs PyTorch on one process: the same training step of the same model, at 1 and 2 threads.
#
#   scripts/bench/compare_pytorch.sh          # both models, 1 and 2 threads
#
# Models: mlp = configs/scaling_mlp.yaml (batch 256, SGD) against scripts/bench/pytorch_mlp.py;
# transformer = configs/char_transformer.yaml (4 GPT blocks of width 128, seq 64, batch 32, AdamW,
# clipping, dropout) against scripts/bench/pytorch_transformer.py; gpt_kjv = configs/gpt_kjv.yaml
# (4 RMSNorm/rotary/SwiGLU blocks of width 128, vocabulary 4096 tied, seq 128, batch 16, on the
# token shards of scripts/data/kjv.sh, run first when runs/kjv is missing) against
# scripts/bench/pytorch_gpt_kjv.py. mpipe runs K=1 M=1 and keeps its activations
# (pipeline.recompute: never), as PyTorch does.
#
# Environment: MODELS (default "mlp transformer gpt_kjv"), THREADS (list, default "1 2"), WAIT_POLICY
# (OMP_WAIT_POLICY for both sides; default unset), REPEATS
# (default 3; the fastest is shown, and the ratio of each round's back-to-back pair: median and
# range), WAIT_IDLE (before each run, wait up to this many seconds for
# idle CPUs; default 120, 0 = no), MPIPE_BIN (default build/release/apps/mpipe). Needs
# /usr/bin/python3 with Debian's python3-torch and libopenblas0-openmp. Both sides time 25 steps
# after 5 warm-up steps: mpipe runs 30 steps logged every 5 and drops the first window
# (scripts/bench/throughput.py). The runs are interleaved (model, threads, mpipe then PyTorch),
# so a change in the machine's load hits both sides alike. About 4 minutes on 2 idle cores.
#
# It first prints the BLAS PyTorch's matrix products run on ("pytorch blas:", from
# OPENBLAS_VERBOSE=2). On OpenBLAS's generic Prescott kernels (a CPU that OpenBLAS does not know)
# or the reference BLAS, PyTorch is several times slower than it should be: the ratio column then
# says INVALID instead of a number (scripts/bench/blas_core.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/best.sh
source scripts/bench/best.sh
# shellcheck source=scripts/bench/blas_core.sh
source scripts/bench/blas_core.sh

models_list=${MODELS:-mlp transformer gpt_kjv}
threads_list=${THREADS:-1 2}
repeats=${REPEATS:-3}
wait_idle=${WAIT_IDLE:-120}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x "$bin" ]] || { echo "compare_pytorch.sh: $bin is not an executable (set MPIPE_BIN)" >&2; exit 2; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || {
  echo "compare_pytorch.sh: /usr/bin/python3 cannot import torch (apt-get install python3-torch" \
    "libopenblas0-openmp)" >&2
  exit 2
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One process whose threads have the cores to themselves: libgomp's default wait policy (spin a
# while, then sleep), as a user's run gets it. OMP_WAIT_POLICY=PASSIVE (what the tests set against
# oversubscription) puts the threads to sleep between parallel regions and costs up to 30% at 2
# threads; WAIT_POLICY=PASSIVE measures that.
if [[ -n ${WAIT_POLICY:-} ]]; then export OMP_WAIT_POLICY=$WAIT_POLICY; else unset OMP_WAIT_POLICY; fi

work=$(mktemp -d /tmp/mpipe-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Per model: the mpipe config (and its overrides), its batch, and the PyTorch twin.
model_args() {  # MODEL → sets config, batch, twin, overrides
  case $1 in
    mlp)
      config=configs/scaling_mlp.yaml batch=256 twin=scripts/bench/pytorch_mlp.py
      overrides=()
      ;;
    transformer)
      config=configs/char_transformer.yaml batch=32 twin=scripts/bench/pytorch_transformer.py
      overrides=(--set pipeline.recompute=never --set train.steps=30 --set log.every=5
        --set train.eval_every=0 --set train.eval_batches=1 --set checkpoint.every=0)
      ;;
    gpt_kjv)
      [[ -f runs/kjv/tokenizer.model ]] || scripts/data/kjv.sh > /dev/null
      config=configs/gpt_kjv.yaml batch=16 twin=scripts/bench/pytorch_gpt_kjv.py
      overrides=(--set pipeline.recompute=never --set train.steps=30 --set log.every=5
        --set train.eval_every=0 --set train.eval_batches=1 --set checkpoint.every=0)
      ;;
    *)
      echo "compare_pytorch.sh: unknown model '$1' (known: mlp transformer gpt_kjv)" >&2
      exit 2
      ;;
  esac
}


echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "OMP_WAIT_POLICY: ${OMP_WAIT_POLICY:-unset (libgomp default)}"
blas_choose_core
blas=$(blas_probe | blas_verdict)
echo "pytorch blas: $blas"
echo "load before: $(uptime)"
echo "commands (each repeated $repeats times, interleaved; the fastest shown):"
declare -A mpipe torch
for ((r = 1; r <= repeats; ++r)); do
  for model in $models_list; do
    model_args "$model"
    for t in $threads_list; do
      dir=$work/$model-t$t-r$r
      cmd=(mpirun -n 1 --bind-to none "$bin" train "$config" --run-dir "$dir"
        --set pipeline.stages=1 --set pipeline.micro_batches=1 "${overrides[@]}")
      pt=(/usr/bin/python3 "$twin" --threads "$t" --steps 25 --warmup 5)
      if ((r == 1)); then
        echo "  OMP_NUM_THREADS=$t ${cmd[*]}"
        echo "  ${pt[*]}"
      fi
      if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
      OMP_NUM_THREADS=$t "${cmd[@]}" >"$dir.log" 2>&1 ||
        { echo "compare_pytorch.sh: mpipe failed:" >&2; tail "$dir.log" >&2; exit 1; }
      mpipe[$model,$t]+="$(python3 scripts/bench/throughput.py "$dir") "
      if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
      torch[$model,$t]+="$("${pt[@]}" | sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p') "
    done
  done
done
echo "load after:  $(uptime)"
echo
printf '%-12s %7s %14s %12s %16s %12s %16s\n' model threads "mpipe ms/step" samples/s \
  "pytorch ms/step" samples/s "mpipe/pytorch"
for model in $models_list; do
  model_args "$model"
  for t in $threads_list; do
    a=$(best <<<"${mpipe[$model,$t]}")
    b=$(best <<<"${torch[$model,$t]}")
    awk -v m="$model" -v t="$t" -v a="$a" -v b="$b" -v n="$batch" -v invalid="${blas%%:*}" 'BEGIN {
      printf "%-12s %7d %14.1f %12.0f %16.1f %12.0f ", m, t, 1e3 * n / a, a, 1e3 * n / b, b
      if (invalid == "INVALID") printf "%16s\n", "INVALID"; else printf "%15.2fx\n", a / b
    }'
    echo "                     runs: mpipe ${mpipe[$model,$t]}| pytorch ${torch[$model,$t]}"
    # Each round ran mpipe and PyTorch back to back: the ratio of each such pair, median and range.
    paste <(tr ' ' '\n' <<<"${mpipe[$model,$t]}" | sed '/^$/d') \
      <(tr ' ' '\n' <<<"${torch[$model,$t]}" | sed '/^$/d') |
      awk '$2 > 0 { print $1 / $2 }' | sort -g | awk '{ r[NR] = $1 } END {
        if (NR == 0) exit
        m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
        printf "                     round by round: median %.2fx, range %.2f-%.2fx (%d rounds)\n", m, r[1], r[NR], NR
      }'
  done
done
echo "(mpipe/pytorch > 1: mpipe trains faster; the target is >= 1.15x)"
if [[ $blas == INVALID* ]]; then
  echo "comparison INVALID, no ratio reported: ${blas#INVALID: }"
fi
