# Sourced by the batch scripts in scripts/slurm/: runs the srun step so that a stop signal reaches mpipe, and requeues the job (after a time-limit stop, or when the batch script asks).
# shellcheck shell=bash
#
#   source "$(slurm_helper_dir)/stop_requeue.sh"   # see train.sbatch for how it is found
#   run_step srun ... mpipe ...     # sets step_status (srun's exit status) and stop_signal
#   requeue_after_stop WHAT         # requeues the job when the time-limit warning stopped it
#   requeue_allowed && requeue_job WHY   # requeues it for another reason (serve.sbatch: a
#                                        # daemon that ended the job on a failure)
#
# Slurm sends the batch shell SIGUSR1 before the time limit (--signal=B:USR1@120) and SIGTERM
# on `scancel --signal=TERM --batch`; the shell forwards either one to srun as SIGUSR1 (srun
# relays it to every task; SIGTERM to srun itself would kill the tasks at once), and mpipe
# checkpoints at the next step boundary and exits 0.

# run_step CMD...: runs CMD in the background, forwarding SIGUSR1 and SIGTERM to it as SIGUSR1,
# and waits until it has exited. Sets step_status (its exit status) and stop_signal (USR1 or
# TERM: the first stop signal received; empty when none came).
run_step() {
  step_pid=
  stop_signal=
  trap 'forward_stop USR1' USR1
  trap 'forward_stop TERM' TERM
  "$@" &
  step_pid=$!
  if [[ -n "$stop_signal" ]]; then kill -USR1 "$step_pid" 2>/dev/null || true; fi  # signalled early
  # `wait` returns early (status > 128) whenever a trapped signal arrives: wait again until
  # the step itself has exited, then keep its exit status.
  while :; do
    step_status=0
    wait "$step_pid" || step_status=$?
    ((step_status > 128)) && kill -0 "$step_pid" 2>/dev/null && continue
    break
  done
}

# shellcheck disable=SC2317  # called by the traps in run_step
forward_stop() {  # signal name
  stop_signal=${stop_signal:-$1}
  echo "${script_name:-sbatch}: got SIG$1, asking mpipe to checkpoint and stop"
  if [[ -n "$step_pid" ]]; then kill -USR1 "$step_pid" 2>/dev/null || true; fi
}

# requeue_allowed: succeeds when this is a Slurm job that has been restarted fewer than
# MPIPE_RESUBMIT times (SLURM_RESTART_COUNT, which counts every restart; MPIPE_RESUBMIT unset or 0:
# never).
requeue_allowed() {
  local limit=${MPIPE_RESUBMIT:-0}
  [[ -n "${SLURM_JOB_ID:-}" && "$limit" =~ ^[0-9]+$ ]] && ((${SLURM_RESTART_COUNT:-0} < limit))
}

# requeue_job WHY: requeues this job, saying WHY (`requeueing job J WHY (restart n of at most N)`):
# same job id, script, arguments, environment and every sbatch option. Slurm ends this run and
# starts the job again after a short hold (the credential lifetime plus 1 s, 2 min by default).
# Exits 0 when requeued; returns 1, saying so, when `scontrol requeue` fails. Check
# requeue_allowed first.
requeue_job() {
  local job=${SLURM_JOB_ID:-} restarts=${SLURM_RESTART_COUNT:-0}
  echo "${script_name:-sbatch}: requeueing job $job $1 (restart $((restarts + 1)) of at most" \
    "${MPIPE_RESUBMIT:-0})"
  trap - USR1 TERM
  if scontrol requeue "$job"; then exit 0; fi
  echo "${script_name:-sbatch}: scontrol requeue $job failed (submitted with --no-requeue?)" >&2
  return 1
}

# requeue_after_stop WHAT: when the step was stopped by SIGUSR1 (the time-limit warning) and
# requeue_allowed, requeues the job (requeue_job); the new run continues WHAT. Exits 0 when
# requeued; returns 1 when not.
requeue_after_stop() {
  [[ "$stop_signal" == USR1 ]] && requeue_allowed || return 1
  requeue_job "to continue $1"
}
