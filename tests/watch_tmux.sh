#!/usr/bin/env bash
# End-to-end check of `rankscope watch`'s live board in a real terminal: tmux runs it at
# 120x40 against tp8-baseline on an empty directory, this script writes tp8-custom-ar's
# lines into it as the server did, and reads the screen. Before the first OOM line is
# written (server.log:82) the board must show every rank's lane and the memory warning
# (each rank has 0.60 GiB left after its KV pool, server.log:43 for TP1 first, where the
# baseline's capture took 0.63 GiB); after the rest is written the watch must end by
# itself with summary's FAILED verdict on the normal screen and exit status 1.
#
# Usage: tests/watch_tmux.sh   (after `cargo build`; honours CARGO_TARGET_DIR or RANKSCOPE_BIN)
set -u
cd "$(dirname "$0")/.."

fail() {
    echo "watch_tmux.sh: FAIL: $*" >&2
    if [ -n "${SCREEN_FILE:-}" ] && [ -f "$SCREEN_FILE" ]; then
        echo "--- screen ---" >&2
        cat "$SCREEN_FILE" >&2
    fi
    exit 1
}

wait_for_screen() { # PATTERN [TRIES]
    for _ in $(seq 1 "${2:-100}"); do
        tmux capture-pane -p -t "$SESSION" > "$SCREEN_FILE"
        grep -q "$1" "$SCREEN_FILE" && return 0
        sleep 0.1
    done
    return 1
}

if ! command -v tmux >/dev/null 2>&1; then
    echo "watch_tmux.sh: tmux is not installed (apt-get install tmux); cannot run" >&2
    exit 1
fi

BIN="${RANKSCOPE_BIN:-${CARGO_TARGET_DIR:-target}/debug/rankscope}"
[ -x "$BIN" ] || fail "no binary at $BIN; run cargo build first"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"

SESSION="rankscope-watch-$$"
WORK="$(mktemp -d)"
SCREEN_FILE="$WORK/screen.txt"
RUN="$WORK/run"
mkdir "$RUN"
: > "$RUN/server.log"
# A server of our own (its own socket): no other tmux on the machine is touched.
tmux() { command tmux -L "$SESSION" "$@"; }
trap 'tmux kill-server 2>/dev/null; sleep 0.2; rm -rf "$WORK" 2>/dev/null' EXIT

started=""
for _ in 1 2 3 4 5; do
    if tmux new-session -d -s "$SESSION" -x 120 -y 40 \
        "env -i PATH=/usr/bin:/bin HOME=$WORK TERM=xterm-256color PS1='watchcheck\$ ' bash --norc --noprofile"; then
        started=1
        break
    fi
    sleep 0.5
done
[ -n "$started" ] || fail "tmux could not start a session"
tmux send-keys -t "$SESSION" "cd '$PWD' && '$BIN' watch --vs samples/tp8-baseline '$RUN'; echo \$? > '$WORK/rc'" Enter
wait_for_screen 'rankscope watch' || fail "the board did not open"
[ "$(tmux display -p -t "$SESSION" '#{alternate_on}')" = 1 ] \
    || fail "the board did not switch to the alternate screen"

# Lines 1-81: everything before the first torch.OutOfMemoryError line.
head -n 81 samples/tp8-custom-ar/server.log | while IFS= read -r line; do
    printf '%s\n' "$line" >> "$RUN/server.log"
    sleep 0.02
done
wait_for_screen 'TP6: 0.60 GiB left after the KV pool' 100 \
    || fail "no memory warning on the board before the OOM line"
# Each line is polled for on its own: a capture can catch a frame half drawn.
for r in 0 1 2 3 4 6 7; do
    wait_for_screen "TP$r: 0.60 GiB left after the KV pool; the baseline's cuda_graph took 0.63 GiB" 50 \
        || fail "TP$r's warning not on the board"
done
for r in 0 1 2 3 4 5 6 7; do
    wait_for_screen "^TP$r " 50 || fail "rank lane TP$r not on the board"
done
# The status rows: TP1 printed `Capture cuda graph begin … avail mem=0.60 GB` (line 44):
# it is in cuda_graph, its latest memory figure that one.
wait_for_screen '^TP1 \+in cuda_graph \+[0-9.]\+ s \+cuda_graph avail before: 0.60 GiB' 50 \
    || fail "TP1's status row (in cuda_graph, 0.60 GiB) not on the board"
grep -q 'OutOfMemoryError' "$SCREEN_FILE" && fail "the OOM is on the board before its line was written"

# The rest: the OOMs; the watch ends by itself 2 s after the last line.
tail -n +82 samples/tp8-custom-ar/server.log >> "$RUN/server.log"
for _ in $(seq 1 150); do
    [ -s "$WORK/rc" ] && break
    sleep 0.1
done
[ -s "$WORK/rc" ] || fail "watch did not end within 15 s of the failure"
rc="$(cat "$WORK/rc")"
[ "$rc" = 1 ] || fail "watch exited with status $rc, not 1 (failed)"
sleep 0.2
tmux capture-pane -p -S -200 -t "$SESSION" > "$SCREEN_FILE"
[ "$(tmux display -p -t "$SESSION" '#{alternate_on}')" = 0 ] \
    || fail "the alternate screen is still on after the watch ended"
grep -q '^FAILED ' "$SCREEN_FILE" || fail "summary's verdict not printed after the board"
grep -q 'watchcheck\$' "$SCREEN_FILE" || fail "shell prompt not back"

echo "watch_tmux.sh: ok (board opened, 8 lanes and the memory warnings on screen before the OOM line was written, ended by itself with FAILED and exit 1, normal screen restored)"
