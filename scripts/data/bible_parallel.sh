#!/usr/bin/env bash
# A parallel corpus of three Bibles for translation, as pair shards: installs Debian's SWORD
# modules of the King James Version (1769, archaic English), the World English Bible (modern
# English) and the Reina-Valera 1909 (Spanish), extracts each verse with mod2imp, strips its
# markup (words' Strong's numbers, notes, headings), keeps the verses that all three have, and
# holds out whole books: validation Ruth and Philippians, test Mark and 1 John; the rest trains.
# Writes, under OUT:
#   text/<split>.{kjv,web,es,refs}      the aligned verses of a split (refs: "Ruth 1:1"), a line each
#   text/<split>.<dir>.{src,ref}        plain text per direction (es-en, en-es, kjv-en, en-kjv),
#                                       for BLEU on detokenized text
#   text/<split>.tsv                    the four directions' pairs, "<2xx> SOURCE<TAB>TARGET"; the
#                                       training split's also a copy pair of each English verse
#                                       ("<2en> WEB<TAB>WEB", "<2kjv> KJV<TAB>KJV"), so that the model
#                                       learns early to copy what English -> English mostly keeps
#   tokenizer.model, pairs_{train,val,test}.bin, shards.json  (mpipe tokenize-pairs)
# The tokenizer (SentencePiece unigram, VOCAB pieces, pad 0, unk 1, bos 2, eos 3, then the tags
# <2en> <2es> <2kjv>) learns from the training books only.
# Usage: scripts/data/bible_parallel.sh [OUT] (default runs/bible; env VOCAB, default 4000;
# MAX_LEN, default 64 (configs/translate_bible.yaml's source_len and target_len): pairs
# longer than that in tokens are left out and counted; COPIES, default 1: 0 leaves the copy
# pairs out)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-runs/bible}
vocab=${VOCAB:-4000}
max_len=${MAX_LEN:-64}
copies=${COPIES:-1}
[[ $copies == [01] ]] || { echo "bible_parallel.sh: COPIES must be 0 or 1, not '$copies'" >&2; exit 2; }
scripts/setup mpipe
scripts/install_packages scripts/data/packages-bible.txt
text=$out/text
mkdir -p "$text"

# Module $1's verses as "Book C:V<TAB>text" lines ($2: its language). mod2imp prints "$$$Genesis 1:1" and then the
# verse in OSIS on one line. Dropped with their contents: notes (footnotes, cross references),
# headings that are not part of the text (a psalm's title is, and stays) and speaker labels; every
# other tag goes and keeps its text. Where a tag sat between two letters, the words are two (a
# note's place, "God<note/>created"), except for a Spanish enclitic pronoun that the translators
# added to a verb ("sáca<transChange>lo</transChange>" is "sácalo"). Then the KJV's paragraph
# marks go and whitespace is normalized.
verses() {
  mod2imp "$1" | perl -CSD -Mutf8 -ne '
    BEGIN { $spanish = shift(@ARGV) eq "es"; }
    chomp;
    if (/^\$\$\$(.+ \d+:\d+)$/) { $key = $1; next; }
    next unless defined $key;
    ($k, $key) = ($key, undef);
    next if $k =~ / 0:\d+$| \d+:0$/;  # book and chapter introductions
    s{<note\b[^>]*/>}{\x01}g;
    s{<note\b.*?</note>}{\x01}g;
    s{<title\b(?![^>]*canonical="true")[^>]*>.*?</title>}{\x01}g;
    s{<speaker\b[^>]*>.*?</speaker>}{\x01}g;
    s{<[^>]*>}{\x02}g;
    s{(\w)\x02+(lo|la|los|las|le|les|me|te|se|nos|os)\x02}{$1$2}g if $spanish;
    s{(\w)[\x01\x02]+(?=\w)}{$1 }g;
    tr/\x01\x02¶//d;
    s/\s+/ /g; s/^ //; s/ $//;
    print "$k\t$_\n" if length;
  ' "$2"
}
verses engKJV2006eb en > "$text/kjv.verses"
verses engWEB2015eb en > "$text/web.verses"
verses spaRV1909eb es > "$text/es.verses"

# The verses all three have, in the Spanish module's order (the KJV's versification), split by
# book.
awk -F'\t' -v dir="$text" '
  FILENAME ~ /kjv.verses$/ { kjv[$1] = $2; next }
  FILENAME ~ /web.verses$/ { web[$1] = $2; next }
  ($1 in kjv) && ($1 in web) {
    book = $1; sub(/ [0-9]+:[0-9]+$/, "", book)
    split_ = (book == "Ruth" || book == "Philippians") ? "val" \
           : (book == "Mark" || book == "I John") ? "test" : "train"
    print $1 > (dir "/" split_ ".refs")
    print kjv[$1] > (dir "/" split_ ".kjv")
    print web[$1] > (dir "/" split_ ".web")
    print $2 > (dir "/" split_ ".es")
  }' "$text/kjv.verses" "$text/web.verses" "$text/es.verses"

# Per split, each direction's plain text and all four directions' pairs with their target tag:
# es-en (RV1909 -> WEB), en-es, kjv-en (archaic -> modern English) and en-kjv.
for split in train val test; do
  : > "$text/$split.tsv"
  for direction in es:web:en kjv:web:en web:es:es web:kjv:kjv; do
    IFS=: read -r from to tag <<< "$direction"
    name=${from/web/en}-${to/web/en}
    cp "$text/$split.$from" "$text/$split.$name.src"
    cp "$text/$split.$to" "$text/$split.$name.ref"
    paste "$text/$split.$from" "$text/$split.$to" | sed "s/^/<2$tag> /" >> "$text/$split.tsv"
  done
  if [[ $split == train && $copies == 1 ]]; then
    for copy in web:en kjv:kjv; do
      paste "$text/$split.${copy%:*}" "$text/$split.${copy%:*}" | sed "s/^/<2${copy#*:}> /" >> "$text/$split.tsv"
    done
  fi
  echo "$split: $(wc -l < "$text/$split.refs") verses, $(wc -l < "$text/$split.tsv") pairs"
done

# This script's own earlier shards go (tokenize-pairs refuses a folder that holds shards).
rm -f "$out"/pairs_*.bin "$out/shards.json" "$out/tokenizer.model"
build/release/apps/mpipe tokenize-pairs --out "$out" --vocab-size "$vocab" \
  --model-type unigram --text "$text/train.kjv" "$text/train.web" "$text/train.es" \
  --tags '<2en>' '<2es>' '<2kjv>' --max-len "$max_len" \
  --train "$text/train.tsv" --val "$text/val.tsv" --test "$text/test.tsv"
