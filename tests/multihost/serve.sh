#!/usr/bin/env bash
# The serve daemon across three hosts, its spool on h1's node-local disk: two experiments of
# different layouts (3 stages x 1 replica; 1 stage x 3 replicas) run one after the other, each
# rank keeping its own shards on its own host, with weights bit-identical to the same daemon
# and queue on one host. Between them, one that fails mid-run on every host (it diverges: SGD at
# lr 1e3 without clipping) is recorded as failed with its error in status.json, and the queue
# goes on. About 15 s. Usage: serve.sh CONFIG
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
start_hosts
steps=(--set train.steps=4 --set checkpoint.every=2)

# queue SPOOL: the same two experiments in SPOOL's queue.
queue() {
  "$MPIPE" submit "$1" "$config" --name pipe --set pipeline.stages=3 "${steps[@]}" >/dev/null ||
    { echo "FAILED: submit to $1"; exit 1; }
  "$MPIPE" submit "$1" "$config" --name diverges --set pipeline.stages=3 --set train.steps=300 \
    --set optimizer.kind=sgd --set optimizer.lr=1e3 --set optimizer.clip_norm=0 >/dev/null ||
    { echo "FAILED: submit to $1"; exit 1; }
  "$MPIPE" submit "$1" "$config" --name replicas --set pipeline.stages=1 \
    --set pipeline.micro_batches=3 --set train.batch_size=24 "${steps[@]}" >/dev/null ||
    { echo "FAILED: submit to $1"; exit 1; }
}

queue "$WORK/here"
timeout 120 mpirun -n 3 --oversubscribe --bind-to none "$MPIPE" serve --spool "$WORK/here" \
  --idle-exit 1s > "$WORK/here.log" 2>&1 || { cat "$WORK/here.log"; echo "FAILED: daemon on one host"; exit 1; }

queue "$WORK/h1/spool"  # (h1's disk, seen from this machine)
on_hosts h1:1 h2:1 h3:1 -- serve --spool "$LOCAL/spool" --idle-exit 1s > "$WORK/hosts.log" 2>&1 ||
  { cat "$WORK/hosts.log"; echo "FAILED: daemon on 3 hosts"; exit 1; }
for run in pipe replicas; do
  grep -q "$run: done at step 4" "$WORK/hosts.log" || { cat "$WORK/hosts.log"; echo "FAILED: $run not done"; exit 1; }
  "$MPIPE" compare "$WORK/here/runs/$run/weights.safetensors" \
    "$WORK/h1/spool/runs/$run/weights.safetensors" --rtol 0 || { echo "FAILED: $run"; exit 1; }
done
field() {  # experiment, key: its value in h1's status.json
  /usr/bin/python3 "$(dirname "$0")/../e2e/status_field.py" "$WORK/h1/spool/status.json" "$1" "$2"
}
[[ $(field diverges state) == failed ]] ||
  { cat "$WORK/hosts.log"; echo "FAILED: diverges is '$(field diverges state)', not failed"; exit 1; }
[[ $(field diverges error) =~ ^step\ [0-9]+:\ loss\ is\ (nan|infinite)\;\ non-finite\ gradients ]] ||
  { echo "FAILED: diverges' error in status.json: $(field diverges error)"; exit 1; }
grep -qE "runs/replicas/experiment.yaml: .* 1 stage x 3 replicas" "$WORK/hosts.log" ||
  { cat "$WORK/hosts.log"; echo "FAILED: replicas did not run 1 stage x 3 replicas"; exit 1; }
# Each host holds its own stage's shard of pipe; only h1 holds the queue and status.
[[ -e $WORK/h3/spool/runs/pipe/checkpoints/step_00000004/stage_2.safetensors &&
  ! -e $WORK/h1/spool/runs/pipe/checkpoints/step_00000004/stage_2.safetensors ]] ||
  { find "$WORK"/h?/spool; echo "FAILED: pipe's shards are not on their hosts"; exit 1; }
[[ ! -e $WORK/h2/spool/status.json && ! -e $WORK/h3/spool/queue ]] ||
  { echo "FAILED: a host other than h1 touched the spool's queue or status"; exit 1; }

passed=1
echo "multihost serve: 3 x 1 and 1 x 3 experiments from one queue on 3 hosts == on one host;" \
  "the one that diverged between them failed alone"
