#!/usr/bin/env bash
# The daemon on 2 ranks: a bad file is refused by `submit` at once and never queued; of three
# experiments, the one that cannot run on this world (3 stages) fails alone with its error in
# status.json while the two others finish like `train` runs (a fourth, whose loss becomes
# non-finite, fails alone too); the daemon keeps serving (one more, submitted afterwards, runs);
# a second daemon on the same spool is refused with one line naming the first; SIGTERM ends an
# idle daemon with status 0. Usage: serve.sh CONFIG
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
config=$1

# submit checks the file before anything reaches the spool.
printf 'model:\n  layers:\n    - {type: linear, units: 4}\noptimizer:\n  lr: -1\n' > "$WORK/bad.yaml"
status=0
timeout 30 "$MPIPE" submit "$SPOOL" "$WORK/bad.yaml" > "$WORK/bad.out" 2>&1 || status=$?
cat "$WORK/bad.out"
[[ $status -eq 2 ]] || { echo "FAILED: bad submit exited with $status"; exit 1; }
[[ $(grep -c "bad.yaml:5: optimizer.lr: must be > 0, got -1" "$WORK/bad.out") -eq 1 &&
   $(wc -l < "$WORK/bad.out") -eq 1 ]] || { echo "FAILED: bad submit message"; exit 1; }
[[ ! -e $SPOOL ]] || { echo "FAILED: a refused submit wrote $SPOOL"; exit 1; }

status=0
timeout 30 "$MPIPE" serve --spool "$SPOOL" --idle-exit 0 > "$WORK/idle0.out" 2>&1 || status=$?
[[ $status -eq 2 && $(grep -c . "$WORK/idle0.out") -eq 1 ]] &&
  grep -qF -- '[error] --idle-exit: must be longer than 0 s, got 0 s (`mpipe serve --help` lists the options)' "$WORK/idle0.out" ||
  { cat "$WORK/idle0.out"; echo "FAILED: --idle-exit 0"; exit 1; }
status=0
timeout 30 "$MPIPE" status "$SPOOL" > "$WORK/nospool.out" 2>&1 || status=$?
[[ $status -eq 2 && $(cat "$WORK/nospool.out") == *"[error] $SPOOL: not a spool (no queue/ folder)" ]] ||
  { cat "$WORK/nospool.out"; echo "FAILED: status of no spool"; exit 1; }

submit "$config" --set train.steps=20 > "$WORK/submit.out"
grep -qx "queued mlp-1 (#1) in $SPOOL" "$WORK/submit.out" || { cat "$WORK/submit.out"; echo "FAILED: default name"; exit 1; }
submit "$config" --name three-stages --set pipeline.stages=3
submit "$config" --name diverging --set optimizer.kind=sgd --set optimizer.lr=1e3 \
  --set optimizer.clip_norm=0 --set train.steps=300
submit "$config" --name b --set train.steps=30 --set optimizer.lr=0.02
"$MPIPE" status "$SPOOL" > "$WORK/queued.out"
[[ $(grep -cE "^(mlp-1|three-stages|diverging|b) +queued " "$WORK/queued.out") -eq 4 ]] ||
  { cat "$WORK/queued.out"; echo "FAILED: status before the daemon"; exit 1; }

start_daemon "$WORK/serve.log"
wait_state mlp-1 "done" "$WORK/serve.log"
wait_state three-stages failed "$WORK/serve.log"
wait_state diverging failed "$WORK/serve.log"
wait_state b "done" "$WORK/serve.log"
[[ $(field diverging error) =~ ^step\ [0-9]+:\ loss\ is\ (nan|infinite) ]] ||
  { field diverging error; echo "FAILED: non-finite loss not recorded"; exit 1; }
error="$SPOOL/runs/three-stages/experiment.yaml: pipeline.data_parallel: auto needs the world size (2) to be divisible by pipeline.stages (3)"
[[ $(field three-stages error) == "$error" ]] || { field three-stages error; echo "FAILED: error in status.json"; exit 1; }
[[ $(field b step) == 30 && $(field mlp-1 step) == 20 ]] || { echo "FAILED: steps in status.json"; exit 1; }
for run in mlp-1 b; do
  for file in experiment.yaml metrics.jsonl summary.json weights.safetensors; do
    [[ -f $SPOOL/runs/$run/$file ]] || { echo "FAILED: no $run/$file"; exit 1; }
  done
done
grep -q '"stages": 2' "$SPOOL/runs/b/summary.json" || { echo "FAILED: b not planned for 2 ranks"; exit 1; }

# A second daemon on the same spool is refused at once.
status=0
timeout 60 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" serve --spool "$SPOOL" \
  > "$WORK/second.out" 2>&1 || status=$?
cat "$WORK/second.out"
[[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: second daemon exited with $status"; exit 1; }
[[ $(grep -cE "\[error\] $SPOOL: in use by mpipe serve pid [0-9]+ on host $(hostname) since [0-9TZ:-]+ \(lock $SPOOL/.lock\)$" "$WORK/second.out") -eq 1 &&
   $(grep -c "\[error\]" "$WORK/second.out") -eq 1 ]] || { echo "FAILED: second daemon message"; exit 1; }
! grep -q MPI_ABORT "$WORK/second.out" || { echo "FAILED: MPI_ABORT banner"; exit 1; }

# Still serving: a fourth experiment runs.
submit "$config" --name d --set train.steps=5
wait_state d "done" "$WORK/serve.log"
"$MPIPE" status "$SPOOL" > "$WORK/status.out"
cat "$WORK/status.out"
grep -E "^three-stages +failed +- +0/3 " "$WORK/status.out" | grep -qF -- "-  $error" || { echo "FAILED: status table"; exit 1; }
grep -qE "^d +done +2x1 +5/5 +[0-9.]+ +[0-9]+ +-$" "$WORK/status.out" || { echo "FAILED: status table"; exit 1; }

signal_daemon TERM
wait_daemon "$WORK/serve.log"
grep -q '"reason": "signal"' "$SPOOL/status.json" || { echo "FAILED: daemon not recorded as stopped"; exit 1; }
echo "serve: bad file refused by submit; 3 experiments + 1 diverging (2 failed alone), one more after them, a second daemon refused, SIGTERM exits 0"
