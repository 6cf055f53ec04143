#!/usr/bin/env bash
# mpipe translate end to end: a made-up corpus whose targets are the sources' words reversed
# becomes pair shards (tokenize-pairs), translate_tiny.yaml learns it on 2 ranks, and translate
# (greedy and beam, from exported weights and from the checkpoint) turns held-out lines into one
# line each whose BLEU beats copying the source (mpipe score); under mpirun -n K (K = 2, 3, and
# D = 2) the same bytes decoded through the ranks' stages; bad tags, lines, references, weights
# and data end with one line and no translations, on one process and across ranks.
# Usage: translate.sh
source "$(dirname "$0")/lib.sh"
files=$(dirname "$0")/files
# 12 one-letter words, sentences of 3 to 6 of them; a fixed seed; train, val and held-out test
# lines. A tokenizer of 287 pieces (as many as SentencePiece finds: the reserved ones, the tags,
# 256 bytes, the letters and "▁x") has a piece for each word.
awk -v OFS='\t' 'BEGIN {
  srand(7)
  split("a b c d e f g h i j k l", w, " ")
  for (i = 1; i <= 380; i++) {
    n = 3 + int(rand() * 4); src = ""; tgt = ""
    for (j = 1; j <= n; j++) { x = w[1 + int(rand() * 12)]; src = src " " x; tgt = x (j > 1 ? " " : "") tgt }
    print "<2en>" src, tgt
  }
}' > "$WORK/all.tsv"
head -n 300 "$WORK/all.tsv" > "$WORK/train.tsv"
sed -n '301,340p' "$WORK/all.tsv" > "$WORK/val.tsv"
sed -n '341,380p' "$WORK/all.tsv" > "$WORK/test.tsv"
cut -f2 "$WORK/train.tsv" > "$WORK/text.txt"
cut -f1 "$WORK/test.tsv" | sed 's/^<2en> //' > "$WORK/test.src"
cut -f2 "$WORK/test.tsv" > "$WORK/test.ref"
timeout 60 "$MPIPE" tokenize-pairs --out "$WORK/shards" --vocab-size 287 --text "$WORK/text.txt" \
  --tags '<2en>' '<2es>' --train "$WORK/train.tsv" --val "$WORK/val.tsv" \
  > "$WORK/tokenize.log" 2>&1 || { cat "$WORK/tokenize.log"; echo "FAILED: tokenize-pairs"; exit 1; }

config=$WORK/translate.yaml
model=$WORK/shards/tokenizer.model
sed -e "s|^data: .*|data: {dataset: pairs, train: [$WORK/shards/pairs_train.bin], val: [$WORK/shards/pairs_val.bin], tokenizer: $model, source_len: 16, target_len: 16}|" \
  -e 's/vocab: [0-9]*/vocab: 287/; s/^    - {type: linear, units: [0-9]*}/    - {type: linear, units: 287}/' \
  "$files/translate_tiny.yaml" > "$config"
# 300 steps with clip_norm 1 learn the reversal (BLEU 75 against copying's 16, 14 s on 2 loaded
# cores); 150 steps at lr 0.02 stay at the unigram loss.
train 2 tiny "$config" --set pipeline.stages=2 --set train.steps=300 --set optimizer.clip_norm=1 \
  --set train.eval_batches=1
tail -n 2 "$WORK/tiny.log"

# translate NAME ARGS...: translates test.src into $WORK/NAME.out, scores on $WORK/NAME.err.
translate() {
  local name=$1
  shift
  timeout 60 "$MPIPE" translate "$config" --to '<2en>' --input "$WORK/test.src" \
    --ref "$WORK/test.ref" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" ||
    { cat "$WORK/$name.err"; echo "FAILED: translate $name"; exit 1; }
  head -n 3 "$WORK/$name.out"
  cat "$WORK/$name.err"
  [[ $(wc -l < "$WORK/$name.out") -eq $(wc -l < "$WORK/test.src") ]] ||
    { echo "FAILED: $name: not one line per input line"; exit 1; }
}
bleu_of() { sed -n 's/^BLEU = \([0-9.]*\) .*/\1/p' "$1"; }
translate greedy --weights "$WORK/tiny.safetensors"
grep -qx 'chrF2 = [0-9.]*' "$WORK/greedy.err" || { echo "FAILED: the chrF2 line"; exit 1; }
bleu=$(bleu_of "$WORK/greedy.err")
[[ -n $bleu ]] || { echo "FAILED: no BLEU line"; exit 1; }
timeout 30 "$MPIPE" score --hyp "$WORK/test.src" --ref "$WORK/test.ref" > "$WORK/copy.out" 2>&1 ||
  { cat "$WORK/copy.out"; echo "FAILED: score"; exit 1; }
copy=$(bleu_of "$WORK/copy.out")
echo "BLEU: greedy $bleu, copying the source $copy"
awk -v m="$bleu" -v c="$copy" 'BEGIN { exit !(m > c) }' ||
  { echo "FAILED: greedy BLEU $bleu is not above the copy baseline's $copy"; exit 1; }
# Beam search, batches of 7, from the checkpoint: one line each, and a BLEU line.
translate beam --checkpoint "$WORK/tiny" --beam 4 --batch 7
[[ -n $(bleu_of "$WORK/beam.err") ]] || { echo "FAILED: beam: no BLEU line"; exit 1; }
# The checkpoint holds the exported weights: greedy from it is the same text.
translate greedy_checkpoint --checkpoint "$WORK/tiny"
cmp "$WORK/greedy.out" "$WORK/greedy_checkpoint.out" ||
  { echo "FAILED: --checkpoint and --weights translate differently"; exit 1; }

# refused NAME MESSAGE ARGS...: `mpipe translate ARGS` exits 2 with MESSAGE on its one error line
# and prints nothing on stdout.
refused() {
  local name=$1 message=$2 status=0
  shift 2
  timeout 60 "$MPIPE" translate "$@" > "$WORK/$name.stdout" 2> "$WORK/$name.out" || status=$?
  failed_in_one_line "$name" "$status" "$message" "$WORK/$name"
  [[ $status -eq 2 ]] || { echo "FAILED: $name: exit status $status, not 2"; exit 1; }
  [[ ! -s "$WORK/$name.stdout" ]] || { echo "FAILED: $name: printed translations"; exit 1; }
}
weights=(--weights "$WORK/tiny.safetensors")
refused bad_tag "--to <2xx>: not a piece of $model (its tags: <2en>, <2es>)" \
  "$config" "${weights[@]}" --to '<2xx>' --input "$WORK/test.src"
printf 'a b\n%s\n' "$(printf 'a %.0s' $(seq 20))" > "$WORK/long.src"
refused long_line "--input $WORK/long.src:2: 23 tokens with the tag and eos, more than data.source_len 16" \
  "$config" "${weights[@]}" --to '<2en>' --input "$WORK/long.src"
head -n 3 "$WORK/test.ref" > "$WORK/short.ref"
refused ref_count "--ref $WORK/short.ref: 3 lines, but --input $WORK/test.src has 40" \
  "$config" "${weights[@]}" --to '<2en>' --input "$WORK/test.src" --ref "$WORK/short.ref"
sed 's/units: 32/units: 24/' "$config" > "$WORK/other.yaml"
refused other_weights "$WORK/tiny.safetensors: tensor layers.5.weight has shape [32, 16], the model needs [24, 16]" \
  "$WORK/other.yaml" "${weights[@]}" --to '<2en>' --input "$WORK/test.src"
refused not_pairs "mlp.yaml:11: data.dataset: translate needs a translation model, trained on data.dataset: pairs, not synthetic" \
  "$files/mlp.yaml" "${weights[@]}" --to '<2en>' --input "$WORK/test.src"

# Across ranks: each rank builds and loads only its stages, rank 0 reads the lines and drives the
# search through the pipeline; stdout and the scores are the one process's, byte for byte.
# across RANKS STAGES NAME BASE ARGS...: translates into $WORK/NAME.out on RANKS ranks holding
# STAGES stages (test.src unless ARGS redirect stdin) and compares it with the one-process run BASE.
across() {
  local ranks=$1 stages=$2 name=$3 base=$4
  shift 4
  timeout 60 mpirun -n "$ranks" --oversubscribe --bind-to none "$MPIPE" translate "$config" \
    --to '<2en>' --ref "$WORK/test.ref" --set log.level=debug "$@" \
    > "$WORK/$name.out" 2> "$WORK/$name.err" ||
    { cat "$WORK/$name.err"; echo "FAILED: translate $name"; exit 1; }
  grep -q "translate: 40 sentences decoded in [0-9.]* s through $stages stages on $ranks ranks" \
    "$WORK/$name.err" ||
    { cat "$WORK/$name.err"; echo "FAILED: $name: not decoded through the ranks' stages"; exit 1; }
  cmp "$WORK/$base.out" "$WORK/$name.out" ||
    { echo "FAILED: $name: other translations than one process's ($base)"; exit 1; }
  diff <(grep -E '^(BLEU|chrF2) = ' "$WORK/$base.err") <(grep -E '^(BLEU|chrF2) = ' "$WORK/$name.err") ||
    { echo "FAILED: $name: other scores than one process's ($base)"; exit 1; }
}
across 2 2 greedy_k2 greedy --weights "$WORK/tiny.safetensors" --input "$WORK/test.src"
across 2 2 beam_k2 beam --checkpoint "$WORK/tiny" --beam 4 --batch 7 --input "$WORK/test.src"
across 3 3 beam_k3 beam --checkpoint "$WORK/tiny" --beam 4 --batch 7 --set pipeline.stages=3 \
  < "$WORK/test.src"
# D = 2: one stage per replica; the second replica waits while the first decodes.
across 2 1 greedy_d2 greedy --weights "$WORK/tiny.safetensors" --input "$WORK/test.src" \
  --set pipeline.stages=1 --set pipeline.data_parallel=2

# refused_across NAME MESSAGE ARGS...: `mpirun -n 2 mpipe translate ARGS` exits 2 with MESSAGE on
# its one error line, no MPI_ABORT, and prints nothing on stdout.
refused_across() {
  local name=$1 message=$2 status=0
  shift 2
  # (Every rank exits by itself: no grace period for the rest of the job; see lib.sh's rejected.)
  OMPI_MCA_odls_base_sigkill_timeout=0 timeout 60 mpirun -n 2 --oversubscribe --bind-to none \
    "$MPIPE" translate "$@" > "$WORK/$name.stdout" 2> "$WORK/$name.out" || status=$?
  failed_in_one_line "$name" "$status" "$message" "$WORK/$name"
  [[ $status -eq 2 ]] || { echo "FAILED: $name: exit status $status, not 2"; exit 1; }
  [[ ! -s "$WORK/$name.stdout" ]] || { echo "FAILED: $name: printed translations"; exit 1; }
}
refused_across long_line_k2 "--input $WORK/long.src:2: 23 tokens with the tag and eos, more than data.source_len 16" \
  "$config" "${weights[@]}" --to '<2en>' --input "$WORK/long.src"
refused_across other_weights_k2 "$WORK/tiny.safetensors: tensor layers.5.weight has shape [32, 16], the model needs [24, 16]" \
  "$WORK/other.yaml" "${weights[@]}" --to '<2en>' --input "$WORK/test.src"
refused_across no_checkpoint_k2 "$WORK/none: --checkpoint: no committed checkpoint (the directory does not exist)" \
  "$config" --checkpoint "$WORK/none" --to '<2en>' --input "$WORK/test.src"
refused_across not_pairs_k2 "mlp.yaml:11: data.dataset: translate needs a translation model, trained on data.dataset: pairs, not synthetic" \
  "$files/mlp.yaml" "${weights[@]}" --to '<2en>' --input "$WORK/test.src"
echo "translate: tokenize-pairs, 300 steps on 2 ranks, greedy BLEU $bleu > copy $copy, beam, --checkpoint, the same bytes across 2 and 3 ranks and D = 2, bad inputs refused"
