//! Dates for stamps that printed none, and stamps that go backwards.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime};

use crate::base::event::Event;
use crate::ingest::source::SourceFile;
use crate::model::notes::{DatesFrom, ReadNote};
use crate::model::SourceInfo;

use super::by_source::BySource;

/// Events are ordered by time in the model; a file whose stamps go backwards (a
/// newest-first web UI copy, two clocks in one stream) is said so rather than re-sorted
/// silently. Stamps with a printed date only: inferred dates are ordered by construction.
pub(super) fn time_regressions(events: &BySource, logs: &[&SourceFile]) -> Vec<ReadNote> {
    let mut out = Vec::new();
    // One pass to bucket by file: a run of hundreds of files would otherwise read every
    // event once per file.
    let mut by_source: Vec<Vec<&Event>> = vec![Vec::new(); logs.len()];
    for e in events.iter().filter(|e| !e.year_inferred) {
        if let Some(b) = by_source.get_mut(e.origin.source) {
            b.push(e);
        }
    }
    for (sf, evs) in logs.iter().zip(&by_source) {
        let mut prev: Option<NaiveDateTime> = None;
        let mut back = 0usize;
        for e in evs {
            let Some(t) = e.ts else { continue };
            if prev.is_some_and(|p| t < p - Duration::seconds(60)) {
                back += 1;
            }
            prev = Some(t);
        }
        if back > 0 {
            out.push(ReadNote::TimeGoesBack {
                path: sf.display(),
                times: back,
            });
        }
    }
    out
}

/// The years a printed stamp of a start-up log can hold. 1970-01-01 is a clock that was
/// never set (the epoch), 0001-01-01 and 9999-12-31 are sentinels: none of them is the
/// time a server started.
const PLAUSIBLE_YEARS: std::ops::Range<i32> = 2000..2100;

/// Takes the time off events stamped outside `PLAUSIBLE_YEARS` when other events of the
/// run are stamped inside it, so that such a stamp never becomes the run's start or an
/// end of a duration; a note per file gives their count and the first. A run stamped
/// wholly outside (a board whose clock was never set, every line in 1970) keeps its
/// stamps: the durations between them are still right. Stamps with a printed date only.
pub(super) fn implausible_stamps(events: &mut BySource, logs: &[&SourceFile]) -> Vec<ReadNote> {
    let printed = |e: &Event| e.ts.filter(|_| !e.year_inferred);
    let plausible = |t: &NaiveDateTime| PLAUSIBLE_YEARS.contains(&t.year());
    if !events.iter().filter_map(printed).any(|t| plausible(&t)) {
        return Vec::new();
    }
    // Per file: how many, and the first (line, stamp).
    let mut found: Vec<(usize, Option<(u64, NaiveDateTime)>)> = vec![(0, None); logs.len()];
    for e in events.iter_mut() {
        let Some(t) = printed(e).filter(|t| !plausible(t)) else {
            continue;
        };
        e.ts = None;
        if let Some((n, first)) = found.get_mut(e.origin.source) {
            *n += 1;
            if first.is_none_or(|(line, _)| e.origin.line < line) {
                *first = Some((e.origin.line, t));
            }
        }
    }
    logs.iter()
        .zip(found)
        .filter_map(|(sf, (n, first))| {
            let (line, t) = first?;
            Some(ReadNote::ImplausibleStamps {
                path: sf.display(),
                count: n,
                years: PLAUSIBLE_YEARS.start..=PLAUSIBLE_YEARS.end - 1,
                line,
                stamp: t,
            })
        })
        .collect()
}

/// What dates a file's stamps that print no date, best first: the whole dates the file
/// printed before them (glog's `Log file created at:` header, any dated line), then its
/// modification date (stdin: today).
#[derive(Clone, Debug, Default)]
pub(crate) struct FileDates<'a> {
    /// (line, stamp), in line order.
    pub(crate) printed: &'a [(u64, NaiveDateTime)],
    pub(crate) modified: Option<NaiveDate>,
}

/// Each log's `FileDates` (`sources[i]` being `logs[i]`). The modification dates are read
/// only when some stamp lacks a date, rather than one stat per file of every run.
pub(super) fn reference_dates<'a>(
    events: &BySource,
    logs: &[&SourceFile],
    sources: &'a [SourceInfo],
) -> Vec<FileDates<'a>> {
    if !events.iter().any(|e| e.year_inferred) {
        return Vec::new();
    }
    (logs.iter().enumerate())
        .map(|(i, sf)| FileDates {
            printed: sources.get(i).map_or(&[], |s| s.dated_lines.as_slice()),
            modified: modified_date(sf),
        })
        .collect()
}

fn modified_date(sf: &SourceFile) -> Option<NaiveDate> {
    if sf.is_stdin() {
        return Some(chrono::Local::now().date_naive());
    }
    let t = std::fs::metadata(&sf.path).ok()?.modified().ok()?;
    Some(chrono::DateTime::<chrono::Local>::from(t).date_naive())
}

/// One line of a file, for dating: an event, or a whole date printed on a line.
enum Dated<'e> {
    Event(&'e mut Event),
    Printed(NaiveDateTime),
}

/// Dates the stamps that printed no year (vLLM's `MM-DD`, glog's `MMDD`) or no date at all
/// (SGLang 0.3's `[HH:MM:SS TP0]`): from the nearest line before it in the same file that
/// printed a whole date (an event's stamp, or a line that gives no event, such as glog's
/// `Log file created at: 2026/11/27 09:14:00` header), else the first date the run printed
/// (its first fully dated event, else the first dated line of its files), else the
/// file's modification date (stdin: today). A month-day that falls more than half a year
/// before the previous line is a new year (Dec → Jan); a time of day more than half a day
/// before it is a new day. Returns how the dates were inferred, for the run's notes.
pub(super) fn infer_dates(events: &mut BySource, refs: &[FileDates]) -> Option<ReadNote> {
    if !events.iter().any(|e| e.year_inferred) {
        return None;
    }
    let run_anchor = (events.iter())
        .find(|e| !e.year_inferred && e.ts.is_some())
        .and_then(|e| e.ts.map(|t| t.date()))
        .or_else(|| (refs.iter()).find_map(|r| r.printed.first().map(|(_, t)| t.date())));
    let mut from_file_dates = false;
    let mut by_source: std::collections::BTreeMap<usize, Vec<(u64, Dated)>> = Default::default();
    for e in events.iter_mut() {
        by_source
            .entry(e.origin.source)
            .or_default()
            .push((e.origin.line, Dated::Event(e)));
    }
    for (src, mut lines) in by_source {
        let file = refs.get(src);
        let printed = file.map_or(&[][..], |f| f.printed);
        lines.extend(printed.iter().map(|&(line, t)| (line, Dated::Printed(t))));
        // A printed date sorts before an event of its own line: it is no later than it.
        lines.sort_by_key(|(line, d)| (*line, matches!(d, Dated::Event(_))));
        // Lines before the file's first date: the run's.
        let mut current = run_anchor;
        if current.is_none() {
            from_file_dates = true;
            current = file.and_then(|f| f.modified);
        }
        let mut prev: Option<NaiveDateTime> = None;
        for (_, d) in lines {
            let e = match d {
                Dated::Printed(t) => {
                    current = Some(t.date());
                    prev = Some(t);
                    continue;
                }
                Dated::Event(e) => e,
            };
            let Some(ts) = e.ts else { continue };
            if !e.year_inferred {
                current = Some(ts.date());
                prev = Some(ts);
                continue;
            }
            let Some(anchor) = current else { continue };
            let Some(guess) = date_one(e.time_only, ts, anchor, prev) else {
                continue;
            };
            current = Some(guess.date());
            prev = Some(guess);
            e.ts = Some(guess);
        }
    }
    let from = if run_anchor.is_some() && !from_file_dates {
        DatesFrom::RunLines
    } else {
        DatesFrom::FileDates
    };
    Some(ReadNote::DatesInferred { from })
}

/// The date of one stamp that printed none (`time_only`) or no year, from the date in
/// force (`anchor`) and the line before it (`prev`).
fn date_one(
    time_only: bool,
    ts: NaiveDateTime,
    anchor: NaiveDate,
    prev: Option<NaiveDateTime>,
) -> Option<NaiveDateTime> {
    let mut guess = if time_only {
        anchor.and_time(ts.time())
    } else {
        ts.date().with_year(anchor.year())?.and_time(ts.time())
    };
    if let Some(p) = prev {
        if time_only && guess < p - Duration::hours(12) {
            guess += Duration::days(1);
        } else if !time_only && guess < p - Duration::days(183) {
            if let Some(d) = guess.date().with_year(guess.year() + 1) {
                guess = d.and_time(guess.time());
            }
        }
    }
    Some(guess)
}
