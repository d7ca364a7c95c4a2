#!/usr/bin/env bash
# The team's shared benchmark inputs (../shared/bench: mklog.py, mkranks.py, ref8.ere) and
# this project's own generator's log of the same size, against ripgrep given the same
# events' patterns (ref8.ere: the eight start-up markers a user greps for, no capture
# groups), in ONE interleaved series: every round runs every command once, in an order
# shuffled per round and seeded by the round's number. Figures are each process's own CPU
# time (user+sys), wall time and peak RSS (benches/cputime.py), and the 1-minute load
# average just before each run; the docs quote medians and ratios of medians, with the
# core count and the median load beside each figure. Two one-thread runs of the shared
# log's command at once give the machine's own cost of two busy cores, and ripgrep on
# the log's two halves at one and two threads what a second core gives a scan that
# shares nothing; both are quoted beside the two-thread goals. Writes the "shared-bench"
# section of docs/performance.md.
#
#   benches/shared_ratios.sh [ROUNDS] [LOG_MIB] [RANKS] [BIG_RANKS]   (default 5 1024 8192 0)
#
# The issue's table is at 1 GiB and 8,192 ranks, the default. 256 MiB is enough to compare
# one-thread CPU (the scan is linear in the log's size), not the two-thread goals: the
# start-up, ~12 ms on one thread in either run, is a tenth of a 256 MiB log's scan and a
# thirtieth of a 1 GiB log's. BIG_RANKS > 0 adds `summary` of that many rank files (65,536
# in issue 26), and `diff` of them against a copy failing at the middle rank + 21, for the
# CPU per rank and the peak RSS. Inputs go to $BENCH_DATA (default
# bench-data/, git-ignored); SHARED_BENCH names the shared folder (default
# ../shared/bench). Without it the shared inputs are SKIPPED (said on stderr and in the
# docs) and the own generator's log is still measured, against the same patterns when
# ref8.ere is there, else against benches/reference_patterns.txt only. The `mem` row
# needs ../shared/fixtures/gpu/decode_heavy/snapshot.pickle (SNAPSHOT), else it is
# skipped the same way. Needs python3 and rg (apt-get install ripgrep).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
mib=${2:-1024}
ranks=${3:-8192}
big=${4:-0}
shared=${SHARED_BENCH:-../shared/bench}
snapshot=${SNAPSHOT:-../shared/fixtures/gpu/decode_heavy/snapshot.pickle}
have_shared=1
if [ ! -f "$shared/mklog.py" ]; then
  echo "shared_ratios.sh: SKIPPED the shared inputs: no $shared/mklog.py (set SHARED_BENCH)" >&2
  have_shared=0
fi
have_snapshot=1
if [ ! -f "$snapshot" ]; then
  echo "shared_ratios.sh: SKIPPED \`mem\`: no $snapshot (set SNAPSHOT)" >&2
  have_snapshot=0
fi
data=${BENCH_DATA:-bench-data}
mkdir -p "$data"
cargo build --release --quiet --bin rankscope --example gen_log
bin=target/release/rankscope
olog=$data/own-${mib}m.log
[ -f "$olog" ] || target/release/examples/gen_log "$olog" "$mib"
fail_rank=$((ranks / 2 + 21))  # 4117 of 8,192, as the issue's figure
ref=$shared/ref8.ere
py=$(python3 -c 'import sys; print(sys.executable)')
names=(); cmds=(); inputs=()
# add NAME COMMAND INPUT: INPUT (a file or a folder) is read into the page cache just
# before each timed run of COMMAND, outside the figures. This VM gives cached pages back at
# a few MiB a second (a 256 MiB log read once was 180 MiB resident 35 s later), so an
# input warmed once at the start was partly read from disk by whichever command came to
# it first later in a round, and the 65,536-file run, ~2 GiB, always was in part.
add() { names+=("$1"); cmds+=("$2"); inputs+=("$3"); }
warm() {
  if [ -d "$1" ]; then find "$1" -type f -print0 | xargs -0 cat > /dev/null
  else cat "$1" > /dev/null; fi
}
add "own.rs1" "env RAYON_NUM_THREADS=1 $bin events $olog --json" "$olog"
add "own.rg_groups" "rg -j1 -c -f benches/reference_patterns.txt $olog" "$olog"
# A vLLM V1 server's log (start-up, then metrics and access lines), against the vLLM
# start-up markers: the traffic of a second server family, whose lines a prefilter
# fragment can hit where SGLang's do not.
vlog=$data/vllm-${mib}m.log
[ -f "$vlog" ] || python3 benches/gen_vllm_log.py "$vlog" "$mib"
add "vllm.rs1" "env RAYON_NUM_THREADS=1 $bin events $vlog --json" "$vlog"
add "vllm.rg" "rg -j1 -c -f benches/vllm_markers.ere $vlog" "$vlog"
if [ "$have_shared" = 1 ]; then
  slog=$data/shared-${mib}m.log
  [ -f "$slog" ] || python3 "$shared/mklog.py" "$slog" "$mib"
  base=$data/shared-ranks-$ranks
  fail=$data/shared-ranks-$ranks-fail$fail_rank
  [ -d "$base" ] || python3 "$shared/mkranks.py" "$base" "$ranks" > /dev/null
  [ -d "$fail" ] || python3 "$shared/mkranks.py" "$fail" "$ranks" "$fail_rank" > /dev/null
  add "shared.rs1" "env RAYON_NUM_THREADS=1 $bin events $slog --json" "$slog"
  add "shared.rs2" "env RAYON_NUM_THREADS=2 $bin events $slog --json" "$slog"
  # The machine's own cost of two busy cores: two one-thread runs at once (their CPU
  # summed by the shell's wait; each run's is half). On this VM each such run took 0.96x
  # and 1.32x the CPU of one alone in two series of 8 rounds an hour apart (2026-12-06):
  # it moves with the hour, as the two-thread run does.
  pair=$data/pair.sh
  printf '#!/bin/sh\n"$@" > /dev/null &\n"$@" > /dev/null\nwait\n' > "$pair"
  add "shared.pair" "sh $pair env RAYON_NUM_THREADS=1 $bin events $slog --json" "$slog"
  add "shared.rg" "rg -j1 -c -f $ref $slog" "$slog"
  # What a second core gives ripgrep on the same bytes, as two files of half the log each
  # (cut at a line end), one file a thread: a scan that shares nothing between its threads,
  # in the same series as the two-thread goals. Each half mapped, as rankscope maps a plain
  # log since 2026-12-07 (read into buffers, `--no-mmap`, before). 2026-12-06, four series
  # of 8-14 rounds with `--no-mmap`: 0.96-1.09x its one-thread CPU, while rankscope's two
  # threads on the whole log took 0.88-1.27x in nine series of 8-18.
  halves=("$data/shared-${mib}m-half00.log" "$data/shared-${mib}m-half01.log")
  [ -f "${halves[1]}" ] || split -n l/2 -d --additional-suffix=.log "$slog" "$data/shared-${mib}m-half"
  add "shared.rg_halves1" "rg -j1 -c -f $ref ${halves[*]}" "${halves[*]}"
  add "shared.rg_halves2" "rg -j2 -c -f $ref ${halves[*]}" "${halves[*]}"
  add "shared.cat" "cat $slog" "$slog"
  add "own.rg" "rg -j1 -c -f $ref $olog" "$olog"
  add "ranks.summary" "env RAYON_NUM_THREADS=1 $bin summary $base" "$base"
  add "ranks.summary2" "env RAYON_NUM_THREADS=2 $bin summary $base" "$base"
  # The diff reads both folders: both are warmed.
  add "ranks.diff" "env RAYON_NUM_THREADS=1 $bin diff $base $fail" "$base $fail"
  add "ranks.rg" "rg -j1 -c -f $ref $base" "$base"
  add "ranks.rg2" "rg -j2 -c -f $ref $base" "$base"
  if [ "$big" -gt 0 ]; then
    bigdir=$data/shared-ranks-$big
    [ -d "$bigdir" ] || python3 "$shared/mkranks.py" "$bigdir" "$big" > /dev/null
    # Issue 26 asks the same of `diff` at this size (CPU per rank as at $ranks, 512 MiB):
    # against a copy failing at its middle rank plus 21, as the $ranks-rank pair.
    bigfail=$data/shared-ranks-$big-fail$((big / 2 + 21))
    [ -d "$bigfail" ] || python3 "$shared/mkranks.py" "$bigfail" "$big" $((big / 2 + 21)) > /dev/null
    add "big.summary" "env RAYON_NUM_THREADS=1 $bin summary $bigdir" "$bigdir"
    add "big.diff" "env RAYON_NUM_THREADS=1 $bin diff $bigdir $bigfail" "$bigdir $bigfail"
    add "big.rg" "rg -j1 -c -f $ref $bigdir" "$bigdir"
  fi
fi
if [ "$have_snapshot" = 1 ]; then
  loader=$data/pickle_load.py
  printf 'import pickle, sys\nwith open(sys.argv[1], "rb") as f:\n    pickle.load(f)\n' > "$loader"
  add "snap.mem" "$bin mem $snapshot" "$snapshot"
  add "snap.pickle" "$py $loader $snapshot" "$snapshot"
fi

# How the page cache holds a log decides what mapping it costs, rankscope and ripgrep
# alike: read from disk, a file is held in 2 MiB pieces that one page fault maps whole
# (ripgrep 0.089 CPU-s on the shared GiB); written by small appends, as a server writes its
# log, in pieces a fault maps 64 KiB of (ripgrep 0.18-0.20). A series that began with
# whatever the last commands left measured either, or a mix that moved within the series
# (docs/performance.md, "The second change of 2026-12-07"). So each input is dropped from
# the page cache and read back from disk once before the series: the state a log read
# cold is in, the one where a mapping is cheapest, and the one the series' own reads
# leave an input in once this VM has given its cached pages back. The rank folders and
# the snapshot too: a fresh copy of the 8,192 rank files took 0.109 s of system time to
# `summary` as `cp` wrote it and 0.124 s once dropped and read back; the folder it was
# copied from, read back the same way, 0.183 s (medians of 3, 2026-12-07; ripgrep 0.088
# and 0.115 s on the two): the cache's pages are not all alike on this VM even so.
# /proc/meminfo's FileHugePages, before and after, says how much of the cache was held in
# 2 MiB pieces.
settle() {
  python3 - "$@" <<'PY'
import os, sys
for top in sys.argv[1:]:
    paths = [top] if not os.path.isdir(top) else [
        os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs]
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
PY
  for f in "$@"; do warm "$f"; done
}
huge() { awk '/^FileHugePages:/ { printf "%.0f MiB", $2 / 1024 }' /proc/meminfo; }
inputs_read=("$olog" "$vlog")
[ "$have_shared" = 1 ] && inputs_read+=("$slog" "${halves[@]}" "$base" "$fail")
[ "$have_shared" = 1 ] && [ "$big" -gt 0 ] && inputs_read+=("$bigdir" "$bigfail")
[ "$have_snapshot" = 1 ] && inputs_read+=("$snapshot")
settle "${inputs_read[@]}"
huge_before=$(huge)
times=$data/shared-ratios-times.txt
: > "$times"
loads=$data/shared-ratios-loads.txt
: > "$loads"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$rounds"); do
  read -r -a order <<< "$(python3 -c 'import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
order = list(range(n)); random.Random(seed).shuffle(order); print(*order)' "${#names[@]}" "$round")"
  for i in "${order[@]}"; do
    read -r -a words <<< "${cmds[$i]}"
    for input in ${inputs[$i]}; do warm "$input"; done
    echo "${names[$i]} $(cut -d' ' -f1 /proc/loadavg)" >> "$loads"
    "$py" benches/cputime.py "$times" "${names[$i]}" "${words[@]}"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
huge_after=$(huge)

python3 - "$times" "$rounds" "$load_before" "$load_after" "$ranks" "$fail_rank" "$mib" "$loads" "$big" "$snapshot" "$huge_before" "$huge_after" <<'PY'
import datetime, os, platform, re, statistics, sys
times, rounds, lb, la, ranks, fail_rank, mib, loads, big, snapshot, hb, ha = sys.argv[1:13]
ranks, big = int(ranks), int(big)
cores = os.cpu_count()
rows, load_of = {}, {}
for line in open(times):
    p = line.split()
    if len(p) == 5:
        rows.setdefault(p[0], []).append((float(p[1]) + float(p[2]), float(p[3]), int(p[4]) / 1024))
for line in open(loads):
    p = line.split()
    if len(p) == 2:
        load_of.setdefault(p[0], []).append(float(p[1]))
def have(*ks): return all(k in rows for k in ks)
def med(k, i): return statistics.median(r[i] for r in rows[k])
def cpu(k): return med(k, 0)
def wall(k): return med(k, 1)
def rss(k): return max(r[2] for r in rows[k])
def load(*ks):
    xs = [x for k in ks for x in load_of.get(k, [])]
    return statistics.median(xs) if xs else float("nan")
def s(x): return f"{x:.3f}" if x < 1 else f"{x:.2f}"
def row(label, k):
    if not have(k):
        return None
    return f"| {label} | {s(cpu(k))} s | {s(wall(k))} s | {rss(k):.0f} MiB | {load(k):.2f} |"
def r(a, b): return cpu(a) / cpu(b)
# The same ratio in each round (the two runs of one round are seconds apart): its lowest
# and highest, so a reader sees how far this machine's noise moves a figure whose goal is
# judged on the ratio of the medians. i: 0 CPU, 1 wall; each ratio times `scale`.
def spread(a, b, i=0, scale=1.0):
    xs = [x[i] / y[i] * scale for x, y in zip(rows[a], rows[b]) if y[i] > 0]
    return f"; rounds {min(xs):.2f}–{max(xs):.2f}×" if xs else ""
def verdict(ok): return "met" if ok else "not met"
def goal(label, keys, figure, ok):
    if not have(*keys):
        return f"| {label} | SKIPPED (input absent) | | |"
    return f"| {label} | {figure()} | {load(*keys):.2f} on {cores} cores | {verdict(ok())} |"
gib = int(mib) / 1024
# What two busy cores give on this machine, from two one-thread runs at once: each run's
# CPU against one alone, and half their wall against one alone's (two threads of one
# run, perfectly split, could do no better).
# i: 0 CPU, 1 wall.
def pair(i):
    if not have("shared.pair", "shared.rs1"):
        return ""
    return f"; two 1-thread runs at once: {med('shared.pair', i) / 2 / med('shared.rs1', i):.2f}× each"
# ripgrep given the log as two halves, one a thread, against one thread: what a second core
# gives a scan whose threads share nothing, in the same hour.
def rg_halves(i):
    if not have("shared.rg_halves2", "shared.rg_halves1"):
        return ""
    ratio = med("shared.rg_halves2", i) / med("shared.rg_halves1", i)
    return f"; ripgrep on the log's two halves: {ratio:.2f}×"
shared_present = have("shared.rs1")
lines = [
    "<!-- shared-bench: written by benches/shared_ratios.sh; the lines up to the end marker are replaced -->",
    "## The shared benchmark inputs against ripgrep",
    "",
    f"Measured {datetime.date.today()} by `benches/shared_ratios.sh {rounds} {mib} {ranks} {big}` on this "
    f"project's machine ({cores} cores, {platform.machine()}), release build, each input dropped from the page cache and read back from disk once before the series (`FileHugePages` {hb} before the series, {ha} after: see the script), each input read into the page cache just before each timed run, {rounds} rounds "
    "of one interleaved series (every command once per round, in an order shuffled per round, "
    "seeded). Load average (1, 5, 15 min) "
    f"{lb} before and {la} after, on {cores} cores; the load column is the median of the "
    "1-minute load read just before each run of that command. The machine is shared, so CPU "
    "time (user+sys) is the figure compared, as ratios within the series; medians. Beside a "
    "goal's ratio of the medians, `rounds lo–hi×` is the lowest and highest of the same ratio "
    "taken in each round, whose two runs are seconds apart: how far this machine's noise "
    "moves it. Inputs: "
    f"`../shared/bench` (`mklog.py {mib}`, `mkranks.py {ranks}` and a copy failing at rank "
    f"{fail_rank}), this project's `examples/gen_log.rs` log of the same size, a vLLM V1 log of "
    "the same size (`benches/gen_vllm_log.py`, against its own eight start-up markers "
    "`benches/vllm_markers.ere`), and the 23 MB "
    "snapshot `../shared/fixtures/gpu/decode_heavy` for `mem`; anchor `rg -c -f ref8.ere` (the "
    "eight start-up markers, no capture groups) at `-j1` and, over the rank files, `-j2`.",
    "",
]
if not shared_present:
    lines += ["**The shared inputs were SKIPPED (`../shared/bench` absent): only the own "
              "generator's log is measured below.**", ""]
lines += [
    "| command | CPU | wall | peak RSS | load (1 min) |",
    "|---|---|---|---|---|",
]
table = [
    row(f"`events --json` shared log ({mib} MiB), 1 thread", "shared.rs1"),
    row("same, 2 threads", "shared.rs2"),
    row("`rg -j1 -c -f ref8.ere` shared log", "shared.rg"),
    row("`cat` shared log (page-cache floor)", "shared.cat"),
    row("`rg -j1 -c -f ref8.ere` the shared log's two halves", "shared.rg_halves1"),
    row("same, `-j2` (one half a thread)", "shared.rg_halves2"),
    row(f"`events --json` own generator's log ({mib} MiB), 1 thread", "own.rs1"),
    row("`rg -j1 -c -f ref8.ere` own log", "own.rg"),
    row("`rg -j1 -c -f benches/reference_patterns.txt` own log (capture groups)", "own.rg_groups"),
    row(f"`events --json` vLLM V1 log (`benches/gen_vllm_log.py {mib}`), 1 thread", "vllm.rs1"),
    row("`rg -j1 -c -f benches/vllm_markers.ere` vLLM log", "vllm.rg"),
    row(f"`summary` {ranks:,} rank files, 1 thread", "ranks.summary"),
    row("same, 2 threads", "ranks.summary2"),
    row(f"`diff` against the copy failing at rank {fail_rank}, 1 thread", "ranks.diff"),
    row(f"`rg -j1 -c -f ref8.ere` over the {ranks:,} files", "ranks.rg"),
    row(f"`rg -j2 -c -f ref8.ere` over the {ranks:,} files", "ranks.rg2"),
    row(f"`summary` {big:,} rank files, 1 thread", "big.summary"),
    row(f"`diff` of them against the copy failing at rank {big // 2 + 21:,}, 1 thread", "big.diff"),
    row(f"`rg -j1 -c -f ref8.ere` over the {big:,} files", "big.rg"),
    row("`mem` 23 MB snapshot", "snap.mem"),
    row("CPython `pickle.load` of it", "snap.pickle"),
]
if have("shared.pair"):
    table.insert(2, f"| two 1-thread runs of it at once: CPU each, wall of both | {s(cpu('shared.pair') / 2)} s "
                    f"| {s(wall('shared.pair'))} s | — | {load('shared.pair'):.2f} |")
lines += [t for t in table if t]
lines += [
    "",
    "| goal (issue 26, this machine) | measured | load (1 min) | |",
    "|---|---|---|---|",
    goal("shared log, 1 thread ≤ 2× rg CPU", ["shared.rs1", "shared.rg"],
         lambda: f"{r('shared.rs1', 'shared.rg'):.2f}× ({s(cpu('shared.rs1') / gib)} CPU-s/GiB"
                 f"{spread('shared.rs1', 'shared.rg')})",
         lambda: r('shared.rs1', 'shared.rg') <= 2),
    goal("vLLM V1 log, 1 thread ≤ 2× rg CPU (its markers)", ["vllm.rs1", "vllm.rg"],
         lambda: f"{r('vllm.rs1', 'vllm.rg'):.2f}× ({s(cpu('vllm.rs1') / gib)} CPU-s/GiB"
                 f"{spread('vllm.rs1', 'vllm.rg')})",
         lambda: r('vllm.rs1', 'vllm.rg') <= 2),
    goal("shared log, 2 threads, CPU / rg", ["shared.rs2", "shared.rg"],
         lambda: f"{r('shared.rs2', 'shared.rg'):.2f}×", lambda: True).replace("| met |", "| — |"),
    goal("2 threads: CPU ≤ 1.1× of 1 thread", ["shared.rs2", "shared.rs1"],
         lambda: f"{r('shared.rs2', 'shared.rs1'):.2f}× ({spread('shared.rs2', 'shared.rs1')[2:]}"
                 f"{pair(0)}{rg_halves(0)})",
         lambda: r('shared.rs2', 'shared.rs1') <= 1.1),
    goal("2 threads: wall ≤ 0.55× of 1 thread", ["shared.rs2", "shared.rs1"],
         lambda: f"{wall('shared.rs2') / wall('shared.rs1'):.2f}× "
                 f"({spread('shared.rs2', 'shared.rs1', 1)[2:]}{pair(1)}{rg_halves(1)})",
         lambda: wall('shared.rs2') / wall('shared.rs1') <= 0.55),
    goal("2 threads: RSS ≤ 64 MiB", ["shared.rs2"],
         lambda: f"{rss('shared.rs2'):.0f} MiB", lambda: rss('shared.rs2') <= 64),
    goal(f"{ranks:,} ranks `summary`, 1 thread ≤ 4.5× rg", ["ranks.summary", "ranks.rg"],
         lambda: f"{r('ranks.summary', 'ranks.rg'):.1f}× ({spread('ranks.summary', 'ranks.rg')[2:]})",
         lambda: r('ranks.summary', 'ranks.rg') <= 4.5),
    goal(f"{ranks:,} ranks `summary`, 2 threads / `rg -j2` (CPU)", ["ranks.summary2", "ranks.rg2"],
         lambda: f"{r('ranks.summary2', 'ranks.rg2'):.1f}×", lambda: True).replace("| met |", "| — |"),
    goal(f"{ranks:,} ranks `diff`, 1 thread ≤ 9× rg", ["ranks.diff", "ranks.rg"],
         lambda: f"{r('ranks.diff', 'ranks.rg'):.1f}× ({spread('ranks.diff', 'ranks.rg')[2:]})",
         lambda: r('ranks.diff', 'ranks.rg') <= 9),
]
if big > 0:
    lines.append(goal(
        f"{big:,} ranks `summary`: CPU per rank as at {ranks:,}, ≤ 512 MiB",
        ["big.summary", "ranks.summary"],
        lambda: f"{cpu('big.summary') / big * 1e6:.0f} µs/rank against {cpu('ranks.summary') / ranks * 1e6:.0f}"
                f" ({r('big.summary', 'ranks.summary') * ranks / big:.2f}×"
                f"{spread('big.summary', 'ranks.summary', 0, ranks / big)}); {rss('big.summary'):.0f} MiB",
        lambda: cpu('big.summary') / big <= 1.1 * cpu('ranks.summary') / ranks and rss('big.summary') <= 512))
    lines.append(goal(
        f"{big:,} ranks `diff`: CPU per rank as at {ranks:,}, ≤ 512 MiB",
        ["big.diff", "ranks.diff"],
        lambda: f"{cpu('big.diff') / big * 1e6:.0f} µs/rank against {cpu('ranks.diff') / ranks * 1e6:.0f}"
                f" ({r('big.diff', 'ranks.diff') * ranks / big:.2f}×"
                f"{spread('big.diff', 'ranks.diff', 0, ranks / big)}); {rss('big.diff'):.0f} MiB",
        lambda: cpu('big.diff') / big <= 1.1 * cpu('ranks.diff') / ranks and rss('big.diff') <= 512))
else:
    lines.append(f"| 65,536 ranks `summary` and `diff`: CPU per rank as at {ranks:,}, ≤ 512 MiB | not run (BIG_RANKS 0) | | |")
lines.append(goal("`mem` ≥ 8× faster than `pickle.load`", ["snap.mem", "snap.pickle"],
                  lambda: f"{r('snap.pickle', 'snap.mem'):.2f}× ({spread('snap.pickle', 'snap.mem')[2:]})",
                  lambda: r('snap.pickle', 'snap.mem') >= 8))
lines.append("")
if shared_present and have("own.rg"):
    lines.append(
        f"The two logs: rankscope / rg is {r('shared.rs1', 'shared.rg'):.2f}× on the shared log and "
        f"{r('own.rs1', 'own.rg'):.2f}× on this project's own generator's log with the same patterns; "
        f"against the capture-group patterns the project's older series used, {r('own.rs1', 'own.rg_groups'):.2f}× "
        f"(ripgrep itself is {r('own.rg_groups', 'own.rg'):.1f}× slower with them). See \"Why two logs\" above.")
else:
    lines.append(
        f"Own generator's log against the capture-group patterns: {r('own.rs1', 'own.rg_groups'):.2f}× "
        "(the shared `ref8.ere` anchor was skipped).")
lines.append("<!-- shared-bench: end -->")
path = "docs/performance.md"
text = open(path).read()
text = re.sub(r"\n?<!-- shared-bench: written.*?<!-- shared-bench: end -->\n?", "\n", text, flags=re.S)
m = re.search(r"<!-- ratios: written", text)
body = "\n".join(lines) + "\n"
text = (text[:m.start()].rstrip("\n") + "\n\n" + body + "\n" + text[m.start():]) if m else (text.rstrip("\n") + "\n\n" + body)
open(path, "w").write(text)
print("\n".join(lines))
PY
