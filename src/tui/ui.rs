//! Drawing: reads `App`, writes the frame. Nothing here changes state or touches I/O.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

use super::app::{failed_kinds, seconds, App, View};
use super::input::HELP;
use super::loading::Loading;
use super::widgets::memchart::{self, MemChart};
use super::widgets::memory::{Memory, PARTS};
use super::widgets::timeline::{time_label, Timeline};
use super::widgets::{failure_style, phase_glyph, phase_style, warn_style};
use crate::analysis::diff::DeltaClass;
use crate::model::Phase;
use crate::render::diff_text::delta_text;
use crate::render::mem_text::fmt_bytes;
use crate::render::{figure_text, fit};
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
            View::Diff => {
                let (_, max) = diff_scroll_room(app);
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

/// Lays out items left to right with two spaces between, starting a new line where the
/// next one would not fit: a legend wraps rather than losing its last entries.
pub fn flow(items: Vec<Vec<Span<'static>>>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width);
    let mut lines = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for item in items {
        let w: usize = item.iter().map(|s| s.content.chars().count()).sum();
        if used > 0 && used + 2 + w > width {
            lines.push(Line::from(std::mem::take(&mut cur)));
            used = 0;
        }
        if used > 0 {
            cur.push(Span::raw("  "));
            used += 2;
        }
        cur.extend(item);
        used += w;
    }
    if !cur.is_empty() {
        lines.push(Line::from(cur));
    }
    lines
}

fn legend(app: &App, width: u16) -> Vec<Line<'static>> {
    let mut items = Vec::new();
    for p in Phase::ALL {
        items.push(vec![
            Span::styled(
                format!("{}{}", phase_glyph(p), phase_glyph(p)),
                phase_style(p, app.color),
            ),
            Span::raw(format!(" {}", p.name())),
        ]);
    }
    if app.aggregate {
        // The aggregate rows: a phase's first end, the spread of ends, the median end.
        items.push(vec![Span::raw("─┃ ends first─median┃─last")]);
    } else {
        items.push(vec![Span::raw("┄┄ unfinished")]);
    }
    items.push(vec![
        Span::styled("✗", failure_style(app.color)),
        Span::raw(" failure"),
    ]);
    items.push(vec![
        Span::styled("!", warn_style(app.color)),
        Span::raw(" straggler"),
    ]);
    flow(items, width)
}

fn draw_timeline(f: &mut Frame, app: &App, area: Rect) {
    let rows = if app.aggregate {
        app.bands.len()
    } else {
        app.lanes.len()
    };
    let legend = legend(app, area.width);
    let leg_h = u16::try_from(legend.len()).unwrap_or(u16::MAX);
    let lane = app.lanes.get(app.rank_sel);
    // What must stay on screen however many ranks there are: the cursor line and, for a
    // rank that failed, its failure line.
    let foot_min = 1 + u16::from(lane.is_some_and(|l| l.failure.is_some()));
    let plot_h = u16::try_from(rows)
        .unwrap_or(u16::MAX)
        .saturating_add(1)
        .min(area.height.saturating_sub(leg_h + 1 + foot_min).max(2));
    let [leg, plot, _gap, foot] = Layout::vertical([
        Constraint::Length(leg_h),
        Constraint::Length(plot_h),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(legend), leg);
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
    for (t, e) in app.footer_events(n) {
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
    let rows = u16::try_from(app.run.ranks.len())
        .unwrap_or(u16::MAX)
        .saturating_add(1);
    let mut legend_items = Vec::new();
    for (p, _, label) in PARTS {
        let g = if p == Phase::Ready {
            '·'
        } else {
            phase_glyph(p)
        };
        legend_items.push(vec![
            Span::styled(format!("{g}{g}"), phase_style(p, app.color)),
            Span::raw(format!(" {label}")),
        ]);
    }
    let legend = flow(legend_items, area.width);
    let leg_h = u16::try_from(legend.len()).unwrap_or(u16::MAX);
    let left = |y: u16| area.bottom().saturating_sub(y);
    let title = Rect {
        height: area.height.min(1),
        ..area
    };
    f.render_widget(
        Paragraph::new(Line::styled(
            "GPU memory per rank, as the log reports it after each phase",
            bold(),
        )),
        title,
    );
    let mut y = title.bottom();
    if !app.has_snapshots() {
        let table = Rect {
            y,
            height: rows
                .min(left(y).saturating_sub(1 + leg_h).max(2))
                .min(left(y)),
            ..area
        };
        f.render_widget(Memory { app }, table);
        y = table.bottom().saturating_add(1).min(area.bottom());
        let leg = Rect {
            y,
            height: left(y).min(leg_h),
            ..area
        };
        f.render_widget(Paragraph::new(legend), leg);
        y = leg.bottom();
        let note = Rect {
            y,
            height: left(y),
            ..area
        };
        let text = "init: dist_init mem usage · weights: weight_load mem usage · kv: KV cache \
size · graph: cuda_graph mem usage · free: last reported available memory";
        let mut lines = vec![Line::styled(text, dim(app.color))];
        // Snapshots that were there but could not be used say so, or their absence would
        // look like a run recorded without them.
        for e in &app.snap_errors {
            lines.push(Line::styled(sanitize(e), warn_style(app.color)));
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), note);
        return;
    }
    // With snapshots, what the screen must keep is the OOM (the chart's header) and the
    // sites, the culprit among them; the table then shrinks to the selected rank and
    // scrolls, and the plot takes what is left.
    let header = memchart::header_lines(app, area.width);
    let header_h = u16::try_from(header.len()).unwrap_or(u16::MAX);
    let sites = shown_sites(app, area.height);
    let sites_h = u16::try_from(sites.len()).unwrap_or(u16::MAX) + 1;
    let notes_h = u16::try_from(app.snap_errors.len()).unwrap_or(u16::MAX);
    // Header, three rows of plot, the phase strip and the time axis.
    let chart_min = header_h + 5;
    let table_h = rows
        .min(left(y).saturating_sub(leg_h + chart_min + sites_h + notes_h))
        .max(2)
        .min(left(y));
    let table = Rect {
        y,
        height: table_h,
        ..area
    };
    f.render_widget(Memory { app }, table);
    y = table.bottom();
    let leg = Rect {
        y,
        height: left(y).min(leg_h),
        ..area
    };
    f.render_widget(Paragraph::new(legend), leg);
    y = leg.bottom();
    // The sites and notes are laid out first, so that a short screen cuts the plot.
    let bottom_h = (sites_h + notes_h).min(left(y));
    let chart_h = left(y).saturating_sub(bottom_h).min(header_h + 17);
    let chart = Rect {
        y,
        height: chart_h,
        ..area
    };
    f.render_widget(MemChart { app, header }, chart);
    y = chart.bottom();
    let sites_area = Rect {
        y,
        height: left(y).min(sites_h),
        ..area
    };
    draw_sites(f, app, &sites, sites_area);
    y = sites_area.bottom();
    if notes_h > 0 {
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
}

/// The selected rank's sites the Memory view lists: the largest, as many as the height
/// allows (five, four on a short screen), and always the ones the diff blames, in place
/// of the smallest shown.
fn shown_sites(app: &App, height: u16) -> Vec<&super::app::SiteRow> {
    let Some(s) = app.selected_snap() else {
        return Vec::new();
    };
    let cap = if height >= 30 { 5 } else { 4 };
    let mut shown: Vec<&super::app::SiteRow> = s.sites.iter().take(cap).collect();
    for culprit in s.sites.iter().skip(cap) {
        if app.culprit(&culprit.site).is_none() {
            continue;
        }
        // Replace the smallest shown site that is not itself a culprit.
        if let Some(i) = shown.iter().rposition(|r| app.culprit(&r.site).is_none()) {
            shown.remove(i);
            shown.push(culprit);
        }
    }
    shown
}

/// The selected rank's largest allocation sites, live at the end of its snapshot, the
/// ones the diff attributes the divergence to marked `▶` with their change.
fn draw_sites(f: &mut Frame, app: &App, sites: &[&super::app::SiteRow], area: Rect) {
    let Some(s) = app.selected_snap() else {
        return;
    };
    let blamed = app
        .diff_facts
        .as_ref()
        .is_some_and(|d| !d.culprits.is_empty());
    // The label column: the longest label shown, within what the figures leave.
    let longest = sites
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0);
    let figures_w = 24 + if blamed { 12 } else { 0 };
    let label_w = longest.clamp(30, 52).min(
        usize::from(area.width)
            .saturating_sub(2 + figures_w)
            .max(16),
    );
    let mut head = format!(
        "  {}{:>12}{:>12}",
        fit("allocation site (live at the end)", label_w),
        "allocated",
        "reserved",
    );
    if blamed {
        head.push_str(&format!("{:>12}", "vs baseline"));
    }
    head.push_str(&format!("   {}", sanitize(&s.path)));
    let mut lines = vec![Line::styled(head, bold())];
    if s.sites.is_empty() {
        lines.push(Line::from("  no live allocations"));
    }
    for site in sites {
        let culprit = app.culprit(&site.site);
        let mut spans = vec![
            Span::styled(
                if culprit.is_some() { "▶ " } else { "  " },
                warn_style(app.color),
            ),
            Span::raw(format!(
                "{}{:>12}{:>12}",
                fit(&sanitize(&site.label), label_w),
                fmt_bytes(site.allocated),
                fmt_bytes(site.reserved)
            )),
        ];
        if let Some(what) = culprit {
            spans.push(Span::styled(format!("{what:>12}"), warn_style(app.color)));
        }
        lines.push(Line::from(spans));
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
    if app.diff.is_none() {
        f.render_widget(
            Paragraph::new("no baseline: start with --vs BASELINE"),
            area,
        );
        return;
    }
    let lines = diff_lines(app, area.width);
    let top = usize::from(app.diff_scroll).min(lines.len().saturating_sub(1));
    f.render_widget(
        Paragraph::new(lines).scroll((u16::try_from(top).unwrap_or(u16::MAX), 0)),
        area,
    );
}

/// Width of the label column of the Diff view's head (`config`, `cause`, `candidate`).
const DIFF_LABEL_W: usize = 10;

/// `text` wrapped under `label`, as `rankscope diff` lays out its head.
fn labelled(lines: &mut Vec<Line<'static>>, label: &str, text: &str, st: Style, width: u16) {
    let w = usize::from(width).saturating_sub(DIFF_LABEL_W).max(20);
    for (i, part) in wrap_line(text, w).into_iter().enumerate() {
        let l = if i == 0 { label } else { "" };
        lines.push(Line::from(vec![
            Span::styled(fit(l, DIFF_LABEL_W), bold()),
            Span::styled(part, st),
        ]));
    }
}

/// The Diff view as lines for `width` columns: first what `rankscope diff` leads with
/// (the verdict, the config changes, the cause and its allocation sites, the failure),
/// then every compared figure. Longer than the screen, it scrolls (PgUp/PgDn).
pub fn diff_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let Some(d) = &app.diff else {
        return lines;
    };
    let c = app.color;
    let empty = super::app::DiffFacts::default();
    let facts = app.diff_facts.as_ref().unwrap_or(&empty);
    let status_st = match d.status {
        crate::analysis::diff::Status::Failed => failure_style(c),
        crate::analysis::diff::Status::Regressed => warn_style(c),
        _ => bold(),
    };
    let status = format!(" {} ", d.status.label());
    let indent = status.chars().count() + 2;
    let head_w = usize::from(width).saturating_sub(indent).max(20);
    for (i, part) in wrap_line(
        &sanitize(&crate::render::diff_text::headline(&d.headline)),
        head_w,
    )
    .into_iter()
    .enumerate()
    {
        let first = if i == 0 {
            Span::styled(status.clone(), status_st)
        } else {
            Span::raw(" ".repeat(status.chars().count()))
        };
        lines.push(Line::from(vec![first, Span::raw("  "), Span::raw(part)]));
    }
    for (i, l) in facts.config.iter().enumerate() {
        labelled(
            &mut lines,
            if i == 0 { "config" } else { "" },
            l,
            warn_style(c),
            width,
        );
    }
    let mut cause_label = "cause";
    if let Some(div) = &d.first_divergence {
        let fd = d
            .figures
            .iter()
            .find(|x| x.phase == div.phase && x.figure == div.figure);
        let delta = fd.map_or(String::new(), |fd| delta_text(fd, div.delta.median));
        labelled(
            &mut lines,
            cause_label,
            &format!(
                "{} {} {} on {}/{} ranks ({}), the first divergence",
                div.phase,
                div.figure.replace('_', " "),
                delta,
                div.ranks_moved,
                div.ranks_compared,
                div.class.name()
            ),
            warn_style(c),
            width,
        );
        cause_label = "";
    } else if facts.cause.is_empty() {
        labelled(
            &mut lines,
            cause_label,
            "no log figure moved beyond the print resolution",
            Style::new(),
            width,
        );
    }
    for l in &facts.cause {
        labelled(&mut lines, cause_label, &sanitize(l), Style::new(), width);
        cause_label = "";
    }
    let mut failed_label = "candidate";
    for g in &d.candidate.groups {
        labelled(
            &mut lines,
            failed_label,
            &sanitize(&crate::render::outcome_text::failure_group(g)),
            failure_style(c),
            width,
        );
        failed_label = "";
    }
    if let Some((r, k, p)) = &d.candidate.first_failure {
        let what = if d.candidate.failed_ranks > 1 {
            "first to fail on its own"
        } else {
            "root"
        };
        labelled(
            &mut lines,
            failed_label,
            &format!("{what}: {r} ({} in {p})", k.name()),
            Style::new(),
            width,
        );
    }
    for l in &facts.oom_sites {
        labelled(&mut lines, "", &sanitize(l), Style::new(), width);
    }
    lines.push(Line::from(""));
    lines.extend(figure_table(app, d, width));
    let notes: Vec<String> = d
        .comparability
        .notes
        .iter()
        .map(crate::render::diff_text::comparability_note)
        .chain(facts.notes.iter().cloned())
        .collect();
    if !notes.is_empty() {
        lines.push(Line::from(""));
        for n in notes {
            labelled(&mut lines, "note", &sanitize(&n), dim(c), width);
        }
    }
    lines
}

/// Every compared figure, baseline against candidate, and the selected rank's.
fn figure_table(app: &App, d: &crate::analysis::diff::RunDiff, width: u16) -> Vec<Line<'static>> {
    let c = app.color;
    let mut lines = Vec::new();
    let rank = app.selected_rank();
    let rank_name = rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into());
    // Narrow terminals keep the all-ranks delta but drop the medians and the rank count,
    // so that the selected rank's figures fit.
    let w: [usize; 6] = if width < 110 {
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
    lines
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

/// Rows the Diff view shows at once and the furthest it can scroll, for the app's size.
pub fn diff_scroll_room(app: &App) -> (u16, u16) {
    if app.diff.is_none() {
        return (0, 0);
    }
    let [_, body, _] = frame_areas(Rect::new(0, 0, app.width, app.height));
    let n = diff_lines(app, body.width).len();
    let max = n.saturating_sub(usize::from(body.height));
    (body.height, u16::try_from(max).unwrap_or(u16::MAX))
}

/// Breaks a line to `width` columns, at a space when there is one, so that the pane can
/// count its rows and scroll by them exactly.
pub fn wrap_line(s: &str, width: usize) -> Vec<String> {
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
