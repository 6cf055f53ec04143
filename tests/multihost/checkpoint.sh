#!/usr/bin/env bash
# A checkpoint written on 3 hosts (K=3, each host's shard in its own run directory) resumed on 2
# hosts with K=2. A resume with another K needs every shard of the step on every host: without
# them it is refused on every rank with one line naming a missing file, the rank and its host;
# with the step folder copied together on each host (what an operator does without a shared
# file system) the resumed run is bit-identical to the same checkpoint and resume on one host.
# With checkpoint.peer_copy every host also holds the previous host's shard and the commit, and
# the same checkpoint resumes on h1 and h3 alone (h2 lost) with no folder copied, bit-identical;
# on h1 alone, which holds no copy of stage 1, it is refused in one line naming that shard and
# the host asked; `mpipe eval --checkpoint` of it on h1 and h3 gathers the shards the same way
# and scores it as once every shard is on both hosts.
# About 15 s. Usage: checkpoint.sh CONFIG
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
start_hosts
step=ck/checkpoints/step_00000002

# On one host: K=3 for 2 steps, then resumed with K=2 up to step 4.
train_here 3 ck "$config" --set train.steps=2 --set pipeline.stages=3
train_here 2 ck "$config" --set train.steps=4 --set pipeline.stages=2 --resume
mv "$WORK/ck.safetensors" "$WORK/here.safetensors"

train_on ck h1:1 h2:1 h3:1 -- "$config" --set train.steps=2 --set pipeline.stages=3
[[ -e "$WORK/h1/$step/meta.json" && -e "$WORK/h3/$step/stage_2.safetensors" &&
  ! -e "$WORK/h1/$step/stage_2.safetensors" ]] || { echo "FAILED: not one shard per host"; exit 1; }

# Each host holds only its own shard: refused on every rank, one line, naming rank 1 on h2 (it
# has no meta.json, and none of stage 0's and stage 2's weights it now needs).
status=0
on_hosts h1:1 h2:1 -- train "$config" --run-dir "$LOCAL/ck" --set train.steps=4 \
  --set pipeline.stages=2 --resume > "$WORK/apart.log" 2>&1 || status=$?
cat "$WORK/apart.log"
[[ $status -eq 2 && $(grep -c "\[error\]" "$WORK/apart.log") -eq 1 ]] ||
  { echo "FAILED: apart: exit status $status, or not one error line"; exit 1; }
grep -qE "\[rank 0/2\] \[error\] rank 1 \(pipeline rank 1, host h2\): $LOCAL/$step/[^ ]+: missing" \
  "$WORK/apart.log" || { echo "FAILED: apart: the line names no missing file, rank 1 and h2"; exit 1; }

# The step folder copied together on both hosts that resume (h3 is gone).
for host in h1 h2; do
  for from in h1 h2 h3; do
    [[ $from == "$host" ]] || cp -n "$WORK/$from/$step"/* "$WORK/$host/$step/"
  done
done
train_on ck h1:1 h2:1 -- "$config" --set train.steps=4 --set pipeline.stages=2 --resume
same here ck

# Peer copies: rank r's shard also on rank r+1's host (h3's on h1), the commit on every host.
peer=peer/checkpoints/step_00000002
train_on peer h1:1 h2:1 h3:1 -- "$config" --set train.steps=2 --set pipeline.stages=3 \
  --set checkpoint.peer_copy=true
for held in h1:0:2 h2:1:0 h3:2:1; do
  IFS=: read -r host own copy <<< "$held"
  [[ -e $WORK/$host/$peer/meta.json && -e $WORK/$host/$peer/stage_$own.safetensors &&
    -e $WORK/$host/$peer/stage_$copy.safetensors &&
    $(find "$WORK/$host/$peer" -type f | wc -l) -eq 3 ]] || {
    ls -R "$WORK"/h?/peer
    echo "FAILED: peer: $host does not hold stage $own, stage $copy and meta.json alone"
    exit 1
  }
done

# h1 alone: stage 1's shard is on h2 and its copy on h3, neither of them in the job.
status=0
on_hosts h1:1 -- train "$config" --run-dir "$LOCAL/peer" --set train.steps=4 \
  --set pipeline.stages=1 --resume > "$WORK/alone.log" 2>&1 || status=$?
cat "$WORK/alone.log"
[[ $status -eq 2 && $(grep -c "\[error\]" "$WORK/alone.log") -eq 1 ]] ||
  { echo "FAILED: alone: exit status $status, or not one error line"; exit 1; }
grep -qF "[error] $LOCAL/$peer/stage_1.safetensors: no host of this job holds it (asked h1), so step 2 cannot be resumed here" \
  "$WORK/alone.log" || { echo "FAILED: alone: the line names not stage 1's shard and h1"; exit 1; }

# mpipe eval of the same checkpoint on h1 and h3 (K=2): its stage 1, on h2 alone and copied to
# h3, is gathered for rank 0 as a resume gathers it.
evaluate() {  # NAME: the peer run's step 2 evaluated on h1 and h3 into $WORK/NAME.log
  on_hosts h1:1 h3:1 -- eval "$config" --checkpoint "$LOCAL/$peer" --set pipeline.stages=2 \
    --set checkpoint.peer_copy=true > "$WORK/$1.log" 2>&1 ||
    { cat "$WORK/$1.log"; echo "FAILED: $1"; exit 1; }
}
evaluate eval_gathered
[[ -e $WORK/h1/$peer/stage_1.safetensors ]] || { echo "FAILED: stage 1 not gathered on h1"; exit 1; }

# h2 lost: h1 and h3 gather the rest from each other, nothing copied by hand.
train_on peer h1:1 h3:1 -- "$config" --set train.steps=4 --set pipeline.stages=2 --resume
grep -q "resumed from step 2" "$WORK/peer.log" ||
  { cat "$WORK/peer.log"; echo "FAILED: peer: not resumed from step 2"; exit 1; }
same here peer
# The same evaluation with every shard of step 2 now on both hosts: the same scores.
evaluate eval_whole
[[ $(grep " loss " "$WORK/eval_gathered.log") == $(grep " loss " "$WORK/eval_whole.log") &&
  -n $(grep " loss " "$WORK/eval_whole.log") ]] ||
  { cat "$WORK"/eval_*.log; echo "FAILED: eval of gathered shards differs"; exit 1; }

passed=1
echo "multihost checkpoint: K=3 on 3 hosts resumed as K=2 on 2 hosts: refused in one line while" \
  "the shards are apart, bit-identical to one host once the step folder is copied together;" \
  "with peer copies, resumed on h1 and h3 with no folder copied, bit-identical, and evaluated" \
  "there the same; refused on h1 alone"
