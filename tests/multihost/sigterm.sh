#!/usr/bin/env bash
# SIGTERM to mpirun while three hosts checkpoint every step: the run either stops at a step boundary with that step committed, or is killed with its previous commit intact; either way the newest committed step's shards are whole on every host, and a resume from it is bit-identical to one host's uninterrupted run.
#
# Three rounds of an endless K=3 run with a checkpoint at every step (so the signal often lands
# while the shards are being written), the signal after 3, 8 and 5 logged steps; the last round
# with scripts/mpi_env.sh's odls_base_sigkill_timeout of 10 s, with which, across hosts, Open MPI
# 4.1.4 does not pass the SIGTERM on before it kills the ranks (docs/multinode.md). Each round:
# no host keeps a temporary file or a step past the newest commit on h1, and (that step's folder
# copied together on every host, as from node-local disks) --resume to two more steps gives the
# weights of one host's run of as many steps, bit for bit. About 60 s. Usage: sigterm.sh CONFIG
# shellcheck source=tests/multihost/hosts.sh
source "$(dirname "$0")/hosts.sh"
config=$(realpath "$1")
start_hosts
layout=(--set pipeline.stages=3 --set checkpoint.every=1 --set checkpoint.keep=2)

# mpirun_pid: the pid of mpirun, which runs on h1.
mpirun_pid() {
  ip netns pids "${PREFIX}h1" | xargs -r ps -o pid=,comm= -p | awk '$2 == "mpirun" { print $1 }'
}

for round in 3 8 5:sigkill; do
  after=${round%%:*} name=cut$after mca=()
  [[ $round != *:sigkill ]] || mca=(--mca odls_base_sigkill_timeout 10)
  MCA+=("${mca[@]}")
  on_hosts h1:1 h2:1 h3:1 -- train "$config" --run-dir "$LOCAL/$name" "${layout[@]}" \
    --set train.steps=100000000 > "$WORK/$name.log" 2>&1 &
  launcher=$!
  metrics=$WORK/h1/$name/metrics.jsonl
  for _ in $(seq 1200); do
    [[ -f $metrics && $(wc -l < "$metrics") -ge $after ]] && break
    sleep 0.05
  done
  kill -TERM "$(mpirun_pid)"
  status=0
  wait "$launcher" || status=$?
  ((status != 124)) || { cat "$WORK/$name.log"; echo "FAILED: $name: mpirun did not end"; exit 1; }
  last=$(find "$WORK/h1/$name/checkpoints" -name meta.json | sort | tail -n 1)
  [[ -n $last ]] || { cat "$WORK/$name.log"; echo "FAILED: $name: nothing committed"; exit 1; }
  last=$(basename "$(dirname "$last")")
  stop=$((10#${last#step_}))
  if grep -q "stopped at step $stop by a signal" "$WORK/$name.log"; then
    outcome="stopped at step $stop and committed it"
  else
    outcome="killed (exit status $status), step $stop its newest commit"
    # With Open MPI's default grace the signal reaches every rank and the run stops itself.
    [[ $round == *:sigkill ]] ||
      { cat "$WORK/$name.log"; echo "FAILED: $name: the run did not stop at a step boundary"; exit 1; }
  fi
  leftovers=$(find "$WORK"/h[123]/"$name" -name '*.tmp-*')
  [[ -z $leftovers ]] || { echo "FAILED: $name: temporary files left: $leftovers"; exit 1; }
  for host in h1 h2 h3; do
    newer=$(find "$WORK/$host/$name/checkpoints" -mindepth 1 -maxdepth 1 -name 'step_*' | sort |
      awk -v last="$last" '{ n = split($0, p, "/") } p[n] > last')
    [[ -z $newer ]] || { echo "FAILED: $name: $host keeps a step past the commit: $newer"; exit 1; }
  done
  for from in h1 h2 h3; do
    for to in h1 h2 h3; do
      [[ $from == "$to" ]] || cp -an "$WORK/$from/$name/checkpoints/$last/." "$WORK/$to/$name/checkpoints/$last/"
    done
  done
  train_on "$name" h1:1 h2:1 h3:1 -- "$config" "${layout[@]}" --set train.steps=$((stop + 2)) --resume
  grep -q "resumed from step $stop" "$WORK/$name.log" ||
    { cat "$WORK/$name.log"; echo "FAILED: $name: did not resume from step $stop"; exit 1; }
  train_here 1 "straight$after" "$config" --set train.steps=$((stop + 2))
  same "straight$after" "$name"
  echo "ok: SIGTERM after $after steps${mca[*]:+ (${mca[*]})}: $outcome; resumed to" \
    "$((stop + 2)), bit-identical"
  MCA=("${MCA[@]:0:${#MCA[@]}-${#mca[@]}}")
done
passed=1
