#!/usr/bin/env bash
# CPU-time ratios against what users would run instead, in ONE interleaved series: every
# round runs every command once, in turn, so all of them see the same machine load.
# Figures are CPU time (user+sys) and peak RSS of each finished process, from its own
# resource usage in microseconds (benches/cputime.py);
# the docs quote min and median and the ratio of medians. Writes the "ratios" sections of
# docs/performance.md and docs/performance-snapshot.md (between their markers; the
# multinode section that benches/multinode.sh writes is kept).
#
#   benches/ratios.sh [ROUNDS]          (default 5)
#
# Inputs, generated once into $BENCH_DATA (default bench-data/, git-ignored):
#   - a 1 GiB SGLang-style log from examples/gen_log.rs (7 M traffic lines, one start-up);
#   - 1,024 and 8,192 ranks, one file per rank (benches/gen_multinode.py … rank);
#   - the 23 MB PyTorch snapshot fixture (../shared/fixtures/gpu/decode_heavy), if present.
# Needs python3 and rg (apt-get install ripgrep). Python runs as the interpreter itself
# (sys.executable), not through a version manager's shim: pyenv's `python3` is a shell
# script that added 0.06 CPU-s to every Python anchor.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
data=${BENCH_DATA:-bench-data}
mkdir -p "$data"
cargo build --release --quiet --bin rankscope --example gen_log
bin=target/release/rankscope
log=$data/large-1024m.log
[ -f "$log" ] || target/release/examples/gen_log "$log" 1024
for spec in "128 8" "1024 8"; do
  set -- $spec
  dir=$data/ranks-$(($1 * $2))
  [ -f "$dir/truth.json" ] || python3 benches/gen_multinode.py "$dir" "$1" "$2" rank
done
snap=${SNAPSHOT:-../shared/fixtures/gpu/decode_heavy/snapshot.pickle}

# rankscope's own event literals (grammars/*.toml), for ripgrep as a fixed-string set.
python3 - "$data/literals.txt" <<'PY'
import glob, sys, tomllib
seen = []
for f in sorted(glob.glob("grammars/*.toml")):
    for e in tomllib.load(open(f, "rb")).get("event", []):
        for l in e["literals"]:
            if l not in seen:
                seen.append(l)
open(sys.argv[1], "w").write("\n".join(seen) + "\n")
PY
# The reference's 8 event markers as fixed strings: the fastest honest anchor (the
# literal part of each of benches/reference_patterns.txt).
sed -e 's/\\\././g' -e 's/ *[^ ]*(.*$//' -e 's/\.\*.*$//' -e 's/ *$//' \
  benches/reference_patterns.txt > "$data/reference_literals.txt"

cat "$log" "$data"/ranks-*/*/* > /dev/null  # page cache warm for every tool alike
[ -f "$snap" ] && cat "$snap" > /dev/null

py=$(python3 -c 'import sys; print(sys.executable)')
names=(); cmds=()
add() { names+=("$1"); cmds+=("$2"); }
add "scan.rankscope" "$bin events $log --json"
add "scan.rg_reference_regexes" "rg -c -f benches/reference_patterns.txt $log"
add "scan.rg_reference_literals" "rg -c -F -f $data/reference_literals.txt $log"
add "scan.rg_rankscope_literals" "rg -c -F -f $data/literals.txt $log"
for n in 1024 8192; do
  add "r$n.summary" "$bin summary $data/ranks-$n"
  add "r$n.diff" "$bin diff $data/ranks-$n $data/ranks-$n"
  add "r$n.python" "$py benches/multinode_anchor.py $data/ranks-$n"
done
# The TUI's first screen at 1,024 ranks (load, analyse, draw one frame, exit), in the same
# series as everything else.
add "r1024.tui" "$bin tui --first-frame 120x40 $data/ranks-1024"
if [ -f "$snap" ]; then
  add "snap.mem" "$bin mem $snap"
  printf 'import pickle, sys\nwith open(sys.argv[1], "rb") as f:\n    pickle.load(f)\n' > "$data/pickle_load.py"
  add "snap.pickle_load" "$py $data/pickle_load.py $snap"
fi

times=$data/ratios-times.txt
: > "$times"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$rounds"); do
  # Each round runs every command once, in an order shuffled per round (seeded by the
  # round, so a rerun repeats it): a fixed order gives each command the same predecessor
  # every round, and what a process leaves behind (freed memory the kernel must zero
  # again, caches) is then a bias of one command, not noise shared by all. This is the
  # randomized multiple interleaved trials method (Abedi and Brecht, ICPE 2017).
  # ORDER=fixed keeps the listed order.
  if [ "${ORDER:-shuffled}" = fixed ]; then
    order=("${!names[@]}")
  else
    read -r -a order <<< "$(python3 -c 'import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
order = list(range(n)); random.Random(seed).shuffle(order); print(*order)' "${#names[@]}" "$round")"
  fi
  for i in "${order[@]}"; do
    # The command's words (paths without spaces), run without a shell.
    read -r -a words <<< "${cmds[$i]}"
    set -- "${words[@]}"
    "$py" benches/cputime.py "$times" "${names[$i]}" "$@"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$times" "$rounds" "$load_before" "$load_after" "$log" "$snap" "${ORDER:-shuffled}" <<'PY'
import datetime, os, platform, re, statistics, sys
times, rounds, lb, la, log, snap, order = sys.argv[1:8]
order_desc = ("commands in the listed order every round" if order == "fixed"
              else "commands in an order shuffled each round, seeded by the round's number")
rows = {}
for line in open(times):
    p = line.split()
    if len(p) == 5 and "." in p[0]:
        rows.setdefault(p[0], []).append((float(p[1]) + float(p[2]), int(p[4]) / 1024))
def st(k):
    v = rows.get(k)
    if not v:
        return None
    c = [x for x, _ in v]
    return min(c), statistics.median(c), max(m for _, m in v)
def cell(k):
    s = st(k)
    return "—" if s is None else f"{secs(s[0])} / {secs(s[1])} s | {s[2]:.0f} MiB"
def prose(k):
    s = st(k)
    return "—" if s is None else f"CPU {secs(s[0])} / {secs(s[1])} s (min / median), peak RSS {s[2]:.0f} MiB"
def secs(x):
    # Three decimals below a second: a 0.06 s process in hundredths is a 15 % step.
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"
def ratio(a, b):
    sa, sb = st(a), st(b)
    return "—" if not sa or not sb or sb[1] == 0 else f"{sa[1] / sb[1]:.2f}×"
today = datetime.date.today()
head = (f"Measured {today} by `benches/ratios.sh {rounds}` on this project's machine "
        f"({os.cpu_count()} cores, {platform.machine()}), page cache warm, every command run once per "
        f"round, {rounds} rounds (one interleaved series, {order_desc}; each process's own resource "
        "usage, read by `benches/cputime.py`). Load average (1, 5, 15 min) "
        f"{lb} before the series and {la} after: the machine is shared, so wall times swing; "
        "CPU time (user+sys) is the figure compared. Cells: CPU min / median, peak RSS (largest run).")
perf = [
    "<!-- ratios: written by benches/ratios.sh; the lines up to the end marker are replaced -->",
    "## CPU-time ratios",
    "",
    head,
    "",
    f"### 1 GiB log (`examples/gen_log.rs`, {os.path.getsize(log):,} bytes)",
    "",
    "| command | CPU min / median | peak RSS |",
    "|---|---|---|",
    f"| `rankscope events LOG --json` (every line classified, events parsed, JSON) | {cell('scan.rankscope')} |",
    f"| `rg -c -f benches/reference_patterns.txt` (the reference extractor's 8 regexes) | {cell('scan.rg_reference_regexes')} |",
    f"| `rg -c -F` the reference's 8 event markers as fixed strings | {cell('scan.rg_reference_literals')} |",
    f"| `rg -c -F` rankscope's own event literals (`grammars/*.toml`) | {cell('scan.rg_rankscope_literals')} |",
    "",
    f"rankscope / ripgrep (reference regexes): **{ratio('scan.rankscope', 'scan.rg_reference_regexes')}**; "
    f"/ ripgrep (reference markers, fixed strings): **{ratio('scan.rankscope', 'scan.rg_reference_literals')}**; "
    f"/ ripgrep (rankscope's literals): **{ratio('scan.rankscope', 'scan.rg_rankscope_literals')}**. "
    "Target: ≤ 2× ripgrep with the reference's patterns, RSS ≤ 64 MiB. ripgrep maps the file, so its RSS "
    "counts the file's pages; rankscope reads blocks. ripgrep 13's time with the 8 regexes depends on their "
    "exact form (with capture groups on every pattern it leaves its fast literal path; each alone, or the "
    "markers as fixed strings, take a tenth of that), so both forms are shown and the fixed-string one is "
    "the stricter anchor.",
    "",
    "`benches/reference_patterns.txt` holds the 8 regexes a plain-Python extractor of SGLang start-up "
    "events would use (`re.search` per line): distributed init begin and end, weight load begin and end, "
    "the KV cache allocation line, CUDA graph capture begin and end, and the OOM message. They are written "
    "for this benchmark from the wording in `grammars/sglang.toml`, not taken from another project.",
    "",
    "### Many ranks, one file per rank (`benches/gen_multinode.py … rank`)",
    "",
    "| command | 1,024 ranks: CPU min / median | peak RSS | 8,192 ranks: CPU min / median | peak RSS |",
    "|---|---|---|---|---|",
    f"| `rankscope summary RUN` | {cell('r1024.summary')} | {cell('r8192.summary')} |",
    f"| `rankscope diff RUN RUN` | {cell('r1024.diff')} | {cell('r8192.diff')} |",
    f"| `benches/multinode_anchor.py RUN` (plain Python: literal test, regex, grouping) | {cell('r1024.python')} | {cell('r8192.python')} |",
    "",
    f"rankscope summary / Python: {ratio('r1024.summary', 'r1024.python')} at 1,024 ranks, "
    f"{ratio('r8192.summary', 'r8192.python')} at 8,192. Targets (CPU): 8,192 ranks `summary` ≤ 2 s, "
    "`diff` ≤ 4 s; 1,024 ranks `diff` ≤ 0.4 s.",
    "",
    f"TUI time to first screen at 1,024 ranks (`rankscope tui --first-frame 120x40 RUN`: load, "
    f"analyse, draw one frame): {prose('r1024.tui')}. Target ≤ 0.3 s. Its own section below "
    "(`benches/tui_first_screen.sh`) sets it beside `summary --json` on the same input.",
    "<!-- ratios: end -->",
]
path = "docs/performance.md"
text = open(path).read() if os.path.exists(path) else "# Performance\n"
text = re.sub(r"\n?<!-- ratios: written.*?<!-- ratios: end -->\n?", "\n", text, flags=re.S)
# The section goes first, before the multinode one.
m = re.search(r"<!-- multinode: written", text)
body = "\n".join(perf) + "\n"
text = (text[:m.start()].rstrip("\n") + "\n\n" + body + "\n" + text[m.start():]) if m else (text.rstrip("\n") + "\n\n" + body)
open(path, "w").write(text)
print("\n".join(perf))

if st("snap.mem"):
    size = os.path.getsize(snap)
    sm, sp = st("snap.mem"), st("snap.pickle_load")
    sec = [
        "<!-- ratios: written by benches/ratios.sh; the lines up to the end marker are replaced -->",
        "## CPU-time ratio against `pickle.load`",
        "",
        head,
        "",
        f"File: `{snap}` ({size:,} bytes).",
        "",
        "| command | CPU min / median | peak RSS |",
        "|---|---|---|",
        f"| `rankscope mem FILE` (read, model, summary, text) | {cell('snap.mem')} |",
        f"| `python3 -c 'pickle.load(…)'` (read only) | {cell('snap.pickle_load')} |",
        "",
        f"`pickle.load` / `rankscope mem`: **{sp[1] / sm[1]:.1f}×** on median CPU time (target ≥ 6×); "
        f"rankscope's peak RSS is **{sm[2] * 2**20 / size:.2f}×** the file (target ≤ 1.5×).",
        "<!-- ratios: end -->",
    ]
    path = "docs/performance-snapshot.md"
    text = open(path).read() if os.path.exists(path) else "# Snapshot reading: performance\n"
    text = re.sub(r"\n?<!-- ratios: written.*?<!-- ratios: end -->\n?", "\n", text, flags=re.S)
    open(path, "w").write(text.rstrip("\n") + "\n\n" + "\n".join(sec) + "\n")
    print("\n".join(sec))
PY
