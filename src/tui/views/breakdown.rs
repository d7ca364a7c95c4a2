//! The Memory view's breakdown panel: the selected rank's group of `summary --memory`'s
//! breakdown — a bar of its categories across the device, then one row per category
//! (GiB, share, resolution; merged and unreached ones said so) — and the capacity in one
//! line. The derivations stay in `summary --memory` and the HTML report: a row has no
//! room for them.

use ratatui::text::{Line, Span};

use crate::analysis::breakdown::{BreakdownGroup, RowValue};
use crate::base::units::human_bytes;
use crate::grammar::memory_model::Category;
use crate::render::text::breakdown::{category_label, gib};
use crate::tui::app::App;
use crate::tui::widgets::{bold, dim, phase_glyph, phase_style};

/// A category's glyph and style: its phase's where it has one, else a plain one.
fn look(c: Category, color: bool) -> (char, ratatui::style::Style) {
    match c.phase() {
        Some(p) => (phase_glyph(p), phase_style(p, color)),
        None => (
            match c {
                Category::Free => '·',
                Category::Activations => '▪',
                _ => '▫',
            },
            dim(color),
        ),
    }
}

fn group(app: &App) -> Option<&BreakdownGroup> {
    let b = app.analysed.report.memory.breakdown.as_ref()?;
    let rank = app.run.ranks.get(app.rank_sel).map(|r| &r.rank);
    rank.and_then(|r| b.groups.iter().find(|g| g.ranks.contains(r)))
        .or_else(|| b.groups.first())
}

/// The bar: one cell per share of the device (the categories' sum when the device is not
/// known), each category at least one cell when it holds anything.
fn bar(g: &BreakdownGroup, width: usize, color: bool) -> Line<'static> {
    let measured: Vec<(Category, i64)> = (g.breakdown.rows.iter())
        .filter_map(|r| match &r.value {
            RowValue::Measured(a) => Some((r.category, a.bytes.max(0))),
            _ => None,
        })
        .collect();
    let sum: i64 = measured.iter().map(|x| x.1).sum();
    let whole = (g.breakdown.device.as_ref())
        .map_or(sum, |d| d.amount.bytes.max(sum))
        .max(1);
    let mut spans = vec![Span::raw("  ")];
    for (c, bytes) in measured {
        let cells = ((bytes as f64 / whole as f64) * width as f64).round() as usize;
        let cells = if bytes > 0 { cells.max(1) } else { 0 };
        let (glyph, style) = look(c, color);
        spans.push(Span::styled(glyph.to_string().repeat(cells), style));
    }
    Line::from(spans)
}

/// The panel's lines for a screen `width` columns wide; empty without a breakdown.
pub(crate) fn lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let Some(g) = group(app) else {
        return Vec::new();
    };
    let b = &g.breakdown;
    let device = b.device.as_ref().map(|d| d.amount.bytes).filter(|&d| d > 0);
    let mut title = format!(
        "where the memory went, {}{}",
        crate::render::rank_span(&g.ranks),
        device.map_or(String::new(), |d| format!(": device {}", gib(d)))
    );
    let more = " (derivations: summary --memory)";
    if crate::base::text::columns(&title) + crate::base::text::columns(more) <= usize::from(width) {
        title.push_str(more);
    }
    let mut out = vec![Line::styled(title, bold())];
    out.push(bar(
        g,
        usize::from(width).saturating_sub(4).min(100),
        app.color,
    ));
    for row in &b.rows {
        let (glyph, style) = look(row.category, app.color);
        let mut label = category_label(row.category).to_string();
        if !row.includes.is_empty() {
            label.push_str(" (+merged)");
        }
        let text = match &row.value {
            RowValue::Measured(a) => format!(
                "{label:<38}{:>10}{:>8}  ±{}",
                gib(a.bytes),
                device.map_or("—".into(), |d| {
                    let p = a.bytes as f64 * 100.0 / d as f64;
                    format!("{:.1} %", if p.abs() < 0.05 { 0.0 } else { p })
                }),
                human_bytes(a.resolution)
            ),
            RowValue::Merged(into) => {
                format!("{label:<38}in {}", category_label(*into))
            }
            RowValue::NotReached => format!("{label:<38}not reached"),
        };
        out.push(Line::from(vec![
            Span::styled(format!("  {glyph}{glyph} "), style),
            Span::raw(text),
        ]));
    }
    if let Some(c) = &b.closure {
        out.push(Line::styled(
            format!(
                "  {} {} against {} (±{})",
                if c.holds() {
                    "adds up:"
                } else {
                    "does not add up:"
                },
                gib(c.sum),
                gib(c.device),
                human_bytes(c.tolerance)
            ),
            dim(app.color),
        ));
    }
    if let Some(c) = &app.analysed.report.memory.capacity {
        let at: Vec<String> = (c.lengths.iter())
            .map(|r| {
                format!(
                    "{} of {} tokens",
                    r.requests,
                    crate::base::units::group_thousands(r.tokens)
                )
            })
            .collect();
        out.push(Line::raw(format!(
            "  KV pool {} tokens/rank: requests at once {}",
            crate::base::units::group_thousands(c.pool_tokens),
            at.join(", ")
        )));
    }
    out
}
