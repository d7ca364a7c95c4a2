//! The screen shown while the worker reads the run.

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::base::text::sanitize;
use crate::tui::app::Loading;
use crate::tui::layout::wrap_line;
use crate::tui::widgets::{bold, dim, failure_style};

const SPINNER: [char; 8] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧'];

/// What shows while the worker reads the run: the path, the stage, the bytes read (a bar
/// when the total is known, a spinner otherwise), or the error once it failed.
pub(crate) fn draw(f: &mut Frame, s: &Loading, color: bool) {
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
            let read = crate::base::units::human_bytes(i64::try_from(s.bytes).unwrap_or(i64::MAX));
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
                        crate::base::units::human_bytes(i64::try_from(t).unwrap_or(i64::MAX))
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
