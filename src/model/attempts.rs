//! Several start-ups in one log: servers restarted by systemd or Kubernetes append to the
//! same file. Each is an attempt; the model shows one (the last by default).

use std::collections::HashSet;

use chrono::Duration;

use super::{AttemptInfo, Outcome, Phase, Run};
use crate::base::event::{kind, Event, Rank};
use crate::grammar::Knowledge;

/// A pause or jump back in the stamps this long, before a rank begins distributed init
/// again, separates two start-ups.
const RESTART_GAP_S: i64 = 60;

/// The attempt (0-based) of every event. A file starts a new attempt when a rank begins
/// distributed init a second time, or prints the configuration after start-up progress,
/// after a failure, after `ready`, across a pause or a jump back of the clock, or (the
/// configuration) a second time: a server may print its configuration after distributed
/// init (DeepSpeed-FastGen's engine does), and every worker may print it once.
/// Attempts are counted per file and numbered alike across files (a console and its copy
/// hold the same attempts).
pub(crate) fn split(events: &[Event], know: &Knowledge) -> Vec<usize> {
    let mut out = vec![0; events.len()];
    let order = by_source_in_line_order(events);
    for idx in order.chunk_by(|a, b| a.0 == b.0) {
        let mut attempt = 0;
        let mut progressed = false;
        let mut ended = false;
        let mut began: HashSet<&Rank, foldhash::fast::RandomState> = HashSet::default();
        let mut configured: HashSet<Option<&Rank>, foldhash::fast::RandomState> =
            HashSet::default();
        let mut last_ts = None;
        // The launcher's preamble lines printed since the last other event: when the next
        // event starts an attempt, they were its start (`vLLM API server version …` before
        // the restarted server's configuration), not the end of the one before.
        let mut preamble: Vec<usize> = Vec::new();
        for &(_, _, i) in idx {
            let e = &events[i];
            let gap = match (last_ts, e.ts) {
                (Some(p), Some(t)) => {
                    let d: Duration = t - p;
                    d.abs() > Duration::seconds(RESTART_GAP_S) || d < Duration::seconds(-1)
                }
                _ => false,
            };
            let restart = match e.kind.as_str() {
                kind::SERVER_ARGS => {
                    progressed && (ended || gap || configured.contains(&e.rank.as_ref()))
                }
                kind::DIST_INIT_BEGIN => {
                    e.rank.as_ref().is_some_and(|r| began.contains(r)) && (ended || gap)
                }
                _ => false,
            };
            if restart {
                attempt += 1;
                progressed = false;
                ended = false;
                began.clear();
                configured.clear();
                for &j in &preamble {
                    out[j] = attempt;
                }
            }
            out[i] = attempt;
            let phase = know.phase_of(e).map(|(p, _)| p);
            if !restart && is_preamble(e, phase) {
                preamble.push(i);
            } else {
                preamble.clear();
            }
            progressed |= phase.is_some_and(|p| p != Phase::Launch);
            ended |= matches!(e.kind.as_str(), kind::OOM | kind::ERROR | kind::READY);
            if e.kind == kind::SERVER_ARGS {
                configured.insert(e.rank.as_ref());
            }
            if e.kind == kind::DIST_INIT_BEGIN {
                if let Some(r) = &e.rank {
                    began.insert(r);
                }
            }
            if e.ts.is_some() {
                last_ts = e.ts;
            }
        }
    }
    out
}

/// Each source's events (indices), sources in order, each source's by line (ties in
/// index order), as `(source, line, index)` sorted: one vector sorted as plain tuples,
/// not an ordered map of vectors each sorted by keys read from the events (a run of
/// 8,192 rank files splits its events once per node and once more for the run, and the
/// map's nodes and the events' scattered reads were a third of the split).
fn by_source_in_line_order(events: &[Event]) -> Vec<(usize, u64, usize)> {
    let mut order: Vec<(usize, u64, usize)> = (events.iter().enumerate())
        .map(|(i, e)| (e.origin.source, e.origin.line, i))
        .collect();
    // Unique (the index): the unstable sort is as stable as index order.
    order.sort_unstable();
    order
}

/// A line a launcher prints before a start-up's configuration: no rank, no phase past
/// launch, no failure, no outcome (`vLLM API server version 0.11.0`).
fn is_preamble(e: &Event, phase: Option<Phase>) -> bool {
    e.rank.is_none()
        && !matches!(e.kind.as_str(), kind::OOM | kind::ERROR | kind::READY)
        && !e.fields.contains_key("outcome")
        && phase.is_none_or(|p| p == Phase::Launch)
}

/// What one attempt came to, for the list of attempts.
pub(crate) fn info(index: usize, run: &Run) -> AttemptInfo {
    let root = run.root_failure();
    let outcome = if run.ready && run.failed_ranks() == 0 {
        Outcome::Ready
    } else if let Some((_, f)) = root {
        f.outcome
    } else {
        Outcome::Incomplete
    };
    let start = run.events.iter().filter_map(|e| e.ts).min();
    let end = run.events.iter().filter_map(|e| e.ts).max();
    AttemptInfo {
        index,
        start,
        end,
        start_step_ms: start.map_or(1000, |t| run.stamp_step_ms(t)),
        end_step_ms: end.map_or(1000, |t| run.stamp_step_ms(t)),
        events: run.events.len(),
        outcome,
        root: root.map(|(r, _)| r.rank.clone()),
        root_kind: root.map(|(_, f)| f.kind),
        root_phase: root.map(|(_, f)| f.phase),
        root_after: root.and_then(|(_, f)| f.after_phase),
    }
}
