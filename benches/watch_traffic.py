#!/usr/bin/env python3
"""Does `rankscope watch` stay bounded while a run serves traffic for a day?

A two-node run (benches/gen_multinode.py, one file per rank) that never decides — one rank
of node001 stuck in weight loading, and no "fired up" line (SGLang prints one for the whole
server, which would make every rank ready and end the watch) — while node000's TP0, its
start-up done, logs a day of serving traffic: LINES decode-batch lines (default 172,800: one every 0.5 s of log time
for 24 h), appended BATCH at a time. The watch's resident memory (VmRSS, and its peak
VmHWM) and CPU time are read from /proc after each tenth of the traffic. Traffic lines are
not start-up events: the scan counts them and keeps none, so memory should not grow with
them.

    benches/watch_traffic.py [LINES] [BATCH]      # writes the table into docs/watch.md

The binary is target/release/rankscope (build it first) or $RANKSCOPE_BIN. Linux only
(/proc). Needs nothing but Python 3.
"""
import datetime
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
lines_total = int(sys.argv[1]) if len(sys.argv) > 1 else 172_800
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000
binary = os.environ.get("RANKSCOPE_BIN", os.path.join(ROOT, "target/release/rankscope"))
if not os.access(binary, os.X_OK):
    sys.exit(f"no binary at {binary}: cargo build --release first, or set RANKSCOPE_BIN")


def proc_status(pid):
    """(VmRSS, VmHWM) in KiB."""
    with open(f"/proc/{pid}/status") as f:
        text = f.read()
    get = lambda k: int(re.search(rf"^{k}:\s+(\d+) kB", text, re.M).group(1))
    return get("VmRSS"), get("VmHWM")


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


work = tempfile.mkdtemp(prefix="watch-traffic-")
try:
    run = os.path.join(work, "run")
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "benches/gen_multinode.py"), run, "2", "8", "rank"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # node001's TP7 stops after `Load weight begin`: never ready, never failed, and not
    # stalled either (the others print no start-up line after ready, so none "went on").
    stuck = os.path.join(run, "node001", "rank7.log")
    with open(stuck) as f:
        kept = []
        for line in f:
            kept.append(line)
            if "Load weight begin" in line:
                break
    with open(stuck, "w") as f:
        f.writelines(kept)
    for node in ("node000", "node001"):
        for name in os.listdir(os.path.join(run, node)):
            path = os.path.join(run, node, name)
            with open(path) as f:
                text = [l for l in f if "fired up and ready" not in l]
            with open(path, "w") as f:
                f.writelines(text)
    serving = os.path.join(run, "node000", "rank0.log")
    with open(serving) as f:
        last = re.findall(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", f.read())[-1]
    t = datetime.datetime.strptime(last, "%Y-%m-%d %H:%M:%S")

    out_path = os.path.join(work, "watch.out")
    out_file = open(out_path, "w")
    watch = subprocess.Popen(
        [binary, "watch", "--plain", run],
        stdout=out_file,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(3)  # the first load of the 16 files
    rows = []
    rss0, _ = proc_status(watch.pid)
    cpu0 = proc_cpu_s(watch.pid)
    rows.append((0, rss0, proc_status(watch.pid)[1], 0.0))
    written = 0
    step = max(lines_total // 10, batch)
    next_mark = step
    started = time.monotonic()
    with open(serving, "a") as f:
        while written < lines_total:
            n = min(batch, lines_total - written)
            chunk = []
            for _ in range(n):
                t += datetime.timedelta(milliseconds=500)
                chunk.append(
                    f"[{t:%Y-%m-%d %H:%M:%S} DP0 TP0] Decode batch. #running-req: 24, "
                    f"#token: 18432, token usage: 0.26, gen throughput (token/s): 1873.40, "
                    f"#queue-req: 0\n"
                )
            f.write("".join(chunk))
            f.flush()
            written += n
            time.sleep(0.02)
            if written >= next_mark or written == lines_total:
                time.sleep(1.5)  # the watch reads what was written
                rss, hwm = proc_status(watch.pid)
                rows.append((written, rss, hwm, proc_cpu_s(watch.pid) - cpu0))
                next_mark += step
    wall = time.monotonic() - started
    alive = watch.poll() is None
    # The server's ready line ends the watch by itself, with summary's count of what it
    # read: the proof that the traffic was read, not skipped.
    with open(serving, "a") as f:
        t += datetime.timedelta(seconds=1)
        f.write(f"[{t:%Y-%m-%d %H:%M:%S} DP0 TP0] The server is fired up and ready to roll!\n")
    try:
        code = watch.wait(timeout=60)
    except subprocess.TimeoutExpired:
        watch.send_signal(signal.SIGTERM)
        watch.wait()
        code = None
    out_file.close()
    with open(out_path) as f:
        final = f.read()
finally:
    shutil.rmtree(work, ignore_errors=True)

if not alive:
    sys.exit("the watch ended before the traffic did: the scenario is broken")
if code != 0:
    sys.exit(f"the ready line did not end the watch READY (exit {code}):\n{final[-2000:]}")
counted = re.search(r"([\d,]+) lines: .*?([\d,]+) other records", final)
if not counted or int(counted.group(2).replace(",", "")) < lines_total:
    sys.exit(f"the watch's summary does not count the {lines_total:,} traffic lines:\n{final[-2000:]}")
read_lines = int(counted.group(1).replace(",", ""))
table = [
    "| traffic lines read | VmRSS | VmHWM (peak) | watch CPU since the first load |",
    "|---:|---:|---:|---:|",
]
for written, rss, hwm, cpu in rows:
    table.append(f"| {written:,} | {rss / 1024:.1f} MiB | {hwm / 1024:.1f} MiB | {cpu:.2f} s |")
first, last_row = rows[1], rows[-1]
per_line_us = last_row[3] / max(last_row[0], 1) * 1e6
summary = (
    f"{lines_total:,} traffic lines ({lines_total / 7200:.1f} h of log time at 2 lines/s) in "
    f"{wall:.0f} s of wall time; VmRSS {first[1] / 1024:.1f} MiB after the first tenth, "
    f"{last_row[1] / 1024:.1f} MiB at the end; {per_line_us:.1f} µs of watch CPU per traffic line. "
    f"The ready line then ended the watch READY (exit 0); its summary counts {read_lines:,} lines "
    f"read, {counted.group(2)} of them other records (the traffic)."
)
text = "\n".join(table) + "\n\n" + summary + "\n"
print(text)

doc = os.path.join(ROOT, "docs/watch.md")
begin, end = "<!-- watch_traffic.py begin -->", "<!-- watch_traffic.py end -->"
with open(doc) as f:
    body = f.read()
if begin in body and end in body:
    head, rest = body.split(begin, 1)
    _, tail = rest.split(end, 1)
    stamp = f"`benches/watch_traffic.py {lines_total} {batch}`, {datetime.date.today()}, on {os.cpu_count()} cores:\n\n"
    with open(doc, "w") as f:
        f.write(head + begin + "\n" + stamp + text + end + tail)
    print(f"written into {doc}", file=sys.stderr)
