//! What each rank's log says the GPU holds after each phase, as a table and a stacked bar
//! on one scale, so a rank that holds more stands out by the length of its bar.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::Widget;

use super::{failure_style, phase_glyph, phase_style, put};
use crate::model::Phase;
use crate::render::{figure_text, fit};
use crate::tui::app::{App, PARTS};

pub(crate) struct Memory<'a> {
    pub(crate) app: &'a App,
}

const COL: usize = 10;

impl Widget for Memory<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let color = app.color;
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let lw = usize::from(app.label_w);
        let mut head = fit("rank", lw);
        for (_, _, label) in PARTS {
            head.push_str(&fit(label, COL));
        }
        head.push_str(&fit("outcome", COL));
        put(buf, area, area.x, area.y, &head, bold);
        let table_w = (lw + COL * (PARTS.len() + 1)) as u16;
        let bar_x = area.x.saturating_add(table_w);
        let bar_w = area.right().saturating_sub(bar_x);
        let rows = &app.analysed.mem_parts;
        let total_max = app.analysed.mem_max;
        // More ranks than rows: scroll just far enough to keep the selection in view.
        let shown = usize::from(area.height.saturating_sub(1)).max(1);
        let first = (app.rank_sel + 1).saturating_sub(shown);
        if bar_w > 4 {
            let mut t = "held after each phase, then free".to_string();
            // First, so that a narrow bar column still says that rows are hidden.
            if rows.len() > shown {
                let last = (first + shown).min(rows.len());
                t = format!("ranks {}-{last} of {} · {t}", first + 1, rows.len());
            }
            put(buf, area, bar_x, area.y, &t, bold);
        }
        for (i, (r, parts)) in app.run.ranks.iter().zip(rows).enumerate().skip(first) {
            let y = area.y.saturating_add(1 + (i - first) as u16);
            if y >= area.bottom() {
                break;
            }
            let mut sel = Style::new();
            if i == app.rank_sel {
                sel = sel.add_modifier(Modifier::REVERSED);
            }
            let mut x = put(buf, area, area.x, y, &fit(&r.rank.to_string(), lw), sel);
            for p in parts {
                let t = p.map_or("-".to_string(), |(b, res)| figure_text(b as f64, true, res));
                x = put(buf, area, x, y, &fit(&t, COL), Style::new());
            }
            let (outcome, st) = match &r.failure {
                Some(f) if f.outcome == crate::model::Outcome::Failed => {
                    (f.kind.name(), failure_style(color))
                }
                Some(f) => (f.outcome.name(), failure_style(color)),
                None => (r.outcome.name(), Style::new()),
            };
            put(buf, area, x, y, &fit(outcome, COL - 1), st);
            if bar_w > 4 {
                let mut bx = bar_x;
                for (k, p) in parts.iter().enumerate() {
                    let Some((b, _)) = p else { continue };
                    let n = (*b.max(&0) as f64 / total_max as f64 * f64::from(bar_w)).round();
                    let phase = PARTS[k].0;
                    let glyph = if phase == Phase::Ready {
                        '·'
                    } else {
                        phase_glyph(phase)
                    };
                    let s: String = std::iter::repeat_n(glyph, n as usize).collect();
                    bx = put(buf, area, bx, y, &s, phase_style(phase, color));
                }
            }
        }
    }
}
