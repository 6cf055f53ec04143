#!/usr/bin/env bash
# log.tensorboard: rank 0's event file beside metrics.jsonl reads back (every record's length and
# data CRC-32C, each an Event of the generated protobuf code) with the scalars of metrics.jsonl
# (loss, lr, samples/s, bubble, MFU, memory, evaluations); a run killed with SIGKILL leaves whole
# records; without the key there is no event file.
# Usage: tensorboard.sh CONFIG (CHECK_TENSORBOARD: tests/tools/check_tensorboard)
source "$(dirname "$0")/lib.sh"
config=$1
check=${CHECK_TENSORBOARD:?path of check_tensorboard}

train 2 tb "$config" --set train.steps=6 --set log.every=2 --set train.eval_every=2 \
  --set log.tensorboard=true
"$check" "$WORK/tb" > "$WORK/tb.check" || { cat "$WORK/tb.check"; exit 1; }
for tag in train/loss train/lr train/samples_per_s train/bubble train/mfu \
  train/peak_tensor_bytes_per_rank/1 eval/test/loss eval/test/accuracy; do
  grep -qE " $tag( |$)" "$WORK/tb.check" || { cat "$WORK/tb.check"; echo "FAILED: no $tag"; exit 1; }
done
cat "$WORK/tb.check"

# SIGKILL to the ranks while they log every step: the file holds whole records only.
endless 2 killed "$config" --set log.tensorboard=true
wait_for_steps killed 30 100
# shellcheck disable=SC2154  # launcher: set by endless (lib.sh)
mpirun_pid=$(pgrep -P "$launcher" -x mpirun) || { cat "$WORK/killed.log"; echo "FAILED: no mpirun"; exit 1; }
pkill -KILL -P "$mpirun_pid"
wait "$launcher" || true
"$check" --killed "$WORK/killed" || exit 1

train 1 plain "$config" --set train.steps=2
! compgen -G "$WORK/plain/events.out.tfevents.*" > /dev/null ||
  { echo "FAILED: an event file without log.tensorboard"; exit 1; }
echo "tensorboard: event files read back equal to metrics.jsonl, whole records after SIGKILL"
