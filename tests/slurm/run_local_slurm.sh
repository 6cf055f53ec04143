#!/usr/bin/env bash
# Starts a throwaway single-node Slurm (tests/slurm/local_slurm.sh) and checks scripts/slurm/train.sbatch under it.
#
#   MPIPE_BIN=build/release/apps/mpipe tests/slurm/run_local_slurm.sh     # ctest: slurm.train_sbatch
#
# Needs root and slurm-wlm and munge; local_slurm.sh says how the private Slurm is set up and
# stopped (scratch folder, free ports, a 6 s requeue hold, its own 240 s deadline).
# Checks (about 45 s on 2 idle cores):
#   1. an uninterrupted run of 400 steps ends COMPLETED with summary.json and its weights;
#   2. a job submitted with extra options (--job-name, --mem, --time, --comment, --account,
#      --signal, --output elsewhere) and MPIPE_RESUBMIT=1, stopped by SIGUSR1 to the batch
#      shell (what --signal=B:USR1@120 sends before the time limit), checkpoints, stops and
#      requeues itself: the same job restarts with every option (scontrol show job, which
#      does not show --signal; --qos is dropped without accounting, and there is no GRES) and
#      continues from the checkpoint; stopped again, it does not requeue a second time
#      (MPIPE_RESUBMIT=1), or has finished when the stop lands late; `scontrol requeue` of the
#      finished job continues it to the end (or finds it finished),
#      with the weights of run 1, bit for bit, and all three runs' logs in its output file;
#   3. SIGTERM stops a job the same way, prints the resume command and never requeues;
#   4. that MPIPE_RESUME=1 command (with a step count within reach) finishes the run;
#   5. a bad experiment file makes the job FAILED, with mpipe's error in the output.
set -euo pipefail

# shellcheck source=tests/slurm/local_slurm.sh disable=SC2034  # failed, fail_logs: read there
source "$(dirname "$0")/local_slurm.sh"
sbatch_script=$repo/scripts/slurm/train.sbatch
config=$repo/tests/e2e/files/mlp.yaml
start_local_slurm

cd "$scratch/work"
mkdir -p logs
out() { echo "runs/slurm-$1.out"; }
# Steps of a few milliseconds: long enough to be stopped before the end, short enough to finish.
steps=400
model=(--set train.batch_size=4096 --set data.num_examples=4096 --set log.every=25)

# --- 1. an uninterrupted run: the reference ----------------------------------------------------
job=$(sbatch --parsable --ntasks 2 "$sbatch_script" "$config" "${model[@]}" \
  --set train.steps=$steps --run-dir runs/straight --export-weights runs/straight.safetensors)
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state"
grep -q "\"steps\": $steps" runs/straight/summary.json 2>/dev/null ||
  fail "runs/straight/summary.json does not say $steps steps"
grep -q '"stages": 2' runs/straight/summary.json || fail "summary.json does not say 2 stages"
[[ -f runs/straight.safetensors ]] || fail "job $job exported no weights"
echo "ok 1 (${SECONDS} s): job $job ran $steps steps uninterrupted"

# --- 2. SIGUSR1: checkpoint, stop and requeue with every option ---------------------------------
opts=(--job-name=mpipe-requeue --ntasks=2 --mem=1000 --time=30 --comment=requeue-check
  --account=test-account --signal=B:USR1@600 --output=logs/%x-%j.log)
job=$(MPIPE_RESUBMIT=1 sbatch --parsable "${opts[@]}" "$sbatch_script" "$config" "${model[@]}" \
  --set train.steps=$steps --run-dir runs/requeued --export-weights runs/requeued.safetensors)
log=logs/mpipe-requeue-$job.log
declare -A before=()
for field in JobName Account Comment TimeLimit MinMemoryNode NumTasks StdOut Requeue Partition; do
  before[$field]=$(job_field "$job" "$field")
done
[[ "${before[Comment]}" == requeue-check && "${before[MinMemoryNode]}" == 1000M ]] ||
  fail "job $job was not submitted with the extra options: $(scontrol show job "$job")"
training_after "$log" "train.sbatch: job $job "
scancel --signal=USR1 --batch "$job"
wait_for_line "$log" "requeueing job $job"
step1=$(newest_checkpoint_step runs/requeued) || fail "no checkpoint after the first stop"
wait_for_line "$log" "resumed from step $step1"  # the same job, started again
training_after "$log" "(restart 1)"
[[ $(job_field "$job" Restarts) == 1 ]] || fail "job $job: Restarts=$(job_field "$job" Restarts)"
for field in "${!before[@]}"; do
  now=$(job_field "$job" "$field")
  [[ "$now" == "${before[$field]}" ]] ||
    fail "requeued job $job changed $field from '${before[$field]}' to '$now'"
done
# A second stop: MPIPE_RESUBMIT=1 allows no second requeue. (On a loaded machine the job may have
# finished by now, and scancel finds no job to signal.)
scancel --signal=USR1 --batch "$job" 2> /dev/null || true
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state after its second stop"
step2=$(newest_checkpoint_step runs/requeued) || fail "no checkpoint"
((step2 > step1)) || fail "job $job did not get past step $step1 (newest checkpoint $step2)"
(($(grep -c "requeueing job" "$log") == 1)) || fail "job $job requeued itself more than once"
echo "ok 2 (${SECONDS} s): job $job stopped at $step1 on SIGUSR1, requeued itself with all its options," \
  "resumed, stopped at $step2 and stayed stopped (MPIPE_RESUBMIT=1)"

scontrol requeue "$job"  # continue the finished job: same id, same options, resumes again
if ((step2 < steps)); then
  wait_for_line "$log" "resumed from step $step2"
else  # (on a loaded machine the second stop can land after the run's last step)
  wait_for_line "$log" "already finished at step $steps"
fi
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state after scontrol requeue"
grep -q "\"steps\": $steps" runs/requeued/summary.json 2>/dev/null ||
  fail "runs/requeued/summary.json does not say $steps steps"
"$MPIPE_BIN" compare runs/straight.safetensors runs/requeued.safetensors ||
  fail "the stopped and requeued run's weights differ from the uninterrupted run's"
for r in 0 1 2; do grep -qF "(restart $r)" "$log" || fail "$log lost the log of run $r"; done
echo "ok 2 (${SECONDS} s): scontrol requeue $job finished the run: weights bit-identical to job 1's"

# --- 3. SIGTERM: checkpoint and stop, never requeue ----------------------------------------------
long=("${model[@]}" --set train.steps=1000000)
job=$(MPIPE_RESUBMIT=5 sbatch --parsable --ntasks 2 "$sbatch_script" "$config" "${long[@]}")
run_dir=runs/mlp-$job
training_after "$(out "$job")" "train.sbatch: job $job "
scancel --signal=TERM --batch "$job"
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state"
grep -q 'stopped at step' "$(out "$job")" || fail "mpipe did not report the stop"
[[ ! -f "$run_dir/summary.json" ]] || fail "a stopped run wrote summary.json"
step3=$(newest_checkpoint_step "$run_dir") || fail "no checkpoint after SIGTERM"
if grep -q 'requeueing' "$(out "$job")"; then fail "SIGTERM must not requeue"; fi
[[ $(job_field "$job" Restarts) == 0 ]] || fail "job $job was restarted"
grep -qF -- 'MPIPE_RESUME=1 sbatch --dependency=afterany:' "$(out "$job")" ||
  fail "job $job printed no resume command"
echo "ok 3 (${SECONDS} s): job $job stopped on SIGTERM at step $step3, printed the resume command, no requeue"

# --- 4. resume by hand with the printed command, to a step count within reach ------------------
final=$((step3 + 20))
job=$(MPIPE_RESUME=1 sbatch --parsable --ntasks 2 "$sbatch_script" "$config" "${long[@]}" \
  --run-dir "$run_dir" --set train.steps=$final)
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "resumed job $job ended $state"
grep -q "\"steps\": $final" "$run_dir/summary.json" 2>/dev/null ||
  fail "no summary.json with $final steps in $run_dir"
echo "ok 4 (${SECONDS} s): job $job resumed at $step3 and finished at step $final"

# --- 5. a bad experiment fails the job ----------------------------------------------------------
job=$(sbatch --parsable --ntasks 2 "$sbatch_script" "$config" --set optimizer.lr=-1)
state=$(wait_until_done "$job")
[[ "$state" == FAILED ]] || fail "job $job with optimizer.lr=-1 ended $state, not FAILED"
grep -q 'optimizer.lr: must be > 0, got -1' "$(out "$job")" ||
  fail "job $job did not report the bad key"
echo "ok 5 (${SECONDS} s): job $job with a bad config FAILED and named the key"

failed=0
echo "PASS: local Slurm checks of scripts/slurm/train.sbatch (${SECONDS} s)"
