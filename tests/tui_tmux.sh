#!/usr/bin/env bash
# End-to-end check of `rankscope tui` in a real terminal: tmux runs it at 120x40, we read
# the screen, quit with `q`, and check the exit status and that the shell got its normal
# screen back (no alternate screen left behind, no raw mode); then at 80x24 and 200x50
# against a baseline, the failure, the culprit site and the config change in each view.
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

# Polls the pane (up to TRIES × 0.1 s) until PATTERN (a basic regex) is on screen; the
# screen is left in $SCREEN_FILE. Each check of a screen waits for its own line: a capture
# can catch a frame half drawn (CI, 2026-12-07: `▶ init_custom_ar (model_run` and the
# rest of the screen blank), so a line found on one capture says nothing of the lines
# drawn after it.
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
# A server of our own (its own socket): no other tmux on the machine is touched or reused.
tmux() { command tmux -L "$SESSION" "$@"; }
trap 'tmux kill-server 2>/dev/null; rm -rf "$WORK"' EXIT
# A session started just after the last one was killed can reach the old server while it
# exits ("server exited unexpectedly"): try again, a few times.
new_session() {
    local try
    for try in 1 2 3 4 5; do
        tmux new-session "$@" && return 0
        sleep 0.5
    done
    return 1
}

# A plain shell with a known prompt, so that we can see it come back after the TUI.
new_session -d -s "$SESSION" -x 120 -y 40 \
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

# The Memory view draws the selected rank's snapshot (the root's, TP2, which the TUI
# opens on): peak, OOM and its sites.
tmux send-keys -t "$SESSION" Tab
wait_for_screen 'init_custom_ar' 50 || true
grep -q 'TP2 snapshot' "$SCREEN_FILE" || fail "no snapshot chart of the root TP2 in the Memory view"
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

# A run that cannot be read: the reason on screen, q quits with status 2, and the reason
# is printed again on stderr once the normal screen is back (the alternate screen took
# it away with it).
rm -f "$WORK/rc"
tmux send-keys -t "$SESSION" "clear; '$BIN' tui '$WORK/no-such-run'; echo \$? > '$WORK/rc'" Enter
wait_for_screen 'could not load the run' || fail "load error not shown on screen"
grep -q 'no-such-run' "$SCREEN_FILE" || fail "load error does not name the path"
tmux send-keys -t "$SESSION" q
rc="$(wait_for_exit " on the error screen")" || exit 1
[ "$rc" = 2 ] || fail "a load error exited with status $rc, not 2"
sleep 0.2
tmux capture-pane -p -t "$SESSION" > "$SCREEN_FILE"
grep -q '^rankscope: .*no-such-run' "$SCREEN_FILE" \
    || fail "the load error is not on the normal screen (stderr) after q"

# On a terminal, `--help` and `summary` are coloured (xterm-256color), and TERM=dumb turns
# the colour off for both (clap's help kept it under TERM=dumb). capture-pane -e keeps
# the escape sequences; the ESC byte is what is counted.
colour_count() { # COMMAND...
    rm -f "$WORK/rc"
    tmux send-keys -t "$SESSION" "clear; $*; echo \$? > '$WORK/rc'" Enter
    wait_for_exit " from $*" >/dev/null
    sleep 0.2
    tmux capture-pane -e -p -t "$SESSION" | tr -cd '\033' | wc -c
}
[ "$(colour_count "'$BIN' --help")" -gt 0 ] \
    || fail "--help on a terminal is not coloured (the check cannot see colour)"
[ "$(colour_count "TERM=dumb '$BIN' --help")" = 0 ] || fail "TERM=dumb: --help is coloured"
[ "$(colour_count "'$BIN' summary samples/tp2-nccl-fail")" -gt 0 ] \
    || fail "summary on a terminal is not coloured"
[ "$(colour_count "TERM=dumb '$BIN' summary samples/tp2-nccl-fail")" = 0 ] \
    || fail "TERM=dumb: summary is coloured"
tmux kill-session -t "$SESSION"

# The first screens that matter at the smallest and a large terminal: the run against
# its baseline (`--vs`), each view checked for what the samples say. tp8-custom-ar's
# server_args turn enable_custom_allreduce on (off in tp8-baseline); its snapshots blame
# the 40 MiB that init_custom_ar reserves; every rank's OOM line asks 20.00 MiB in
# cuda_graph, and TP0's snapshot records that request in capture_graphs at 11.3 s.
views_at() { # WIDTH HEIGHT
    local w=$1 h=$2
    new_session -d -s "$SESSION" -x "$w" -y "$h" \
        "env -i PATH=/usr/bin:/bin HOME=$WORK TERM=xterm-256color PS1='tmuxcheck\$ ' bash --norc --noprofile" \
        || fail "tmux could not start a ${w}x${h} session"
    rm -f "$WORK/rc"
    tmux send-keys -t "$SESSION" "cd '$PWD' && '$BIN' tui samples/tp8-custom-ar --vs samples/tp8-baseline; echo \$? > '$WORK/rc'" Enter
    wait_for_screen '^TP7 ' || fail "${w}x${h}: timeline not drawn"
    wait_for_screen 'TP2: cuda_graph   ✗oom at 11s' 50 \
        || fail "${w}x${h}: the root TP2's failure not in the timeline footer"
    wait_for_screen '^◀ \+11s oom \+torch.OutOfMemoryError' 50 \
        || fail "${w}x${h}: the root's oom line is not marked in the timeline footer"

    tmux send-keys -t "$SESSION" Tab
    wait_for_screen 'init_custom_ar' 50 || fail "${w}x${h}: Memory view without the culprit site"
    wait_for_screen '^▶ init_custom_ar (model_runner.py:85-87)' 50 \
        || fail "${w}x${h}: init_custom_ar not marked as the diff's culprit"
    wait_for_screen '✗oom at 11.3s: asked 20.00 MiB in capture_graphs (model_runner.py)' 50 \
        || fail "${w}x${h}: the snapshot's OOM is missing or cut in the Memory view"

    tmux send-keys -t "$SESSION" Tab
    wait_for_screen '^config' 50 || fail "${w}x${h}: Diff view without its config line"
    wait_for_screen '^config    enable_custom_allreduce  False -> True' 50 \
        || fail "${w}x${h}: the config change is not in the Diff view"
    wait_for_screen 'init_custom_ar (model_runner.py:85-87)' 50 \
        || fail "${w}x${h}: the attribution to init_custom_ar is not in the Diff view"
    wait_for_screen '^candidate 8/8 ranks: oom in cuda_graph, tried to allocate 20.00 MiB' 50 \
        || fail "${w}x${h}: the failure line is not in the Diff view"

    # Ctrl-L draws the same screen again after something scribbled over it.
    tmux send-keys -t "$SESSION" C-l
    sleep 0.3
    wait_for_screen '^config    enable_custom_allreduce' 20 || fail "${w}x${h}: Ctrl-L lost the screen"

    tmux send-keys -t "$SESSION" q
    rc="$(wait_for_exit " (${w}x${h})")" || exit 1
    [ "$rc" = 0 ] || fail "${w}x${h}: rankscope exited with status $rc"
    tmux kill-session -t "$SESSION"
}
views_at 80 24
views_at 200 50

echo "tui_tmux.sh: ok (8 rank rows, phase legend, ✗oom, exit 0, normal screen restored; memory chart with peak, OOM and sites; load error exits 2 and is on stderr; at 80x24 and 200x50 with --vs: oom line, culprit site, OOM, config change, attribution, failure line, Ctrl-L)"
