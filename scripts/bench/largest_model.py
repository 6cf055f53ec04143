# The largest-model table (issue 8): for one per-rank memory limit, the most Transformer blocks
# that `mpipe plan` says fit for K = 1 without recompute, K = 1 with recompute (the planner's
# choice, recompute: auto) and K = 2, 4, 8 with it; each trained for 2 steps, with the predicted
# peak per stage next to the measured peak RSS. Run by largest_model.sh (see there).
import csv
import json
import os
import shlex
import subprocess
import sys
import time

BIN = os.environ.get("MPIPE_BIN", "build/release/apps/mpipe")
CONFIG = os.environ.get("CONFIG", "configs/largest_model.yaml")
LIMIT = os.environ.get("LIMIT", "128MiB")
MAX_BLOCKS = int(os.environ.get("MAX_BLOCKS", "1024"))
CORES = os.cpu_count() or 1

# (label, K, extra settings): K = 1 runs GPipe (every micro-batch in flight: the whole
# mini-batch's activations, as one device without a pipeline holds them), K > 1 the config's 1F1B.
SETTINGS = [
    ("K=1 no recompute", 1, ["pipeline.schedule=gpipe", "pipeline.recompute=never"]),
    ("K=1 recompute", 1, ["pipeline.schedule=gpipe", "pipeline.recompute=auto"]),
    ("K=2 recompute", 2, ["pipeline.recompute=auto"]),
    ("K=4 recompute", 4, ["pipeline.recompute=auto"]),
    ("K=8 recompute", 8, ["pipeline.recompute=auto"]),
]


def show(cmd):
    print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)


def config_with(blocks, work):
    """The config with `blocks` Transformer blocks (its one `repeat:`), written under work."""
    text = open(CONFIG).read()
    assert text.count("repeat: ") == 1, f"{CONFIG}: expected one 'repeat:'"
    head, tail = text.split("repeat: ", 1)
    rest = tail.split("\n", 1)[1]
    path = os.path.join(work, f"blocks_{blocks}.yaml")
    with open(path, "w") as f:
        f.write(f"{head}repeat: {blocks}\n{rest}")
    return path


def sets(extra):
    return [a for s in extra for a in ("--set", s)]


def plan(blocks, k, extra, work, verbose=False):
    cmd = [BIN, "plan", config_with(blocks, work), "--stages", str(k), "--memory-limit", LIMIT,
           "--json"] + sets(extra)
    if verbose:
        show(cmd)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode not in (0, 5):  # 5: the plan does not fit (printed all the same)
        raise subprocess.CalledProcessError(done.returncode, cmd, done.stdout, done.stderr)
    return json.loads(done.stdout)


def largest_fitting(k, extra, work):
    """Binary search on the block count (fitting is monotone in it), from one block per stage."""
    if not plan(k, k, extra, work)["fits"]:
        return 0
    lo, hi = k, 2 * k
    while hi <= MAX_BLOCKS and plan(hi, k, extra, work)["fits"]:
        lo, hi = hi, hi * 2
    hi = min(hi, MAX_BLOCKS + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if plan(mid, k, extra, work)["fits"]:
            lo = mid
        else:
            hi = mid
    return lo


def train(blocks, k, extra, work, name):
    run_dir = os.path.join(work, name)
    mpirun = ["mpirun", "-n", str(k), "-x", "MALLOC_MMAP_THRESHOLD_", "-x", "OMP_NUM_THREADS"]
    mpirun += ["--oversubscribe", "--bind-to", "none"] if k > CORES else ["--bind-to", "core"]
    cmd = mpirun + [BIN, "train", config_with(blocks, work), "--run-dir", run_dir,
                    "--set", f"pipeline.stages={k}", "--set", f"pipeline.memory_limit={LIMIT}"]
    cmd += sets(extra)
    show(cmd)
    start = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    summary = json.load(open(os.path.join(run_dir, "summary.json")))
    return summary, time.time() - start


def tracked_key(summary):
    """The allocator's high-water mark of tensor bytes per rank, where the build writes one."""
    return "peak_tensor_bytes_per_rank" if "peak_tensor_bytes_per_rank" in summary else None


def main():
    out_dir = sys.argv[1]
    work = sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    for label, k, extra in SETTINGS:
        blocks = largest_fitting(k, extra, work)
        print(f"{label}: at most {blocks} blocks fit {LIMIT} per rank", flush=True)
        p = plan(blocks, k, extra, work, verbose=True)
        # The runtime's own resident memory per rank (MPI, oneDNN, code, data): a run with one
        # block per stage, its measured peak RSS less the model's prediction.
        calib, _ = train(k, k, extra, work, f"calibrate-k{k}-{len(rows)}")
        base = [m - q for m, q in zip(calib["peak_rss_bytes_per_rank"],
                                      calib["predicted_peak_bytes_per_rank"])]
        summary, wall = train(blocks, k, extra, work, f"run-k{k}-{len(rows)}")
        tracked = tracked_key(summary)
        for s, stage in enumerate(p["stage_plans"]):
            predicted = summary["predicted_peak_bytes_per_rank"][s]
            rss = summary["peak_rss_bytes_per_rank"][s]
            rows.append({
                "setting": label, "stages": k, "blocks": blocks, "recompute": p["recompute"],
                "schedule": p["schedule"], "stage": s,
                "layers": f"{stage['first_layer']}-{stage['last_layer']}",
                "predicted_peak_MiB": predicted / 2**20,
                "runtime_base_MiB": base[s] / 2**20,
                "predicted_rss_MiB": (predicted + base[s]) / 2**20,
                "measured_rss_MiB": rss / 2**20,
                "rss_error_pct": 100.0 * ((predicted + base[s]) / rss - 1.0),
                "measured_tracked_MiB": summary[tracked][s] / 2**20 if tracked else "",
                "tracked_error_pct": 100.0 * (predicted / summary[tracked][s] - 1.0)
                if tracked else "",
                "train_wall_s": wall,
            })
    write_outputs(rows, out_dir)


def write_outputs(rows, out_dir):
    with open(os.path.join(out_dir, "largest_model.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        for r in rows:
            w.writerow({k: f"{v:.2f}" if isinstance(v, float) else v for k, v in r.items()})
    base_blocks = rows[0]["blocks"]
    settings = []
    for r in rows:
        if not settings or settings[-1][0]["setting"] != r["setting"]:
            settings.append([])
        settings[-1].append(r)
    lines = [
        f"Per-rank limit {LIMIT} on the predicted peak (`pipeline.memory_limit`); measured = peak "
        "RSS per rank, predicted RSS = predicted peak + the runtime's base (peak RSS less the "
        "prediction of a run with one block per stage).", "",
        "| setting | recompute | blocks | x K=1 no recompute | largest predicted peak | "
        "largest predicted RSS | largest measured RSS | worst RSS error | train 2 steps |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for group in settings:
        r0 = group[0]
        worst = max(group, key=lambda r: abs(r["rss_error_pct"]))
        lines.append(
            f"| {r0['setting']} | {r0['recompute']} | {r0['blocks']} | "
            f"{r0['blocks'] / base_blocks:.1f}x | "
            f"{max(r['predicted_peak_MiB'] for r in group):.1f} MiB | "
            f"{max(r['predicted_rss_MiB'] for r in group):.1f} MiB | "
            f"{max(r['measured_rss_MiB'] for r in group):.1f} MiB | "
            f"{worst['rss_error_pct']:+.1f}% | {r0['train_wall_s']:.0f} s |")
    lines += ["", "Per stage (MiB):", "",
              "| setting | stage | layers | predicted peak | base | predicted RSS | measured RSS "
              "| error | tracked | error |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        tracked = (f"{r['measured_tracked_MiB']:.1f} | {r['tracked_error_pct']:+.1f}%"
                   if r["measured_tracked_MiB"] != "" else "- | -")
        lines.append(
            f"| {r['setting']} | {r['stage']} | {r['layers']} | {r['predicted_peak_MiB']:.1f} | "
            f"{r['runtime_base_MiB']:.1f} | {r['predicted_rss_MiB']:.1f} | "
            f"{r['measured_rss_MiB']:.1f} | {r['rss_error_pct']:+.1f}% | {tracked} |")
    table = "\n".join(lines) + "\n"
    open(os.path.join(out_dir, "largest_model.md"), "w").write(table)
    print(table)
    plot(settings, out_dir)


def plot(settings, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    labels = [g[0]["setting"] for g in settings]
    left.bar(range(len(settings)), [g[0]["blocks"] for g in settings], color="tab:blue")
    for i, g in enumerate(settings):
        left.text(i, g[0]["blocks"], str(g[0]["blocks"]), ha="center", va="bottom")
    left.set_xticks(range(len(settings)), labels, rotation=20, ha="right")
    left.set_ylabel("Transformer blocks that fit")
    left.set_title(f"Largest model under {LIMIT} per rank")
    x, predicted, measured = [], [], []
    for i, g in enumerate(settings):
        for j, r in enumerate(g):
            x.append(i + (j - (len(g) - 1) / 2) * 0.08)
            predicted.append(r["predicted_rss_MiB"])
            measured.append(r["measured_rss_MiB"])
    right.scatter(x, predicted, marker="o", label="predicted RSS", color="tab:orange")
    right.scatter(x, measured, marker="x", label="measured peak RSS", color="tab:green")
    right.set_xticks(range(len(settings)), labels, rotation=20, ha="right")
    right.set_ylabel("MiB per rank (one point per stage)")
    right.set_title("Predicted vs measured peak per stage")
    right.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "largest_model.png"), dpi=110)


if __name__ == "__main__":
    main()
