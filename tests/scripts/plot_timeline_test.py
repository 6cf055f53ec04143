#!/usr/bin/python3
"""scripts/plot_timeline.py: the recompute hatching shows over the backward that holds it, the
W legend names what the trace's W events are (batched, one micro-batch's under zb_h1, or
groups'), the events of a rank's chunks (interleaved, zbv: "F3.1") are drawn as their op,
labelled with their chunk; a trace file is drawn beside itself, and --compare draws a second
trace's ranks below the first's."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "plot_timeline.py")
spec = importlib.util.spec_from_file_location("plot_timeline", SCRIPT)
plot_timeline = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot_timeline)


def span(name, start_us, length_us, micro_batch=-1, chunk=None):
    event = {"ph": "X", "pid": 0, "tid": 0, "cat": "compute", "name": name, "ts": start_us,
             "dur": length_us, "args": {"step": 5, "micro_batch": micro_batch}}
    if chunk is not None:
        event["args"]["chunk"] = chunk
    return event


def recompute_pixels(trace_events):
    """How many pixels of the recompute colour the drawn timeline of `trace_events` holds."""
    import matplotlib.image

    with tempfile.TemporaryDirectory() as run_dir:
        events = [{"ph": "M", "pid": 0, "name": "process_name", "args": {"name": "rank 0"}}]
        with open(os.path.join(run_dir, "trace.json"), "w", encoding="utf-8") as file:
            json.dump({"traceEvents": events + trace_events}, file)
        subprocess.run([sys.executable, SCRIPT, run_dir], check=True, capture_output=True)
        image = matplotlib.image.imread(os.path.join(run_dir, "timeline.png"))
    r, g, b = (int(plot_timeline.RECOMPUTE_COLOUR[i:i + 2], 16) / 255 for i in (1, 3, 5))
    close = ((abs(image[:, :, 0] - r) < 0.08) & (abs(image[:, :, 1] - g) < 0.08)
             & (abs(image[:, :, 2] - b) < 0.08))
    return int(close.sum())


def write_trace(path, trace_events):
    events = [{"ph": "M", "pid": 0, "name": "process_name", "args": {"name": "rank 0"}}]
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"traceEvents": events + trace_events}, file)


def drawn_height(*arguments):
    """Runs the script with `arguments`; the height in pixels of the PNG it names."""
    import matplotlib.image

    done = subprocess.run([sys.executable, SCRIPT, *arguments], check=True, capture_output=True,
                          text=True)
    return matplotlib.image.imread(done.stdout.strip()).shape[0]


def compare_draws_both_traces():
    """A trace file (a plan's) is drawn to FILE.png; a run's above it in one figure, one row more."""
    with tempfile.TemporaryDirectory() as work:
        run_dir = os.path.join(work, "run")
        os.mkdir(run_dir)
        write_trace(os.path.join(run_dir, "trace.json"),
                    [span("F0", 0, 1000, 0), span("B0", 1000, 2000, 0)])
        plan = os.path.join(work, "plan.json")
        write_trace(plan, [span("F0", 0, 900, 0), span("B0", 900, 1800, 0)])
        one = drawn_height(plan)
        assert os.path.isfile(os.path.join(work, "plan.png"))
        both = drawn_height(run_dir, "--compare", plan, "--step", "5", "-o",
                            os.path.join(work, "both.png"))
        assert both > one, f"--compare drew {both} pixels high, one trace {one}"


def main():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is missing: skipped")
        sys.exit(77)
    # The trace lists a recompute before the backward that holds it (it ends first); the legend's
    # hatched patch has the colour too, so a trace without recompute is the baseline.
    backward = [span("F0", 0, 1000, 0), span("B0", 1000, 4000, 0)]
    baseline = recompute_pixels(backward)
    hatched = recompute_pixels([span("F0", 0, 1000, 0), span("R0", 1000, 2000, 0),
                                span("B0", 1000, 4000, 0)])
    assert hatched > baseline + 100, f"recompute hidden under the backward: {hatched} vs {baseline}"

    label = plot_timeline.weight_gradient_label
    assert label([span("W", 0, 10)]) == "batched weight gradients"
    assert label([span("W0", 0, 10, 0), span("W1", 10, 10, 1)]) == \
        "weight gradients (per micro-batch)"
    assert label([span("F0", 0, 10, 0)]) == "weight gradients"
    # Chunks (interleaved, zbv): the same ops, named with their chunk.
    assert label([span("W.0", 0, 10, chunk=0), span("W.1", 10, 10, chunk=1)]) == \
        "batched weight gradients"
    assert label([span("W0.1", 0, 10, 0, 1)]) == "weight gradients (per micro-batch)"
    # Grouped: each W copies, the group's WB multiplies.
    assert label([span("W0", 0, 10, 0), span("W1", 10, 10, 1), span("WB1", 20, 10, 1)]) == \
        "weight gradients (grouped)"
    kinds = [plot_timeline.kind_of(name)
             for name in ("F3.1", "B0.0", "R2.1", "SA2.1 done", "W.1", "WB3.1")]
    assert kinds == ["F", "B", "R", "SA", "W", "WB"], kinds
    box = plot_timeline.box_label
    assert [box(span("F3.1", 0, 10, 3, 1)), box(span("F3", 0, 10, 3, 0)), box(span("W.1", 0, 10))] \
        == ["3.1", "3", None]
    compare_draws_both_traces()
    print("plot_timeline: recompute hatched over B, W labelled by what it is, chunks labelled, "
          "a trace file drawn, --compare below")


if __name__ == "__main__":
    main()
