#!/usr/bin/env python3
"""Replays a finished run into an empty directory as a starting server writes it, for
measuring `rankscope watch` (docs/watch.md): every log under SRC is appended to the same
path under DST, line by line, the files interleaved in the order of their lines' stamps,
BATCH lines at a time every PAUSE seconds.

    benches/watch_replay.py SRC DST [BATCH] [PAUSE]

Run `rankscope watch --stats --plain DST` beside it; `--stats` prints the CPU per load.
"""
import os
import re
import sys
import time

src, dst = sys.argv[1], sys.argv[2]
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 200
pause = float(sys.argv[4]) if len(sys.argv) > 4 else 0.05
stamp = re.compile(rb"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")

lines = []  # (stamp, file order, line order, relative path, bytes)
for root, _, files in os.walk(src):
    for name in sorted(files):
        if not name.endswith((".log", ".txt")):
            continue
        path = os.path.join(root, name)
        rel = os.path.relpath(path, src)
        last = b""
        with open(path, "rb") as f:
            for i, line in enumerate(f):
                m = stamp.search(line)
                if m:
                    last = m.group(0)
                lines.append((last, rel, i, line))
lines.sort(key=lambda x: (x[0], x[1], x[2]))
handles = {}
for n, (_, rel, _, line) in enumerate(lines):
    h = handles.get(rel)
    if h is None:
        os.makedirs(os.path.dirname(os.path.join(dst, rel)) or dst, exist_ok=True)
        h = handles[rel] = open(os.path.join(dst, rel), "ab")
    h.write(line)
    if (n + 1) % batch == 0:
        for h in handles.values():
            h.flush()
        time.sleep(pause)
for h in handles.values():
    h.close()
print(f"{len(lines)} lines in {len(handles)} files", file=sys.stderr)
