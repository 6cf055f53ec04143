#!/usr/bin/env bash
# Token shards end to end: `mpipe tokenize` trains a BPE model on text and writes llm.c shards;
# a GPT trained on them (data.dataset: tokens) ends with bit-identical weights for K = 1, 2, 4
# stages (both schedules at K = 2), and for D = 1, 2 replicas at K = 1, 2 under
# weight_grads: tree (at the same number of global micro-batches); 3 steps then a resume to 6 on
# another number of stages equal 6 straight; the same for a weighted mix of two shard lists;
# the evaluation reports bits per byte; generate samples through the tokenizer; bad inputs of
# tokenize and generate, a damaged shard and a token outside the vocabulary (found by one rank's
# share of the scan) end every rank with one line naming them, and so does a shard changed during a
# run.
# Usage: tokens.sh
source "$(dirname "$0")/lib.sh"
text=/usr/share/games/fortunes
[[ -d $text ]] || { echo "SKIPPED: no $text (Debian's fortunes)"; exit 77; }
find "$text" -type f ! -name '*.dat' -print0 | sort -z | xargs -0 cat > "$WORK/all.txt"
head -c 300000 "$WORK/all.txt" > "$WORK/text.txt"
timeout 120 "$MPIPE" tokenize "$WORK/text.txt" --out "$WORK/shards" --vocab-size 512 \
  --shard-tokens 40000 > "$WORK/tokenize.log" 2>&1 || { cat "$WORK/tokenize.log"; exit 1; }
cat "$WORK/tokenize.log"
grep -q "^train: [0-9]* tokens, [0-9]* bytes, [0-9.]* bytes per token, [2-9] shard(s)$" \
  "$WORK/tokenize.log" || { echo "FAILED: tokenize's train line"; exit 1; }

config=$WORK/tokens.yaml
cat > "$config" <<YAML
model:
  loss: cross_entropy
  layers:
    - {type: embedding, vocab: 512, dim: 16}
    - {type: transformer_block, heads: 2}
    - {type: transformer_block, heads: 2}
    - {type: layer_norm}
    - {type: linear, units: 512}
data:
  dataset: tokens
  train: $WORK/shards/train_*.bin
  val: [$WORK/shards/val_000000.bin]
  tokenizer: $WORK/shards/tokenizer.model
  seq_len: 16
train: {steps: 3, batch_size: 8, seed: 5, eval_batches: 2}
optimizer: {kind: adam, lr: 0.003}
pipeline: {micro_batches: 2}
log: {every: 1, peak_flops: 1e11}  # (given: no GEMM peak measured at start-up)
YAML
train 1 k1 "$config"
train 2 k2 "$config" --set pipeline.stages=2
same k1 k2
train 2 k2-1f1b "$config" --set pipeline.stages=2 --set pipeline.schedule=1f1b
same k1 k2-1f1b
train 4 k4 "$config" --set pipeline.stages=4
same k1 k4
# Replicas split the same global micro-batches (micro_batches x data_parallel = 2); summed in a
# fixed pairwise tree (weight_grads: tree), D=2 gives D=1's bits. Replicas reading other examples
# would not.
tree=(--set pipeline.weight_grads=tree)
train 1 k1-tree "$config" "${tree[@]}"
train 2 d2-tree "$config" "${tree[@]}" \
  --set pipeline.stages=1 --set pipeline.data_parallel=2 --set pipeline.micro_batches=1
same k1-tree d2-tree
train 4 k2d2-tree "$config" "${tree[@]}" \
  --set pipeline.stages=2 --set pipeline.data_parallel=2 --set pipeline.micro_batches=1
same k1-tree k2d2-tree

# 3 steps, then a resume to 6 on another number of stages, mid-epoch of the keyed order.
train 2 straight "$config" --set train.steps=6 --set pipeline.stages=2
train 1 resumed "$config" --set train.steps=3 --set pipeline.stages=1
train 2 resumed "$config" --set train.steps=6 --set pipeline.stages=2 --resume
same straight resumed

# A mix of two shard lists (weights 3 and 1) is the same at K = 1 and 2, and 3 steps then a resume
# to 6 on another number of stages equal 6 straight; the weights reach the order (1 and 3 differ).
# mix_of WEIGHT_A WEIGHT_B: the --set of data.train as that mix of the first shard and the others.
mix_of() {
  echo "data.train=[{shards: $WORK/shards/train_000000.bin, weight: $1}," \
    "{shards: '$WORK/shards/train_00000[1-9].bin', weight: $2}]"
}
mix=(--set "$(mix_of 3 1)")
train 1 mix-k1 "$config" "${mix[@]}"
train 2 mix-k2 "$config" "${mix[@]}" --set pipeline.stages=2
same mix-k1 mix-k2
train 2 mix-straight "$config" "${mix[@]}" --set train.steps=6 --set pipeline.stages=2
train 1 mix-resumed "$config" "${mix[@]}" --set train.steps=3 --set pipeline.stages=1
train 2 mix-resumed "$config" "${mix[@]}" --set train.steps=6 --set pipeline.stages=2 --resume
same mix-straight mix-resumed
train 1 mix-1-3 "$config" --set "$(mix_of 1 3)"
if "$MPIPE" compare "$WORK/mix-k1.safetensors" "$WORK/mix-1-3.safetensors" --rtol 0 \
  > "$WORK/mix-compare.out" 2>&1; then
  echo "FAILED: the weights 3, 1 and 1, 3 trained the same"
  exit 1
fi

grep -q '"bits_per_byte"' "$WORK/k1/metrics.jsonl" || { echo "FAILED: no bits_per_byte"; exit 1; }
# The shards of data.val are a validation split: its evaluations are logged as such, with the
# perplexity.
grep -q '"split":"val",.*"perplexity":' "$WORK/k1/metrics.jsonl" ||
  { cat "$WORK/k1/metrics.jsonl"; echo "FAILED: no val evaluation with its perplexity"; exit 1; }
grep -q '^validation: [0-9.]* bits/byte' "$WORK/k1.log" || { echo "FAILED: no bits/byte line"; exit 1; }
grep -q '^sample:$' "$WORK/k1.log" || { echo "FAILED: no sample at the end of the run"; exit 1; }

# generate: the prompt encoded, the sample decoded with the tokenizer, with top-k and top-p.
timeout 60 "$MPIPE" generate "$config" --weights "$WORK/k1.safetensors" --prompt "The cat" \
  --length 30 --top-k 20 --top-p 0.9 > "$WORK/generate.out" 2>&1 ||
  { cat "$WORK/generate.out"; echo "FAILED: generate"; exit 1; }
cat "$WORK/generate.out"
[[ $(head -c 7 "$WORK/generate.out") == "The cat" ]] || { echo "FAILED: generate's prompt"; exit 1; }

# refused NAME MESSAGE ARGS...: `mpipe ARGS` (one process) fails with MESSAGE on one line and
# writes no $WORK/NAME.
refused() {
  local name=$1 message=$2 status=0
  shift 2
  timeout 60 "$MPIPE" "$@" > "$WORK/$name.out" 2>&1 || status=$?
  failed_in_one_line "$name" "$status" "$message" "$WORK/$name"
}
refused missing_text "$WORK/none.txt: cannot open" \
  tokenize "$WORK/none.txt" --out "$WORK/missing_text" --vocab-size 300
refused small_vocab "--vocab-size 100: SentencePiece cannot train a bpe model of it: Vocabulary size is smaller than required_chars" \
  tokenize "$WORK/text.txt" --out "$WORK/small_vocab" --vocab-size 100
printf 'not a model' > "$WORK/bad.model"
refused bad_model "$WORK/bad.model: not a SentencePiece model (its bytes do not parse as one)" \
  tokenize "$WORK/text.txt" --out "$WORK/bad_model" --model "$WORK/bad.model"
refused no_model "tokenize: give --vocab-size to train a model or --model to apply one" \
  tokenize "$WORK/text.txt" --out "$WORK/no_model"
refused vocab_zero "--vocab-size: must be in [2, 2^24), got 0" \
  tokenize "$WORK/text.txt" --out "$WORK/vocab_zero" --vocab-size 0
refused tiny_shards "--shard-tokens: must be in [1024, 2^31), got 1" \
  tokenize "$WORK/text.txt" --out "$WORK/tiny_shards" --vocab-size 512 --shard-tokens 1
refused binary "/bin/ls: a binary file, not text (a NUL byte at offset " \
  tokenize /bin/ls --out "$WORK/binary" --vocab-size 512
refused device "/dev/zero: tokenize TEXT: must be a regular file or a folder of them, not a character device" \
  tokenize /dev/zero --out "$WORK/device" --vocab-size 512
# A folder that holds shards already (here of the 512-piece model) is refused, as shards of
# another tokenizer beside them would mix into train_*.bin; the manifest lists the shards.
refused earlier_shards "$WORK/shards: holds the shards of an earlier tokenize (train_000000.bin and " \
  tokenize "$WORK/text.txt" --out "$WORK/shards" --vocab-size 300
grep -q '"val_000000.bin"' "$WORK/shards/shards.json" || { echo "FAILED: no manifest"; exit 1; }
cp "$WORK/shards/val_000000.bin" "$WORK/shards/train_stray.bin"
rejected stray_shard "$WORK/shards/train_stray.bin: not one of the shards that $WORK/shards/shards.json lists" \
  "$config" --set pipeline.stages=2
rm "$WORK/shards/train_stray.bin"
sed '/tokenizer:/d' "$config" > "$WORK/no_tokenizer.yaml"
refused no_tokenizer "$WORK/no_tokenizer.yaml: generate needs data.tokenizer to turn the model's tokens into text" \
  generate "$WORK/no_tokenizer.yaml" --weights "$WORK/k1.safetensors"

cp "$WORK/shards/val_000000.bin" "$WORK/damaged.bin"
printf '\x07' | dd of="$WORK/damaged.bin" bs=1 seek=0 conv=notrunc status=none
rejected damaged "$WORK/damaged.bin: not a token shard: magic 20240391, expected 20240520 (uint16 tokens) or 20240801 (uint32 tokens)" \
  "$config" --set "data.val=$WORK/damaged.bin" --set pipeline.stages=2
# A token id outside the tokenizer's vocabulary, last in the validation shard: of 2 ranks, only
# rank 1 scans that share of the tokens, and both end with its one line.
cp "$WORK/shards/val_000000.bin" "$WORK/bad_token.bin"
last=$(( ($(stat -c %s "$WORK/bad_token.bin") - 1024) / 2 - 1 ))  # uint16 tokens after a 1024-byte header
printf '\xff\xff' | dd of="$WORK/bad_token.bin" bs=1 seek=$(( 1024 + 2 * last )) conv=notrunc status=none
rejected bad_token "$WORK/bad_token.bin: token $last is 65535, not below the vocabulary of 512 (data.tokenizer $WORK/shards/tokenizer.model)" \
  "$config" --set "data.val=$WORK/bad_token.bin" --set pipeline.stages=2
# A training shard changed during a 2-rank run, cut to another size or by token ids
# written over it in place (the same size), ends every rank cleanly in one line naming it, before
# the step's update: no SIGBUS, no MPI_ABORT banner, the run's lock released.
# changed NAME EXPECTED_DETAIL COMMAND...: runs COMMAND (on $WORK/NAME-shards) once the run on a
# copy of the shards has logged 2 steps.
changed() {
  local name=$1 detail=$2 status=0
  shift 2
  cp -r "$WORK/shards" "$WORK/$name-shards"
  endless 2 "$name" "$config" --set pipeline.stages=2 \
    --set "data.train=$WORK/$name-shards/train_*.bin"
  wait_for_steps "$name" 2 60
  "$@"
  wait "$launcher" || status=$?
  cp "$WORK/$name.log" "$WORK/$name.out"
  failed_in_one_line "$name" "$status" \
    "$WORK/$name-shards/train_000000.bin: changed during the run ($detail); a run's token shards must stay as they are until it ends" \
    "$WORK/$name/.lock"
}
# Another size, set in one call: `cp` over the shard truncates it to 0 bytes first, and a check
# between its two calls read "0 now" (a failure in the suite).
opened=$(stat -c %s "$WORK/shards/train_000000.bin")
resized=$(stat -c %s "$WORK/shards/val_000000.bin")
changed resized "$opened bytes when the run opened it, $resized now" \
  truncate -s "$resized" "$WORK/resized-shards/train_000000.bin"
head -c 64 /dev/zero | tr '\0' '\377' > "$WORK/ff.bin"  # 32 token ids 65535, over the vocabulary
changed overwritten "modified after the run opened it" \
  dd if="$WORK/ff.bin" of="$WORK/overwritten-shards/train_000000.bin" bs=1 seek=2000 \
  conv=notrunc status=none
echo "tokens: tokenize, K=1,2,4 bit-identical, D=2 == D=1 under weight_grads: tree, resume 3+3 == 6, a mix K=1 == K=2 and 3+3 == 6, bits per byte, generate, bad inputs refused"
