//! The one function that changes the TUI's state: [`update`] applies a message (a key,
//! a resize) to the [`App`].

use super::analysed::BAND_LABEL_W;
use super::{App, ScrollRoom, ScrollRooms, View};

/// What a key, a mouse event or a resize asks of the app.
#[derive(Clone, Debug, PartialEq)]
pub enum Msg {
    /// The terminal's new size: columns, rows.
    Resize(u16, u16),
    /// Leave (q, Ctrl-C).
    Quit,
    /// Esc: closes the innermost overlay (help, search, detail); never quits, as q does.
    Back,
    /// `!`: the Events view on the root failure's line, its rank selected.
    GoRoot,
    /// The next view (Tab).
    NextView,
    /// The previous view (Shift-Tab).
    PrevView,
    /// Columns to move the time cursor (negative: left).
    MoveTime(i32),
    /// The time cursor to the run's start.
    TimeHome,
    /// The time cursor to the run's end.
    TimeEnd,
    /// Fewer seconds per column.
    ZoomIn,
    /// More seconds per column.
    ZoomOut,
    /// The whole run in the plot's width.
    FitWidth,
    /// Ctrl-L: clear the terminal and draw everything again (after another program wrote
    /// over the screen).
    Redraw,
    /// Rows to move (negative: up): ranks in most views, events in the event list.
    Move(i32),
    /// Pages to scroll the event detail pane (negative: up).
    ScrollDetail(i32),
    /// Lines to scroll the event detail pane (negative: up).
    ScrollDetailLines(i32),
    /// Pages to scroll the Diff view (negative: up).
    ScrollDiff(i32),
    /// Show or hide the help.
    ToggleHelp,
    /// Timeline: one row per rank, or one row per phase across all ranks.
    ToggleAggregate,
    /// Show or hide the Events view's detail pane.
    ToggleDetail,
    /// Events: only the selected rank's, or every rank's.
    ToggleRankFilter,
    /// Events: all, phase edges and failures, or problems only.
    CycleKindFilter,
    /// Start typing a search.
    SearchStart,
    /// A character of the search.
    SearchChar(char),
    /// Delete the search's last character.
    SearchBackspace,
    /// Search for what was typed.
    SearchSubmit,
    /// The next event that matches the search.
    NextMatch,
    /// The previous event that matches the search.
    PrevMatch,
}

fn scroll_detail(app: &mut App, by: i64) {
    let to = i64::from(app.detail_scroll) + by;
    app.detail_scroll = to.clamp(0, i64::from(app.rooms.detail.max)) as u16;
}

/// Takes the scroll room measured for the state `update` left, and keeps both panes
/// within their text: a taller pane may show the whole text, and a long PgDn run then
/// needs no long PgUp run back.
pub fn settle(app: &mut App, rooms: ScrollRooms) {
    app.rooms = rooms;
    app.detail_scroll = app.detail_scroll.min(rooms.detail.max);
    app.diff_scroll = app.diff_scroll.min(rooms.diff.max);
}

/// Applies one message to the app's state (drawing is separate).
pub fn update(app: &mut App, msg: Msg) {
    // A status message answers the key before it; the next key replaces it.
    if !matches!(msg, Msg::Resize(..) | Msg::Redraw) {
        app.status.clear();
    }
    match msg {
        Msg::Resize(w, h) => {
            app.relayout(|app| {
                app.width = w;
                app.height = h;
            });
        }
        Msg::Quit => app.quit = true,
        Msg::Back => close_innermost(app),
        Msg::GoRoot => {
            if !app.go_root() {
                app.status = "no rank failed on its own in this run".into();
            }
        }
        Msg::NextView => switch_view(app, true),
        Msg::PrevView => switch_view(app, false),
        Msg::MoveTime(cols) => {
            app.cursor_s = (app.cursor_s + f64::from(cols) * app.scale).clamp(0.0, app.span_s);
            app.clamp_offset();
        }
        Msg::TimeHome => {
            app.cursor_s = 0.0;
            app.clamp_offset();
        }
        Msg::TimeEnd => {
            app.cursor_s = app.span_s;
            app.clamp_offset();
        }
        Msg::ZoomIn => app.zoom(0.5),
        Msg::ZoomOut => app.zoom(2.0),
        Msg::FitWidth => app.fit(),
        Msg::Redraw => app.redraw = true,
        Msg::Move(by) => app.move_rows(by),
        Msg::ScrollDetail(pages) => {
            let page = app.rooms.detail.page;
            scroll_detail(app, i64::from(pages) * i64::from(page.max(1)));
        }
        Msg::ScrollDetailLines(lines) => scroll_detail(app, i64::from(lines)),
        Msg::ScrollDiff(pages) => {
            let ScrollRoom { page, max } = app.rooms.diff;
            let to = i64::from(app.diff_scroll) + i64::from(pages) * i64::from(page.max(1));
            app.diff_scroll = to.clamp(0, i64::from(max)) as u16;
        }
        Msg::ToggleHelp => app.help = !app.help,
        Msg::ToggleAggregate => toggle_aggregate(app),
        Msg::ToggleDetail => {
            app.detail = !app.detail;
            app.detail_scroll = 0;
        }
        Msg::ToggleRankFilter => {
            app.rank_filter = !app.rank_filter;
            app.event_sel = 0;
            app.detail_scroll = 0;
        }
        Msg::CycleKindFilter => {
            app.kind_filter = app.kind_filter.next();
            app.event_sel = 0;
            app.detail_scroll = 0;
        }
        Msg::SearchStart
        | Msg::SearchChar(_)
        | Msg::SearchBackspace
        | Msg::SearchSubmit
        | Msg::NextMatch
        | Msg::PrevMatch => search(app, msg),
    }
}

/// Esc: closes the innermost overlay (help, then the search being typed, then the detail
/// pane).
fn close_innermost(app: &mut App) {
    if app.help {
        app.help = false;
    } else if app.search_input.is_some() {
        app.search_input = None;
    } else if app.detail {
        app.detail = false;
    } else {
        // A second Esc used to quit; Esc is "back", and nothing is open.
        app.status = "nothing to close: q quits".into();
    }
}

/// Tab / Shift-Tab: the next (or previous) of the views this run has.
fn switch_view(app: &mut App, forward: bool) {
    let views = app.views();
    let i = views.iter().position(|v| *v == app.view).unwrap_or(0);
    let n = views.len();
    let j = if forward {
        (i + 1) % n
    } else {
        (i + n - 1) % n
    };
    app.view = views[j];
    // The Events view opens on the root failure, the line the run's story starts
    // from, the first time it is shown.
    if app.view == View::Events && !app.events_seen {
        app.events_seen = true;
        // Unless the user chose a rank already: its events are what was asked for.
        if !app.rank_chosen {
            app.go_root();
        }
    }
}

/// `a`: the Timeline's rows become one per phase (or one per rank again); the label
/// column widens to fit the phase names.
fn toggle_aggregate(app: &mut App) {
    app.relayout(|app| {
        app.aggregate = !app.aggregate;
        app.label_w = if app.aggregate {
            app.rank_label_w.max(BAND_LABEL_W)
        } else {
            app.rank_label_w
        };
    });
}

/// The search messages: typing a search in the Events view, and jumping between its
/// matches. Other messages are left alone.
fn search(app: &mut App, msg: Msg) {
    match msg {
        Msg::SearchStart => {
            app.view = View::Events;
            app.events_seen = true;
            app.search_input = Some(String::new());
        }
        Msg::SearchChar(c) => {
            if let Some(s) = app.search_input.as_mut() {
                s.push(c);
            }
        }
        Msg::SearchBackspace => {
            if let Some(s) = app.search_input.as_mut() {
                s.pop();
            }
        }
        Msg::SearchSubmit => {
            if let Some(s) = app.search_input.take() {
                app.search = s;
                app.jump_match(true, true);
            }
        }
        Msg::NextMatch => app.jump_match(true, false),
        Msg::PrevMatch => app.jump_match(false, false),
        _ => {}
    }
}
