# Sourced by compare_pytorch.sh: which BLAS PyTorch's matrix products run on, and whether a
# comparison against it means anything.
# shellcheck shell=bash

# blas_probe: what PyTorch (/usr/bin/python3) loads for its matrix products: OpenBLAS's own
# report under OPENBLAS_VERBOSE=2 ("Core: Haswell") and one "library: PATH" line per BLAS-like
# shared library mapped into the process (resolved paths, as /proc/self/maps shows them).
# OPENBLAS_CORETYPE is removed, as the twins remove it before torch loads OpenBLAS.
blas_probe() {
  env -u OPENBLAS_CORETYPE OPENBLAS_VERBOSE=2 /usr/bin/python3 - 2>&1 <<'PY'
import torch
a = torch.ones(64, 64)
(a @ a).sum().item()
paths = {line.split()[-1] for line in open("/proc/self/maps") if len(line.split()) >= 6}
for path in sorted(p for p in paths if "blas" in p or "mkl" in p or "lapack" in p):
    print("library:", path)
PY
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
