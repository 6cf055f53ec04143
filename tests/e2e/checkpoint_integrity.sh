#!/usr/bin/env bash
# Checkpoint integrity: meta.json records each shard's size and zlib crc32 (checked here against
# gzip's) and step, and its own checksum (checked against Python's); a resume refuses a shard
# with a flipped bit, a shard copied from another step, a truncated shard, a FIFO or a link to
# /dev/zero in a shard's place, a meta.json without a required key, edited, or disagreeing with a
# shard's own metadata, and a NaN whose crc32 matches, with one line naming the file and the
# newest intact checkpoint, every rank exiting 2.
# Usage: checkpoint_integrity.sh CONFIG
source "$(dirname "$0")/checkpoint_lib.sh"
config=$1
ck=$WORK/run/checkpoints
resume=("$config" --run-dir "$WORK/run" --set train.steps=6 --set checkpoint.every=2 --resume)
train 2 run "$config" --set train.steps=4 --set checkpoint.every=2

for step in 2 4; do
  meta=$(tr -d ' \n' < "$ck/step_0000000$step/meta.json")
  for stage in 0 1; do
    file=$ck/step_0000000$step/stage_$stage.safetensors
    entry="{\"crc32\":\"$(crc32 "$file")\",\"file\":\"stage_$stage.safetensors\",\"size\":$(stat -c %s "$file"),\"stage\":$stage,\"step\":$step}"
    [[ $meta == *"$entry"* ]] || { echo "$meta"; echo "FAILED: meta.json lacks $entry"; exit 1; }
  done
done
shard=$ck/step_00000004/stage_1.safetensors
cp "$shard" "$WORK/good"
intact="the newest intact checkpoint is step 2 ($ck/step_00000002): remove step_00000004 to resume from it"

before=$(crc32 "$shard")
flip_bit "$shard" 3  # in the last tensor's data
fails flip 2 "$shard: checksum mismatch (crc32 $(crc32 "$shard"), meta.json says $before); $intact" \
  "${resume[@]}"
cp "$WORK/good" "$shard"

cp "$ck/step_00000002/stage_1.safetensors" "$shard"
fails copied 2 "$shard: holds step 2, meta.json says step 4; $intact" "${resume[@]}"
cp "$WORK/good" "$shard"

size=$(stat -c %s "$shard")
truncate -s -8 "$shard"
fails truncated 2 "$shard: size mismatch ($((size - 8)) bytes, meta.json says $size); $intact" \
  "${resume[@]}"
cp "$WORK/good" "$shard"

# A FIFO, or a link to /dev/zero, in a shard's place: both ranks blocked in open(), or computed
# the crc32 of /dev/zero forever (`fails` bounds the run by its timeout).
rm "$shard" && mkfifo "$shard"
fails fifo 2 "$shard: not a regular file; $intact" "${resume[@]}"
rm "$shard" && ln -s /dev/zero "$shard"
fails dev_zero 2 "$shard: not a regular file; $intact" "${resume[@]}"
rm "$shard" && cp "$WORK/good" "$shard"

first=$ck/step_00000002/stage_0.safetensors
cp "$first" "$WORK/good0"
flip_bit "$first" 1
flip_bit "$shard" 1
fails none_intact 2 "$shard: checksum mismatch (crc32 $(crc32 "$shard"), meta.json says $before); no earlier committed checkpoint is intact" \
  "${resume[@]}"
cp "$WORK/good" "$shard"
cp "$WORK/good0" "$first"

edit() { python3 "$(dirname "$0")/checkpoint_edit.py" "$@"; }
meta=$ck/step_00000004/meta.json
cp "$meta" "$WORK/good_meta"
sealed=$(edit checksum "$meta")
grep -qF "\"manifest_crc32\": \"$sealed\"" "$meta" \
  || { cat "$meta"; echo "FAILED: meta.json lacks manifest_crc32 $sealed"; exit 1; }

edit drop "$meta" shards  # the shard checks cannot be switched off
flip_bit "$shard" 3
fails no_shards 2 "$meta: missing key 'shards'; $intact" "${resume[@]}"
cp "$WORK/good" "$shard"
cp "$WORK/good_meta" "$meta"

edit set "$meta" optimizer_steps 5
fails edited 2 "$meta: manifest checksum mismatch (crc32 $(edit checksum "$meta"), manifest_crc32 says $sealed); $intact" \
  "${resume[@]}"
edit seal "$meta"
fails resealed 2 "$ck/step_00000004/stage_0.safetensors: holds optimizer_steps 4, meta.json says optimizer_steps 5; $intact" \
  "${resume[@]}"
cp "$WORK/good_meta" "$meta"

tensor=$(edit nan "$meta" 1)  # the crc32s in meta.json made to match
fails nan 2 "rank 1 (pipeline rank 1, host $(hostname)): $shard: tensor '$tensor' holds a non-finite value (nan) at index 0; $intact" \
  "${resume[@]}"
cp "$WORK/good" "$shard"
cp "$WORK/good_meta" "$meta"

# Restored: the resume goes through, to the weights of an uninterrupted run.
train 2 run "$config" --set train.steps=6 --set checkpoint.every=2 --resume
train 2 straight "$config" --set train.steps=6
same straight run
echo "checkpoint integrity: bit flip, foreign and truncated shards, edited meta.json and NaN refused with one line; intact resumes"
