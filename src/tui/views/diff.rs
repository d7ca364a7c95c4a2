//! The Diff view: what `rankscope diff` leads with, then every compared figure, scrolled
//! a page at a time.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::analysis::diff::DeltaClass;
use crate::base::text::sanitize;
use crate::render::text::diff::{delta_shown, spread_shown};
use crate::render::{figure_shown, fit};
use crate::tui::app::{App, ScrollRoom};
use crate::tui::layout::wrap_line;
use crate::tui::widgets::{bold, dim, failure_style, warn_style};

/// A table column; width 0 leaves it out.
fn col(s: &str, width: usize) -> String {
    if width == 0 {
        String::new()
    } else {
        fit(s, width)
    }
}

pub(crate) fn draw(f: &mut Frame, app: &App, area: Rect) {
    if app.analysed.diff.is_none() {
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
pub(crate) fn diff_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let Some(d) = &app.analysed.diff else {
        return lines;
    };
    let c = app.color;
    let empty = crate::tui::app::DiffFacts::default();
    let facts = app.analysed.diff_facts.as_ref().unwrap_or(&empty);
    let status_st = match d.status {
        crate::analysis::diff::Status::Failed => failure_style(c),
        crate::analysis::diff::Status::Regressed => warn_style(c),
        _ => bold(),
    };
    let status = format!(" {} ", d.status.label());
    let indent = crate::base::text::columns(&status) + 2;
    let head_w = usize::from(width).saturating_sub(indent).max(20);
    for (i, part) in wrap_line(
        &sanitize(&crate::render::text::diff::headline(&d.headline)),
        head_w,
    )
    .into_iter()
    .enumerate()
    {
        let first = if i == 0 {
            Span::styled(status.clone(), status_st)
        } else {
            Span::raw(" ".repeat(crate::base::text::columns(&status)))
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
    // The same rows `rankscope diff` prints, from the same function; the remedy goes
    // below the failure here, so that the failure stays on a small first screen.
    let mut remedy: Vec<(&str, String)> = Vec::new();
    let mut in_remedy = false;
    for (label, text) in
        crate::render::text::diff::verdict_rows(d, &facts.attribution, &facts.snapshot_cause)
    {
        in_remedy = label == "remedy" || (in_remedy && label.is_empty());
        if in_remedy {
            remedy.push((label, text));
            continue;
        }
        let st = match label {
            "cause" | "memory" | "time" => warn_style(c),
            _ => Style::new(),
        };
        labelled(&mut lines, label, &sanitize(&text), st, width);
    }
    let mut failed_label = "candidate";
    for g in &d.candidate.groups {
        labelled(
            &mut lines,
            failed_label,
            &sanitize(&crate::render::text::outcome::failure_group(g)),
            failure_style(c),
            width,
        );
        failed_label = "";
    }
    if let Some(text) = crate::render::text::diff::root_row(&d.candidate) {
        labelled(&mut lines, failed_label, &text, Style::new(), width);
    }
    for l in &facts.oom_sites {
        labelled(&mut lines, "", &sanitize(l), Style::new(), width);
    }
    for (label, text) in remedy {
        labelled(&mut lines, label, &sanitize(&text), Style::new(), width);
    }
    lines.push(Line::from(""));
    lines.extend(figure_table(app, d, width));
    let notes: Vec<String> = d
        .comparability
        .notes
        .iter()
        .map(crate::render::text::diff::comparability_note)
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
        [12, 13, 0, 0, 12, 0]
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
        let shown = |v: f64| figure_shown(&fd.figure, v, fd.is_bytes, fd.resolution, usize::MAX);
        let delta = spread_shown(fd);
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
            Span::raw(col(&fd.figure.name().replace('_', " "), w[1])),
            Span::raw(col(&shown(fd.baseline_median), w[2])),
            Span::raw(col(&shown(fd.candidate_median), w[3])),
            Span::styled(col(&delta, w[4]), row_st),
            Span::raw(col(&ranks, w[5])),
            Span::raw("│ "),
        ];
        match fd.per_rank.iter().find(|r| Some(&r.rank) == rank) {
            Some(r) => {
                let st = if r.beyond_noise { row_st } else { dim(c) };
                // `-501.80 MiB` and a space.
                spans.push(Span::styled(col(&delta_shown(fd, r.delta), 12), st));
                spans.push(Span::raw(format!(
                    "{} → {}",
                    shown(r.baseline),
                    shown(r.candidate)
                )));
            }
            None => spans.push(Span::raw("-")),
        }
        lines.push(Line::from(spans));
    }
    lines
}

/// Rows the Diff view shows at once and the furthest it can scroll, in the view's area.
pub(crate) fn scroll_room(app: &App, body: Rect) -> ScrollRoom {
    if app.analysed.diff.is_none() {
        return ScrollRoom::default();
    }
    let n = diff_lines(app, body.width).len();
    let max = n.saturating_sub(usize::from(body.height));
    ScrollRoom {
        page: body.height,
        max: u16::try_from(max).unwrap_or(u16::MAX),
    }
}
