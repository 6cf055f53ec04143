#!/usr/bin/env bash
# The translation model's speed (issue 33): mpipe against its PyTorch twin at K=1, and where the
# step goes at K = 2 and 4, with the share of the relayed tensors (memory, source ids).
#
#   scripts/bench/translate_speed.sh
#
# 1. configs/translate_bible.yaml at K=1 M=1 without recompute (as compare_pytorch.sh runs its
#    models) against scripts/bench/pytorch_translate.py (torch.nn.Transformer with the same sizes,
#    masks, tied matrix and loss, on the same pair shard), at 1 and 2 threads, ROUNDS rounds
#    interleaved (each round: for each thread count, mpipe then PyTorch): steady-state samples/s
#    (both sides time 25 steps after 5 warm-up ones: mpipe runs 30 logged every 5 and drops the
#    first window, scripts/bench/throughput.py), median and range of each side, and the ratio of
#    each round's back-to-back pair, median and range. Both sides' parameter counts first, and the
#    BLAS PyTorch runs on (scripts/bench/blas_core.sh: no ratio on OpenBLAS's generic Prescott
#    kernels or the reference BLAS, marked INVALID instead), and the load in each round.
# 2. For K in STAGES: the config's own pipeline (M, schedule, recompute) at K stages, one thread
#    per rank (more ranks than cores run oversubscribed, as the output says), traced; per rank
#    the compute, waiting, bytes sent and the relayed tensors' share of them, with an estimate
#    of their transfer time at bench_comm's shared-memory rate (scripts/bench/relayed_split.py),
#    and each cut's live set from `mpipe plan --json`.
#
# Environment: ROUNDS (default 5), THREADS (default "1 2"), STAGES (default "2 4"), MPIPE_BIN
# (default build/release/apps/mpipe), BENCH_DIR (default build/release/apps/bench, for
# bench_comm), DATA (default runs/bible: scripts/data/bible_parallel.sh's pair shards and
# tokenizer), WAIT_IDLE (before each K=1 run, wait up to this many seconds for idle CPUs;
# default 0: on a machine that others keep loaded, the interleaved ratios are what counts).
# Needs /usr/bin/python3 with Debian's python3-torch, python3-numpy and libopenblas0-openmp.
# About 6 minutes on 2 idle cores at the defaults.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/blas_core.sh
source scripts/bench/blas_core.sh

rounds=${ROUNDS:-5}
threads_list=${THREADS:-1 2}
stages_list=${STAGES:-2 4}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
bench=${BENCH_DIR:-build/release/apps/bench}
data=${DATA:-runs/bible}
wait_idle=${WAIT_IDLE:-0}
config=configs/translate_bible.yaml
for exe in "$bin" "$bench/bench_comm"; do
  [[ -x "$exe" ]] || { echo "translate_speed.sh: $exe is not an executable (build it)" >&2; exit 2; }
done
[[ -f $data/pairs_train.bin && -f $data/tokenizer.model ]] || {
  echo "translate_speed.sh: $data/pairs_train.bin or $data/tokenizer.model is missing" \
    "(scripts/data/bible_parallel.sh makes them; DATA names another directory)" >&2
  exit 2
}
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null || {
  echo "translate_speed.sh: /usr/bin/python3 cannot import torch and numpy (apt-get install" \
    "python3-torch python3-numpy libopenblas0-openmp)" >&2
  exit 2
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# K=1: one process whose threads have the cores to themselves, libgomp's default wait policy
# (as compare_pytorch.sh); K > 1: one thread per rank, where the policy changes nothing.
unset OMP_WAIT_POLICY
data_args=(--set "data.train=$data/pairs_train.bin" --set "data.val=$data/pairs_val.bin"
  --set "data.tokenizer=$data/tokenizer.model")
quiet=(--set train.eval_every=0 --set train.eval_batches=1 --set train.eval_bleu_sentences=0
  --set checkpoint.every=0)
work=$(mktemp -d /tmp/mpipe-translate-speed.XXXXXX)
trap 'rm -rf "$work"' EXIT

cores=$(env -u OMP_NUM_THREADS nproc)
echo "machine: $cores cores, $(lscpu | sed -n 's/^Model name: *//p'); mpipe $(git describe --always --dirty 2>/dev/null || echo '?')"
blas_choose_core
blas=$(blas_probe | blas_verdict)
echo "pytorch blas: $blas"
params=$("$bin" plan "$config" "${data_args[@]}" --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["num_params"])')
echo "load before: $(uptime)"

# --- 1. K=1 against PyTorch, interleaved.
echo
echo "=== K=1: mpipe vs PyTorch, $rounds rounds interleaved (commands of round 1):"
declare -A mpipe torch
for ((r = 1; r <= rounds; ++r)); do
  for t in $threads_list; do
    dir=$work/k1-t$t-r$r
    cmd=(mpirun -n 1 --bind-to none "$bin" train "$config" --run-dir "$dir" "${data_args[@]}"
      --set pipeline.stages=1 --set pipeline.micro_batches=1 --set pipeline.recompute=never
      --set train.steps=30 --set log.every=5 "${quiet[@]}")
    pt=(/usr/bin/python3 scripts/bench/pytorch_translate.py --pairs "$data/pairs_train.bin"
      --threads "$t" --steps 25 --warmup 5)
    if ((r == 1)); then
      echo "  OMP_NUM_THREADS=$t ${cmd[*]}"
      echo "  ${pt[*]}"
    fi
    if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
    OMP_NUM_THREADS=$t "${cmd[@]}" >"$dir.log" 2>&1 ||
      { echo "translate_speed.sh: mpipe failed:" >&2; tail "$dir.log" >&2; exit 1; }
    mpipe[$t]+="$(python3 scripts/bench/throughput.py "$dir") "
    if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
    "${pt[@]}" >"$dir.torch" 2>&1 ||
      { echo "translate_speed.sh: pytorch failed:" >&2; tail "$dir.torch" >&2; exit 1; }
    torch[$t]+="$(sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' "$dir.torch") "
  done
  echo "  round $r done, load $(uptime | sed 's/.*load average: //')"
done
echo "parameters: mpipe $params, pytorch $(sed -n 's/^# parameters //p' "$work/k1-t${threads_list%% *}-r1.torch")"
# median_range: reads numbers, prints "median (min-max)".
median_range() {
  tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.1f (%.1f-%.1f)", m, v[1], v[NR] }'
}
printf '%-8s %-26s %-26s %s\n' threads "mpipe samples/s" "pytorch samples/s" "mpipe/pytorch by round"
for t in $threads_list; do
  ratios=$(paste <(tr ' ' '\n' <<<"${mpipe[$t]}" | sed '/^$/d') \
    <(tr ' ' '\n' <<<"${torch[$t]}" | sed '/^$/d') | awk '$2 > 0 { print $1 / $2 }')
  ratio=$(median_range <<<"$ratios" | sed 's/\([0-9.]*\) (\([0-9.]*\)-\([0-9.]*\))/\1x (\2-\3x)/')
  [[ $blas == INVALID* ]] && ratio=INVALID
  printf '%-8s %-26s %-26s %s\n' "$t" "$(median_range <<<"${mpipe[$t]}")" \
    "$(median_range <<<"${torch[$t]}")" "$ratio"
  echo "         runs: mpipe ${mpipe[$t]}| pytorch ${torch[$t]}"
done
echo "(median (range) over the rounds; mpipe/pytorch > 1: mpipe trains faster; the target is >= 1.15x)"
if [[ $blas == INVALID* ]]; then echo "comparison INVALID, no ratio reported: ${blas#INVALID: }"; fi

# --- 2. The step split at K > 1.
echo
echo "=== the step at K = ${stages_list// /, } (transfer rates: bench_comm 32 4, 3 runs, the fastest per size)"
for _ in 1 2 3; do
  OMP_NUM_THREADS=1 mpirun -n 2 --bind-to none "$bench/bench_comm" 32 4 >>"$work/comm.log" 2>&1 ||
    { echo "translate_speed.sh: bench_comm failed:" >&2; tail "$work/comm.log" >&2; exit 1; }
done
for k in $stages_list; do
  dir=$work/k$k
  over=()
  if ((k > cores)); then over=(--oversubscribe); fi
  "$bin" plan "$config" "${data_args[@]}" --stages "$k" --threads-per-rank 1 --json >"$work/plan$k.json"
  cmd=(mpirun -n "$k" "${over[@]}" --bind-to none "$bin" train "$config" --run-dir "$dir"
    "${data_args[@]}" --set pipeline.stages="$k" --set train.steps=12 --set log.every=4
    --set 'log.trace_steps=[8,9,10,11]' "${quiet[@]}")
  echo
  echo "=== K=$k: $k ranks x 1 thread on $cores cores$( ((k > cores)) && echo ' (oversubscribed: ranks share cores)')"
  echo "  OMP_NUM_THREADS=1 ${cmd[*]}"
  OMP_NUM_THREADS=1 "${cmd[@]}" >"$dir.log" 2>&1 ||
    { echo "translate_speed.sh: mpipe failed:" >&2; tail "$dir.log" >&2; exit 1; }
  echo "  samples/s $(python3 scripts/bench/throughput.py "$dir"), load $(uptime | sed 's/.*load average: //')"
  python3 scripts/bench/relayed_split.py "$work/plan$k.json" "$dir" "$work/comm.log"
done
echo
echo "load after:  $(uptime)"
