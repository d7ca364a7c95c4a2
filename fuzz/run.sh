#!/usr/bin/env bash
# Runs the fuzz targets (all, or those named) for FUZZ_SECONDS each (default 20), seeded
# from fuzz/seeds/<target> (made by fuzz/make_seeds.py from the samples, the tests and
# both hostile folders) and the samples, and prints per target the executions reached,
# the rate, the coverage and the corpus size. Needs the nightly toolchain and cargo-fuzz
# (`.ci/run` installs cargo-fuzz when it is missing). Corpora grow in fuzz/corpus/<target>
# (not committed) and carry over between runs; a crash is kept in fuzz/artifacts/<target>.
#   fuzz/run.sh                                  # every target, 20 s each, one process
#   FUZZ_SECONDS=3600 fuzz/run.sh scan           # one target for an hour
#   FUZZ_FORK=16 FUZZ_SECONDS=28800 fuzz/run.sh  # a long campaign: 16 processes per target
#   FUZZ_JOBS=4 fuzz/run.sh pickle               # libFuzzer's -jobs (logs in fuzz-N.log)
#   FUZZ_SEEDS=none FUZZ_SECONDS=5 fuzz/run.sh    # no seed corpora (CI's smoke run)
#   FUZZ_SANITIZER=none FUZZ_TARGET_DIR=~/.cache/rankscope-fuzz-nosan FUZZ_FORK=2 \
#     FUZZ_SECONDS=14400 fuzz/run.sh               # a campaign for executions (no ASan)
# FUZZ_FORK=N runs libFuzzer's -fork=N: N child processes share the corpus, a crash or
# timeout in one is recorded (-ignore_crashes=0 stops the campaign at the first). Every
# target is single-threaded, so N processes use N cores.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${FUZZ_SECONDS:-20}
fork=${FUZZ_FORK:-}
jobs=${FUZZ_JOBS:-}
# FUZZ_TARGET_DIR keeps the instrumented build outside the checkout, so that a fresh
# clone on the same machine (CI) does not rebuild every dependency with the sanitizer.
tdir=()
[ -n "${FUZZ_TARGET_DIR:-}" ] && tdir=(--target-dir "$FUZZ_TARGET_DIR")
# FUZZ_DEV=1 builds without optimisations (cargo fuzz --dev): a library change rebuilds the
# nine targets in a fraction of the release build's time (8.7 min here), which is what a
# smoke run in CI needs; a campaign wants the default, optimised build.
[ -n "${FUZZ_DEV:-}" ] && tdir+=(--dev)
# FUZZ_SANITIZER=none builds without AddressSanitizer: the code is safe Rust (one unsafe
# block, a read of a mapped page count), so ASan finds little a panic would not, and it
# cost a quarter of each execution (perf on the scan target). A campaign for executions
# wants it; the CI smoke run keeps the default. Give such a build its own FUZZ_TARGET_DIR:
# the flags differ, and one directory would rebuild every dependency at each switch.
[ -n "${FUZZ_SANITIZER:-}" ] && tdir+=(--sanitizer "$FUZZ_SANITIZER")
all=(scan pipeline prefix config pyrepr snapshot pickle nvsmi grammar_toml)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

# The largest input each target is given: small inputs keep the rate high, and the
# shapes a parser meets fit in them (a configuration line up to 21 KiB, the D8 case;
# the samples' snapshots up to 190 KB).
max_len() {
  case $1 in
    scan) echo 2048 ;;
    pipeline) echo 8192 ;;
    prefix) echo 2048 ;;
    config) echo 32768 ;;
    pickle) echo 200000 ;;
    grammar_toml) echo 16384 ;;
    *) echo 4096 ;;
  esac
}

# Seeds in the repository outside fuzz/seeds (the samples' snapshots, the built-in
# grammars), given by name.
extra_seeds() {
  case $1 in
    pickle) ls samples/*/snapshot_rank0.pickle tests/hostile/*.pickle ;;
    grammar_toml) ls grammars/*.toml ;;
    nvsmi) ls samples/*/nvidia-smi*.csv ;;
  esac | paste -sd, -
}

echo "fuzz: building ${targets[*]} (nightly, sanitizer ${FUZZ_SANITIZER:-address})"
cargo +nightly fuzz build "${tdir[@]}"
summary=""
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  dirs=("fuzz/corpus/$t")
  seeds=fuzz/seeds/$t
  [ "$t" = pipeline ] && seeds=fuzz/seeds/scan  # the same logs
  # FUZZ_SEEDS=none: no seed corpus (CI's smoke run: running the ~600 seeds through an
  # unoptimised ASan build took most of its four minutes).
  [ -d "$seeds" ] && [ "${FUZZ_SEEDS:-}" != none ] && dirs+=("$seeds")
  flags=(-max_total_time="$secs" -max_len="$(max_len "$t")" -timeout=30
    -rss_limit_mb=2048 -detect_leaks=0 -print_final_stats=1)
  extra=$(extra_seeds "$t")
  [ -n "$extra" ] && [ "${FUZZ_SEEDS:-}" != none ] && flags+=(-seed_inputs="$extra")
  [ -n "$fork" ] && flags+=(-fork="$fork" -ignore_crashes=0 -ignore_timeouts=0 -ignore_ooms=0)
  [ -n "$jobs" ] && flags+=(-jobs="$jobs" -workers="$jobs")
  log=$(mktemp)
  # -rss_limit_mb: the fuzzers' own memory bound (libFuzzer's default is 2048).
  # -detect_leaks=0: the grammars, regex caches and rayon's pool live across inputs, so
  # LeakSanitizer would scan the heap after most inputs (a fifth of the time) to find
  # nothing a safe-Rust program could leak by accident.
  # -timeout=30: an input that takes 30 s is a finding (the targets take milliseconds; the
  # limit is wall time, and a niced run on a loaded machine gets a tenth of a core).
  if ! cargo +nightly fuzz run "${tdir[@]}" "$t" "${dirs[@]}" -- "${flags[@]}" >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz: $t FAILED (the input is in fuzz/artifacts/$t)"
    exit 1
  fi
  if [ -n "$jobs" ]; then
    # -jobs writes each job's output to fuzz-<i>.log in the working directory.
    cat fuzz-*.log >>"$log" 2>/dev/null || true
    rm -f fuzz-*.log
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | awk '{s+=$1} END {print s+0}')
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | awk '{s+=$1} END {print s+0}')"
  elif [ -n "$fork" ]; then
    # The fork driver prints `#EXECS: cov: … exec/s: R …` lines; the last is the total.
    last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1)
    execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
    rate=$(sed -nE 's/.*exec\/s: ([0-9]+).*/\1/p' <<<"$last")
  else
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  fi
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  corpus="$(find "fuzz/corpus/$t" -type f | wc -l) inputs, $(du -sh "fuzz/corpus/$t" | cut -f1)"
  summary+=$(printf '%-13s %10s executions %7s/s  %s  corpus %s' "$t" "${execs:-?}" "${rate:-?}" "$cov" "$corpus")$'\n'
  rm -f "$log"
done
printf 'fuzz: %s s per target%s\n%s' "$secs" "${fork:+, $fork processes}${jobs:+, $jobs jobs}" "$summary"
