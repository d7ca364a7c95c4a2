#!/usr/bin/env bash
# Times `rankscope mem SNAPSHOT` (read, model, summary, text; release build) against
# CPython's `pickle.load` alone on the same file, interleaved, N runs each, in CPU time
# (user + system of the process, from its own resource usage via benches/cputime.py:
# the machine is shared, so wall time swings) and peak
# RSS, and writes min, median and the ratio of medians to docs/performance-snapshot.md.
# Usage: benches/snapshot_vs_python.sh [SNAPSHOT] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
F=${1:-../shared/fixtures/gpu/decode_heavy/snapshot.pickle}
N=${2:-7}
if [ ! -f "$F" ]; then echo "SKIPPED: $F is absent"; exit 0; fi
cargo build --release --quiet --bin rankscope
BIN=target/release/rankscope
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
printf 'import pickle, sys\nwith open(sys.argv[1], "rb") as f:\n    pickle.load(f)\n' >"$TMP/load.py"
cat "$F" >/dev/null # page cache warm for both alike
py=$(python3 -c 'import sys; print(sys.executable)')  # the interpreter, not a shim
run() { # name cmd... -> appends "cpu_seconds rss_kb" to $TMP/name
  local name=$1; shift
  rm -f "$TMP/$name.t"
  "$py" benches/cputime.py "$TMP/$name.t" "$name" "$@"
  awk '{printf "%.4f %d\n", $2 + $3, $5}' "$TMP/$name.t" >>"$TMP/$name"
}
for _ in $(seq "$N"); do
  run rust "$BIN" mem "$F"
  run py "$py" "$TMP/load.py" "$F"
done
summ() { # name -> "min_s median_s max_rss_kb"
  sort -n "$TMP/$1" | awk '{c[NR]=$1; if ($2>r) r=$2} END {printf "%.3f %.3f %d\n", c[1], c[int((NR+1)/2)], r}'
}
read -r RMIN RMED RRSS < <(summ rust)
read -r PMIN PMED PRSS < <(summ py)
SIZE=$(wc -c <"$F" | tr -d " ")
RATIO_MED=$(awk -v p="$PMED" -v r="$RMED" 'BEGIN {printf "%.1f", p / r}')
RATIO_MIN=$(awk -v p="$PMIN" -v r="$RMIN" 'BEGIN {printf "%.1f", p / r}')
RSS_X=$(awk -v m="$RRSS" -v s="$SIZE" 'BEGIN {printf "%.2f", m * 1024 / s}')
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
# The hand-written "Reading these numbers" section (and the ratios section after it) is
# kept across runs.
HAND=$(sed -n '/^## Reading these numbers/,$p' docs/performance-snapshot.md 2>/dev/null || true)
cat > docs/performance-snapshot.md <<MD
# Snapshot reading: performance

Measured by \`benches/snapshot_vs_python.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores,
load average $LOAD at the end; the machine was shared, so CPU time is the fair figure).
File: \`$F\` ($SIZE bytes).
$N interleaved runs of each; CPU time is user + system of the whole process, start-up
included.

| | CPU min (s) | CPU median (s) | peak RSS |
| --- | --- | --- | --- |
| \`rankscope mem FILE\` (read, model, summary, text) | $RMIN | $RMED | $((RRSS / 1024)) MiB ($RSS_X x file size) |
| \`python3 -c 'pickle.load(...)'\` (read only) | $PMIN | $PMED | $((PRSS / 1024)) MiB |

Ratio (Python / Rust): **${RATIO_MED}x** on medians, ${RATIO_MIN}x on minima.
Targets: at least 6x faster than \`pickle.load\` alone; peak RSS at most 1.5x the file size.

Why the RSS stays low: the file is streamed through a 256 KiB buffer instead of being
mapped or read whole; memoised values are indices (4 bytes per reference); ints that fit
31 bits live inside the reference, wider ones in an 8-byte side table; identical item
batches (call stacks, dict key lists) share one range; equal strings are stored once;
trace entries are decoded straight into the model as they are read; the typed model
interns frames and stacks.
MD
if [ -n "$HAND" ]; then printf '\n%s\n' "$HAND" >>docs/performance-snapshot.md; fi
cat docs/performance-snapshot.md
