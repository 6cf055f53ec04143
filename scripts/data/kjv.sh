#!/usr/bin/env bash
# The King James Bible as token shards for configs/gpt_kjv.yaml: installs Debian's bible-kjv,
# extracts the whole text (Genesis 1:1 to Revelation 22:21, verse numbers removed) into
# OUT/kjv.txt, trains a SentencePiece BPE tokenizer of VOCAB pieces on all but its last 5% and
# writes OUT/train_*.bin and OUT/val_*.bin (the last 5%, from a line start) with
# OUT/tokenizer.model (what configs/gpt_kjv.yaml reads from runs/kjv).
# Usage: scripts/data/kjv.sh [OUT] (default runs/kjv; env VOCAB, default 4096)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-runs/kjv}
vocab=${VOCAB:-4096}
scripts/setup mpipe
scripts/install_packages scripts/data/packages-kjv.txt
mkdir -p "$out"
# `bible` prints a book and chapter line ("Genesis 1") before each chapter and each verse as
# "  1 In the beginning ..." wrapped at 80 columns: keep the words, drop the verse numbers.
bible -p /usr/lib Gen1:1-Rev22:21 | sed -E -e 's/^ +[0-9]+ //' -e '/^$/d' > "$out/kjv.txt.tmp"
mv "$out/kjv.txt.tmp" "$out/kjv.txt"
# This script's own earlier shards go (tokenize refuses a folder that holds shards).
rm -f "$out"/train_*.bin "$out"/val_*.bin "$out/shards.json"
build/release/apps/mpipe tokenize "$out/kjv.txt" --out "$out" --vocab-size "$vocab" \
  --model-type bpe --val-fraction 0.05
