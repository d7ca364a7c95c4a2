//! Ranks as rows, time across: one bar per rank, a glyph and colour per phase, failures
//! marked where they happened, and the cursor column.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::Widget;

use super::{failure_style, phase_glyph, phase_style, put, warn_style};
use crate::tui::app::{App, Lane, PhaseBand};
use crate::tui::layout::time_label;

/// Beside the root rank's failure mark: one column, so that `✗nccl ◀` fits in the room a
/// fitted view leaves after the run's end (`app::fit_cols`).
pub(crate) const ROOT_MARK: &str = "◀";

pub(crate) struct Timeline<'a> {
    pub(crate) app: &'a App,
}

/// A tick every this many seconds keeps labels apart.
fn tick_step(scale: f64, min_cols: f64) -> f64 {
    const STEPS: [f64; 16] = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0,
        3600.0,
    ];
    STEPS
        .iter()
        .copied()
        .find(|s| s / scale >= min_cols)
        .unwrap_or(7200.0)
}

impl Timeline<'_> {
    fn lane(&self, buf: &mut Buffer, area: Rect, y: u16, lane: &Lane, selected: bool) {
        let app = self.app;
        let color = app.color;
        let mut label_style = Style::new();
        if !lane.straggler_in.is_empty() {
            label_style = warn_style(color);
        }
        if lane.failure.is_some() {
            label_style = failure_style(color).remove_modifier(Modifier::REVERSED);
        }
        if selected {
            label_style = label_style.add_modifier(Modifier::REVERSED);
        }
        let mark = if !lane.straggler_in.is_empty() {
            "!"
        } else {
            " "
        };
        let name = format!("{}{}", lane.rank, mark);
        put(buf, area, area.x, y, &name, label_style);

        let x0 = area.x.saturating_add(app.label_w);
        let cols = i64::from(area.right().saturating_sub(x0));
        let col_of = |t: f64| ((t - app.offset_s) / app.scale).floor() as i64;
        // Logs print time to the second, so several phases often share one column. Each
        // phase still gets at least one column, laid after the one before it, so the order
        // of events stays readable at every zoom; the shift is at most a few columns.
        let mut next_free = i64::MIN;
        for s in &lane.segments {
            let cs = col_of(s.start).max(next_free);
            let ce = col_of(s.end).max(cs + 1);
            next_free = ce;
            let mut st = phase_style(s.phase, color);
            if lane.straggler_in.contains(&s.phase) {
                st = st.add_modifier(Modifier::UNDERLINED);
            }
            let glyph = if s.complete || s.phase == crate::model::Phase::Ready {
                phase_glyph(s.phase)
            } else {
                // An unfinished phase is drawn lighter so it does not read as done.
                '┄'
            };
            for c in cs.max(0)..ce.min(cols) {
                if let Some(cell) = buf.cell_mut((x0 + c as u16, y)) {
                    cell.set_char(glyph).set_style(st);
                }
            }
        }
        if let Some((kind, t)) = lane.failure {
            let c = col_of(t).max(next_free);
            if (0..cols).contains(&c) {
                let x = x0 + c as u16;
                // Where every rank shows `✗oom`, the root is the one that failed first on
                // its own: marked so (`ROOT_MARK`, explained in the legend).
                let root = app.root_rank() == Some(&lane.rank);
                let text = if root {
                    format!("✗{kind} {ROOT_MARK}")
                } else {
                    format!("✗{kind}")
                };
                put(buf, area, x, y, &text, failure_style(color));
            }
        }
    }
}

impl Timeline<'_> {
    fn lanes(&self, buf: &mut Buffer, area: Rect, rows: u16) {
        let app = self.app;
        // Keep the selected rank on screen when there are more ranks than rows.
        let first = app
            .rank_sel
            .saturating_sub(usize::from(rows).saturating_sub(1));
        for (i, lane) in app.analysed.lanes.iter().enumerate().skip(first) {
            let y = area.y + 1 + (i - first) as u16;
            if y >= area.bottom() {
                break;
            }
            self.lane(buf, area, y, lane, i == app.rank_sel);
        }
    }

    /// One phase across all ranks: its glyph from the first rank's start to the first
    /// rank's end, `─` while the others finish, `┃` at the median end; then the counts.
    fn band(&self, buf: &mut Buffer, area: Rect, y: u16, band: &PhaseBand) {
        let app = self.app;
        let color = app.color;
        let label_style = if band.failed > 0 {
            failure_style(color).remove_modifier(Modifier::REVERSED)
        } else if band.stragglers > 0 {
            warn_style(color)
        } else {
            Style::new()
        };
        put(buf, area, area.x, y, band.phase.name(), label_style);
        let x0 = area.x.saturating_add(app.label_w);
        let cols = i64::from(area.right().saturating_sub(x0));
        let col_of = |t: f64| ((t - app.offset_s) / app.scale).floor() as i64;
        let st = phase_style(band.phase, color);
        let start = col_of(band.first_start);
        let first_end = col_of(band.first_end).max(start + 1);
        let last_end = col_of(band.last_end).max(first_end);
        let mut draw = |from: i64, to: i64, ch: char, style: Style| {
            for c in from.max(0)..to.min(cols) {
                if let Some(cell) = buf.cell_mut((x0 + c as u16, y)) {
                    cell.set_char(ch).set_style(style);
                }
            }
        };
        draw(start, first_end, phase_glyph(band.phase), st);
        // `ready` is a state that lasts to the end of the log: it has no ends to spread.
        if band.phase != crate::model::Phase::Ready {
            draw(first_end, last_end, '─', st);
            let median = col_of(band.median_end).clamp(first_end - 1, last_end - 1);
            draw(median, median + 1, '┃', st.add_modifier(Modifier::BOLD));
        }
        let (text, late, failed) = band.texts();
        let len = band.text_len();
        // After the bar when they fit, else before it, else after it cut at the edge:
        // never over the bar.
        // The bar ends before column `last_end`, and the text starts with a space.
        let at = if last_end + len <= cols || start - len < 0 {
            last_end.max(0)
        } else {
            start - len
        };
        if at >= cols {
            return;
        }
        // The marks first: where the row is cut at the edge, the figures lose their tail.
        let mut x = x0 + at as u16;
        if let Some(late) = late {
            x = put(buf, area, x, y, &late, warn_style(color));
        }
        if let Some(failed) = failed {
            x = put(buf, area, x, y, &failed, failure_style(color));
        }
        put(buf, area, x, y, &text, Style::new());
    }
}

impl Widget for Timeline<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        if area.height == 0 || area.width == 0 {
            return;
        }
        // Axis: tick labels above the bars.
        let x0 = area.x.saturating_add(app.label_w);
        let cols = area.right().saturating_sub(x0);
        put(
            buf,
            area,
            area.x,
            area.y,
            if app.aggregate { "phase" } else { "rank" },
            Style::new().add_modifier(Modifier::BOLD),
        );
        let step = tick_step(app.scale, 8.0);
        let mut t = (app.offset_s / step).ceil() * step;
        // No ticks past the end of the log: empty time there would read as data.
        let last = (app.offset_s + f64::from(cols) * app.scale).min(app.span_s + 1e-9);
        while t <= last {
            let c = ((t - app.offset_s) / app.scale).round();
            if c >= 0.0 && c < f64::from(cols) {
                let x = x0.saturating_add(c as u16);
                put(
                    buf,
                    area,
                    x,
                    area.y,
                    &format!("┆{}", time_label(t)),
                    Style::new(),
                );
            }
            t += step;
        }
        let rows = area.height.saturating_sub(1);
        if app.aggregate {
            for (i, band) in app.analysed.bands.iter().enumerate() {
                let y = area.y + 1 + i as u16;
                if y >= area.bottom() {
                    break;
                }
                self.band(buf, area, y, band);
            }
        } else {
            self.lanes(buf, area, rows);
        }
        // The cursor column, over everything.
        let cc = (app.cursor_s - app.offset_s) / app.scale;
        if cc >= 0.0 && cc < f64::from(cols) {
            let x = x0.saturating_add(cc as u16);
            for y in area.y + 1..area.bottom() {
                if let Some(cell) = buf.cell_mut((x, y)) {
                    if cell.symbol() == " " {
                        cell.set_char('│');
                    }
                    cell.modifier.insert(Modifier::REVERSED);
                }
            }
        }
    }
}
