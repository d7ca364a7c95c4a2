//! Output: text for people, JSON for programs. Nothing here parses or analyses.

pub mod html;
pub mod json;
pub mod text;

use std::io::IsTerminal;

/// The version of every JSON document rankscope writes (`docs/json.md`): the run
/// documents (`json`) and the snapshot documents (`mem_json`) change together.
pub(crate) const SCHEMA_VERSION: u32 = 5;

/// Colour and width are decided once, here. Colour: `--color always|never`, else
/// `NO_COLOR` or `TERM=dumb` (no colour), else whether stdout is a terminal. Width:
/// `--width N`, else `COLUMNS`, else the terminal's columns when stdout is one, else 80.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// Whether to write ANSI colour and bold; off for pipes, `NO_COLOR` and `TERM=dumb`.
    pub color: bool,
    /// Columns of text output; never below `MIN_WIDTH`.
    pub width: usize,
}

/// The width of text output when stdout is not a terminal and `--width` is not given.
pub const DEFAULT_WIDTH: usize = 80;
/// Tables keep their fixed columns below this; narrower requests are raised to it.
pub(crate) const MIN_WIDTH: usize = 40;

/// `--width N`, else `COLUMNS` (a positive whole number), else the terminal's columns when
/// stdout is one, else 80: as `ls` and git do, so that a pipe from a narrow pane
/// (`COLUMNS=60 rankscope diff … | head`) is laid out for the pane.
pub(crate) fn output_width(given: Option<usize>) -> usize {
    let columns = std::env::var("COLUMNS").ok();
    width_from(given, columns.as_deref(), || {
        if std::io::stdout().is_terminal() {
            crossterm::terminal::size()
                .map(|(cols, _)| cols as usize)
                .ok()
                .filter(|c| *c > 0)
        } else {
            None
        }
    })
}

/// The choice of `output_width`, its inputs given: `COLUMNS` that is not a positive number
/// is ignored, as `ls` ignores it.
fn width_from(
    given: Option<usize>,
    columns: Option<&str>,
    terminal: impl FnOnce() -> Option<usize>,
) -> usize {
    let from_env = || {
        columns
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|c| *c > 0)
    };
    given
        .or_else(from_env)
        .or_else(terminal)
        .unwrap_or(DEFAULT_WIDTH)
        .max(MIN_WIDTH)
}

/// `--color auto` for output that is a terminal or not, from the environment: what
/// [`Style::decide`] picks, for text that is not a `Style`'s (clap's help).
pub fn auto_color_for(stdout_is_terminal: bool) -> bool {
    auto_color(
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("TERM").as_deref(),
        stdout_is_terminal,
    )
}

/// `--color auto`: colour on a terminal, unless `NO_COLOR` is set and not empty or the
/// terminal is `TERM=dumb` (which shows escape codes as text; git and ls agree).
fn auto_color(
    no_color: Option<&std::ffi::OsStr>,
    term: Option<&std::ffi::OsStr>,
    stdout_is_terminal: bool,
) -> bool {
    let no_color = no_color.is_some_and(|v| !v.is_empty());
    let dumb = term.is_some_and(|t| t == "dumb");
    !no_color && !dumb && stdout_is_terminal
}

/// `--color`: the user's word on colour, before the terminal is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and neither `NO_COLOR` nor `TERM=dumb` says no.
    Auto,
    /// Colour even into a pipe or file.
    Always,
    /// No colour.
    Never,
}

impl Style {
    /// The style for `--color` and `--width`, asking the environment and terminal only
    /// where they are not given.
    pub fn decide(choice: ColorChoice, width: Option<usize>) -> Style {
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => auto_color_for(std::io::stdout().is_terminal()),
        };
        Style {
            color,
            width: output_width(width),
        }
    }
    /// No colour, 80 columns.
    pub fn plain() -> Style {
        Style {
            color: false,
            width: DEFAULT_WIDTH,
        }
    }
    /// The same style at another width (tests, documents of a fixed width).
    pub fn with_width(self, width: usize) -> Style {
        Style {
            width: width.max(MIN_WIDTH),
            ..self
        }
    }
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub(crate) fn bad(&self, s: &str) -> String {
        self.paint("1;31", s)
    }
    pub(crate) fn good(&self, s: &str) -> String {
        self.paint("1;32", s)
    }
    pub(crate) fn warn(&self, s: &str) -> String {
        self.paint("1;33", s)
    }
    pub(crate) fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    /// `s` dimmed when colour is on; unchanged otherwise.
    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
}

/// Pads or cuts to a display width in terminal columns (log text here is sanitized).
pub(crate) fn fit(s: &str, width: usize) -> String {
    let t = crate::base::text::truncate(s, width);
    let n = crate::base::text::columns(&t);
    format!("{t}{}", " ".repeat(width.saturating_sub(n)))
}

/// Cuts to a display width without padding.
pub(crate) fn cut(s: &str, width: usize) -> String {
    crate::base::text::truncate(s, width).trim_end().to_string()
}

/// Formats a figure for tables: memory in binary units, in the unit and with the
/// decimals the log printed it with (SGLang's `GB` is GiB, so `0.60 GB` shows as
/// `0.60 GiB`; `units::bytes_as_printed`); counts with separators. The server's own
/// spelling stays only in quoted evidence lines.
pub(crate) fn figure_text(value: f64, is_bytes: bool, resolution: f64) -> String {
    if is_bytes {
        crate::base::units::bytes_as_printed(
            value.round() as i64,
            resolution.round().max(0.0) as u64,
        )
    } else if value.fract() == 0.0 {
        crate::base::units::group_thousands(value as i64)
    } else {
        format!("{value:.2}")
    }
}

/// `figure_text` in a table cell `width` columns wide: memory whose printed resolution
/// needs more columns (`288.000 MiB`, a whole-KiB figure) is shown a decimal coarser until
/// it fits (`288.00 MiB`); `--json` keeps the figure's own resolution. Other figures are
/// as `figure_text` gives them.
pub fn figure_cell(value: f64, is_bytes: bool, resolution: f64, width: usize) -> String {
    let mut res = resolution;
    let mut text = figure_text(value, is_bytes, res);
    // Three coarser steps at most: past that the figure is wide by its size, not its
    // decimals, and is shown whole (the row shifts).
    for _ in 0..3 {
        if !is_bytes || res < 2.0 || crate::base::text::columns(&text) <= width {
            break;
        }
        res *= 10.0;
        text = figure_text(value, is_bytes, res);
    }
    text
}

/// The word said after a figure's number where its name does not say what it counts: a
/// declared figure's own word (`pages`), `tokens` for a declared figure counted in tokens
/// (`block tokens  32 tokens`), `s` for seconds (`compile time  38.2 s`); none for the
/// built-in `tokens` or bytes (whose unit is in the number: `6.73 GiB`).
pub fn figure_unit_word(name: &crate::base::event::FigureName) -> Option<&str> {
    use crate::base::event::{FigureName, FigureUnit};
    match (name, name.unit()) {
        (_, FigureUnit::Named(unit)) => Some(unit),
        (FigureName::Declared(_), FigureUnit::Tokens) => Some("tokens"),
        (_, FigureUnit::Seconds) => Some("s"),
        _ => None,
    }
}

/// A figure's number without its unit word (`figure_unit_word`): a seconds figure as the
/// phase table's durations are (`38.2`, `38.0`; whole seconds from 100 s), anything else
/// as `figure_cell` gives it within `width` columns.
pub(crate) fn figure_number(
    name: &crate::base::event::FigureName,
    value: f64,
    is_bytes: bool,
    resolution: f64,
    width: usize,
) -> String {
    if *name.unit() == crate::base::event::FigureUnit::Seconds {
        crate::base::units::seconds_number(value)
    } else {
        figure_cell(value, is_bytes, resolution, width)
    }
}

/// [`figure_number`] followed by the figure's unit word, if it has one (`2,048 pages`).
pub(crate) fn figure_shown(
    name: &crate::base::event::FigureName,
    value: f64,
    is_bytes: bool,
    resolution: f64,
    width: usize,
) -> String {
    with_unit_word(
        name,
        figure_number(name, value, is_bytes, resolution, width),
    )
}

/// A figure's number, value or delta (`2,048`, `+2,836`, `38.0 / 38.1`), followed by its
/// unit word when it has one (`figure_unit_word`).
pub(crate) fn with_unit_word(name: &crate::base::event::FigureName, number: String) -> String {
    match figure_unit_word(name) {
        Some(unit) => format!("{number} {unit}"),
        None => number,
    }
}

/// `rankscope events` as a table.
pub fn events_text(
    run: &crate::model::Run,
    filter: &crate::model::EventFilter,
    style: Style,
) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    // A stamp is shown at the resolution its format prints (`10:00:04.120` for
    // milliseconds), the TIME column widened to hold it only when a shown line has one.
    let fine = |e: &crate::base::event::Event| e.ts.is_some() && e.ts_step_ms < 1000;
    let time_width = if run.events.iter().any(|e| filter.keeps(e) && fine(e)) {
        13
    } else {
        9
    };
    let _ = writeln!(
        o,
        "{}",
        style.bold(&format!(
            "{} RANK         KIND               FIELDS",
            fit("TIME", time_width)
        ))
    );
    for e in run.events.iter().filter(|e| filter.keeps(e)) {
        let format = if fine(e) { "%H:%M:%S%.3f" } else { "%H:%M:%S" };
        let time = (e.ts.map(|t| t.format(format).to_string())).unwrap_or_else(|| "-".into());
        let rank = e
            .rank
            .as_ref()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "-".into());
        let fields: Vec<String> = e
            .fields
            .iter()
            .map(|(k, v)| match v {
                crate::base::event::FieldValue::Bytes { bytes, resolution } => {
                    format!(
                        "{k}={}",
                        crate::base::units::bytes_as_printed(*bytes, *resolution)
                    )
                }
                crate::base::event::FieldValue::Int(i) => format!("{k}={i}"),
                crate::base::event::FieldValue::Float(f) => format!("{k}={f}"),
                crate::base::event::FieldValue::Text(t) => format!("{k}={}", cut(t, 40)),
            })
            .collect();
        // FIELDS wraps in its column, after TIME, RANK 12 and KIND 18 and their spaces.
        let lead = format!(
            "{} {} {} ",
            fit(&time, time_width),
            fit(&rank, 12),
            fit(&e.kind, 18)
        );
        let pad = " ".repeat(crate::base::text::columns(&lead));
        for line in wrap_indented(&fields.join(" "), style.width, &lead, &pad) {
            let _ = writeln!(o, "{}", line.trim_end());
        }
    }
    let c = run.counts();
    let shown = run.events.iter().filter(|e| filter.keeps(e)).count();
    let _ = writeln!(
        o,
        "{shown} of {} events shown; {} lines not understood",
        run.events.len(),
        c.unknown
    );
    o
}

/// Number-and-unit pairs (`0.64 GiB`, `4.0 s`, `8 ranks`), `± 0.5` and `a -> b`: the space
/// inside is made non-breaking before wrapping, so a line never ends between them.
// A constant pattern: every text render compiles it, so a typo fails every test.
#[allow(clippy::expect_used)]
fn glued_pairs() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(
            r"(\d) ([KMGTP]i?B|B|s|ms|us|tokens?|ranks?|blocks?|segments?|holes?|samples?)\b|([±~]) (\d)|(\S) (->)|(->) (\S)",
        )
        .expect("a constant pattern")
    })
}

const NBSP: char = '\u{a0}';

fn glue(text: &str) -> String {
    let once = |t: &str| {
        glued_pairs()
            .replace_all(t, |c: &regex::Captures| {
                // Exactly one alternative matched: its two groups are the pair.
                let mut groups = c.iter().skip(1).flatten();
                match (groups.next(), groups.next()) {
                    (Some(a), Some(b)) => format!("{}{NBSP}{}", a.as_str(), b.as_str()),
                    _ => c[0].to_string(),
                }
            })
            .into_owned()
    };
    // Matches do not overlap: `0 -> 1` takes a second pass to glue both sides.
    let mut glued = once(text);
    loop {
        let again = once(&glued);
        if again == glued {
            return glued;
        }
        glued = again;
    }
}

/// Word wrap to `width` terminal columns (`textwrap`, widths from `unicode-width`): lines
/// break at spaces only, never inside a word nor between a number and its unit; a word
/// longer than a line stays whole on its own line rather than being cut.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let glued = glue(text);
    let options = textwrap::Options::new(width.max(1))
        .break_words(false)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    let lines: Vec<String> = textwrap::wrap(&glued, options)
        .into_iter()
        .map(|l| l.replace(NBSP, " "))
        .collect();
    if lines.is_empty() {
        vec![String::new()]
    } else {
        lines
    }
}

/// `text` wrapped to `width` columns: `first` before the first line, `rest` (usually
/// spaces of the same width) before the others.
pub fn wrap_indented(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let room = width
        .saturating_sub(crate::base::text::columns(first).max(crate::base::text::columns(rest)))
        .max(20);
    wrap(text, room)
        .into_iter()
        .enumerate()
        .map(|(i, l)| format!("{}{l}", if i == 0 { first } else { rest }))
        .collect()
}

/// Writes `text` wrapped to `width` columns, `indent` spaces before the first line and
/// two more before the lines it continues on: prose lines, and a table's rows where the
/// output is narrower than the table (each row as one line with its cells named, so
/// nothing runs past the terminal's edge and nothing is cut).
pub(crate) fn put(o: &mut String, width: usize, indent: usize, text: &str) {
    let first = " ".repeat(indent);
    let rest = " ".repeat(indent + 2);
    for l in wrap_indented(text, width, &first, &rest) {
        o.push_str(&l);
        o.push('\n');
    }
}

/// A run of ranks that differ only in their last number, consecutively, as `TP0–TP7`
/// (with the count when there are more than two); others as a list, `TP0, TP3`.
pub(crate) fn rank_span<'r>(
    ranks: impl IntoIterator<Item = &'r crate::base::event::Rank>,
) -> String {
    let names: Vec<String> = ranks.into_iter().map(|r| r.to_string()).collect();
    let split = |n: &str| -> Option<(String, u64)> {
        let digits = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (head, num) = n.split_at(n.len() - digits);
        Some((head.to_string(), num.parse().ok()?))
    };
    let parts: Vec<Option<(String, u64)>> = names.iter().map(|n| split(n)).collect();
    let consecutive = names.len() > 2
        && parts.iter().all(Option::is_some)
        && parts.windows(2).all(|w| match (&w[0], &w[1]) {
            (Some((ha, a)), Some((hb, b))) => ha == hb && Some(*b) == a.checked_add(1),
            _ => false,
        });
    match (names.first(), names.last()) {
        (Some(first), Some(last)) if consecutive => {
            format!("{first}–{last} ({} ranks)", names.len())
        }
        _ => names.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_numbers_with_units() {
        // 26 columns end right after `0.64`: the unit must come along to the next line.
        let lines = wrap("verdict: mem usage rose to 0.64 GiB on all ranks", 30);
        assert_eq!(
            lines,
            ["verdict: mem usage rose to", "0.64 GiB on all ranks"]
        );
        // Column widths, not characters: `…` and `–` are one column, CJK two.
        assert_eq!(wrap("漢字漢字 ab", 9), ["漢字漢字", "ab"]);
        // A word longer than the line stays whole.
        assert_eq!(
            wrap("x /a/very/long/path y", 5),
            ["x", "/a/very/long/path", "y"]
        );
        // Both sides of an arrow stay with it.
        assert_eq!(wrap("OOMs 0 -> 1", 8), ["OOMs", "0 -> 1"]);
    }

    #[test]
    fn width_order() {
        let term = || Some(120);
        // --width wins over COLUMNS and the terminal; COLUMNS over the terminal.
        assert_eq!(width_from(Some(100), Some("60"), term), 100);
        assert_eq!(width_from(None, Some("60"), term), 60);
        assert_eq!(width_from(None, Some("60"), || None), 60);
        assert_eq!(width_from(None, None, term), 120);
        // Not a positive number: ignored.
        assert_eq!(width_from(None, Some("0"), || None), DEFAULT_WIDTH);
        assert_eq!(width_from(None, Some("wide"), term), 120);
        // Narrower than the tables allow: raised.
        assert_eq!(width_from(None, Some("20"), || None), MIN_WIDTH);
    }

    #[test]
    fn colour_under_auto() {
        use std::ffi::OsStr;
        let (xterm, dumb) = (Some(OsStr::new("xterm")), Some(OsStr::new("dumb")));
        assert!(auto_color(None, xterm, true));
        assert!(auto_color(None, None, true));
        assert!(!auto_color(None, xterm, false));
        assert!(!auto_color(None, dumb, true));
        assert!(!auto_color(Some(OsStr::new("1")), xterm, true));
        // An empty NO_COLOR is not set (no-color.org).
        assert!(auto_color(Some(OsStr::new("")), xterm, true));
    }

    #[test]
    fn rank_spans() {
        let r = |s: &str| crate::base::event::Rank::parse_tags(s).expect("a rank");
        let eight: Vec<_> = (0..8).map(|i| r(&format!("TP{i}"))).collect();
        assert_eq!(rank_span(&eight), "TP0–TP7 (8 ranks)");
        assert_eq!(rank_span(&[r("TP0"), r("TP3")]), "TP0, TP3");
        // Tag numbers at the top of their range are compared without overflow.
        let top = [r("TP4294967294"), r("TP4294967295"), r("TP0")];
        assert_eq!(rank_span(&top), "TP4294967294, TP4294967295, TP0");
        assert_eq!(rank_span(&[r("TP0"), r("TP1"), r("TP3")]), "TP0, TP1, TP3");
        assert_eq!(
            rank_span(&[r("PP1 TP0"), r("PP1 TP1"), r("PP1 TP2")]),
            "PP1 TP0–PP1 TP2 (3 ranks)"
        );
    }
}
