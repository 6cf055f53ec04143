#!/usr/bin/python3
"""Draws the traced steps of a timeline (a run's RUN_DIR/trace.json, log.trace_steps, or the step
`mpipe plan --trace FILE` predicts) into a PNG (RUN_DIR/timeline.png, or FILE's name with .png).

One row per rank: its compute (F, B with the recompute inside it hatched over it, W and WB,
optimizer, checkpoint, evaluation; each micro-batch's box numbered, "3.1" for micro-batch 3 of
chunk 1 when ranks hold several chunks: interleaved, zbv) and under it, thinner, the time it
waited on a receive or an allreduce. White space in a compute row is the bubble: time that rank
did not compute. With --compare OTHER (a run directory or a trace file, e.g. a plan's), OTHER's
ranks are drawn below in the same figure, each trace's time from its own first event on one axis,
each row's name led by its trace's.

Usage: /usr/bin/python3 scripts/plot_timeline.py RUN_DIR|TRACE.json [--compare RUN_DIR|TRACE.json]
           [-o OUT.png] [--step N] [--title TEXT]
Needs matplotlib (Debian: apt-get install python3-matplotlib).
"""
import argparse
import json
import os
import sys

# Colour of each compute event, by its name without the micro-batch.
COMPUTE_COLOURS = {
    "F": "#4c72b0",
    "B": "#55a868",
    "W": "#8172b2",
    "WB": "#8172b2",  # a group's product (weight_grads: grouped), drawn as the weight gradients
    "optimizer": "#8c8c8c",
    "checkpoint": "#c44e52",
    "evaluation": "#ccb974",
}
RECOMPUTE_COLOUR = "#dd8452"
WAIT_COLOUR = "#e377c2"
WAITS = ("RA", "RG", "allreduce", "loss allreduce")


def op_name(name):
    """The name without its chunk: 'F3.1' -> 'F3', 'W.1' -> 'W', 'SA2.1 done' -> 'SA2 done'."""
    head, dot, chunk = name.partition(".")
    if not dot:
        return name
    return head + chunk[len(chunk.split(" ")[0]):]


def kind_of(name):
    """'F3' -> 'F', 'F3.1' -> 'F', 'SA2 done' -> 'SA', 'optimizer' -> 'optimizer'."""
    name = op_name(name)
    head = name.split(" ")[0] if name.endswith(" done") else name
    stripped = head.rstrip("0123456789")
    return stripped or head


def box_label(event):
    """What a compute box shows: its micro-batch, with its chunk after a dot when the event's name
    carries one ('3.1' for F3.1); None for an event of no one micro-batch."""
    args = event.get("args", {})
    micro_batch = args.get("micro_batch")
    if micro_batch is None or micro_batch < 0:
        return None
    return f"{micro_batch}.{args['chunk']}" if op_name(event["name"]) != event["name"] \
        else str(micro_batch)


def weight_gradient_label(spans):
    """The legend of W: one micro-batch's weight gradient (W3, zero-bubble schedules), the step's
    batched ones (W, pipeline.weight_grads: batched), or groups' (WB3: the product of the group
    ending at micro-batch 3, pipeline.weight_grads: grouped)."""
    if any(e["cat"] == "compute" and kind_of(e["name"]) == "WB" for e in spans):
        return "weight gradients (grouped)"
    names = {op_name(e["name"]) for e in spans
             if e["cat"] == "compute" and kind_of(e["name"]) == "W"}
    per_micro_batch, batched = any(name != "W" for name in names), "W" in names
    if per_micro_batch != batched:
        return "weight gradients (per micro-batch)" if per_micro_batch else "batched weight gradients"
    return "weight gradients"


def read_trace(path):
    """Returns (ranks, spans): ranks maps pid -> its process name; spans are the X events."""
    try:
        with open(path, encoding="utf-8") as file:
            trace = json.load(file)
        events = trace["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"plot_timeline: {path}: not a trace ({error})")
    ranks = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    if not spans:
        sys.exit(f"plot_timeline: {path}: no events")
    return ranks, spans


def plot(groups, out_path, title):
    """Draws `groups`, a list of (name, ranks, spans) drawn one below the other (name None: the
    rows keep their ranks' names alone), each from its own first event."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    rows = []  # (label, the rank's spans, its trace's origin), top to bottom
    width_ms = 0.0
    for name, ranks, spans in groups:
        origin = min(e["ts"] for e in spans)
        width_ms = max(width_ms, (max(e["ts"] + e["dur"] for e in spans) - origin) / 1e3)
        for pid in sorted(ranks):
            label = ranks[pid] if name is None else f"{name}: {ranks[pid]}"
            rows.append((label, [e for e in spans if e["pid"] == pid], origin))
    figure, axes = plt.subplots(figsize=(12, 0.9 * len(rows) + 1.6))
    for row, (_, rank_spans, origin) in enumerate(rows):
        y = len(rows) - 1 - row  # the first row on top
        for e in rank_spans:
            kind = kind_of(e["name"])
            start, length = (e["ts"] - origin) / 1e3, e["dur"] / 1e3
            if e["cat"] == "compute":
                if kind == "R":  # over the B that holds it, whichever comes first in the file
                    axes.broken_barh([(start, length)], (y - 0.05, 0.5), facecolors="none",
                                     edgecolors=RECOMPUTE_COLOUR, hatch="////", linewidth=0,
                                     zorder=3)
                    continue
                axes.broken_barh([(start, length)], (y - 0.05, 0.5),
                                 facecolors=COMPUTE_COLOURS.get(kind, "#999999"),
                                 edgecolors="white", linewidth=0.5)
                label = box_label(e)
                if label is not None and length > width_ms / 150:
                    axes.text(start + length / 2, y + 0.2, label, ha="center",
                              va="center", fontsize=7, color="white")
            elif kind in WAITS:
                axes.broken_barh([(start, length)], (y - 0.3, 0.18), facecolors=WAIT_COLOUR)
    drawn = 0
    for _, ranks, _ in groups[:-1]:  # a line between one trace's ranks and the next's
        drawn += len(ranks)
        axes.axhline(len(rows) - drawn - 0.5, color="#444444", linewidth=0.8)
    all_spans = [e for _, _, spans in groups for e in spans]
    axes.set_yticks(range(len(rows)))
    axes.set_yticklabels([label for label, _, _ in reversed(rows)])
    axes.set_xlim(0, width_ms)
    axes.set_xlabel("time (ms)")
    axes.set_title(title)
    axes.legend(handles=[Patch(color=COMPUTE_COLOURS["F"], label="forward"),
                         Patch(color=COMPUTE_COLOURS["B"], label="backward"),
                         Patch(facecolor="none", edgecolor=RECOMPUTE_COLOUR, hatch="////",
                               label="recompute (inside B)"),
                         Patch(color=COMPUTE_COLOURS["W"], label=weight_gradient_label(all_spans)),
                         Patch(color=COMPUTE_COLOURS["optimizer"], label="optimizer"),
                         Patch(color=WAIT_COLOUR, label="waiting (receive, allreduce)")],
                loc="upper center", bbox_to_anchor=(0.5, -0.14 - 0.2 / len(rows)), ncol=6,
                fontsize=8, frameon=False)
    figure.tight_layout()
    figure.savefig(out_path, dpi=110)


def trace_path_of(source):
    """The trace file of a run directory (its trace.json) or the file itself."""
    if os.path.isdir(source):
        path = os.path.join(source, "trace.json")
        if not os.path.isfile(path):
            sys.exit(f"plot_timeline: {path}: no such file (set log.trace_steps)")
        return path
    if not os.path.isfile(source):
        sys.exit(f"plot_timeline: {source}: no such run directory or trace file")
    return source


def trace_name(source):
    """What a trace's rows are led by: its run directory's or its file's name."""
    base = os.path.basename(os.path.normpath(source))
    return base[:-len(".json")] if base.endswith(".json") else base


def traced_steps(spans):
    return sorted({e["args"]["step"] for e in spans})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", metavar="RUN_DIR|TRACE.json",
                        help="a run directory (its trace.json) or a trace file")
    parser.add_argument("--compare", metavar="RUN_DIR|TRACE.json",
                        help="another trace, drawn below on the same time axis (its step N "
                             "with --step N when it has that step, else all of it)")
    parser.add_argument("-o", "--output",
                        help="PNG to write (default RUN_DIR/timeline.png, or TRACE.png)")
    parser.add_argument("--step", type=int, help="draw this traced step only (default: all)")
    parser.add_argument("--title", help="the plot's title (default: the steps and the trace)")
    args = parser.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("plot_timeline: matplotlib is missing; install it with "
                 "'apt-get install python3-matplotlib' and run this with /usr/bin/python3")

    trace_path = trace_path_of(args.trace)
    ranks, spans = read_trace(trace_path)
    steps = traced_steps(spans)
    if args.step is not None:
        if args.step not in steps:
            sys.exit(f"plot_timeline: step {args.step} is not traced in {trace_path} "
                     f"(traced: {', '.join(map(str, steps))})")
        spans = [e for e in spans if e["args"]["step"] == args.step]
        steps = [args.step]
    title = args.title or (f"{args.trace}: step{'s' if len(steps) > 1 else ''} "
                           f"{', '.join(map(str, steps))}")
    groups = [(None, ranks, spans)]
    if args.compare:
        other_ranks, other_spans = read_trace(trace_path_of(args.compare))
        if args.step in traced_steps(other_spans):
            other_spans = [e for e in other_spans if e["args"]["step"] == args.step]
        groups = [(trace_name(args.trace), ranks, spans),
                  (trace_name(args.compare), other_ranks, other_spans)]
        if not args.title:
            title += f" above {args.compare}"
    if args.output:
        out_path = args.output
    elif os.path.isdir(args.trace):
        out_path = os.path.join(args.trace, "timeline.png")
    else:
        out_path = os.path.splitext(trace_path)[0] + ".png"
    plot(groups, out_path, title)
    print(out_path)


if __name__ == "__main__":
    main()
