# Sourced by compare_pytorch.sh: which BLAS PyTorch's matrix products run on, and whether a
# comparison against it means anything.
# shellcheck shell=bash

# blas_probe: what PyTorch (/usr/bin/python3) loads for its matrix products: OpenBLAS's own
# report under OPENBLAS_VERBOSE=2 ("Core: Haswell") and one "library: PATH" line per BLAS-like
# shared library mapped into the process (resolved paths, as /proc/self/maps shows them), under
# the OPENBLAS_CORETYPE the twins will run with (blas_choose_core).
blas_probe() {
  OPENBLAS_VERBOSE=2 /usr/bin/python3 - 2>&1 <<'PY'
import torch
a = torch.ones(64, 64)
(a @ a).sum().item()
paths = {line.split()[-1] for line in open("/proc/self/maps") if len(line.split()) >= 6}
for path in sorted(p for p in paths if "blas" in p or "mkl" in p or "lapack" in p):
    print("library:", path)
PY
}

# blas_choose_core: OpenBLAS picks its kernels by the CPU's model, and 0.3.21 (Debian 12) does not
# know newer ones: on a 2026 Intel Xeon (family 6, model 207) it falls back to its generic Prescott
# kernels, 5 times slower (24 against 138 GFLOP/s on one thread, 1024 x 1024). Then this exports
# OPENBLAS_CORETYPE for the kernels the CPU's flags allow (SkylakeX with AVX-512, Haswell with
# AVX2), which the twins inherit, and says so; otherwise it leaves OPENBLAS_CORETYPE unset
# (OpenBLAS's own detection).
blas_choose_core() {
  unset OPENBLAS_CORETYPE
  local probe flags
  probe=$(blas_probe)
  grep -q '^ *Core: *Prescott' <<<"$probe" || return 0
  flags=$(grep -m 1 '^flags' /proc/cpuinfo)
  if [[ $flags == *" avx512f "* ]]; then
    export OPENBLAS_CORETYPE=SkylakeX
  elif [[ $flags == *" avx2 "* ]]; then
    export OPENBLAS_CORETYPE=Haswell
  else
    return 0
  fi
  echo "pytorch blas: OpenBLAS does not know this CPU (its generic Prescott kernels); OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE, as its flags allow"
}

# blas_verdict: reads blas_probe's output and prints one line, "valid: WHAT" or "INVALID: WHY".
# Invalid: OpenBLAS on its generic Prescott kernels (a CPU its build does not know: no AVX, a
# several-times slower GEMM), or the unoptimized reference BLAS (Debian's libblas3).
blas_verdict() {
  local text core library
  text=$(cat)
  core=$(sed -n 's/^ *Core: *\([^ ]*\).*/\1/p' <<<"$text" | head -n 1)
  library=$(sed -n 's/^library: *//p' <<<"$text" | grep -E 'blas|mkl' | head -n 1)
  if [[ "$core" == Prescott ]]; then
    echo "INVALID: OpenBLAS runs its generic Prescott kernels (Core: Prescott; it does not know this CPU), so PyTorch's matrix products are several times slower than they should be${library:+ ($library)}"
  elif [[ -n "$core" ]]; then
    echo "valid: OpenBLAS, Core: $core${library:+ ($library)}"
  elif [[ "$library" == */blas/libblas.so* ]]; then
    echo "INVALID: PyTorch runs on the reference BLAS ($library), not an optimized one; install libopenblas0-openmp"
  elif [[ -n "$library" ]]; then
    echo "valid: ${library} (not OpenBLAS: no core reported)"
  else
    echo "valid: no BLAS library found in the process (built into torch, e.g. MKL)"
  fi
}
