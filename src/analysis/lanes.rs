//! What the drawn views need per rank, computed from the run and its report: each rank's
//! phases as segments on the run's clock (the TUI's Timeline and the HTML report's SVG
//! timeline draw them) and the memory figures a rank's bar stacks (the TUI's Memory view,
//! the HTML report's memory table). One computation for both, so they show the same.

use chrono::NaiveDateTime;

use crate::base::event::Rank;
use crate::model::{Phase, RankRun, Run};
use crate::report::RunReport;

/// One phase of one rank on the time axis, in seconds since the run started.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Segment {
    pub(crate) phase: Phase,
    pub(crate) start: f64,
    pub(crate) end: f64,
    pub(crate) complete: bool,
}

/// What the timeline draws for one rank, computed once from the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    pub(crate) rank: Rank,
    pub(crate) segments: Vec<Segment>,
    /// Failure kind and when it happened.
    pub(crate) failure: Option<(&'static str, f64)>,
    /// Phases in which this rank finished well after the others.
    pub(crate) straggler_in: Vec<Phase>,
}

/// The figures the Memory table lists and stacks in each rank's bar, in start-up order;
/// the last one is what was left free.
pub(crate) const PARTS: [(Phase, &str, &str); 5] = [
    (Phase::DistInit, "mem_usage", "init"),
    (Phase::WeightLoad, "mem_usage", "weights"),
    (Phase::KvCache, "kv_size", "kv"),
    (Phase::CudaGraph, "mem_usage", "graph"),
    (Phase::Ready, "", "free"),
];

/// Free memory as last reported: after graphs, else after the pool, else after weights.
fn free_after(r: &RankRun) -> Option<(i64, f64)> {
    [
        (Phase::CudaGraph, "avail_after"),
        (Phase::KvCache, "avail_after"),
        (Phase::WeightLoad, "avail_after"),
        (Phase::WeightLoad, "avail_before"),
    ]
    .iter()
    .find_map(|(p, n)| r.figure(*p, n))
    .and_then(|f| Some((f.value.as_bytes()?, f.value.resolution() as f64)))
}

/// A rank's memory parts, as [`PARTS`] lists them: (bytes, the log's resolution).
pub(crate) fn parts_of(r: &RankRun) -> [Option<(i64, f64)>; 5] {
    let mut out = [None; 5];
    for (i, (p, name, _)) in PARTS.iter().enumerate() {
        out[i] = if *p == Phase::Ready {
            free_after(r)
        } else {
            r.figure(*p, name)
                .and_then(|f| Some((f.value.as_bytes()?, f.value.resolution() as f64)))
        };
    }
    out
}

/// Seconds from `start` to `ts`, when both are known.
pub(crate) fn seconds(start: Option<NaiveDateTime>, ts: Option<NaiveDateTime>) -> Option<f64> {
    Some((ts? - start?).num_milliseconds() as f64 / 1000.0)
}

/// Each rank's phases on the run's clock (node offsets are already applied to the
/// stamps by the loader), its failure, and the phases it straggled in.
pub fn lanes_of(run: &Run, report: &RunReport) -> Vec<Lane> {
    let stats = &report.phases;
    let run_end = run
        .events
        .iter()
        .filter_map(|e| seconds(run.start, e.ts))
        .fold(0.0, f64::max);
    run.ranks
        .iter()
        .map(|r| {
            let last_seen = r
                .events
                .iter()
                .filter_map(|&i| run.events.get(i))
                .filter_map(|e| seconds(run.start, e.ts))
                .fold(0.0, f64::max);
            // A rank's own failure is marked by its kind; what followed it by its outcome
            // (`consequence`, `terminated`, `stalled`).
            let failure = r.failure.as_ref().map(|f| {
                let label = match f.outcome {
                    crate::model::Outcome::Failed => f.kind.name(),
                    o => o.name(),
                };
                (label, seconds(run.start, f.ts).unwrap_or(last_seen))
            });
            let segments = r
                .phases
                .iter()
                .filter_map(|p| {
                    // No begin line: drawn back from the end by the printed duration,
                    // or not drawn (a zero-length bar would claim it took no time).
                    let start = match seconds(run.start, p.start) {
                        Some(s) => s,
                        None => (seconds(run.start, p.end)? - p.printed_elapsed_s()?).max(0.0),
                    };
                    // An open phase lasts until the rank failed or fell silent; `ready`
                    // is a state, drawn to the end of the log.
                    let end = match seconds(run.start, p.end) {
                        Some(e) => e,
                        None if p.phase == Phase::Ready => run_end,
                        None => failure.map_or(last_seen, |f| f.1),
                    };
                    Some(Segment {
                        phase: p.phase,
                        start,
                        end: end.max(start),
                        complete: p.complete,
                    })
                })
                .collect();
            let straggler_in = stats
                .iter()
                .filter(|s| s.stragglers.contains(&r.rank))
                .map(|s| s.phase)
                .collect();
            Lane {
                rank: r.rank.clone(),
                segments,
                failure,
                straggler_in,
            }
        })
        .collect()
}
