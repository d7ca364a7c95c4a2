//! The key map, over whatever view is open.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use ratatui::Frame;

use crate::render::fit;
use crate::tui::input::HELP;
use crate::tui::widgets::bold;

pub(crate) fn draw(f: &mut Frame, area: Rect) {
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
