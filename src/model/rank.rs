//! A rank's start-up: its phases with their figures, and the line that decided its outcome.

use chrono::NaiveDateTime;

use super::Phase;
pub use crate::base::event::FailureKind;
use crate::base::event::{FieldValue, Fields, FigureName, Origin, Rank};

/// A memory or count figure a phase reported, traceable to its line. Its name carries
/// its unit and direction, built-in or declared by the grammar that read it.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub(crate) name: FigureName,
    /// The figure's value as read (bytes, seconds, a count or a grammar's unit).
    pub value: FieldValue,
    pub(crate) origin: Origin,
}

/// One phase of one rank: when it began and ended, and the figures it reported.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSpan {
    /// Which phase.
    pub phase: Phase,
    /// `None` when no line of the phase came before its end line (the phase began before
    /// the log, or the server prints no begin line for it).
    pub start: Option<NaiveDateTime>,
    /// The stamp the phase ended at; `None` while it is still open.
    pub end: Option<NaiveDateTime>,
    /// The phase's closing line was seen, or a later phase began.
    pub complete: bool,
    /// `end` is the stamp of a printed closing line (not the start of the next phase, nor
    /// a rank's first line closing `launch`): with one-second stamps the phase may have
    /// run up to a second past it.
    pub(crate) end_printed: bool,
    /// The steps of the `start` and `end` stamps, milliseconds (`Event::ts_step_ms`).
    pub(crate) start_step_ms: u32,
    pub(crate) end_step_ms: u32,
    pub(crate) figures: Vec<Figure>,
}

impl PhaseSpan {
    /// A phase seen, with nothing known of it yet.
    pub(crate) fn empty(phase: Phase) -> PhaseSpan {
        PhaseSpan {
            phase,
            start: None,
            end: None,
            complete: false,
            end_printed: false,
            start_step_ms: 1000,
            end_step_ms: 1000,
            figures: Vec::new(),
        }
    }
}

impl PhaseSpan {
    /// From start to end where both are known and in order; never negative.
    pub fn duration_s(&self) -> Option<f64> {
        match (self.start, self.end) {
            (Some(s), Some(e)) if e >= s => Some((e - s).num_milliseconds() as f64 / 1000.0),
            _ => None,
        }
    }

    /// By how many seconds the phase's end is stamped before its start, when it is: the
    /// stamps are out of order (a line printed late, two formatters' clocks, an end taken
    /// from a later phase's first line that came early), so the phase has no duration.
    pub(crate) fn end_before_start_s(&self) -> Option<f64> {
        match (self.start, self.end) {
            (Some(s), Some(e)) if e < s => Some((s - e).num_milliseconds() as f64 / 1000.0),
            _ => None,
        }
    }
    pub(crate) fn figure(&self, name: &str) -> Option<&Figure> {
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
    /// Reached the server's ready line.
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
    pub(crate) const ALL: [Outcome; 6] = [
        Outcome::Ready,
        Outcome::Failed,
        Outcome::Consequence,
        Outcome::Terminated,
        Outcome::Stalled,
        Outcome::Incomplete,
    ];
    pub(crate) fn name(self) -> &'static str {
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

/// The line that decided a rank's outcome, with what it says.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The outcome this line gives its rank (never `ready`).
    pub(crate) outcome: Outcome,
    /// The phase the rank failed in.
    pub phase: Phase,
    /// Where the phase was read: `frames`, `wording`, `event` (the phase its grammar
    /// gives the failure's own line), `last_event`, `after_last_phase` (see `after_phase`)
    /// or, for a launcher's line or an engine's that reached no phase, `ranks_at_line`
    /// (the latest phase the ranks had reached).
    pub phase_from: &'static str,
    /// With `last_event`: the phase line the phase was read from (the last line that
    /// began, ended or was inside a phase, or a `then` that began the next).
    pub phase_line: Option<Origin>,
    /// The kind of failure (oom, not_enough_memory, nccl, exception or a grammar's name).
    pub kind: FailureKind,
    /// The line's message, sanitised.
    pub message: String,
    /// The fields the failure line's pattern captured (bytes asked, free, …).
    pub fields: Fields,
    pub(crate) ts: Option<NaiveDateTime>,
    /// The step of `ts` from its line's stamp format (`Event::ts_step_ms`), milliseconds.
    pub(crate) ts_step_ms: u32,
    /// The line, as file and line number.
    pub origin: Option<Origin>,
    /// The traceback, when the log printed one.
    pub traceback: Option<String>,
    /// For a consequence or a termination: the rank whose failure it followed.
    pub consequence_of: Option<Rank>,
    /// Placed in the next phase only as the phase after this one, which the rank
    /// completed (`phase_from` `after_last_phase`): in `ready` in a run that had printed no
    /// ready line by then, or any phase for a rank stopped by a signal (kind `signal`)
    /// after it said it waits for a peer:
    /// worded "after cuda_graph, before ready", never "while serving".
    pub(crate) after_phase: Option<Phase>,
    /// For a rank whose own log says nothing of its end: who reported it dead (an
    /// engine's or a rank's name, or `launcher`); the line (`origin`, `message`) is theirs.
    pub reported_by: Option<String>,
}

/// One rank (or engine process) of a run: its phases, its outcome and the evidence for it.
#[derive(Clone, Debug, PartialEq)]
pub struct RankRun {
    /// The rank as its lines name it (`TP3`, `DP0 TP1`, `engine DP0`).
    pub rank: Rank,
    /// Its phases, in start-up order.
    pub phases: Vec<PhaseSpan>,
    /// The phase the rank was in when it stopped (or `ready`).
    pub last_phase: Phase,
    /// The rank printed the server's ready line.
    pub reached_ready: bool,
    /// What its start-up came to.
    pub outcome: Outcome,
    /// The evidence for every outcome but `ready` and `incomplete`.
    pub failure: Option<Box<Failure>>,
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
    /// The rank's span of phase `p`, if it reached it.
    pub fn phase(&self, p: Phase) -> Option<&PhaseSpan> {
        self.phases.iter().find(|s| s.phase == p)
    }
    /// The figure `name` that phase `p` reported, if it did.
    pub fn figure(&self, p: Phase, name: &str) -> Option<&Figure> {
        self.phase(p).and_then(|s| s.figure(name))
    }
    /// The KV pool's bytes per token and its size in tokens, when the rank printed both
    /// (`kv_size` and `tokens` in `kv_cache`).
    pub(crate) fn kv_bytes_per_token(&self) -> Option<(f64, i64)> {
        let t = self.figure(Phase::KvCache, "tokens")?.value.as_i64()?;
        let b = self.figure(Phase::KvCache, "kv_size")?.value.as_bytes()?;
        (t > 0).then(|| (b as f64 / t as f64, t))
    }
}
