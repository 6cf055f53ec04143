#!/usr/bin/env bash
# mpipe supervise -- serve on three hosts with a shared spool: three experiments queued, every
# process of h2 killed and h2 gone during the first (3 stages), the daemon relaunches by itself on
# h1 and h3; the first resumes its newest checkpoint re-planned to 2 stages and ends
# bit-identical to an uninterrupted run, with one recovery line and a record in its metrics.jsonl
# and summary.json; the second, whose layout cannot run on 2 ranks, fails alone (a program error:
# no relaunch); the third runs to the end; nothing is left running. About 12 s.
# Usage: serve_supervise.sh CONFIG
: "${MPIPE_MULTIHOST_BUDGET:=200}"  # hosts.sh's own deadline
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
start_hosts
lost_hosts_give_up_fast  # 6.2 s instead of 15 minutes
SHARED=$WORK/shared  # on the root file system: the same folder on every host
spool=$SHARED/spool
steps=200 every=20
settings=(--set pipeline.stages=3 --set "train.steps=$steps" --set log.every=1
  --set "checkpoint.every=$every" --set comm.timeout=3s)

train_here 3 whole "$config" "${settings[@]}"

for experiment in "first ${settings[*]}" \
  "misfit --set pipeline.stages=3 --set pipeline.data_parallel=1 --set train.steps=4" \
  "last --set train.steps=4"; do
  read -ra args <<< "$experiment"
  "$MPIPE" submit "$spool" "$config" --name "${args[@]}" > /dev/null ||
    { echo "FAILED: submit ${args[0]}"; exit 1; }
done

# The daemon under mpipe supervise from h1 over h1-h3, one slot each; it ends once the queue is
# empty (--idle-exit). Bounded by hosts.sh's budget.
hosts=h1:1,h2:1,h3:1
command=("$MPIPE" supervise --hosts "$hosts" --probe-timeout 10
  --mpirun-args "--bind-to none --mca btl tcp,self ${MCA[*]} -x OMP_NUM_THREADS -x OMP_WAIT_POLICY"
  -- serve --spool "$spool" --idle-exit 1s)
"$WORK/host_exec" h1 "$(printf '%q ' "${command[@]}")" > "$WORK/serve.log" 2>&1 &
supervisor=$!

# h2 lost (every process there, then the host itself) once the first has logged 30 steps, past
# its checkpoints of steps 20 and before.
metrics=$spool/runs/first/metrics.jsonl
lose_host_after h2 "$metrics" 30 "$WORK/serve.log"
status=0
wait "$supervisor" || status=$?
cat "$WORK/serve.log"
[[ $status -eq 0 ]] || { echo "FAILED: exit status $status"; exit 1; }
[[ $(grep -c "supervise: restart" "$WORK/serve.log") -eq 1 ]] ||
  { echo "FAILED: not one recovery line"; exit 1; }
recovery=$(grep -oE "h2 does not answer; relaunching on h1:1,h3:1, experiment first as 2 stages x 1 replica, 4 micro-batches each \(was 3 stages x 1 replica, 4 micro-batches each on h1:1,h2:1,h3:1\), resuming from step [0-9]+" \
  "$WORK/serve.log") || { echo "FAILED: the recovery line"; exit 1; }
resumed=${recovery##* }
((resumed >= every)) || { echo "FAILED: resumed from step $resumed, not a checkpoint"; exit 1; }
grep -qE "first: resuming step $resumed on 2 ranks as 2 stages x 1 replica, 4 micro-batches each, re-planned from the checkpoint's 1 replica x 4 micro-batches \(bit-identical\)$" \
  "$WORK/serve.log" || { echo "FAILED: the daemon did not re-plan first"; exit 1; }
for line in "first: done at step $steps" "last: done at step 4" \
  "misfit: failed: .*pipeline.data_parallel"; do
  grep -qE "$line" "$WORK/serve.log" || { echo "FAILED: no line '$line'"; exit 1; }
done
# Each surviving host's daemon ends its ranks and itself with the job: nothing left within 30 s.
nothing_left 30 h1 h3 || { echo "FAILED: processes left on h1 or h3"; exit 1; }
cp "$spool/runs/first/weights.safetensors" "$WORK/first.safetensors"
same whole first
lost=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["recoveries"]
assert len(r) == 1 and r[0]["lost_hosts"] == ["h2"] and r[0]["experiment"] == "first", r
assert r[0]["old_layout"]["stages"] == 3 and r[0]["new_layout"]["stages"] == 2, r
assert r[0]["resumed_from"] == int(sys.argv[2]), r
events = [json.loads(line) for line in open(sys.argv[3]) if "event" in line]
assert len(events) == 1 and events[0]["event"] == "recovery", events
assert events[0]["step"] == r[0]["resumed_from"], events
print("%.1f s" % r[0]["seconds_lost"])' "$spool/runs/first/summary.json" "$resumed" "$metrics") ||
  { echo "FAILED: the record in summary.json or metrics.jsonl"; exit 1; }

passed=1
echo "multihost serve_supervise: h2 killed once step $killed_at_step of $steps of the first" \
  "experiment was logged; the daemon relaunched on h1 and h3 resumed step $resumed on 2 stages," \
  "$lost from the last step before the failure to the next; bit-identical; the queue after it ran"
