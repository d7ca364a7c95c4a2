//! The Events view: the event list, filtered by rank, kind and search, and the selected
//! event's detail pane.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, List, ListItem, ListState, Paragraph};
use ratatui::Frame;

use crate::base::text::sanitize;
use crate::render::fit;
use crate::tui::app::{seconds, App, ScrollRoom};
use crate::tui::layout::{time_label, wrap_line};
use crate::tui::widgets::{bold, dim, failure_style, warn_style};

pub(crate) fn draw(f: &mut Frame, app: &App, area: Rect) {
    let [head, rest] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let who = if app.rank_filter {
        app.selected_rank()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "-".into())
    } else {
        "all ranks".into()
    };
    let visible = app.visible_events();
    let mut spans = vec![
        Span::styled(format!("Events of {who}"), bold()),
        Span::raw(format!(
            "  {} shown  kinds: {}",
            visible.len(),
            app.kind_filter.name()
        )),
    ];
    if !app.search.is_empty() {
        spans.push(Span::raw(format!("  search: {}", sanitize(&app.search))));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), head);

    let (list_area, detail_area) = split_events(app, rest);
    let items: Vec<ListItem> = visible
        .iter()
        .filter_map(|&i| app.run.events.get(i))
        .map(|e| {
            let t = seconds(app.run.start, e.ts).map_or("-".to_string(), time_label);
            let clock =
                e.ts.map_or("-".to_string(), |t| t.format("%H:%M:%S").to_string());
            let rank = e.rank.as_ref().map_or("-".to_string(), |r| r.to_string());
            let st = if matches!(e.kind.as_str(), "oom" | "error") {
                failure_style(app.color)
            } else if e.kind == "warning" {
                warn_style(app.color)
            } else {
                Style::new()
            };
            let mark = if app.matches(e) { "»" } else { " " };
            ListItem::new(Line::from(vec![
                Span::raw(format!("{mark}{clock} {:>7} ", t)),
                Span::raw(fit(&rank, 6)),
                Span::styled(fit(&sanitize(&e.kind), 18), st),
                Span::raw(sanitize(&e.message)),
            ]))
        })
        .collect();
    let mut state = ListState::default();
    if !visible.is_empty() {
        state.select(Some(app.event_sel.min(visible.len() - 1)));
    }
    let list = List::new(items).highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    f.render_stateful_widget(list, list_area, &mut state);

    if let Some(da) = detail_area {
        let inner = Block::bordered().inner(da);
        let lines = detail_lines(app, inner.width);
        let max = lines.len().saturating_sub(usize::from(inner.height));
        let top = usize::from(app.detail_scroll).min(max);
        let mut title = " detail (Enter/Esc closes".to_string();
        if max > 0 {
            let last = (top + usize::from(inner.height)).min(lines.len());
            title.push_str(&format!(
                ", PgUp/PgDn J/K scroll) lines {}-{last} of {} ",
                top + 1,
                lines.len()
            ));
        } else {
            title.push_str(") ");
        }
        f.render_widget(
            Paragraph::new(lines)
                .block(Block::bordered().title(title))
                .scroll((u16::try_from(top).unwrap_or(u16::MAX), 0)),
            da,
        );
    }
}

/// The event list and, when open, the detail pane below it.
fn split_events(app: &App, rest: Rect) -> (Rect, Option<Rect>) {
    if app.detail {
        let [a, b] = Layout::vertical([Constraint::Percentage(35), Constraint::Min(0)]).areas(rest);
        (a, Some(b))
    } else {
        (rest, None)
    }
}

/// Rows the detail pane shows at once and the furthest it can scroll, in the view's area.
pub(crate) fn scroll_room(app: &App, body: Rect) -> ScrollRoom {
    if !app.detail {
        return ScrollRoom::default();
    }
    let [_, rest] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(body);
    let Some(da) = split_events(app, rest).1 else {
        return ScrollRoom::default();
    };
    let inner = Block::bordered().inner(da);
    let n = detail_lines(app, inner.width).len();
    let max = n.saturating_sub(usize::from(inner.height));
    ScrollRoom {
        page: inner.height,
        max: u16::try_from(max).unwrap_or(u16::MAX),
    }
}

/// The selected event: where it came from, its message, traceback and fields.
fn detail_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let w = usize::from(width);
    let mut lines = Vec::new();
    let Some(e) = app.selected_event() else {
        lines.push(Line::from("no event selected"));
        return lines;
    };
    lines.push(Line::from(vec![
        Span::styled(
            format!(
                "{}:{}",
                sanitize(app.run.source_name(&e.origin)),
                e.origin.line
            ),
            bold(),
        ),
        Span::raw(format!(
            "  {} ({})",
            sanitize(&e.kind),
            sanitize(&e.grammar)
        )),
    ]));
    let mut push = |text: &str, st: Style| {
        for part in wrap_line(text, w) {
            lines.push(Line::styled(part, st));
        }
    };
    push(&sanitize(&e.message), Style::new());
    // An OOM line often carries no traceback of its own; the failure it produced keeps
    // the one printed before it.
    let tb = e.detail().or_else(|| {
        app.run
            .ranks
            .iter()
            .filter_map(|r| r.failure.as_ref())
            .find(|f| f.origin.as_ref() == Some(&e.origin))
            .and_then(|f| f.traceback.as_deref())
    });
    if let Some(d) = tb {
        for l in d.lines() {
            push(&sanitize(l), Style::new());
        }
    }
    for (k, v) in &e.fields {
        let vt = match v {
            crate::base::event::FieldValue::Bytes { bytes, .. } => {
                crate::base::units::human_bytes(*bytes)
            }
            crate::base::event::FieldValue::Int(i) => i.to_string(),
            crate::base::event::FieldValue::Float(x) => x.to_string(),
            crate::base::event::FieldValue::Text(t) => sanitize(t),
        };
        push(&format!("  {k} = {vt}"), dim(app.color));
    }
    lines
}
