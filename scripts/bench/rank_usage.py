#!/usr/bin/env python3
"""Runs a command and writes what the kernel counted for it: one JSON object in DIR/usage.RANK.json.

Context switches (voluntary: it waited; involuntary: it was preempted), page faults, CPU seconds,
and the CPUs it was allowed to run on (its binding, inherited from mpirun). RANK is
OMPI_COMM_WORLD_RANK's (0 without mpirun). The command's exit status is passed on.

    mpirun -n 8 python3 scripts/bench/rank_usage.py DIR build/release/apps/mpipe train ...
"""
import json
import os
import sys


def cpu_list(cpus) -> str:
    """'0-3,8' for {0, 1, 2, 3, 8}."""
    ranges, start, prev = [], None, None
    for cpu in sorted(cpus) + [None]:
        if start is not None and cpu != prev + 1:
            ranges.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = None
        if start is None:
            start = cpu
        prev = cpu
    return ",".join(ranges)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit("usage: rank_usage.py DIR COMMAND [ARG...]")
    out_dir, command = sys.argv[1], sys.argv[2:]
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
    cpus = cpu_list(os.sched_getaffinity(0))
    pid = os.fork()
    if pid == 0:
        os.execvp(command[0], command)
    _, status, usage = os.wait4(pid, 0)
    record = {"rank": int(rank), "cpus": cpus, "involuntary_switches": usage.ru_nivcsw,
              "voluntary_switches": usage.ru_nvcsw, "minor_faults": usage.ru_minflt,
              "major_faults": usage.ru_majflt, "user_s": usage.ru_utime, "system_s": usage.ru_stime}
    with open(os.path.join(out_dir, f"usage.{rank}.json"), "w") as f:
        json.dump(record, f)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
