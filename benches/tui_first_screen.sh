#!/usr/bin/env bash
# The TUI's time to first screen at 1,024 ranks (issue #15: ≤ 0.3 CPU-s): `rankscope tui
# RUN --first-frame 120x40` does what `rankscope tui` does before its first screen (read
# the run and its snapshots on the loading worker, build the views, draw one frame) and
# prints the frame instead of opening a terminal. It alternates with `summary --json` on
# the same input, the load every command pays, so the TUI's own share reads as the
# difference. Writes the figures into docs/performance.md (its "TUI first screen" section).
# Needs python3 (benches/cputime.py reads each process's own resource usage).
#
#   benches/tui_first_screen.sh [NODES] [RANKS_PER_NODE] [ROUNDS]     (default 128 8 9)
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${1:-128}
per_node=${2:-8}
rounds=${3:-9}
# The same input as benches/ratios.sh's 1,024-rank case: one log file per rank (33 MB at
# 128 × 8), not the smaller one-file-per-node layout.
data=bench-data/ranks-$((nodes * per_node))
cargo build --release --quiet --bin rankscope
[ -f "$data/truth.json" ] || python3 benches/gen_multinode.py "$data" "$nodes" "$per_node" rank
bin=target/release/rankscope
cat "$data"/*/* > /dev/null  # warm the page cache for both alike

py=$(python3 -c 'import sys; print(sys.executable)')
times=bench-data/tui-first-screen-times.txt
: > "$times"
load_before=$(cut -d' ' -f1 /proc/loadavg)
for i in $(seq "$rounds"); do
  "$py" benches/cputime.py "$times" tui --stdout bench-data/tui-first-screen.txt \
    "$bin" tui --first-frame 120x40 "$data"
  "$py" benches/cputime.py "$times" summary "$bin" summary --json "$data"
done
load_after=$(cut -d' ' -f1 /proc/loadavg)

# The frame must be the run's: every rank row is not on a 40-row screen, but the first
# rank's is, and the header counts all ranks as ready.
grep -q '^DP0 TP0' bench-data/tui-first-screen.txt || { echo "no DP0 TP0 row in the frame" >&2; exit 1; }
grep -q 'READY' bench-data/tui-first-screen.txt || { echo "no READY in the frame's header" >&2; exit 1; }

python3 - "$times" "$data" "$nodes" "$per_node" "$rounds" "$load_before" "$load_after" <<'PY'
import datetime, os, platform, re, statistics, sys
times, data, nodes, per_node, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
load_before, load_after = sys.argv[6], sys.argv[7]
rows = {"tui": [], "summary": []}
for line in open(times):
    parts = line.split()
    if len(parts) == 5 and parts[0] in rows:
        u, s, e, m = float(parts[1]), float(parts[2]), float(parts[3]), int(parts[4])
        rows[parts[0]].append((u + s, e, m))
def stats(v):
    cpu = [c for c, _, _ in v]
    return min(cpu), statistics.median(cpu), statistics.median(e for _, e, _ in v), max(m for _, _, m in v)
tui, summ = stats(rows["tui"]), stats(rows["summary"])
size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(data) for f in fs) / 2**20
section = [
  "<!-- tui-first-screen: written by benches/tui_first_screen.sh; the lines up to the end marker are replaced -->",
  "## TUI: time to first screen at 1,024 ranks",
  "",
  f"Measured {datetime.date.today()} by `benches/tui_first_screen.sh {nodes} {per_node} {rounds}` on this "
  f"project's machine ({os.cpu_count()} cores, {platform.machine()}), release build, page cache warm, the two "
  f"commands alternating {rounds} times (one interleaved series). Load average {load_before} before and "
  f"{load_after} after: the machine was shared, so CPU time (user+sys) is the comparable figure.",
  "",
  f"Input: `benches/gen_multinode.py` ({nodes * per_node} ranks on {nodes} nodes, {size:.1f} MiB). "
  "`rankscope tui RUN --first-frame 120x40` (a hidden option) does the TUI's work up to its first screen "
  "— the loading worker's read of the run, the views' state, one frame drawn — and prints the frame.",
  "",
  "| command | CPU min | CPU median | wall median | peak RSS |",
  "|---|---|---|---|---|",
  f"| `tui --first-frame 120x40` | {tui[0]:.2f} s | {tui[1]:.2f} s | {tui[2]:.2f} s | {tui[3] / 1024:.1f} MiB |",
  f"| `summary --json` (the same load, for reference) | {summ[0]:.2f} s | {summ[1]:.2f} s | {summ[2]:.2f} s | {summ[3] / 1024:.1f} MiB |",
  "",
  f"The TUI's own share (median first screen − median summary): **{tui[1] - summ[1]:+.2f} CPU-s**; "
  f"target for the whole first screen: ≤ 0.3 CPU-s.",
  "<!-- tui-first-screen: end -->",
]
path = "docs/performance.md"
text = open(path).read() if os.path.exists(path) else "# Performance\n"
text = re.sub(r"\n?<!-- tui-first-screen: written.*?<!-- tui-first-screen: end -->\n?", "\n", text, flags=re.S)
text = text.rstrip("\n") + "\n\n" + "\n".join(section) + "\n"
open(path, "w").write(text)
print("\n".join(section))
PY
