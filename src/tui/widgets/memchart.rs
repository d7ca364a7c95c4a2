//! The selected rank's PyTorch snapshot as memory over time: reserved and allocated
//! stacked per column, the rank's phases and the peak and OOM marks under the plot, on
//! the run's time axis so that it reads against the timeline.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::{failure_style, phase_glyph, phase_style, put, warn_style};
use crate::base::text::sanitize;
use crate::render::text::mem::fmt_bytes;
use crate::tui::app::{App, SnapMem};
use crate::tui::layout::{flow, time_label, wrap_line};

/// Drawn where allocated memory is, and where memory is reserved but not allocated: two
/// glyphs, so the series tell apart without colour.
pub(crate) const ALLOCATED: char = '█';
pub(crate) const RESERVED: char = '░';
pub(crate) const PEAK: char = '▲';
pub(crate) const OOM: char = '✗';

const Y_LABEL: u16 = 11;

pub(crate) struct MemChart<'a> {
    pub(crate) app: &'a App,
    /// From [`header_lines`], for the same width: the caller lays out the view by it.
    pub(crate) header: Vec<Line<'static>>,
}

/// The chart's header for `width` columns: the rank and what the glyphs mean, the peak,
/// and the first OOM in words, each moved to a new line rather than cut, and the OOM
/// wrapped when it is longer than a line.
pub(crate) fn header_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let color = app.color;
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let rank = app
        .selected_rank()
        .map(|r| r.to_string())
        .unwrap_or_default();
    let Some(s) = app.selected_snap() else {
        return vec![Line::styled(format!("{rank}: no snapshot"), bold)];
    };
    let mut items = vec![
        vec![Span::styled(format!("{rank} snapshot"), bold)],
        vec![Span::raw(format!("{ALLOCATED} allocated"))],
        vec![Span::raw(format!("{RESERVED} reserved"))],
    ];
    if let Some((t, b)) = s.peak {
        items.push(vec![Span::styled(
            format!("{PEAK} peak {} at {}", fmt_bytes(b), time_label(t)),
            warn_style(color),
        )]);
    }
    let mut lines = flow(items, width);
    if let Some((t, asked, site)) = &s.oom {
        let text = format!(
            "{OOM}oom at {}: asked {} in {}",
            time_label(*t),
            fmt_bytes(*asked),
            sanitize(site)
        );
        for part in wrap_line(&text, usize::from(width)) {
            lines.push(Line::styled(part, failure_style(color)));
        }
    }
    lines
}

/// The time range the chart spans: the whole run, widened to the snapshot when it
/// starts before or ends after the log.
fn x_range(app: &App, s: &SnapMem) -> (f64, f64) {
    let first = s.series.first().map_or(0.0, |p| p.0);
    let last = s.series.last().map_or(0.0, |p| p.0);
    let t0 = first.min(0.0);
    let t1 = last.max(app.span_s).max(t0 + 1.0);
    (t0, t1)
}

/// Per column, the most allocated and reserved at any moment in it; memory holds its
/// level between trace entries, so a column with no entry repeats the last level.
fn columns(s: &SnapMem, t0: f64, dt: f64, n: usize) -> Vec<Option<(u64, u64)>> {
    let mut out = vec![None; n];
    let mut held: Option<(u64, u64)> = None;
    let mut it = s.series.iter().peekable();
    for (c, slot) in out.iter_mut().enumerate() {
        let end = t0 + (c as f64 + 1.0) * dt;
        let mut col = held;
        while let Some(&&(t, a, r)) = it.peek() {
            if t >= end {
                break;
            }
            col = Some(col.map_or((a, r), |(ca, cr)| (ca.max(a), cr.max(r))));
            held = Some((a, r));
            it.next();
        }
        *slot = col;
    }
    out
}

impl Widget for MemChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        if area.height == 0 || area.width == 0 {
            return;
        }
        let Some(s) = app.selected_snap() else {
            for (i, l) in self.header.iter().enumerate() {
                buf.set_line(area.x, area.y + i as u16, l, area.width);
            }
            return;
        };
        let header_h = u16::try_from(self.header.len()).unwrap_or(u16::MAX);
        for (i, l) in self.header.iter().enumerate() {
            let y = area.y.saturating_add(i as u16);
            if y >= area.bottom() {
                return;
            }
            buf.set_line(area.x, y, l, area.width);
        }

        // Rows: header, plot, phase/marker strip, time axis.
        if area.height < header_h.saturating_add(3) || area.width <= Y_LABEL + 2 {
            return;
        }
        let plot_h = area.height - header_h - 2;
        let plot_top = area.y + header_h;
        let strip_y = plot_top + plot_h;
        let axis_y = strip_y + 1;
        let x0 = area.x + Y_LABEL;
        let n = usize::from(area.right() - x0);
        let (t0, t1) = x_range(app, s);
        let dt = (t1 - t0) / n as f64;
        let g = Geometry {
            x0,
            n,
            t0,
            t1,
            dt,
            plot_h,
            plot_top,
            strip_y,
            axis_y,
        };
        draw_plot(buf, area, &g, s, app.analysed.snap_max);
        draw_phase_strip(buf, area, &g, app, s);
        draw_time_axis(buf, area, &g, s);
    }
}

/// Where the chart's parts are, from the header down, and the time each column covers.
#[derive(Clone, Copy)]
struct Geometry {
    /// First column of the plot, after the y labels.
    x0: u16,
    /// Columns of plot.
    n: usize,
    t0: f64,
    t1: f64,
    /// Seconds per column.
    dt: f64,
    plot_h: u16,
    plot_top: u16,
    strip_y: u16,
    axis_y: u16,
}

impl Geometry {
    /// The plot column (from `x0`) of a time, if it is on the chart.
    fn col_of(&self, t: f64) -> Option<u16> {
        let c = ((t - self.t0) / self.dt).floor();
        (c >= 0.0 && c < self.n as f64).then_some(c as u16)
    }
}

/// The y labels and the allocated (under reserved) columns of the selected snapshot,
/// scaled to `ymax`, the largest any rank's snapshot holds.
fn draw_plot(buf: &mut Buffer, area: Rect, g: &Geometry, s: &SnapMem, ymax: u64) {
    let Geometry {
        x0,
        n,
        t0,
        dt,
        plot_h,
        plot_top,
        strip_y,
        ..
    } = *g;
    put(
        buf,
        area,
        area.x,
        plot_top,
        &format!("{:>10}┤", fmt_bytes(ymax)),
        Style::new(),
    );
    put(
        buf,
        area,
        area.x,
        strip_y - 1,
        &format!("{:>10}┤", "0"),
        Style::new(),
    );
    let cells = |v: u64| -> u16 {
        let h = (v as f64 / ymax as f64 * f64::from(plot_h)).round();
        // Anything held shows as at least one cell: a small site still counts.
        let h = if v > 0 { h.max(1.0) } else { h };
        h.clamp(0.0, f64::from(plot_h)) as u16
    };
    for (c, col) in columns(s, t0, dt, n).into_iter().enumerate() {
        let Some((a, r)) = col else { continue };
        let cx = x0 + c as u16;
        let (ha, hr) = (cells(a), cells(r.max(a)));
        for k in 0..hr {
            let y = strip_y - 1 - k;
            let g = if k < ha { ALLOCATED } else { RESERVED };
            put(buf, area, cx, y, &g.to_string(), Style::new());
        }
    }
}

/// Under the plot: the selected rank's phases, and the peak and OOM marks over them.
fn draw_phase_strip(buf: &mut Buffer, area: Rect, g: &Geometry, app: &App, s: &SnapMem) {
    let color = app.color;
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let Geometry {
        x0,
        n,
        t0,
        dt,
        strip_y,
        ..
    } = *g;
    // The rank's phases under the plot, then the marks over them.
    put(
        buf,
        area,
        area.x,
        strip_y,
        &format!("{:>10} ", "phase"),
        bold,
    );
    if let Some(lane) = app.analysed.lanes.get(app.rank_sel) {
        // As on the timeline, a phase shorter than a column still gets one, after the
        // one before it, so that short phases do not vanish between long ones.
        let mut next_free = 0i64;
        for seg in &lane.segments {
            let cs = (((seg.start - t0) / dt).floor() as i64).max(next_free);
            let ce = (((seg.end - t0) / dt).floor() as i64).max(cs + 1);
            next_free = ce;
            let glyph = phase_glyph(seg.phase).to_string();
            for c in cs.max(0)..ce.min(n as i64) {
                put(
                    buf,
                    area,
                    x0 + c as u16,
                    strip_y,
                    &glyph,
                    phase_style(seg.phase, color),
                );
            }
        }
    }
    if let Some(c) = s.peak.and_then(|p| g.col_of(p.0)) {
        put(
            buf,
            area,
            x0 + c,
            strip_y,
            &PEAK.to_string(),
            warn_style(color),
        );
    }
    // Drawn last: when the peak and the OOM share a column, the OOM is what matters.
    if let Some(c) = s.oom.as_ref().and_then(|o| g.col_of(o.0)) {
        put(
            buf,
            area,
            x0 + c,
            strip_y,
            &OOM.to_string(),
            failure_style(color),
        );
    }
}

/// The time axis: a tick every whole step that keeps labels apart.
fn draw_time_axis(buf: &mut Buffer, area: Rect, g: &Geometry, s: &SnapMem) {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let Geometry {
        x0,
        t0,
        t1,
        dt,
        axis_y,
        ..
    } = *g;
    // Time axis: a tick every whole step that keeps labels apart.
    let step = [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
    ]
    .into_iter()
    .find(|st| st / dt >= 8.0)
    // A snapshot whose clock is far off (or damaged) can span years: at most one tick
    // per eight columns whatever the span, so the loop below stays short.
    .unwrap_or(dt * 8.0);
    let label = if s.clock_matched {
        "run time"
    } else {
        "snap time"
    };
    put(buf, area, area.x, axis_y, &format!("{label:>10} "), bold);
    let mut t = (t0 / step).ceil() * step;
    let mut next_free = x0;
    while t <= t1 {
        if let Some(c) = g.col_of(t) {
            let cx = x0 + c;
            if cx >= next_free {
                next_free = put(
                    buf,
                    area,
                    cx,
                    axis_y,
                    &format!("┆{}", time_label(t)),
                    Style::new(),
                ) + 1;
            }
        }
        t += step;
    }
}
