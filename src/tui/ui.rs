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
use crate::text::sanitize;

pub fn draw(f: &mut Frame, app: &App) {
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
    let failed = app.analysed.report.outcome.failed_ranks;
    let (state, st) = if failed > 0 {
        (
            format!(
                " FAILED {failed}/{} {} ",
                app.analysed.report.outcome.ranks,
                app.analysed.failed_kinds.join(",")
            ),
            failure_style(app.color),
        )
    } else if app.run.ready {
        (" READY ".to_string(), bold())
    } else {
        // The log ends before ready and nothing says why.
        (" INCOMPLETE ".to_string(), warn_style(app.color))
    };
    spans.push(Span::styled(state, st));
    spans.push(Span::raw(format!(" {}", sanitize(&app.run.name))));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
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
        Line::from(Span::styled(hint, dim(app.color)))
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The top bar, the view and the status line.
pub fn frame_areas(area: Rect) -> [Rect; 3] {
    Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area)
}

/// How far the detail pane and the Diff view can scroll, for the app's terminal size:
/// what `app::settle` keeps the panes within.
pub fn scroll_rooms(app: &App) -> ScrollRooms {
    let [_, body, _] = frame_areas(Rect::new(0, 0, app.width, app.height));
    ScrollRooms {
        detail: views::events::scroll_room(app, body),
        diff: views::diff::scroll_room(app, body),
    }
}
