//! A rank's start-up: its phases with their figures, and the line that decided its outcome.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;

use super::outcome;
use super::{Edge, Phase};
use crate::event::{kind, Event, FieldValue, Origin, Rank};
use crate::grammar::Knowledge;

/// A memory or count figure a phase reported, traceable to its line.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub name: &'static str,
    pub value: FieldValue,
    pub origin: Origin,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSpan {
    pub phase: Phase,
    /// `None` when no line of the phase came before its end line (the phase began before
    /// the log, or the server prints no begin line for it).
    pub start: Option<NaiveDateTime>,
    pub end: Option<NaiveDateTime>,
    /// The phase's closing line was seen, or a later phase began.
    pub complete: bool,
    /// `end` is the stamp of a printed closing line (not the start of the next phase, nor
    /// a rank's first line closing `launch`): with one-second stamps the phase may have
    /// run up to a second past it.
    pub end_printed: bool,
    pub figures: Vec<Figure>,
}

impl PhaseSpan {
    pub fn duration_s(&self) -> Option<f64> {
        match (self.start, self.end) {
            (Some(s), Some(e)) => Some((e - s).num_milliseconds() as f64 / 1000.0),
            _ => None,
        }
    }
    pub fn figure(&self, name: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.name == name)
    }
    /// The duration the server printed on the phase's end line (SGLang `elapsed=`, vLLM
    /// `took … seconds`), the only duration there is when the begin line is missing.
    pub fn printed_elapsed_s(&self) -> Option<f64> {
        self.figure("elapsed")?.value.as_f64()
    }
}

/// What a rank's start-up came to, stating only what the evidence shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    Ready,
    /// Its own failure: the root of the run's failure, or one of several independent ones.
    Failed,
    /// Failed because another rank failed (a barrier, the store or a collective says so).
    Consequence,
    /// Killed or shut down by the launcher after a failure.
    Terminated,
    /// A timeout or watchdog says it waited and gave up, or it fell silent while the
    /// others went on.
    Stalled,
    /// The log ends and nothing says why: a cut excerpt or a log still being written.
    Incomplete,
}

impl Outcome {
    pub const ALL: [Outcome; 6] = [
        Outcome::Ready,
        Outcome::Failed,
        Outcome::Consequence,
        Outcome::Terminated,
        Outcome::Stalled,
        Outcome::Incomplete,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ready => "ready",
            Outcome::Failed => "failed",
            Outcome::Consequence => "consequence",
            Outcome::Terminated => "terminated",
            Outcome::Stalled => "stalled",
            Outcome::Incomplete => "incomplete",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    Oom,
    NotEnoughMemory,
    Nccl,
    Exception,
    /// A timeout or watchdog fired.
    Timeout,
    /// A signal or the launcher's shutdown ended the process.
    Signal,
}

impl FailureKind {
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Oom => "oom",
            FailureKind::NotEnoughMemory => "not_enough_memory",
            FailureKind::Nccl => "nccl",
            FailureKind::Exception => "exception",
            FailureKind::Timeout => "timeout",
            FailureKind::Signal => "signal",
        }
    }
}

/// The line that decided a rank's outcome, with what it says.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The outcome this line gives its rank (never `ready`).
    pub outcome: Outcome,
    pub phase: Phase,
    /// Where the phase was read: `frames`, `wording` or `last_event`.
    pub phase_from: &'static str,
    pub kind: FailureKind,
    pub message: String,
    pub fields: BTreeMap<String, FieldValue>,
    pub ts: Option<NaiveDateTime>,
    pub origin: Option<Origin>,
    /// The traceback, when the log printed one.
    pub traceback: Option<String>,
    /// For a consequence or a termination: the rank whose failure it followed.
    pub consequence_of: Option<Rank>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RankRun {
    pub rank: Rank,
    pub phases: Vec<PhaseSpan>,
    /// The phase the rank was in when it stopped (or `ready`).
    pub last_phase: Phase,
    pub reached_ready: bool,
    pub outcome: Outcome,
    /// The evidence for every outcome but `ready` and `incomplete`.
    pub failure: Option<Failure>,
    /// The rank's last line: where an `incomplete` log ends.
    pub last_origin: Option<Origin>,
    /// Indices into `Run::events`.
    pub events: Vec<usize>,
}

impl RankRun {
    /// An engine or API process that reports figures but is not a numbered rank.
    pub fn is_process(&self) -> bool {
        self.rank.is_engine()
    }
    pub fn phase(&self, p: Phase) -> Option<&PhaseSpan> {
        self.phases.iter().find(|s| s.phase == p)
    }
    pub fn figure(&self, p: Phase, name: &str) -> Option<&Figure> {
        self.phase(p).and_then(|s| s.figure(name))
    }
}

pub(super) fn build_rank(
    rank: Rank,
    idx: Vec<usize>,
    events: &[Event],
    run_start: Option<NaiveDateTime>,
    run_ready: bool,
    ready_at: Option<usize>,
    know: &Knowledge,
) -> (RankRun, Option<outcome::Stop>) {
    let mut spans: BTreeMap<Phase, PhaseSpan> = BTreeMap::new();
    let mut current = Phase::Launch;
    let mut stops: Vec<outcome::Stop> = Vec::new();
    let mut traceback: Option<String> = None;
    for &i in &idx {
        let e = &events[i];
        if let Some((phase, edge)) = know.phase_of(e) {
            let span = spans.entry(phase).or_insert_with(|| PhaseSpan {
                phase,
                start: None,
                end: None,
                complete: false,
                end_printed: false,
                figures: Vec::new(),
            });
            match edge {
                Edge::Begin => {
                    if span.start.is_none() {
                        span.start = e.ts;
                    }
                    current = phase;
                }
                Edge::Inside => {
                    if span.start.is_none() {
                        span.start = e.ts;
                    }
                    current = current.max(phase);
                }
                Edge::End => {
                    // No begin line: the start stays unknown rather than a zero-length
                    // phase; the end line's printed `elapsed` may still give a duration.
                    span.end = e.ts;
                    span.complete = true;
                    span.end_printed = true;
                    current = phase;
                }
            }
            for (figure, value) in know.figures_of(e) {
                if span.figure(figure.name()).is_none() {
                    span.figures.push(Figure {
                        name: figure.name(),
                        value,
                        origin: e.origin.clone(),
                    });
                }
            }
            continue;
        }
        if e.kind == kind::ERROR && e.detail.is_some() {
            traceback = e.detail.clone();
        }
        // The phase a failure belongs to when neither its frames nor its wording say: the
        // one in progress, or the next one when the last line closed a phase.
        let in_phase = match spans.get(&current) {
            _ if ready_at.is_some_and(|r| i > r) => Phase::Ready,
            Some(s) if s.complete && current != Phase::Ready => current.next(),
            _ => current,
        };
        if let Some(stop) = outcome::stop_of(e, in_phase, "last_event", know, traceback.as_deref())
        {
            stops.push(stop);
        }
    }
    // A phase is over once a later one has begun, whether or not the server prints an
    // end line for it (vLLM has no `Memory pool end`).
    let starts: Vec<(Phase, Option<NaiveDateTime>)> =
        spans.values().map(|s| (s.phase, s.start)).collect();
    for span in spans.values_mut() {
        if span.complete {
            continue;
        }
        if let Some((_, next_start)) = starts.iter().find(|(p, _)| *p > span.phase) {
            span.complete = true;
            if span.end.is_none() {
                span.end = *next_start;
            }
        }
    }
    // Launch runs from the first line of the run to the rank's first line.
    let first_ts = idx.iter().filter_map(|&i| events[i].ts).min();
    if let (Some(s), Some(f), false) = (run_start, first_ts, rank.is_engine()) {
        spans.entry(Phase::Launch).or_insert_with(|| PhaseSpan {
            phase: Phase::Launch,
            start: Some(s),
            end: Some(f),
            complete: true,
            end_printed: false,
            figures: Vec::new(),
        });
    }
    let last_phase = spans.keys().copied().max().unwrap_or(Phase::Launch);
    let stop = outcome::decisive(stops);
    let reached_ready = stop.is_none() && run_ready;
    if reached_ready {
        // A rank that reached ready finished every phase it began, whether or not the
        // server prints an end line for the last one (TensorRT-LLM's graph warm-up): the
        // phase is complete, its end unknown, so no duration is made up.
        for span in spans.values_mut() {
            span.complete = true;
        }
        spans.entry(Phase::Ready).or_insert(PhaseSpan {
            phase: Phase::Ready,
            start: None,
            end: None,
            complete: true,
            end_printed: false,
            figures: Vec::new(),
        });
    }
    // Where a log that simply ends stopped: in the open phase, or the next one once the
    // last phase closed.
    let open_phase = match spans.get(&last_phase) {
        Some(s) if s.complete && last_phase != Phase::Ready => last_phase.next(),
        _ => last_phase,
    };
    let last_origin = idx.last().map(|&i| events[i].origin.clone());
    let (out, last_phase) = match &stop {
        Some(s) => (s.failure.outcome, s.failure.phase),
        None if reached_ready => (Outcome::Ready, Phase::Ready),
        None => (Outcome::Incomplete, open_phase),
    };
    (
        RankRun {
            rank,
            phases: spans.into_values().collect(),
            last_phase,
            reached_ready,
            outcome: out,
            failure: stop.as_ref().map(|s| s.failure.clone()),
            last_origin,
            events: idx,
        },
        stop,
    )
}
