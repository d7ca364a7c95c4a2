//! Stamps that print less than a whole date: a month-day without a year (`md`), a format
//! that gives no year, and the lines that print the date such stamps lack (glog's
//! `Log file created at: 2026/11/27 09:14:00` header).

use super::*;

/// What an `md` capture may print: `MM-DD` (vLLM), `MMDD` (glog's `I1127`) or `MM/DD`.
pub(crate) const MONTH_DAY_FORMS: &str = "MM-DD, MMDD or MM/DD";

/// Reads an `md` capture as a date of `year` (a leap year reads `02-29`; the loader sets
/// the real year). `None` when it is no month-day in one of `MONTH_DAY_FORMS`.
pub(super) fn month_day(text: &str, year: i32) -> Option<NaiveDate> {
    let b = text.as_bytes();
    let (m, d) = match b.len() {
        4 => (text.get(..2)?, text.get(2..)?),
        5 if matches!(b[2], b'-' | b'/') => (text.get(..2)?, text.get(3..)?),
        _ => return None,
    };
    let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    if !digits(m) || !digits(d) {
        return None;
    }
    NaiveDate::from_ymd_opt(year, m.parse().ok()?, d.parse().ok()?)
}

/// A `stamp_format` that reads no year (`%m%d %H:%M:%S%.6f`, glog's) parses no stamp at
/// all: chrono needs a whole date. Found by printing a date with the format and reading
/// it back; the refusal says what reads such a stamp instead.
pub(super) fn check_stamp_has_year(
    origin: &str,
    id: &str,
    format: &str,
) -> Result<(), GrammarError> {
    use chrono::format::{parse, Parsed, StrftimeItems};
    use std::fmt::Write;
    let Some(t) =
        NaiveDate::from_ymd_opt(2026, 11, 27).and_then(|d| d.and_hms_milli_opt(9, 14, 2, 340))
    else {
        return Ok(());
    };
    // Printed as a UTC time, so that a zone in the format (`%:z`, `%Z`) prints too: a
    // naive time cannot print one, and `to_string` would panic on the error.
    let mut probe = String::new();
    let utc = chrono::TimeZone::from_utc_datetime(&chrono::Utc, &t);
    if write!(probe, "{}", utc.format(format)).is_err() {
        return Ok(());
    }
    let mut parsed = Parsed::new();
    if parse(&mut parsed, &probe, StrftimeItems::new(format)).is_err() {
        // Another trouble than a missing year: the samples' check says it.
        return Ok(());
    }
    let year = parsed.year().is_some()
        || parsed.year_mod_100().is_some()
        || parsed.isoyear().is_some()
        || parsed.timestamp().is_some();
    if year {
        return Ok(());
    }
    Err(GrammarError::Knowledge {
        origin: origin.into(),
        message: format!(
            "prefix `{id}`: stamp_format `{format}` reads no year, and a `stamp` must give a \
             whole date and time; for a stamp printed without a year capture the month and \
             day as `md` ({MONTH_DAY_FORMS}) and the time as `time` (read with \
             `time_format`), e.g. `(?P<md>\\d{{4}}) (?P<time>\\d{{2}}:\\d{{2}}:\\d{{2}}\\.\\d{{6}})`: \
             the year is then inferred"
        ),
    })
}

/// The prefixes whose lines print a whole date (a `date` or `stamp` capture) in grammars
/// that also have a prefix printing a time without one (glog's header beside its `I1127`
/// lines, SGLang's dated prefix beside its time-only one), and an anchored automaton of
/// their `starts_with` literals (`None`: one of them has none, so every line is tried).
/// Only such grammars: a family whose every stamp is whole has nothing to date, and its
/// lines need not pay a regex each where another family's stamps are dated.
pub(crate) struct DatingPrefixes {
    list: Vec<(usize, usize)>,
    starts: Option<AhoCorasick>,
}

impl DatingPrefixes {
    pub(super) fn of(grammars: &[Grammar]) -> DatingPrefixes {
        let mut list = Vec::new();
        let mut starts: Option<Vec<String>> = Some(Vec::new());
        for (gi, g) in grammars.iter().enumerate() {
            let reads = |p: &CompiledPrefix, n: &str| p.regex.capture_names().any(|c| c == n);
            let dateless = (g.prefixes.iter()).any(|p| {
                (reads(p, "time") || reads(p, "md")) && !reads(p, "date") && !reads(p, "stamp")
            });
            if !dateless {
                continue;
            }
            for (pi, (p, spec)) in g.prefixes.iter().zip(&g.spec.prefix).enumerate() {
                if !(reads(p, "date") || reads(p, "stamp")) {
                    continue;
                }
                list.push((gi, pi));
                let lits: Vec<String> = (spec.starts_with.iter())
                    .filter(|s| !s.is_empty())
                    .cloned()
                    .collect();
                match (&mut starts, lits.is_empty()) {
                    (Some(_), true) => starts = None,
                    (Some(s), false) => s.extend(lits),
                    (None, _) => {}
                }
            }
        }
        let starts = starts.and_then(|s| {
            AhoCorasickBuilder::new()
                .start_kind(StartKind::Anchored)
                .build(&s)
                .ok()
        });
        DatingPrefixes { list, starts }
    }
}

impl GrammarSet {
    /// The whole date and time a line prints in a prefix that reads one (`date` or
    /// `stamp`), when it does: the anchor that dates the time-only stamps after it in its
    /// file, even on a line that gives no event (glog's header). Cheap for most lines: one
    /// anchored look at their first bytes.
    pub(crate) fn printed_date(&self, line: &[u8]) -> Option<NaiveDateTime> {
        let dating = self
            .dating
            .get_or_init(|| DatingPrefixes::of(&self.grammars));
        if dating.list.is_empty() {
            return None;
        }
        if let Some(ac) = &dating.starts {
            let head = &line[..line.len().min(64)];
            ac.find(Input::new(head).anchored(Anchored::Yes))?;
        }
        let text = crate::base::text::clean_cow(line);
        for &(gi, pi) in &dating.list {
            let Some(p) = self.grammars.get(gi).and_then(|g| g.prefixes.get(pi)) else {
                continue;
            };
            let Some(caps) = p.regex.for_text(&text).and_then(|r| r.captures(&text)) else {
                continue;
            };
            let start = caps.get(0).map_or(0, |m| m.start());
            let info = self.prefix_info(p, &caps, start);
            if let (Some(ts), false) = (info.ts, info.date_inferred) {
                return Some(ts);
            }
        }
        None
    }

    /// Whether any loaded prefix prints a whole date: only then can a line that gives no
    /// event date others.
    pub(crate) fn has_dating_prefixes(&self) -> bool {
        !(self
            .dating
            .get_or_init(|| DatingPrefixes::of(&self.grammars)))
        .list
        .is_empty()
    }
}

/// Why a stamp's text does not parse with its format, with where and the fix when they
/// can be told: `` time `06:41:07.123456` does not parse with `%H:%M:%S%.3f`: `456` is left
/// over at byte 12; `%.3f` reads exactly 3 digits of a fraction, `%.f` any number ``.
pub(super) fn parse_failure(what: &str, text: &str, format: &str) -> String {
    use chrono::format::{parse_and_remainder, ParseErrorKind, Parsed, StrftimeItems};
    let head = format!("{what} `{text}` does not parse with `{format}`");
    let fixed_fraction = ["%.3f", "%.6f", "%.9f", "%3f", "%6f", "%9f"]
        .into_iter()
        .find(|f| format.contains(f));
    let fraction_hint = |f: &str| {
        let digits = f.trim_start_matches(['%', '.']).trim_end_matches('f');
        format!("`{f}` reads exactly {digits} digits of a fraction, `%.f` any number")
    };
    let mut parsed = Parsed::new();
    match parse_and_remainder(&mut parsed, text, StrftimeItems::new(format)) {
        // The format is read to its end and text is left: too few fields, or a fraction
        // of more digits than the format reads.
        Ok(rest) if !rest.is_empty() => {
            let at = text.len() - rest.len();
            let hint = match fixed_fraction {
                Some(f) if rest.bytes().all(|b| b.is_ascii_digit()) => fraction_hint(f),
                _ if rest.starts_with(',') => "the fraction follows a comma, and `%.3f`/`%.f` \
                     read a dot: write `,%3f` (`%H:%M:%S,%3f`)"
                    .into(),
                _ if rest.starts_with(['.', ',']) && !format.contains('f') => {
                    "the text has a fraction of a second: end the format with `%.f`".into()
                }
                _ => "the format ends before the text: extend it, or capture less".into(),
            };
            format!("{head}: `{rest}` is left over at byte {at}; {hint}")
        }
        Err(e) => match (e.kind(), fixed_fraction) {
            (_, Some(f)) if text.contains(['.', ',']) => format!("{head}; {}", fraction_hint(f)),
            (ParseErrorKind::TooShort, _) => format!("{head}: the text ends before the format"),
            (ParseErrorKind::OutOfRange, _) => format!("{head}: a field is out of its range"),
            _ => format!("{head}: a field does not match (chrono's strftime syntax)"),
        },
        // Reads whole but is no time (a 25th hour, a 30th of February).
        Ok(_) => format!("{head}: it is no valid {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::month_day;
    use chrono::NaiveDate;

    #[test]
    fn month_days_read_in_three_forms() {
        let nov27 = NaiveDate::from_ymd_opt(2026, 11, 27);
        assert_eq!(month_day("11-27", 2026), nov27);
        assert_eq!(month_day("1127", 2026), nov27);
        assert_eq!(month_day("11/27", 2026), nov27);
        // 2000 is a leap year: the stand-in year reads Feb 29.
        assert_eq!(
            month_day("0229", 2000),
            NaiveDate::from_ymd_opt(2000, 2, 29)
        );
        for bad in ["1327", "11-32", "11.27", "127", "11-2", "+1127", "1 27"] {
            assert_eq!(month_day(bad, 2026), None, "{bad}");
        }
    }

    /// The messages `grammars check` prints for a stamp that does not parse: where, and
    /// the fix (offsets counted by hand: `06:41:07.` is 9 bytes, so `456` is at 12).
    #[test]
    fn stamp_failures_say_where_and_the_fix() {
        let m = super::parse_failure("time", "06:41:07.123456", "%H:%M:%S%.3f");
        assert!(m.ends_with(": `456` is left over at byte 12; `%.3f` reads exactly 3 digits of a fraction, `%.f` any number"), "{m}");
        let m = super::parse_failure("time", "06:41:07.123456", "%H:%M:%S");
        assert!(m.contains("`.123456` is left over at byte 8;"), "{m}");
        assert!(m.ends_with("end the format with `%.f`"), "{m}");
        let m = super::parse_failure("time", "06:41:07.123", "%H:%M:%S%.6f");
        assert!(
            m.ends_with("`%.6f` reads exactly 6 digits of a fraction, `%.f` any number"),
            "{m}"
        );
        // log4j's comma before the milliseconds.
        let m = super::parse_failure("time", "08:12:01,150", "%H:%M:%S%.3f");
        assert!(m.ends_with(": `,150` is left over at byte 8; the fraction follows a comma, and `%.3f`/`%.f` read a dot: write `,%3f` (`%H:%M:%S,%3f`)"), "{m}");
        let m = super::parse_failure("time", "06:41", "%H:%M:%S");
        assert!(m.ends_with("the text ends before the format"), "{m}");
        let m = super::parse_failure("time", "26:41:07", "%H:%M:%S");
        assert!(m.ends_with("a field is out of its range"), "{m}");
    }
}
