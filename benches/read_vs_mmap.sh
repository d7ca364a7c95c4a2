#!/usr/bin/env bash
# read() against mmap for bringing a log's bytes in, on this machine: CPU time of each
# mode of benches/read_vs_mmap.c and of `cat`, ROUNDS interleaved rounds (benches/cputime.py),
# the file read into the page cache before each run; prints medians (CPU-s, user, sys).
# Not a comparison with another tool: a measurement of the machine, quoted in
# docs/performance.md ("The fifth change of 2026-12-06"). Needs a C compiler (cc).
#
#   benches/read_vs_mmap.sh [ROUNDS] [FILE]   (default 5 bench-data/shared-1024m.log)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
file=${2:-bench-data/shared-1024m.log}
[ -f "$file" ] || { echo "read_vs_mmap.sh: no $file (python3 ../shared/bench/mklog.py $file 1024)" >&2; exit 1; }
bin=$(mktemp -d)/read_vs_mmap
trap 'rm -rf "$(dirname "$bin")"' EXIT
cc -O2 -o "$bin" benches/read_vs_mmap.c
out=$(dirname "$bin")/times.txt
: > "$out"
for _ in $(seq "$rounds"); do
  for mode in read read+16 mmap windows dontneed cat; do
    cat "$file" > /dev/null
    if [ "$mode" = cat ]; then python3 benches/cputime.py "$out" cat cat "$file"
    else python3 benches/cputime.py "$out" "$mode" "$bin" "$mode" "$file"; fi
  done
done
python3 - "$out" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, user, sys_, wall, rss = line.split()
    runs[name].append((float(user) + float(sys_), float(user), float(sys_)))
for name, v in runs.items():
    med = lambda k: statistics.median(x[k] for x in v)
    print(f"{name:9} CPU {med(0):.3f} s (user {med(1):.3f}, sys {med(2):.3f}), {len(v)} runs")
PY
