#!/usr/bin/env bash
# Training across three hosts (network namespaces, TCP between them, node-local run
# directories) gives weights bit-identical to the same run on one host: K=3 over 3 hosts (one
# stage each, each host holding only its own checkpoint shard), and K=2 x D=2 over 2 hosts with
# 2 slots each (shared memory inside a host, TCP between). About 10 s.
# Usage: runs.sh CONFIG
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
steps=(--set train.steps=4 --set checkpoint.every=2 --set checkpoint.keep=1)
start_hosts

# bytes_sent HOST: what HOST has sent over its link so far (its veth's outer end receives it).
bytes_sent() { cat "/sys/class/net/${PREFIX}$1/statistics/rx_bytes"; }

train_here 1 k1 "$config" "${steps[@]}"
before=$(bytes_sent h3)
train_on k3 h1:1 h2:1 h3:1 -- "$config" "${steps[@]}" --set pipeline.stages=3
same k1 k3
# Stage 2 ran on h3 and talked to h2 over the link; each host holds only its own shard (and h1
# the commit), as on node-local disks.
sent=$(($(bytes_sent h3) - before))
((sent > 0)) || { echo "FAILED: k3: nothing crossed h3's link"; exit 1; }
for shard in h1/k3/checkpoints/step_00000004/meta.json h1/k3/checkpoints/step_00000004/stage_0.safetensors \
  h2/k3/checkpoints/step_00000004/stage_1.safetensors h3/k3/checkpoints/step_00000004/stage_2.safetensors; do
  [[ -e "$WORK/$shard" ]] || { echo "FAILED: k3: no $shard"; exit 1; }
done
for host in h2 h3; do
  [[ $(find "$WORK/$host/k3" -type f | wc -l) -eq 1 ]] ||
    { find "$WORK/$host"; echo "FAILED: k3: $host holds more than its own shard"; exit 1; }
done

# Two hosts with two slots each: ranks 0-1 (stages 0 and 1 of replica 0) on h1, ranks 2-3 on
# h2; vader (shared memory) inside a host, TCP between.
layout=(--set pipeline.stages=2 --set pipeline.data_parallel=2)
train_here 4 shm4 "$config" "${steps[@]}" "${layout[@]}"
before=$(bytes_sent h2)
BTL=tcp,self,vader train_on k2d2 h1:2 h2:2 -- "$config" "${steps[@]}" "${layout[@]}"
same shm4 k2d2
sent2=$(($(bytes_sent h2) - before))
((sent2 > 0)) || { echo "FAILED: k2d2: nothing crossed h2's link"; exit 1; }
[[ -e "$WORK/h1/k2d2/checkpoints/step_00000004/stage_1.safetensors" &&
  ! -e "$WORK/h2/k2d2/checkpoints" ]] ||
  { find "$WORK/h1" "$WORK/h2"; echo "FAILED: k2d2: the shards are not where replica 0 ran"; exit 1; }

passed=1
echo "multihost runs: K=3 over 3 hosts == K=1 (h3 sent $sent bytes); K=2 x D=2 over 2 hosts" \
  "x 2 slots == the same on shared memory (h2 sent $sent2 bytes)"
