#!/usr/bin/env bash
# Checks that scripts/slurm/serve.sbatch requeues itself after the daemon ended the job on a memory-limit failure (exit 4), and that its supervisor relaunches the daemon after a lost peer (exit 3), under a throwaway single-node Slurm.
#
#   MPIPE_BIN=build/release/apps/mpipe tests/slurm/serve_sbatch_failure.sh   # ctest: slurm.serve_sbatch_failure
#
# Needs root and slurm-wlm and munge (tests/slurm/local_slurm.sh starts and stops the Slurm).
# Cases 1 to 3 submit `big` (tests/e2e/files/memory_limit.yaml: its weight export passes
# pipeline.memory_limit on rank 1, which writes runs/big/failure.json and ends the job with exit
# status 4) and, but for case 3, `after` (5 steps) to a spool of their own, then start a 2-task
# serve.sbatch job (--idle-exit 2s):
#   1. MPIPE_RESUBMIT=2: the job requeues itself once, saying why (exit status 4, restart 1 of at
#      most 2); the restarted daemon marks big failed with rank 1's line without running it
#      again, runs after to done, stops once idle, and the job ends COMPLETED with Restarts=1;
#   2. MPIPE_RESUBMIT=0: the job ends FAILED with exit status 4 and says it is not requeued;
#      after is still queued;
#   3. MPIPE_RESUBMIT=2 but nothing queued behind big: FAILED with exit status 4, not requeued
#      (a restarted daemon would only mark big failed).
#   4. `lost` (endless, comm.timeout=3s) and `after`, MPIPE_RESUBMIT=2: rank 1 is SIGSTOPped
#      after 8 steps, rank 0's watchdog ends the srun step (exit 3) and the job's supervisor
#      (mpipe supervise) runs the daemon again in the same job; it resumes lost from its
#      checkpoint, rank 1 is stopped again, the supervisor relaunches a second time, and the third
#      daemon resumes lost again (under the supervisor, whose --max-restarts bounds the
#      relaunches, not once only); lost is then cancelled, after runs; the job ends COMPLETED,
#      never requeued.
# About 40 s on 2 idle cores (each requeue waits out the local Slurm's 6 s hold).
set -euo pipefail

# shellcheck source=tests/slurm/local_slurm.sh disable=SC2034  # failed, fail_logs: read there
source "$(dirname "$0")/local_slurm.sh"
big_config=$repo/tests/e2e/files/memory_limit.yaml
after_config=$repo/tests/e2e/files/mlp.yaml
start_local_slurm
cd "$scratch/work"
limit_line=$(grep -n "memory_limit:" "$big_config" | cut -d: -f1)

field() {  # spool, experiment name, key -> its value in the spool's status.json ("" when missing)
  /usr/bin/python3 "$repo/tests/e2e/status_field.py" "$1/status.json" "$2" "$3"
}
message() {  # spool -> rank 1's line about big
  echo "rank 1 (pipeline rank 1): memory limit exceeded in the weight export: asked 1.0 MiB" \
    "with 4.2 MiB in use; pipeline.memory_limit is 4.75 MiB ($1/runs/big/experiment.yaml:$limit_line)"
}
# start SPOOL RESUBMIT [after]: a spool holding big (and after), and a serve.sbatch job on it with
# MPIPE_RESUBMIT=RESUBMIT; prints the job id.
start() {
  "$MPIPE_BIN" submit "$1" "$big_config" --name big >/dev/null || fail "submit big to $1"
  if [[ "${3:-}" == after ]]; then
    "$MPIPE_BIN" submit "$1" "$after_config" --name after --set train.steps=5 >/dev/null ||
      fail "submit after to $1"
  fi
  MPIPE_RESUBMIT=$2 sbatch --parsable --ntasks 2 "$repo/scripts/slurm/serve.sbatch" "$1" \
    --idle-exit 2s
}
# job_rank JOB RANK: the pid of the job's mpipe process of that rank (srun's task SLURM_PROCID),
# in this test's Slurm (another one may run jobs with the same ids).
job_rank() {
  local pid matches
  for pid in $(pgrep -x mpipe); do
    matches=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
      grep -cxF -e "SLURM_CONF=$SLURM_CONF" -e "SLURM_JOB_ID=$1" -e "SLURM_PROCID=$2") || true
    ((matches == 3)) && { echo "$pid"; return 0; }
  done
  return 1
}
# ended_failed JOB: the job ended FAILED with exit status 4, not restarted and saying why.
ended_failed() {
  local log=runs/slurm-$1.out state
  state=$(wait_until_done "$1")
  [[ "$state" == FAILED ]] || fail "job $1 ended $state, not FAILED"
  [[ $(job_field "$1" ExitCode) == 4:0 && $(job_field "$1" Restarts) == 0 ]] ||
    fail "job $1: ExitCode=$(job_field "$1" ExitCode) Restarts=$(job_field "$1" Restarts)"
  grep -qF "[error] $(message "$2")" "$log" || fail "job $1: no line about big"
  if grep -q "requeueing job" "$log"; then fail "job $1 requeued itself"; fi
}

# --- 1. exit status 4 with a queued experiment: one requeue, then the queue goes on -------------
spool=$scratch/work/spool1
fail_logs=("$spool/status.json")
job=$(start "$spool" 2 after)
log=runs/slurm-$job.out
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state"
[[ $(job_field "$job" Restarts) == 1 ]] || fail "job $job: Restarts=$(job_field "$job" Restarts)"
expected="serve.sbatch: requeueing job $job after exit status 4, an experiment passed"
expected+=" pipeline.memory_limit: the restarted daemon marks it failed (never retried) and goes on"
expected+=" with the queue (restart 1 of at most 2)"
(($(grep -c "requeueing job" "$log") == 1)) || fail "job $job did not requeue itself exactly once"
grep -qxF "$expected" "$log" || fail "job $job: no line '$expected'"
first=$(awk -v m="serve.sbatch: job $job (restart 1)" 'index($0, m) { exit } 1' "$log")
second=$(awk -v m="serve.sbatch: job $job (restart 1)" 'index($0, m) { seen = 1 } seen' "$log")
grep -qF "[error] $(message "$spool")" <<<"$first" || fail "the first daemon's line about big"
grep -qF "serve.sbatch: mpipe supervise failed with status 4" <<<"$first" ||
  fail "no status line"
grep -qF "[error] big: failed: $(message "$spool")" <<<"$second" ||
  fail "the restarted daemon's line about big"
if grep -q "big: starting" <<<"$second"; then fail "the restarted daemon ran big again"; fi
grep -qF "idle for 2 s (--idle-exit): stopping" <<<"$second" || fail "no idle exit"
[[ $(field "$spool" big state) == failed && $(field "$spool" big error) == "$(message "$spool")" ]] ||
  fail "big: $(field "$spool" big state) ($(field "$spool" big error)), not failed with rank 1's line"
[[ $(field "$spool" after state) == "done" && $(field "$spool" after step) == 5 ]] ||
  fail "after: $(field "$spool" after state) at step $(field "$spool" after step), not done at 5"
echo "ok 1 (${SECONDS} s): job $job ended on big's memory limit (exit 4), requeued itself once;" \
  "big failed, after done, COMPLETED"

# --- 2. MPIPE_RESUBMIT=0: FAILED with exit status 4 -------------------------------------------
spool=$scratch/work/spool2
fail_logs=("$spool/status.json")
job=$(start "$spool" 0 after)
ended_failed "$job" "$spool"
expected="serve.sbatch: not requeueing after exit status 4 (an experiment passed"
expected+=" pipeline.memory_limit): restarted 0 times of at most MPIPE_RESUBMIT=0; start it again"
expected+=" (sbatch scripts/slurm/serve.sbatch $spool) and the queue goes on; the job ends with"
expected+=" status 4"
grep -qxF "$expected" "runs/slurm-$job.out" || fail "job $job: no line '$expected'"
[[ $(field "$spool" after state) == queued ]] || fail "after: $(field "$spool" after state)"
echo "ok 2 (${SECONDS} s): with MPIPE_RESUBMIT=0 job $job ended FAILED with exit status 4"

# --- 3. nothing queued behind the failed experiment: FAILED with exit status 4 -----------------
spool=$scratch/work/spool3
fail_logs=("$spool/status.json")
job=$(start "$spool" 2)
ended_failed "$job" "$spool"
expected="serve.sbatch: not requeueing after exit status 4 (an experiment passed"
expected+=" pipeline.memory_limit): the spool holds no more work; the job ends with status 4"
grep -qxF "$expected" "runs/slurm-$job.out" || fail "job $job: no line '$expected'"
echo "ok 3 (${SECONDS} s): with nothing queued job $job ended FAILED with exit status 4"

# --- 4. exit status 3 (a lost peer), twice: resumed each time, the queue goes on ---------------
spool=$scratch/work/spool4
fail_logs=("$spool/status.json")
"$MPIPE_BIN" submit "$spool" "$after_config" --name lost --set train.steps=100000000 \
  --set checkpoint.every=5 --set log.every=1 --set comm.timeout=3s --set comm.startup_timeout=6s \
  >/dev/null || fail "submit lost"
"$MPIPE_BIN" submit "$spool" "$after_config" --name after --set train.steps=5 >/dev/null ||
  fail "submit after"
job=$(MPIPE_RESUBMIT=2 sbatch --parsable --ntasks 2 "$repo/scripts/slurm/serve.sbatch" "$spool" \
  --idle-exit 2s)
log=runs/slurm-$job.out
metrics=$spool/runs/lost/metrics.jsonl
# (Each launch's start: the job's first line, then the supervisor's line for each relaunch.)
start_line="serve.sbatch: job $job (restart 0)"
for restart in 1 2; do
  wait_for_line "$log" "$start_line"
  # 8 more steps (a committed checkpoint) in this run, then SIGSTOP its rank 1.
  lines=$(wc -l 2>/dev/null <"$metrics" || echo 0)
  wait_for_line "$metrics" '"step"' $((lines + 8))
  rank1=$(job_rank "$job" 1) || fail "job $job: no rank 1"
  kill -STOP "$rank1"
  start_line="supervise: restart $restart of at most 3: exit status 3: "
  wait_for_line "$log" "$start_line"
  kill -KILL "$rank1" 2>/dev/null || true  # Slurm killed it already
done
# The third daemon resumes lost (its third run): a few steps of it, then cancel it.
lines=$(wc -l 2>/dev/null <"$metrics" || echo 0)
wait_for_line "$metrics" '"step"' $((lines + 3))
"$MPIPE_BIN" cancel "$spool" lost >/dev/null || fail "cancel lost"
state=$(wait_until_done "$job")
[[ "$state" == COMPLETED ]] || fail "job $job ended $state"
[[ $(job_field "$job" Restarts) == 0 ]] || fail "job $job: Restarts=$(job_field "$job" Restarts)"
if grep -q "requeueing job" "$log"; then fail "job $job requeued itself"; fi
[[ $(field "$spool" lost state) == cancelled && $(field "$spool" lost lost_peer_resumes) == 2 &&
  $(field "$spool" after state) == "done" ]] ||
  fail "lost: $(field "$spool" lost state), after: $(field "$spool" after state)"
resumed="lost: the last job ended when it lost a peer"
grep -c "$resumed .*(under mpipe supervise)$" "$log" | grep -qx 2 ||
  fail "not two lines about the resumes"
[[ $(grep -cE "resumed from step [1-9][0-9]*" "$log") -eq 2 ]] || fail "lost was not resumed twice"
if grep -qF "[error] lost: failed: " "$log"; then fail "lost failed"; fi
echo "ok 4 (${SECONDS} s): job $job lost rank 1 twice (exit 3), its supervisor relaunched the" \
  "daemon twice, which resumed lost each time; lost cancelled, after done, COMPLETED"

failed=0
echo "PASS: local Slurm checks of serve.sbatch after a memory-limit or lost-peer failure (${SECONDS} s)"
