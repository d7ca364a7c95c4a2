#!/usr/bin/env bash
# Scan throughput and memory on a large generated SGLang log, side by side with what users
# run instead (ripgrep and grep -E over the same event literals), in one run. Writes
# docs/performance.md. Needs hyperfine and rg (apt-get install hyperfine ripgrep).
#
#   benches/scan_vs_grep.sh [SIZE_MIB]     (default 1024)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1024}
data=bench-data/large-${size}m.log
cargo build --release --quiet --bin rankscope --example gen_log
[ -f "$data" ] || target/release/examples/gen_log "$data" "$size"
bytes=$(stat -c %s "$data")
bin=target/release/rankscope

# The same literals the built-in grammars scan for, read from grammars/*.toml.
mapfile -t literals < <(python3 - <<'PY'
import glob, tomllib
seen = []
for f in sorted(glob.glob("grammars/*.toml")):
    for e in tomllib.load(open(f, "rb")).get("event", []):
        for l in e["literals"]:
            if l not in seen:
                seen.append(l)
print("\n".join(seen))
PY
)
rg_args=(); for l in "${literals[@]}"; do rg_args+=(-F -e "$l"); done
printf '%s\n' "${literals[@]}" > bench-data/literals.txt
# The same, escaped as extended regexes, one per line (a file: some literals hold quotes).
sed 's/[][\.*^$()+?{}|]/\\&/g' bench-data/literals.txt > bench-data/literals.ere

cat "$data" > /dev/null  # warm the page cache for every tool alike
json=bench-data/hyperfine.json
# --output=pipe: GNU grep stops at the first match when its output is /dev/null.
hyperfine --warmup 1 --runs 5 --output=pipe --export-json "$json" \
  -n rankscope "$bin events $data --json" \
  -n "rg -F (same literals)" "rg -c ${rg_args[*]@Q} $data" \
  -n "grep -F -f (same literals)" "grep -c -F -f bench-data/literals.txt $data" \
  -n "grep -E (same literals)" "grep -c -E -f bench-data/literals.ere $data"

rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
rs_rss=$(rss $bin events "$data" --json)
rg_rss=$(rss rg -c "${rg_args[@]}" "$data")

python3 - "$json" "$bytes" "$rs_rss" "$rg_rss" "$size" <<'PY'
import json, sys, datetime, platform, os
res, nbytes, rs_rss, rg_rss, size = json.load(open(sys.argv[1]))["results"], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
by = {r["command"]: r for r in res}
rs = by["rankscope"]["median"]
lines = [
  "# Performance",
  "",
  f"Measured {datetime.date.today()} by `benches/scan_vs_grep.sh {size}` on this project's machine "
  f"({os.cpu_count()} cores, {platform.machine()}), page cache warm for every tool.",
  "",
  f"Input: a generated SGLang log of {nbytes/2**30:.2f} GiB ({nbytes:,} bytes; `examples/gen_log.rs`): a TP8 "
  "start-up and a late OOM traceback among millions of decode, prefill and HTTP lines.",
  f"Every tool looks for the same {len(open('bench-data/literals.txt').read().split(chr(10))) - 1} literals: the event literals of the built-in grammars "
  "(`grammars/*.toml`). ripgrep and grep count the lines that hold one, with no parsing at all; rankscope also "
  "classifies every line (record, noise, continuation or not understood), parses the events and writes the full JSON.",
  "",
  "| tool | median time | throughput | time vs rankscope |",
  "|---|---|---|---|",
]
for r in res:
    m = r["median"]
    lines.append(f"| {r['command']} | {m:.3f} s | {nbytes/m/2**30:.2f} GiB/s | {m/rs:.2f}× |")
rg = by["rg -F (same literals)"]["median"]
lines += [
  "",
  f"rankscope / ripgrep time ratio: **{rs/rg:.2f}×** (target: within 3×).",
  "",
  f"Peak RSS (`/usr/bin/time -f %M`): rankscope **{rs_rss/1024:.1f} MiB**, ripgrep {rg_rss/1024:.1f} MiB "
  "(target for rankscope: under 100 MB whatever the file size; the scan holds about "
  "2 × threads blocks of 4 MiB, not the file). ripgrep maps the file, so its RSS counts the file's pages.",
  "",
  "Why rankscope can beat ripgrep on the same literals: with this many patterns a single Aho-Corasick "
  "automaton loses its SIMD (Teddy) prefilter, which works up to a few dozen patterns; rankscope splits the "
  "literals into groups of 32 (`grammar::LITERALS_PER_GROUP`) and runs one SIMD-prefiltered pass per group, "
  "which on this input is faster than one unfiltered pass. Every other line costs a newline search and an "
  "anchored look at its first bytes.",
]
# Other benchmarks' sections (benches/multinode.sh) are kept.
import re
try:
    kept = re.findall(r"<!-- multinode: written.*?<!-- multinode: end -->", open("docs/performance.md").read(), flags=re.S)
except FileNotFoundError:
    kept = []
open("docs/performance.md", "w").write("\n".join(lines) + "\n" + "".join("\n" + k + "\n" for k in kept))
print("\n".join(lines))
PY
