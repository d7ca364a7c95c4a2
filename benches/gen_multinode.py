#!/usr/bin/env python3
"""Synthesizes a multi-node SGLang start-up in the wording of the two-GPU fixtures
(samples/node2-skew): NODES nodes of RANKS_PER_NODE ranks (`DP<node> TP<k>`), one
directory per node with its server log and a console of NCCL INFO lines, each node's
clock off by a known offset, and one straggler rank that starts loading 6 s late.

    benches/gen_multinode.py OUT_DIR [NODES] [RANKS_PER_NODE] [LAYOUT]

LAYOUT `node` (the default) writes each node's server.log and stdout.txt; `rank` writes
one file per rank instead (node<n>/rank<k>.log: the server_args line, the rank's start-up
lines, its NCCL INFO lines and 160 decode-batch lines of traffic, about 27 KB), the shape
of a launcher that tees every rank's output to its own file.

Writes OUT_DIR/truth.json: every node's true offset (node clock minus node000's, in
seconds) and the straggler, for the benchmark to check rankscope's answer against.
"""
import datetime
import json
import os
import random
import sys

out = sys.argv[1]
nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 128
per_node = int(sys.argv[3]) if len(sys.argv) > 3 else 8
layout = sys.argv[4] if len(sys.argv) > 4 else "node"
if layout not in ("node", "rank"):
    sys.exit(f"LAYOUT is node or rank, not {layout!r}")
rng = random.Random(12)
base = datetime.datetime(2026, 11, 30, 9, 20, 37)
# Node clocks: node000 is the reference; the others are off by up to ±3 s.
offsets = [0.0] + [round(rng.uniform(-3.0, 3.0), 3) for _ in range(nodes - 1)]
straggler = (nodes * 3 // 5, 3)  # (node, local rank): loads 6 s late

# True times (seconds after base), shared by every rank where a collective releases them.
dist_exit = 6.0
load_s = 30.0
kv_exit = dist_exit + load_s + 6.0 + 1.5  # after the straggler's late load and a barrier
graph_exit = kv_exit + 9.0


def stamp(node, t, spread):
    """A one-second stamp, truncated, of true time t on node's clock."""
    local = base + datetime.timedelta(seconds=t + offsets[node] + spread)
    return local.strftime("%Y-%m-%d %H:%M:%S")


def spread():
    # Ranks leave a collective within a few milliseconds of one another.
    return rng.uniform(0.0, 0.02)


for n in range(nodes):
    d = os.path.join(out, f"node{n:03d}")
    os.makedirs(d, exist_ok=True)
    log, console = [], []
    per_rank = {}
    log.append(
        f"[{stamp(n, 0.0, 0)}] server_args=ServerArgs(model_path='/models/synthetic-61L', "
        f"tp_size={per_node}, dp_size={nodes}, pp_size=1, nnodes={nodes}, node_rank={n}, "
        f"mem_fraction_static=0.88, dist_init_addr='10.0.0.1:29624')"
    )
    for k in range(per_node):
        tag = f"DP{n} TP{k}"
        begin = 4.0 + rng.uniform(0.0, 1.5)
        late = 6.0 if (n, k) == straggler else 0.0
        load_begin = dist_exit + 0.05 + late + rng.uniform(0.0, 0.2)
        load_end = load_begin + load_s + rng.uniform(0.0, 0.4)
        lines = [
            (begin, "Init torch distributed begin."),
            (dist_exit + spread(),
             f"Init torch distributed ends. elapsed={dist_exit - begin:.2f} s, mem usage=1.44 GB"),
            (load_begin, "Load weight begin. avail mem=13.98 GB"),
            (load_end,
             f"Load weight end. elapsed={load_end - load_begin:.2f} s, type=Qwen3MoeForCausalLM, "
             "dtype=torch.bfloat16, avail mem=6.95 GB, mem usage=7.03 GB."),
            (kv_exit + spread(),
             "KV Cache is allocated. #tokens: 70058, K size: 3.21 GB, V size: 3.21 GB"),
            (kv_exit + 0.03, "Memory pool end. avail mem=0.55 GB"),
            (kv_exit + 0.04,
             "Capture cuda graph begin. This can take up to several minutes. avail mem=0.55 GB"),
            (graph_exit + spread(),
             "Capture cuda graph end. Time elapsed: 9.01 s. mem usage=0.55 GB. avail mem=0.00 GB."),
        ]
        own = [(t, f"[{stamp(n, t, 0)} {tag}] {msg}") for t, msg in lines]
        log.extend(own)
        pid = 1000 + k
        nccl = [
            (begin + 0.5 + i * 0.01,
             f"gpu-node{n:03d}:{pid}:{pid} [{k}] NCCL INFO Channel {i % 24:02d}/24 : {k} {(k + 1) % per_node}")
            for i in range(60)
        ]
        console.extend(nccl)
        if layout == "rank":
            # Traffic after the start-up, as a serving rank prints it.
            traffic = [
                (graph_exit + 1.0 + i * 0.25,
                 f"[{stamp(n, graph_exit + 1.0 + i * 0.25, 0)} {tag}] Decode batch. "
                 f"#running-req: {8 + i % 7}, #token: {4096 + 37 * i}, token usage: 0.{10 + i % 80:02d}, "
                 f"cuda graph: True, gen throughput (token/s): {900 + i % 300}.{i % 100:02d}, #queue-req: {i % 3}")
                for i in range(160)
            ]
            per_rank[k] = sorted(own + nccl + traffic, key=lambda x: x[0])
    if n == 0:
        log.append((graph_exit + 0.5,
                    f"[{stamp(0, graph_exit + 0.5, 0)} DP0 TP0] The server is fired up and ready to roll!"))
    head, rest = log[0], sorted(log[1:], key=lambda x: x[0])
    if layout == "rank":
        for k, lines in per_rank.items():
            if n == 0 and k == 0:
                lines = sorted(lines + [log[-1]], key=lambda x: x[0])  # DP0 TP0 prints ready
            with open(os.path.join(d, f"rank{k}.log"), "w") as f:
                f.write(head + "\n" + "".join(line + "\n" for _, line in lines))
        continue
    with open(os.path.join(d, "server.log"), "w") as f:
        f.write(head + "\n" + "".join(line + "\n" for _, line in rest))
    merged = sorted(rest + console, key=lambda x: x[0])
    with open(os.path.join(d, "stdout.txt"), "w") as f:
        f.write("".join(line + "\n" for _, line in merged))

with open(os.path.join(out, "truth.json"), "w") as f:
    json.dump(
        {
            "nodes": nodes,
            "ranks_per_node": per_node,
            "offsets_s": {f"node{n:03d}": offsets[n] for n in range(nodes)},
            "straggler": {"rank": f"DP{straggler[0]} TP{straggler[1]}", "phase": "weight_load"},
        },
        f,
        indent=1,
    )
