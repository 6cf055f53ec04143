#!/usr/bin/env bash
# The command line itself: --help shows each option's default and no CLI11 type strings, and the
# commands of one process (plan, export, compare, schedule, ...) run without MPI, so their lines
# carry neither a rank nor a time.
source "$(dirname "$0")/lib.sh"
mlp=$(dirname "$0")/files/mlp.yaml

# help SUBCOMMAND PATTERN...: `mpipe SUBCOMMAND --help` exits 0 and has a line matching each
# (extended regular expression) PATTERN.
help() {
  local subcommand=$1
  shift
  "$MPIPE" "$subcommand" --help > "$WORK/$subcommand.help"
  for pattern in "$@"; do
    grep -qE -- "$pattern" "$WORK/$subcommand.help" ||
      { cat "$WORK/$subcommand.help"; echo "FAILED: $subcommand --help: no '$pattern'"; exit 1; }
  done
}
help generate '--length INT=200 ' '--temperature FLOAT=0.8 ' '--top-k INT=0 ' '--top-p FLOAT=1 ' \
  '--seed UINT=1 '
help tokenize '--val-fraction FLOAT=0.05 ' '--model-type TEXT=bpe '
help schedule '--schedule TEXT=gpipe ' '--stages INT=4 ' '--micro-batches INT=8 '
help compare '--rtol FLOAT=0 '
help serve '--idle-exit DURATION '
help supervise '--max-restarts INT=3 ' '--probe-timeout FLOAT=30 ' '--mpirun TEXT=mpirun ' \
  '--regrow-interval FLOAT=60 ' '--spare TEXT '
# No CLI11 validator name (`FLOAT:(FLOAT [UNIT]) AND (DURATION > 0)`, `INT:INT in [1 - 64]`) in any
# help: the option's text says what it accepts.
for subcommand in train schedule plan generate serve submit status cancel tokenize export compare \
  supervise; do
  "$MPIPE" "$subcommand" --help > "$WORK/$subcommand.help"
  ! grep -qE '^ +-[^ ]* [A-Z]+:' "$WORK/$subcommand.help" ||
    { cat "$WORK/$subcommand.help"; echo "FAILED: $subcommand --help: a CLI11 type string"; exit 1; }
done

# The commands of one process never start MPI: with a PML that does not exist, MPI_Init would
# fail, yet they run; train, which needs MPI, does fail.
export OMPI_MCA_pml=no_such_pml
"$MPIPE" schedule --stages 2 --micro-batches 2 > "$WORK/schedule.out"
"$MPIPE" plan "$mlp" > "$WORK/plan.out"
status=0
"$MPIPE" train "$mlp" --run-dir "$WORK/run" > "$WORK/train.out" 2>&1 || status=$?
[[ $status -ne 0 ]] || { cat "$WORK/train.out"; echo "FAILED: train ran without MPI"; exit 1; }
unset OMPI_MCA_pml

# Their messages are plain: `[error] message`, no `[rank 0/1]` and no time stamp.
status=0
"$MPIPE" plan "$WORK/missing.yaml" > "$WORK/missing.out" 2>&1 || status=$?
[[ $status -eq 2 && $(cat "$WORK/missing.out") == "[error] $WORK/missing.yaml:"* ]] ||
  { cat "$WORK/missing.out"; echo "FAILED: plan's error line (status $status)"; exit 1; }
status=0
"$MPIPE" export "$WORK/nowhere" "$WORK/w.safetensors" > "$WORK/export.out" 2>&1 || status=$?
[[ $status -eq 2 && $(wc -l < "$WORK/export.out") -eq 1 ]] &&
  grep -q "^\[error\] $WORK/nowhere" "$WORK/export.out" ||
  { cat "$WORK/export.out"; echo "FAILED: export's error line (status $status)"; exit 1; }

# Started on 2 ranks by mistake, a command of one process runs once (on rank 0).
timeout 60 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" schedule --stages 2 \
  --micro-batches 2 > "$WORK/twice.out"
[[ $(grep -c '^bubble' "$WORK/twice.out") -eq 1 ]] ||
  { cat "$WORK/twice.out"; echo "FAILED: schedule under mpirun -n 2 did not run once"; exit 1; }
echo "command line: help defaults, commands of one process without MPI"
