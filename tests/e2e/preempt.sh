#!/usr/bin/env bash
# Preemption: SIGUSR1 to mpirun (what Slurm's --signal sends before a time limit) makes every
# rank checkpoint and exit at the next step boundary; --resume then finishes the run, with the
# same weights as a run that was never interrupted. Usage: preempt.sh CONFIG (constant LR, so
# the trajectory does not depend on train.steps).
source "$(dirname "$0")/lib.sh"
config=$1

# A run far too long to finish, stopped by the signal once a few steps are logged.
endless 2 cut "$config" --export-weights "$WORK/cut.safetensors"
wait_for_steps cut 5 100
pkill -USR1 -P "$launcher" -x mpirun  # mpirun forwards SIGUSR1 to every rank
wait "$launcher" || { cat "$WORK/cut.log"; echo "FAILED: preempted run exited non-zero"; exit 1; }
stop=$(grep -o "stopped at step [0-9]*" "$WORK/cut.log") || { cat "$WORK/cut.log"; echo "FAILED: no stop"; exit 1; }
[[ ! -e "$WORK/cut.safetensors" ]] || { echo "FAILED: a preempted run exported weights"; exit 1; }
compgen -G "$WORK/cut/checkpoints/step_*" > /dev/null || { echo "FAILED: no checkpoint"; exit 1; }

# Finish 10 steps past the stop, and compare with the same number of steps in one go.
steps=$((${stop##* } + 10))
train 2 cut "$config" --set train.steps=$steps --resume
train 2 straight "$config" --set train.steps=$steps
same straight cut
echo "preempt: $stop by SIGUSR1, resumed to $steps, same weights as the uninterrupted run"
