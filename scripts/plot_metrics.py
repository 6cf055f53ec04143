#!/usr/bin/python3
"""Plots training loss and eval loss/accuracy from <run_dir>/metrics.jsonl into <run_dir>/metrics.png.

Usage: /usr/bin/python3 scripts/plot_metrics.py RUN_DIR [-o OUT.png]
Needs matplotlib (Debian: apt-get install python3-matplotlib).
"""
import argparse
import json
import os
import sys


def read_metrics(path):
    """Returns (train, evals): train maps step -> record, evals maps split -> {step: record}.

    A resumed run appends records for steps it had already logged; the last one wins.
    """
    train, evals = {}, {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                step = int(record["step"])
            except (ValueError, KeyError, TypeError) as error:
                sys.exit(f"plot_metrics: {path}:{number}: not a metrics record ({error})")
            if "event" in record:  # mpipe supervise's recovery: no numbers to plot
                continue
            if "split" in record:
                evals.setdefault(record["split"], {})[step] = record
            else:
                train[step] = record
    return train, evals


def series(records, key):
    """Sorted (steps, values) of `key`, skipping records where it is missing or null."""
    points = sorted((s, r[key]) for s, r in records.items() if r.get(key) is not None)
    return [s for s, _ in points], [v for _, v in points]


def plot(train, evals, title, out_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (loss_axes, accuracy_axes) = plt.subplots(1, 2, figsize=(11, 4))
    loss_axes.plot(*series(train, "loss"), color="C0", label="train", linewidth=1)
    accuracies = 0
    for index, (split, records) in enumerate(sorted(evals.items()), start=1):
        color = f"C{index % 10}"  # the same color for a split in both panels
        loss_axes.plot(*series(records, "loss"), color=color, marker="o", label=f"{split} (eval)")
        steps, values = series(records, "accuracy")  # none for a regression loss (mse)
        if steps:
            accuracy_axes.plot(steps, values, color=color, marker="o", label=split)
            accuracies += 1
    loss_axes.set(xlabel="step", ylabel="loss", title="loss")
    accuracy_axes.set(xlabel="step", ylabel="accuracy", title="eval accuracy")
    loss_axes.legend()
    if accuracies:
        accuracy_axes.legend()
    else:
        missing = "no accuracy (a regression loss)" if evals else "no eval records"
        accuracy_axes.text(0.5, 0.5, missing, ha="center", va="center",
                           transform=accuracy_axes.transAxes)
    for axes in (loss_axes, accuracy_axes):
        axes.grid(alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(out_path, dpi=120)
    plt.close(figure)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="run directory holding metrics.jsonl")
    parser.add_argument("-o", "--out", help="output image (default: RUN_DIR/metrics.png)")
    args = parser.parse_args()

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("plot_metrics: matplotlib is missing; install it with "
                 "'apt-get install python3-matplotlib' and run this with /usr/bin/python3")

    metrics_path = os.path.join(args.run_dir, "metrics.jsonl")
    if not os.path.isfile(metrics_path):
        sys.exit(f"plot_metrics: {metrics_path}: no such file")
    train, evals = read_metrics(metrics_path)
    if not train and not evals:
        sys.exit(f"plot_metrics: {metrics_path}: no records")
    out_path = args.out or os.path.join(args.run_dir, "metrics.png")
    plot(train, evals, os.path.basename(os.path.normpath(args.run_dir)), out_path)
    print(f"plot_metrics: wrote {out_path}")


if __name__ == "__main__":
    main()
