#!/usr/bin/env bash
# A tie group of three uses: the encoder-decoder of files/translate_tied.yaml, whose source
# embedding (layer 0), target embedding (layer 18) and output head (layer 42) share one matrix,
# their gradients summed in use order. Its weights after 3 steps are bit-identical at K = 1, 2, 4
# (the uses on one rank, on two, or at K = 4 on ranks 0, 1 and 3) under gpipe, 1f1b, zb_h1,
# interleaved (2 chunks per rank) and zbv (rank 0 holding the first and the third use, rank 1 the
# second); at D = 2 under weight_grads: tree; after a resume at K = 2 to K = 4; and after a
# measured re-partition moved layers. The export and the checkpoint hold the matrix once, the
# export's metadata naming both copies; mpipe translate loads either. A run through
# translate_transparency.sh.
# Usage: tied_group.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
train 1 k1 "$config" --set checkpoint.every=3
train 2 k2 "$config"
same k1 k2
train 4 k4-1f1b "$config" --set pipeline.schedule=1f1b --set pipeline.recompute=per_layer
same k1 k4-1f1b
train 4 k4-zb_h1 "$config" --set pipeline.schedule=zb_h1 --set pipeline.recompute=never
same k1 k4-zb_h1
train 2 k2-interleaved "$config" --set pipeline.schedule=interleaved --set pipeline.virtual_stages=2
same k1 k2-interleaved
train 2 k2-zbv "$config" --set pipeline.schedule=zbv --set pipeline.recompute=except_last
same k1 k2-zbv

tree=(--set pipeline.weight_grads=tree)
train 1 k1-tree "$config" "${tree[@]}"
train 4 k2d2-tree "$config" "${tree[@]}" --set pipeline.stages=2 --set pipeline.data_parallel=2 \
  --set pipeline.micro_batches=2
same k1-tree k2d2-tree

train 2 straight "$config" --set train.steps=6
train 2 resumed "$config" --set train.steps=3
train 4 resumed "$config" --set train.steps=6 --set pipeline.schedule=1f1b --resume
same straight resumed
# A measured re-partition (rank 1 slowed by the test hook, as in measured_balance.sh) moves decoder
# layers, their relayed values and optimizer state, between the ranks: the same weights.
MPIPE_TEST_SLOW_RANK=1:100 train 2 balanced "$config" --set train.steps=6 \
  --set pipeline.balance=measured --set pipeline.balance_after=3
grep "step 3: re-partitioned" "$WORK/balanced.log" ||
  { cat "$WORK/balanced.log"; echo "FAILED: balanced: no re-partition"; exit 1; }
same straight balanced

# The matrix once: the export has layers.0.token and neither copy, and names both; so do the
# checkpoint's shards (weights and Adam's state).
python3 - "$WORK/k1.safetensors" "$WORK"/k1/checkpoints/step_00000003/stage_*.safetensors <<'PY'
import json, struct, sys
def header(path):
    with open(path, "rb") as f:
        return json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
export = header(sys.argv[1])
copies = ["layers.18.token", "layers.42.weight"]
assert "layers.0.token" in export and not [c for c in copies if c in export], sorted(export)
tied = json.loads(export["__metadata__"]["tied_weights"])
assert tied == {c: "layers.0.token" for c in copies}, tied
names = [name for path in sys.argv[2:] for name in header(path) if name != "__metadata__"]
assert not [n for n in names if n.endswith(tuple(copies))], names
assert names.count("layers.0.token") == 1 and names.count("optim.exp_avg.layers.0.token") == 1, names
print(f"export: {len(export) - 1} tensors, tied {tied}; checkpoint: {len(names)} tensors")
PY
# mpipe export of the checkpoint names the same copies.
timeout 60 "$MPIPE" export "$WORK/k1" "$WORK/k1-export.safetensors" > "$WORK/export.out" 2>&1 ||
  { cat "$WORK/export.out"; echo "FAILED: mpipe export"; exit 1; }
cmp "$WORK/k1.safetensors" "$WORK/k1-export.safetensors" ||
  { echo "FAILED: mpipe export differs from --export-weights"; exit 1; }
# mpipe translate restores both copies from the one stored matrix, of the export or the checkpoint.
printf 'sun moon star\nsea land fire rain\n' > "$WORK/test.src"
for from in weights checkpoint; do
  source=$WORK/k1.safetensors
  [[ $from == checkpoint ]] && source=$WORK/k1
  timeout 60 "$MPIPE" translate "$config" --to '<2en>' --input "$WORK/test.src" "--$from" "$source" \
    > "$WORK/$from.out" 2> "$WORK/$from.err" || { cat "$WORK/$from.err"; echo "FAILED: translate"; exit 1; }
  [[ $(wc -l < "$WORK/$from.out") -eq 2 ]] || { echo "FAILED: translate: not 2 lines"; exit 1; }
done
cmp "$WORK/weights.out" "$WORK/checkpoint.out" ||
  { echo "FAILED: --checkpoint and --weights translate differently"; exit 1; }
echo "tied group: 3 uses, K=1,2,4 (gpipe, 1f1b, zb_h1, interleaved, zbv) bit-identical, D=2 == D=1 under tree, resume K=2 to K=4, a layer move, the matrix stored once, translate"
