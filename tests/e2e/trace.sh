#!/usr/bin/env bash
# log.trace_steps: trace.json holds, for every rank, one compute and one communication track with
# every F and B (and recompute) of the traced steps and nothing of the others; the clocks are
# aligned, so each receive's wait ends after the matching send started, and carries the message's
# bytes, which add up to the link's count per step (summary.json); under interleaved and zbv each
# op's event names its chunk ("F3.1") and carries its global stage, and each message pairs the
# stages next to each other; checkpoint, evaluation, optimizer and allreduce events appear; a run
# without the key writes no trace.json; one whose trace.json cannot be written warns and goes on.
# Usage: trace.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1

# K=2 GPipe with recompute, the traced step 3 followed by a checkpoint and an evaluation.
train 2 gpipe "$config" --set train.steps=4 --set 'log.trace_steps=[2, 3]' \
  --set checkpoint.every=3 --set train.eval_every=3
# K=2 x D=2 1F1B: the data-parallel allreduce.
train 4 replicas "$config" --set train.steps=3 --set 'log.trace_steps=[2]' \
  --set pipeline.stages=2 --set pipeline.data_parallel=2 --set pipeline.schedule=1f1b
# K=2 with two chunks per rank, in the loop placement and in the V (zbv's split backward).
train 2 interleaved "$config" --set train.steps=2 --set 'log.trace_steps=[2]' \
  --set pipeline.schedule=interleaved --set pipeline.virtual_stages=2
# (zbv grouped by 2: each group's product shows as WB of its last micro-batch, beside that one's W.)
train 2 zbv "$config" --set train.steps=2 --set 'log.trace_steps=[2]' --set pipeline.schedule=zbv \
  --set pipeline.weight_grads=grouped --set pipeline.weight_group=2
train 2 untraced "$config" --set train.steps=2
[[ ! -e "$WORK/untraced/trace.json" ]] || { echo "FAILED: a run without log.trace_steps traced"; exit 1; }
grep -qF "wrote $WORK/gpipe/trace.json" "$WORK/gpipe.log" ||
  { cat "$WORK/gpipe.log"; echo "FAILED: no line about trace.json"; exit 1; }
# A trace.json that cannot be written (a folder in its place) is a warning with the reason: the run
# goes on to its end and its checkpoint (it ended with exit status 1 after the traced step, and
# without its checkpoint).
mkdir -p "$WORK/blocked/trace.json"
train 2 blocked "$config" --set train.steps=4 --set 'log.trace_steps=[2]' --set checkpoint.every=4
grep -qF "[warning] $WORK/blocked/trace.json: cannot rename into place: Is a directory; the run goes on without its trace" \
  "$WORK/blocked.log" || { cat "$WORK/blocked.log"; echo "FAILED: no warning about trace.json"; exit 1; }
[[ -f $WORK/blocked/checkpoints/step_00000004/meta.json ]] ||
  { echo "FAILED: no checkpoint after the failed trace"; exit 1; }

/usr/bin/python3 - "$WORK" <<'PY' || { echo "FAILED: trace.json"; exit 1; }
import json, sys
from collections import defaultdict

def check(path, ranks, stages, steps, micro_batches, expect, chunks=1, placement="loop",
          kinds=("F", "B", "R")):
    """`stages` ranks per pipeline, each holding `chunks` of its K·v stages as `placement` puts
    them; every op kind of `kinds` appears once per micro-batch and chunk."""
    trace = json.load(open(path))
    events = trace["traceEvents"]
    uncertainty = trace["otherData"]["clock_uncertainty_s"]
    assert len(uncertainty) == ranks, uncertainty
    tracks = defaultdict(dict)  # pid -> tid -> name
    processes = {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "thread_name":
            tracks[e["pid"]][e["tid"]] = e["args"]["name"]
        if e["ph"] == "M" and e["name"] == "process_name":
            processes[e["pid"]] = e["args"]["name"]
    assert sorted(tracks) == list(range(ranks)), tracks
    for pid, names in tracks.items():
        assert names == {0: "compute", 1: "communication"}, (pid, names)
    spans = [e for e in events if e["ph"] in ("X", "i")]
    for e in spans:
        assert e["args"]["step"] in steps, e
        assert e["tid"] == (0 if e["cat"] == "compute" else 1), e
    def stage_of(rank, chunk):  # plan::Placement::stage_of
        up = placement == "v" and chunk % 2 == 1
        return chunk * stages + (stages - 1 - rank if up else rank)
    def rank_chunk(stage):
        return next((r, c) for r in range(stages) for c in range(chunks) if stage_of(r, c) == stage)
    for pid in range(ranks):
        rank = pid % stages
        held = [stage_of(rank, c) for c in range(chunks)]
        expected = (f"rank {pid}: stages {', '.join(map(str, held))}; replica {pid // stages}"
                    if chunks > 1 else f"rank {pid}: stage {rank}, replica {pid // stages}")
        assert processes[pid] == expected, (processes[pid], expected)
    def find(pid, name, step):
        found = [e for e in spans if e["pid"] == pid and e["name"] == name
                 and e["args"]["step"] == step]
        assert len(found) == 1, (pid, name, step, found)
        return found[0]
    def op(pid, kind, m, chunk, step):
        """The event of op `kind` for micro-batch m of the rank's chunk, which names the chunk
        when the rank has several and carries its global stage."""
        e = find(pid, f"{kind}{m}.{chunk}" if chunks > 1 else f"{kind}{m}", step)
        assert e["args"]["chunk"] == chunk and e["args"]["stage"] == stage_of(pid % stages, chunk), e
        return e
    end = lambda e: e["ts"] + e.get("dur", 0)
    for pid in range(ranks):
        for step in steps:
            for chunk in range(chunks):
                for m in range(micro_batches):
                    found = {kind: op(pid, kind, m, chunk, step) for kind in kinds}
                    b, r = found["B"], found["R"]  # recompute: always, inside its backward
                    assert b["ts"] <= r["ts"] and end(r) <= end(b) + 1e-3, (b, r)
            for name in expect:
                find(pid, name, step)
    # A receive's wait ends after the send of the same message started on the neighbour stage's
    # rank (clocks aligned within the measured uncertainty of both ranks).
    pairs = 0
    for pid in range(ranks):
        replica_base = pid - pid % stages
        for chunk in range(chunks):
            stage = stage_of(pid % stages, chunk)
            for step in steps:
                for m in range(micro_batches):
                    for recv, send, peer in (("RA", "SA", stage - 1), ("RG", "SG", stage + 1)):
                        if not 0 <= peer < stages * chunks:
                            continue
                        peer_rank, peer_chunk = rank_chunk(peer)
                        wait = op(pid, recv, m, chunk, step)
                        sent = op(replica_base + peer_rank, send, m, peer_chunk, step)
                        done = find(replica_base + peer_rank,
                                    (f"{send}{m}.{peer_chunk}" if chunks > 1 else f"{send}{m}")
                                    + " done", step)
                        # The message's bytes, on both ends and at the send's completion.
                        assert wait["args"]["bytes"] == sent["args"]["bytes"] == done["args"]["bytes"] > 0, \
                            (wait, sent, done)
                        slack = 1e6 * (uncertainty[pid] + uncertainty[replica_base + peer_rank])
                        assert end(wait) >= sent["ts"] - slack, (wait, sent, slack)
                        pairs += 1
    assert pairs == ranks // stages * len(steps) * micro_batches * 2 * (stages * chunks - 1), pairs
    # Each rank's sends of a traced step add up to the bytes its link counted per step.
    sent_per_step = json.load(open(path.replace("trace.json", "summary.json")))["sent_bytes_per_step_per_rank"]
    for pid in range(ranks):
        for step in steps:
            sent = sum(e["args"]["bytes"] for e in spans if e["pid"] == pid and
                       e["args"]["step"] == step and e["name"][:2] in ("SA", "SG") and e["ph"] == "X")
            assert sent == sent_per_step[pid % stages], (pid, step, sent, sent_per_step)
    return spans

spans = check(sys.argv[1] + "/gpipe/trace.json", 2, 2, [2, 3], 4, ["optimizer", "loss allreduce"])
names_at_3 = {e["name"] for e in spans if e["args"]["step"] == 3}
assert {"checkpoint", "evaluation"} <= names_at_3, names_at_3
check(sys.argv[1] + "/replicas/trace.json", 4, 2, [2], 4, ["optimizer", "allreduce"])
check(sys.argv[1] + "/interleaved/trace.json", 2, 2, [2], 4, ["optimizer"], chunks=2)
check(sys.argv[1] + "/zbv/trace.json", 2, 2, [2], 4,
      ["optimizer", "WB1.0", "WB3.0", "WB1.1", "WB3.1"], chunks=2, placement="v",
      kinds=("F", "B", "R", "W"))
PY
echo "trace: one compute and one communication track per rank, every F/B/R of the traced steps" \
  "(named with their chunk under interleaved and zbv), receives end after their sends," \
  "checkpoint/evaluation/optimizer/allreduce present"
