# Sourced by the bench scripts: best, the fastest of a run's repeats.
# shellcheck shell=bash

# best: reads samples/s values (separated by spaces or newlines) and prints the largest. The
# fastest of the repeats counts: on a shared machine other jobs only ever slow a run down.
best() { tr ' ' '\n' | sed '/^$/d' | sort -g | tail -n 1; }
