//! Text layout that the state and the drawing both need: time labels, wrapped lines and
//! flowed legends. It knows no `App`, so `app` can size the fitted zoom by the same text
//! the views draw without importing them.

use ratatui::text::{Line, Span};

pub fn time_label(t: f64) -> String {
    if t >= 60.0 {
        let m = (t / 60.0).floor();
        let s = t - m * 60.0;
        if s.abs() < 0.05 {
            format!("{m:.0}m")
        } else {
            format!("{m:.0}m{s:02.0}s")
        }
    } else if (t - t.round()).abs() < 0.05 {
        format!("{t:.0}s")
    } else {
        format!("{t:.1}s")
    }
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
