#!/usr/bin/env bash
# The tied copies' gradient exchange at K = 2 against the plan's: CONFIG (gpt_kjv: its embedding
# and tied head on two ranks) trained on 2 ranks of one thread and one core each, and its untied
# twin (the same layers, `tie: embedding` left out: the same compute, no exchange), ROUNDS rounds.
# Per round and run: the measured step (the batch over the median of the logged windows'
# samples/s, the first window left out), `mpipe plan`'s step by MPIPE_BIN and, where BEFORE is set, by
# that build (one without the exchange's term) beside it, both at their default measured rates;
# from steps 10-15 traced, the time from the step's last op to the loss allreduce on the rank
# that ran that op (the exchange and the finite check on the tied run, where the other rank waits
# for it; the finite check alone on the twin), and the plan's tied_exchange_s.
# Last, per run: median [range] of the rounds.
#
#   scripts/bench/tied_exchange.sh      # about 1.5 minutes on the 2-core machine at ROUNDS=3
#
# Environment: CONFIG (configs/gpt_kjv.yaml, its data in runs/kjv: scripts/data/kjv.sh), ROUNDS
# (3), STEPS (40), MPIPE_BIN, BEFORE (an older binary), MPIRUN.
set -euo pipefail
cd "$(dirname "$0")/../.."
config=${CONFIG:-configs/gpt_kjv.yaml}
rounds=${ROUNDS:-3}
steps=${STEPS:-40}
bin=${MPIPE_BIN:-build/release/apps/mpipe}
before=${BEFORE:-}
mpirun=${MPIRUN:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
work=$(mktemp -d /tmp/mpipe-tied-exchange.XXXXXX)
trap 'rm -rf "$work"' EXIT
untied=$work/untied.yaml
sed 's/, tie: embedding}/}/' "$config" >"$untied"
! grep -q 'tie: embedding' "$untied" || { echo "tied_exchange.sh: a tie left in $untied" >&2; exit 2; }
common=(--set pipeline.stages=2 --set pipeline.schedule=1f1b --set "train.steps=$steps"
  --set train.eval_batches=1 --set checkpoint.every=0 --set log.every=5)

# plan BIN CONFIG: the predicted step (ms), the tie exchange (us) on stage 0 and the batch size.
plan() {
  "$1" plan "$2" "${common[@]}" --json |
    python3 -c 'import json, sys; p = json.load(sys.stdin)
print("%.1f %.0f %d" % (1e3 * p["step_s"], 1e6 * p["stage_plans"][0].get("tied_exchange_s", 0),
                        p["batch_size"]))'
}

# run NAME CONFIG BATCH: "step_ms gap_us", the measured step and the last op's rank's time from
# that op to its loss allreduce (the median of the traced steps).
run() {
  local dir=$work/$1
  "$mpirun" -n 2 --bind-to core "$bin" train "$2" --run-dir "$dir" "${common[@]}" \
    --set "log.trace_steps=[10,11,12,13,14,15]" >"$dir.log" 2>&1 || { tail -5 "$dir.log" >&2; echo "? ?"; return; }
  python3 - "$dir" "$3" <<'PY'
import json, re, statistics, sys
d, batch = sys.argv[1], int(sys.argv[2])
rates = [r["samples_per_s"] for r in map(json.loads, open(f"{d}/metrics.jsonl")) if "samples_per_s" in r][1:]
events = json.load(open(f"{d}/trace.json"))["traceEvents"]
gaps = []
for step in range(10, 16):
    ends = {}  # per rank: (its last op's end, its loss allreduce's start)
    for rank in (0, 1):
        mine = [e for e in events if e.get("pid") == rank and e.get("args", {}).get("step") == step]
        ops = [e["ts"] + e["dur"] for e in mine if re.fullmatch(r"(F|B|R|W|WB)\d*", e["name"])]
        ends[rank] = (max(ops), min(e["ts"] for e in mine if e["name"] == "loss allreduce"))
    last_op, loss = max(ends.values())  # the rank that ended its ops last
    gaps.append(loss - last_op)
print("%.1f %.0f" % (1e3 * batch / statistics.median(rates), statistics.median(gaps)))
PY
}

echo "load before: $(uptime)"
for ((r = 1; r <= rounds; r++)); do
  for name in tied untied; do
    cfg=$config
    [[ $name == untied ]] && cfg=$untied
    read -r after_step after_exchange batch < <(plan "$bin" "$cfg")
    before_step=-
    [[ -n $before ]] && read -r before_step _ _ < <(plan "$before" "$cfg")
    measured=$(run "$name-$r" "$cfg" "$batch")
    echo "$name $measured $after_step $after_exchange $before_step" | tee -a "$work/rows" |
      awk '{printf "round '"$r"' %-7s measured %s ms, last op to loss allreduce %s us | plan %s ms (exchange %s us), before %s ms\n", $1, $2, $3, $4, $5, $6}'
  done
done
echo "load after: $(uptime)"
echo "median [range] of $rounds rounds:"
python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def summary(values):
    v = [float(x) for x in values if x not in ("?", "-")]
    return "%.1f [%.1f-%.1f]" % (statistics.median(v), min(v), max(v)) if v else "-"
for name in ("tied", "untied"):
    mine = [r for r in rows if r[0] == name]
    print(f"  {name:<7} measured {summary(r[1] for r in mine)} ms, last op to loss allreduce "
          f"{summary(r[2] for r in mine)} us, plan {summary(r[3] for r in mine)} ms (exchange "
          f"{summary(r[4] for r in mine)} us), before {summary(r[5] for r in mine)} ms")
PY
