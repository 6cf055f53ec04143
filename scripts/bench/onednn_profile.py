#!/usr/bin/env python3
"""Where a training step's time goes: oneDNN's per-primitive times against the step time.

Reads two ONEDNN_VERBOSE=1 logs of the same run at SHORT and LONG steps and takes their
difference, so start-up, primitive creation, the final evaluation and the checkpoint cancel and
what is left is (LONG - SHORT) steps of training. Primitives are grouped into GEMMs by shape
(rows x k -> n, as oneDNN writes them: MxK:KxN:MxN), reorders (bf16 conversions and layout
copies) and the other kinds (eltwise, softmax, layer norm, ...). The step time comes from a run
without the verbose log (its printing would slow the code outside oneDNN); what oneDNN does not
account for is mpipe's own code (element-wise loops, copies, dropout masks, the optimizer,
allocation) and the framework around it.

    python3 scripts/bench/onednn_profile.py TITLE STEP_MS SHORT_STEPS LONG_STEPS SHORT_LOG LONG_LOG \
        [SHORT_LOG LONG_LOG ...]

With several pairs (repeats), the one with the least oneDNN time per step counts (on a shared
machine other jobs only ever slow a run down). Prints one table (markdown): each group's ms per
step, calls per step and share of the step, under TITLE (the run it profiles); the 8 largest
groups are named.
"""
import collections
import sys


def group_of(fields: list[str]) -> str:
    kind, problem = fields[3], fields[-2]
    if kind == "matmul":
        parts = problem.split(":")
        a, b = parts[0].split("x"), parts[1].split("x")
        batch = "x".join(a[:-2])
        shape = f"{a[-2]} x {a[-1]} -> {b[-1]}"
        return f"GEMM {batch + ' x (' + shape + ')' if batch else shape}"
    if kind == "reorder":
        return "reorder (bf16 conversion, layout copy)"
    return kind.replace("_v2", "")


def totals(path: str) -> tuple[dict[str, float], dict[str, int]]:
    ms: dict[str, float] = collections.defaultdict(float)
    calls: dict[str, int] = collections.defaultdict(int)
    with open(path, errors="replace") as f:
        for line in f:
            if not line.startswith("onednn_verbose,exec,"):
                continue
            fields = line.rstrip("\n").split(",")
            group = group_of(fields)
            ms[group] += float(fields[-1])
            calls[group] += 1
    return ms, calls


def per_step(short_log: str, long_log: str, steps: int) -> tuple[dict[str, float], dict[str, float]]:
    """Each group's ms and calls per step: the long run's totals less the short run's."""
    short_ms, short_calls = totals(short_log)
    long_ms, long_calls = totals(long_log)
    if not long_ms:
        sys.exit(f"onednn_profile.py: {long_log} has no onednn_verbose,exec lines "
                 "(run with ONEDNN_VERBOSE=1)")
    ms = {g: (long_ms[g] - short_ms.get(g, 0.0)) / steps for g in long_ms}
    calls = {g: (long_calls[g] - short_calls.get(g, 0)) / steps for g in long_calls}
    return ms, calls


def main() -> None:
    logs = sys.argv[5:]
    if len(sys.argv) < 7 or len(logs) % 2:
        sys.exit("usage: onednn_profile.py TITLE STEP_MS SHORT_STEPS LONG_STEPS SHORT_LOG LONG_LOG "
                 "[SHORT_LOG LONG_LOG ...]")
    title = sys.argv[1]
    step_ms = float(sys.argv[2])
    steps = int(sys.argv[4]) - int(sys.argv[3])
    if steps <= 0:
        sys.exit("onednn_profile.py: LONG_STEPS must exceed SHORT_STEPS")
    top = 8
    pairs = [per_step(logs[i], logs[i + 1], steps) for i in range(0, len(logs), 2)]
    per_step_ms, calls = min(pairs, key=lambda pair: sum(pair[0].values()))
    ranked = sorted((g for g in per_step_ms if calls[g] > 0), key=lambda g: -per_step_ms[g])
    gemm_ms = sum(per_step_ms[g] for g in per_step_ms if g.startswith("GEMM"))
    onednn_ms = sum(per_step_ms.values())
    rows = [(g, per_step_ms[g], f"{calls[g]:.0f}") for g in ranked[:top]]
    rest = ranked[top:]
    if rest:
        rows.append((f"{len(rest)} other oneDNN groups", sum(per_step_ms[g] for g in rest),
                     f"{sum(calls[g] for g in rest):.0f}"))
    rows.append(("**all GEMMs**", gemm_ms, ""))
    rows.append(("**all oneDNN**", onednn_ms, ""))
    rows.append(("**outside oneDNN** (step - oneDNN)", step_ms - onednn_ms, ""))
    rows.append(("**step**", step_ms, ""))
    print(f"| {title}: where | ms per step | calls per step | share of the step |")
    print("|---|---|---|---|")
    for name, ms, n in rows:
        print(f"| {name} | {ms:.2f} | {n} | {100.0 * ms / step_ms:.1f}% |")


if __name__ == "__main__":
    main()
