#!/usr/bin/env bash
# BLEU and chrF of a translation model of configs/translate_bible.yaml on the held-out test books
# (Mark and 1 John), direction by direction, beside the copy-the-source baseline, with a few
# translations: sacreBLEU's default BLEU (13a tokens) and chrF2 of `mpipe translate --ref` and
# `mpipe score`, on detokenized text.
#
#   scripts/bench/translate_bible.sh WEIGHTS [LINES]   # e.g. runs/translate_bible.safetensors
#
# LINES (default: all) keeps each direction's first LINES verses. Verses longer than the model's
# data.source_len in tokens (their pairs were left out of the shards too) are dropped first, one
# by one as `mpipe translate` names them; the table gives the verses scored. Environment:
# MPIPE_BIN (default build/release/apps/mpipe), CONFIG (default configs/translate_bible.yaml),
# DATA (default runs/bible), BEAM (default 1: greedy), OMP_NUM_THREADS (default 2).
set -euo pipefail
cd "$(dirname "$0")/../.."
weights=${1:?usage: translate_bible.sh WEIGHTS [LINES]}
lines=${2:-}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
config=${CONFIG:-configs/translate_bible.yaml}
data=${DATA:-runs/bible}
beam=${BEAM:-1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
work=$(mktemp -d /tmp/mpipe-translate.XXXXXX)
trap 'rm -rf "$work"' EXIT

printf '%-8s %6s %10s %10s %10s %10s %8s\n' direction verses BLEU chrF2 copy-BLEU copy-chrF2 seconds
for direction in es-en:'<2en>' en-es:'<2es>' kjv-en:'<2en>' en-kjv:'<2kjv>'; do
  name=${direction%%:*} tag=${direction#*:}
  src=$work/$name.src ref=$work/$name.ref
  if [[ -n $lines ]]; then
    head -n "$lines" "$data/text/test.$name.src" > "$src"
    head -n "$lines" "$data/text/test.$name.ref" > "$ref"
  else
    cp "$data/text/test.$name.src" "$src"
    cp "$data/text/test.$name.ref" "$ref"
  fi
  # A verse too long for the model (as the shards left out) is named before any decoding: it goes,
  # and the run starts again.
  start=$(date +%s)
  while ! "$bin" translate "$config" --weights "$weights" --to "$tag" --input "$src" \
    --ref "$ref" --beam "$beam" > "$work/$name.hyp" 2> "$work/$name.score"; do
    line=$(sed -n 's/^.*--input [^:]*:\([0-9]*\): .* more than data.source_len.*$/\1/p' \
      "$work/$name.score")
    [[ -n $line ]] || { cat "$work/$name.score" >&2; exit 1; }
    sed -i "${line}d" "$src" "$ref"
    start=$(date +%s)
  done
  seconds=$(($(date +%s) - start))
  "$bin" score --hyp "$src" --ref "$ref" > "$work/$name.copy"
  number() { sed -n "s/^$1 = \([0-9.]*\).*/\1/p" "$2"; }
  printf '%-8s %6d %10s %10s %10s %10s %8d\n' "$name" "$(wc -l < "$src")" \
    "$(number BLEU "$work/$name.score")" "$(number chrF2 "$work/$name.score")" \
    "$(number BLEU "$work/$name.copy")" "$(number chrF2 "$work/$name.copy")" "$seconds"
  # (sed reads all of paste's output: head would end paste early, a failure under pipefail.)
  paste "$src" "$work/$name.hyp" "$ref" | sed -n 1,3p > "$work/$name.examples"
done
for direction in es-en en-es kjv-en en-kjv; do
  echo
  echo "$direction (source | translation | reference):"
  while IFS=$'\t' read -r source translation reference; do
    printf '  %s\n    %s\n    %s\n' "$source" "$translation" "$reference"
  done < "$work/$direction.examples"
done
