//! Dates for stamps that printed none, and stamps that go backwards.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime};

use crate::base::event::Event;
use crate::ingest::source::SourceFile;
use crate::model::notes::{DatesFrom, ReadNote};

/// Events are ordered by time in the model; a file whose stamps go backwards (a
/// newest-first web UI copy, two clocks in one stream) is said so rather than re-sorted
/// silently. Stamps with a printed date only: inferred dates are ordered by construction.
pub(super) fn time_regressions(events: &[Event], logs: &[&SourceFile]) -> Vec<ReadNote> {
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
pub(super) fn implausible_stamps(events: &mut [Event], logs: &[&SourceFile]) -> Vec<ReadNote> {
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

/// The logs' modification dates, what `infer_dates` falls back on: read only when some
/// stamp lacks a date, rather than one stat per file of every run.
pub(super) fn reference_dates(events: &[Event], logs: &[&SourceFile]) -> Vec<Option<NaiveDate>> {
    if events.iter().any(|e| e.year_inferred) {
        logs.iter().map(|sf| modified_date(sf)).collect()
    } else {
        Vec::new()
    }
}

fn modified_date(sf: &SourceFile) -> Option<NaiveDate> {
    if sf.is_stdin() {
        return Some(chrono::Local::now().date_naive());
    }
    let t = std::fs::metadata(&sf.path).ok()?.modified().ok()?;
    Some(chrono::DateTime::<chrono::Local>::from(t).date_naive())
}

/// Dates the stamps that printed no year (vLLM's `MM-DD`) or no date at all (SGLang
/// 0.3's `[HH:MM:SS TP0]`): from the nearest fully dated line before it in the same file,
/// else the first fully dated line of the run, else the file's modification date. A
/// month-day that falls more than half a year before the previous line is a new year
/// (Dec → Jan); a time of day more than half a day before it is a new day. Returns how
/// the dates were inferred, for the run's notes.
pub(super) fn infer_dates(events: &mut [Event], refs: &[Option<NaiveDate>]) -> Option<ReadNote> {
    if !events.iter().any(|e| e.year_inferred) {
        return None;
    }
    let run_anchor = events
        .iter()
        .find(|e| !e.year_inferred && e.ts.is_some())
        .and_then(|e| e.ts.map(|t| t.date()));
    let mut from_file_dates = false;
    let mut by_source: std::collections::BTreeMap<usize, Vec<&mut Event>> = Default::default();
    for e in events.iter_mut() {
        by_source.entry(e.origin.source).or_default().push(e);
    }
    for (src, mut evs) in by_source {
        evs.sort_by_key(|e| e.origin.line);
        let mut current = run_anchor.or_else(|| {
            from_file_dates = true;
            refs.get(src).copied().flatten()
        });
        let mut prev: Option<NaiveDateTime> = None;
        for e in evs {
            let Some(ts) = e.ts else { continue };
            if !e.year_inferred {
                current = Some(ts.date());
                prev = Some(ts);
                continue;
            }
            let Some(anchor) = current else { continue };
            let mut guess = if e.time_only {
                anchor.and_time(ts.time())
            } else {
                match ts.date().with_year(anchor.year()) {
                    Some(d) => d.and_time(ts.time()),
                    None => continue,
                }
            };
            if let Some(p) = prev {
                if e.time_only && guess < p - Duration::hours(12) {
                    guess += Duration::days(1);
                } else if !e.time_only && guess < p - Duration::days(183) {
                    if let Some(d) = guess.date().with_year(guess.year() + 1) {
                        guess = d.and_time(guess.time());
                    }
                }
            }
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
