#!/usr/bin/env bash
# f32 vs bf16 (train.precision) training throughput, side by side: samples/s of the same model,
# batch and thread count in both precisions, one stage (K=1), runs interleaved.
#
#   scripts/bench/precision.sh              # about 4 minutes on 2 cores
#
# Models: configs/scaling_mlp.yaml (8 x Linear(1024,1024), batch 256), configs/char_transformer.yaml
# (d=128, 4 blocks, batch 32 x 64 tokens) and the same Transformer at d=512 (more GEMM-bound);
# both Transformers as configured (M=4, recompute always) but on one stage.
# Environment: THREADS (list, default "1 2"), REPEATS (default 2; the fastest is shown), WAIT_POLICY
# (OMP_WAIT_POLICY for the runs; default unset),
# WAIT_IDLE (before each run, wait up to this many seconds for idle CPUs; default 30, 0 = no),
# MPIPE_BIN (default build/release/apps/mpipe). Throughput: scripts/bench/throughput.py (the
# logged windows after the first). Output: a markdown table for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/best.sh
source scripts/bench/best.sh

threads_list=${THREADS:-1 2}
repeats=${REPEATS:-2}
wait_idle=${WAIT_IDLE:-30}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x "$bin" ]] || { echo "precision.sh: $bin is not an executable (set MPIPE_BIN)" >&2; exit 2; }
grep -qw avx512_bf16 /proc/cpuinfo || { echo "precision.sh: this CPU lacks avx512_bf16" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One process whose threads have the cores to themselves: libgomp's default wait policy (spin a
# while, then sleep), as a user's run gets it. OMP_WAIT_POLICY=PASSIVE (what the tests set against
# oversubscription) puts the threads to sleep between parallel regions and costs up to 30% at 2
# threads; WAIT_POLICY=PASSIVE measures that.
if [[ -n ${WAIT_POLICY:-} ]]; then export OMP_WAIT_POLICY=$WAIT_POLICY; else unset OMP_WAIT_POLICY; fi

work=$(mktemp -d /tmp/mpipe-precision.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The d=512 Transformer: char_transformer.yaml with its embedding width (and so every block's)
# raised from 128 to 512, 8 heads (head size 64).
wide=$work/char_transformer_d512.yaml
sed -e 's/dim: 128/dim: 512/' -e 's/heads: 4/heads: 8/' configs/char_transformer.yaml >"$wide"
grep -q 'dim: 512' "$wide" || { echo "precision.sh: could not widen char_transformer.yaml" >&2; exit 2; }

# name | config | settings (steps and logging chosen so a run takes a few seconds)
models=(
  "scaling_mlp|configs/scaling_mlp.yaml|--set train.steps=20 --set log.every=5"
  "char_transformer d=128|configs/char_transformer.yaml|--set train.steps=24 --set log.every=6 --set train.eval_every=0 --set train.eval_batches=1 --set checkpoint.every=0"
  "char_transformer d=512|$wide|--set train.steps=8 --set log.every=2 --set train.eval_every=0 --set train.eval_batches=1 --set checkpoint.every=0"
)


echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); ISA flags:" \
  "$(grep -ow 'avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "OMP_WAIT_POLICY: ${OMP_WAIT_POLICY:-unset (libgomp default)}"
echo "load before: $(uptime)"
echo "$wide: sed -e 's/dim: 128/dim: 512/' -e 's/heads: 4/heads: 8/' configs/char_transformer.yaml"
echo "commands (each repeated $repeats times, f32 and bf16 interleaved; the fastest shown):"
declare -A samples
for ((r = 1; r <= repeats; ++r)); do
  for i in "${!models[@]}"; do
    IFS='|' read -r name config settings <<<"${models[$i]}"
    for t in $threads_list; do
      for precision in f32 bf16; do
        dir=$work/m$i-t$t-$precision-r$r
        # shellcheck disable=SC2206  # settings is a word list
        cmd=(mpirun -n 1 --bind-to none "$bin" train "$config" --run-dir "$dir"
          --set pipeline.stages=1 $settings --set train.precision=$precision)
        if ((r == 1)); then echo "  OMP_NUM_THREADS=$t ${cmd[*]}"; fi
        if ((wait_idle > 0)); then scripts/bench/wait_for_idle.sh "$wait_idle"; fi
        OMP_NUM_THREADS=$t "${cmd[@]}" >"$dir.log" 2>&1 ||
          { echo "precision.sh: run failed:" >&2; tail "$dir.log" >&2; exit 1; }
        samples[$i,$t,$precision]+="$(python3 scripts/bench/throughput.py "$dir") "
      done
    done
  done
done
echo "load after:  $(uptime)"
echo
echo "| model | threads | f32 samples/s | bf16 samples/s | bf16 / f32 | runs f32 | runs bf16 |"
echo "|---|---|---|---|---|---|---|"
for i in "${!models[@]}"; do
  name=${models[$i]%%|*}
  for t in $threads_list; do
    f=$(best <<<"${samples[$i,$t,f32]}")
    b=$(best <<<"${samples[$i,$t,bf16]}")
    awk -v n="$name" -v t="$t" -v f="$f" -v b="$b" -v rf="${samples[$i,$t,f32]}" \
      -v rb="${samples[$i,$t,bf16]}" \
      'BEGIN { printf "| %s | %d | %.1f | %.1f | %.2fx | %s| %s|\n", n, t, f, b, b / f, rf, rb }'
  done
done
