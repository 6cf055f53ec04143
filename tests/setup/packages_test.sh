#!/usr/bin/env bash
# The package list installs everything the build found: every library, header folder and CMake
# package config recorded in CMakeCache.txt belongs to a Debian package that scripts/packages.txt
# pulls in through Depends/Pre-Depends alone (apt-get --no-install-recommends skips the rest), and
# docker/Dockerfile installs through scripts/setup, so the list is the only one.
# Usage: packages_test.sh BUILD_DIR/CMakeCache.txt
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${1:?path of CMakeCache.txt}

# The packages scripts/setup installs, and everything they depend on (installed packages only).
mapfile -t wanted < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$root/scripts/packages.txt")
# Every installed package's dependencies, read at once (a dpkg-query per package took minutes on
# a loaded machine); a package installed for several architectures has all of its lists.
declare -A depends=()
while IFS=$'\t' read -r pkg deps; do
  depends[$pkg]+="$deps, "
done < <(dpkg-query -W -f='${Package}\t${Depends}, ${Pre-Depends}\n')
declare -A closure=()
queue=("${wanted[@]}")
while ((${#queue[@]})); do
  pkg=${queue[-1]}
  unset 'queue[-1]'
  [[ -n "${closure[$pkg]:-}" ]] && continue
  closure[$pkg]=1
  [[ -n "${depends[$pkg]+set}" ]] || continue
  deps=${depends[$pkg]}
  # "a (>= 1), b | c, d:any" -> a b c d (every alternative counts: one of them is installed; in
  # the shell: a pipeline per package took a minute on a loaded machine)
  IFS=',|' read -ra items <<<"$deps"
  for dep in "${items[@]}"; do
    dep=${dep%%(*}
    dep=${dep%%:*}
    dep=${dep//[[:space:]]/}
    [[ -n "$dep" && -z "${closure[$dep]:-}" ]] && queue+=("$dep")
  done
done
# Virtual packages in the closure: count the installed packages that provide them.
for pkg in $(dpkg-query -W -f='${Package} ${Provides}\n' | sed 's/([^)]*)//g; s/,/ /g' |
  awk 'NF > 1' | while read -r p provides; do
  for v in $provides; do [[ -n "${closure[$v]:-}" ]] && echo "$p"; done
done); do closure[$pkg]=1; done

failures=0
# Files and package-config folders the configure step found (not the build's own paths).
while IFS= read -r path; do
  [[ -e "$path" ]] || continue
  # Alternatives (/usr/bin/mpicxx) are symlinks that no package owns: follow them.
  owners=$( (dpkg-query -S "$path" || dpkg-query -S "$(readlink -f "$path")") 2>/dev/null |
    sed 's/: .*//' | tr ',' '\n' | sed 's/[[:space:]]//g; s/:.*//') || true
  if [[ -z "$owners" ]]; then
    echo "FAILED: $path (found by CMake) belongs to no Debian package"
    failures=$((failures + 1))
    continue
  fi
  ok=
  for owner in $owners; do [[ -n "${closure[$owner]:-}" ]] && ok=1; done
  if [[ -z "$ok" ]]; then
    echo "FAILED: $path (found by CMake) comes from $(echo $owners), which scripts/packages.txt" \
      "does not install (add it there)"
    failures=$((failures + 1))
  fi
done < <(grep -E '^[A-Za-z0-9_]+:(FILEPATH|PATH)=/' "$cache" | grep -vE '^CMAKE_|_BINARY_DIR|_SOURCE_DIR' |
  sed 's/^[^=]*=//' | grep -v "^$root" | sort -u)

grep -q '^RUN scripts/setup' "$root/docker/Dockerfile" ||
  { echo "FAILED: docker/Dockerfile does not install through scripts/setup"; failures=$((failures + 1)); }
((failures == 0)) || exit 1
echo "setup: every package the build found is installed by scripts/packages.txt"
