//! Drawing: reads `App`, writes the frame. Nothing here changes state or touches I/O.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

use super::app::{failed_kinds, seconds, App, View};
use super::input::HELP;
use super::loading::Loading;
use super::widgets::memchart::MemChart;
use super::widgets::memory::{Memory, PARTS};
use super::widgets::timeline::{time_label, Timeline};
use super::widgets::{failure_style, phase_glyph, phase_style, warn_style};
use crate::analysis::diff::DeltaClass;
use crate::model::Phase;
use crate::render::diff_text::delta_text;
use crate::render::{figure_text, fit};
use crate::snapshot::render::fmt_bytes;
use crate::text::sanitize;

fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

fn dim(color: bool) -> Style {
    if color {
        Style::new().add_modifier(Modifier::DIM)
    } else {
        Style::new()
    }
}

pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let [top, body, bottom] = frame_areas(area);
    draw_tabs(f, app, top);
    match app.view {
        View::Timeline => draw_timeline(f, app, body),
        View::Memory => draw_memory(f, app, body),
        View::Diff => draw_diff(f, app, body),
        View::Events => draw_events(f, app, body),
    }
    draw_status(f, app, bottom);
    if app.help {
        draw_help(f, area);
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
    let failed = app.run.failed_ranks();
    let (state, st) = if failed > 0 {
        let kinds: Vec<_> = failed_kinds(app).into_iter().collect();
        (
            format!(
                " FAILED {failed}/{} {} ",
                app.run.worker_ranks().count(),
                kinds.join(",")
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
            _ => "↑↓ rank  Tab view  ? help  q quit",
        };
        Line::from(Span::styled(hint, dim(app.color)))
    };
    f.render_widget(Paragraph::new(line), area);
}

fn legend(app: &App) -> Line<'static> {
    let mut spans = Vec::new();
    for p in Phase::ALL {
        spans.push(Span::styled(
            format!("{}{}", phase_glyph(p), phase_glyph(p)),
            phase_style(p, app.color),
        ));
        spans.push(Span::raw(format!(" {}  ", p.name())));
    }
    if app.aggregate {
        // The aggregate rows: a phase's first end, the spread of ends, the median end.
        spans.push(Span::raw("─┃ ends first─median┃─last  "));
    } else {
        spans.push(Span::raw("┄┄ unfinished  "));
    }
    spans.push(Span::styled("✗", failure_style(app.color)));
    spans.push(Span::raw(" failure  "));
    spans.push(Span::styled("!", warn_style(app.color)));
    spans.push(Span::raw(" straggler"));
    Line::from(spans)
}

fn draw_timeline(f: &mut Frame, app: &App, area: Rect) {
    let rows = if app.aggregate {
        app.bands.len()
    } else {
        app.lanes.len()
    };
    let lanes = u16::try_from(rows).unwrap_or(u16::MAX).saturating_add(1);
    let [leg, plot, _gap, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Max(lanes),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(legend(app)), leg);
    f.render_widget(Timeline { app }, plot);
    if app.lanes.is_empty() {
        f.render_widget(Paragraph::new("no rank-tagged events in this run"), plot);
    }

    let mut lines = Vec::new();
    let clock = app
        .run
        .start
        .map(|s| {
            let t = s + chrono::Duration::milliseconds((app.cursor_s * 1000.0) as i64);
            let tenths = chrono::Timelike::nanosecond(&t) / 100_000_000;
            format!(" ({}.{tenths})", t.format("%H:%M:%S"))
        })
        .unwrap_or_default();
    let rank = app
        .selected_rank()
        .map(|r| r.to_string())
        .unwrap_or_default();
    let lane = app.lanes.get(app.rank_sel);
    let phase_now = lane
        .and_then(|l| {
            l.segments
                .iter()
                .rfind(|s| s.start <= app.cursor_s && app.cursor_s <= s.end)
        })
        .map_or("-", |s| s.phase.name());
    let mut head = vec![
        Span::styled(format!("cursor {}", time_label(app.cursor_s)), bold()),
        Span::raw(format!(
            "{clock}   {} s/column   {rank}: {phase_now}",
            fmt_scale(app.scale)
        )),
    ];
    if let Some(l) = lane {
        if let Some((k, t)) = l.failure {
            head.push(Span::styled(
                format!("   ✗{k} at {}", time_label(t)),
                failure_style(app.color),
            ));
        }
        if !l.straggler_in.is_empty() {
            let ps: Vec<_> = l.straggler_in.iter().map(|p| p.name()).collect();
            head.push(Span::styled(
                format!("   straggler in {}", ps.join(", ")),
                warn_style(app.color),
            ));
        }
    }
    lines.push(Line::from(head));
    let n = usize::from(foot.height.saturating_sub(1));
    for (t, e) in app.events_near_cursor(n) {
        let st = if matches!(e.kind.as_str(), "oom" | "error") {
            failure_style(app.color)
        } else {
            Style::new()
        };
        lines.push(Line::from(vec![
            Span::raw(format!("{:>7} ", time_label(t))),
            Span::styled(fit(&sanitize(&e.kind), 18), st),
            Span::raw(sanitize(&e.message)),
        ]));
    }
    f.render_widget(Paragraph::new(lines), foot);
}

fn fmt_scale(s: f64) -> String {
    if s >= 10.0 {
        format!("{s:.0}")
    } else if s >= 0.1 {
        format!("{s:.2}")
    } else {
        format!("{s:.3}")
    }
}

fn draw_memory(f: &mut Frame, app: &App, area: Rect) {
    let rows = app.run.ranks.len() as u16 + 1;
    let title = Rect {
        height: area.height.min(1),
        ..area
    };
    let mut y = title.bottom();
    let left = |y: u16| area.bottom().saturating_sub(y);
    // With snapshots the chart needs room more than the table needs every rank at once:
    // the table scrolls to follow the selection instead.
    let (chart_min, sites_h) = if app.has_snapshots() {
        let n = app.selected_snap().map_or(0, |s| s.sites.len()) as u16;
        let sites_h = if area.height >= 30 {
            n.min(5)
        } else {
            n.min(3)
        };
        (7, if n > 0 { sites_h + 1 } else { 1 })
    } else {
        (0, 0)
    };
    let gap = u16::from(!app.has_snapshots());
    let table_h = rows.min(left(y).saturating_sub(1 + gap + chart_min + sites_h).max(2));
    let table = Rect {
        y,
        height: table_h.min(left(y)),
        ..area
    };
    y = table.bottom().saturating_add(gap).min(area.bottom());
    let leg = Rect {
        y,
        height: left(y).min(1),
        ..area
    };
    y = leg.bottom();
    f.render_widget(
        Paragraph::new(Line::styled(
            "GPU memory per rank, as the log reports it after each phase",
            bold(),
        )),
        title,
    );
    f.render_widget(Memory { app }, table);
    let mut spans = Vec::new();
    for (p, _, label) in PARTS {
        let g = if p == Phase::Ready {
            '·'
        } else {
            phase_glyph(p)
        };
        spans.push(Span::styled(format!("{g}{g}"), phase_style(p, app.color)));
        spans.push(Span::raw(format!(" {label}  ")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), leg);
    if app.has_snapshots() {
        let chart_h = left(y).saturating_sub(sites_h).min(18);
        let chart = Rect {
            y,
            height: chart_h,
            ..area
        };
        y = chart.bottom();
        f.render_widget(MemChart { app }, chart);
        let sites = Rect {
            y,
            height: left(y).min(sites_h),
            ..area
        };
        y = sites.bottom();
        draw_sites(f, app, sites);
        if !app.snap_errors.is_empty() {
            let note = Rect {
                y,
                height: left(y),
                ..area
            };
            let text: Vec<Line> = app
                .snap_errors
                .iter()
                .map(|e| Line::styled(sanitize(e), warn_style(app.color)))
                .collect();
            f.render_widget(Paragraph::new(text), note);
        }
        return;
    }
    let note = Rect {
        y,
        height: left(y),
        ..area
    };
    let text = "init: dist_init mem usage · weights: weight_load mem usage · kv: KV cache size · \
graph: cuda_graph mem usage · free: last reported available memory";
    let mut lines = vec![Line::styled(text, dim(app.color))];
    // Snapshots that were there but could not be used say so, or their absence would
    // look like a run recorded without them.
    for e in &app.snap_errors {
        lines.push(Line::styled(sanitize(e), warn_style(app.color)));
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), note);
}

/// The selected rank's largest allocation sites, live at the end of its snapshot.
fn draw_sites(f: &mut Frame, app: &App, area: Rect) {
    let Some(s) = app.selected_snap() else {
        return;
    };
    let mut lines = vec![Line::styled(
        format!(
            "{}{:>12}{:>12}   {}",
            fit("allocation site (live at the end of the snapshot)", 52),
            "allocated",
            "reserved",
            sanitize(&s.path)
        ),
        bold(),
    )];
    if s.sites.is_empty() {
        lines.push(Line::from("no live allocations"));
    }
    for site in &s.sites {
        lines.push(Line::from(format!(
            "{}{:>12}{:>12}",
            fit(&sanitize(&site.label), 52),
            fmt_bytes(site.allocated),
            fmt_bytes(site.reserved)
        )));
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// A table column; width 0 leaves it out.
fn col(s: &str, width: usize) -> String {
    if width == 0 {
        String::new()
    } else {
        fit(s, width)
    }
}

fn draw_diff(f: &mut Frame, app: &App, area: Rect) {
    let Some(d) = &app.diff else {
        f.render_widget(
            Paragraph::new("no baseline: start with --vs BASELINE"),
            area,
        );
        return;
    };
    let c = app.color;
    let mut lines: Vec<Line> = Vec::new();
    let status_st = match d.status {
        crate::analysis::diff::Status::Failed => failure_style(c),
        crate::analysis::diff::Status::Regressed => warn_style(c),
        _ => bold(),
    };
    lines.push(Line::from(vec![
        Span::styled(format!(" {} ", d.status.label()), status_st),
        Span::raw(format!("  {}", sanitize(&d.headline))),
    ]));
    if let Some(div) = &d.first_divergence {
        let fd = d
            .figures
            .iter()
            .find(|x| x.phase == div.phase && x.figure == div.figure);
        let delta = fd.map_or(String::new(), |fd| delta_text(fd, div.delta.median));
        lines.push(Line::from(vec![
            Span::styled("first divergence ", bold()),
            Span::styled(
                format!(
                    "{} {} {} on {}/{} ranks ({})",
                    div.phase,
                    div.figure.replace('_', " "),
                    delta,
                    div.ranks_moved,
                    div.ranks_compared,
                    div.class.name()
                ),
                warn_style(c),
            ),
        ]));
    } else {
        lines.push(Line::from("first divergence: none beyond noise"));
    }
    for g in &d.candidate.groups {
        lines.push(Line::from(vec![
            Span::styled("candidate failed ", bold()),
            Span::styled(sanitize(&g.describe()), failure_style(c)),
        ]));
    }
    if let Some((r, k, p)) = &d.candidate.first_failure {
        lines.push(Line::from(format!(
            "root             {r} ({} in {p})",
            k.name()
        )));
    }
    lines.push(Line::from(""));
    let rank = app.selected_rank();
    let rank_name = rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into());
    // Narrow terminals keep the all-ranks delta but drop the medians and the rank count,
    // so that the selected rank's figures fit.
    let w: [usize; 6] = if area.width < 110 {
        [12, 13, 0, 0, 10, 0]
    } else {
        [12, 14, 11, 11, 20, 16]
    };
    lines.push(Line::styled(
        format!(
            "{}{}{}{}{}{}│ {rank_name} (↑↓): delta  base → cand",
            col("phase", w[0]),
            col("figure", w[1]),
            col("baseline", w[2]),
            col("candidate", w[3]),
            col("delta", w[4]),
            col("ranks", w[5]),
        ),
        bold(),
    ));
    for fd in &d.figures {
        let delta = if fd.delta.min == fd.delta.max {
            delta_text(fd, fd.delta.median)
        } else {
            format!(
                "{}..{}",
                delta_text(fd, fd.delta.min),
                delta_text(fd, fd.delta.max)
            )
        };
        let ranks = if fd.class == DeltaClass::Same {
            "-".to_string()
        } else {
            format!(
                "{}/{} {}",
                fd.ranks_moved,
                fd.ranks_compared,
                fd.class.name()
            )
        };
        let row_st = if fd.class.is_signal() {
            if fd.worse {
                warn_style(c)
            } else {
                bold()
            }
        } else {
            Style::new()
        };
        let mut spans = vec![
            Span::raw(col(fd.phase.name(), w[0])),
            Span::raw(col(&fd.figure.replace('_', " "), w[1])),
            Span::raw(col(
                &figure_text(fd.baseline_median, fd.is_bytes, fd.resolution),
                w[2],
            )),
            Span::raw(col(
                &figure_text(fd.candidate_median, fd.is_bytes, fd.resolution),
                w[3],
            )),
            Span::styled(col(&delta, w[4]), row_st),
            Span::raw(col(&ranks, w[5])),
            Span::raw("│ "),
        ];
        match fd.per_rank.iter().find(|r| Some(&r.rank) == rank) {
            Some(r) => {
                let st = if r.beyond_noise { row_st } else { dim(c) };
                spans.push(Span::styled(col(&delta_text(fd, r.delta), 10), st));
                spans.push(Span::raw(format!(
                    "{} → {}",
                    figure_text(r.baseline, fd.is_bytes, fd.resolution),
                    figure_text(r.candidate, fd.is_bytes, fd.resolution)
                )));
            }
            None => spans.push(Span::raw("-")),
        }
        lines.push(Line::from(spans));
    }
    if !d.comparability.notes.is_empty() {
        lines.push(Line::from(""));
        for n in &d.comparability.notes {
            lines.push(Line::styled(sanitize(n), dim(c)));
        }
    }
    f.render_widget(Paragraph::new(lines), area);
}

fn draw_events(f: &mut Frame, app: &App, area: Rect) {
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

/// The top bar, the view and the status line.
fn frame_areas(area: Rect) -> [Rect; 3] {
    Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area)
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

/// Rows the detail pane shows at once and the furthest it can scroll, for the app's
/// terminal size; `update` clamps with it so that a long PgDn run needs no long PgUp run.
pub fn detail_scroll_room(app: &App) -> (u16, u16) {
    if !app.detail {
        return (0, 0);
    }
    let [_, body, _] = frame_areas(Rect::new(0, 0, app.width, app.height));
    let [_, rest] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(body);
    let Some(da) = split_events(app, rest).1 else {
        return (0, 0);
    };
    let inner = Block::bordered().inner(da);
    let n = detail_lines(app, inner.width).len();
    let max = n.saturating_sub(usize::from(inner.height));
    (inner.height, u16::try_from(max).unwrap_or(u16::MAX))
}

/// Breaks a line to `width` columns, at a space when there is one, so that the pane can
/// count its rows and scroll by them exactly.
fn wrap_line(s: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if width == 0 || chars.len() <= width {
        return vec![s.to_string()];
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let mut end = (i + width).min(chars.len());
        if end < chars.len() && chars[end] != ' ' {
            if let Some(sp) = chars[i..end].iter().rposition(|&c| c == ' ') {
                if sp > 0 {
                    end = i + sp + 1;
                }
            }
        }
        out.push(chars[i..end].iter().collect());
        i = end;
        // The space a line broke at is the break, not the next line's indent.
        if i < chars.len() && chars[i] == ' ' {
            i += 1;
        }
    }
    out
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
    let tb = e.detail.as_deref().or_else(|| {
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
            crate::event::FieldValue::Bytes { bytes, .. } => crate::units::human_bytes(*bytes),
            crate::event::FieldValue::Int(i) => i.to_string(),
            crate::event::FieldValue::Float(x) => x.to_string(),
            crate::event::FieldValue::Text(t) => sanitize(t),
        };
        push(&format!("  {k} = {vt}"), dim(app.color));
    }
    lines
}

fn draw_help(f: &mut Frame, area: Rect) {
    let w = 78.min(area.width);
    let h = (HELP.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    let lines: Vec<Line> = HELP
        .iter()
        .map(|(k, v)| {
            Line::from(vec![
                Span::styled(fit(k, 18), bold()),
                Span::raw(v.to_string()),
            ])
        })
        .collect();
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" keys (? or Esc closes) ")),
        r,
    );
}

const SPINNER: [char; 8] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧'];

/// What shows while the worker reads the run: the path, the stage, the bytes read (a bar
/// when the total is known, a spinner otherwise), or the error once it failed.
pub fn draw_loading(f: &mut Frame, s: &Loading, color: bool) {
    let area = f.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let w = area.width.min(72);
    let mut lines = vec![
        Line::styled(format!("rankscope tui  {}", sanitize(&s.what)), bold()),
        Line::from(""),
    ];
    match &s.error {
        Some(e) => {
            lines.push(Line::styled("could not load the run", failure_style(color)));
            for part in wrap_line(&sanitize(e), usize::from(w)) {
                lines.push(Line::from(part));
            }
            lines.push(Line::from(""));
            lines.push(Line::styled("q quit", dim(color)));
        }
        None => {
            let spin = SPINNER[s.tick % SPINNER.len()];
            lines.push(Line::from(format!("{spin} {}", sanitize(&s.stage))));
            let read = crate::units::human_bytes(i64::try_from(s.bytes).unwrap_or(i64::MAX));
            match s.total {
                Some(t) if t > 0 => {
                    let frac = (s.bytes as f64 / t as f64).clamp(0.0, 1.0);
                    let bar_w = usize::from(w.saturating_sub(8)).max(1);
                    let full = (frac * bar_w as f64).round() as usize;
                    lines.push(Line::from(format!(
                        "{}{} {:>3.0}%",
                        "█".repeat(full),
                        "░".repeat(bar_w - full.min(bar_w)),
                        frac * 100.0
                    )));
                    lines.push(Line::from(format!(
                        "{read} of {} of logs read",
                        crate::units::human_bytes(i64::try_from(t).unwrap_or(i64::MAX))
                    )));
                }
                _ => lines.push(Line::from(format!("{read} of logs read"))),
            }
            lines.push(Line::from(""));
            lines.push(Line::styled("q quit", dim(color)));
        }
    }
    let h = (lines.len() as u16).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Paragraph::new(lines), r);
}
