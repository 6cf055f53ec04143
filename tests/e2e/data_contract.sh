#!/usr/bin/env bash
# A model that does not fit its data, and data that is not a file, on 2 ranks: refused at
# preflight with one line naming the file, line and key, a non-zero exit on every rank, no hang,
# and nothing written. Before, each model mismatch failed at the first step through MPI_Abort, or
# trained to the end and crashed in the end-of-run sample (a head wider than the vocabulary);
# /dev/zero was read until memory ran out and a FIFO was waited on forever.
source "$(dirname "$0")/lib.sh"

# classifier FILE LAST_UNITS [LOSS]: an MLP on synthetic data with 4 classes; its last layer is on
# line 6, the loss on line 2.
classifier() {
  printf 'model:\n  loss: %s\n  layers:\n    - {type: linear, units: 16}\n    - {type: relu}\n    - {type: linear, units: %s}\ndata: {dataset: synthetic, num_examples: 64, features: 8, classes: 4}\ntrain: {steps: 2, batch_size: 8}\npipeline: {stages: 2, micro_batches: 2}\n' \
    "${3:-cross_entropy}" "$2" > "$WORK/$1"
}
classifier narrow.yaml 3
rejected narrow_head "narrow.yaml:6: model.layers[2] (linear): outputs 3 classes, but the data (synthetic) has 4" \
  "$WORK/narrow.yaml"
classifier mse.yaml 4 mse
rejected mse_on_labels "mse.yaml:2: model.loss: mse needs real-valued targets, but the data (synthetic) has class labels (4 classes); use cross_entropy" \
  "$WORK/mse.yaml"
# Denoising images: the output must be an image of the target's shape, not its pixels in a row.
printf 'model:\n  loss: mse\n  layers:\n    - {type: conv2d, channels: 1, kernel: 3, padding: 1}\n    - {type: flatten}\ndata: {dataset: fashion_mnist, flatten: false, task: denoise}\npipeline: {stages: 2}\n' \
  > "$WORK/flat_image.yaml"
rejected flat_image "flat_image.yaml:5: model.layers[1] (flatten): outputs [784] per example, but the data's (fashion_mnist) targets are [1, 28, 28]" \
  "$WORK/flat_image.yaml"

# char_model FILE VOCAB HEAD [PATH]: a character model on a text file (or PATH); the embedding's
# vocab is on line 4, the head on line 7.
printf 'In the beginning the Universe was created. This has made a lot of people very angry.\n%.0s' \
  $(seq 40) > "$WORK/corpus.txt"
char_model() {
  printf 'model:\n  layers:\n    - type: embedding\n      vocab: %s\n      dim: 8\n    - {type: transformer_block, heads: 2}\n    - {type: linear, units: %s}\ndata: {dataset: text, path: %s, seq_len: 8, val_fraction: 0.1}\ntrain: {steps: 2, batch_size: 4}\npipeline: {stages: 2, micro_batches: 2}\n' \
    "$2" "$3" "${4:-$WORK/corpus.txt}" > "$WORK/$1"
}
char_model small_vocab.yaml 100 256
rejected small_vocab "small_vocab.yaml:4: model.layers[0].vocab: 100 is smaller than the data's vocabulary of 256 token ids (text)" \
  "$WORK/small_vocab.yaml"
char_model wide_head.yaml 256 300
rejected wide_head "wide_head.yaml:7: model.layers[2] (linear): outputs 300 classes, but the data (text) has 256" \
  "$WORK/wide_head.yaml"

# data.path: a device or a FIFO is refused before it is opened.
char_model zero.yaml 256 256 /dev/zero
rejected dev_zero "/dev/zero: data.path: must be a regular file or a folder of them, not a character device" \
  "$WORK/zero.yaml"
mkfifo "$WORK/pipe"
char_model fifo.yaml 256 256 "$WORK/pipe"
rejected fifo "$WORK/pipe: data.path: must be a regular file or a folder of them, not a FIFO" \
  "$WORK/fifo.yaml"
echo "data contract: mismatches refused at preflight in one line"
