#!/usr/bin/env bash
# Bad input on 2 ranks: a one-line error naming file, line and key, a non-zero exit on every
# rank, no hang, no MPI_ABORT banner, and nothing written into the run directory. Covers the
# config, the world layout, the partition, the memory limit (evaluation included), paths, and
# sizes that cannot fit in memory.
source "$(dirname "$0")/lib.sh"
mlp=$(dirname "$0")/files/mlp.yaml

printf 'model:\n  layers:\n    - {type: linear, units: 4}\noptimizer:\n  lr: -1\n' > "$WORK/bad.yaml"
rejected config "bad.yaml:5: optimizer.lr: must be > 0, got -1" "$WORK/bad.yaml"
printf 'model:\n  layers:\n    - {type: linear, units: 4}\noptimizer:\n  lr: .inf\n' > "$WORK/inf.yaml"
rejected infinite "inf.yaml:5: optimizer.lr: expected a finite number, got '.inf'" "$WORK/inf.yaml"
# The wsd schedule's warm-up and decay must fit in the run (a cross-section rule).
rejected wsd_phases "--set optimizer.schedule.decay_steps: warmup_steps + decay_steps = 2 + 2 = 4 must be at most train.steps (3)" \
  "$mlp" --set optimizer.schedule.kind=wsd --set optimizer.schedule.warmup_steps=2 \
  --set optimizer.schedule.decay_steps=2
rejected directory "$WORK: is a directory, not an experiment file" "$WORK"
# A FIFO or a device as the experiment file: refused, never waited on (a FIFO blocked every rank
# forever) nor read without end (/dev/zero grew to 845 MB in 6 s).
mkfifo "$WORK/fifo.yaml"
rejected fifo "$WORK/fifo.yaml: an experiment file must be a regular file" "$WORK/fifo.yaml"
rejected dev_zero "/dev/zero: an experiment file must be a regular file" /dev/zero

# World size and config disagree; partition sums; more stages than layers.
rejected topology "pipeline.stages (4) x pipeline.data_parallel (1) = 4 ranks, but mpirun started 2" \
  "$mlp" --set pipeline.stages=4
rejected partition "--set pipeline.partition: [2, 2] sums to 4 layers, but the model has 6" \
  "$mlp" --set 'pipeline.partition=[2,2]'
printf 'model:\n  layers:\n    - {type: linear, units: 4}\ndata: {dataset: synthetic, num_examples: 64, features: 8, classes: 4}\npipeline: {stages: 2}\n' \
  > "$WORK/one_layer.yaml"
rejected stages "the model has 1 layer, fewer than the 2 pipeline stages" "$WORK/one_layer.yaml"
# A model graph's mistakes (save, read, input), each named by its key's file and line.
graph_data='data: {dataset: synthetic, num_examples: 64, features: 8, classes: 4}
pipeline: {stages: 2}'
printf 'model:\n  layers:\n    - {type: linear, units: 8}\n    - {type: add, read: [skip]}\n    - {type: linear, units: 4, save: skip}\n%s\n' \
  "$graph_data" > "$WORK/read_early.yaml"
rejected graph_read_early "read_early.yaml:4: model.layers[1].read[0]: reads 'skip' before model.layers[2] saves it" \
  "$WORK/read_early.yaml"
printf 'model:\n  layers:\n    - {type: linear, units: 8, save: skip}\n    - {type: linear, units: 4}\n%s\n' \
  "$graph_data" > "$WORK/never_read.yaml"
rejected graph_never_read "never_read.yaml:3: model.layers[0].save: no later layer reads 'skip'" \
  "$WORK/never_read.yaml"
printf 'model:\n  layers:\n    - {type: linear, units: 8, save: skip}\n    - {type: linear, units: 4}\n    - {type: add, read: [skip]}\n%s\n' \
  "$graph_data" > "$WORK/add_shape.yaml"
rejected graph_add_shape "add_shape.yaml:5: model.layers[2].read[0]: 'skip' has shape [8], but the main input has [4]" \
  "$WORK/add_shape.yaml"
# A tie group whose second embedding's matrix is not the first's [vocab, dim].
printf 'model:\n  layers:\n    - {type: embedding, vocab: 16, dim: 8, save: x}\n    - {type: embedding, input: input, vocab: 17, dim: 8, tie: embedding}\n    - {type: add, read: [x]}\n    - {type: linear, units: 16, tie: embedding}\ndata: {dataset: synthetic, tokens: true, vocab: 16, seq_len: 8, num_examples: 64}\npipeline: {stages: 2}\n' \
  > "$WORK/tie_vocab.yaml"
rejected tie_group_vocab "tie_vocab.yaml:4: model.layers[1].tie: a tied embedding needs the first embedding's vocab (16, model.layers[0]), got 17" \
  "$WORK/tie_vocab.yaml"
# A U-Net's layers: a concat whose skip has another resolution, an upsample of a flat input.
image_data='data: {dataset: fashion_mnist, flatten: false, task: denoise}
pipeline: {stages: 2}'
printf 'model:\n  loss: mse\n  layers:\n    - {type: conv2d, channels: 2, kernel: 3, padding: 1, save: skip}\n    - {type: max_pool2d, kernel: 2}\n    - {type: concat, read: [skip]}\n%s\n' \
  "$image_data" > "$WORK/concat_shape.yaml"
rejected graph_concat_shape "concat_shape.yaml:6: model.layers[2].read[0]: 'skip' has shape [2, 28, 28], but concat needs [N, 14, 14] (the main input [2, 14, 14] past its first axis)" \
  "$WORK/concat_shape.yaml"
printf 'model:\n  layers:\n    - {type: linear, units: 8}\n    - {type: upsample}\n    - {type: linear, units: 4}\n%s\n' \
  "$graph_data" > "$WORK/upsample_flat.yaml"
rejected upsample_flat "upsample_flat.yaml:4: model.layers[1] (upsample, input [8]): upsample needs an input [channels, height, width], got [8]" \
  "$WORK/upsample_flat.yaml"
# Denoising: Fashion-MNIST's alone, without augmentation (its targets are the stored images).
rejected denoise_synthetic "--set data.task: denoise is only for data.dataset: fashion_mnist" \
  "$mlp" --set data.task=denoise
rejected noise_without_denoise "--set data.noise_std: only with data.task: denoise" \
  "$mlp" --set data.noise_std=0.1
printf 'model:\n  loss: mse\n  layers:\n    - {type: conv2d, channels: 1, kernel: 3, padding: 1}\ndata: {dataset: fashion_mnist, flatten: false, task: denoise, augment_flip: true}\n' \
  > "$WORK/denoise_flip.yaml"
rejected denoise_augment "denoise_flip.yaml:5: data.augment_flip: not with data.task: denoise (the targets are the images as stored)" \
  "$WORK/denoise_flip.yaml"
# The batch splits by the micro-batches (checked with the config) but not by the replicas the world
# gives (checked at preflight): the same rule, in the same words.
rejected batch_split "--set train.batch_size: must be divisible by pipeline.micro_batches x data-parallel replicas = 4 x 2 = 8, got 36" \
  "$mlp" --set train.batch_size=36 --set pipeline.stages=1 --set pipeline.data_parallel=auto

# A memory limit no partition meets: a layer too large alone, or the smallest limit that fits
# (accumulating the weight gradients: auto's group operands would add to every need); a limit that
# weight_grads: auto's group operands do not fit, where accumulating would (not chosen in its
# place: the bits would depend on the limit); a limit that is not a size.
accumulate=(--set pipeline.weight_grads=accumulate)
rejected limit_layer "--set pipeline.memory_limit: layer 3 (linear) alone needs 68.8 KiB (parameters, gradients, optimizer state and activations), over the limit of 60.0 KiB" \
  "$mlp" --set pipeline.memory_limit=60KiB "${accumulate[@]}"
rejected limit_smallest "--set pipeline.memory_limit: no partition of 6 layers into 2 stages fits 69.0 KiB per rank; the smallest limit that fits is 69.5 KiB" \
  "$mlp" --set pipeline.memory_limit=69KiB "${accumulate[@]}"
rejected limit_manual "--set pipeline.memory_limit: stage 1 (layers 3-5) needs 69.5 KiB, over the limit of 69.0 KiB" \
  "$mlp" --set pipeline.memory_limit=69KiB --set pipeline.partition=uniform "${accumulate[@]}"
rejected limit_grouped "--set pipeline.memory_limit: pipeline.weight_grads: auto (grouped by 4) needs 90.2 KiB per rank with its weight-gradient operands, over the limit of 80.0 KiB; set pipeline.weight_grads: accumulate, which needs 69.5 KiB (auto does not choose it for you: the weights' bits would then depend on the limit)" \
  "$mlp" --set pipeline.memory_limit=80KiB
# Virtual stages: the interleaved schedule's shape for the world's K (the rule mpipe schedule
# applies), and what runs with one chunk per rank only.
rejected interleaved_one_chunk "mlp.yaml: pipeline.virtual_stages: interleaved needs 2 or more chunks per rank, got 1; with one chunk per rank use 1f1b" \
  "$mlp" --set pipeline.schedule=interleaved
rejected chunks_need_interleaved "--set pipeline.virtual_stages: 2 chunks per rank need the interleaved or zbv schedule, got gpipe" \
  "$mlp" --set pipeline.virtual_stages=2
# zbv implies v = 2 and refuses another explicit count.
rejected zbv_chunks "--set pipeline.virtual_stages: zbv needs 2 chunks per rank (the V: chunk 0 of rank r is stage r, chunk 1 stage 2K-1-r), got 3" \
  "$mlp" --set pipeline.schedule=zbv --set pipeline.virtual_stages=3
interleaved=(--set pipeline.schedule=interleaved --set pipeline.virtual_stages=2)
rejected interleaved_micro_batches_train "--set pipeline.micro_batches: interleaved needs a multiple of the pipeline ranks (2), got 1" \
  "$mlp" "${interleaved[@]}" --set pipeline.micro_batches=1
rejected weight_group_over_micro_batches "--set pipeline.weight_group: must be at most pipeline.micro_batches = 4, got 5" \
  "$mlp" --set pipeline.weight_grads=grouped --set pipeline.weight_group=5
rejected limit_size "--set pipeline.memory_limit: expected a size such as 6GiB, 512MiB or 2G, got 'lots'" \
  "$mlp" --set pipeline.memory_limit=lots
# --set key paths: a list item by index; a key the config does not know, named as such.
rejected list_index "--set model.layers[0].unitz: unknown key" "$mlp" --set 'model.layers[0].unitz=5'
rejected list_index_range "--set model.layers[9].units: model.layers has 6 item(s), counted from 0" \
  "$mlp" --set 'model.layers[9].units=5'
rejected non_ascii_key "--set tràin: unknown key (known: model, data, train, optimizer, pipeline, checkpoint, log, comm)" \
  "$mlp" --set 'tràin.steps=3'
# Evaluation batches (64 x the training micro-batch) that training's limit cannot hold.
evaluated=$(dirname "$0")/files/eval_memory_limit.yaml
rejected limit_evaluation "$evaluated:13: train.eval_batch_size: evaluation batches of 2048 examples \
need 10.1 MiB on stage 1 (layers 2-5), over the limit of 7.2 MiB ($evaluated:18: \
pipeline.memory_limit); at most 1060 fit" "$evaluated"

# Paths: checked before training, not after it.
rejected export_missing "$WORK/nowhere/w.safetensors: --export-weights: the folder $WORK/nowhere does not exist" \
  "$mlp" --export-weights "$WORK/nowhere/w.safetensors"
rejected export_folder "$WORK: --export-weights is a directory, not a file" "$mlp" --export-weights "$WORK"
# Data that is not there: the key's file and line, and the working directory of a relative path
# (a config's runs/kjv/... read from another folder said only "data.train: no file matches").
printf 'model:\n  layers:\n    - {type: embedding, vocab: 16, dim: 8}\n    - {type: linear, units: 16}\ndata:\n  dataset: tokens\n  train: nowhere/train_*.bin\n  val: nowhere/val_*.bin\n  tokenizer: nowhere/tokenizer.model\n  seq_len: 8\npipeline: {stages: 2}\n' \
  > "$WORK/no_shards.yaml"
rejected no_shards "no_shards.yaml:7: data.train: no file matches 'nowhere/train_*.bin' (a relative path, read from the working directory $PWD)" \
  "$WORK/no_shards.yaml"
touch "$WORK/file"
RUN_DIR=$WORK/file/run rejected run_dir_file \
  "$WORK/file/run: cannot create run directory: $WORK/file is not a directory" "$mlp"

# Sizes: overflow and memory, at preflight with the key.
printf 'model:\n  layers:\n    - {type: linear, units: 9223372036854775807}\n    - {type: linear, units: 4}\ndata: {dataset: synthetic, num_examples: 64, features: 8, classes: 4}\npipeline: {stages: 2}\n' \
  > "$WORK/overflow.yaml"
rejected overflow "overflow.yaml:3: model.layers[0] (linear): output bytes overflows 64 bits" "$WORK/overflow.yaml"
printf 'model:\n  layers:\n    - {type: linear, units: 100000000000}\n    - {type: linear, units: 4}\ndata: {dataset: synthetic, num_examples: 64, features: 8, classes: 4}\npipeline: {stages: 2}\n' \
  > "$WORK/huge_layer.yaml"
rejected huge_layer "huge_layer.yaml:3: model.layers[0] (linear): needs 13.1 TiB for its parameters, gradients and optimizer state; this machine has" \
  "$WORK/huge_layer.yaml"
rejected huge_batch "--set train.batch_size: one micro-batch of 1000000000 examples needs" \
  "$mlp" --set train.batch_size=4000000000
printf 'model:\n  layers:\n    - {type: linear, units: 4}\n    - {type: linear, units: 4}\ndata: {dataset: synthetic, num_examples: 100000000000, features: 8, classes: 4}\npipeline: {stages: 2}\n' \
  > "$WORK/huge_data.yaml"
rejected huge_data "huge_data.yaml:5: data.num_examples: the dataset needs 3.3 TiB in memory" "$WORK/huge_data.yaml"

# Command lines that do not parse: exit status 2 on every rank (each rank's own status is
# printed by a wrapper), one error line that names the subcommand's --help, nothing written.
# parse_error NAME MESSAGE ARGS...: `mpipe ARGS` on 2 ranks.
parse_error() {
  local name=$1 message=$2 status=0
  shift 2
  # shellcheck disable=SC2016  # $0, $@ and the rank are the inner shell's
  timeout 60 mpirun -n 2 --oversubscribe --bind-to none \
    bash -c '"$0" "$@"; echo "rank $OMPI_COMM_WORLD_RANK: exit status $?"' "$MPIPE" "$@" \
    > "$WORK/$name.out" 2>&1 || status=$?
  if [[ $status -ne 0 || $(grep -cx "rank [01]: exit status 2" "$WORK/$name.out") -ne 2 ]]; then
    cat "$WORK/$name.out"
    echo "FAILED: $name: not exit status 2 on every rank"
    exit 1
  fi
  failed_in_one_line "$name" 2 "$message" "$WORK/$name"
}
parse_error unknown_option \
  "The following argument was not expected: --bogus (\`mpipe train --help\` lists the options)" \
  train "$mlp" --bogus
parse_error no_config "config is required (\`mpipe train --help\` lists the options)" train
subcommands="train, schedule, plan, generate, translate, eval, score, serve, submit, status, cancel, tokenize, tokenize-pairs, export, compare, supervise"
parse_error no_subcommand "A subcommand is required: $subcommands (\`mpipe --help\` lists the options)"
parse_error unknown_subcommand \
  "unknown subcommand 'frobnicate'; the subcommands are $subcommands (\`mpipe --help\` lists the options)" \
  frobnicate
parse_error version_extra \
  "The following argument was not expected: extra (\`mpipe --help\` lists the options)" --version extra
parse_error empty_run_dir "--run-dir: must not be empty (\`mpipe train --help\` lists the options)" \
  train "$mlp" --run-dir ''
parse_error empty_export "--export-weights: must not be empty (\`mpipe train --help\` lists the options)" \
  train "$mlp" --export-weights ''
parse_error bad_logits_limit \
  "--logits-limit: expected a size such as 6GiB, 512MiB or 2G, got 'lots' (\`mpipe eval --help\` lists the options)" \
  eval "$mlp" --weights w.safetensors --logits l.safetensors --logits-limit lots
parse_error bad_stages "--stages: Value 0 not in range 1 to 64 (\`mpipe schedule --help\` lists the options)" \
  schedule --stages 0
# The interleaved schedule's shape: M a multiple of K, v >= 2, and chunks only with it or zbv
# (which needs exactly 2).
parse_error interleaved_micro_batches \
  "--micro-batches: interleaved needs a multiple of the pipeline ranks (4), got 6 (\`mpipe schedule --help\` lists the options)" \
  schedule --schedule interleaved --stages 4 --virtual-stages 2 --micro-batches 6
parse_error interleaved_one_chunk \
  "--virtual-stages: interleaved needs 2 or more chunks per rank, got 1; with one chunk per rank use 1f1b (\`mpipe schedule --help\` lists the options)" \
  schedule --schedule interleaved --stages 4 --micro-batches 8
parse_error chunks_without_interleaved \
  "--virtual-stages: 2 chunks per rank need the interleaved or zbv schedule, got 1f1b (\`mpipe schedule --help\` lists the options)" \
  schedule --schedule 1f1b --stages 4 --virtual-stages 2 --micro-batches 8
parse_error zbv_one_chunk \
  "--virtual-stages: zbv needs 2 chunks per rank (the V: chunk 0 of rank r is stage r, chunk 1 stage 2K-1-r), got 1 (\`mpipe schedule --help\` lists the options)" \
  schedule --schedule zbv --stages 4 --virtual-stages 1 --micro-batches 8
# --help and --version still exit 0 on every rank.
# shellcheck disable=SC2016
timeout 60 mpirun -n 2 --oversubscribe --bind-to none \
  bash -c '"$0" --version > /dev/null; echo "rank $OMPI_COMM_WORLD_RANK: exit status $?"' "$MPIPE" \
  > "$WORK/version.out" 2>&1
[[ $(grep -cx "rank [01]: exit status 0" "$WORK/version.out") -eq 2 ]] ||
  { cat "$WORK/version.out"; echo "FAILED: --version"; exit 1; }

# The companion commands, one process: the same line and status.
# alone NAME MESSAGE ARGS...: `mpipe ARGS` exits 2 with MESSAGE on its one error line.
alone() {
  local name=$1 message=$2 status=0
  shift 2
  "$MPIPE" "$@" > "$WORK/$name.out" 2>&1 || status=$?
  failed_in_one_line "$name" "$status" "$message" "$WORK/$name"
  [[ $status -eq 2 ]] || { echo "FAILED: $name: exit status $status, not 2"; exit 1; }
  ! grep -q '\[rank ' "$WORK/$name.out" || { echo "FAILED: $name: a rank in one process"; exit 1; }
}
alone negative_rtol \
  "--rtol: must be a number >= 0 (0 = bit-identical), got -1 (\`mpipe compare --help\` lists the options)" \
  compare a.safetensors b.safetensors --rtol -1
# Integer options say what they take (CLI11's own check printed its bound in 309 digits).
alone export_negative_step \
  "--step: must be an integer >= 0, got -1 (\`mpipe export --help\` lists the options)" \
  export "$WORK/run" "$WORK/w.safetensors" --step -1
alone export_fractional_step \
  "--step: must be an integer >= 0, got 1.5 (\`mpipe export --help\` lists the options)" \
  export "$WORK/run" "$WORK/w.safetensors" --step 1.5
alone generate_negative_top_k \
  "--top-k: must be an integer >= 0 (0 = all), got -1 (\`mpipe generate --help\` lists the options)" \
  generate "$mlp" --weights w.safetensors --top-k -1
# (A negative --seed was taken as 2^64 - 1, where train.seed refuses it.)
alone generate_negative_seed \
  "--seed: must be an integer >= 0, got -1 (\`mpipe generate --help\` lists the options)" \
  generate "$mlp" --weights w.safetensors --seed -1
# generate reads no shards, but the tokenizer: named as train names it (it said only
# "nowhere/tokenizer.model: cannot open").
alone generate_no_tokenizer \
  "no_shards.yaml:9: data.tokenizer: nowhere/tokenizer.model does not exist (a relative path, read from the working directory $PWD)" \
  generate "$WORK/no_shards.yaml" --weights "$WORK/lm.safetensors"
alone empty_name "--name: must not be empty (\`mpipe submit --help\` lists the options)" \
  submit "$WORK/spool" "$mlp" --name ''
[[ ! -e "$WORK/spool" ]] || { echo "FAILED: submit --name '' created the spool"; exit 1; }
# mpipe supervise: its host list and its command, before anything is started.
alone supervise_hosts "--hosts: 'h1:0': the slots after ':' must be an integer from 1 to 4096" \
  supervise --hosts h1:0 -- train "$mlp"
alone supervise_command \
  "supervise: the command after -- must be \`train CONFIG [options]\` or \`serve --spool DIR [options]\`, got 'eval'" \
  supervise --hosts h1:1 -- eval "$mlp"
alone supervise_restarts \
  "--max-restarts: must be an integer >= 0, got -1 (\`mpipe supervise --help\` lists the options)" \
  supervise --hosts h1:1 --max-restarts -1 -- train "$mlp"
alone supervise_regrow \
  "--regrow-interval: must be a number of seconds >= 0 (0: never widen), got -5 (\`mpipe supervise --help\` lists the options)" \
  supervise --hosts h1:1 --regrow-interval -5 -- train "$mlp"
alone supervise_regrow_text \
  "--regrow-interval: must be a number of seconds >= 0 (0: never widen), got 1m (\`mpipe supervise --help\` lists the options)" \
  supervise --hosts h1:1 --regrow-interval 1m -- train "$mlp"
alone supervise_spare_twice "--spare: h1 is in --hosts too" \
  supervise --hosts h1:1,h2:1 --spare h3,h1 -- train "$mlp"
alone supervise_spare_slots "--spare: 'h3:x': the slots after ':' must be an integer from 1 to 4096" \
  supervise --hosts h1:1 --spare h3:x -- train "$mlp"
alone supervise_launcher \
  "--launcher: must be mpirun or srun, got ssh (\`mpipe supervise --help\` lists the options)" \
  supervise --hosts h1:1 --launcher ssh -- train "$mlp"
unset SLURM_JOB_NODELIST  # (in case the suite runs inside a Slurm job)
alone supervise_srun_outside_slurm \
  "supervise --launcher srun: SLURM_JOB_NODELIST is not set: run it inside a Slurm allocation (a batch script), or give --hosts" \
  supervise --launcher srun -- train "$mlp"
# (scontrol, which expands the list, comes with the tests' packages; its own reason ends the line.)
SLURM_JOB_NODELIST='h[2-' SLURM_TASKS_PER_NODE=1 alone supervise_bad_nodelist \
  "supervise --launcher srun: scontrol show hostnames 'h[2-' failed: " \
  supervise --launcher srun -- train "$mlp"

# plan reports the overflow too, instead of printing a wrapped total.
status=0
"$MPIPE" plan "$WORK/overflow.yaml" > "$WORK/plan.out" 2>&1 || status=$?
[[ $status -eq 2 ]] && grep -q "output bytes overflows 64 bits" "$WORK/plan.out" ||
  { cat "$WORK/plan.out"; echo "FAILED: plan of an overflowing model"; exit 1; }
# A FIFO or a device where a regular file belongs, for the other commands: one line, exit status 2,
# within the timeout (plan and submit waited on the FIFO forever; compare, generate and
# --init-weights said "cannot read: Operation not supported").
# special NAME MESSAGE ARGS...: `mpipe ARGS`, bounded by timeout, exits 2 with MESSAGE.
special() {
  local name=$1 message=$2 status=0
  shift 2
  timeout 30 "$MPIPE" "$@" > "$WORK/$name.out" 2>&1 || status=$?
  failed_in_one_line "$name" "$status" "$message" "$WORK/$name"
  [[ $status -eq 2 ]] || { echo "FAILED: $name: exit status $status, not 2"; exit 1; }
}
mkfifo "$WORK/fifo.safetensors"
special plan_fifo "$WORK/fifo.yaml: an experiment file must be a regular file" plan "$WORK/fifo.yaml"
special plan_zero "/dev/zero: an experiment file must be a regular file" plan /dev/zero
special submit_fifo "$WORK/fifo.yaml: an experiment file must be a regular file" \
  submit "$WORK/spool" "$WORK/fifo.yaml"
special compare_fifo "$WORK/fifo.safetensors: not a regular file" \
  compare "$WORK/fifo.safetensors" "$WORK/fifo.safetensors"
special compare_zero "/dev/zero: not a regular file" compare /dev/zero /dev/zero
special generate_fifo "$WORK/fifo.safetensors: not a regular file" \
  generate "$(dirname "$0")/files/tied.yaml" --weights "$WORK/fifo.safetensors"
rejected init_fifo "$WORK/fifo.safetensors: not a regular file" "$mlp" \
  --init-weights "$WORK/fifo.safetensors"
rejected init_zero "/dev/zero: not a regular file" "$mlp" --init-weights /dev/zero
# A FIFO (or a device such as /dev/null) as --export-weights: refused at preflight (the rename
# into place replaced it with a file at the end of the run).
rejected export_fifo "$WORK/fifo.safetensors: --export-weights exists and is not a regular file (a run writes a new file or replaces a regular one)" \
  "$mlp" --export-weights "$WORK/fifo.safetensors"
echo "bad input: one-line errors, non-zero exit, nothing written"
