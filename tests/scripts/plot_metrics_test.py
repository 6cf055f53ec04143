#!/usr/bin/python3
"""scripts/plot_metrics.py: a resumed run's later records win, and a recovery record of mpipe
supervise (at the step resumed from, no numbers) neither replaces that step's train record nor
stops the plot."""
import importlib.util
import json
import os
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "plot_metrics.py")
spec = importlib.util.spec_from_file_location("plot_metrics", SCRIPT)
plot_metrics = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot_metrics)

records = [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}, {"step": 2, "split": "val",
                                                                 "loss": 1.7, "accuracy": 0.5},
           {"step": 3, "loss": 1.9},  # redone after the recovery
           {"step": 2, "event": "recovery", "lost_hosts": ["h2"], "steps_redone": 1},
           {"step": 3, "loss": 1.25}]
with tempfile.TemporaryDirectory() as run_dir:
    path = os.path.join(run_dir, "metrics.jsonl")
    with open(path, "w", encoding="utf-8") as file:
        file.write("".join(json.dumps(record) + "\n" for record in records))
    train, evals = plot_metrics.read_metrics(path)
assert plot_metrics.series(train, "loss") == ([1, 2, 3], [2.0, 1.5, 1.25]), train
assert list(evals) == ["val"] and evals["val"][2]["loss"] == 1.7, evals
print("plot_metrics: the recovery record skipped, the redone step's last record kept")
