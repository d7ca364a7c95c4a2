//! Widgets that draw straight into the buffer: the rank timeline and the memory lanes.

pub(crate) mod memchart;
pub(crate) mod memory;
pub(crate) mod timeline;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use crate::model::Phase;

/// How a phase looks. Without colour each phase still has its own glyph, so the bars read
/// on a monochrome terminal and in text captures.
pub(crate) fn phase_glyph(p: Phase) -> char {
    match p {
        Phase::Launch => '░',
        Phase::DistInit => '▒',
        Phase::WeightLoad => '▓',
        Phase::KvCache => '█',
        Phase::CudaGraph => '▚',
        Phase::Ready => '═',
    }
}

pub(crate) fn phase_style(p: Phase, color: bool) -> Style {
    if !color {
        return Style::new();
    }
    let c = match p {
        Phase::Launch => Color::DarkGray,
        Phase::DistInit => Color::Blue,
        Phase::WeightLoad => Color::Cyan,
        Phase::KvCache => Color::Magenta,
        Phase::CudaGraph => Color::Yellow,
        Phase::Ready => Color::Green,
    };
    Style::new().fg(c)
}

pub(crate) fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

pub(crate) fn dim(color: bool) -> Style {
    if color {
        Style::new().add_modifier(Modifier::DIM)
    } else {
        Style::new()
    }
}

pub(crate) fn failure_style(color: bool) -> Style {
    let s = Style::new().add_modifier(Modifier::BOLD);
    if color {
        s.fg(Color::Red)
    } else {
        s.add_modifier(Modifier::REVERSED)
    }
}

pub(crate) fn warn_style(color: bool) -> Style {
    let s = Style::new().add_modifier(Modifier::BOLD);
    if color {
        s.fg(Color::Yellow)
    } else {
        s.add_modifier(Modifier::UNDERLINED)
    }
}

/// Writes `text` from (x, y), clipped to `area`; returns the column after the last char.
/// Goes cell by cell so that no size of terminal can index outside the buffer.
pub(crate) fn put(buf: &mut Buffer, area: Rect, x: u16, y: u16, text: &str, style: Style) -> u16 {
    let mut cx = x;
    if y < area.top() || y >= area.bottom() {
        return cx;
    }
    for ch in text.chars() {
        if cx >= area.right() {
            break;
        }
        if cx >= area.left() {
            if let Some(cell) = buf.cell_mut((cx, y)) {
                cell.set_char(ch).set_style(style);
            }
        }
        cx = cx.saturating_add(1);
    }
    cx
}
