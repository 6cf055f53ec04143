#!/usr/bin/python3
"""Plots for docs/benchmarks.md from the printed tables of the bench scripts (report.sh).

  plot_report.py pytorch OUTPUT_OF_compare_pytorch.sh PNG   # samples/s, mpipe vs PyTorch
  plot_report.py scaling OUTPUT_OF_scaling.sh PNG           # samples/s vs M, against the ideal
  plot_report.py pipeline OUTPUT_OF_project.sh PNG          # the reference model by K: mpipe,
                                                            # PyTorch's pipeline, the projection
  plot_report.py schedules OUTPUT_OF_reference_schedules.sh PNG  # each schedule's step and
                                                            # bubble by M: measured (median and
                                                            # range of the rounds), predicted
"""
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def table_rows(text, pattern, types, source):
    """The rows of a printed table: each line matching `pattern` (stripped), its groups converted
    by `types`; exits naming `source` if there are none."""
    rows = [tuple(t(g) for t, g in zip(types, m.groups()))
            for m in (re.match(pattern, line.strip()) for line in text.splitlines()) if m]
    if not rows:
        sys.exit(f"plot_report.py: no table rows in the {source}")
    return rows


def pytorch_rows(text):
    """(model, threads, mpipe samples/s, pytorch samples/s) from compare_pytorch.sh's table."""
    return table_rows(text, r"^(\w+)\s+(\d+)\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+([\d.]+)\s+[\d.]+x$",
                      (str, int, float, float), "compare_pytorch.sh output")


def scaling_rows(text):
    """(K, M, samples/s, ideal speedup) from scaling.sh's table."""
    return table_rows(text, r"^(\d+)\s+(\d+)\s+([\d.]+)\s+[\d.]+x\s+[\d.]+x\s+([\d.]+)x",
                      (int, int, float, float), "scaling.sh output")


def pipeline_rows(text):
    """(K, projected, mpipe, PyTorch) samples/s from project.sh's measured reference table."""
    return table_rows(text.split("reference measured", 1)[-1],
                      r"^(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+x\s+[+-][\d.]+%\s+(\d+)\s+[\d.]+x",
                      (int, float, float, float), "measured reference table of the project.sh output")


def schedule_rows(text):
    """(schedule, M, step ms, bubble %, predicted step ms, predicted bubble %) per K > 1 run of
    reference_schedules.sh's rounds (its per-round lines, which carry the plan's prediction)."""
    return table_rows(text, r"^k\d+-m(\d+)-([\w]+)\S*\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+"
                      r"([\d.]+)%.*\(predicted ([\d.]+) ms, bubble ([\d.]+)%\)$",
                      (int, str, float, float, float, float), "reference_schedules.sh output")


def plot_schedules(rows, png):
    schedules = list(dict.fromkeys(r[1] for r in rows))
    micro = sorted({r[0] for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.8 / len(schedules)
    for i, schedule in enumerate(schedules):
        x = [j + (i - (len(schedules) - 1) / 2) * width for j in range(len(micro))]
        for ax, measured, predicted in ((axes[0], 2, 4), (axes[1], 3, 5)):
            runs = [[r for r in rows if r[1] == schedule and r[0] == m] for m in micro]
            middle = [statistics.median(r[measured] for r in run) for run in runs]
            low = [mid - min(r[measured] for r in run) for mid, run in zip(middle, runs)]
            high = [max(r[measured] for r in run) - mid for mid, run in zip(middle, runs)]
            ax.bar(x, middle, width, yerr=[low, high], capsize=2, label=f"{schedule} measured")
            ax.plot(x, [statistics.median(r[predicted] for r in run) for run in runs], "k_",
                    markersize=12, markeredgewidth=2,
                    label="predicted (mpipe plan)" if i == 0 else None)
    for ax, what in ((axes[0], "step (ms)"), (axes[1], "bubble (% of the step)")):
        ax.set_xticks(range(len(micro)), [f"M={m}" for m in micro])
        ax.set_ylabel(what)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def plot_pipeline(rows, png):
    ks = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(ks, [r[2] for r in rows], marker="o", label="mpipe")
    ax.plot(ks, [r[3] for r in rows], marker="s", label="PyTorch pipelining (gloo)")
    ax.plot(ks, [r[1] for r in rows], linestyle="--", label="mpipe, projected")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("stages K (2 cores each)")
    ax.set_ylabel("samples/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def plot_pytorch(rows, png):
    labels = [f"{model}\n{threads} thread{'s' if threads > 1 else ''}" for model, threads, _, _ in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.bar([i - 0.2 for i in x], [1.0] * len(rows), 0.4, label="PyTorch")
    ax.bar([i + 0.2 for i in x], [r[2] / r[3] for r in rows], 0.4, label="mpipe")
    ax.axhline(1.15, color="gray", linestyle="--", linewidth=1, label="target 1.15x")
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("samples/s relative to PyTorch")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def plot_scaling(rows, png):
    base = {m: s for k, m, s, _ in rows if k == min(r[0] for r in rows)}
    one = base[min(base)]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for k in sorted({r[0] for r in rows}):
        mine = [(m, s) for kk, m, s, _ in rows if kk == k]
        ax.plot([m for m, _ in mine], [s / one for _, s in mine], marker="o", label=f"K={k} measured")
        if k > 1:
            ideal = [(m, base[m] / one * i) for kk, m, _, i in rows if kk == k]
            ax.plot([m for m, _ in ideal], [v for _, v in ideal], linestyle="--", label=f"K={k} ideal (bubble bound)")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("micro-batches M (batch 256)")
    ax.set_ylabel("samples/s relative to K=1, M=1")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    plots = {"pytorch": (pytorch_rows, plot_pytorch), "scaling": (scaling_rows, plot_scaling),
             "pipeline": (pipeline_rows, plot_pipeline),
             "schedules": (schedule_rows, plot_schedules)}
    if len(sys.argv) != 4 or sys.argv[1] not in plots:
        sys.exit(__doc__)
    kind, source, png = sys.argv[1:]
    rows, plot = plots[kind]
    plot(rows(open(source, encoding="utf-8").read()), png)


if __name__ == "__main__":
    main()
