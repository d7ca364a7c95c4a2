//! The frame: the tab bar, the view's area and the status line, and which view draws
//! into it. The views are in `views/`, one file each. Nothing here changes state or
//! touches I/O.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::app::{App, ScrollRooms, View};
use super::views;
use super::widgets::{bold, dim, failure_style, warn_style};
use crate::base::text::sanitize;

pub(crate) fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let [top, body, bottom] = frame_areas(area);
    draw_tabs(f, app, top);
    match app.view {
        View::Timeline => views::timeline::draw(f, app, body),
        View::Memory => views::memory::draw(f, app, body),
        View::Diff => views::diff::draw(f, app, body),
        View::Events => views::events::draw(f, app, body),
    }
    draw_status(f, app, bottom);
    if app.help {
        views::help::draw(f, area);
    }
}

fn draw_tabs(f: &mut Frame, app: &App, area: Rect) {
    let mut spans = Vec::new();
    for v in app.views() {
        let st = if v == app.view {
            bold().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
        };
        spans.push(Span::styled(format!(" {} ", v.name()), st));
        spans.push(Span::raw("│"));
    }
    let out = &app.analysed.report.outcome;
    let (state, verdict, st) = if out.failed() {
        (
            " FAILED ",
            crate::render::text::outcome::failure_story(&out.story),
            failure_style(app.color),
        )
    } else if app.run.ready {
        (" READY ", String::new(), bold())
    } else {
        // The log ends before ready and nothing says why.
        (
            " INCOMPLETE ",
            "the log ends before ready; nothing says why".to_string(),
            warn_style(app.color),
        )
    };
    let used: usize = spans
        .iter()
        .map(|s| crate::base::text::columns(&s.content))
        .sum::<usize>()
        + state.len();
    let (verdict, path) = header_texts(
        &sanitize(&verdict),
        &sanitize(&app.run.name),
        usize::from(area.width).saturating_sub(used),
    );
    spans.push(Span::styled(state, st));
    if !verdict.is_empty() {
        spans.push(Span::styled(
            verdict,
            st.remove_modifier(Modifier::REVERSED),
        ));
    }
    spans.push(Span::styled(format!("  {path}"), dim(app.color)));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The verdict and the run's path for `room` columns (two spaces before the path): the path keeps its informative end, shortened from the left
/// (`…/gpu2/tp2_nccl_fail`), to at most two fifths when both do not fit; the verdict is
/// cut at its end.
pub fn header_texts(verdict: &str, path: &str, room: usize) -> (String, String) {
    let (vw, pw) = (
        crate::base::text::columns(verdict),
        crate::base::text::columns(path),
    );
    let room = room.saturating_sub(2);
    if vw + pw <= room {
        return (verdict.to_string(), path.to_string());
    }
    let path_room = pw.min(room.saturating_sub(vw).max(room * 2 / 5));
    let path = crate::tui::layout::shorten_left(path, path_room);
    let verdict_room = room.saturating_sub(crate::base::text::columns(&path));
    (crate::base::text::truncate(verdict, verdict_room), path)
}

fn draw_status(f: &mut Frame, app: &App, area: Rect) {
    let line = if let Some(q) = &app.search_input {
        Line::from(vec![
            Span::styled("/", bold()),
            Span::raw(sanitize(q)),
            Span::styled("█", Style::new()),
            Span::raw("   Enter: search  Esc: cancel"),
        ])
    } else if !app.status.is_empty() {
        Line::from(Span::styled(app.status.clone(), warn_style(app.color)))
    } else {
        // A failed run's root is one key away from every view.
        let root = if app.root_rank().is_some() && !(app.view == View::Events) {
            "! root  "
        } else {
            ""
        };
        let hint = match app.view {
            View::Timeline => {
                "←→ time  +/- zoom  = fit  ↑↓ rank  Tab view  / search  ? help  q quit"
            }
            View::Events => {
                "↑↓ event  Enter detail  r rank/all  f kinds  / search  n/N match  ? help  q quit"
            }
            View::Diff => {
                let max = app.rooms.diff.max;
                if app.diff_scroll < max {
                    "↑↓ rank  PgDn more below  Tab view  ? help  q quit"
                } else if max > 0 {
                    "↑↓ rank  PgUp back to the top  Tab view  ? help  q quit"
                } else {
                    "↑↓ rank  Tab view  ? help  q quit"
                }
            }
            View::Memory => "↑↓ rank  Tab view  ? help  q quit",
        };
        Line::from(Span::styled(format!("{root}{hint}"), dim(app.color)))
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The top bar, the view and the status line.
pub(crate) fn frame_areas(area: Rect) -> [Rect; 3] {
    Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area)
}

/// How far the detail pane and the Diff view can scroll, for the app's terminal size:
/// what `app::settle` keeps the panes within.
pub(crate) fn scroll_rooms(app: &App) -> ScrollRooms {
    let [_, body, _] = frame_areas(Rect::new(0, 0, app.width, app.height));
    ScrollRooms {
        detail: views::events::scroll_room(app, body),
        diff: views::diff::scroll_room(app, body),
    }
}
