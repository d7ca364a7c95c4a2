//! `watch`'s reading of a run still being written: what changed since the last look
//! (a phase reached, a memory figure, an outcome), and, against a baseline, the early
//! warnings — each as soon as its evidence exists:
//!
//! - memory: once a rank's KV pool is sized, what it has left against what the baseline's
//!   later phases took (graph capture, the first batch): less left than the baseline
//!   needed is a likely OOM in that phase, with the remedy `analysis::remedy` gives for
//!   that deficit;
//! - time: a rank in a phase for longer than the baseline's window of it, beyond the
//!   stamps' resolution and the tolerance (`analysis::timing`'s rule);
//! - stalls come from the model itself (`summary`'s silence rule), as an outcome.
//!
//! Facts only; `render::text::watch` words them.

use crate::base::units::Seconds;
use std::collections::HashSet;

use chrono::NaiveDateTime;

use super::remedy::{self, Deficit, DeficitBasis, Remedy};
use super::timing;
use crate::base::event::{FieldValue, FigureName, Measure, Origin, Rank};
use crate::model::{FailureKind, Outcome, Phase, PhaseOrder, RankRun, Run};

/// Phases after the KV pool whose memory the pool's leftover must hold.
const AFTER_POOL: [Phase; 2] = [Phase::CudaGraph, Phase::Ready];

/// A rank's memory left after its KV pool, against what a later phase took in the
/// baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryWarning {
    pub(crate) rank: Rank,
    /// Free memory after the pool (bytes) and the figure's print step.
    pub(crate) left: i64,
    pub(crate) left_resolution: i64,
    pub(crate) left_origin: Origin,
    /// The later phase, and what it took in the baseline (median over its ranks).
    pub(crate) phase: Phase,
    pub(crate) baseline_took: i64,
    pub(crate) baseline_resolution: i64,
    /// The shortfall exceeds both figures' rounding: an OOM there is likely, not only
    /// possible.
    pub(crate) likely: bool,
    /// The settings that would cover the shortfall (with `remedy::MARGIN`).
    pub(crate) remedies: Vec<Remedy>,
    pub(crate) deficit: Deficit,
}

/// A rank in one phase for longer than the baseline took for it.
#[derive(Clone, Debug, PartialEq)]
pub struct SlowWarning {
    /// The rank.
    pub rank: Rank,
    /// The phase it is still in.
    pub phase: Phase,
    /// From the end of its previous phase to "now" (see [`LogNow`]).
    pub so_far_s: Seconds,
    /// How much of `so_far_s` passed after the run's latest line: the run silent, measured
    /// by the wall clock (0 when measured to a line).
    pub silent_s: Seconds,
    /// How long the baseline's same rank took for the phase.
    pub baseline_s: Seconds,
    /// What `so_far_s - baseline_s` had to exceed.
    pub(crate) threshold_s: Seconds,
}

/// A warning `watch --baseline` gives before the run ends.
#[derive(Clone, Debug, PartialEq)]
pub enum EarlyWarning {
    /// A figure already worse than the baseline's.
    Memory(MemoryWarning),
    /// A phase already longer than the baseline's.
    Slow(SlowWarning),
}

/// One thing that changed on the board since the last look.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A rank's first line of a phase (or its end, when it printed no begin line).
    Phase {
        /// The rank.
        rank: Rank,
        /// The phase.
        phase: Phase,
        /// The line's stamp, if it had one.
        at: Option<NaiveDateTime>,
    },
    /// A memory figure a phase printed.
    Memory {
        /// The rank.
        rank: Rank,
        /// The phase that printed it.
        phase: Phase,
        /// Which figure.
        name: FigureName,
        /// Its value.
        value: FieldValue,
        /// The line it was printed on.
        origin: Origin,
    },
    /// A rank's outcome is decided (not `incomplete`).
    Outcome {
        /// The rank.
        rank: Rank,
        /// Its outcome.
        outcome: Outcome,
        /// The phase it stopped in.
        phase: Phase,
        /// The failure's kind, for a failure.
        kind: Option<FailureKind>,
        /// The deciding line's stamp, if it had one.
        at: Option<NaiveDateTime>,
        /// The deciding line.
        origin: Option<Origin>,
    },
    /// A warning against the baseline.
    Warning(EarlyWarning),
}

/// "Now" on the log's clock: the run's latest stamp, moved on by the wall-clock time since
/// the latest line was read (× the replay's speed). A run that falls silent everywhere —
/// every rank hung — still has a "now" that grows, so its slow phases are warned of;
/// counting from the log's own latest stamp keeps a log written in another timezone, or a
/// replay, right.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogNow {
    /// The run's latest stamp.
    pub latest: NaiveDateTime,
    /// Seconds since the latest line was read, in log time.
    pub silent_s: Seconds,
}

impl LogNow {
    /// The run's latest line, with no silence after it.
    pub fn at_latest_line(run: &Run) -> Option<LogNow> {
        Some(LogNow {
            latest: run.events.iter().filter_map(|e| e.ts).max()?,
            silent_s: Seconds::ZERO,
        })
    }

    pub(crate) fn time(&self) -> NaiveDateTime {
        self.latest + chrono::Duration::milliseconds((self.silent_s.get() * 1000.0) as i64)
    }
}

/// What `watch` has reported so far, so that each change is reported once however often
/// the run is read again.
#[derive(Debug, Default)]
pub struct Tracker {
    seen: HashSet<String>,
}

impl Tracker {
    /// The changes of `run` not reported yet (and, with a baseline, the warnings), "now"
    /// being the run's latest line.
    pub fn update(&mut self, run: &Run, baseline: Option<&Run>, tolerance: f64) -> Vec<Change> {
        self.update_at(run, baseline, tolerance, LogNow::at_latest_line(run))
    }

    /// As [`Tracker::update`], with slow phases measured to `now` (a silent run's time
    /// goes on).
    pub fn update_at(
        &mut self,
        run: &Run,
        baseline: Option<&Run>,
        tolerance: f64,
        now: Option<LogNow>,
    ) -> Vec<Change> {
        let mut out = Vec::new();
        for r in run.worker_ranks() {
            for span in &r.phases {
                let at = span.start.or(span.end);
                if self.first(format!("phase {} {}", r.rank, span.phase)) {
                    out.push(Change::Phase {
                        rank: r.rank.clone(),
                        phase: span.phase,
                        at,
                    });
                }
                for f in &span.figures {
                    if f.name.measure() != Measure::Bytes {
                        continue;
                    }
                    if self.first(format!("fig {} {} {}", r.rank, span.phase, f.name)) {
                        out.push(Change::Memory {
                            rank: r.rank.clone(),
                            phase: span.phase,
                            name: f.name.clone(),
                            value: f.value.clone(),
                            origin: f.origin.clone(),
                        });
                    }
                }
            }
            // Keyed by the failure's kind too: a failure first seen as an exception (its
            // traceback's first line) and then read as an OOM (its last) is said again.
            let kind = r.failure.as_ref().map(|f| f.kind);
            // Ready is said by its phase line.
            if !matches!(r.outcome, Outcome::Incomplete | Outcome::Ready)
                && self.first(format!("outcome {} {} {kind:?}", r.rank, r.outcome))
            {
                out.push(Change::Outcome {
                    rank: r.rank.clone(),
                    outcome: r.outcome,
                    phase: r.last_phase,
                    kind: r.failure.as_ref().map(|f| f.kind),
                    at: r.failure.as_ref().and_then(|f| f.ts),
                    origin: r.failure.as_ref().and_then(|f| f.origin.clone()),
                });
            }
        }
        if let Some(b) = baseline {
            self.warnings(run, b, tolerance, now, &mut out);
        }
        order(run, &mut out);
        out
    }

    fn warnings(
        &mut self,
        run: &Run,
        b: &Run,
        tolerance: f64,
        now: Option<LogNow>,
        out: &mut Vec<Change>,
    ) {
        for w in memory_warnings(b, run) {
            if self.first(format!("mem {} {}", w.rank, w.phase)) {
                out.push(Change::Warning(EarlyWarning::Memory(w)));
            }
        }
        if let Some(now) = now {
            for w in slow_phases_at(b, run, tolerance, now) {
                if self.first(format!("slow {} {}", w.rank, w.phase)) {
                    out.push(Change::Warning(EarlyWarning::Slow(w)));
                }
            }
        }
    }

    fn first(&mut self, key: String) -> bool {
        self.seen.insert(key)
    }
}

/// The changes of one look in the order the log wrote them (by stamp, then by line):
/// a run read whole at once (`watch` started late) tells its story in order, each
/// warning before the failure it foresaw.
fn order(run: &Run, changes: &mut [Change]) {
    let ts_of: std::collections::HashMap<(usize, u64), Option<NaiveDateTime>> = (run.events)
        .iter()
        .map(|e| ((e.origin.source, e.origin.line), e.ts))
        .collect();
    let key = |c: &Change| -> (Option<NaiveDateTime>, usize, u64) {
        let by_origin = |o: &Origin| {
            let ts = ts_of.get(&(o.source, o.line)).copied().flatten();
            (ts, o.source, o.line)
        };
        match c {
            Change::Phase { at, .. } => (*at, 0, 0),
            Change::Memory { origin, .. } => by_origin(origin),
            Change::Outcome { at, origin, .. } => match origin {
                Some(o) => (*at, o.source, o.line),
                None => (*at, usize::MAX, u64::MAX),
            },
            Change::Warning(EarlyWarning::Memory(m)) => by_origin(&m.left_origin),
            // Said when the run's latest line showed it: after everything else.
            Change::Warning(EarlyWarning::Slow(_)) => (None, usize::MAX, u64::MAX),
        }
    };
    // Untimed changes (no stamp) keep their place after the timed ones of their look.
    changes.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        match (ka.0, kb.0) {
            (Some(x), Some(y)) => (x, ka.1, ka.2).cmp(&(y, kb.1, kb.2)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
    });
}

/// The free memory a rank has after its KV pool: the pool's own figure, else what graph
/// capture began with (SGLang prints both; the deficit rule of `remedy` reads the same).
fn left_after_pool(r: &RankRun) -> Option<(i64, i64, Origin)> {
    let f = r
        .figure(Phase::KvCache, "avail_after")
        .or_else(|| r.figure(Phase::CudaGraph, "avail_before"))?;
    Some((
        f.value.as_bytes()?,
        f.value.resolution() as i64,
        f.origin.clone(),
    ))
}

/// Every rank whose memory left after the KV pool is less than what a later phase took in
/// the baseline: known from the pool's line, before that phase runs.
pub(crate) fn memory_warnings(baseline: &Run, run: &Run) -> Vec<MemoryWarning> {
    let mut out = Vec::new();
    let needs: Vec<(Phase, i64, i64)> = AFTER_POOL
        .iter()
        .filter_map(|&p| remedy::figure(baseline, p, "mem_usage").map(|(v, res)| (p, v, res)))
        .collect();
    for r in run.worker_ranks() {
        let Some((left, left_res, origin)) = left_after_pool(r) else {
            continue;
        };
        // The first later phase that would not fit is the one to warn of.
        let Some(&(phase, need, need_res)) = needs.iter().find(|(_, need, _)| *need > left) else {
            continue;
        };
        let deficit = Deficit {
            phase,
            need,
            have: left,
            deficit: need - left,
            resolution: need_res + left_res,
            need_step: need_res,
            have_step: left_res,
            basis: DeficitBasis::BaselinePhase,
        };
        out.push(MemoryWarning {
            rank: r.rank.clone(),
            left,
            left_resolution: left_res,
            left_origin: origin,
            phase,
            baseline_took: need,
            baseline_resolution: need_res,
            likely: deficit.deficit > deficit.resolution,
            remedies: remedy::levers(Some(baseline), run, &deficit),
            deficit,
        });
    }
    out
}

/// The phase a rank is in now and when it entered it (the end of its previous phase, or
/// the run's start): `None` for a rank that is done (ready, or its outcome decided).
pub(crate) fn current_phase(
    r: &RankRun,
    run_start: Option<NaiveDateTime>,
    order: PhaseOrder,
) -> Option<(Phase, NaiveDateTime)> {
    if r.reached_ready || r.outcome != Outcome::Incomplete {
        return None;
    }
    let last = r.phases.last();
    match last {
        Some(s) if s.complete => Some((order.next(s.phase), s.end?)),
        Some(s) => {
            let prev_end = r
                .phases
                .iter()
                .rev()
                .skip(1)
                .find_map(|p| p.end)
                .or(run_start)?;
            Some((s.phase, prev_end))
        }
        None => Some((Phase::Launch, run_start?)),
    }
}

/// As [`slow_phases`], measured to `now`.
pub fn slow_phases_at(baseline: &Run, run: &Run, tolerance: f64, at: LogNow) -> Vec<SlowWarning> {
    let now = at.time();
    let mut out = Vec::new();
    for r in run.worker_ranks() {
        let Some((phase, since)) = current_phase(r, run.start, run.phase_order) else {
            continue;
        };
        let Some((base_s, base_res)) = baseline_window(baseline, &r.rank, phase) else {
            continue;
        };
        let so_far = Seconds::from_ms((now - since).num_milliseconds());
        // The resolution of the latest stamp: the wall clock added to it is finer.
        let res = base_res + Seconds::from_ms(i64::from(run.stamp_step_ms(at.latest)));
        let delta = so_far - base_s;
        if delta.is_positive() && timing::beyond(delta, res, base_s, tolerance) {
            out.push(SlowWarning {
                rank: r.rank.clone(),
                phase,
                so_far_s: so_far,
                silent_s: Seconds(at.silent_s.get().min(so_far.get()).max(0.0)),
                baseline_s: base_s,
                threshold_s: timing::threshold(res, base_s, tolerance),
            });
        }
    }
    out
}

/// The baseline's window of a phase: the same rank's, else the median over its ranks.
fn baseline_window(baseline: &Run, rank: &Rank, phase: Phase) -> Option<(Seconds, Seconds)> {
    // Once: the run's first stamp's step is looked up over all its events.
    let start = baseline.start_stamped();
    let of = |r: &RankRun| {
        timing::windows(r, start)
            .into_iter()
            .find(|(p, _)| *p == phase)
            .map(|(_, w)| (w.total_s, w.resolution_s))
    };
    if let Some(w) = baseline.rank(rank).and_then(of) {
        return Some(w);
    }
    let mut all: Vec<(Seconds, Seconds)> = baseline.worker_ranks().filter_map(of).collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    all.get(all.len() / 2).copied()
}

/// Where a rank is, for the live board's status rows: its phase now, how long it has been
/// in it (to "now", so it grows while the rank is silent), its latest memory figure.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RankStatus {
    pub(crate) rank: Rank,
    /// The phase it is in (or, once decided, the one it ended in).
    pub(crate) phase: Phase,
    pub(crate) outcome: Outcome,
    pub(crate) reached_ready: bool,
    /// Seconds in `phase` so far; `None` once the rank is done or when a stamp is missing.
    pub(crate) in_phase_s: Option<Seconds>,
    /// The last bytes figure the rank printed: its phase, name and value.
    pub(crate) last_memory: Option<(Phase, FigureName, FieldValue)>,
}

/// Each worker rank's status at `now`, in the run's rank order.
pub(crate) fn status(run: &Run, now: Option<LogNow>) -> Vec<RankStatus> {
    let now = now.map(|n| n.time());
    run.worker_ranks()
        .map(|r| {
            let current = current_phase(r, run.start, run.phase_order);
            let in_phase_s = match (current, now) {
                (Some((_, since)), Some(now)) => {
                    Some(Seconds::from_ms((now - since).num_milliseconds()).max(Seconds::ZERO))
                }
                _ => None,
            };
            let last_memory = r
                .phases
                .iter()
                .rev()
                .flat_map(|p| p.figures.iter().rev().map(move |f| (p.phase, f)))
                .find(|(_, f)| f.name.measure() == Measure::Bytes)
                .map(|(p, f)| (p, f.name.clone(), f.value.clone()));
            RankStatus {
                rank: r.rank.clone(),
                phase: current.map_or(r.last_phase, |c| c.0),
                outcome: r.outcome,
                reached_ready: r.reached_ready,
                in_phase_s,
                last_memory,
            }
        })
        .collect()
}
