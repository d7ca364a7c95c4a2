//! Dates for stamps that printed none, and stamps that go backwards.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime};

use crate::base::event::Event;
use crate::ingest::source::SourceFile;

/// Events are ordered by time in the model; a file whose stamps go backwards (a
/// newest-first web UI copy, two clocks in one stream) is said so rather than re-sorted
/// silently. Stamps with a printed date only: inferred dates are ordered by construction.
pub(super) fn time_regressions(events: &[Event], logs: &[&SourceFile]) -> Vec<String> {
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
            out.push(format!(
                "{}: time stamps go backwards by more than a minute {back} time(s) (newest-first copy, or clocks that disagree); events are shown in time order",
                sf.display()
            ));
        }
    }
    out
}

pub(super) fn modified_date(sf: &SourceFile) -> Option<NaiveDate> {
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
pub(super) fn infer_dates(events: &mut [Event], refs: &[Option<NaiveDate>]) -> Option<String> {
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
    Some(if run_anchor.is_some() && !from_file_dates {
        "some stamps print no year or date: inferred from the fully dated lines of the run".into()
    } else {
        "some stamps print no year or date: inferred from the files' modification dates".into()
    })
}
