//! Text layout that the state and the drawing both need: time labels, wrapped lines and
//! flowed legends. It knows no `App`, so `app` can size the fitted zoom by the same text
//! the views draw without importing them.

use ratatui::text::{Line, Span};

use crate::base::text::columns;

pub(crate) fn time_label(t: f64) -> String {
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

/// A path cut from the left to `width` columns at a `/` where it can be: `…/gpu2/tp2_nccl_fail`
/// keeps the run's own name, the informative end; a last component longer than the width
/// keeps its end.
pub(crate) fn shorten_left(path: &str, width: usize) -> String {
    if columns(path) <= width {
        return path.to_string();
    }
    let room = width.saturating_sub(1);
    // The longest tail that fits, starting at a separator if one is in it.
    let chars: Vec<char> = path.chars().collect();
    let mut start = chars.len();
    let mut used = 0;
    while start > 0 {
        let w = columns(&chars[start - 1].to_string());
        if used + w > room {
            break;
        }
        used += w;
        start -= 1;
    }
    let tail: String = chars[start..].iter().collect();
    let tail = match tail.find('/') {
        Some(i) if i + 1 < tail.len() && !tail.starts_with('/') => tail[i..].to_string(),
        _ => tail,
    };
    format!("…{tail}")
}

/// Lays out items left to right with two spaces between, starting a new line where the
/// next one would not fit: a legend wraps rather than losing its last entries.
pub(crate) fn flow(items: Vec<Vec<Span<'static>>>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width);
    let mut lines = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for item in items {
        let w: usize = item.iter().map(|s| columns(&s.content)).sum();
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

/// Breaks a line to `width` terminal columns (textwrap, widths from unicode-width: a wide
/// character takes two), at a space when there is one, a word longer than the line cut
/// where it must, so that the pane can count its rows and scroll by them exactly.
pub(crate) fn wrap_line(s: &str, width: usize) -> Vec<String> {
    if width == 0 || columns(s) <= width {
        return vec![s.to_string()];
    }
    let options = textwrap::Options::new(width)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .break_words(true);
    textwrap::wrap(s, options)
        .into_iter()
        .map(std::borrow::Cow::into_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_line_counts_columns_not_characters() {
        // Six CJK characters are twelve columns: at width 8 they take two rows (4 + 2
        // characters), where counting characters would have left them on one.
        let rows = wrap_line("显存不足错误", 8);
        assert_eq!(rows, ["显存不足", "错误"]);
        assert!(rows.iter().all(|r| columns(r) <= 8));
        assert_eq!(
            wrap_line("free 40 MiB of 80", 8),
            ["free 40", "MiB of", "80"]
        );
        assert_eq!(wrap_line("abcdefghij", 4), ["abcd", "efgh", "ij"]);
    }

    #[test]
    fn flow_measures_items_in_columns() {
        let wide = || vec![Span::raw("内存内存")]; // 8 columns; two and the gap between are 18
        assert_eq!(flow(vec![wide(), wide()], 18).len(), 1);
        assert_eq!(flow(vec![wide(), wide()], 17).len(), 2);
    }
}
