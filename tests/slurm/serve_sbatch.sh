#!/usr/bin/env bash
# Checks scripts/slurm/serve.sbatch (the `mpipe serve` daemon as a Slurm job) under a throwaway single-node Slurm.
#
#   MPIPE_BIN=build/release/apps/mpipe tests/slurm/serve_sbatch.sh     # ctest: slurm.serve_sbatch
#
# Needs root and slurm-wlm and munge (tests/slurm/local_slurm.sh starts and stops the Slurm).
# Three experiments are submitted with `mpipe submit` before the job starts: `long` (200 steps,
# a checkpoint every 25), `bad` (pipeline.stages=3, which submit accepts but a 2-rank daemon
# cannot run) and `short`. The 2-task serve.sbatch job (--idle-exit 3s) is stopped by SIGUSR1 to
# its batch shell (what --signal=B:USR1@120 sends before the time limit) during `long`: the
# daemon checkpoints it and exits, and the job requeues itself (same job id, restart 1); the
# daemon of the restarted job resumes `long` first, `bad` fails alone with its error in
# status.json, `short` is done, the daemon stops once idle and the job ends COMPLETED. `long`'s
# weights are bit-identical to an uninterrupted train.sbatch run of the same experiment. A job
# stopped the same way while the spool holds no work ends without a requeue.
# About 60 s on 2 idle cores.
set -euo pipefail

# shellcheck source=tests/slurm/local_slurm.sh disable=SC2034  # failed, fail_logs: read there
source "$(dirname "$0")/local_slurm.sh"
config=$repo/tests/e2e/files/mlp.yaml
start_local_slurm

cd "$scratch/work"
spool=$scratch/work/spool
fail_logs=("$spool/status.json")
# Steps of a few milliseconds: long enough to be stopped before the end, short enough to finish.
steps=200
long=(--set train.batch_size=4096 --set data.num_examples=4096 --set log.every=25
  --set "train.steps=$steps" --set checkpoint.every=25)
bad_error="pipeline.data_parallel: auto needs the world size (2) to be divisible by pipeline.stages (3)"

field() {  # experiment name, key -> its value in the spool's status.json ("" when missing)
  /usr/bin/python3 "$repo/tests/e2e/status_field.py" "$spool/status.json" "$1" "$2"
}

"$MPIPE_BIN" submit "$spool" "$config" --name long "${long[@]}" || fail "submit long"
"$MPIPE_BIN" submit "$spool" "$config" --name bad --set pipeline.stages=3 || fail "submit bad"
"$MPIPE_BIN" submit "$spool" "$config" --name short --set train.steps=20 || fail "submit short"

job=$(MPIPE_RESUBMIT=1 sbatch --parsable --ntasks 2 "$repo/scripts/slurm/serve.sbatch" "$spool" \
  --idle-exit 3s)
log=runs/slurm-$job.out
training_after "$log" "serve.sbatch: job $job "
scancel --signal=USR1 --batch "$job"
wait_for_line "$log" "requeueing job $job"
grep -q "long: interrupted at step" "$log" || fail "the daemon did not interrupt long"
stopped=$(sed -nE 's/.*long: interrupted at step ([0-9]+).*/\1/p' "$log")
((stopped < steps)) || fail "long was not stopped before its end (step $stopped)"
wait_for_line "$log" "serve.sbatch: job $job (restart 1)"
echo "ok 1 (${SECONDS} s): job $job stopped long at step $stopped on SIGUSR1 and requeued itself"

state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state"
[[ $(job_field "$job" Restarts) == 1 ]] || fail "job $job: Restarts=$(job_field "$job" Restarts)"
second=$(awk -v m="serve.sbatch: job $job (restart 1)" 'index($0, m) { seen = 1 } seen' "$log")
grep -q "resumed from step $stopped" <<<"$second" || fail "the restarted daemon did not resume long"
first_start=$(grep -E '(long|bad|short): starting' <<<"$second" | head -n 1)
[[ "$first_start" == *"long: starting"* ]] ||
  fail "the restarted daemon did not start with long: $first_start"
grep -qF "idle for 3 s (--idle-exit): stopping" <<<"$second" || fail "no idle exit"
grep -q "serve.sbatch: the daemon stopped by itself" <<<"$second" || fail "no idle line of serve.sbatch"
(($(grep -c "requeueing job" "$log") == 1)) || fail "job $job requeued itself more than once"
[[ $(field long state) == "done" && $(field long step) == "$steps" ]] ||
  fail "long: $(field long state) at step $(field long step), not done at $steps"
[[ $(field short state) == "done" ]] || fail "short: $(field short state), not done"
[[ $(field bad state) == failed ]] || fail "bad: $(field bad state), not failed"
[[ $(field bad error) == "$spool/runs/bad/experiment.yaml: $bad_error" ]] || fail "bad's error: $(field bad error)"
grep -q '"reason": "idle"' "$spool/status.json" || fail "status.json: the daemon did not stop idle"
echo "ok 2 (${SECONDS} s): job $job resumed long first, bad failed ($bad_error), short done," \
  "idle exit, COMPLETED"

ref=$(sbatch --parsable --ntasks 2 "$repo/scripts/slurm/train.sbatch" "$config" "${long[@]}" \
  --run-dir runs/straight --export-weights runs/straight.safetensors)
state=$(wait_until_done "$ref")
[[ "$state" == COMPLETED ]] || fail "reference job $ref ended $state"
"$MPIPE_BIN" compare runs/straight.safetensors "$spool/runs/long/weights.safetensors" ||
  fail "long's weights differ from the uninterrupted run's"
echo "ok 3 (${SECONDS} s): long's weights are bit-identical to an uninterrupted train.sbatch run"

# --- 4. stopped while the spool holds no work: no requeue ------------------------------------------
job=$(MPIPE_RESUBMIT=1 sbatch --parsable --ntasks 2 "$repo/scripts/slurm/serve.sbatch" "$spool" \
  --idle-exit 60s)
log=runs/slurm-$job.out
wait_for_line "$log" "serving spool $spool"
scancel --signal=USR1 --batch "$job"
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "idle job $job ended $state"
grep -q "serve.sbatch: daemon stopped by SIGUSR1" "$log" || fail "job $job: no stop line"
if grep -q "requeueing" "$log"; then fail "job $job requeued with nothing left to run"; fi
[[ $(job_field "$job" Restarts) == 0 ]] || fail "job $job was restarted"
echo "ok 4 (${SECONDS} s): job $job stopped by SIGUSR1 with an empty spool ended without a requeue"

failed=0
echo "PASS: local Slurm checks of scripts/slurm/serve.sbatch (${SECONDS} s)"
