//! Baseline against candidate in time: per phase and rank, how long the rank took to get
//! from the end of its previous phase to the end of this one, and the whole start-up
//! from the run's first line to ready.
//!
//! A phase's *window* on a rank runs from the end of the rank's previous phase (the run's
//! first line for `launch`) to the end of this one, so time a rank spent before the
//! phase's first line — a slow disk before `Load weight begin`, a wait at a barrier — is
//! counted in the phase it delayed, as `summary`'s stragglers count it. The window splits
//! at the phase's first line into *before its first line* and *inside*.
//!
//! A window is the difference of two stamps; with whole-second stamps the true window is
//! within a second of the printed one, so two windows differ by up to two seconds with no
//! change at all. A change counts only beyond that resolution **and** by at least the
//! tolerance (a fraction of the baseline's window, 20 % by default): a re-run with only
//! jitter stays the same.

use chrono::NaiveDateTime;

use super::align::{phase_stats, Spread};
use crate::base::event::{kind, Rank};
use crate::base::units::Seconds;
use crate::model::{Phase, RankRun, Run};

/// What a time change must exceed besides the stamps' resolution, as a fraction of the
/// baseline's figure.
pub(crate) const DEFAULT_TOLERANCE: f64 = 0.2;

/// One rank's window of one phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Window {
    /// From the previous phase's end to this phase's end, seconds.
    pub(crate) total_s: Seconds,
    /// Of which before the phase's first line (`None`: the phase printed no line before
    /// its end, so the split is unknown).
    pub(crate) before_first_line_s: Option<Seconds>,
    /// How far the printed window may be from the true one, seconds (one stamp step).
    pub(crate) resolution_s: Seconds,
}

/// Each phase's window on one rank, in phase order. A phase with no end, or whose end is
/// stamped before the previous phase's end (stamps out of order), has none: no window is
/// ever negative.
pub(crate) fn windows(
    rank: &RankRun,
    run_start: Option<(NaiveDateTime, u32)>,
) -> Vec<(Phase, Window)> {
    let mut out = Vec::new();
    // The launch span starts at the run's first line when there is one, with that
    // stamp's step from its format (`Run::stamp_step_ms`), never guessed from its value.
    let mut prev_end = run_start;
    // `RankRun::phases` is in phase order (built from an ordered map).
    for span in &rank.phases {
        // `ready` is an instant: the ready line.
        let end = match span.phase {
            Phase::Ready => (span.start.map(|t| (t, span.start_step_ms)))
                .or(span.end.map(|t| (t, span.end_step_ms))),
            _ => span.end.map(|t| (t, span.end_step_ms)),
        };
        let Some((end, end_step)) = end else { continue };
        let Some((from, from_step)) = prev_end.or(span.start.map(|t| (t, span.start_step_ms)))
        else {
            prev_end = Some((end, end_step));
            continue;
        };
        let total_ms = (end - from).num_milliseconds();
        if total_ms < 0 {
            // Stamps out of order (a clock step, lines of two formatters): no window, and
            // the next phase is measured from this end, which is where the rank was.
            prev_end = Some((end, end_step));
            continue;
        }
        let before = span
            .start
            .filter(|_| span.phase != Phase::Ready)
            .map(|s| (s - from).num_milliseconds())
            .filter(|ms| (0..=total_ms).contains(ms))
            .map(Seconds::from_ms);
        let step = end_step.max(from_step);
        out.push((
            span.phase,
            Window {
                total_s: Seconds::from_ms(total_ms),
                before_first_line_s: before,
                resolution_s: Seconds::from_ms(i64::from(step)),
            },
        ));
        prev_end = Some((end, end_step));
    }
    out
}

/// One rank's change in one phase.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RankTime {
    pub(crate) rank: Rank,
    pub(crate) baseline_s: Seconds,
    pub(crate) candidate_s: Seconds,
    pub(crate) delta_s: Seconds,
    /// The change of the time before the phase's first line, when both runs split it.
    pub(crate) before_first_line_delta_s: Option<Seconds>,
    /// Both windows' resolution added: a change within it may be none at all.
    pub(crate) resolution_s: Seconds,
    /// What the change had to exceed: the resolution, and the tolerance.
    pub(crate) threshold_s: Seconds,
    pub(crate) beyond: bool,
}

impl RankTime {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeClass {
    /// No rank's change got past its threshold.
    Same,
    /// At least three quarters of the ranks (and at least two) changed the same way.
    Systematic,
    /// Some ranks only.
    Local,
}

impl TimeClass {
    pub(crate) fn name(self) -> &'static str {
        match self {
            TimeClass::Same => "same",
            TimeClass::Systematic => "systematic",
            TimeClass::Local => "local",
        }
    }
}

/// One phase's windows compared across the ranks both runs have.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PhaseTime {
    pub(crate) phase: Phase,
    pub(crate) ranks_compared: usize,
    /// Ranks past their threshold in the dominant direction.
    pub(crate) ranks_moved: usize,
    pub(crate) class: TimeClass,
    pub(crate) baseline: Spread,
    pub(crate) candidate: Spread,
    pub(crate) delta: Spread,
    /// The widest resolution of a rank's comparison (both windows' steps added).
    pub(crate) resolution_s: Seconds,
    /// The dominant direction is slower.
    pub(crate) slower: bool,
    pub(crate) per_rank: Vec<RankTime>,
}

/// The whole start-up: the run's first line to its (last) ready line.
#[derive(Clone, Debug, PartialEq)]
pub struct ToReady {
    /// Seconds from the baseline's first line to ready.
    pub baseline_s: Seconds,
    /// Seconds from the candidate's first line to ready.
    pub candidate_s: Seconds,
    pub(crate) delta_s: Seconds,
    pub(crate) threshold_s: Seconds,
    /// The change is beyond the stamps' resolution and the tolerance.
    pub beyond: bool,
}

/// A time change worth a line of the verdict.
#[derive(Clone, Debug, PartialEq)]
pub enum TimeFinding {
    /// Most ranks took longer (or shorter) in a phase.
    Systematic {
        /// The phase.
        phase: Phase,
        /// Ranks that moved beyond resolution and tolerance.
        ranks_moved: usize,
        /// Ranks both runs have the phase for.
        ranks_compared: usize,
        /// The baseline's median seconds in the phase.
        baseline_s: Seconds,
        /// The candidate's median seconds in the phase.
        candidate_s: Seconds,
        /// The change in seconds.
        delta_s: Seconds,
    },
    /// One rank (of a few) took longer in a phase.
    Rank {
        /// The rank.
        rank: Rank,
        /// The phase.
        phase: Phase,
        /// The baseline's seconds for the rank in the phase.
        baseline_s: Seconds,
        /// The candidate's seconds for the rank in the phase.
        candidate_s: Seconds,
        /// The change in seconds.
        delta_s: Seconds,
        /// The change of the time before the phase's first line, when both runs split it.
        before_first_line_delta_s: Option<Seconds>,
        /// The candidate's `summary` names it a straggler in this phase and the baseline's
        /// does not.
        straggler: bool,
        /// An earlier finding on another rank whose delay this one matches: the rank
        /// waited for it (a barrier or a collective), it did not cause the delay.
        waited_for: Option<(Rank, Phase)>,
    },
}

impl TimeFinding {
    pub(crate) fn delta_s(&self) -> Seconds {
        match self {
            TimeFinding::Systematic { delta_s, .. } | TimeFinding::Rank { delta_s, .. } => *delta_s,
        }
    }
    /// A cause, not a wait.
    pub(crate) fn is_cause(&self) -> bool {
        !matches!(
            self,
            TimeFinding::Rank {
                waited_for: Some(_),
                ..
            }
        )
    }
}

/// Two runs' times compared: the whole start-up, each phase, and the findings worth a line.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct TimeDiff {
    /// The tolerance used, as a fraction.
    pub(crate) tolerance: f64,
    /// The whole start-up compared, when both runs reached ready.
    pub to_ready: Option<ToReady>,
    pub(crate) phases: Vec<PhaseTime>,
    /// In start-up order; causes before the waits they explain.
    pub findings: Vec<TimeFinding>,
}

impl TimeDiff {
    /// The candidate is slower beyond resolution and tolerance somewhere.
    pub(crate) fn slower(&self) -> bool {
        self.to_ready
            .as_ref()
            .is_some_and(|t| t.beyond && t.delta_s.is_positive())
            || self.findings.iter().any(|f| f.delta_s().is_positive())
    }
    /// Faster somewhere, and slower nowhere.
    pub(crate) fn faster(&self) -> bool {
        !self.slower()
            && (self
                .to_ready
                .as_ref()
                .is_some_and(|t| t.beyond && t.delta_s.is_negative())
                || self.findings.iter().any(|f| f.delta_s().is_negative()))
    }
    /// The finding the verdict leads with: the first slower cause in start-up order.
    pub fn lead(&self) -> Option<&TimeFinding> {
        self.findings
            .iter()
            .find(|f| f.is_cause() && f.delta_s().is_positive())
    }
}

/// The stamp of the run's last ready line. A ready line that prints no stamp (uvicorn's
/// `Application startup complete.` under TensorRT-LLM or LMDeploy) was printed at or
/// after the last stamped event before it in its file, and takes that stamp.
pub(crate) fn ready_at(run: &Run) -> Option<chrono::NaiveDateTime> {
    let ready = || run.events.iter().filter(|e| e.kind == kind::READY);
    let stamped = ready().filter_map(|e| e.ts).max();
    let unstamped: Vec<(usize, u64)> = (ready().filter(|e| e.ts.is_none()))
        .map(|e| (e.origin.source, e.origin.line))
        .collect();
    if unstamped.is_empty() {
        return stamped;
    }
    // The stamped events sorted by file and line, searched once per unstamped ready line
    // (a pass over the events per line would be quadratic in a log of many).
    let mut stamps: Vec<(usize, u64, chrono::NaiveDateTime)> = (run.events.iter())
        .filter_map(|e| Some((e.origin.source, e.origin.line, e.ts?)))
        .collect();
    stamps.sort_unstable_by_key(|&(source, line, _)| (source, line));
    let inferred = unstamped.iter().filter_map(|&(source, line)| {
        let at = stamps.partition_point(|&(s, l, _)| (s, l) < (source, line));
        let &(s, _, ts) = stamps.get(at.checked_sub(1)?)?;
        (s == source).then_some(ts)
    });
    stamped.into_iter().chain(inferred).max()
}

/// The first line of the run to its last ready line, seconds, and the stamps' resolution.
pub(crate) fn to_ready_s(run: &Run) -> Option<(Seconds, Seconds)> {
    let start = run.start?;
    let ready = ready_at(run)?;
    let ms = (ready - start).num_milliseconds();
    if ms < 0 || !run.ready {
        return None;
    }
    // Each stamp's step from its line's format (`Event::ts_step_ms`).
    let step_of = |t| {
        (run.events.iter())
            .find(|e| e.ts == Some(t))
            .map_or(1000, |e| e.ts_step_ms)
    };
    let step = step_of(ready).max(step_of(start));
    Some((Seconds::from_ms(ms), Seconds::from_ms(i64::from(step))))
}

pub(crate) fn threshold(resolution_s: Seconds, baseline_s: Seconds, tolerance: f64) -> Seconds {
    resolution_s.max(tolerance * baseline_s)
}

/// Is `delta` a change: past the resolution, and at least the tolerance of the baseline.
pub(crate) fn beyond(
    delta: Seconds,
    resolution_s: Seconds,
    baseline_s: Seconds,
    tolerance: f64,
) -> bool {
    // A nanosecond of slack either way: a change exactly at a bound is not lost to rounding.
    let (delta, resolution_s, baseline_s) = (delta.get(), resolution_s.get(), baseline_s.get());
    delta.abs() > resolution_s + 1e-9 && delta.abs() >= tolerance * baseline_s - 1e-9
}

pub(crate) fn compare(baseline: &Run, candidate: &Run, tolerance: f64) -> TimeDiff {
    let tolerance = if tolerance.is_finite() && tolerance >= 0.0 {
        tolerance
    } else {
        DEFAULT_TOLERANCE
    };
    let to_ready = match (to_ready_s(baseline), to_ready_s(candidate)) {
        (Some((b, rb)), Some((c, rc))) => {
            let res = rb + rc;
            let d = c - b;
            Some(ToReady {
                baseline_s: b,
                candidate_s: c,
                delta_s: d,
                threshold_s: threshold(res, b, tolerance),
                beyond: beyond(d, res, b, tolerance),
            })
        }
        _ => None,
    };
    let b_rows: std::collections::HashMap<&Rank, &RankRun> =
        baseline.worker_ranks().map(|r| (&r.rank, r)).collect();
    let mut per_phase: std::collections::BTreeMap<Phase, Vec<RankTime>> = Default::default();
    // Once, not per rank: each looks its stamp's step up over all the run's events (per
    // rank, that was half of `diff` at 8,192 ranks).
    let (b_start, c_start) = (baseline.start_stamped(), candidate.start_stamped());
    for c_row in candidate.worker_ranks() {
        let Some(b_row) = b_rows.get(&c_row.rank) else {
            continue;
        };
        let bw = windows(b_row, b_start);
        let cw = windows(c_row, c_start);
        for (phase, c) in &cw {
            let Some((_, b)) = bw.iter().find(|(p, _)| p == phase) else {
                continue;
            };
            let res = b.resolution_s + c.resolution_s;
            let delta = c.total_s - b.total_s;
            per_phase.entry(*phase).or_default().push(RankTime {
                rank: c_row.rank.clone(),
                baseline_s: b.total_s,
                candidate_s: c.total_s,
                delta_s: delta,
                before_first_line_delta_s: match (b.before_first_line_s, c.before_first_line_s) {
                    (Some(b), Some(c)) => Some(c - b),
                    _ => None,
                },
                resolution_s: res,
                threshold_s: threshold(res, b.total_s, tolerance),
                beyond: beyond(delta, res, b.total_s, tolerance),
            });
        }
    }
    let mut phases = Vec::new();
    for (phase, per_rank) in per_phase {
        let n = per_rank.len();
        let up = per_rank
            .iter()
            .filter(|r| r.beyond && r.delta_s.is_positive())
            .count();
        let down = per_rank
            .iter()
            .filter(|r| r.beyond && r.delta_s.is_negative())
            .count();
        let moved = up.max(down);
        let class = if moved == 0 {
            TimeClass::Same
        } else if (n >= 2 && moved * 4 >= n * 3) || n == 1 {
            TimeClass::Systematic
        } else {
            TimeClass::Local
        };
        let spread = |f: &dyn Fn(&RankTime) -> Seconds| {
            let mut v: Vec<f64> = per_rank.iter().map(|r| f(r).get()).collect();
            Spread::of(&mut v)
        };
        let (Some(b), Some(c), Some(d)) = (
            spread(&|r| r.baseline_s),
            spread(&|r| r.candidate_s),
            spread(&|r| r.delta_s),
        ) else {
            continue;
        };
        let resolution_s =
            (per_rank.iter().map(|r| r.resolution_s)).fold(Seconds::ZERO, Seconds::max);
        phases.push(PhaseTime {
            phase,
            ranks_compared: n,
            ranks_moved: moved,
            class,
            baseline: b,
            candidate: c,
            delta: d,
            resolution_s,
            slower: up >= down,
            per_rank,
        });
    }
    let findings = findings(baseline, candidate, &phases);
    TimeDiff {
        tolerance,
        to_ready,
        phases,
        findings,
    }
}

/// Ranks `run`'s `summary` names stragglers, per phase.
fn stragglers(run: &Run) -> Vec<(Phase, Rank)> {
    phase_stats(run)
        .into_iter()
        .flat_map(|p| p.stragglers.into_iter().map(move |r| (p.phase, r)))
        .collect()
}

fn findings(baseline: &Run, candidate: &Run, phases: &[PhaseTime]) -> Vec<TimeFinding> {
    let mut out: Vec<TimeFinding> = Vec::new();
    let mut causes: Vec<(Rank, Phase, Seconds, Seconds)> = Vec::new();
    // `summary`'s stragglers name per-rank findings only: computed (a pass over every
    // rank of both runs) when some phase changed on a few ranks.
    let (late_b, late_c) = if phases.iter().any(|p| p.class == TimeClass::Local) {
        (stragglers(baseline), stragglers(candidate))
    } else {
        (Vec::new(), Vec::new())
    };
    for p in phases {
        match p.class {
            TimeClass::Same => {}
            TimeClass::Systematic => {
                let moved: Vec<&RankTime> = p
                    .per_rank
                    .iter()
                    .filter(|r| r.beyond && r.delta_s.is_positive() == p.slower)
                    .collect();
                let med = |f: &dyn Fn(&RankTime) -> Seconds| {
                    let mut v: Vec<f64> = moved.iter().map(|r| f(r).get()).collect();
                    Seconds(Spread::of(&mut v).map_or(0.0, |s| s.median))
                };
                out.push(TimeFinding::Systematic {
                    phase: p.phase,
                    ranks_moved: p.ranks_moved,
                    ranks_compared: p.ranks_compared,
                    baseline_s: med(&|r| r.baseline_s),
                    candidate_s: med(&|r| r.candidate_s),
                    delta_s: med(&|r| r.delta_s),
                });
            }
            TimeClass::Local => {
                let mut moved: Vec<&RankTime> = p.per_rank.iter().filter(|r| r.beyond).collect();
                moved.sort_by(|a, b| b.delta_s.abs().total_cmp(&a.delta_s.abs()));
                for r in moved {
                    let waited_for = causes
                        .iter()
                        .find(|(rank, _, delta, res)| {
                            *rank != r.rank
                                && delta.get().signum() == r.delta_s.get().signum()
                                && (*delta - r.delta_s).abs() <= res.max(r.threshold_s)
                        })
                        .map(|(rank, phase, _, _)| (rank.clone(), *phase));
                    let straggler = late_c.contains(&(p.phase, r.rank.clone()))
                        && !late_b.contains(&(p.phase, r.rank.clone()));
                    if waited_for.is_none() {
                        causes.push((r.rank.clone(), p.phase, r.delta_s, r.threshold_s));
                    }
                    out.push(TimeFinding::Rank {
                        rank: r.rank.clone(),
                        phase: p.phase,
                        baseline_s: r.baseline_s,
                        candidate_s: r.candidate_s,
                        delta_s: r.delta_s,
                        before_first_line_delta_s: r.before_first_line_delta_s,
                        straggler,
                        waited_for,
                    });
                }
            }
        }
    }
    out
}
