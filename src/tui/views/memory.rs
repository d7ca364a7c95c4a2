//! The Memory view: the log's memory figures per rank and, with snapshots, the selected
//! rank's chart and its largest allocation sites.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::base::text::sanitize;
use crate::model::Phase;
use crate::render::fit;
use crate::render::text::mem::fmt_bytes;
use crate::tui::app::App;
use crate::tui::app::PARTS;
use crate::tui::layout::flow;
use crate::tui::widgets::memchart::{self, MemChart};
use crate::tui::widgets::memory::Memory;
use crate::tui::widgets::{bold, dim, phase_glyph, phase_style, warn_style};

pub(crate) fn draw(f: &mut Frame, app: &App, area: Rect) {
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
    let y = title.bottom();
    if app.has_snapshots() {
        draw_with_snapshots(f, app, area, y, rows, legend);
    } else {
        draw_log_figures(f, app, area, y, rows, legend);
    }
}

/// Without snapshots: the log's figures per rank, the legend, a note on what each column
/// is (and on snapshots that could not be used), and the selected rank's breakdown.
fn draw_log_figures(
    f: &mut Frame,
    app: &App,
    area: Rect,
    mut y: u16,
    rows: u16,
    legend: Vec<Line<'static>>,
) {
    let leg_h = u16::try_from(legend.len()).unwrap_or(u16::MAX);
    let left = |y: u16| area.bottom().saturating_sub(y);
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
    // Wrapped here, so that the panel below knows where the note ends.
    let w = usize::from(area.width).max(1);
    let mut lines: Vec<Line> = crate::render::wrap(text, w)
        .into_iter()
        .map(|l| Line::styled(l, dim(app.color)))
        .collect();
    // Snapshots that were there but could not be used say so, or their absence would
    // look like a run recorded without them.
    for e in &app.snap_errors {
        for l in crate::render::wrap(&sanitize(e), w) {
            lines.push(Line::styled(l, warn_style(app.color)));
        }
    }
    let note_h = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .min(note.height);
    f.render_widget(
        Paragraph::new(lines),
        Rect {
            height: note_h,
            ..note
        },
    );
    // The breakdown of the selected rank's group under it, as room allows.
    let panel = Rect {
        y: note.y + note_h,
        height: note.height - note_h,
        ..note
    };
    f.render_widget(
        Paragraph::new(super::breakdown::lines(app, area.width)),
        panel,
    );
}

/// With snapshots: the table shrunk to the selected rank, the legend, the breakdown when
/// it fits, the chart and the selected rank's sites.
fn draw_with_snapshots(
    f: &mut Frame,
    app: &App,
    area: Rect,
    mut y: u16,
    rows: u16,
    legend: Vec<Line<'static>>,
) {
    let leg_h = u16::try_from(legend.len()).unwrap_or(u16::MAX);
    let left = |y: u16| area.bottom().saturating_sub(y);
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
    // The breakdown panel where the chart keeps its rows and the sites theirs.
    let panel = super::breakdown::lines(app, area.width);
    let panel_h = u16::try_from(panel.len()).unwrap_or(u16::MAX);
    if !panel.is_empty() && left(y) >= panel_h + chart_min + 8 + sites_h + notes_h {
        let at = Rect {
            y,
            height: panel_h,
            ..area
        };
        f.render_widget(Paragraph::new(panel), at);
        y = at.bottom();
    }
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
fn shown_sites(app: &App, height: u16) -> Vec<&crate::tui::app::SiteRow> {
    let Some(s) = app.selected_snap() else {
        return Vec::new();
    };
    let cap = if height >= 30 { 5 } else { 4 };
    let mut shown: Vec<&crate::tui::app::SiteRow> = s.sites.iter().take(cap).collect();
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
fn draw_sites(f: &mut Frame, app: &App, sites: &[&crate::tui::app::SiteRow], area: Rect) {
    let Some(s) = app.selected_snap() else {
        return;
    };
    let blamed = app
        .analysed
        .diff_facts
        .as_ref()
        .is_some_and(|d| !d.culprits.is_empty());
    // The label column: the longest label shown, within what the figures leave.
    let longest = sites
        .iter()
        .map(|r| crate::base::text::columns(&r.label))
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
