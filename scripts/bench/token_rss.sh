#!/usr/bin/env bash
# Peak resident memory (VmHWM) of a run over token shards several times larger than it, beside
# the same run over small shards: two training shards of SHARD_MB MiB each of random uint16
# tokens below 4096, a small validation shard, a 2-layer GPT for STEPS steps on one rank. The
# shards are read a window at a time with pread, never mapped or read whole, so the peak RSS does
# not grow with them.
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

# shard FILE TOKENS: an llm.c shard of TOKENS random uint16 tokens, each byte masked to its low
# 4 bits (so every token is below 0x0f0f + 1 < 4096), written 16 MiB at a time.
shard() {
  python3 - "$1" "$2" << 'PY'
import os, struct, sys
path, tokens = sys.argv[1], int(sys.argv[2])
low_nibble = bytes(b & 0x0F for b in range(256))
with open(path, "wb") as out:
    out.write(struct.pack("<256i", 20240520, 1, tokens, *[0] * 253))
    left = 2 * tokens
    while left > 0:
        chunk = min(left, 16 << 20)
        out.write(os.urandom(chunk).translate(low_nibble))
        left -= chunk
PY
}

# peak_rss DIR TOKENS_PER_SHARD: trains on two training shards of that size in DIR as one
# process (a singleton MPI run) and prints its VmHWM in KiB, read from /proc while it runs.
peak_rss() {
  local dir=$1 tokens=$2 pid hwm_kb=0 now
  mkdir -p "$dir"
  shard "$dir/train_0.bin" "$tokens"
  shard "$dir/train_1.bin" "$tokens"
  shard "$dir/val.bin" 100000
  cat > "$dir/exp.yaml" << YAML
model:
  loss: cross_entropy
  layers:
    - {type: embedding, vocab: 4096, dim: 64}
    - {type: transformer_block, heads: 2}
    - {type: transformer_block, heads: 2}
    - {type: layer_norm}
    - {type: linear, units: 4096}
data: {dataset: tokens, train: "$dir/train_*.bin", val: "$dir/val.bin", vocab: 4096, seq_len: 64}
train: {steps: $steps, batch_size: 8, seed: 1, eval_batches: 4}
optimizer: {kind: adam, lr: 0.001}
pipeline: {stages: 1, micro_batches: 2}
log: {every: 5}
YAML
  "$bin" train "$dir/exp.yaml" --run-dir "$dir/run" > "$dir/train.log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2> /dev/null; do
    now=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2> /dev/null || true)
    [[ -n "$now" ]] && hwm_kb=$now
    sleep 0.2
  done
  wait "$pid" || { cat "$dir/train.log" >&2; echo "token_rss.sh: the run failed" >&2; exit 1; }
  echo "$hwm_kb"
}

big_tokens=$((shard_mb * 1024 * 1024 / 2))
small_kb=$(peak_rss "$work/small" 1000000)
rm -rf "$work/small"
big_kb=$(peak_rss "$work/big" "$big_tokens")
big_bytes=$(du -cb "$work"/big/*.bin | awk 'END {print $1}')
echo "run: $steps steps of 8 x 64 tokens, 1 rank (VmHWM: the last value read before it ended)"
printf '%-28s %12s %12s\n' "training shards" "shard MiB" "VmHWM MiB"
printf '%-28s %12s %12s\n' "2 x 1M tokens" 4 $((small_kb / 1024))
printf '%-28s %12s %12s\n' "2 x $big_tokens tokens" $((big_bytes / 1024 / 1024)) $((big_kb / 1024))
echo "shards / VmHWM: $(python3 -c "print(round($big_bytes / ($big_kb * 1024), 1))")x"
