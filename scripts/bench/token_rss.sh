#!/usr/bin/env bash
# Peak resident memory (VmHWM) of a run over token shards several times larger than it: two
# training shards of SHARD_MB MiB each of random uint16 tokens (vocabulary 65536), a small
# validation shard, a 2-layer GPT for STEPS steps on one rank. The shards are memory-mapped, so
# the run's peak RSS stays far below their size; this prints both.
#
#   scripts/bench/token_rss.sh        # about a minute on an idle 2-core machine (1 GiB of shards)
#
# Environment: MPIPE_BIN (default build/release/apps/mpipe), SHARD_MB (default 512), STEPS
# (default 20).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${MPIPE_BIN:-build/release/apps/mpipe}
[[ -x "$bin" ]] || { echo "token_rss.sh: $bin is not an executable" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
shard_mb=${SHARD_MB:-512}
steps=${STEPS:-20}
work=$(mktemp -d /tmp/mpipe-token-rss.XXXXXX)
trap 'rm -rf "$work"' EXIT

# shard FILE TOKENS: an llm.c shard of TOKENS random uint16 tokens (any 16 bits is a token id
# below 65536).
shard() {
  python3 -c 'import struct, sys; sys.stdout.buffer.write(struct.pack("<256i", 20240520, 1, int(sys.argv[1]), *[0] * 253))' "$2" > "$1"
  head -c $(($2 * 2)) /dev/urandom >> "$1"
}
tokens_per_shard=$((shard_mb * 1024 * 1024 / 2))
shard "$work/train_0.bin" "$tokens_per_shard"
shard "$work/train_1.bin" "$tokens_per_shard"
shard "$work/val.bin" 100000
cat > "$work/exp.yaml" <<YAML
model:
  loss: cross_entropy
  layers:
    - {type: embedding, vocab: 65536, dim: 32}
    - {type: transformer_block, heads: 2}
    - {type: transformer_block, heads: 2}
    - {type: layer_norm}
    - {type: linear, units: 65536}
data: {dataset: tokens, train: "$work/train_*.bin", val: "$work/val.bin", vocab: 65536, seq_len: 64}
train: {steps: $steps, batch_size: 8, seed: 1, eval_batches: 4}
optimizer: {kind: adam, lr: 0.001}
pipeline: {stages: 1, micro_batches: 2}
log: {every: 5}
YAML
# One process (a singleton MPI run), its VmHWM read from /proc while it runs.
"$bin" train "$work/exp.yaml" --run-dir "$work/run" > "$work/train.log" 2>&1 &
pid=$!
hwm_kb=0
while kill -0 "$pid" 2> /dev/null; do
  now=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2> /dev/null || true)
  [[ -n "$now" ]] && hwm_kb=$now
  sleep 0.2
done
wait "$pid" || { cat "$work/train.log"; echo "token_rss.sh: the run failed" >&2; exit 1; }
shard_bytes=$(du -cb "$work"/train_*.bin "$work/val.bin" | awk 'END {print $1}')
echo "shards: $((shard_bytes / 1024 / 1024)) MiB ($((2 * tokens_per_shard)) training tokens)"
echo "run: $steps steps, VmHWM $((hwm_kb / 1024)) MiB (last read before it ended)"
echo "summary peak_rss_bytes_per_stage: $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["peak_rss_bytes_per_stage"])' "$work/run/summary.json")"
echo "shards / VmHWM: $(python3 -c "print(round($shard_bytes / ($hwm_kb * 1024), 1))")x"
