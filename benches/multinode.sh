#!/usr/bin/env bash
# A multi-node run at scale: 1,024 ranks on 128 nodes (benches/gen_multinode.py, in the
# fixtures' wording, node clocks off by up to ±3 s, one straggler), read, aligned and
# summarised by `rankscope summary --json`, side by side with a plain-Python version of
# the same grouping (benches/multinode_anchor.py), in one interleaved series. Checks the
# answer against the generator's truth and writes the figures into docs/performance.md
# (its "Multi-node" section). Needs python3 (benches/cputime.py reads each process's own resource usage;
# Python runs as the interpreter itself, not through a version manager's shim).
#
#   benches/multinode.sh [NODES] [RANKS_PER_NODE] [ROUNDS]     (default 128 8 7)
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${1:-128}
per_node=${2:-8}
rounds=${3:-7}
data=bench-data/multinode-${nodes}x${per_node}
cargo build --release --quiet --bin rankscope
[ -f "$data/truth.json" ] || python3 benches/gen_multinode.py "$data" "$nodes" "$per_node"
bin=target/release/rankscope
cat "$data"/*/* > /dev/null  # warm the page cache for both alike

py=$(python3 -c 'import sys; print(sys.executable)')
times=bench-data/multinode-times.txt
: > "$times"
load_before=$(cut -d' ' -f1 /proc/loadavg)
# user+sys CPU seconds and wall seconds, rankscope and the anchor alternating, so both
# see the same machine load.
for i in $(seq "$rounds"); do
  "$py" benches/cputime.py "$times" rankscope --stdout bench-data/multinode-summary.json \
    "$bin" summary --json "$data"
  "$py" benches/cputime.py "$times" python --stdout bench-data/multinode-anchor.txt \
    "$py" benches/multinode_anchor.py "$data"
done

load_after=$(cut -d' ' -f1 /proc/loadavg)

python3 - "$times" "$data" "$nodes" "$per_node" "$rounds" "$load_before" "$load_after" <<'PY'
import datetime, json, os, platform, re, statistics, sys
times, data, nodes, per_node, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
load_before, load_after = sys.argv[6], sys.argv[7]
rows = {"rankscope": [], "python": []}
for line in open(times):
    parts = line.split()
    if len(parts) == 5 and parts[0] in rows:
        u, s, e, m = float(parts[1]), float(parts[2]), float(parts[3]), int(parts[4])
        rows[parts[0]].append((u + s, e, m))
med = {k: (statistics.median(c for c, _, _ in v), statistics.median(e for _, e, _ in v),
           max(m for _, _, m in v)) for k, v in rows.items()}
ratio = med["rankscope"][0] / med["python"][0]

# The answer, checked against the generator's truth.
truth = json.load(open(os.path.join(data, "truth.json")))
doc = json.load(open("bench-data/multinode-summary.json"))["run"]
ranks = len(doc["ranks"])
inside = widths = 0
worst = 0.0
for n in doc["nodes"]:
    o = n["clock_offset"]
    if o is None:
        continue
    true = truth["offsets_s"][os.path.basename(n["name"])]
    inside += o["min_s"] < true < o["max_s"]
    widths = max(widths, o["max_s"] - o["min_s"])
    worst = max(worst, abs(o["offset_s"] - true))
aligned = sum(1 for n in doc["nodes"] if n["clock_offset"])
stragglers = [(p["phase"], s) for p in doc["phases"] for s in p["straggler_detail"]]
want = truth["straggler"]
found = [s for p, s in stragglers if p == want["phase"] and s["rank"] == want["rank"]]
ok = inside == aligned == nodes - 1 and len(stragglers) == 1 and len(found) == 1
verdict = "correct" if ok else "WRONG"

section = [
  "<!-- multinode: written by benches/multinode.sh; the lines up to the end marker are replaced -->",
  "## Multi-node: 1,024 ranks on 128 nodes",
  "",
  f"Measured {datetime.date.today()} by `benches/multinode.sh {nodes} {per_node} {rounds}` on this project's "
  f"machine ({os.cpu_count()} cores, {platform.machine()}), page cache warm, the two tools alternating "
  f"{rounds} times (one interleaved series; medians below). The machine is shared (load average "
  f"{load_before} before the series and {load_after} after, on {os.cpu_count()} cores), so wall times "
  "swing with what else runs; CPU time (user+sys) is the comparable figure.",
  "",
  f"Input (`benches/gen_multinode.py`): {nodes} node directories of {per_node} ranks each "
  f"({ranks} ranks), each with its server log and a console repeating it among NCCL INFO lines, "
  f"{sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(data) for f in fs) / 2**20:.1f} MiB in all; "
  "every node's clock off by a known amount up to ±3 s, one rank loading 6 s late.",
  "",
  "| tool | CPU (user+sys) | wall | peak RSS |",
  "|---|---|---|---|",
  f"| `rankscope summary --json` (discover, scan, per-node ranks, clock alignment, summary) | {med['rankscope'][0]:.2f} s | {med['rankscope'][1]:.2f} s | {med['rankscope'][2] / 1024:.1f} MiB |",
  f"| `benches/multinode_anchor.py` (the same grouping and interval arithmetic in plain Python, no JSON) | {med['python'][0]:.2f} s | {med['python'][1]:.2f} s | {med['python'][2] / 1024:.1f} MiB |",
  "",
  f"rankscope / Python CPU-time ratio: **{ratio:.2f}×** (rankscope also classifies every line, "
  "builds the full run model and writes the JSON). Wall time for the whole run: "
  f"**{med['rankscope'][1]:.2f} s** (target: ≤ 1 s on the 2-core machine).",
  "",
  f"Answer ({verdict}): {inside} of {aligned} node offsets hold the true offset "
  f"(widest interval {widths:.2f} s, largest error of the estimate {worst:.3f} s); "
  f"stragglers reported: {len(stragglers)}, "
  + (f"{want['rank']} in {want['phase']} by {found[0]['late_s']:.1f} s" if found else "not the planted one")
  + ".",
  "<!-- multinode: end -->",
]
path = "docs/performance.md"
text = open(path).read() if os.path.exists(path) else "# Performance\n"
text = re.sub(r"\n?<!-- multinode: written.*?<!-- multinode: end -->\n?", "\n", text, flags=re.S)
text = text.rstrip("\n") + "\n\n" + "\n".join(section) + "\n"
open(path, "w").write(text)
print("\n".join(section))
if not ok:
    sys.exit(1)
PY
