#!/usr/bin/env bash
# compare_pytorch.sh's BLAS check (scripts/bench/blas_core.sh): fed sample probe outputs, the
# verdict refuses OpenBLAS's generic Prescott kernels and the reference BLAS, and accepts the rest.
set -euo pipefail
# shellcheck source=scripts/bench/blas_core.sh
source "$(dirname "$0")/../../scripts/bench/blas_core.sh"
openblas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3

# verdict_is EXPECTED PROBE_TEXT: blas_verdict prints exactly EXPECTED for PROBE_TEXT.
verdict_is() {
  local got
  got=$(printf '%b' "$2" | blas_verdict)
  [[ "$got" == "$1" ]] || { printf 'FAILED: for probe text %q\n  expected: %s\n  got:      %s\n' "$2" "$1" "$got"; exit 1; }
}

verdict_is "INVALID: OpenBLAS runs its generic Prescott kernels (Core: Prescott; it does not know this CPU), so PyTorch's matrix products are several times slower than they should be ($openblas)" \
  "Core: Prescott\nlibrary: $openblas\nlibrary: /usr/lib/x86_64-linux-gnu/openblas-openmp/liblapack.so.3\n"
verdict_is "valid: OpenBLAS, Core: Haswell ($openblas)" "Core: Haswell\nlibrary: $openblas\n"
verdict_is "valid: OpenBLAS, Core: SkylakeX" "some warning\nCore: SkylakeX\n"
verdict_is "INVALID: PyTorch runs on the reference BLAS (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3), not an optimized one; install libopenblas0-openmp" \
  "library: /usr/lib/x86_64-linux-gnu/blas/libblas.so.3\nlibrary: /usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3.11.0\n"
verdict_is "valid: /opt/intel/mkl/lib/libmkl_rt.so (not OpenBLAS: no core reported)" \
  "library: /opt/intel/mkl/lib/libmkl_rt.so\n"
verdict_is "valid: no BLAS library found in the process (built into torch, e.g. MKL)" ""
echo "blas_core: Prescott and reference BLAS refused, known cores accepted"
