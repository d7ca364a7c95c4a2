#!/usr/bin/env bash
# End-to-end check of `rankscope tui` in a real terminal: tmux runs it at 120x40, we read
# the screen, quit with `q`, and check the exit status and that the shell got its normal
# screen back (no alternate screen left behind, no raw mode).
#
# Usage: tests/tui_tmux.sh   (after `cargo build`; honours CARGO_TARGET_DIR or RANKSCOPE_BIN)
set -u
cd "$(dirname "$0")/.."

fail() {
    echo "tui_tmux.sh: FAIL: $*" >&2
    if [ -n "${SCREEN_FILE:-}" ] && [ -f "$SCREEN_FILE" ]; then
        echo "--- screen ---" >&2
        cat "$SCREEN_FILE" >&2
    fi
    exit 1
}

# Polls the pane (up to TRIES × 0.1 s) until PATTERN is on screen; the screen is left in
# $SCREEN_FILE for the checks that follow.
wait_for_screen() { # PATTERN [TRIES]
    for _ in $(seq 1 "${2:-100}"); do
        tmux capture-pane -p -t "$SESSION" > "$SCREEN_FILE"
        grep -q "$1" "$SCREEN_FILE" && return 0
        sleep 0.1
    done
    return 1
}

# Waits up to 10 s for the command in the pane to write its exit status.
wait_for_exit() { # WHAT
    for _ in $(seq 1 100); do
        [ -s "$WORK/rc" ] && break
        sleep 0.1
    done
    [ -s "$WORK/rc" ] || fail "rankscope did not exit within 10 s of q$1"
    cat "$WORK/rc"
}

if ! command -v tmux >/dev/null 2>&1; then
    echo "tui_tmux.sh: tmux is not installed (apt-get install tmux); cannot run" >&2
    exit 1
fi

BIN="${RANKSCOPE_BIN:-${CARGO_TARGET_DIR:-target}/debug/rankscope}"
[ -x "$BIN" ] || fail "no binary at $BIN; run cargo build first"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"

SESSION="rankscope-tui-$$"
WORK="$(mktemp -d)"
SCREEN_FILE="$WORK/screen.txt"
trap 'tmux kill-session -t "$SESSION" 2>/dev/null; rm -rf "$WORK"' EXIT

# A plain shell with a known prompt, so that we can see it come back after the TUI.
tmux new-session -d -s "$SESSION" -x 120 -y 40 \
    "env -i PATH=/usr/bin:/bin HOME=$WORK TERM=xterm-256color PS1='tmuxcheck\$ ' bash --norc --noprofile" \
    || fail "tmux could not start a session"
tmux send-keys -t "$SESSION" "cd '$PWD' && '$BIN' tui samples/tp8-custom-ar; echo \$? > '$WORK/rc'" Enter

# Wait for the last rank row to be drawn.
wait_for_screen '^TP7' || true

for r in 0 1 2 3 4 5 6 7; do
    grep -q "^TP$r " "$SCREEN_FILE" || fail "rank row TP$r not on screen"
done
for p in launch dist_init weight_load kv_cache cuda_graph ready; do
    grep -q "$p" "$SCREEN_FILE" || fail "phase $p not in the legend"
done
grep -q '✗oom' "$SCREEN_FILE" || fail "OOM marker ✗oom not on screen"
[ "$(tmux display -p -t "$SESSION" '#{alternate_on}')" = 1 ] \
    || fail "the TUI did not switch to the alternate screen"

# The Memory view draws the selected rank's snapshot: peak, OOM and its sites.
tmux send-keys -t "$SESSION" Tab
wait_for_screen 'init_custom_ar' 50 || true
grep -q 'TP0 snapshot' "$SCREEN_FILE" || fail "no snapshot chart in the Memory view"
grep -q '▲ peak' "$SCREEN_FILE" || fail "no peak mark in the Memory view"
grep -q '✗oom at' "$SCREEN_FILE" || fail "no OOM mark in the Memory view"
grep -q 'init_custom_ar' "$SCREEN_FILE" || fail "init_custom_ar not among the sites"

tmux send-keys -t "$SESSION" q
rc="$(wait_for_exit "")" || exit 1
[ "$rc" = 0 ] || fail "rankscope exited with status $rc"

sleep 0.2
tmux capture-pane -p -t "$SESSION" > "$SCREEN_FILE"
[ "$(tmux display -p -t "$SESSION" '#{alternate_on}')" = 0 ] \
    || fail "the alternate screen is still on after exit"
grep -q '✗oom' "$SCREEN_FILE" && fail "TUI content still on the normal screen"
grep -q 'tmuxcheck\$' "$SCREEN_FILE" || fail "shell prompt not back"
# A terminal left in raw mode would not echo what we type.
tmux send-keys -t "$SESSION" "echo still-cooked" Enter
sleep 0.3
tmux capture-pane -p -t "$SESSION" > "$SCREEN_FILE"
grep -q '^still-cooked' "$SCREEN_FILE" || fail "terminal not back in cooked mode"

# A run that cannot be read: the reason on screen, q quits with status 2.
rm -f "$WORK/rc"
tmux send-keys -t "$SESSION" "'$BIN' tui '$WORK/no-such-run'; echo \$? > '$WORK/rc'" Enter
wait_for_screen 'could not load the run' || fail "load error not shown on screen"
grep -q 'no-such-run' "$SCREEN_FILE" || fail "load error does not name the path"
tmux send-keys -t "$SESSION" q
rc="$(wait_for_exit " on the error screen")" || exit 1
[ "$rc" = 2 ] || fail "a load error exited with status $rc, not 2"

echo "tui_tmux.sh: ok (8 rank rows, phase legend, ✗oom, exit 0, normal screen restored; memory chart with peak, OOM and sites; load error exits 2)"
