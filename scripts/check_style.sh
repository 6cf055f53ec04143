#!/usr/bin/env bash
# Checks the repository's style: every tracked C++ file as clang-format (.clang-format) writes it,
# and every tracked shell script free of shellcheck warnings (sources followed, as sourced).
# Usage: scripts/check_style.sh cpp|shell [SOURCE_DIR]   (the ctests style.cpp and style.shell;
# exit 77 without the tool or outside a git checkout)
# Prints each file that differs or warns, and exits 1 if there is any.
set -euo pipefail
kind=${1:?usage: check_style.sh cpp|shell [SOURCE_DIR]}
cd "${2:-$(dirname "$0")/..}"
tool=$([[ $kind == cpp ]] && echo clang-format || echo shellcheck)
command -v "$tool" > /dev/null || { echo "SKIPPED: no $tool here"; exit 77; }
git rev-parse --is-inside-work-tree > /dev/null 2>&1 || { echo "SKIPPED: not a git checkout"; exit 77; }

if [[ $kind == cpp ]]; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h')
  # One clang-format for all: it names each place that differs ("FILE:LINE:COL: error: ...").
  if ! report=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
    grep -oE '^[^:]+:[0-9]+:[0-9]+: error' <<< "$report" | cut -d: -f1 | sort -u |
      sed 's/$/: not as clang-format writes it (clang-format -i FILE)/'
    exit 1
  fi
else
  # *.sh, *.sbatch, and the files of scripts/ and tests/ without a suffix whose first line runs bash.
  mapfile -t files < <(git ls-files '*.sh' '*.sbatch'
    git ls-files scripts tests | grep -v '\.[^/]*$' | while read -r file; do
      read -r first_line < "$file" || true
      [[ $first_line != '#!'*bash* ]] || echo "$file"
    done)
  shellcheck --external-sources --source-path=SCRIPTDIR --severity=warning "${files[@]}"
fi
echo "style: ${#files[@]} files as $tool wants them"
