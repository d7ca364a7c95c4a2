//! The JSON contract. These types are the output, kept apart from the internal model so
//! that a refactor cannot change what scripts read by accident: every internal value is
//! converted here into a type that exists only to be serialised. Every document carries
//! `schema_version`; a breaking change bumps it (see CHANGELOG.md and docs/json.md).
//!
//! The JSON Schemas in `docs/schema/` are generated from these types (`rankscope schema`)
//! and `tests/schema.rs` fails when they drift.
//!
//! One file per document: `summary` (RunDoc, SummaryDoc), `events` (EventsDoc, the
//! NDJSON messages and phase records), `diff` (DiffDoc with its attribution and snapshot
//! evidence); `schema_gen` the schema entry point; this one the pieces they share.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::align;
use crate::base::event::{Event, FieldValue, Fields};
use crate::ingest::scan;
use crate::model::config;
use crate::model::{self, EventFilter, Failure, Run};
use crate::report::RunReport;

pub(crate) mod capacity;
mod diff;
mod events;
pub mod mem;
mod schema_gen;
mod summary;
mod time;

pub use diff::*;
pub use events::*;
pub(crate) use schema_gen::enum_values;
pub use schema_gen::{schema, KeyOrder};
pub use summary::*;
pub(crate) use time::*;

pub(crate) use super::SCHEMA_VERSION;

/// A time stamp read from a log, the one shape of a time in every document.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub(crate) struct TimeDoc {
    /// RFC 3339 with microseconds, always 26 characters and `-00:00`: the logs print
    /// their servers' wall clock with no offset, and `-00:00` is RFC 3339's "offset
    /// unknown" (section 4.3). Read it as that wall clock, not as UTC.
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}-00:00$"))]
    pub(crate) at: String,
    /// Seconds between two stamps the log could print, from the stamp's digits: 1 for a
    /// whole-second stamp, 0.001 for milliseconds, 0.000001 for microseconds.
    pub(crate) resolution_s: f64,
}

/// The resolution a stamp's digits show: whole seconds, milliseconds or microseconds.
pub(crate) fn stamp_resolution_s(t: NaiveDateTime) -> f64 {
    use chrono::Timelike;
    match t.nanosecond() {
        0 => 1.0,
        ns if ns % 1_000_000 == 0 => 0.001,
        _ => 0.000_001,
    }
}

/// A stamp whose step its line's format gave (`Event::ts_step_ms`, milliseconds): a
/// millisecond stamp that reads `.000` is still 0.001 s, not a whole second. A step finer
/// than the value shows (microseconds) is kept from the value.
pub(crate) fn ts_stepped(t: NaiveDateTime, step_ms: u32) -> TimeDoc {
    let from_value = stamp_resolution_s(t);
    TimeDoc {
        resolution_s: if from_value < 0.001 {
            from_value
        } else {
            f64::from(step_ms) / 1000.0
        },
        ..ts(t)
    }
}

/// Every time of the documents: RFC 3339, microseconds, offset unknown (`-00:00`).
pub(crate) fn ts(t: NaiveDateTime) -> TimeDoc {
    TimeDoc {
        at: t.format("%Y-%m-%dT%H:%M:%S%.6f-00:00").to_string(),
        resolution_s: stamp_resolution_s(t),
    }
}

/// What names a run, in every document (`identity`, and `baseline`/`candidate` of a
/// diff) and on every NDJSON line (`run`).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct IdentityDoc {
    /// The run's name across a fleet: the last component of each path given (` + `
    /// between several), so `samples/x`, `samples/x/` and `/abs/samples/x` are all `x`.
    pub(crate) name: String,
    /// The paths as given on the command line (` + ` between several).
    pub(crate) paths: String,
    /// XXH3-64 of the run's log and nvidia-smi files' contents, 16 hex digits: over the
    /// sorted per-file XXH3-64 digests, so independent of file names and paths
    /// (docs/json.md). Null when an input cannot be read twice (stdin, a FIFO).
    pub(crate) hash: Option<String>,
    /// The server's grammar: `sglang`, `vllm`, `tgi`, `trtllm`, `lmdeploy` (or a user
    /// grammar's id); null when no server grammar read the log.
    pub(crate) server: Option<String>,
    /// The version the server printed (vLLM's `vLLM API server version 0.11.1`); null
    /// when its log prints none.
    pub(crate) version: Option<String>,
    /// The start-up shown (1-based), of `attempts` in the log.
    pub(crate) attempt: usize,
    pub(crate) attempts: usize,
    /// The stamp of the start-up's first stamped line.
    pub(crate) first_line: Option<TimeDoc>,
    /// The stamp of its last ready line; null when it did not reach ready.
    pub(crate) ready_at: Option<TimeDoc>,
    /// `ready_at - first_line`, seconds (the resolution is the stamps').
    pub(crate) to_ready_s: Option<f64>,
}

impl From<&crate::export::identity::RunIdentity> for IdentityDoc {
    fn from(id: &crate::export::identity::RunIdentity) -> Self {
        IdentityDoc {
            name: id.name.clone(),
            paths: id.paths.clone(),
            hash: id.hash.clone(),
            server: id.server.clone(),
            version: id.version.clone(),
            attempt: id.attempt,
            attempts: id.attempts,
            first_line: id.first_line.map(|t| ts_stepped(t, id.first_line_step_ms)),
            ready_at: id.ready_at.map(|t| ts_stepped(t, id.ready_at_step_ms)),
            to_ready_s: id.to_ready_s.map(|(s, _)| s.get()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PhaseName {
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
pub(crate) enum FailureKindName {
    Oom,
    NotEnoughMemory,
    Nccl,
    Exception,
    /// A timeout or watchdog fired (or, for a stall read from silence, none did).
    Timeout,
    /// A signal or the launcher's shutdown ended the process.
    Signal,
    /// Another process reported the rank dead, saying not how; the rank's own log says
    /// nothing of its end (`reported_by` names the reporter).
    Died,
}

/// What a rank's start-up came to (docs/json.md, "Outcomes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OutcomeName {
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
            K::Died => FailureKindName::Died,
        }
    }
}

/// A memory quantity, the one shape of memory in every document: bytes, and the width
/// of the interval the true value lies in (the true value is within ± half of it).
/// Read from a log, that is one step of the printed figure (`0.60 GB` is printed to
/// 0.01 GiB = 10,737,418 bytes); an exact count (a PyTorch snapshot, a file's size) has
/// 0; nvidia-smi prints whole MiB (1,048,576); a figure computed by adding or
/// subtracting others has the sum of theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct MemoryDoc {
    pub(crate) bytes: i64,
    pub(crate) resolution_bytes: u64,
}

/// nvidia-smi's CSV prints memory in whole MiB.
pub(crate) const NVIDIA_SMI_STEP: u64 = 1 << 20;

impl MemoryDoc {
    /// An exact count (snapshots, file sizes): resolution 0.
    pub(crate) fn exact<T: TryInto<i64>>(bytes: T) -> MemoryDoc {
        MemoryDoc {
            bytes: bytes.try_into().unwrap_or(i64::MAX),
            resolution_bytes: 0,
        }
    }
    /// A figure with its step (the width of its interval), in bytes.
    pub(crate) fn with_step<T: TryInto<i64>, S: TryInto<u64>>(bytes: T, step: S) -> MemoryDoc {
        MemoryDoc {
            bytes: bytes.try_into().unwrap_or(i64::MAX),
            resolution_bytes: step.try_into().unwrap_or(0),
        }
    }
    /// nvidia-smi's figure, printed in whole MiB.
    pub(crate) fn smi<T: TryInto<i64>>(bytes: T) -> MemoryDoc {
        MemoryDoc::with_step(bytes, NVIDIA_SMI_STEP)
    }
}

/// A captured value in canonical units.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum FieldValueDoc {
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
            FieldValue::Text(t) => FieldValueDoc::Text(t.to_string()),
        }
    }
}

fn fields_doc(fields: &Fields) -> BTreeMap<String, FieldValueDoc> {
    fields
        .iter()
        .map(|(k, v)| (k.to_string(), v.into()))
        .collect()
}

/// How the lines of the input were understood; `unknown` lines matched no grammar.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct LineCountsDoc {
    pub(crate) lines: u64,
    pub(crate) events: u64,
    pub(crate) records: u64,
    pub(crate) continuation: u64,
    pub(crate) noise: u64,
    pub(crate) blank: u64,
    pub(crate) unknown: u64,
    /// Physical lines longer than a scan block, split to keep memory bounded.
    pub(crate) split_long_lines: u64,
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
#[expect(
    missing_docs,
    reason = "docs/json.md documents it; a doc comment here would become the schema's description"
)]
pub struct EventDoc {
    /// A canonical kind (docs/json.md) or one a grammar added.
    pub(crate) kind: String,
    pub(crate) ts: Option<TimeDoc>,
    /// The log printed no year (vLLM) and it was inferred.
    pub(crate) year_inferred: bool,
    /// Display name of the rank (`TP3`, `PP1 TP2`); null for the launcher.
    pub(crate) rank: Option<String>,
    pub(crate) pid: Option<u32>,
    pub(crate) source: String,
    /// 1-based physical line number in `source`.
    pub(crate) line: u64,
    pub(crate) grammar: String,
    /// Memory in bytes, time in seconds, counts as integers.
    pub(crate) fields: BTreeMap<String, FieldValueDoc>,
    pub(crate) message: String,
    /// Continuation lines (a traceback) that belong to the record.
    pub(crate) detail: Option<String>,
}

pub(crate) fn event_doc(run: &Run, e: &Event) -> EventDoc {
    EventDoc {
        kind: e.kind.to_string(),
        ts: e.ts.map(|t| ts_stepped(t, e.ts_step_ms)),
        year_inferred: e.year_inferred,
        rank: e.rank.as_ref().map(|r| r.to_string()),
        pid: e.pid(),
        source: run.source_name(&e.origin).to_string(),
        line: e.origin.line,
        grammar: e.grammar.to_string(),
        fields: fields_doc(&e.fields),
        message: e.message.to_string(),
        detail: e.detail().map(str::to_string),
    }
}

/// The unit of a figure, named in every figure of every document: `bytes`, `seconds`,
/// `tokens`, `count`, or the word a grammar's `[[figure]]` declared for what its figure
/// counts (`pages`), written as itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum UnitName {
    Bytes,
    Seconds,
    Tokens,
    Count,
    Declared(String),
}

impl UnitName {
    pub(crate) fn name(&self) -> &str {
        match self {
            UnitName::Bytes => "bytes",
            UnitName::Seconds => "seconds",
            UnitName::Tokens => "tokens",
            UnitName::Count => "count",
            UnitName::Declared(w) => w,
        }
    }
}

impl Serialize for UnitName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One of the four built-in unit names, or a declared word (lower case, `_`).
impl JsonSchema for UnitName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "UnitName".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The unit of a figure, named in every figure of every document: `bytes`, `seconds`, `tokens`, `count`, or the word a grammar's `[[figure]]` declared (`pages`).",
            "anyOf": [
                {
                    "type": "string",
                    "enum": ["bytes", "seconds", "tokens", "count"]
                },
                {
                    "description": "A unit a grammar declared for a figure of its own (`pages`): a count of it.",
                    "type": "string",
                    "pattern": "^[a-z][a-z_]*$"
                }
            ]
        })
    }
}

/// The unit of a phase figure (`mem_usage` bytes, `elapsed` seconds, `tokens` tokens, a
/// declared figure its declared unit).
pub(crate) fn unit_of(figure: &crate::base::event::FigureName) -> UnitName {
    use crate::base::event::FigureUnit;
    match figure.unit() {
        FigureUnit::Bytes => UnitName::Bytes,
        FigureUnit::Seconds => UnitName::Seconds,
        FigureUnit::Tokens => UnitName::Tokens,
        FigureUnit::Count => UnitName::Count,
        FigureUnit::Named(w) => UnitName::Declared(w.clone()),
    }
}

/// One step of a figure as printed, in its unit: a memory figure's print step, 1 for a
/// count; null for seconds, whose printed precision is not kept.
fn figure_resolution(unit: &UnitName, printed_step: f64) -> Option<f64> {
    match unit {
        UnitName::Bytes => Some(printed_step),
        UnitName::Tokens | UnitName::Count | UnitName::Declared(_) => Some(1.0),
        UnitName::Seconds => None,
    }
}

/// A phase's figure with the line it was read from: `{name, unit, value, resolution,
/// source, line}`, the value and its print step in `unit` (bytes for memory).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct FigureDoc {
    pub(crate) name: String,
    pub(crate) unit: UnitName,
    /// Whole numbers (bytes, tokens) are written without a fraction.
    #[serde(serialize_with = "whole_where_integral")]
    pub(crate) value: f64,
    /// One step of the printed figure in `unit`; null when not known (seconds).
    #[serde(serialize_with = "whole_where_integral_opt")]
    pub(crate) resolution: Option<f64>,
    pub(crate) source: String,
    pub(crate) line: u64,
}

/// Bytes and tokens are whole numbers: written as integers, not `687194767.0`.
fn whole_where_integral<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

fn whole_where_integral_opt<S: serde::Serializer>(
    v: &Option<f64>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => whole_where_integral(v, s),
        None => s.serialize_none(),
    }
}

fn figure_doc(run: &Run, f: &model::Figure) -> Option<FigureDoc> {
    let unit = unit_of(&f.name);
    Some(FigureDoc {
        name: f.name.to_string(),
        resolution: figure_resolution(&unit, f.value.resolution() as f64),
        unit,
        value: f.value.as_f64()?,
        source: run.source_name(&f.origin).to_string(),
        line: f.origin.line,
    })
}

fn figure_docs(run: &Run, figures: &[model::Figure]) -> Vec<FigureDoc> {
    figures.iter().filter_map(|f| figure_doc(run, f)).collect()
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct PhaseDoc {
    pub(crate) phase: PhaseName,
    pub(crate) start: Option<TimeDoc>,
    pub(crate) end: Option<TimeDoc>,
    /// Between `start` and `end`; null when either is unknown (with no begin line the
    /// server's own figure, if it printed one, is `figures.elapsed`) or when `end` is
    /// stamped before `start` (then `end_before_start_s` says by how much). Never negative.
    pub(crate) duration_s: Option<f64>,
    /// Seconds by which `end` is stamped before `start` (stamps out of order: a line
    /// printed late, two clocks); null when they are in order or either is unknown.
    pub(crate) end_before_start_s: Option<f64>,
    /// The phase's closing line was seen.
    pub(crate) complete: bool,
    pub(crate) figures: Vec<FigureDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct FailureDoc {
    /// The outcome this line gives its rank.
    pub(crate) outcome: OutcomeName,
    pub(crate) phase: PhaseName,
    /// Where the phase was read: `frames` (the traceback), `wording` (the failing call's
    /// message), `event` (the phase its grammar gives the failure's own line),
    /// `last_event` (the last phase line before it), `after_last_phase` (phase `ready`:
    /// after the phase the rank completed, in a run that had printed no ready line) or
    /// `ranks_at_line` (a launcher's failure line, or an engine's whose own lines reached
    /// no phase: the latest phase the ranks' phase lines had reached by it).
    pub(crate) phase_from: String,
    pub(crate) kind: FailureKindName,
    pub(crate) message: String,
    /// Parsed figures, e.g. `requested_bytes`, `free_bytes`, `allowed_bytes` for an OOM.
    pub(crate) fields: BTreeMap<String, FieldValueDoc>,
    pub(crate) ts: Option<TimeDoc>,
    pub(crate) source: Option<String>,
    pub(crate) line: Option<u64>,
    /// For a consequence or a termination: the rank whose failure it followed.
    pub(crate) consequence_of: Option<String>,
    /// For a rank whose own log says nothing of its end, reported dead by another
    /// process's line (kind `died`, or the line's `failure`): who reported it (an
    /// engine's or a rank's name, or `launcher`); `source`/`line`/`message` are that line.
    pub(crate) reported_by: Option<String>,
    pub(crate) traceback: Option<String>,
}

pub(crate) fn failure_doc(run: &Run, f: &Failure) -> FailureDoc {
    FailureDoc {
        outcome: f.outcome.into(),
        phase: f.phase.into(),
        phase_from: f.phase_from.to_string(),
        kind: f.kind.into(),
        message: f.message.clone(),
        fields: fields_doc(&f.fields),
        ts: f.ts.map(|t| ts_stepped(t, f.ts_step_ms)),
        source: f.origin.as_ref().map(|o| run.source_name(o).to_string()),
        line: f.origin.as_ref().map(|o| o.line),
        consequence_of: f.consequence_of.as_ref().map(|r| r.to_string()),
        reported_by: f.reported_by.clone(),
        traceback: f.traceback.clone(),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct RankDoc {
    pub(crate) rank: String,
    /// An engine or API process (vLLM's engine core), not a numbered rank: it is not
    /// counted among the ranks.
    pub(crate) process: bool,
    pub(crate) outcome: OutcomeName,
    /// Where the rank stopped: `ready`, or the phase of its failure, or where its log ends.
    pub(crate) last_phase: PhaseName,
    pub(crate) reached_ready: bool,
    /// The evidence for every outcome but `ready` and `incomplete`.
    pub(crate) failure: Option<FailureDoc>,
    /// The rank's last line (`file:line`): where an incomplete log ends.
    pub(crate) last_line: Option<String>,
    pub(crate) phases: Vec<PhaseDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct UnknownLineDoc {
    pub(crate) line: u64,
    pub(crate) text: String,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SourceDoc {
    pub(crate) path: String,
    /// The file's size (exact).
    pub(crate) size_bytes: MemoryDoc,
    pub(crate) lines: LineCountsDoc,
    /// Events dropped because another file of the run holds the same lines.
    pub(crate) duplicate_events: u64,
    /// The last line had no newline (the file was cut): its text, shortened.
    pub(crate) cut_last_line: Option<String>,
    /// A few of the lines no grammar understood.
    pub(crate) unknown_samples: Vec<UnknownLineDoc>,
}

fn source_doc(s: &model::SourceInfo) -> SourceDoc {
    SourceDoc {
        path: s.path.clone(),
        size_bytes: MemoryDoc::exact(s.bytes),
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

/// One setting of a configuration: its key and its value as JSON.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct KeyValueDoc {
    pub(crate) key: String,
    pub(crate) value: serde_json::Value,
}

fn py(v: &crate::model::config::pyrepr::PyValue) -> serde_json::Value {
    // PyValue's Serialize never fails (non-finite floats become strings), so Null is
    // only a safety net.
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}
