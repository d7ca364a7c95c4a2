#!/usr/bin/env python3
"""Runs one command and appends `NAME USER SYS WALL MAXRSS_KIB` to a file.

    benches/cputime.py OUT NAME [--stdout FILE] COMMAND [ARGS...]

The figures are the child's own resource usage (`os.wait4`), in microseconds where GNU
time prints hundredths: `rankscope mem` takes well under 0.1 s, so a 10 ms step was a
tenth of the figure. The child is started with `posix_spawn` (no Python runs in it),
its stdout goes to /dev/null (or FILE), and its exit status is ignored, as the series did with
GNU time. Peak RSS is never below this script's own (~13 MiB): `posix_spawn` shares the
parent's memory until the child execs, and the kernel keeps that memory's high-water mark
as the child's, so `cat` and `rg` over small files read 13 MiB; a larger peak is the
command's own."""
import os
import sys
import time


def main() -> None:
    out, name, *cmd = sys.argv[1:]
    stdout = os.devnull
    if cmd[:1] == ["--stdout"]:
        stdout, cmd = cmd[1], cmd[2:]
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    actions = [(os.POSIX_SPAWN_OPEN, 1, stdout, flags, 0o644)]
    start = time.perf_counter()
    pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=actions)
    _, _, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    with open(out, "a") as f:
        f.write(f"{name} {usage.ru_utime:.6f} {usage.ru_stime:.6f} {wall:.6f} {usage.ru_maxrss}\n")


if __name__ == "__main__":
    main()
