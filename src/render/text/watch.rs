//! `watch`'s words: one line per change for a log or CI (`--plain`, or stdout not a
//! terminal), the early warnings with their evidence and remedy, the follower's notes,
//! and the live board's rows. Log text is cleaned of control sequences here, as
//! everywhere text reaches the terminal.

use chrono::NaiveDateTime;

use crate::analysis::early::{Change, EarlyWarning, MemoryWarning, RankStatus, SlowWarning};
use crate::analysis::remedy::Remedies;
use crate::base::event::{FieldValue, Origin};
use crate::base::text::sanitize;
use crate::base::units::{bytes_as_printed, group_thousands, seconds};
use crate::ingest::follow::FollowNote;
use crate::model::{Outcome, Phase, Run};
use crate::render::Style;

/// Seconds from the run's first stamp, as the board's clock: `t+12.0 s`.
pub(crate) fn since_start(run: &Run, at: Option<NaiveDateTime>) -> String {
    match (run.start, at) {
        (Some(s), Some(t)) if t >= s => {
            crate::base::units::since_start((t - s).num_milliseconds() as f64 / 1000.0)
        }
        _ => "t?".to_string(),
    }
}

fn evidence(run: &Run, o: &Origin) -> String {
    format!("{}:{}", sanitize(run.source_name(o)), o.line)
}

/// A change as one line (a warning's remedy on the lines after it, indented).
pub fn change_lines(run: &Run, c: &Change, style: Style) -> Vec<String> {
    match c {
        Change::Phase { rank, phase, at } => {
            vec![format!(
                "{:<9} {rank}  reached {phase}",
                since_start(run, *at)
            )]
        }
        Change::Memory {
            rank,
            phase,
            name,
            value,
            origin,
        } => {
            let Some(figure) = figure_words(*phase, name.name(), value) else {
                return Vec::new();
            };
            let at = run
                .events
                .iter()
                .find(|e| &e.origin == origin)
                .and_then(|e| e.ts);
            vec![format!(
                "{:<9} {rank}  {figure} ({})",
                since_start(run, at),
                evidence(run, origin)
            )]
        }
        Change::Outcome {
            rank,
            outcome,
            phase,
            kind,
            at,
            origin,
        } => {
            let what = match (outcome, kind) {
                (Outcome::Ready, _) => "ready".to_string(),
                (o, Some(k)) => format!("{o}: {} in {phase}", k.name()),
                (o, None) => format!("{o} in {phase}"),
            };
            let what = match outcome {
                Outcome::Ready => style.good(&what),
                _ => style.bad(&what),
            };
            let at_line = origin
                .as_ref()
                .map(|o| format!(" ({})", evidence(run, o)))
                .unwrap_or_default();
            vec![format!(
                "{:<9} {rank}  {what}{at_line}",
                since_start(run, *at)
            )]
        }
        Change::Warning(w) => warning_lines(run, w, style),
    }
}

/// A warning's headline, then its deficit and remedies (memory) on the next lines.
pub(crate) fn warning_lines(run: &Run, w: &EarlyWarning, style: Style) -> Vec<String> {
    match w {
        EarlyWarning::Memory(m) => {
            let mut out = vec![style.warn(&format!("warning   {}", memory_headline(run, m)))];
            let remedies = Remedies {
                deficit: Some(m.deficit.clone()),
                remedies: m.remedies.clone(),
            };
            out.extend(
                super::remedy::lines(&remedies)
                    .into_iter()
                    .skip(1)
                    .map(|l| format!("          remedy: {l}")),
            );
            out
        }
        EarlyWarning::Slow(s) => vec![style.warn(&format!("warning   {}", slow_headline(s)))],
    }
}

/// "TP3: 0.60 GiB left after the KV pool; the baseline's cuda_graph took 0.63 GiB — likely
/// OOM in cuda_graph (server.log:56)".
pub(crate) fn memory_headline(run: &Run, m: &MemoryWarning) -> String {
    let how = if m.likely {
        "likely OOM"
    } else {
        "an OOM is possible (within the figures' rounding)"
    };
    format!(
        "{}: {} left after the KV pool; the baseline's {} took {} — {how} in {} ({})",
        m.rank,
        bytes_as_printed(m.left, m.left_resolution.max(0) as u64),
        m.phase,
        bytes_as_printed(m.baseline_took, m.baseline_resolution.max(0) as u64),
        m.phase,
        evidence(run, &m.left_origin)
    )
}

/// "TP1 in weight_load for 14 s (baseline 3 s)".
pub(crate) fn slow_headline(s: &SlowWarning) -> String {
    let mut line = format!(
        "{} in {} for {} (baseline {}; more than {} over it counts)",
        s.rank,
        s.phase,
        seconds(s.so_far_s),
        seconds(s.baseline_s),
        seconds(s.threshold_s)
    );
    // Measured past the log's latest line by the wall clock: say so, the reader cannot
    // find that time in the log.
    if s.silent_s.get() >= 0.5 {
        line.push_str(&format!(
            "; no start-up line for the last {}",
            seconds(s.silent_s)
        ));
    }
    line
}

/// A follower's note, in words.
pub fn follow_note(n: &FollowNote) -> String {
    match n {
        FollowNote::NewFile { path } => format!("{}: new log, followed", sanitize(path)),
        FollowNote::Replaced { path, segment } => format!(
            "{p}: a new file under this name (rotated, or deleted and made again): read from its start as {p}#{segment}",
            p = sanitize(path)
        ),
        FollowNote::Truncated {
            path,
            read,
            size,
            segment,
        } => format!(
            "{p}: shrank to {size} bytes after {read} were read (copy-truncate): read again from its start as {p}#{segment}",
            p = sanitize(path)
        ),
        FollowNote::Deleted { path } => format!(
            "{}: deleted; what was read is kept, and a new file under this name will be read",
            sanitize(path)
        ),
        FollowNote::Unreadable { path, error } => format!(
            "{}: cannot be read ({}); tried again as the run goes on",
            sanitize(path),
            sanitize(error)
        ),
        FollowNote::Binary {
            path,
            offset,
            lines,
        } => format!(
            "{}: binary content (a NUL byte) at byte {offset}: {lines} line(s) skipped, the text after it is still read",
            sanitize(path)
        ),
        FollowNote::Compressed { path } => format!(
            "{}: compressed: decoded again from its start each time it grows",
            sanitize(path)
        ),
        FollowNote::CompressedTooLarge { path, size } => format!(
            "{}: compressed and {} bytes, past the {} MiB a followed compressed log may grow to (each growth decodes it whole): what was read is kept, its growth is not read (run `summary` on it when it is complete)",
            sanitize(path),
            size,
            crate::ingest::follow::COMPRESSED_FOLLOW_MAX >> 20
        ),
        FollowNote::CompressedCut {
            path,
            decoded,
            error,
        } => format!(
            "{}: the compressed stream ends short after {decoded} decoded bytes ({}) when the watch ended (still being written, or cut): the text after that was not read",
            sanitize(path),
            sanitize(&crate::render::text::notes::stop_reason(error))
        ),
        FollowNote::InputEnded => "standard input ended".to_string(),
    }
}

/// The line `watch` ends with when `--timeout` passed first.
pub fn timed_out(seconds: f64) -> String {
    format!("watch: --timeout of {seconds:.0} s passed before every rank was ready or the run failed: incomplete")
}

/// The live board's status rows: per rank its phase, the time in it (growing while the
/// rank is silent) and its latest memory figure. With more ranks than rows, one row per
/// phase (how many ranks are in it, the longest in it) — the ranks furthest behind first.
pub(crate) fn status_rows(statuses: &[RankStatus], rows: usize) -> Vec<String> {
    if rows == 0 {
        return Vec::new();
    }
    if statuses.len() <= rows {
        return statuses.iter().map(status_row).collect();
    }
    let mut by_phase: Vec<(String, Vec<&RankStatus>)> = Vec::new();
    for s in statuses {
        let key = state_of(s);
        match by_phase.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(s),
            None => by_phase.push((key, vec![s])),
        }
    }
    // Furthest behind first: the earliest phase, then the ranks still in one before the
    // decided ones.
    by_phase.sort_by_key(|(_, v)| (v[0].in_phase_s.is_none(), v[0].phase));
    let mut out: Vec<String> = by_phase
        .iter()
        .map(|(state, v)| {
            let longest = v
                .iter()
                .filter_map(|s| Some((s.in_phase_s?, &s.rank)))
                .max_by(|a, b| a.0.total_cmp(&b.0));
            let n = group_thousands(i64::try_from(v.len()).unwrap_or(i64::MAX));
            let mut line = format!("{n:>6} ranks  {state}");
            if let Some((secs, rank)) = longest {
                line.push_str(&format!("  (longest: {rank}, {})", seconds(secs)));
            }
            line
        })
        .collect();
    if out.len() > rows {
        let cut = out.len() - rows + 1;
        out.truncate(rows - 1);
        out.push(format!("… {cut} more groups"));
    }
    out
}

/// "in weight_load", "ready", "failed in cuda_graph".
fn state_of(s: &RankStatus) -> String {
    if s.reached_ready {
        return "ready".to_string();
    }
    match s.outcome {
        Outcome::Incomplete => format!("in {}", s.phase),
        o => format!("{} in {}", o.name(), s.phase),
    }
}

fn status_row(s: &RankStatus) -> String {
    let time = s.in_phase_s.map(seconds).unwrap_or_default();
    let memory = (s.last_memory.as_ref())
        .and_then(|(phase, name, value)| figure_words(*phase, name.name(), value))
        .unwrap_or_default();
    format!(
        "{:<8} {:<24} {time:>7}  {memory}",
        sanitize(&s.rank.to_string()),
        state_of(s)
    )
}

/// A phase's bytes figure as printed: "kv_cache avail after: 0.60 GiB"; `None` for a
/// figure that is no amount of bytes.
fn figure_words(phase: Phase, name: &str, value: &FieldValue) -> Option<String> {
    let b = value.as_bytes()?;
    Some(format!(
        "{phase} {}: {}",
        name.replace('_', " "),
        bytes_as_printed(b, value.resolution())
    ))
}
