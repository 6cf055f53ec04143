#!/usr/bin/env python3
"""Prints one experiment's KEY from a daemon's status.json (nothing when the file or entry is missing).

Usage: status_field.py STATUS_JSON NAME KEY
"""
import json
import sys

try:
    status = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(0)
for experiment in status["experiments"]:
    if experiment["name"] == sys.argv[2]:
        print(experiment.get(sys.argv[3], ""))
