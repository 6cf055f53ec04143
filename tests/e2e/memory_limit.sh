#!/usr/bin/env bash
# pipeline.memory_limit at run time: a run that passes the preflight (its training and evaluation
# are predicted within the limit) but whose weight export exceeds it ends on every rank, non-zero
# (exit code 4, not a timeout), within seconds, with one line naming the rank, stage, what ran,
# the bytes asked and in use, and the limit with where it was set. The trained state was
# committed before the export, so --resume with the limit lifted trains nothing and writes the
# export and summary.json. Rank 0, which waits for rank 1's weights when mpirun's SIGTERM comes,
# says that the job is ending, not that it waits on. And a language model's head (LM_CONFIG)
# trains within a limit its plan fits. Usage: memory_limit.sh CONFIG LM_CONFIG
# (tests/e2e/files/memory_limit.yaml and memory_lm.yaml)
source "$(dirname "$0")/lib.sh"
config=$1
lm=${2:?usage: memory_limit.sh CONFIG LM_CONFIG}
line=$(grep -n "memory_limit:" "$config" | cut -d: -f1)

# mpirun ends the job 2T after the MPI_Abort (SIGTERM after T, SIGKILL after 2T): T = 3 s leaves
# rank 0 the second after its SIGTERM in which the watchdog warns.
sigkill_timeout=3 slack=30
status=0
OMPI_MCA_odls_base_sigkill_timeout=$sigkill_timeout timeout 120 mpirun -n 2 --oversubscribe \
  --bind-to none "$MPIPE" train "$config" --run-dir "$WORK/run" > "$WORK/run.out" 2>&1 || status=$?
end=$(date +%s.%N)
cat "$WORK/run.out"
[[ $status -eq 4 ]] || { echo "FAILED: exit status $status (expected 4)"; exit 1; }
# From the error line (its time stamp) to the end of mpirun: the teardown, plus $slack s for a
# loaded machine.
error_at=$(date -d "$(grep "\[error\]" "$WORK/run.out" | head -n 1 | sed -E 's/^\[([^]]+)\].*/\1/')" +%s.%N)
took=$(awk -v a="$error_at" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
awk -v t="$took" -v m="$((2 * sigkill_timeout + slack))" 'BEGIN { exit !(t <= m) }' ||
  { echo "FAILED: the job took $took s after the error line"; exit 1; }
! grep -q "waiting up to" "$WORK/run.out" || { echo "FAILED: a rank says it waits on"; exit 1; }
grep -qE "^\[[^]]+\] \[rank 0/2\] \[warning\] watchdog: .*: SIGTERM while waiting [0-9.]+ s for .*; the job is ending \(SIGKILL follows\)$" \
  "$WORK/run.out" || { echo "FAILED: no warning that the job is ending"; exit 1; }
message="rank 1 (pipeline rank 1): memory limit exceeded in the weight export: asked 1.0 MiB \
with 4.2 MiB in use; pipeline.memory_limit is 4.75 MiB ($config:$line)"
[[ $(grep -c "\[error\]" "$WORK/run.out") -eq 1 ]] || { echo "FAILED: not one error line"; exit 1; }
grep -qF "[error] $message" "$WORK/run.out" ||
  { echo "FAILED: message, expected: $message"; exit 1; }
# The last step was committed before the export; nothing else was written at the end.
[[ -e "$WORK/run/checkpoints/step_00000003/meta.json" ]] ||
  { ls -R "$WORK/run"; echo "FAILED: step 3 was not committed before the export"; exit 1; }
[[ ! -e "$WORK/run/summary.json" && ! -e "$WORK/run/weights.safetensors" ]] ||
  { ls -R "$WORK/run"; echo "FAILED: a summary or export after the failed export"; exit 1; }
# No rank outlives the job.
! pgrep -f -- "--run-dir $WORK/run( |$)" > /dev/null || { echo "FAILED: a rank is still running"; exit 1; }

# With the limit lifted, --resume writes the export and the summary from step 3.
timeout 60 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$config" \
  --run-dir "$WORK/run" --resume --set pipeline.memory_limit=none > "$WORK/resume.out" 2>&1 ||
  { cat "$WORK/resume.out"; echo "FAILED: resume"; exit 1; }
cat "$WORK/resume.out"
grep -qF "finished at step 3 but summary.json and the export $WORK/run/weights.safetensors missing" \
  "$WORK/resume.out" || { echo "FAILED: resume message"; exit 1; }
[[ -e "$WORK/run/summary.json" && -e "$WORK/run/weights.safetensors" ]] ||
  { ls -R "$WORK/run"; echo "FAILED: resume wrote no summary or export"; exit 1; }

# A language model whose head's logits are its last stage's largest tensors, at K = 2 with
# recompute always and never, under a limit of the plan's own largest prediction (training and
# evaluation), which the plan fits by definition: the run stays within it. (The model once left
# out one micro-batch's logits beside their loss gradient, 10-30% of the last stage, and such a
# run ended at step 1 with exit 4 after its plan had said it fits.)
for recompute in always never; do
  layout=(--set pipeline.stages=2 --set pipeline.recompute="$recompute")
  "$MPIPE" plan "$lm" "${layout[@]}" --json > "$WORK/lm-$recompute.json"
  limit=$(python3 -c '
import json, math, sys
plan = json.load(open(sys.argv[1]))
print(math.ceil(max(max(s["peak_bytes"], s["evaluation_peak_bytes"]) for s in plan["stage_plans"])))
' "$WORK/lm-$recompute.json")
  timeout 300 mpirun -n 2 --oversubscribe --bind-to none "$MPIPE" train "$lm" "${layout[@]}" \
    --set pipeline.memory_limit="$limit" --run-dir "$WORK/lm-$recompute" \
    > "$WORK/lm-$recompute.out" 2>&1 || {
    cat "$WORK/lm-$recompute.out"
    echo "FAILED: $lm (recompute $recompute) over the limit of $limit bytes its plan fits"
    exit 1
  }
  echo "$lm, recompute $recompute: trained within the plan's $limit bytes"
done
echo "memory_limit: OK (the job ended $took s after its error line)"
