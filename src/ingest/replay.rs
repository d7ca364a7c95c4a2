//! `watch --replay`: a recorded run written again at the pace its stamps give, so that
//! `watch` can be shown and tested on finished logs through the same path as a live run.
//! Each log's lines are read whole, timed by the grammars' prefixes (the stamp a line's
//! record prefix carries; a line with none — a traceback frame, a continuation — goes
//! with the line before it in its file), ordered across files by time, and sent to one
//! channel per file from a thread that sleeps between them.
//!
//! Stamps printed to the second put many lines on one instant; those are spread evenly
//! over their stamp's step in the order they were printed, so a replay keeps the order of
//! a second's lines and a follower sees them come one after the other, as they did.

use std::io::{self, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use chrono::{Datelike, NaiveDateTime, Timelike};

use crate::grammar::GrammarSet;
use crate::ingest::source::{self, SourceFile};

/// A recorded file larger than this is not replayed (the replay holds its files).
pub(crate) const MAX_REPLAY_BYTES: u64 = 256 << 20;

/// Why a recorded log could not be replayed.
#[derive(Debug, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "the #[error] texts say what each variant and field is"
)]
pub enum ReplayError {
    #[error(transparent)]
    Source(#[from] source::SourceError),
    #[error("{path}: cannot be read for the replay: {source}")]
    Read { path: String, source: io::Error },
    #[error("{path}: more than {} MiB: too large to replay", MAX_REPLAY_BYTES >> 20)]
    TooLarge { path: String },
    #[error("--replay reads a recorded run's files, not the standard input")]
    Stdin,
    #[error("--replay's speed must be a positive number, not {0}")]
    Speed(f64),
}

/// One line to send: its file, when (seconds after the run's first stamp) and its bytes.
struct Timed {
    file: usize,
    at_s: f64,
    bytes: Vec<u8>,
}

fn read_whole(sf: &SourceFile) -> Result<Vec<u8>, ReplayError> {
    if sf.is_stdin() {
        return Err(ReplayError::Stdin);
    }
    let read_err = |source| ReplayError::Read {
        path: sf.display(),
        source,
    };
    let mut out = Vec::new();
    source::open(sf)?
        .take(MAX_REPLAY_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(read_err)?;
    if out.len() as u64 > MAX_REPLAY_BYTES {
        return Err(ReplayError::TooLarge { path: sf.display() });
    }
    Ok(out)
}

/// A line of a recorded file: the file's index, its stamp, its bytes.
type StampedLine = (usize, Option<NaiveDateTime>, Vec<u8>);

/// Every line of `logs` with its stamp (carried forward within its file).
fn stamped(gs: &GrammarSet, logs: &[SourceFile]) -> Result<Vec<StampedLine>, ReplayError> {
    let mut out = Vec::new();
    // A stamp that prints no year, or no date, carries a stand-in one (the loader infers
    // it later): it takes the date of the last fully dated stamp read, or is left
    // untimed until there is one.
    let mut last_date: Option<chrono::NaiveDate> = None;
    for (i, sf) in logs.iter().enumerate() {
        let bytes = read_whole(sf)?;
        let mut last: Option<NaiveDateTime> = None;
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            let text = crate::base::text::clean_line(line);
            if let Some(p) = gs.find_prefix(&text, text.len()) {
                let ts = match (p.ts, p.time_only, p.date_inferred) {
                    (Some(ts), false, false) => {
                        last_date = Some(ts.date());
                        Some(ts)
                    }
                    (Some(ts), true, _) => last_date.map(|d| d.and_time(ts.time())),
                    (Some(ts), false, true) => last_date.and_then(|d| ts.with_year(d.year())),
                    (None, _, _) => None,
                };
                if ts.is_some() {
                    last = ts;
                }
            }
            out.push((i, last, line.to_vec()));
        }
    }
    Ok(out)
}

/// The lines of every file in the order they were written, each with its replay time.
fn schedule(gs: &GrammarSet, logs: &[SourceFile]) -> Result<Vec<Timed>, ReplayError> {
    let lines = stamped(gs, logs)?;
    let Some(first) = lines.iter().filter_map(|l| l.1).min() else {
        // Nothing is stamped: the files are sent at once.
        return Ok(lines
            .into_iter()
            .map(|(file, _, bytes)| Timed {
                file,
                at_s: 0.0,
                bytes,
            })
            .collect());
    };
    // Lines before their file's first stamp go at the run's start; the sort is stable, so
    // a file's lines of one instant keep their order, and files interleave by time.
    let mut keyed: Vec<(NaiveDateTime, usize, Vec<u8>)> = lines
        .into_iter()
        .map(|(file, ts, bytes)| (ts.unwrap_or(first), file, bytes))
        .collect();
    keyed.sort_by_key(|k| k.0);
    let mut out = Vec::with_capacity(keyed.len());
    let mut start = 0;
    while start < keyed.len() {
        let ts = keyed[start].0;
        let end = start + keyed[start..].iter().take_while(|k| k.0 == ts).count();
        let same = (end - start) as f64;
        // A whole-second stamp covers its second (as `analysis::clock` reads stamps); a
        // stamp with a fraction is taken as exact.
        let step_s = if ts.nanosecond() == 0 { 1.0 } else { 0.0 };
        let base_s = (ts - first).num_milliseconds() as f64 / 1000.0;
        for (j, k) in keyed[start..end].iter_mut().enumerate() {
            out.push(Timed {
                file: k.1,
                at_s: base_s + step_s * j as f64 / same,
                bytes: std::mem::take(&mut k.2),
            });
        }
        start = end;
    }
    Ok(out)
}

/// Starts the replay: one receiver per file of `logs`, fed from a thread at `speed` times
/// the stamps' pace; each sender is dropped after its file's last line.
pub(crate) fn start(
    gs: &GrammarSet,
    logs: &[SourceFile],
    speed: f64,
) -> Result<Vec<mpsc::Receiver<io::Result<Vec<u8>>>>, ReplayError> {
    if !(speed.is_finite() && speed > 0.0) {
        return Err(ReplayError::Speed(speed));
    }
    let plan = schedule(gs, logs)?;
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    for _ in logs {
        let (tx, rx) = mpsc::channel();
        senders.push(Some(tx));
        receivers.push(rx);
    }
    // The last line of each file: its sender is dropped after it.
    let mut last_of = vec![None; logs.len()];
    for (k, t) in plan.iter().enumerate() {
        last_of[t.file] = Some(k);
    }
    std::thread::spawn(move || {
        let t0 = Instant::now();
        for (k, t) in plan.into_iter().enumerate() {
            let due = t0 + Duration::from_secs_f64(t.at_s / speed);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if let Some(Some(tx)) = senders.get(t.file) {
                // A follower gone (the watch ended) stops nothing else: the rest is dropped.
                let _ = tx.send(Ok(t.bytes));
            }
            if last_of[t.file] == Some(k) {
                senders[t.file] = None;
            }
        }
    });
    Ok(receivers)
}
