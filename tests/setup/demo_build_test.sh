#!/usr/bin/env bash
# scripts/demo builds only the mpipe program, scripts/test everything: both run against stand-ins
# for cmake, ctest, mpirun, apt-get and sudo that record their arguments and do nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/mpipe-demo-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
for tool in cmake ctest mpirun apt-get sudo; do
  printf '#!/bin/sh\necho "%s $*" >> "%s/calls"\n' "$tool" "$work" > "$work/bin/$tool"
  chmod +x "$work/bin/$tool"
done

# builds SCRIPT: the `cmake --build` lines that running SCRIPT recorded.
builds() {
  : > "$work/calls"
  PATH="$work/bin:$PATH" "$root/scripts/$1" > "$work/$1.out" 2>&1 ||
    { cat "$work/$1.out"; echo "FAILED: scripts/$1"; exit 1; }
  grep '^cmake --build' "$work/calls" || true
}

demo=$(builds demo)
[[ "$demo" == "cmake --build --preset release --target mpipe" ]] ||
  { cat "$work/calls"; echo "FAILED: scripts/demo builds '$demo', not just the mpipe target"; exit 1; }
grep -q '^mpirun .*apps/mpipe train configs/fashion_mnist_mlp.yaml' "$work/calls" ||
  { cat "$work/calls"; echo "FAILED: scripts/demo does not train"; exit 1; }
tests=$(builds test)
[[ "$tests" == "cmake --build --preset release" ]] ||
  { cat "$work/calls"; echo "FAILED: scripts/test builds '$tests', not everything"; exit 1; }
echo "demo builds only mpipe, test builds everything"
