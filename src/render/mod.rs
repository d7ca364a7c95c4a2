//! Output: text for people, JSON for programs. Nothing here parses or analyses.

pub mod diff_text;
pub mod json;
pub mod mem_json;
pub mod summary_text;

use std::io::IsTerminal;

/// Colour is decided once, here: `--color always|never`, else `NO_COLOR`, else whether
/// stdout is a terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl Style {
    pub fn decide(choice: ColorChoice) -> Style {
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stdout().is_terminal()
            }
        };
        Style { color }
    }
    pub fn plain() -> Style {
        Style { color: false }
    }
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub fn bad(&self, s: &str) -> String {
        self.paint("1;31", s)
    }
    pub fn good(&self, s: &str) -> String {
        self.paint("1;32", s)
    }
    pub fn warn(&self, s: &str) -> String {
        self.paint("1;33", s)
    }
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
}

/// Pads or cuts to a display width (counted in chars; log text here is sanitized).
pub fn fit(s: &str, width: usize) -> String {
    let t = crate::text::truncate(s, width);
    let n = t.chars().count();
    format!("{t}{}", " ".repeat(width.saturating_sub(n)))
}

/// Cuts to a display width without padding.
pub fn cut(s: &str, width: usize) -> String {
    crate::text::truncate(s, width).trim_end().to_string()
}

/// Formats a figure for tables: memory in binary units — GiB with two decimals when it was
/// printed that way (SGLang's `GB` is GiB, so `0.60 GB` shows as `0.60 GiB`), else the
/// nearest binary unit; counts with separators. The server's own spelling stays only in
/// quoted evidence lines.
pub fn figure_text(value: f64, is_bytes: bool, resolution: f64) -> String {
    if is_bytes {
        let gib = crate::units::GIB;
        if (resolution - gib / 100.0).abs() < 2.0 || resolution > gib / 200.0 {
            format!("{:.2} GiB", value / gib)
        } else {
            crate::units::human_bytes(value.round() as i64)
        }
    } else if value.fract() == 0.0 {
        crate::units::group_thousands(value as i64)
    } else {
        format!("{value:.2}")
    }
}

/// `rankscope events` as a table.
pub fn events_text(
    run: &crate::model::Run,
    keep: &dyn Fn(&crate::event::Event) -> bool,
    style: Style,
) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}",
        style.bold("TIME      RANK         KIND               FIELDS")
    );
    for e in run.events.iter().filter(|e| keep(e)) {
        let time =
            e.ts.map(|t| t.format("%H:%M:%S").to_string())
                .unwrap_or_else(|| "-".into());
        let rank = e
            .rank
            .as_ref()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "-".into());
        let fields: Vec<String> = e
            .fields
            .iter()
            .map(|(k, v)| match v {
                crate::event::FieldValue::Bytes { bytes, .. } => {
                    format!("{k}={}", crate::units::human_bytes(*bytes))
                }
                crate::event::FieldValue::Int(i) => format!("{k}={i}"),
                crate::event::FieldValue::Float(f) => format!("{k}={f}"),
                crate::event::FieldValue::Text(t) => format!("{k}={}", cut(t, 40)),
            })
            .collect();
        let row = format!(
            "{} {} {} {}",
            fit(&time, 9),
            fit(&rank, 12),
            fit(&e.kind, 18),
            fields.join(" ")
        );
        let _ = writeln!(o, "{}", row.trim_end());
    }
    let c = run.counts();
    let shown = run.events.iter().filter(|e| keep(e)).count();
    let _ = writeln!(
        o,
        "{shown} of {} events shown; {} lines not understood",
        run.events.len(),
        c.unknown
    );
    o
}

/// Greedy word wrap to `width` columns (words longer than a line stay whole).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let cur = lines.last_mut().map(|l| l.chars().count()).unwrap_or(0);
        if cur > 0 && cur + 1 + word.chars().count() > width {
            lines.push(String::new());
        }
        if let Some(l) = lines.last_mut() {
            if !l.is_empty() {
                l.push(' ');
            }
            l.push_str(word);
        }
    }
    lines
}
