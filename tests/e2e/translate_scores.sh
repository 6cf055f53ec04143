#!/usr/bin/env bash
# BLEU and chrF at a translation model's evaluations (train.eval_bleu_sentences): an evaluation
# during training and the final one carry them in metrics.jsonl, the log line, the TensorBoard
# events and summary.json; they are the same at K = 1, K = 2, under zbv (rank 0 holds the first and
# the last stage) and with D = 2 (the decoding runs through the first replica's own stages, rank 0
# driving), and `mpipe eval` of the final checkpoint gives the same on 1 and 2 ranks; training
# with them off (0) leaves the weights bit-identical and the records without them; and the
# decoding stays within a memory limit 2% above the plan's peak.
# Usage: translate_scores.sh CONFIG (translate_tiny.yaml on pair shards: translate_transparency.sh)
source "$(dirname "$0")/lib.sh"
config=$1
run=(--set train.steps=30 --set train.eval_every=15 --set log.tensorboard=true)
train 1 k1 "$config" "${run[@]}"
train 2 k2 "$config" "${run[@]}" --set pipeline.stages=2
train 2 off "$config" "${run[@]}" --set pipeline.stages=2 --set train.eval_bleu_sentences=0
train 2 zbv "$config" "${run[@]}" --set pipeline.stages=2 --set pipeline.schedule=zbv
# D = 2 is bit-identical to D = 1 under the gradient tree, with the same global micro-batches.
train 1 tree "$config" "${run[@]}" --set pipeline.weight_grads=tree
train 4 d2 "$config" "${run[@]}" --set pipeline.stages=2 --set pipeline.data_parallel=2 \
  --set pipeline.weight_grads=tree --set pipeline.micro_batches=2

# scores NAME: "step bleu chrf" per evaluation record of run NAME, then "final bleu chrf" from its
# summary.json (a missing key fails).
scores() {
  python3 -c 'import json, sys
for line in open(sys.argv[1] + "/metrics.jsonl"):
    r = json.loads(line)
    if "split" in r:
        print(r["step"], repr(r["bleu"]), repr(r["chrf"]))
s = json.load(open(sys.argv[1] + "/summary.json"))
print("final", repr(s["final_eval_bleu"]), repr(s["final_eval_chrf"]))' "$WORK/$1"
}
scores k1 > "$WORK/k1.scores" || { echo "FAILED: k1: no bleu or chrf in its records"; exit 1; }
scores k2 > "$WORK/k2.scores" || { echo "FAILED: k2: no bleu or chrf in its records"; exit 1; }
cat "$WORK/k1.scores"
[[ $(wc -l < "$WORK/k1.scores") -eq 3 ]] || { echo "FAILED: not 2 evaluations and the final"; exit 1; }
cmp "$WORK/k1.scores" "$WORK/k2.scores" || { echo "FAILED: K = 1 and K = 2 score differently"; exit 1; }
for pair in k1:zbv tree:d2; do
  one=${pair%:*} other=${pair#*:}
  scores "$other" > "$WORK/$other.scores" || { echo "FAILED: $other: no bleu or chrf"; exit 1; }
  scores "$one" > "$WORK/$one.scores" || { echo "FAILED: $one: no bleu or chrf"; exit 1; }
  same "$one" "$other"
  cmp "$WORK/$one.scores" "$WORK/$other.scores" ||
    { echo "FAILED: $one and $other score differently"; exit 1; }
done
python3 -c 'import sys
for line in open(sys.argv[1]):
    bleu, chrf = map(float, line.split()[1:])
    assert 0 <= bleu <= 100 and 0 < chrf <= 100, line' "$WORK/k1.scores" ||
  { echo "FAILED: scores out of range"; exit 1; }
grep -qE "step 15: val loss [0-9.]+ \| .* \| BLEU [0-9.]+ \| chrF2 [0-9.]+$" "$WORK/k2.log" ||
  { cat "$WORK/k2.log"; echo "FAILED: no BLEU in the evaluation's log line"; exit 1; }
grep -qE "^final: .* \| val BLEU [0-9.]+ \| val chrF2 [0-9.]+ \| run dir" "$WORK/k2.log" ||
  { echo "FAILED: no BLEU in the final line"; exit 1; }
grep -q "eval/val/bleu" "$WORK"/k2/events.out.tfevents.* ||
  { echo "FAILED: no eval/val/bleu in the TensorBoard events"; exit 1; }

# Off: the same weights, bit for bit, and no scores anywhere.
same k2 off
same k1 k2
! grep -q '"bleu"' "$WORK/off/metrics.jsonl" || { echo "FAILED: off: bleu in metrics.jsonl"; exit 1; }
! grep -q 'bleu' "$WORK/off/summary.json" || { echo "FAILED: off: bleu in summary.json"; exit 1; }

# mpipe eval of the final checkpoint, on 1 rank and on 2: the final scores (to the 2 decimals it
# prints).
expected=$(python3 -c 'import sys
bleu, chrf = map(float, open(sys.argv[1]).read().split("\n")[-2].split()[1:])
print(f"BLEU {bleu:.2f} | chrF2 {chrf:.2f}")' "$WORK/k1.scores")
for ranks in 1 2; do
  timeout 60 mpirun -n $ranks --oversubscribe --bind-to none "$MPIPE" eval "$config" \
    --checkpoint "$WORK/k2" --set pipeline.stages=$ranks > "$WORK/eval$ranks.out" 2>&1 ||
    { cat "$WORK/eval$ranks.out"; echo "FAILED: eval on $ranks ranks"; exit 1; }
  cat "$WORK/eval$ranks.out"
  grep -qE "\| $expected \(([0-9]+) sentences\) \| \1 examples$" "$WORK/eval$ranks.out" ||
    { echo "FAILED: eval on $ranks ranks does not print '$expected'"; exit 1; }
done

# A limit 2% above the plan's peak holds through the decodings too: each stage's decoding forward
# holds an evaluation micro-batch's rows at most, and no rank holds the whole model (which, with
# its decoding of 32 rows, took rank 0 past this limit when rank 0 decoded alone).
limit=$(python3 -c 'import json, sys
print(int(max(json.load(open(sys.argv[1]))["predicted_peak_bytes_per_rank"]) * 1.02))' \
  "$WORK/k2/summary.json")
train 2 limit "$config" "${run[@]}" --set pipeline.stages=2 --set pipeline.memory_limit="$limit"
scores limit > "$WORK/limit.scores" || { echo "FAILED: limit: no bleu or chrf"; exit 1; }
cmp "$WORK/k1.scores" "$WORK/limit.scores" || { echo "FAILED: the limit changed the scores"; exit 1; }
echo "translate_scores: BLEU and chrF at each evaluation, K = 1 = K = 2 = mpipe eval, weights unchanged"
