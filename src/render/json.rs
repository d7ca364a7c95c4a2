//! The JSON contract. These types are the output, kept apart from the internal model so
//! that a refactor cannot change what scripts read by accident: every internal value is
//! converted here into a type that exists only to be serialised. Every document carries
//! `schema_version`; a breaking change bumps it (see CHANGELOG.md and docs/json.md).
//!
//! The JSON Schemas in `docs/schema/` are generated from these types (`rankscope schema`)
//! and `tests/schema.rs` fails when they drift.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::align;
use crate::analysis::diff;
use crate::config;
use crate::event::{Event, FieldValue};
use crate::model::{self, EventFilter, Failure, Run};
use crate::report::RunReport;
use crate::scan;

pub use super::SCHEMA_VERSION;

/// The documents `rankscope schema NAME` prints, in the order of docs/json.md.
pub const SCHEMA_NAMES: [&str; 5] = ["summary", "events", "diff", "event", "phase"];

/// The JSON Schema of one document: `summary`, `events`, `diff`, `event` (one NDJSON
/// line of `events --ndjson`), `phase` (one line of `summary --ndjson`), `mem`, `mem-diff`.
pub fn schema(name: &str) -> Option<schemars::schema::RootSchema> {
    let gen = || {
        schemars::gen::SchemaSettings::draft07()
            .with_visitor(AlwaysPresent)
            .into_generator()
    };
    Some(match name {
        "summary" => gen().into_root_schema_for::<SummaryDoc>(),
        "events" => gen().into_root_schema_for::<EventsDoc>(),
        "diff" => gen().into_root_schema_for::<DiffDoc>(),
        "event" => gen().into_root_schema_for::<MessageDoc>(),
        "phase" => gen().into_root_schema_for::<PhaseRecordDoc>(),
        "mem" => gen().into_root_schema_for::<super::mem_json::MemDoc>(),
        "mem-diff" => gen().into_root_schema_for::<super::mem_json::MemDiffDoc>(),
        _ => return None,
    })
}

/// Every field of every output type is written, as `null` when unknown, so the schema
/// marks them all required: a consumer can tell "unknown" (null) from "this version has
/// no such field" (absent). schemars would leave `Option` fields optional.
#[derive(Clone, Debug)]
struct AlwaysPresent;

impl schemars::visit::Visitor for AlwaysPresent {
    fn visit_schema_object(&mut self, schema: &mut schemars::schema::SchemaObject) {
        if let Some(obj) = schema.object.as_mut() {
            let names: Vec<String> = obj.properties.keys().cloned().collect();
            obj.required.extend(names);
        }
        schemars::visit::visit_schema_object(self, schema);
    }
}

/// Times are ISO 8601 without a zone: the logs print local time and no offset.
fn ts(t: NaiveDateTime) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.f").to_string()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    Launch,
    DistInit,
    WeightLoad,
    KvCache,
    CudaGraph,
    Ready,
}

impl From<model::Phase> for PhaseName {
    fn from(p: model::Phase) -> Self {
        use model::Phase as P;
        match p {
            P::Launch => PhaseName::Launch,
            P::DistInit => PhaseName::DistInit,
            P::WeightLoad => PhaseName::WeightLoad,
            P::KvCache => PhaseName::KvCache,
            P::CudaGraph => PhaseName::CudaGraph,
            P::Ready => PhaseName::Ready,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureKindName {
    Oom,
    NotEnoughMemory,
    Nccl,
    Exception,
    /// A timeout or watchdog fired (or, for a stall read from silence, none did).
    Timeout,
    /// A signal or the launcher's shutdown ended the process.
    Signal,
}

/// What a rank's start-up came to (docs/json.md, "Outcomes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeName {
    Ready,
    /// Its own failure.
    Failed,
    /// Failed because another rank failed (`consequence_of` names it).
    Consequence,
    /// Killed or shut down by the launcher after a failure.
    Terminated,
    /// A timeout or watchdog fired, or it printed nothing for minutes while others went on.
    Stalled,
    /// The log ends; nothing says why. Never called a hang.
    Incomplete,
}

impl From<model::Outcome> for OutcomeName {
    fn from(o: model::Outcome) -> Self {
        use model::Outcome as O;
        match o {
            O::Ready => OutcomeName::Ready,
            O::Failed => OutcomeName::Failed,
            O::Consequence => OutcomeName::Consequence,
            O::Terminated => OutcomeName::Terminated,
            O::Stalled => OutcomeName::Stalled,
            O::Incomplete => OutcomeName::Incomplete,
        }
    }
}

impl From<model::FailureKind> for FailureKindName {
    fn from(k: model::FailureKind) -> Self {
        use model::FailureKind as K;
        match k {
            K::Oom => FailureKindName::Oom,
            K::NotEnoughMemory => FailureKindName::NotEnoughMemory,
            K::Nccl => FailureKindName::Nccl,
            K::Exception => FailureKindName::Exception,
            K::Timeout => FailureKindName::Timeout,
            K::Signal => FailureKindName::Signal,
        }
    }
}

/// Memory read from a log, the one shape of memory in every document: bytes, and one
/// step of the printed figure in bytes (`0.60 GB` is printed to 0.01 GiB = 10,737,418
/// bytes), so that deltas below it are known to be noise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MemoryDoc {
    pub bytes: i64,
    pub resolution_bytes: u64,
}

/// A captured value in canonical units.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum FieldValueDoc {
    /// Memory: `{"bytes": N, "resolution_bytes": R}`.
    Bytes(MemoryDoc),
    Int(i64),
    Float(f64),
    Text(String),
}

impl From<&FieldValue> for FieldValueDoc {
    fn from(v: &FieldValue) -> Self {
        match v {
            FieldValue::Bytes { bytes, resolution } => FieldValueDoc::Bytes(MemoryDoc {
                bytes: *bytes,
                resolution_bytes: *resolution,
            }),
            FieldValue::Int(i) => FieldValueDoc::Int(*i),
            FieldValue::Float(f) => FieldValueDoc::Float(*f),
            FieldValue::Text(t) => FieldValueDoc::Text(t.clone()),
        }
    }
}

fn fields_doc(fields: &BTreeMap<String, FieldValue>) -> BTreeMap<String, FieldValueDoc> {
    fields.iter().map(|(k, v)| (k.clone(), v.into())).collect()
}

/// How the lines of the input were understood; `unknown` lines matched no grammar.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LineCountsDoc {
    pub lines: u64,
    pub events: u64,
    pub records: u64,
    pub continuation: u64,
    pub noise: u64,
    pub blank: u64,
    pub unknown: u64,
    /// Physical lines longer than a scan block, split to keep memory bounded.
    pub split_long_lines: u64,
}

impl From<&scan::LineCounts> for LineCountsDoc {
    fn from(c: &scan::LineCounts) -> Self {
        LineCountsDoc {
            lines: c.lines,
            events: c.events,
            records: c.records,
            continuation: c.continuation,
            noise: c.noise,
            blank: c.blank,
            unknown: c.unknown,
            split_long_lines: c.split_long_lines,
        }
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct EventDoc {
    /// A canonical kind (docs/json.md) or one a grammar added.
    pub kind: String,
    pub ts: Option<String>,
    /// The log printed no year (vLLM) and it was inferred.
    pub year_inferred: bool,
    /// Display name of the rank (`TP3`, `PP1 TP2`); null for the launcher.
    pub rank: Option<String>,
    pub pid: Option<u32>,
    pub source: String,
    /// 1-based physical line number in `source`.
    pub line: u64,
    pub grammar: String,
    /// Memory in bytes, time in seconds, counts as integers.
    pub fields: BTreeMap<String, FieldValueDoc>,
    pub message: String,
    /// Continuation lines (a traceback) that belong to the record.
    pub detail: Option<String>,
}

pub fn event_doc(run: &Run, e: &Event) -> EventDoc {
    EventDoc {
        kind: e.kind.clone(),
        ts: e.ts.map(ts),
        year_inferred: e.year_inferred,
        rank: e.rank.as_ref().map(|r| r.to_string()),
        pid: e.pid,
        source: run.source_name(&e.origin).to_string(),
        line: e.origin.line,
        grammar: e.grammar.clone(),
        fields: fields_doc(&e.fields),
        message: e.message.clone(),
        detail: e.detail.clone(),
    }
}

/// A phase's figure with the line it was read from. A memory figure is the memory shape
/// (`bytes`, `resolution_bytes`) and `value` null; any other (`elapsed` in seconds,
/// `tokens` a count) is `value`, with `bytes` and `resolution_bytes` null.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FigureDoc {
    pub bytes: Option<i64>,
    pub resolution_bytes: Option<u64>,
    pub value: Option<f64>,
    pub source: String,
    pub line: u64,
}

fn figure_doc(run: &Run, f: &model::Figure) -> Option<FigureDoc> {
    let bytes = f.value.as_bytes();
    Some(FigureDoc {
        bytes,
        resolution_bytes: bytes.map(|_| f.value.resolution()),
        value: match bytes {
            Some(_) => None,
            None => Some(f.value.as_f64()?),
        },
        source: run.source_name(&f.origin).to_string(),
        line: f.origin.line,
    })
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PhaseDoc {
    pub phase: PhaseName,
    pub start: Option<String>,
    pub end: Option<String>,
    /// Between `start` and `end`; null when either is unknown (with no begin line the
    /// server's own figure, if it printed one, is `figures.elapsed`).
    pub duration_s: Option<f64>,
    /// The phase's closing line was seen.
    pub complete: bool,
    pub figures: BTreeMap<String, FigureDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FailureDoc {
    /// The outcome this line gives its rank.
    pub outcome: OutcomeName,
    pub phase: PhaseName,
    /// Where the phase was read: `frames` (the traceback), `wording` (the failing call's
    /// message) or `last_event` (the last phase line before it).
    pub phase_from: String,
    pub kind: FailureKindName,
    pub message: String,
    /// Parsed figures, e.g. `requested_bytes`, `free_bytes`, `allowed_bytes` for an OOM.
    pub fields: BTreeMap<String, FieldValueDoc>,
    pub ts: Option<String>,
    pub source: Option<String>,
    pub line: Option<u64>,
    /// For a consequence or a termination: the rank whose failure it followed.
    pub consequence_of: Option<String>,
    pub traceback: Option<String>,
}

pub fn failure_doc(run: &Run, f: &Failure) -> FailureDoc {
    FailureDoc {
        outcome: f.outcome.into(),
        phase: f.phase.into(),
        phase_from: f.phase_from.to_string(),
        kind: f.kind.into(),
        message: f.message.clone(),
        fields: fields_doc(&f.fields),
        ts: f.ts.map(ts),
        source: f.origin.as_ref().map(|o| run.source_name(o).to_string()),
        line: f.origin.as_ref().map(|o| o.line),
        consequence_of: f.consequence_of.as_ref().map(|r| r.to_string()),
        traceback: f.traceback.clone(),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RankDoc {
    pub rank: String,
    /// An engine or API process (vLLM's engine core), not a numbered rank: it is not
    /// counted among the ranks.
    pub process: bool,
    pub outcome: OutcomeName,
    /// Where the rank stopped: `ready`, or the phase of its failure, or where its log ends.
    pub last_phase: PhaseName,
    pub reached_ready: bool,
    /// The evidence for every outcome but `ready` and `incomplete`.
    pub failure: Option<FailureDoc>,
    /// The rank's last line (`file:line`): where an incomplete log ends.
    pub last_line: Option<String>,
    pub phases: Vec<PhaseDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct UnknownLineDoc {
    pub line: u64,
    pub text: String,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SourceDoc {
    pub path: String,
    pub bytes: u64,
    pub lines: LineCountsDoc,
    /// Events dropped because another file of the run holds the same lines.
    pub duplicate_events: u64,
    /// The last line had no newline (the file was cut): its text, shortened.
    pub cut_last_line: Option<String>,
    /// A few of the lines no grammar understood.
    pub unknown_samples: Vec<UnknownLineDoc>,
}

fn source_doc(s: &model::SourceInfo) -> SourceDoc {
    SourceDoc {
        path: s.path.clone(),
        bytes: s.bytes,
        lines: (&s.counts).into(),
        duplicate_events: s.duplicate_events,
        cut_last_line: s.cut_last_line.clone(),
        unknown_samples: s
            .unknown_samples
            .iter()
            .map(|u| UnknownLineDoc {
                line: u.line,
                text: u.text.clone(),
            })
            .collect(),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SpreadDoc {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl From<&align::Spread> for SpreadDoc {
    fn from(s: &align::Spread) -> Self {
        SpreadDoc {
            min: s.min,
            median: s.median,
            max: s.max,
        }
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FigureStatsDoc {
    pub name: String,
    pub ranks: usize,
    /// In the figure's unit: bytes for memory.
    pub spread: SpreadDoc,
    /// One step of the printed figure in bytes, for memory; null otherwise.
    pub resolution_bytes: Option<u64>,
    /// One step of the printed figure in its unit, for figures other than memory; null
    /// for memory.
    pub resolution: Option<f64>,
    pub is_bytes: bool,
    /// Ranks off the median by more than one print step.
    pub outliers: Vec<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PhaseStatsDoc {
    pub phase: PhaseName,
    /// Ranks that reported the phase.
    pub ranks: usize,
    /// Of those, ranks that finished it.
    pub completed: usize,
    /// Seconds between the first and the last rank finishing.
    pub end_skew_s: Option<f64>,
    /// From the begin and end stamps, over the ranks that have both.
    pub duration_s: Option<SpreadDoc>,
    /// The durations the server printed on the end line, for the ranks with no begin line.
    pub printed_duration_s: Option<SpreadDoc>,
    /// Ranks with an end line but neither a begin line nor a printed duration.
    pub unknown_start: usize,
    pub figures: Vec<FigureStatsDoc>,
    /// Ranks that finished the phase after the other ranks' median by more than the
    /// stamps' step and the nodes' clock uncertainty.
    pub stragglers: Vec<String>,
    /// How each straggler was late, in the order of `stragglers`.
    pub straggler_detail: Vec<StragglerDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StragglerDoc {
    pub rank: String,
    /// Seconds after the other ranks' median end of the phase.
    pub late_s: f64,
    /// Of which, seconds it began the phase late: the time went before its first line.
    pub before_first_line_s: f64,
    /// Of which, seconds it ran longer inside the phase.
    pub inside_s: f64,
    /// What `late_s` exceeded: one stamp step plus the nodes' clock uncertainty.
    pub uncertainty_s: f64,
}

/// One host of a run read from several nodes' files.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct NodeDoc {
    pub name: String,
    /// The node the others' clocks are aligned to.
    pub reference: bool,
    /// The paths of its log files.
    pub sources: Vec<String>,
    pub ranks: Vec<String>,
    /// `node_rank` and `nnodes` from its server arguments, when printed.
    pub node_rank: Option<u32>,
    pub nnodes: Option<u32>,
    /// The hosts its NCCL lines name (`host:pid:tid` prefixes); empty when none.
    pub hosts: Vec<String>,
    /// Its clock minus the reference node's; absent for the reference and for a node
    /// with no barrier exit in common with it.
    pub clock_offset: Option<ClockOffsetDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ClockOffsetDoc {
    /// The estimate, the middle of the interval, in seconds.
    pub offset_s: f64,
    /// The offset lies in the open interval (`min_s`, `max_s`).
    pub min_s: f64,
    pub max_s: f64,
    /// The most the estimate can be off by: half the interval.
    pub uncertainty_s: f64,
    /// Barrier exits intersected, and those left out because they disagreed.
    pub barrier_events: usize,
    pub rejected_events: usize,
    /// The node's stamps were moved by `-offset_s` (false under `--no-clock-align`).
    pub applied: bool,
}

fn node_doc(run: &Run, n: &crate::node::Node) -> NodeDoc {
    NodeDoc {
        name: n.name.clone(),
        reference: n.reference,
        sources: n
            .sources
            .iter()
            .filter_map(|&i| run.sources.get(i).map(|s| s.path.clone()))
            .collect(),
        ranks: n.ranks.iter().map(|r| r.to_string()).collect(),
        node_rank: n.node_rank,
        nnodes: n.nnodes,
        hosts: n.hosts.clone(),
        clock_offset: n.offset.as_ref().map(|o| ClockOffsetDoc {
            offset_s: o.mid_ms() as f64 / 1000.0,
            min_s: o.lo_ms as f64 / 1000.0,
            max_s: o.hi_ms as f64 / 1000.0,
            uncertainty_s: o.half_width_ms() as f64 / 1000.0,
            barrier_events: o.barrier_events,
            rejected_events: o.rejected_events,
            applied: o.applied,
        }),
    }
}

fn phase_stats_doc(p: &align::PhaseStats) -> PhaseStatsDoc {
    PhaseStatsDoc {
        phase: p.phase.into(),
        ranks: p.ranks,
        completed: p.completed,
        end_skew_s: p.end_skew_s,
        duration_s: p.duration_s.as_ref().map(Into::into),
        printed_duration_s: p.printed_duration_s.as_ref().map(Into::into),
        unknown_start: p.unknown_start,
        figures: p
            .figures
            .iter()
            .map(|f| FigureStatsDoc {
                name: f.name.to_string(),
                ranks: f.ranks,
                spread: (&f.spread).into(),
                resolution_bytes: f.is_bytes.then_some(f.resolution.round() as u64),
                resolution: (!f.is_bytes).then_some(f.resolution),
                is_bytes: f.is_bytes,
                outliers: f.outliers.iter().map(|r| r.to_string()).collect(),
            })
            .collect(),
        stragglers: p.stragglers.iter().map(|r| r.to_string()).collect(),
        straggler_detail: p
            .straggler_detail
            .iter()
            .map(|s| StragglerDoc {
                rank: s.rank.to_string(),
                late_s: s.late_s,
                before_first_line_s: s.before_first_line_s,
                inside_s: s.inside_s,
                uncertainty_s: s.uncertainty_s,
            })
            .collect(),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RunDoc {
    pub name: String,
    /// Some rank printed the server's ready line.
    pub ready: bool,
    pub start: Option<String>,
    pub grammars: Vec<String>,
    pub year_inferred: bool,
    pub lines: LineCountsDoc,
    pub sources: Vec<SourceDoc>,
    pub ranks: Vec<RankDoc>,
    pub phases: Vec<PhaseStatsDoc>,
    /// Failures printed by the launcher, outside any rank.
    pub launcher_failures: Vec<FailureDoc>,
    /// The rank whose own failure came first (or, with none, whose stall did).
    pub root: Option<String>,
    /// Numbered ranks per outcome (engine and API processes are not counted).
    pub outcomes: BTreeMap<String, usize>,
    /// The start-up attempt shown (1-based), of `attempts.len()` (at least 1).
    pub attempt: usize,
    /// Every start-up the log holds, when it holds more than one.
    pub attempts: Vec<AttemptDoc>,
    pub notes: Vec<String>,
    /// GPU memory sampled by nvidia-smi (CSV files in the run directory).
    pub gpus: Vec<GpuMemoryDoc>,
    /// Per-process GPU memory from `nvidia-smi --query-compute-apps` samples.
    pub gpu_processes: Vec<GpuProcessDoc>,
    /// The hosts, for a run read from several nodes' files (empty otherwise). Times in
    /// this document are on the reference node's clock unless `--no-clock-align`.
    pub nodes: Vec<NodeDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AttemptDoc {
    pub index: usize,
    pub start: Option<String>,
    pub end: Option<String>,
    pub events: usize,
    pub outcome: OutcomeName,
    pub root: Option<String>,
    pub root_kind: Option<FailureKindName>,
    pub root_phase: Option<PhaseName>,
}

fn attempt_doc(a: &model::AttemptInfo) -> AttemptDoc {
    AttemptDoc {
        index: a.index,
        start: a.start.map(ts),
        end: a.end.map(ts),
        events: a.events,
        outcome: a.outcome.into(),
        root: a.root.as_ref().map(|r| r.to_string()),
        root_kind: a.root_kind.map(Into::into),
        root_phase: a.root_phase.map(Into::into),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct GpuProcessDoc {
    pub source: String,
    pub pid: u32,
    pub process_name: Option<String>,
    pub gpu: Option<u32>,
    /// The rank whose log lines carry the same pid, when they do.
    pub rank: Option<String>,
    pub samples: usize,
    pub peak_used_bytes: u64,
    pub peak_at_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct GpuMemoryDoc {
    pub source: String,
    pub gpu: u32,
    pub samples: usize,
    pub total_bytes: Option<u64>,
    pub peak_used_bytes: u64,
    /// Seconds since the run's first line (nvidia-smi and the logs share the wall clock).
    pub peak_at_s: Option<f64>,
    /// At most 256 points, each the largest sample of its interval.
    pub series: Vec<GpuPointDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct GpuPointDoc {
    /// Seconds since the run's first line.
    pub t_s: f64,
    pub used_bytes: u64,
}

fn phase_doc(run: &Run, p: &model::PhaseSpan) -> PhaseDoc {
    PhaseDoc {
        phase: p.phase.into(),
        start: p.start.map(ts),
        end: p.end.map(ts),
        duration_s: p.duration_s(),
        complete: p.complete,
        figures: p
            .figures
            .iter()
            .filter_map(|f| Some((f.name.to_string(), figure_doc(run, f)?)))
            .collect(),
    }
}

pub fn rank_doc(run: &Run, r: &model::RankRun) -> RankDoc {
    RankDoc {
        rank: r.rank.to_string(),
        process: r.is_process(),
        outcome: r.outcome.into(),
        last_phase: r.last_phase.into(),
        reached_ready: r.reached_ready,
        failure: r.failure.as_ref().map(|f| failure_doc(run, f)),
        last_line: r
            .last_origin
            .as_ref()
            .map(|o| format!("{}:{}", run.source_name(o), o.line)),
        phases: r.phases.iter().map(|p| phase_doc(run, p)).collect(),
    }
}

pub fn run_doc(run: &Run, report: &RunReport) -> RunDoc {
    RunDoc {
        name: run.name.clone(),
        ready: run.ready,
        start: run.start.map(ts),
        grammars: run.grammars.clone(),
        year_inferred: run.year_inferred,
        lines: (&run.counts()).into(),
        gpus: run
            .gpus
            .iter()
            .map(|g| GpuMemoryDoc {
                source: g.source.clone(),
                gpu: g.gpu,
                samples: g.samples,
                total_bytes: g.total_bytes,
                peak_used_bytes: g.peak_used_bytes,
                peak_at_s: g.peak_at_s,
                series: g
                    .series
                    .iter()
                    .map(|&(t_s, used_bytes)| GpuPointDoc { t_s, used_bytes })
                    .collect(),
            })
            .collect(),
        gpu_processes: run
            .gpu_processes
            .iter()
            .map(|p| GpuProcessDoc {
                source: p.source.clone(),
                pid: p.pid,
                process_name: p.process_name.clone(),
                gpu: p.gpu,
                rank: p.rank.as_ref().map(|r| r.to_string()),
                samples: p.samples,
                peak_used_bytes: p.peak_used_bytes,
                peak_at_s: p.peak_at_s,
            })
            .collect(),
        sources: run.sources.iter().map(source_doc).collect(),
        nodes: run.nodes.iter().map(|n| node_doc(run, n)).collect(),
        ranks: run.ranks.iter().map(|r| rank_doc(run, r)).collect(),
        phases: report.phases.iter().map(phase_stats_doc).collect(),
        launcher_failures: run
            .launcher_failures
            .iter()
            .map(|f| failure_doc(run, f))
            .collect(),
        root: run.root.as_ref().map(|r| r.to_string()),
        outcomes: model::Outcome::ALL
            .into_iter()
            .map(|o| (o.name().to_string(), run.count(o)))
            .filter(|(_, n)| *n > 0)
            .collect(),
        attempt: run.attempt,
        attempts: run.attempts.iter().map(attempt_doc).collect(),
        notes: run.notes.clone(),
    }
}

/// `rankscope summary --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SummaryDoc {
    pub schema_version: u32,
    /// Always `summary`.
    pub command: String,
    pub run: RunDoc,
}

pub fn summary_doc(run: &Run, report: &RunReport) -> SummaryDoc {
    SummaryDoc {
        schema_version: SCHEMA_VERSION,
        command: "summary".into(),
        run: run_doc(run, report),
    }
}

/// `rankscope events --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct EventsDoc {
    pub schema_version: u32,
    /// Always `events`.
    pub command: String,
    pub run: String,
    pub lines: LineCountsDoc,
    pub events: Vec<EventDoc>,
}

pub fn events_doc(run: &Run, filter: &EventFilter) -> EventsDoc {
    EventsDoc {
        schema_version: SCHEMA_VERSION,
        command: "events".into(),
        run: run.name.clone(),
        lines: (&run.counts()).into(),
        events: run
            .events
            .iter()
            .filter(|e| filter.keeps(e))
            .map(|e| event_doc(run, e))
            .collect(),
    }
}

/// `events --ndjson`, in its documented order: the run, the events kept, each kept rank,
/// each kept rank's failure, the launcher's failures (when no rank is asked for), and the
/// summary with the number of events written.
pub fn event_messages<'a>(
    run: &'a Run,
    filter: &'a EventFilter,
) -> impl Iterator<Item = Message> + 'a {
    let kept = run.events.iter().filter(|e| filter.keeps(e));
    let written = kept.clone().count() as u64;
    let ranks = move || {
        run.ranks
            .iter()
            .filter(|r| filter.keeps_rank(Some(&r.rank)))
    };
    let launcher: &[Failure] = if filter.rank.is_none() {
        &run.launcher_failures
    } else {
        &[]
    };
    std::iter::once(run_message(run))
        .chain(kept.map(|e| Message::Event(event_doc(run, e))))
        .chain(ranks().map(|r| rank_message(run, r)))
        .chain(ranks().filter_map(|r| {
            r.failure
                .as_ref()
                .map(|f| failure_message(run, Some(&r.rank), f))
        }))
        .chain(launcher.iter().map(|f| failure_message(run, None, f)))
        .chain(std::iter::once_with(move || summary_message(run, written)))
}

/// One NDJSON message with a caller-chosen payload: a `type`/`data` envelope, as
/// ripgrep's JSON printer does. `MessageDoc` is the documented set of `events --ndjson`.
#[derive(Serialize)]
pub struct Envelope<'a, T: Serialize> {
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub schema_version: u32,
    pub run: RunIdDoc,
    pub data: T,
}

/// Which run an NDJSON line belongs to, on every line, so that the lines of many runs
/// can be loaded into one table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RunIdDoc {
    /// The run's path(s) as given on the command line (` + ` between several).
    pub name: String,
    /// XXH3-64 of the run's log and nvidia-smi files' contents, 16 hex digits: over the
    /// sorted per-file XXH3-64 digests, so independent of file names and paths (docs/json.md).
    /// Null when an input cannot be read twice (stdin, a FIFO).
    pub hash: Option<String>,
}

impl From<&crate::export::identity::RunIdentity> for RunIdDoc {
    fn from(id: &crate::export::identity::RunIdentity) -> Self {
        RunIdDoc {
            name: id.name.clone(),
            hash: id.hash.clone(),
        }
    }
}

/// One line of `rankscope events --ndjson`. The order on the stream is: one `run`, the
/// `event`s in time order, one `rank` per rank, one `failure` per failure, and `summary`
/// last.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MessageDoc {
    #[serde(flatten)]
    pub message: Message,
    pub schema_version: u32,
    pub run: RunIdDoc,
}

impl MessageDoc {
    pub fn new(message: Message, run: RunIdDoc) -> MessageDoc {
        MessageDoc {
            message,
            schema_version: SCHEMA_VERSION,
            run,
        }
    }
}

/// One line of `rankscope summary --ndjson`: one rank's one phase, in rank order then
/// start-up order.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PhaseRecordDoc {
    /// Always `phase`.
    #[serde(rename = "type")]
    pub kind: String,
    pub schema_version: u32,
    pub run: RunIdDoc,
    pub data: PhaseRecord,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PhaseRecord {
    pub rank: String,
    /// An engine or API process, not counted among the ranks.
    pub process: bool,
    /// The node the rank ran on, in a run read from several nodes.
    pub node: Option<String>,
    pub phase: PhaseName,
    pub start: Option<String>,
    pub end: Option<String>,
    /// `end - start`, only where both are known; null otherwise.
    pub duration_s: Option<f64>,
    /// What the server printed on the end line (`elapsed`), for a phase with no begin
    /// line; null when there was a begin line or no such figure.
    pub printed_duration_s: Option<f64>,
    /// The phase's closing line was seen.
    pub complete: bool,
    /// The rank's outcome (the same on each of its phases).
    pub outcome: OutcomeName,
    /// The rank failed in this phase (its own failure, a consequence, a stall or a
    /// termination).
    pub failed_here: bool,
    /// The failure's kind when `failed_here`.
    pub failure_kind: Option<FailureKindName>,
    /// As in `summary --json`: memory as `{bytes, resolution_bytes}`, other figures as `value`.
    pub figures: BTreeMap<String, FigureDoc>,
}

/// The records of `summary --ndjson`, one per rank × phase the rank reported.
pub fn phase_records(run: &Run, id: &RunIdDoc) -> Vec<PhaseRecordDoc> {
    let mut out = Vec::new();
    for r in &run.ranks {
        let node = run
            .nodes
            .iter()
            .find(|n| n.ranks.iter().any(|x| x == &r.rank))
            .map(|n| n.name.clone());
        for p in &r.phases {
            let duration_s = p.duration_s();
            let printed = if p.start.is_none() {
                p.printed_elapsed_s()
            } else {
                None
            };
            let failed_here = r.failure.as_ref().is_some_and(|f| f.phase == p.phase);
            out.push(PhaseRecordDoc {
                kind: "phase".into(),
                schema_version: SCHEMA_VERSION,
                run: id.clone(),
                data: PhaseRecord {
                    rank: r.rank.to_string(),
                    process: r.is_process(),
                    node: node.clone(),
                    phase: p.phase.into(),
                    start: p.start.map(ts),
                    end: p.end.map(ts),
                    duration_s,
                    printed_duration_s: printed,
                    complete: p.complete,
                    outcome: r.outcome.into(),
                    failed_here,
                    failure_kind: r
                        .failure
                        .as_ref()
                        .filter(|_| failed_here)
                        .map(|f| f.kind.into()),
                    figures: p
                        .figures
                        .iter()
                        .filter_map(|f| Some((f.name.to_string(), figure_doc(run, f)?)))
                        .collect(),
                },
            });
        }
    }
    out
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Message {
    Run(RunMessage),
    Event(EventDoc),
    Rank(RankMessage),
    Failure(FailureMessage),
    Summary(SummaryMessage),
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RunMessage {
    pub name: String,
    pub grammars: Vec<String>,
    pub sources: Vec<SourceDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RankMessage {
    pub rank: String,
    pub process: bool,
    pub outcome: OutcomeName,
    pub last_phase: PhaseName,
    pub reached_ready: bool,
    pub failure: Option<FailureDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FailureMessage {
    /// Null for a failure the launcher printed outside any rank.
    pub rank: Option<String>,
    #[serde(flatten)]
    pub failure: FailureDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SummaryMessage {
    /// `event` messages written (after `--kind`/`--rank` filters).
    pub events: u64,
    pub ranks: usize,
    pub failed_ranks: usize,
    pub root: Option<String>,
    pub ready: bool,
    pub lines: LineCountsDoc,
}

pub fn run_message(run: &Run) -> Message {
    Message::Run(RunMessage {
        name: run.name.clone(),
        grammars: run.grammars.clone(),
        sources: run.sources.iter().map(source_doc).collect(),
    })
}

pub fn rank_message(run: &Run, r: &model::RankRun) -> Message {
    Message::Rank(RankMessage {
        rank: r.rank.to_string(),
        process: r.is_process(),
        outcome: r.outcome.into(),
        last_phase: r.last_phase.into(),
        reached_ready: r.reached_ready,
        failure: r.failure.as_ref().map(|f| failure_doc(run, f)),
    })
}

pub fn failure_message(run: &Run, rank: Option<&crate::event::Rank>, f: &Failure) -> Message {
    Message::Failure(FailureMessage {
        rank: rank.map(|r| r.to_string()),
        failure: failure_doc(run, f),
    })
}

pub fn summary_message(run: &Run, events: u64) -> Message {
    Message::Summary(SummaryMessage {
        events,
        ranks: run.worker_ranks().count(),
        failed_ranks: run.failed_ranks(),
        root: run.root.as_ref().map(|r| r.to_string()),
        ready: run.ready,
        lines: (&run.counts()).into(),
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusName {
    /// Nothing beyond noise (exit 0).
    Same,
    /// The candidate fails (exit 1).
    Failed,
    /// No failure, but less capacity or more memory used (exit 1).
    Regressed,
    /// Only changes for the better (exit 0).
    Improved,
    /// The candidate's log ends before ready with no failure seen (exit 3).
    Incomplete,
}

impl From<diff::Status> for StatusName {
    fn from(s: diff::Status) -> Self {
        match s {
            diff::Status::Same => StatusName::Same,
            diff::Status::Failed => StatusName::Failed,
            diff::Status::Regressed => StatusName::Regressed,
            diff::Status::Improved => StatusName::Improved,
            diff::Status::Incomplete => StatusName::Incomplete,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeltaClassName {
    /// No rank moved.
    Same,
    /// Within the printed resolution, and not all ranks the same way.
    Noise,
    /// Most ranks (or all) moved the same way.
    Systematic,
    /// Some ranks only.
    Local,
}

impl From<diff::DeltaClass> for DeltaClassName {
    fn from(c: diff::DeltaClass) -> Self {
        match c {
            diff::DeltaClass::Same => DeltaClassName::Same,
            diff::DeltaClass::Noise => DeltaClassName::Noise,
            diff::DeltaClass::Systematic => DeltaClassName::Systematic,
            diff::DeltaClass::Local => DeltaClassName::Local,
        }
    }
}

/// A configuration key whose value changed. Values are the Python values as JSON
/// (`None` is null, tuples and sets are arrays, calls are `{call, args, kwargs}`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ChangeDoc {
    pub key: String,
    pub old: serde_json::Value,
    pub new: serde_json::Value,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct KeyValueDoc {
    pub key: String,
    pub value: serde_json::Value,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ConfigDiffDoc {
    pub changed: Vec<ChangeDoc>,
    /// Keys only in the candidate.
    pub added: Vec<KeyValueDoc>,
    /// Keys only in the baseline.
    pub removed: Vec<KeyValueDoc>,
}

fn py(v: &crate::pyrepr::PyValue) -> serde_json::Value {
    // PyValue's Serialize never fails (non-finite floats become strings), so Null is
    // only a safety net.
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

fn config_doc(c: &config::ConfigDiff) -> ConfigDiffDoc {
    let kv = |(k, v): &(String, crate::pyrepr::PyValue)| KeyValueDoc {
        key: k.clone(),
        value: py(v),
    };
    ConfigDiffDoc {
        changed: c
            .changed
            .iter()
            .map(|ch| ChangeDoc {
                key: ch.key.clone(),
                old: py(&ch.old),
                new: py(&ch.new),
            })
            .collect(),
        added: c.added.iter().map(kv).collect(),
        removed: c.removed.iter().map(kv).collect(),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ComparabilityDoc {
    pub common_ranks: usize,
    pub only_in_baseline: Vec<String>,
    pub only_in_candidate: Vec<String>,
    /// Per-rank memory is compared only when the rank sets match.
    pub memory_compared: bool,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RankDeltaDoc {
    pub rank: String,
    pub baseline: f64,
    pub candidate: f64,
    pub delta: f64,
    /// Beyond one print step.
    pub beyond_noise: bool,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FigureDiffDoc {
    pub phase: PhaseName,
    pub figure: String,
    pub is_bytes: bool,
    /// One print step in bytes, for memory (null otherwise); deltas within it are noise.
    pub resolution_bytes: Option<u64>,
    /// One print step in the figure's unit, for figures other than memory; null for memory.
    pub resolution: Option<f64>,
    pub class: DeltaClassName,
    pub ranks_compared: usize,
    /// Ranks that moved beyond noise in the dominant direction.
    pub ranks_moved: usize,
    pub baseline_median: f64,
    pub candidate_median: f64,
    pub delta: SpreadDoc,
    /// The candidate is worse on this figure (more used, less free, fewer tokens).
    pub worse: bool,
    pub per_rank: Vec<RankDeltaDoc>,
    /// `file:line: message` of the first compared rank, baseline and candidate.
    pub baseline_text: Option<String>,
    pub candidate_text: Option<String>,
}

fn figure_diff_doc(f: &diff::FigureDiff) -> FigureDiffDoc {
    FigureDiffDoc {
        phase: f.phase.into(),
        figure: f.figure.to_string(),
        is_bytes: f.is_bytes,
        resolution_bytes: f.is_bytes.then_some(f.resolution.round() as u64),
        resolution: (!f.is_bytes).then_some(f.resolution),
        class: f.class.into(),
        ranks_compared: f.ranks_compared,
        ranks_moved: f.ranks_moved,
        baseline_median: f.baseline_median,
        candidate_median: f.candidate_median,
        delta: (&f.delta).into(),
        worse: f.worse,
        per_rank: f
            .per_rank
            .iter()
            .map(|d| RankDeltaDoc {
                rank: d.rank.to_string(),
                baseline: d.baseline,
                candidate: d.candidate,
                delta: d.delta,
                beyond_noise: d.beyond_noise,
            })
            .collect(),
        baseline_text: f
            .baseline_line
            .as_ref()
            .map(|l| super::diff_text::figure_line(l.as_ref())),
        candidate_text: f
            .candidate_line
            .as_ref()
            .map(|l| super::diff_text::figure_line(l.as_ref())),
    }
}

/// The first compared figure (in start-up order) that moved beyond noise.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DivergenceDoc {
    pub phase: PhaseName,
    pub figure: String,
    pub class: DeltaClassName,
    pub ranks_moved: usize,
    pub ranks_compared: usize,
    pub delta: SpreadDoc,
    pub is_bytes: bool,
    pub baseline_median: f64,
    pub candidate_median: f64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BaselineCandidate {
    pub baseline: i64,
    pub candidate: i64,
}

/// What the first divergence cost further on (medians over ranks).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct EffectDoc {
    /// Change in KV tokens per rank (negative: lost).
    pub kv_tokens_delta: Option<i64>,
    pub kv_tokens_baseline: Option<i64>,
    /// The same in bytes, from the candidate's bytes per token.
    pub kv_bytes_delta: Option<i64>,
    /// Change of free memory after the KV pool, bytes.
    pub avail_after_pool_delta: Option<i64>,
    pub avail_after_pool: Option<BaselineCandidate>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FailureGroupDoc {
    pub outcome: OutcomeName,
    pub kind: FailureKindName,
    pub phase: PhaseName,
    pub ranks: Vec<String>,
    pub total_ranks: usize,
    pub requested_bytes: Option<i64>,
    pub allowed_bytes: Option<i64>,
    pub free_bytes: Option<i64>,
    pub reserved_unallocated_bytes: Option<i64>,
    pub private_pools_bytes: Option<i64>,
    pub message: String,
    pub consequence_of: Option<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FirstFailureDoc {
    pub rank: String,
    pub kind: FailureKindName,
    pub phase: PhaseName,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RunOutcomeDoc {
    /// Numbered ranks (engine and API processes apart).
    pub ranks: usize,
    pub ready: bool,
    /// Ranks that failed on their own.
    pub failed_ranks: usize,
    /// Ranks per outcome.
    pub outcomes: BTreeMap<String, usize>,
    /// Ranks that ended the same way: own failures first, then what followed them.
    pub groups: Vec<FailureGroupDoc>,
    /// The root: the rank whose own failure came first (by time, then file order), or,
    /// with none, whose stall did. Consequences and logs that merely end never are.
    pub first_failure: Option<FirstFailureDoc>,
    pub launcher_failures: Vec<String>,
    /// Launcher lines that report a failure elsewhere.
    pub launcher_consequences: Vec<String>,
}

fn outcome_doc(o: &diff::RunOutcome) -> RunOutcomeDoc {
    RunOutcomeDoc {
        ranks: o.ranks,
        ready: o.ready,
        failed_ranks: o.failed_ranks,
        outcomes: o
            .counts
            .iter()
            .map(|(k, n)| (k.name().to_string(), *n))
            .collect(),
        groups: o
            .groups
            .iter()
            .map(|g| FailureGroupDoc {
                outcome: g.outcome.into(),
                kind: g.kind.into(),
                phase: g.phase.into(),
                ranks: g.ranks.iter().map(|r| r.to_string()).collect(),
                total_ranks: g.total_ranks,
                requested_bytes: g.requested_bytes,
                allowed_bytes: g.allowed_bytes,
                free_bytes: g.free_bytes,
                reserved_unallocated_bytes: g.reserved_unallocated_bytes,
                private_pools_bytes: g.private_pools_bytes,
                message: g.message.clone(),
                consequence_of: g.consequence_of.as_ref().map(|r| r.to_string()),
            })
            .collect(),
        first_failure: o
            .first_failure
            .as_ref()
            .map(|(rank, kind, phase)| FirstFailureDoc {
                rank: rank.to_string(),
                kind: (*kind).into(),
                phase: (*phase).into(),
            }),
        launcher_failures: o.launcher_failures.clone(),
        launcher_consequences: o.launcher_consequences.clone(),
    }
}

/// `rankscope diff --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DiffDoc {
    pub schema_version: u32,
    /// Always `diff`.
    pub command: String,
    pub baseline: String,
    pub candidate: String,
    pub status: StatusName,
    /// The exit code the command returns: 1 for `failed` and `regressed`, else 0.
    pub exit_code: i32,
    /// The verdict in one line, as the text output's first line.
    pub verdict: String,
    pub config: Option<ConfigDiffDoc>,
    /// Why the configurations could not be compared, when they could not.
    pub config_note: Option<String>,
    /// Environment toggles shown in the logs that differ (`null` side: not shown).
    pub env: Vec<EnvChangeDoc>,
    /// The first divergence attributed to allocation sites from the ranks' PyTorch
    /// snapshots; null when either run has none.
    pub attribution: Option<AttributionDoc>,
    /// What the snapshots say about a failure: each failing rank's OOM request and who
    /// else allocates there, fragmentation, the allocator settings compared. Null when
    /// snapshots were not read.
    pub snapshot_evidence: Option<SnapshotEvidenceDoc>,
    pub comparability: ComparabilityDoc,
    pub first_divergence: Option<DivergenceDoc>,
    pub effect: Option<EffectDoc>,
    pub figures: Vec<FigureDiffDoc>,
    pub baseline_outcome: RunOutcomeDoc,
    pub candidate_outcome: RunOutcomeDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct EnvChangeDoc {
    pub name: String,
    pub baseline: Option<String>,
    pub candidate: Option<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SiteShareDoc {
    /// `init_custom_ar (model_runner.py)`: the first frame outside PyTorch.
    pub site: String,
    /// The same with the source lines it spans.
    pub label: String,
    /// The phase where the site first allocated, on the log's clock.
    pub phase: Option<PhaseName>,
    pub ranks: usize,
    /// Change in reserved bytes at this site, candidate − baseline, median over ranks.
    pub delta_reserved_bytes: i64,
    pub delta_allocated_bytes: i64,
    pub blocks: u64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct NewSegmentsDoc {
    pub site: String,
    pub count: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AttributionDoc {
    pub phase: PhaseName,
    pub ranks_compared: usize,
    pub sites: Vec<SiteShareDoc>,
    /// Allocator-level change of reserved bytes in the phase (sum of its sites).
    pub allocator_delta_reserved_bytes: i64,
    /// Driver-level change from the log's figure.
    pub driver_delta_bytes: Option<i64>,
    /// driver − allocator: memory PyTorch's allocator did not see.
    pub residual_bytes: Option<i64>,
    pub log_resolution_bytes: Option<u64>,
    pub new_segments: Vec<NewSegmentsDoc>,
    /// How the snapshot clock was matched to the log clock.
    pub clock: Vec<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct OomSiteDoc {
    pub rank: String,
    /// The OOM against the allocator's state then, as `mem --json` reports it.
    pub oom: crate::render::mem_json::OomAnalysisDoc,
    /// The other candidate ranks with a snapshot, and those that allocate at the site.
    pub other_ranks: Vec<String>,
    pub others_allocating: Vec<String>,
    /// Null without baseline snapshots.
    pub baseline_allocates: Option<bool>,
    /// No other rank and not the baseline allocate at the site.
    pub only_this_rank: bool,
    /// The cap the rank's OOM message printed, when it did.
    pub allowed_bytes: Option<u64>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AllocatorSettingChangeDoc {
    /// Dotted for nested settings: `roundup_power2_divisions.64`.
    pub key: String,
    /// The value as JSON text; null when that side does not record the key.
    pub baseline: Option<String>,
    pub candidate: Option<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SnapshotEvidenceDoc {
    pub oom_sites: Vec<OomSiteDoc>,
    /// Ranks whose OOM the snapshot shows as fragmentation.
    pub fragmented_ranks: Vec<String>,
    /// Whether both runs had a snapshot to compare allocator settings from.
    pub allocator_settings_compared: bool,
    pub allocator_settings: Vec<AllocatorSettingChangeDoc>,
}

pub fn snapshot_evidence_doc(
    e: &crate::analysis::attribute::SnapshotEvidence,
) -> SnapshotEvidenceDoc {
    let names = |v: &[crate::event::Rank]| v.iter().map(|r| r.to_string()).collect();
    SnapshotEvidenceDoc {
        oom_sites: e
            .oom_sites
            .iter()
            .map(|o| OomSiteDoc {
                rank: o.rank.to_string(),
                oom: (&o.analysis).into(),
                other_ranks: names(&o.other_ranks),
                others_allocating: names(&o.others_allocating),
                baseline_allocates: o.baseline_allocates,
                only_this_rank: o.only_here(),
                allowed_bytes: o.allowed,
            })
            .collect(),
        fragmented_ranks: e.fragmented().map(|o| o.rank.to_string()).collect(),
        allocator_settings_compared: e.allocator_settings_compared,
        allocator_settings: e
            .allocator_settings
            .iter()
            .map(|c| AllocatorSettingChangeDoc {
                key: c.key.clone(),
                baseline: c.baseline.clone(),
                candidate: c.candidate.clone(),
            })
            .collect(),
    }
}

pub fn attribution_doc(a: &crate::analysis::attribute::Attribution) -> AttributionDoc {
    AttributionDoc {
        phase: a.phase.into(),
        ranks_compared: a.ranks_compared,
        sites: a
            .sites
            .iter()
            .map(|s| SiteShareDoc {
                site: s.site.clone(),
                label: s.label.clone(),
                phase: s.phase.map(Into::into),
                ranks: s.ranks,
                delta_reserved_bytes: s.delta_reserved.median.round() as i64,
                delta_allocated_bytes: s.delta_allocated.median.round() as i64,
                blocks: s.blocks,
            })
            .collect(),
        allocator_delta_reserved_bytes: a.allocator_delta_reserved,
        driver_delta_bytes: a.driver_delta,
        residual_bytes: a.residual,
        log_resolution_bytes: a.log_resolution,
        new_segments: a
            .new_segments
            .iter()
            .map(|(site, count, bytes)| NewSegmentsDoc {
                site: site.clone(),
                count: *count,
                bytes: *bytes,
            })
            .collect(),
        clock: super::diff_text::attribution_clock(a).into_iter().collect(),
    }
}

pub fn diff_doc(b: &Run, c: &Run, report: &crate::report::DiffReport) -> DiffDoc {
    let d = &report.diff;
    DiffDoc {
        schema_version: SCHEMA_VERSION,
        command: "diff".into(),
        baseline: b.name.clone(),
        candidate: c.name.clone(),
        status: d.status.into(),
        exit_code: d.status.exit_code(),
        verdict: super::diff_text::headline(&d.headline),
        config: d.config.as_ref().map(config_doc),
        config_note: d.config_note.as_ref().map(super::diff_text::config_note),
        env: d
            .env
            .iter()
            .map(|e| EnvChangeDoc {
                name: e.name.clone(),
                baseline: e.baseline.clone(),
                candidate: e.candidate.clone(),
            })
            .collect(),
        attribution: report.attribution.as_ref().map(attribution_doc),
        snapshot_evidence: Some(snapshot_evidence_doc(&report.evidence)),
        comparability: ComparabilityDoc {
            common_ranks: d.comparability.common_ranks,
            only_in_baseline: d
                .comparability
                .only_in_baseline
                .iter()
                .map(|r| r.to_string())
                .collect(),
            only_in_candidate: d
                .comparability
                .only_in_candidate
                .iter()
                .map(|r| r.to_string())
                .collect(),
            memory_compared: d.comparability.memory_compared,
            notes: d
                .comparability
                .notes
                .iter()
                .map(super::diff_text::comparability_note)
                .collect(),
        },
        first_divergence: d.first_divergence.as_ref().map(|v| DivergenceDoc {
            phase: v.phase.into(),
            figure: v.figure.to_string(),
            class: v.class.into(),
            ranks_moved: v.ranks_moved,
            ranks_compared: v.ranks_compared,
            delta: (&v.delta).into(),
            is_bytes: v.is_bytes,
            baseline_median: v.baseline_median,
            candidate_median: v.candidate_median,
        }),
        effect: d.effect.as_ref().map(|e| EffectDoc {
            kv_tokens_delta: e.kv_tokens_delta,
            kv_tokens_baseline: e.kv_tokens_baseline,
            kv_bytes_delta: e.kv_bytes_delta,
            avail_after_pool_delta: e.avail_after_pool_delta,
            avail_after_pool: e
                .avail_after_pool
                .map(|(baseline, candidate)| BaselineCandidate {
                    baseline,
                    candidate,
                }),
        }),
        figures: d.figures.iter().map(figure_diff_doc).collect(),
        baseline_outcome: outcome_doc(&d.baseline),
        candidate_outcome: outcome_doc(&d.candidate),
    }
}
