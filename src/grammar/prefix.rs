//! A record prefix compiled for reading, and what reading one says (`PrefixInfo`).
//!
//! Every event line's prefix is read here, so what can be settled once is settled when the
//! prefix compiles: the capture groups reading looks up are found by index (a lookup by
//! name hashes the name, on every line, for each of a dozen names), and the date and time
//! formats are parsed into chrono's items once (`parse_from_str` parses its format string
//! on every call, and was a sixth of reading an event line).

use chrono::format::{Item, Parsed, StrftimeItems};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

use super::knowledge::{self, Knowledge, ProcessRole};
use super::lazy_regex::LazyRegex;
use super::{stamp, PLACEHOLDER_DATE};
use crate::base::event::{Name, Rank};

/// What a record's prefix says about it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrefixInfo {
    /// The record's stamp (the date inferred where only a time was printed).
    pub ts: Option<NaiveDateTime>,
    /// The step between two stamps this prefix can print, in milliseconds, read from the
    /// stamp's format (`%.3f`: 1) or, for a format whose fraction is as long as printed
    /// (`%.f`), from the digits printed: a stamp printed `…15.000` is still a millisecond
    /// stamp, one printed `…15` a whole-second one.
    pub ts_step_ms: u32,
    /// The date was not printed (time-only or yearless stamps).
    pub date_inferred: bool,
    /// Not even month and day were printed (`[HH:MM:SS TP0]`): the date is a stand-in
    /// until the loader infers it.
    pub time_only: bool,
    /// The rank the prefix names, when it names one.
    pub rank: Option<Rank>,
    pub(crate) pid: Option<u32>,
    /// The process name a vLLM-style prefix gives (`Worker_TP3`, `EngineCore_DP0`).
    pub(crate) process: Option<Name>,
    /// The host NCCL's `host:pid:tid` prefix names.
    pub(crate) host: Option<Name>,
    /// Byte offset in the line where the event's regex starts: the prefix's end, or the
    /// event's literal when that begins inside the prefix (c10's `]:[W` warning marker).
    pub message_start: usize,
    /// Byte offset in the line where the prefix ends: what the event shows as its message
    /// starts here even when its regex had to start earlier.
    pub prefix_end: usize,
    /// Byte offset in the line where the prefix starts (a record may be glued to a bar).
    pub prefix_start: usize,
    /// The stamp printed no date and a prefix of the same grammar prints one (glog's
    /// header): the scan looks for such lines before it (`GrammarSet::printed_date`).
    pub(crate) datable: bool,
    /// The prefix captured a date or time that its format does not read (`grammars
    /// check` reports it; the scan leaves the line without a time, and a note says so).
    pub(crate) stamp_error: Option<String>,
    /// The prefix names a rank by a number too large to be one (`TP4294967296`): the
    /// scan keeps no event of the line, and a note says so.
    pub rank_error: Option<String>,
    /// The prefix's `tags` capture matched this text but reads no rank (`rank=2`,
    /// `shard:a`): `grammars check` says so.
    pub(crate) tags_unread: Option<String>,
    /// Which prefix read the line: (grammar, prefix) indices in the set, for `grammars
    /// check` to name another grammar's prefix that took a sample's line.
    pub(crate) read_by: Option<(usize, usize)>,
}

/// One grammar's record prefix, compiled.
pub(crate) struct CompiledPrefix {
    pub(crate) id: String,
    pub(crate) regex: LazyRegex,
    pub(crate) date: StampFormat,
    pub(crate) time: StampFormat,
    pub(crate) stamp: Option<StampFormat>,
    groups: PrefixGroups,
    /// Some prefix of its grammar reads a whole date (`date` or `stamp`): a stamp of this
    /// one that prints none may be dated by such a line before it (`stamp::DatingPrefixes`).
    pub(crate) grammar_prints_dates: bool,
}

/// The indices of the capture groups a prefix is read by (`knowledge::PREFIX_CAPTURES`).
struct PrefixGroups {
    date: Option<usize>,
    md: Option<usize>,
    time: Option<usize>,
    stamp: Option<usize>,
    tags: Option<usize>,
    tp: Option<usize>,
    gpu: Option<usize>,
    grank: Option<usize>,
    pid: Option<usize>,
    proc: Option<usize>,
    host: Option<usize>,
}

impl PrefixGroups {
    fn of(regex: &LazyRegex) -> PrefixGroups {
        let index = |name: &str| regex.group_index(name);
        PrefixGroups {
            date: index("date"),
            md: index("md"),
            time: index("time"),
            stamp: index("stamp"),
            tags: index("tags"),
            tp: index("tp"),
            gpu: index("gpu"),
            grank: index("grank"),
            pid: index("pid"),
            proc: index("proc"),
            host: index("host"),
        }
    }
}

/// The group at `index` when the prefix has it and it took part in the match.
fn group<'h>(caps: &impl Groups<'h>, index: Option<usize>) -> Option<Found<'h>> {
    caps.group(index?)
}

/// A match's capture groups by index: a regex's captures, or the spans the event memo
/// kept of a line of the same shape (`event_memo::Spans`), read the same way.
pub(crate) trait Groups<'h> {
    fn group(&self, index: usize) -> Option<Found<'h>>;
}

/// One group's text and where it lies in the text searched.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found<'h> {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) text: &'h str,
}

impl<'h> Found<'h> {
    pub(crate) fn as_str(&self) -> &'h str {
        self.text
    }

    pub(crate) fn range(&self) -> std::ops::Range<usize> {
        self.start..self.end
    }
}

impl<'h> Groups<'h> for regex::Captures<'h> {
    fn group(&self, index: usize) -> Option<Found<'h>> {
        self.get(index).map(|m| Found {
            start: m.start(),
            end: m.end(),
            text: m.as_str(),
        })
    }
}

/// A strftime format of a prefix, parsed once.
pub(crate) struct StampFormat {
    /// As the grammar wrote it (for messages).
    pub(crate) text: String,
    items: Vec<Item<'static>>,
    step: StepRule,
    quick: Quick,
}

/// The default formats, read by hand where a stamp has their plainest form: chrono's
/// general parser took ~870 instructions a line's stamp (its date and its time), an eighth
/// of reading a rank file's event line from the memo (callgrind, `summary` of 1,024
/// `mkranks.py` rank files). Any other text (a one-digit month, a leap second, a fraction
/// past nine digits, a comma) is left to chrono, so the two agree on every input
/// (`the_default_formats_read_by_hand_as_chrono_reads_them`).
#[derive(Clone, Copy, PartialEq)]
enum Quick {
    /// `%Y-%m-%d` on `dddd-dd-dd`.
    Date,
    /// `%H:%M:%S%.f` on `dd:dd:dd`, optionally `.` and one to nine digits.
    Time,
    None,
}

/// The value of ASCII digits, `None` if any byte is not one.
fn digits_value(bytes: &[u8]) -> Option<u32> {
    bytes.iter().try_fold(0u32, |v, &b| {
        b.is_ascii_digit().then(|| v * 10 + u32::from(b - b'0'))
    })
}

/// `dddd-dd-dd` as a date: `Some(None)` where that is no date (`2026-02-30`, a letter for
/// a digit), `None` for another shape. The month and day are read as an `md` capture's
/// (`stamp::month_day`).
fn quick_date(s: &str) -> Option<Option<NaiveDate>> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = i32::try_from(digits_value(&b[..4])?).ok()?;
    // `MM-DD` is a form `month_day` reads: past the shape above, its `None` is a month or
    // day that is no digits or does not exist, which chrono refuses too.
    Some(super::stamp::month_day(s.get(5..)?, year))
}

/// `dd:dd:dd` with an optional fraction as a time: `Some(None)` for one out of range,
/// `None` for another shape (and for second 60, which chrono reads as a leap second).
fn quick_time(s: &[u8]) -> Option<Option<NaiveTime>> {
    let (clock, fraction) = s.split_at_checked(8)?;
    let [h0, h1, b':', m0, m1, b':', s0, s1] = *clock else {
        return None;
    };
    let nanos = match fraction {
        [] => 0,
        [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => {
            digits_value(digits)? * 10u32.pow(9 - digits.len() as u32)
        }
        _ => return None,
    };
    let second = digits_value(&[s0, s1])?;
    if second >= 60 {
        return None;
    }
    let (hour, minute) = (digits_value(&[h0, h1])?, digits_value(&[m0, m1])?);
    Some(NaiveTime::from_hms_nano_opt(hour, minute, second, nanos))
}

impl StampFormat {
    /// `None` when chrono cannot read the format (a `%` directive it does not know).
    pub(crate) fn new(text: &str) -> Option<StampFormat> {
        let items = StrftimeItems::new(text).parse_to_owned().ok()?;
        let quick = match text {
            "%Y-%m-%d" => Quick::Date,
            "%H:%M:%S%.f" => Quick::Time,
            _ => Quick::None,
        };
        Some(StampFormat {
            text: text.to_string(),
            items,
            step: StepRule::of(text),
            quick,
        })
    }

    /// As chrono's `parse_from_str` with this format: the same items, parsed once.
    fn parsed(&self, s: &str) -> Option<Parsed> {
        let mut parsed = Parsed::new();
        chrono::format::parse(&mut parsed, s, self.items.iter()).ok()?;
        Some(parsed)
    }

    pub(crate) fn time(&self, s: &str) -> Option<NaiveTime> {
        if self.quick == Quick::Time {
            if let Some(time) = quick_time(s.as_bytes()) {
                return time;
            }
        }
        self.parsed(s)?.to_naive_time().ok()
    }

    pub(crate) fn date(&self, s: &str) -> Option<NaiveDate> {
        if self.quick == Quick::Date {
            if let Some(date) = quick_date(s) {
                return date;
            }
        }
        self.parsed(s)?.to_naive_date().ok()
    }

    pub(crate) fn date_time(&self, s: &str) -> Option<NaiveDateTime> {
        self.parsed(s)?.to_naive_datetime_with_offset(0).ok()
    }

    /// The step of a stamp printed `printed` in this format, in milliseconds.
    pub(crate) fn step_ms(&self, printed: &str) -> u32 {
        self.step.step_ms(printed)
    }
}

/// How a format's step is known: fixed by its fraction's digits, read from the digits
/// printed (`%.f`), or whole seconds.
#[derive(Clone, Copy)]
enum StepRule {
    Fixed(u32),
    AsPrinted,
    WholeSeconds,
}

/// The step of `n` fraction digits, in milliseconds (1 at the finest: the analysis counts
/// in milliseconds).
fn fraction_step(n: u32) -> u32 {
    if n >= 3 {
        1
    } else {
        10u32.pow(3 - n)
    }
}

impl StepRule {
    fn of(format: &str) -> StepRule {
        let fixed = ["%.3f", "%3f", "%.6f", "%6f", "%.9f", "%9f"];
        if let Some(f) = fixed.iter().find(|f| format.contains(*f)) {
            return StepRule::Fixed(fraction_step(u32::from(f.as_bytes()[f.len() - 2] - b'0')));
        }
        if format.contains("%.f") || format.contains("%f") {
            StepRule::AsPrinted
        } else {
            StepRule::WholeSeconds
        }
    }

    fn step_ms(self, printed: &str) -> u32 {
        match self {
            StepRule::Fixed(step) => step,
            StepRule::WholeSeconds => 1000,
            StepRule::AsPrinted => {
                // The printed fraction, found after the last `:` when there is one.
                let tail = printed.rsplit(':').next().unwrap_or(printed);
                let fraction = tail
                    .rfind(['.', ','])
                    .map(|i| tail[i + 1..].bytes().take_while(u8::is_ascii_digit).count())
                    .unwrap_or(0);
                if fraction == 0 {
                    1000
                } else {
                    fraction_step(u32::try_from(fraction).unwrap_or(9))
                }
            }
        }
    }
}

/// The step of a stamp in milliseconds (1 at the finest: the analysis counts in
/// milliseconds), from its strftime format: `%.3f`/`%3f` fix the digits, `%.f`/`%f`
/// print as many as the value needs (then the printed fraction, found after the last
/// `:` when there is one, tells), no fraction at all is a whole-second stamp.
pub fn stamp_step_ms(format: &str, printed: &str) -> u32 {
    StepRule::of(format).step_ms(printed)
}

/// What reading a prefix needs beyond the prefix itself.
pub(crate) struct ReadContext<'a> {
    /// The date of stamps that print none (file mtime or today).
    pub(crate) reference_date: Option<NaiveDate>,
    pub(crate) knowledge: &'a Knowledge,
}

impl CompiledPrefix {
    /// A prefix of `regex` with its formats, read (`grammar::read_format`).
    pub(crate) fn new(
        id: &str,
        regex: LazyRegex,
        date: StampFormat,
        time: StampFormat,
        stamp: Option<StampFormat>,
    ) -> CompiledPrefix {
        CompiledPrefix {
            id: id.to_string(),
            groups: PrefixGroups::of(&regex),
            regex,
            date,
            time,
            stamp,
            // Set once the grammar's every prefix is compiled (`Grammar::from_toml`).
            grammar_prints_dates: false,
        }
    }

    /// Reads the prefix this match of its regex (starting at `start`) took.
    pub(crate) fn read<'h>(
        &self,
        caps: &impl Groups<'h>,
        start: usize,
        cx: &ReadContext,
    ) -> PrefixInfo {
        let g = &self.groups;
        let whole = caps.group(0).map_or(start..start, |m| m.range());
        let mut stamp_error = None;
        let mut bad = |what: &str, text: &str, format: &str| {
            stamp_error.get_or_insert_with(|| match what {
                // No chrono format: the forms an `md` may take.
                "md" => format!("md `{text}` does not parse with `{format}`"),
                _ => stamp::parse_failure(what, text, format),
            });
        };
        let time_group = group(caps, g.time);
        let time = time_group.and_then(|m| {
            let t = self.time.time(m.as_str());
            if t.is_none() {
                bad("time", m.as_str(), &self.time.text);
            }
            t
        });
        let stamp_group = group(caps, g.stamp);
        let stamp = match (stamp_group, &self.stamp) {
            (Some(m), Some(f)) => {
                let s = f.date_time(m.as_str());
                if s.is_none() {
                    bad("stamp", m.as_str(), &f.text);
                }
                s
            }
            _ => None,
        };
        let date_group = group(caps, g.date);
        let md_group = group(caps, g.md);
        let mut date_inferred = false;
        let date = match date_group {
            Some(d) => {
                let date = self.date.date(d.as_str());
                if date.is_none() {
                    bad("date", d.as_str(), &self.date.text);
                }
                date
            }
            None => {
                date_inferred = true;
                match md_group {
                    Some(md) => {
                        // A leap year, so `02-29` parses; the loader sets the real year.
                        let year = cx
                            .reference_date
                            .map_or(2000, |d| chrono::Datelike::year(&d));
                        let date = stamp::month_day(md.as_str(), year);
                        if date.is_none() {
                            // Said like a format that does not read: every line of the
                            // file would otherwise be untimed without a word.
                            bad("md", md.as_str(), stamp::MONTH_DAY_FORMS);
                        }
                        date
                    }
                    None => Some(cx.reference_date.unwrap_or(PLACEHOLDER_DATE)),
                }
            }
        };
        let has_stamp = stamp_group.is_some();
        let ts_step_ms = match (stamp_group, &self.stamp, time_group) {
            (Some(m), Some(f), _) => f.step_ms(m.as_str()),
            (_, _, Some(m)) => self.time.step_ms(m.as_str()),
            _ => 1000,
        };
        let ts = if has_stamp {
            date_inferred = false;
            stamp
        } else {
            match (date, time) {
                (Some(d), Some(t)) => Some(d.and_time(t)),
                _ => None,
            }
        };
        let process = group(caps, g.proc).map(|p| Name::from(p.as_str()));
        let (rank, rank_error, tags_unread) = self.rank(caps, process.as_deref(), cx);
        let pid = group(caps, g.pid).and_then(|p| p.as_str().parse().ok());
        let time_only = !has_stamp && date_group.is_none() && md_group.is_none();
        PrefixInfo {
            ts,
            ts_step_ms,
            date_inferred: date_inferred && ts.is_some(),
            datable: date_inferred && ts.is_some() && self.grammar_prints_dates,
            time_only: time_only && ts.is_some(),
            rank,
            pid,
            process,
            host: group(caps, g.host).map(|h| Name::from(h.as_str())),
            message_start: whole.end,
            prefix_end: whole.end,
            prefix_start: whole.start,
            stamp_error,
            rank_error,
            tags_unread,
            read_by: None,
        }
    }

    /// The rank the prefix names (its captures, else a worker's process name), the text
    /// of a rank number too large to be one, and a `tags` capture that reads no rank.
    fn rank<'h>(
        &self,
        caps: &impl Groups<'h>,
        process: Option<&str>,
        cx: &ReadContext,
    ) -> (Option<Rank>, Option<String>, Option<String>) {
        let g = &self.groups;
        let tags = group(caps, g.tags).map(|m| m.as_str());
        let tp = group(caps, g.gpu).or_else(|| group(caps, g.tp));
        let grank = group(caps, g.grank);
        let tags_rank = tags.and_then(knowledge::parse_tags_capture);
        let tags_read = tags_rank.is_some();
        let rank = knowledge::rank_of_groups(tags_rank, tp.map(|m| m.text), grank.map(|m| m.text))
            .or_else(|| {
                let info = cx.knowledge.process(process?)?;
                (info.role == ProcessRole::Worker)
                    .then_some(info.tags)
                    .flatten()
            });
        let rank_error = if rank.is_none() {
            // The first of `tags`, `gpu`, `tp`, `grank` that took part.
            let first = tags.or_else(|| tp.or(grank).map(|m| m.as_str()));
            first.and_then(knowledge::number_too_large)
        } else {
            None
        };
        let tags_unread = tags
            .filter(|t| rank_error.is_none() && !t.trim().is_empty() && !tags_read)
            .map(|t| crate::base::text::truncate(&crate::base::text::sanitize(t), 40));
        (rank, rank_error, tags_unread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each input read with `format` parsed once (`ours`) and by chrono's
    /// `parse_from_str` (`theirs`) gives the same.
    fn agree<T: PartialEq + std::fmt::Debug>(
        format: &str,
        inputs: &[&str],
        ours: impl Fn(&StampFormat, &str) -> Option<T>,
        theirs: impl Fn(&str, &str) -> Option<T>,
    ) {
        let f = StampFormat::new(format).unwrap();
        for s in inputs {
            assert_eq!(ours(&f, s), theirs(s, format), "{format} on {s:?}");
        }
    }

    #[test]
    fn a_parsed_format_reads_as_chrono_reads_its_string() {
        // Each format with stamps it reads and stamps it refuses (a field out of range, a
        // missing part, trailing text): the items parsed once must agree with
        // `parse_from_str`, which parses the format string on every call.
        let time = |s: &str, f: &str| NaiveTime::parse_from_str(s, f).ok();
        let times = ["09:18:14", "09:18:14.250", "24:00:00", "9:18", "09:18:14 x"];
        agree("%H:%M:%S%.f", &times, StampFormat::time, time);
        let times = ["10:00:04,000", "10:00:04,5", "10:00:04", "10:61:04,000", ""];
        agree("%H:%M:%S,%3f", &times, StampFormat::time, time);
        let dates = [
            "2026-11-29",
            "2026-02-30",
            "2026-1-5",
            "26-11-29",
            "2026-11-29T",
        ];
        let date = |s: &str, f: &str| NaiveDate::parse_from_str(s, f).ok();
        agree("%Y-%m-%d", &dates, StampFormat::date, date);
        let stamps = [
            "261202 042115.000",
            "261202 042115",
            "261302 042115.000",
            "261202 042115.0001",
        ];
        let stamp = |s: &str, f: &str| NaiveDateTime::parse_from_str(s, f).ok();
        agree("%y%m%d %H%M%S%.3f", &stamps, StampFormat::date_time, stamp);
        // Some of each family read and some do not, so both outcomes were compared.
        assert!(StampFormat::new("%H:%M:%S%.f")
            .unwrap()
            .time("09:18:14.250")
            .is_some());
        assert!(StampFormat::new("%Y-%m-%d")
            .unwrap()
            .date("2026-02-30")
            .is_none());
        // A directive chrono does not know: no format (`grammar::read_format` refuses it).
        assert!(StampFormat::new("%Q").is_none());
    }

    #[test]
    fn the_default_formats_read_by_hand_as_chrono_reads_them() {
        // Every combination of fields in and out of range, leap days and seconds, and
        // fractions of each length and form, in the shapes read by hand and beside them.
        let mut times = Vec::new();
        for h in ["00", "09", "23", "24", "99", "9"] {
            for m in ["00", "59", "60"] {
                for sec in ["00", "59", "60", "61"] {
                    for frac in [
                        "",
                        ".",
                        ".1",
                        ".25",
                        ".123456789",
                        ".1234567890",
                        ",5",
                        ".x",
                    ] {
                        times.push(format!("{h}:{m}:{sec}{frac}"));
                    }
                }
            }
        }
        let time = |s: &str, f: &str| NaiveTime::parse_from_str(s, f).ok();
        let times: Vec<&str> = times.iter().map(String::as_str).collect();
        agree("%H:%M:%S%.f", &times, StampFormat::time, time);
        let mut dates = Vec::new();
        for y in ["0000", "1970", "2024", "2026", "9999", "+2026", "226"] {
            for m in ["00", "01", "02", "12", "13", "1"] {
                for d in ["00", "01", "28", "29", "30", "31", "32", "5"] {
                    dates.push(format!("{y}-{m}-{d}"));
                }
            }
        }
        let date = |s: &str, f: &str| NaiveDate::parse_from_str(s, f).ok();
        let dates: Vec<&str> = dates.iter().map(String::as_str).collect();
        agree("%Y-%m-%d", &dates, StampFormat::date, date);
        // The plain shapes were read by hand, not by chrono: both outcomes among them.
        let by_hand = |s: &str| quick_time(s.as_bytes());
        assert_eq!(
            by_hand("09:18:14.25"),
            Some(NaiveTime::from_hms_milli_opt(9, 18, 14, 250))
        );
        assert_eq!(by_hand("24:00:00"), Some(None));
        assert_eq!(by_hand("09:18:60"), None);
        assert_eq!(
            quick_date("2024-02-29"),
            Some(NaiveDate::from_ymd_opt(2024, 2, 29))
        );
        assert_eq!(quick_date("2026-02-29"), Some(None));
        assert_eq!(quick_date("2026-2-28"), None);
    }

    #[test]
    fn a_stamp_step_comes_from_its_format() {
        // A fixed three-digit fraction is a millisecond stamp whatever it reads.
        assert_eq!(stamp_step_ms("%y%m%d %H%M%S%.3f", "261202 042115.000"), 1);
        assert_eq!(stamp_step_ms("%H:%M:%S,%3f", "10:00:04,000"), 1);
        assert_eq!(
            stamp_step_ms("%Y-%m-%dT%H:%M:%S%.6fZ", "2026-03-01T10:00:04.000000Z"),
            1
        );
        // `%.f` prints what the value needs: the printed digits tell (SGLang's stamps have
        // none: one second).
        assert_eq!(stamp_step_ms("%H:%M:%S%.f", "10:00:04"), 1000);
        assert_eq!(stamp_step_ms("%H:%M:%S%.f", "10:00:04.120"), 1);
        assert_eq!(stamp_step_ms("%H:%M:%S%.f", "10:00:04.1"), 100);
        // No fraction in the format: one second, even for a date with dots.
        assert_eq!(
            stamp_step_ms("%d.%m.%Y %H:%M:%S", "01.12.2026 10:00:04"),
            1000
        );
        assert_eq!(
            stamp_step_ms("%m/%d/%Y-%H:%M:%S", "12/01/2026-10:00:04"),
            1000
        );
    }
}
