#!/usr/bin/env bash
# Tied embeddings: a tiny GPT whose output linear shares the embedding's matrix (tie: embedding)
# ends with bit-identical weights for K = 1, 2, 4 stages (the two uses on one rank, or on the
# first and the last stage; weight gradients accumulated or batched; interleaved with 2 chunks per
# rank) at D = 1, and for K = 1, 2 at D = 2 (interleaved too); with weight_grads: tree, D = 2 is bit-identical to D = 1 (same global micro-batches);
# 3 steps then a resume to 6 on another number of stages (or from interleaved) equal 6
# straight; the export and the checkpoints hold the matrix once, under the embedding's name, with
# metadata naming the tie, and mpipe export of the checkpoint writes the same bytes; the two
# copies stay equal under decay_exempt (a resume, which restores the head's copy from the
# embedding's, equals the run straight through); --init-weights and generate load the export (generate with the model it records); a
# tie whose units are not the vocabulary is refused with one line.
# Usage: tied.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
train 1 k1 "$config"
for k in 2 4; do
  train "$k" "k$k" "$config"
  same k1 "k$k"
done
train 4 k4-1f1b-uniform "$config" --set pipeline.schedule=1f1b --set pipeline.partition=uniform
same k1 k4-1f1b-uniform
# Interleaved, 2 chunks per rank: the embedding in rank 0's chunk 0, the head in rank 1's chunk 1.
interleaved=(--set pipeline.schedule=interleaved --set pipeline.virtual_stages=2)
train 2 k2-interleaved "$config" "${interleaved[@]}"
same k1 k2-interleaved
# zbv: the V puts the embedding (stage 0) and the head (stage 3) both on rank 0, in two chunks.
train 2 k2-zbv "$config" --set pipeline.schedule=zbv
same k1 k2-zbv
# Batched weight gradients: the head's gradient is complete only after the step's last backward.
train 1 k1-batched "$config" --set pipeline.weight_grads=batched
train 2 k2-batched "$config" --set pipeline.weight_grads=batched
same k1-batched k2-batched

# weight_grads: tree sums each layer's micro-batch gradients in a fixed pairwise tree of which a
# replica's share is a node, so D = 2 replicas (same global micro-batches) give D = 1's bits.
tree=(--set pipeline.weight_grads=tree)
train 1 k1-tree "$config" "${tree[@]}"
train 2 d2-tree "$config" "${tree[@]}" \
  --set pipeline.stages=1 --set pipeline.data_parallel=2 --set pipeline.micro_batches=2
same k1-tree d2-tree
train 4 k2d2-tree "$config" "${tree[@]}" \
  --set pipeline.stages=2 --set pipeline.data_parallel=2 --set pipeline.micro_batches=2
same k1-tree k2d2-tree
train 4 k2d2-tree-interleaved "$config" "${tree[@]}" "${interleaved[@]}" \
  --set pipeline.stages=2 --set pipeline.data_parallel=2 --set pipeline.micro_batches=2
same k1-tree k2d2-tree-interleaved

train 2 straight "$config" --set train.steps=6 --set checkpoint.every=3
train 2 resumed "$config" --set train.steps=3
train 4 resumed "$config" --set train.steps=6 --resume
same straight resumed
# From interleaved shards (one per global stage, the head's copy restored from the embedding's),
# at one chunk per rank (the resume keeps the stored layout unless --set changes it).
train 2 resumed-interleaved "$config" --set train.steps=3 "${interleaved[@]}"
train 4 resumed-interleaved "$config" --set train.steps=6 --set pipeline.schedule=gpipe \
  --set pipeline.virtual_stages=1 --resume
same straight resumed-interleaved

# decay_exempt exempts the embedding's table, so the head's copy of it too: else the copies
# would drift apart and the resume (head restored from the embedding) would differ.
decay=(--set optimizer.kind=adamw --set optimizer.weight_decay=0.5 --set optimizer.decay_exempt=true)
train 2 straight-decay "$config" --set train.steps=6 "${decay[@]}"
train 2 resumed-decay "$config" --set train.steps=3 "${decay[@]}"
train 2 resumed-decay "$config" --set train.steps=6 --resume "${decay[@]}"
same straight-decay resumed-decay

# The matrix once: the export has layers.0.token and no layers.4.weight, and says so; so do the
# checkpoint's shards (weights and Adam's state).
python3 - "$WORK/k1.safetensors" "$WORK"/straight/checkpoints/step_00000003/stage_*.safetensors <<'PY'
import json, struct, sys
def header(path):
    with open(path, "rb") as f:
        return json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
export = header(sys.argv[1])
assert "layers.0.token" in export and "layers.4.weight" not in export, sorted(export)
tied = json.loads(export["__metadata__"]["tied_weights"])
assert tied == {"layers.4.weight": "layers.0.token"}, tied
names = [name for path in sys.argv[2:] for name in header(path) if name != "__metadata__"]
assert not [n for n in names if n.endswith("layers.4.weight")], names
assert names.count("layers.0.token") == 1 and names.count("optim.exp_avg.layers.0.token") == 1, names
print(f"export: {len(export) - 1} tensors, tied {tied}; checkpoint: {len(names)} tensors")
PY

# --init-weights fills the head's copy from layers.0.token, on another stage than the embedding:
# with no steps, the run evaluates exactly as the run that wrote the file did at its end (the
# head's own draw would not).
train 2 from-k1 "$config" --init-weights "$WORK/k1.safetensors" --set train.steps=0
loss() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["final_eval_loss"])' "$1"; }
[[ $(loss "$WORK/from-k1/summary.json") == $(loss "$WORK/k1/summary.json") ]] ||
  { echo "FAILED: --init-weights: evaluation differs from the run that wrote the weights"; exit 1; }

# mpipe export of the final checkpoint writes the same bytes as --export-weights, metadata included.
timeout 60 "$MPIPE" export "$WORK/k1" "$WORK/k1-export.safetensors" > "$WORK/export.out" 2>&1 ||
  { cat "$WORK/export.out"; echo "FAILED: mpipe export"; exit 1; }
cmp "$WORK/k1.safetensors" "$WORK/k1-export.safetensors" ||
  { echo "FAILED: mpipe export differs from --export-weights"; exit 1; }

timeout 60 "$MPIPE" generate "$config" --weights "$WORK/k1.safetensors" --length 20 \
  > "$WORK/generate.out" 2>&1 || { cat "$WORK/generate.out"; echo "FAILED: generate"; exit 1; }
sed 's/units: 256, bias: false/units: 255, bias: false/' "$config" > "$WORK/bad_tie.yaml"
# generate builds the model the export records, not the YAML's: with a YAML whose model no longer
# matches the weights (the bad tie below), the same text.
timeout 60 "$MPIPE" generate "$WORK/bad_tie.yaml" --weights "$WORK/k1.safetensors" --length 20 \
  > "$WORK/generate_stored.out" 2>&1 || { cat "$WORK/generate_stored.out"; echo "FAILED: generate with the export's model"; exit 1; }
cmp "$WORK/generate.out" "$WORK/generate_stored.out" ||
  { echo "FAILED: generate with the export's model differs"; exit 1; }
# A tie that does not fit is refused on every rank with one line naming the tie's key.
rejected bad_tie "$WORK/bad_tie.yaml:10: model.layers[4].tie: a tied linear needs units equal to the embedding's vocab (256, model.layers[0]), got 255" \
  "$WORK/bad_tie.yaml"
echo "tied: K=1,2,4 bit-identical (D=1; K=1,2 at D=2), D=2 == D=1 under weight_grads: tree, resume 3+3 == 6 (also under decay_exempt), the matrix stored once, mpipe export == --export-weights, --init-weights, generate (the export's model), a bad tie refused"
