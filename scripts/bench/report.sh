#!/usr/bin/env bash
# Regenerates docs/benchmarks.md and its plots: runs every benchmark of scripts/bench in turn and
# writes their tables, with the machine, the date and the exact commands.
#
#   scripts/bench/report.sh              # about 20 minutes on an idle 2-core machine
#   ONLY="largest" scripts/bench/report.sh  # re-run some sections, keep the others' outputs
#   SECTIONS="kernels scaling overlap project" scripts/bench/report.sh docs/benchmarks-16-cores.md
#                                        # a document of some sections (the 16-core machine's)
#
# Sections: kernels, pytorch, micro, wgrad, scaling, precision, accuracy, profile, overlap,
# project, largest, mmap, kjv. Each section's raw output is kept in OUT_DIR (default
# build/bench-report); the plots go next to the markdown file (docs/*.png). With ONLY, the other
# sections are rendered from the outputs OUT_DIR kept from an earlier run (their date, version
# and load stay theirs).
# Environment: MPIPE_BIN, BENCH_DIR (default build/release/apps and apps/bench), WAIT_IDLE
# (passed to the scripts; default 5 s: run this on a quiet machine, the scripts only wait),
# RENDER_ONLY=1 (run nothing: rewrite the document from the outputs OUT_DIR holds), SECTIONS
# (the sections the document holds, default all), PLOT_PYTHON (a python3 with matplotlib,
# default /usr/bin/python3), DOC_INTRO (a paragraph under the document's header).
set -euo pipefail
cd "$(dirname "$0")/../.."

doc=${1:-docs/benchmarks.md}
sections=${SECTIONS:-kernels pytorch micro wgrad scaling precision accuracy profile overlap project largest mmap kjv}
run_sections=${ONLY:-$sections}
out=${OUT_DIR:-build/bench-report}
bench=${BENCH_DIR:-build/release/apps/bench}
export MPIPE_BIN=${MPIPE_BIN:-build/release/apps/mpipe} BENCH_DIR=$bench WAIT_IDLE=${WAIT_IDLE:-5}
[[ -x "$MPIPE_BIN" && -x "$bench/bench_fc" ]] || {
  echo "report.sh: build first (cmake --preset release && cmake --build --preset release)" >&2
  exit 2
}
mkdir -p "$out"
if [[ "${RENDER_ONLY:-0}" == 1 || -n "${ONLY:-}" ]]; then
  load_before=$(cat "$out/load_before")
else
  cut -d' ' -f1-3 /proc/loadavg >"$out/load_before"
  echo "$(lscpu | sed -n 's/^Model name: *//p'), $(env -u OMP_NUM_THREADS nproc) cores, $(free -g |
    awk '/^Mem:/ {print $2}') GiB" >"$out/machine"
  date -u '+%Y-%m-%d %H:%M UTC' >"$out/date"
  "$MPIPE_BIN" --version | head -n 1 >"$out/version"
  load_before=$(cat "$out/load_before")
fi
img_dir=$(dirname "$doc")
body=$out/body.md
: >"$body"

# Runs a command, keeps its output in $out/NAME.txt (and its duration in NAME.seconds) and
# appends it to the document as a section: a title, what it measures, the command, its output,
# and the markdown tables it printed (lines starting with '|'), rendered below the output.
section() {  # NAME TITLE TEXT COMMAND...
  local name=$1 title=$2 text=$3
  shift 3
  if [[ "${RENDER_ONLY:-0}" != 1 && " $run_sections " == *" $name "* ]]; then
    echo "report.sh: $title: $*" >&2
    local start=$SECONDS
    "$@" >"$out/$name.txt" 2>&1 || { echo "report.sh: $name failed:" >&2; tail "$out/$name.txt" >&2; exit 1; }
    echo $((SECONDS - start)) >"$out/$name.seconds"
    echo "$*" >"$out/$name.command"
    date -u '+%Y-%m-%d %H:%M UTC' >"$out/$name.date"
    "$MPIPE_BIN" --version | head -n 1 >"$out/$name.version"
  elif [[ ! -f "$out/$name.txt" ]]; then
    echo "report.sh: no kept output for section $name in $out: run it (ONLY=$name or all)" >&2
    exit 2
  fi
  {
    echo "## $title"
    echo
    echo "$text"
    echo
    echo '```'
    # The command as it ran (rendered elsewhere, this machine's would differ).
    echo "\$ $(cat "$out/$name.command" 2>/dev/null || echo "$*")     # $(cat "$out/$name.seconds") s, $(cat "$out/$name.date"), mpipe $(cat "$out/$name.version")"
    grep -v '^|' "$out/$name.txt"
    echo '```'
    echo
    awk '/^\|/ { print; table = 1; next } table { print ""; table = 0 }' "$out/$name.txt"
    echo
  } >>"$body"
}

# Another document's plots carry its name, so they don't overwrite docs/benchmarks.md's.
img_prefix=""
[[ "$doc" == docs/benchmarks.md ]] || img_prefix="$(basename "$doc" .md)-"
plot() {  # KIND INPUT PNG CAPTION
  "${PLOT_PYTHON:-/usr/bin/python3}" scripts/bench/plot_report.py "$1" "$2" "$img_dir/$img_prefix$3"
  printf '![%s](%s)\n\n' "$4" "$img_prefix$3" >>"$body"
}

kernels() {  # threads
  for t in 1 2; do
    echo "OMP_NUM_THREADS=$t $bench/bench_fc; $bench/bench_transformer"
    OMP_NUM_THREADS=$t "$bench/bench_fc"
    OMP_NUM_THREADS=$t "$bench/bench_transformer"
  done
}

kjv() {  # tokens against bytes at equal wall time, then configs/gpt_kjv.yaml against PyTorch
  scripts/bench/kjv_bits_per_byte.sh
  echo
  MODELS=gpt_kjv scripts/bench/compare_pytorch.sh
}

cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # nproc obeys OMP_NUM_THREADS
scaling_stages=$(for k in 1 2 4 8; do if ((k <= cores)); then echo -n "$k "; fi; done)  # 1 thread a rank

for s in $sections; do
  case $s in
    kernels)
      section kernels "Kernels: oneDNN f32 GEMM and the Transformer block" \
        "GFLOP/s of the fully connected kernels against the plain oneDNN GEMM of the same size; the GEMM at micro-batch row counts as a Linear's forward reads its weight, one weight reused (it stays in L2 if it fits) or 8 weights taken in turn as a stage's layers do (what a micro-batch costs per row, target 3), its backward-data product, and the forward over weights packed beforehand into oneDNN's blocked layout with what packing costs; and one Transformer block's forward + backward; at 1 and 2 threads (the ceiling every training number below is measured against)." \
        kernels ;;
    pytorch)
      section pytorch "mpipe vs PyTorch (issue 10, target 2: >= 1.15x at 1 and 2 threads)" \
        "One process, K=1 M=1, the same model, batch, optimizer and threads: configs/scaling_mlp.yaml and configs/char_transformer.yaml's Transformer, against their PyTorch twins (Debian python3-torch); runs interleaved, the fastest of 3 shown; both under libgomp's default wait policy (OMP_WAIT_POLICY unset)." \
        env MODELS="mlp transformer" scripts/bench/compare_pytorch.sh
      # No plot of a comparison against PyTorch on a generic or reference BLAS (no ratio).
      grep -q "comparison INVALID" "$out/pytorch.txt" ||
        plot pytorch "$out/pytorch.txt" bench_pytorch.png "samples/s, mpipe vs PyTorch" ;;
    micro)
      section micro "Micro-batches on one stage (issue 10, target 3: M=4 >= 0.92, M=8 >= 0.85 of M=1)" \
        "configs/scaling_mlp.yaml on one stage at a fixed batch of 256 split into M micro-batches; 'vs K=1,M=1' is the efficiency." \
        env STAGES=1 MICRO="1 4 8 16" REPEATS=3 scripts/bench/scaling.sh ;;
    wgrad)
      section wgrad "Weight gradients batched over the micro-batches (issue 10, target 3)" \
        "pipeline.weight_grads: accumulate (one accumulating GEMM per micro-batch) against batched (one GEMM over the step's rows after the last backward; scaling_mlp's default, as it runs GPipe with recompute never), configs/scaling_mlp.yaml on one stage, the same runs interleaved." \
        scripts/bench/weight_grads.sh ;;
    scaling)
      section scaling "Stages (issue 10, target 4: K=2 >= 1.5x K=1 M=1)" \
        "configs/scaling_mlp.yaml, K stages (as many as the machine has cores, up to 8) x M micro-batches at a fixed batch of 256, one thread per rank; 'ideal' is the GPipe bubble bound K*M/(M+K-1) over one stage at the same M." \
        env STAGES="${scaling_stages% }" MICRO="1 4 8 16" REPEATS=3 scripts/bench/scaling.sh
      plot scaling "$out/scaling.txt" bench_scaling.png "samples/s vs M, against the ideal" ;;
    precision)
      section precision "bf16 (issue 10, target 1: >= 1.7x f32 samples/s)" \
        "train.precision: bf16 against f32, one stage, the same runs interleaved, under libgomp's default wait policy (OMP_WAIT_POLICY unset; the last report set PASSIVE, which cost bf16 at 2 threads about 30%)." \
        scripts/bench/precision.sh ;;
    accuracy)
      section accuracy "bf16 accuracy (issue 10, target 1: within 0.02 bits/char of f32)" \
        "configs/char_transformer.yaml's full run in f32 and in bf16, validation bits/char at each evaluation." \
        scripts/bench/precision_accuracy.sh ;;
    profile)
      section profile "Where a step's time goes (issue 10, targets 1 and 3: what limits them)" \
        "One stage, per step: oneDNN's own time per primitive (GEMMs by shape: rows x k -> n), from ONEDNN_VERBOSE=1 runs of two lengths whose difference cancels start-up and the final evaluation, against the step time of a plain run; the rest is mpipe's code outside oneDNN, whose hottest functions perf names (shares of the whole plain run, start-up included). scaling_mlp at M=1 and M=8 shows what a micro-batch costs; char_transformer (d=128) in f32 and bf16 what bf16 cannot speed up." \
        scripts/bench/profile.sh ;;
    overlap)
      section overlap "Communication overlap (issue 10, target 5: >= 90% of transfer time hidden)" \
        "Shared memory and TCP (--mca btl tcp,self): transfer time by size, the share of transfer time hidden behind compute with and without progress between layers, and where a training step's time goes." \
        scripts/bench/overlap.sh ;;
    project)
      section project "Calibrated simulator and projection (issue 10, target 6)" \
        "The simulator, calibrated with this machine's per-op and transfer times, against the measured K=2 (goal: within 10%), then the issue's reference model PROJECTED to a 16-core machine; on a machine with the cores (2 per rank), the reference model measured at each K, mpipe and PyTorch's own pipeline (torch.distributed.pipelining), against the projection." \
        scripts/bench/project.sh
      if grep -q '^reference measured' "$out/project.txt"; then
        plot pipeline "$out/project.txt" bench_pipeline.png "reference model: samples/s by stages, mpipe vs PyTorch's pipeline vs the projection"
      fi ;;
    largest)
      section largest "Largest model under a per-rank memory limit (issue 8: K=8 >= 25x K=1 without recompute)" \
        "The most Transformer blocks of configs/largest_model.yaml that train for 2 steps under 128 MiB per rank (pipeline.memory_limit on the predicted tensor peak), predicted against measured peak RSS and the allocator's high-water mark." \
        scripts/bench/largest_model.sh "$out/largest"
      cp "$out/largest/largest_model.png" "$img_dir/largest_model.png"
      printf '![blocks that fit, and predicted vs measured peak per stage](largest_model.png)\n\n' >>"$body" ;;
    mmap)
      section mmap "glibc's mmap threshold" \
        "mpipe keeps freed tensor memory in the heap for reuse (mallopt at start-up); this compares it with MALLOC_MMAP_THRESHOLD_=65536, which returns every freed tensor to the kernel (what largest_model.sh sets, so that RSS follows the live bytes)." \
        scripts/bench/mmap_threshold.sh ;;
    kjv)
      section kjv "A language model on the King James Bible (issue 19: tokens beat bytes; >= 1.15x PyTorch at 1 and 2 threads)" \
        "configs/gpt_kjv.yaml (a 4096-piece SentencePiece BPE, 4 RMSNorm/rotary/SwiGLU blocks of width 128, tied embeddings, 2 stages) against its byte-level twin configs/gpt_kjv_bytes.yaml (the same GPT on the same text, vocabulary 256), each trained for the same wall time and evaluated on the whole held-out 5% of the text, in bits per byte; then the same model's training step, K=1 M=1, against its PyTorch twin (scripts/bench/pytorch_gpt_kjv.py) at 1 and 2 threads." \
        kjv ;;
    *)
      echo "report.sh: unknown section '$s'" >&2
      exit 2 ;;
  esac
done

{
  echo "# Benchmarks"
  echo
  echo "Generated by \`scripts/bench/report.sh\` on $(cat "$out/date"), mpipe $(cat "$out/version")."
  echo "Machine: $(cat "$out/machine"); load average at the start: $load_before."
  echo "Every figure comes from the command above its table; ratios are measured side by side in one run."
  if [[ -n "${DOC_INTRO:-}" ]]; then echo; echo "$DOC_INTRO"; fi
  if [[ "$doc" == docs/benchmarks.md && -f docs/benchmarks-16-cores.md ]]; then
    echo "The stage scaling, overlap and projection sections on a 16-core machine: [benchmarks-16-cores.md](benchmarks-16-cores.md)."
  fi
  echo
  cat "$body"
} >"$doc.tmp"
mv "$doc.tmp" "$doc"
echo "report.sh: wrote $doc" >&2
