#!/usr/bin/env bash
# mpipe eval: a tiny language model trained on 2 ranks, its checkpoints (the run's newest, and a
# step folder), and its exported weights evaluated by one process and by 2 ranks print the loss its
# run logged in metrics.jsonl at that step, bit for bit, with the perplexity (in metrics.jsonl too),
# --losses writes each example's loss and --logits its logits, the same bytes at any K and D; a
# layout the world cannot hold (the error says which one it can), an unknown split, a split the
# data does not have, a missing checkpoint, another model's checkpoint, weights that do not fit the
# model, a --losses file in no folder and logits over --logits-limit are refused in one line on
# every rank, with no losses or logits file written.
# Usage: eval.sh LM_CONFIG OTHER_CONFIG
source "$(dirname "$0")/checkpoint_lib.sh"
lm=$1 other=$2
train 2 lm "$lm" --set train.steps=4 --set train.eval_every=2 --set checkpoint.every=2

# logged STEP KEY: the value of KEY in metrics.jsonl's evaluation of step STEP, as Python writes
# the double (the shortest text that reads back as it, as mpipe eval prints it).
logged() {
  python3 -c 'import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
evals = [r for r in records if r.get("split") == "test" and r["step"] == int(sys.argv[2])]
print(repr(evals[-1][sys.argv[3]]) if evals and sys.argv[3] in evals[-1] else "none")' \
    "$WORK/lm/metrics.jsonl" "$1" "$2"
}
# evaluates NAME RANKS EXPECTED_LOSS ARGS...: `mpipe eval LM ARGS` (one process when RANKS is 1)
# prints EXPECTED_LOSS as the test loss, with a perplexity.
evaluates() {
  local name=$1 ranks=$2 loss=$3
  shift 3
  local launch=(timeout 120)
  [[ $ranks -eq 1 ]] || launch+=(mpirun -n "$ranks" --oversubscribe --bind-to none)
  "${launch[@]}" "$MPIPE" eval "$lm" "$@" > "$WORK/$name.out" 2> "$WORK/$name.log" \
    || { cat "$WORK/$name.log" "$WORK/$name.out"; echo "FAILED: $name"; exit 1; }
  grep -qE "^.*: test loss $loss \| test accuracy [0-9.]+% \| perplexity [0-9.]+ \| [0-9]+ examples$" \
    "$WORK/$name.out" || { cat "$WORK/$name.out"; echo "FAILED: $name: expected test loss $loss"; exit 1; }
}
final=$(logged 4 loss)
middle=$(logged 2 loss)
[[ $final != none && $middle != none ]] || { cat "$WORK/lm/metrics.jsonl"; echo "FAILED: no evaluations logged"; exit 1; }
[[ $(logged 4 perplexity) != none ]] || { cat "$WORK/lm/metrics.jsonl"; echo "FAILED: no perplexity logged"; exit 1; }
evaluates newest_k1 1 "$final" --checkpoint "$WORK/lm"
evaluates newest_k2 2 "$final" --checkpoint "$WORK/lm"
grep -q "^$WORK/lm (checkpoint step 4): " "$WORK/newest_k2.out" || { cat "$WORK/newest_k2.out"; echo "FAILED: the source"; exit 1; }
evaluates step2_k2 2 "$middle" --checkpoint "$WORK/lm/checkpoints/step_00000002/"
evaluates weights_k1 1 "$final" --weights "$WORK/lm.safetensors"

# --losses: one line per example (index, loss, tokens), the same at K=1 and K=2, whose
# token-weighted mean is the loss printed. --logits: one f32 tensor [examples, seq_len 8, vocab
# 32], the same bytes at K=1, at K=2 (the last stage is rank 1, rank 0 writes) and at D=2 (the
# replicas take the batches in turns: rank 0 puts them back in example order).
evaluates losses_k1 1 "$final" --checkpoint "$WORK/lm" --losses "$WORK/k1.losses" \
  --logits "$WORK/k1.logits"
evaluates losses_k2 2 "$final" --checkpoint "$WORK/lm" --losses "$WORK/k2.losses" \
  --logits "$WORK/k2.logits"
evaluates logits_d2 2 "$final" --checkpoint "$WORK/lm" --logits "$WORK/d2.logits" \
  --set pipeline.stages=1 --set pipeline.data_parallel=2
cmp "$WORK/k1.losses" "$WORK/k2.losses" || { echo "FAILED: per-example losses differ at K=2"; exit 1; }
cmp "$WORK/k1.logits" "$WORK/k2.logits" || { echo "FAILED: logits differ at K=2"; exit 1; }
cmp "$WORK/k1.logits" "$WORK/d2.logits" || { echo "FAILED: logits differ at D=2"; exit 1; }
python3 -c 'import json, struct, sys
with open(sys.argv[1], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    data = f.read()
assert header["__metadata__"]["split"] == "test", header["__metadata__"]
assert sorted(header) == ["__metadata__", "logits"], sorted(header)
logits = header["logits"]
assert logits["dtype"] == "F32" and logits["shape"] == [int(sys.argv[2]), 8, 32], logits
values = struct.unpack(f"<{len(data) // 4}f", data)
assert len(values) == int(sys.argv[2]) * 8 * 32 and len(set(values)) > 1000, len(values)' \
  "$WORK/k1.logits" "$(grep -oE '[0-9]+ examples$' "$WORK/losses_k1.out" | cut -d' ' -f1)" ||
  { echo "FAILED: the logits file"; exit 1; }
python3 -c 'import sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().splitlines()]
examples = int(sys.argv[3])
assert [int(r[0]) for r in rows] == list(range(examples)), "not one line per example, in order"
tokens = sum(int(r[2]) for r in rows)
mean = sum(float(r[1]) * int(r[2]) for r in rows) / tokens
assert abs(mean - float(sys.argv[2])) <= 1e-9 * abs(mean), (mean, sys.argv[2])' \
  "$WORK/k1.losses" "$final" "$(grep -oE '[0-9]+ examples$' "$WORK/losses_k1.out" | cut -d' ' -f1)" ||
  { head -3 "$WORK/k1.losses"; echo "FAILED: the per-example losses"; exit 1; }

export subcommand="eval"  # what fails() runs
fails split 2 "--split dev: expected train, val or test" "$lm" --checkpoint "$WORK/lm" --split dev
# A layout that does not fit the world: the error says which one does (configs/translate_bible.yaml
# fixes 2 stages, which one process or 3 ranks cannot hold).
fails layout 2 "$lm: pipeline.stages (4) x pipeline.data_parallel (2) = 8 ranks, but mpirun started 2; the result is the same on any layout: give --set pipeline.stages=2 --set pipeline.data_parallel=1" \
  "$lm" --checkpoint "$WORK/lm" --set pipeline.stages=4 --set pipeline.data_parallel=2
fails no_val 2 "--split val: synthetic data has no val split (its held-out split is test)" \
  "$lm" --checkpoint "$WORK/lm" --split val
fails no_run 2 "$WORK/typo: --checkpoint: no committed checkpoint (the directory does not exist)" \
  "$lm" --checkpoint "$WORK/typo"
fails no_step 2 "$WORK/lm/checkpoints/step_00000003: --checkpoint: not a committed checkpoint (committed in $WORK/lm: 2, 4)" \
  "$lm" --checkpoint "$WORK/lm/checkpoints/step_00000003"
fails other_model 2 "$WORK/lm/checkpoints/step_00000004: tensor layers.0.weight is missing" \
  "$other" --checkpoint "$WORK/lm"
fails other_weights 2 "$WORK/lm.safetensors: tensor layers.0.weight is missing" \
  "$other" --weights "$WORK/lm.safetensors" --losses "$WORK/other.losses" --logits "$WORK/other.logits"
[[ ! -e "$WORK/other.losses" && ! -e "$WORK/other.logits" ]] ||
  { echo "FAILED: a losses or logits file was written by a failed eval"; exit 1; }
fails losses_folder 2 "$WORK/nowhere/l.tsv: --losses: the folder $WORK/nowhere does not exist" \
  "$lm" --checkpoint "$WORK/lm" --losses "$WORK/nowhere/l.tsv"
# 32 test examples of [8, 32] floats: 32 KiB.
fails logits_limit 2 "$WORK/big.logits: --logits: the outputs of 32 examples (each [8, 32] floats) take 32.0 KiB, over --logits-limit 31.0 KiB: evaluate fewer (--set train.eval_batches=N) or raise the limit" \
  "$lm" --checkpoint "$WORK/lm" --logits "$WORK/big.logits" --logits-limit 31KiB
[[ ! -e "$WORK/big.logits" ]] || { echo "FAILED: a logits file over the limit was written"; exit 1; }
echo "eval: a checkpoint (newest and by step folder) and its weights give the run's logged test loss at K=1 and K=2, with perplexity; per-example losses and logits; bad splits, checkpoints, weights, --losses and --logits refused in one line"
