# Shared by the checkpoint end-to-end tests (sourced): runs that must fail the same way on every
# rank, and file helpers.
# shellcheck shell=bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# fails NAME CODE MESSAGE ARGS...: `mpipe train ARGS` (`mpipe $subcommand ARGS` when the caller
# sets subcommand) on 2 ranks must fail: every rank exits with CODE, the output holds exactly one
# error line and it is MESSAGE, and there is no MPI_ABORT banner. The output is in $WORK/NAME.log.
fails() {
  local name=$1 code=$2 message=$3
  shift 3
  local status=0
  rm -f "$WORK/$name".rc.*
  timeout 120 mpirun -n 2 --oversubscribe --bind-to none bash -c \
    '"$0" "${@:2}"; code=$?; echo $code > "$1.rc.$OMPI_COMM_WORLD_RANK"; exit $code' \
    "$MPIPE" "$WORK/$name" "${subcommand:-train}" "$@" > "$WORK/$name.log" 2>&1 || status=$?
  local problem=""
  if [[ $status -eq 0 || $status -eq 124 ]]; then
    problem="mpirun exit status $status"
  elif [[ "$(cat "$WORK/$name".rc.* 2>/dev/null | sort -u | tr '\n' ' ')" != "$code " ]]; then
    problem="rank exit codes $(cat "$WORK/$name".rc.* 2>/dev/null | tr '\n' ' '), expected $code on each"
  elif [[ $(grep -c '\[error\]' "$WORK/$name.log") -ne 1 ]]; then
    problem="not exactly one error line"
  elif [[ "$(grep '\[error\]' "$WORK/$name.log" | sed 's/.*\[error\] //')" != "$message" ]]; then
    problem="message differs; expected: $message"
  elif grep -q MPI_ABORT "$WORK/$name.log"; then
    problem="MPI_ABORT banner"
  fi
  if [[ -n $problem ]]; then
    cat "$WORK/$name.log"
    echo "FAILED: $name: $problem"
    exit 1
  fi
}

# info_line LOG MESSAGE: LOG holds MESSAGE as a log line of rank 0.
info_line() {
  grep -qxF "$2" <(grep '\[rank 0/' "$1" | sed 's/.*\] \[[a-z]*\] //') \
    || { cat "$1"; echo "FAILED: no line: $2"; exit 1; }
}

# crc32 FILE: zlib's crc32 of FILE as 8 hex digits, from gzip's trailer (independent of mpipe).
crc32() {
  gzip -c < "$1" | tail -c 8 | head -c 4 | od -An -tx4 | tr -d ' \n'
}

# flip_bit FILE N: flips the lowest bit of the byte N bytes before the end of FILE.
flip_bit() {
  local offset=$(( $(stat -c %s "$1") - $2 )) byte
  byte=$(od -An -tu1 -j "$offset" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((byte ^ 1)))" | dd of="$1" bs=1 seek="$offset" conv=notrunc status=none
}
