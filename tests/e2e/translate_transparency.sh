#!/usr/bin/env bash
# Transparency of the encoder-decoder translation model (tests/e2e/files/translate_tiny.yaml, its
# encoder output and source ids relayed across the cuts, its targets padded): transparency.sh on
# pair shards of a made-up corpus (each target is its source's words reversed), which
# `mpipe tokenize-pairs` writes with a tokenizer of its own first.
# Usage: translate_transparency.sh [MODEL.yaml] [SCRIPT [ARG...]] (MODEL: files/translate_tiny.yaml
# by default; SCRIPT: transparency.sh, the default, replica_tree.sh, resume.sh,
# memory_stage_bound.sh, translate_scores.sh or tied_group.sh: a script that takes a config, then
# the ARGs)
set -euo pipefail
MPIPE=${MPIPE:?path of the mpipe binary}
model=$(dirname "$0")/files/translate_tiny.yaml
if [[ ${1:-} == *.yaml ]]; then
  model=$1
  shift
fi
script=${1:-$(dirname "$0")/transparency.sh}
data=$(mktemp -d /tmp/mpipe-pairs.XXXXXX)
trap 'rm -rf "$data"' EXIT
# 240 training and 40 validation pairs of 2 to 6 words (the longer ones dropped); awk's generator with a fixed seed.
awk -v dir="$data" 'BEGIN {
  srand(7)
  n = split("sun moon star sky sea land fire rain wind stone tree river", words, " ")
  for (i = 0; i < 280; i++) {
    len = 2 + int(rand() * 5); source = ""; target = ""
    for (j = 0; j < len; j++) {
      w = words[1 + int(rand() * n)]
      source = source (j ? " " : "") w
      target = w (j ? " " : "") target
    }
    print source > (dir "/words.txt")
    print "<2en> " source "\t" target > (dir "/" (i < 240 ? "train" : "val") ".tsv")
  }
}'
"$MPIPE" tokenize-pairs --out "$data" --vocab-size 288 --model-type unigram \
  --text "$data/words.txt" --tags '<2en>' --max-len 16 \
  --train "$data/train.tsv" --val "$data/val.tsv" > "$data/tokenize.log" ||
  { cat "$data/tokenize.log"; echo "FAILED: tokenize-pairs"; exit 1; }
config=$data/$(basename "$model")
sed "s|^data: .*|data: {dataset: pairs, train: [$data/pairs_train.bin], val: [$data/pairs_val.bin], tokenizer: $data/tokenizer.model, source_len: 16, target_len: 16}|" \
  "$model" > "$config"
grep -q "^data: {dataset: pairs, train" "$config" || { echo "FAILED: no data line replaced"; exit 1; }
"$script" "$config" "${@:2}"
