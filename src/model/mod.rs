//! The run model: events placed on ranks and phases, with each rank's failure.
//!
//! Pure functions over events; no I/O. `load.rs` builds the events, `analysis` compares.

use chrono::NaiveDateTime;

use crate::base::event::{Event, Origin, Rank};
use crate::ingest::scan::{LineCounts, UnknownLine};

mod attempts;
mod build;
pub mod config;
pub mod filter;
mod gpu;
pub(crate) mod layout;
pub mod node;
pub mod notes;
pub(crate) mod order;
pub(crate) mod outcome;
mod rank;

pub use crate::base::event::Phase;
pub use filter::EventFilter;

pub(crate) use crate::base::event::{Edge, PhaseOrder};

pub use build::{build, build_every_attempt, dedup_across_sources, name_first_stage, NodeEvents};
pub(crate) use build::{build_prepared, configured_sizes, prepare_node};
pub use gpu::{GpuMemory, GpuProcess, GPU_SERIES_POINTS};
pub use rank::{Failure, FailureKind, Figure, Outcome, PhaseSpan, RankRun};

/// One file of a run, as read: its counts and what could not be read.
#[derive(Clone, Debug)]
pub struct SourceInfo {
    pub(crate) path: String,
    pub(crate) bytes: u64,
    /// How its lines were understood.
    pub counts: LineCounts,
    pub(crate) unknown_samples: Vec<UnknownLine>,
    /// The last line had no newline: the text of that cut line (shortened).
    pub cut_last_line: Option<String>,
    pub(crate) cut_fields: Vec<String>,
    /// Events dropped because another file of the run holds the same lines.
    pub(crate) duplicate_events: u64,
    /// Grammar families detected from the file's first lines.
    pub(crate) detected: Vec<String>,
    /// Ranks the file's record prefixes name, with their first and last line.
    pub(crate) ranks_seen: Vec<(Rank, u64, u64)>,
    /// Whole dates the file printed before stamps of its that print none (line, stamp):
    /// glog's header. What dates those stamps, before the file's modification date.
    pub(crate) dated_lines: Vec<(u64, NaiveDateTime)>,
}

/// A run as read: its files, events and ranks, before any analysis.
#[derive(Clone, Debug)]
pub struct Run {
    /// The run's name: the path it was given as.
    pub name: String,
    /// The files read, in the order `Origin::source` indexes.
    pub sources: Vec<SourceInfo>,
    /// Every event of the run, in time order (file order for lines without a stamp).
    pub events: Vec<Event>,
    /// Every rank and process seen, with its phases and outcome.
    pub ranks: Vec<RankRun>,
    /// Failures printed by the launcher (no rank tag).
    pub(crate) launcher_failures: Vec<Failure>,
    /// The rank whose own failure came first: the root of the run's failure.
    pub root: Option<Rank>,
    /// The start-up attempt shown (1-based) and every attempt the log holds.
    pub attempt: usize,
    /// Every start-up attempt the log holds; shared by the runs `build_every_attempt`
    /// makes of one log, one per start-up (a copy each was quadratic in a crash loop's).
    pub attempts: std::sync::Arc<[AttemptInfo]>,
    /// Some rank printed the server's ready line.
    pub ready: bool,
    /// The first stamp of the run.
    pub start: Option<NaiveDateTime>,
    /// Grammars that produced events.
    pub grammars: Vec<String>,
    /// Which server the run is (at most one): the grammar describing a server, not a
    /// component (PyTorch, NCCL), that read the configuration line, else the one with the
    /// most events. Other server grammars may still be in `grammars` (a stray line).
    pub servers: Vec<String>,
    /// The frame → phase rules of the grammars the run was read with (`frame_phase`): a
    /// snapshot's stacks are placed in phases by them when its clock is matched to the log.
    pub frame_phases: Vec<crate::grammar::FrameRule>,
    /// The grammars' suspects and memory levers, for `diff`'s cause and remedies.
    pub(crate) remedy_rules: crate::grammar::remedy::RemedyRules,
    /// Some stamp printed no date: its year (and date) were inferred.
    pub year_inferred: bool,
    /// The run's first stamp printed no date (it was inferred); false when only later
    /// time-only lines were dated from it.
    pub start_date_inferred: bool,
    /// What reading the run noted (worded by `render::text::notes`).
    pub notes: Vec<notes::ReadNote>,
    /// nvidia-smi samples found in the run directory.
    pub gpus: Vec<GpuMemory>,
    /// nvidia-smi `--query-compute-apps` samples, per process.
    pub gpu_processes: Vec<GpuProcess>,
    /// The hosts of a run read from several nodes' files, with their clock offsets;
    /// empty for a run read as one.
    pub nodes: Vec<crate::model::node::Node>,
    /// Some event is a phase line or a failure (set by `build`, from the grammars).
    pub(crate) startup_events: bool,
    /// The phases its server goes through: what "the next phase" of a completed one is.
    pub(crate) phase_order: PhaseOrder,
    /// The configuration the run printed, read with its grammar's config rule.
    pub config:
        Option<Result<crate::model::config::ParsedConfig, crate::model::config::ConfigError>>,
}

impl Run {
    /// The run's first stamp with its step ([`Run::stamp_step_ms`]).
    pub(crate) fn start_stamped(&self) -> Option<(NaiveDateTime, u32)> {
        self.start.map(|t| (t, self.stamp_step_ms(t)))
    }
    /// The step between two stamps the format of the line(s) stamped `t` can print, in
    /// milliseconds (`Event::ts_step_ms`): a millisecond stamp reading `.000` is still
    /// 0.001 s. The finest format of the run where no line is stamped `t` (a time
    /// computed from stamps), 1000 where no line is stamped at all.
    pub fn stamp_step_ms(&self, t: NaiveDateTime) -> u32 {
        let at_t = (self.events.iter())
            .filter(|e| e.ts == Some(t))
            .map(|e| e.ts_step_ms)
            .min();
        at_t.or_else(|| {
            (self.events.iter())
                .filter(|e| e.ts.is_some())
                .map(|e| e.ts_step_ms)
                .min()
        })
        .unwrap_or(1000)
    }
    /// The line counts of all the run's files, summed.
    pub fn counts(&self) -> LineCounts {
        let mut c = LineCounts::default();
        for s in &self.sources {
            c.add(&s.counts);
        }
        c
    }
    /// `ranks` is built from an ordered map, so it is sorted by rank: a binary search
    /// keeps lookups logarithmic (a diff of 50,000 ranks looks each up several times).
    pub fn rank(&self, r: &Rank) -> Option<&RankRun> {
        self.ranks
            .binary_search_by(|x| x.rank.cmp(r))
            .ok()
            .and_then(|i| self.ranks.get(i))
    }
    /// Where a line is, as the verdicts cite it: `file:line`.
    pub(crate) fn cite(&self, o: &Origin) -> String {
        format!("{}:{}", self.source_name(o), o.line)
    }
    pub(crate) fn source_name(&self, o: &Origin) -> &str {
        self.sources.get(o.source).map_or("?", |s| s.path.as_str())
    }
    /// The node a rank ran on, in a run read from several nodes.
    pub(crate) fn node_of(&self, r: &Rank) -> Option<&crate::model::node::Node> {
        self.nodes.iter().find(|n| n.ranks.contains(r))
    }
    /// Ranks that failed on their own (not consequences, terminations or stalls).
    pub fn failed_ranks(&self) -> usize {
        self.count(Outcome::Failed)
    }
    /// Numbered ranks, without engine or API processes.
    pub fn worker_ranks(&self) -> impl Iterator<Item = &RankRun> {
        self.ranks.iter().filter(|r| !r.is_process())
    }
    /// How many numbered ranks came to outcome `o`.
    pub fn count(&self, o: Outcome) -> usize {
        self.worker_ranks().filter(|r| r.outcome == o).count()
    }
    /// The root rank and its failure.
    pub fn root_failure(&self) -> Option<(&RankRun, &Failure)> {
        let r = self.rank(self.root.as_ref()?)?;
        Some((r, r.failure.as_ref()?))
    }
    /// Some event places the run in start-up (a phase line or a failure): a file without
    /// one is not a start-up log.
    pub fn has_startup_events(&self) -> bool {
        self.startup_events || self.attempts.len() > 1
    }
}

/// One start-up found in the log, for the list of attempts.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptInfo {
    /// 1-based.
    pub(crate) index: usize,
    pub(crate) start: Option<NaiveDateTime>,
    pub(crate) end: Option<NaiveDateTime>,
    /// The steps of `start` and `end` from their lines' formats (`Run::stamp_step_ms`).
    pub(crate) start_step_ms: u32,
    pub(crate) end_step_ms: u32,
    pub(crate) events: usize,
    /// `ready`, or the root's outcome (`failed: TP3 oom in kv_cache`), or `incomplete`.
    pub outcome: Outcome,
    pub(crate) root: Option<Rank>,
    /// The root failure's kind, when the run failed.
    pub root_kind: Option<FailureKind>,
    pub(crate) root_phase: Option<Phase>,
    /// The phase the root rank had completed when its failure is placed in the next one
    /// (`after kv_cache, before ready`: it never served), as `Failure::after_phase`.
    pub(crate) root_after: Option<Phase>,
}
