# Helpers for the daemon's end-to-end tests (sourced after lib.sh): start and stop `mpipe serve`
# on a spool under mpirun, and read experiment states from its status.json.
# shellcheck shell=bash
SPOOL=$WORK/spool

# start_daemon LOG [serve args...]: `mpipe serve --spool $SPOOL` on 2 ranks in the background;
# $DAEMON is its launcher's pid.
start_daemon() {
  local log=$1
  shift
  timeout 300 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" serve --spool "$SPOOL" "$@" \
    > "$log" 2>&1 &
  DAEMON=$!
}

# daemon_ranks: the pids of the running daemon's ranks (mpirun's children).
daemon_ranks() {
  pgrep -P "$(pgrep -P "$DAEMON" -x mpirun)" -x mpipe
}

# signal_daemon SIGNAL: sends SIGNAL to every rank, as srun and scancel do.
signal_daemon() {
  local ranks
  ranks=$(daemon_ranks) || { echo "FAILED: no daemon ranks"; exit 1; }
  kill -"$1" $ranks
}

# signal_mpirun SIGNAL: sends SIGNAL to the daemon's mpirun (which forwards SIGUSR1 to every rank).
signal_mpirun() {
  kill -"$1" "$(pgrep -P "$DAEMON" -x mpirun)"
}

# wait_daemon LOG: the daemon ends with status 0 (not by the timeout).
wait_daemon() {
  local status=0
  wait "$DAEMON" || status=$?
  [[ $status -eq 0 ]] || { cat "$1"; echo "FAILED: daemon exited with $status"; exit 1; }
}

# field NAME KEY: an experiment's KEY in status.json ("" when the file or experiment is missing).
field() {
  /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/status_field.py" "$SPOOL/status.json" "$1" "$2"
}

# wait_state NAME STATE LOG: waits up to 120 s for status.json to say NAME is in STATE.
wait_state() {
  for _ in $(seq 1200); do
    [[ $(field "$1" state) == "$2" ]] && return 0
    sleep 0.1
  done
  cat "$3"
  "$MPIPE" status "$SPOOL"
  echo "FAILED: $1 never became $2"
  exit 1
}

# wait_lines FILE N: waits up to 60 s for FILE to hold N lines.
wait_lines() {
  for _ in $(seq 1200); do
    [[ -f $1 && $(wc -l < "$1") -ge $2 ]] && return 0
    sleep 0.05
  done
  echo "FAILED: $1 never reached $2 lines"
  exit 1
}

# submit ARGS...: `mpipe submit $SPOOL ARGS...`, which must succeed.
submit() {
  "$MPIPE" submit "$SPOOL" "$@" || { echo "FAILED: submit $*"; exit 1; }
}
