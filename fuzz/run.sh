#!/usr/bin/env bash
# Runs the fuzz targets (all, or those named) for FUZZ_SECONDS each (default 20), seeded
# from the samples, and prints the executions each reached. Needs the nightly toolchain
# and cargo-fuzz (`.ci/run` installs cargo-fuzz when it is missing). Corpora grow in
# fuzz/corpus/<target> (not committed); a crash is kept in fuzz/artifacts/<target>.
#   fuzz/run.sh                      # every target, 20 s each
#   FUZZ_SECONDS=3600 fuzz/run.sh scan   # one target for an hour
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${FUZZ_SECONDS:-20}
# FUZZ_TARGET_DIR keeps the instrumented build outside the checkout, so that a fresh
# clone on the same machine (CI) does not rebuild every dependency with the sanitizer.
tdir=()
[ -n "${FUZZ_TARGET_DIR:-}" ] && tdir=(--target-dir "$FUZZ_TARGET_DIR")
all=(pickle scan pyrepr grammar_toml nvsmi)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

seeds() {
  case $1 in
    pickle) ls samples/*/snapshot_rank0.pickle tests/hostile/*.pickle ;;
    scan) ls samples/*/*.log samples/*/stdout.txt ;;
    pyrepr) ls fuzz/seeds/pyrepr/* ;;
    grammar_toml) ls grammars/*.toml ;;
    nvsmi) ls samples/*/nvidia-smi*.csv ;;
  esac | paste -sd, -
}

echo "fuzz: building ${targets[*]} (nightly, AddressSanitizer)"
cargo +nightly fuzz build "${tdir[@]}"
summary=""
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  log=$(mktemp)
  # -rss_limit_mb: the fuzzers' own memory bound (libFuzzer's default is 2048).
  # -detect_leaks=0: the grammars, regex caches and rayon's pool live across inputs, so
  # LeakSanitizer would scan the heap after most inputs (a fifth of the time) to find
  # nothing a safe-Rust program could leak by accident.
  if ! cargo +nightly fuzz run "${tdir[@]}" "$t" "fuzz/corpus/$t" -- \
      -max_total_time="$secs" -seed_inputs="$(seeds "$t")" \
      -rss_limit_mb=2048 -detect_leaks=0 -print_final_stats=1 >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz: $t FAILED (the input is in fuzz/artifacts/$t)"
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  summary+=$(printf '%-13s %10s executions %7s/s  %s' "$t" "${execs:-?}" "${rate:-?}" "$cov")$'\n'
  rm -f "$log"
done
printf 'fuzz: %s s per target\n%s' "$secs" "$summary"
