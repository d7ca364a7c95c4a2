#!/usr/bin/env bash
# Runs two rankscope binaries over every bundled sample, test fixture run and (when
# present) ../shared fixture, in every output form — summary text/JSON/NDJSON/ranks,
# events JSON, the Perfetto and Prometheus exports, the TUI's first frame, and diff of
# every pair of samples as text and JSON — and reports each output that differs.
#
#   scripts/same-outputs.sh OLD_BINARY NEW_BINARY
#
# Used to show that a restructuring changed no output (docs/architecture.md). Exit 0
# when every output is identical, 1 otherwise.
set -uo pipefail
old=${1:?old binary}; new=${2:?new binary}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export COLUMNS=100 NO_COLOR=1
runs=(samples/*/)
for d in tests/fixtures/*/; do [ -d "$d" ] && runs+=("$d"); done
for d in ../shared/fixtures/gpu/*/ ../shared/fixtures/gpu2/*/; do [ -d "$d" ] && runs+=("$d"); done
compared=0; differ=0
check() {  # label, args...
  local label=$1; shift
  "$old" "$@" >"$out/a" 2>&1; local ca=$?
  "$new" "$@" >"$out/b" 2>&1; local cb=$?
  compared=$((compared + 1))
  if [ $ca != $cb ] || ! cmp -s "$out/a" "$out/b"; then
    differ=$((differ + 1))
    echo "DIFFERS: $label (exit $ca -> $cb)"
    diff "$out/a" "$out/b" | head -10
  fi
}
for r in "${runs[@]}"; do
  r=${r%/}
  check "summary $r" summary "$r"
  check "summary --ranks $r" summary --ranks "$r"
  check "summary --json $r" summary --json "$r"
  check "summary --ndjson $r" summary --ndjson "$r"
  check "events --json $r" events --json "$r"
  check "export --perfetto $r" export --perfetto - "$r"
  check "export --prometheus $r" export --prometheus "$r"
  check "tui --first-frame $r" tui --first-frame 120x40 "$r"
done
samples=(samples/*/)
for b in "${samples[@]}"; do
  for c in "${samples[@]}"; do
    [ "$b" = "$c" ] && continue
    check "diff $b $c" diff "${b%/}" "${c%/}"
    check "diff --json $b $c" diff --json "${b%/}" "${c%/}"
  done
done
echo "$compared outputs compared over ${#runs[@]} runs and $(( ${#samples[@]} * (${#samples[@]} - 1) )) diff pairs; $differ differ"
[ "$differ" = 0 ]
