#!/usr/bin/env bash
# scripts/pytorch/mpipe_model.py: an export loaded into PyTorch, built from the export alone (the
# model its metadata carries; no experiment YAML), gives mpipe's validation loss and logits. Two
# tiny language models are trained 3 steps on 2 stages on random token shards, and each export's
# mean cross-entropy on the validation shard, computed in PyTorch (token_loss.py), equals the
# final validation loss mpipe recorded to within 2e-5, and its logits on each validation window
# equal those `mpipe eval --logits` writes to within 1e-5: a modern one (RMS norms, a SwiGLU MLP,
# rotary positions, grouped-query attention, a head tied to the embedding) and a GPT-2-like one
# (layer norms, a GELU MLP, learned positions only, a standalone attention layer with one
# key/value head, a GELU layer and an untied head with a bias). Needs Debian's python3-torch
# (scripts/packages-test.txt): without it the test fails, it does not skip.
source "$(dirname "$0")/lib.sh"
scripts=$(cd "$(dirname "$0")/../../scripts/pytorch" && pwd)
/usr/bin/python3 -c "import torch" 2> /dev/null \
  || { echo "FAILED: /usr/bin/python3 cannot import torch: install Debian's python3-torch (scripts/install_packages scripts/packages-test.txt)"; exit 1; }

# Random uint16 token shards in llm.c's format: 1025 training tokens, and 8 validation windows of
# 16 + 1 (one evaluation batch of 8).
/usr/bin/python3 - "$WORK" <<'PY'
import random, struct, sys
random.seed(7)
for name, count in (("train", 1025), ("val", 8 * 16 + 1)):
    with open(f"{sys.argv[1]}/{name}_000000.bin", "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, count, *([0] * 253)))
        f.write(struct.pack(f"<{count}H", *(random.randrange(64) for _ in range(count))))
PY

common="data: {dataset: tokens, train: $WORK/train_000000.bin, val: $WORK/val_000000.bin, vocab: 64,
       seq_len: 16}
train: {steps: 3, batch_size: 8, seed: 5, eval_batch_size: 8}
optimizer: {kind: adam, lr: 0.01}
pipeline: {stages: 2, micro_batches: 2}
log: {every: 1, peak_flops: 1e11}  # (given: no GEMM peak measured at start-up)"
cat > "$WORK/modern.yaml" <<YAML
model:
  loss: cross_entropy
  init: gpt2
  layers:
    - {type: embedding, vocab: 64, dim: 32}
    - repeat: 2
      layers:
        - {type: transformer_block, heads: 4, kv_heads: 2, mlp_ratio: 2, norm: rms_norm,
           mlp: swiglu, rotary: true, rotary_base: 100}
    - {type: rms_norm}
    - {type: linear, units: 64, bias: false, tie: embedding}
$common
YAML
cat > "$WORK/classic.yaml" <<YAML
model:
  loss: cross_entropy
  layers:
    - {type: embedding, vocab: 64, dim: 32}
    - {type: transformer_block, heads: 2}
    - {type: layer_norm, eps: 0.001}
    - {type: attention, heads: 4, kv_heads: 1, rotary: true}
    - {type: linear, units: 48}
    - {type: gelu}
    - {type: dropout, rate: 0.1}
    - {type: linear, units: 64}
$common
YAML

for model in modern classic; do
  train 2 "$model" "$WORK/$model.yaml"
  want=$(/usr/bin/python3 -c "
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
print(repr([r['loss'] for r in records if 'split' in r][-1]))  # the final evaluation's" "$WORK/$model/metrics.jsonl")
  got=$(/usr/bin/python3 "$scripts/token_loss.py" "$WORK/$model.safetensors" \
    "$WORK/val_000000.bin" --seq-len 16)
  echo "$model: mpipe's validation loss $want, PyTorch's $got"
  # float32 forwards through different kernels (oneDNN's and PyTorch's) differ by rounding, about
  # 1e-6 on a loss of 4 here; a wrong layout (a head split, the rotary pairing, the tie) moves it
  # by far more than 2e-5.
  /usr/bin/python3 -c "import sys; sys.exit(abs(float('$want') - float('$got')) > 2e-5)" \
    || { echo "FAILED: $model: PyTorch's loss $got differs from mpipe's $want"; exit 1; }

  # The logits of the 8 validation windows, mpipe's (eval --logits, on the run's 2 stages) against
  # PyTorch's.
  timeout 120 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" eval "$WORK/$model.yaml" \
    --weights "$WORK/$model.safetensors" \
    --logits "$WORK/$model.logits" > "$WORK/$model.eval.log" 2>&1 \
    || { cat "$WORK/$model.eval.log"; echo "FAILED: $model: mpipe eval --logits"; exit 1; }
  difference=$(PYTHONPATH=$scripts /usr/bin/python3 -c "
import sys, torch, mpipe_model, token_loss
model = mpipe_model.load(sys.argv[1])
windows = token_loss.shard_windows(sys.argv[2], 16)
with torch.no_grad():
    mine = model(windows[:, :-1])
theirs = mpipe_model.read_safetensors(sys.argv[3])[0]['logits']
assert theirs.shape == mine.shape, (theirs.shape, mine.shape)
print(f'{(mine - theirs).abs().max().item():.3g} {mine.abs().max().item():.3g}')" \
    "$WORK/$model.safetensors" "$WORK/val_000000.bin" "$WORK/$model.logits") \
    || { echo "FAILED: $model: comparing the logits"; exit 1; }
  read -r largest magnitude <<< "$difference"
  echo "$model: logits up to $magnitude in size differ from mpipe's by at most $largest"
  # float32 keeps 24 bits: one rounding of a logit of 0.7 is 6e-8. The two forwards (oneDNN's and
  # PyTorch's kernels, each summing in its own order) differ by a few such roundings, 1.8e-7 and
  # 3.0e-7 here on logits up to 0.8; 1e-5 leaves 30x room for other kernels. A shift of every
  # logit by 1e-4, which leaves the loss as it is (softmax ignores it), fails; a wrong head
  # grouping moves the loss itself by 5e-4.
  /usr/bin/python3 -c "import sys; sys.exit(float('$largest') > 1e-5)" \
    || { echo "FAILED: $model: PyTorch's logits differ from mpipe's by $largest"; exit 1; }
done
echo "pytorch export: the modern (GQA, tied) and the GPT-2-like model, built from their exports alone, give mpipe's validation loss and logits in PyTorch"
