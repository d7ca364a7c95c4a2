#!/usr/bin/env python3
"""The anchor for benches/multinode.sh: the same grouping rankscope does for a
multi-node run, in plain Python (standard library only). Reads every node directory's
server.log and stdout.txt, takes the SGLang start-up lines (a literal test, then a
regex), drops a console's repeat of its server log, groups events per node and rank,
intersects each node's barrier-exit intervals against the first node's, and finds the
ranks that end a phase late. Prints one line per node offset and per straggler.

    benches/multinode_anchor.py RUN_DIR
"""
import datetime
import os
import re
import statistics
import sys

PREFIX = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?: ([A-Z_0-9 ]+?))?\] (.*)")
KINDS = [
    ("Init torch distributed begin", "dist_init_begin"),
    ("Init torch distributed ends", "dist_init_end"),
    ("Load weight begin", "weight_load_begin"),
    ("Load weight end", "weight_load_end"),
    ("KV Cache is allocated", "kv_cache_alloc"),
    ("Memory pool end", "mem_pool_end"),
    ("Capture cuda graph begin", "cuda_graph_begin"),
    ("Capture cuda graph end", "cuda_graph_end"),
]
BARRIER = {"dist_init_end", "kv_cache_alloc", "cuda_graph_end"}
PHASE_END = {
    "dist_init_end": "dist_init",
    "weight_load_end": "weight_load",
    "mem_pool_end": "kv_cache",
    "cuda_graph_end": "cuda_graph",
}
PHASE_BEGIN = {
    "dist_init_begin": "dist_init",
    "weight_load_begin": "weight_load",
    "kv_cache_alloc": "kv_cache",
    "cuda_graph_begin": "cuda_graph",
}
SPREAD_MS = 50
EPOCH = datetime.datetime(1970, 1, 1)


def ms(stamp):
    t = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S")
    return int((t - EPOCH).total_seconds() * 1000)


def read_node(d):
    seen = {}
    events = []
    for name in sorted(os.listdir(d)):
        if not name.endswith((".log", ".txt")):
            continue
        here = {}
        with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
            for line in f:
                kind = next((k for lit, k in KINDS if lit in line), None)
                if kind is None:
                    continue
                m = PREFIX.match(line)
                if not m or not m.group(2):
                    continue
                key = (m.group(2), kind, m.group(1), m.group(3))
                here[key] = here.get(key, 0) + 1
                if here[key] <= seen.get(key, 0):
                    continue  # the same line in the node's other file
                seen[key] = seen.get(key, 0) + 1
                events.append((m.group(2), kind, ms(m.group(1))))
    return events


def windows(events):
    acc = {}
    for rank, kind, t in events:
        if kind in BARRIER:
            lo, hi = acc.get(kind, (t, t + 1000))
            acc[kind] = (max(lo, t), min(hi, t + 1000))
    return {k: (lo, hi) for k, (lo, hi) in acc.items() if lo - hi < SPREAD_MS}


def most_agreeing(iv):
    best = None
    for lo, _ in iv:
        members = [(l, h) for l, h in iv if l <= lo and h > lo]
        if members:
            cut = (max(m[0] for m in members), min(m[1] for m in members), len(members))
            if best is None or cut[2] > best[2] or (cut[2] == best[2] and cut[1] - cut[0] < best[1] - best[0]):
                best = cut
    return best


def main(run):
    dirs = sorted(e.path for e in os.scandir(run) if e.is_dir())
    per_node = [read_node(d) for d in dirs]
    ref = windows(per_node[0])
    shift = [0]
    for n, evs in enumerate(per_node[1:], 1):
        w = windows(evs)
        iv = [(a - ref[k][1] - SPREAD_MS, b - ref[k][0] + SPREAD_MS) for k, (a, b) in w.items() if k in ref]
        best = most_agreeing(iv)
        if best is None:
            shift.append(0)
            continue
        mid = (best[0] + best[1]) // 2
        shift.append(-mid)
        print(f"{os.path.basename(dirs[n])} {mid / 1000:+.3f} ({best[0] / 1000:+.3f}, {best[1] / 1000:+.3f})")
    ends, starts, half = {}, {}, {}
    for n, evs in enumerate(per_node):
        for rank, kind, t in evs:
            t += shift[n]
            if kind in PHASE_END:
                ends.setdefault(PHASE_END[kind], {})[rank] = t
            if kind in PHASE_BEGIN:
                starts.setdefault(PHASE_BEGIN[kind], {}).setdefault(rank, t)
    for phase, by_rank in ends.items():
        vals = sorted(by_rank.values())
        for rank, t in by_rank.items():
            others = list(vals)
            others.remove(t)
            late = t - statistics.median(others)
            if late > 1000 + 1100:  # a stamp step and two clocks' uncertainty
                print(f"straggler {rank} {phase} {late / 1000:.1f}")


main(sys.argv[1])
