//! The JSON contract. These types are the output, kept apart from the internal model so
//! that a refactor cannot change what scripts read by accident. Every document carries
//! `schema_version`; a breaking change bumps it (see CHANGELOG.md and docs/json.md).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::align::{phase_stats, PhaseStats};
use crate::analysis::diff::{RunDiff, RunOutcome};
use crate::event::{Event, FieldValue};
use crate::model::{Failure, Run};
use crate::scan::LineCounts;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
pub struct FieldDoc {
    pub value: FieldValue,
    /// One step of the printed figure, for memory in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution_bytes: Option<u64>,
}

fn fields_doc(fields: &BTreeMap<String, FieldValue>) -> BTreeMap<String, FieldValue> {
    fields.clone()
}

#[derive(Serialize)]
pub struct EventDoc {
    pub kind: String,
    pub ts: Option<String>,
    pub year_inferred: bool,
    pub rank: Option<String>,
    pub pid: Option<u32>,
    pub source: String,
    pub line: u64,
    pub grammar: String,
    /// Memory in bytes, time in seconds, counts as integers.
    pub fields: BTreeMap<String, FieldValue>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

pub fn event_doc(run: &Run, e: &Event) -> EventDoc {
    EventDoc {
        kind: e.kind.clone(),
        ts: e.ts.map(|t| t.format("%Y-%m-%dT%H:%M:%S%.f").to_string()),
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

#[derive(Serialize)]
pub struct FigureDoc {
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution_bytes: Option<u64>,
    pub source: String,
    pub line: u64,
}

#[derive(Serialize)]
pub struct PhaseDoc {
    pub phase: &'static str,
    pub start: Option<String>,
    pub end: Option<String>,
    pub duration_s: Option<f64>,
    pub complete: bool,
    pub figures: BTreeMap<&'static str, FigureDoc>,
}

#[derive(Serialize)]
pub struct FailureDoc {
    pub phase: &'static str,
    pub kind: &'static str,
    pub message: String,
    pub fields: BTreeMap<String, FieldValue>,
    pub ts: Option<String>,
    pub source: Option<String>,
    pub line: Option<u64>,
    pub consequence_of: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
}

fn failure_doc(run: &Run, f: &Failure) -> FailureDoc {
    FailureDoc {
        phase: f.phase.name(),
        kind: f.kind.name(),
        message: f.message.clone(),
        fields: f.fields.clone(),
        ts: f.ts.map(|t| t.to_string()),
        source: f.origin.as_ref().map(|o| run.source_name(o).to_string()),
        line: f.origin.as_ref().map(|o| o.line),
        consequence_of: f.consequence_of.as_ref().map(|r| r.to_string()),
        traceback: f.traceback.clone(),
    }
}

#[derive(Serialize)]
pub struct RankDoc {
    pub rank: String,
    pub last_phase: &'static str,
    pub reached_ready: bool,
    pub failure: Option<FailureDoc>,
    pub phases: Vec<PhaseDoc>,
}

#[derive(Serialize)]
pub struct SourceDoc {
    pub path: String,
    pub bytes: u64,
    pub lines: LineCounts,
    pub duplicate_events: u64,
    pub cut_last_line: Option<String>,
    pub unknown_samples: Vec<crate::scan::UnknownLine>,
}

#[derive(Serialize)]
pub struct RunDoc {
    pub name: String,
    pub ready: bool,
    pub start: Option<String>,
    pub grammars: Vec<String>,
    pub year_inferred: bool,
    pub lines: LineCounts,
    pub sources: Vec<SourceDoc>,
    pub ranks: Vec<RankDoc>,
    pub phases: Vec<PhaseStats>,
    pub launcher_failures: Vec<FailureDoc>,
    pub notes: Vec<String>,
}

pub fn run_doc(run: &Run) -> RunDoc {
    RunDoc {
        name: run.name.clone(),
        ready: run.ready,
        start: run.start.map(|t| t.to_string()),
        grammars: run.grammars.clone(),
        year_inferred: run.year_inferred,
        lines: run.counts(),
        sources: run
            .sources
            .iter()
            .map(|s| SourceDoc {
                path: s.path.clone(),
                bytes: s.bytes,
                lines: s.counts.clone(),
                duplicate_events: s.duplicate_events,
                cut_last_line: s.cut_last_line.clone(),
                unknown_samples: s.unknown_samples.clone(),
            })
            .collect(),
        ranks: run
            .ranks
            .iter()
            .map(|r| RankDoc {
                rank: r.rank.to_string(),
                last_phase: r.last_phase.name(),
                reached_ready: r.reached_ready,
                failure: r.failure.as_ref().map(|f| failure_doc(run, f)),
                phases: r
                    .phases
                    .iter()
                    .map(|p| PhaseDoc {
                        phase: p.phase.name(),
                        start: p.start.map(|t| t.to_string()),
                        end: p.end.map(|t| t.to_string()),
                        duration_s: p.duration_s(),
                        complete: p.complete,
                        figures: p
                            .figures
                            .iter()
                            .filter_map(|f| {
                                Some((
                                    f.name,
                                    FigureDoc {
                                        value: f.value.as_f64()?,
                                        resolution_bytes: f
                                            .value
                                            .as_bytes()
                                            .map(|_| f.value.resolution()),
                                        source: run.source_name(&f.origin).to_string(),
                                        line: f.origin.line,
                                    },
                                ))
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
        phases: phase_stats(run),
        launcher_failures: run
            .launcher_failures
            .iter()
            .map(|f| failure_doc(run, f))
            .collect(),
        notes: run.notes.clone(),
    }
}

#[derive(Serialize)]
pub struct SummaryDoc {
    pub schema_version: u32,
    pub command: &'static str,
    pub run: RunDoc,
}

pub fn summary_doc(run: &Run) -> SummaryDoc {
    SummaryDoc {
        schema_version: SCHEMA_VERSION,
        command: "summary",
        run: run_doc(run),
    }
}

#[derive(Serialize)]
pub struct EventsDoc {
    pub schema_version: u32,
    pub command: &'static str,
    pub run: String,
    pub lines: LineCounts,
    pub events: Vec<EventDoc>,
}

pub fn events_doc(run: &Run) -> EventsDoc {
    EventsDoc {
        schema_version: SCHEMA_VERSION,
        command: "events",
        run: run.name.clone(),
        lines: run.counts(),
        events: run.events.iter().map(|e| event_doc(run, e)).collect(),
    }
}

/// One NDJSON message: a `type`/`data` envelope, as ripgrep's JSON printer does.
#[derive(Serialize)]
pub struct Envelope<'a, T: Serialize> {
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub schema_version: u32,
    pub data: T,
}

#[derive(Serialize)]
pub struct DiffDoc<'a> {
    pub schema_version: u32,
    pub command: &'static str,
    pub baseline: String,
    pub candidate: String,
    pub status: crate::analysis::diff::Status,
    pub exit_code: i32,
    /// The verdict in one line, as the text output's first line.
    pub verdict: String,
    pub config: &'a Option<crate::config::ConfigDiff>,
    pub config_note: &'a Option<String>,
    pub attribution: serde_json::Value,
    pub comparability: &'a crate::analysis::diff::Comparability,
    pub first_divergence: &'a Option<crate::analysis::diff::Divergence>,
    pub effect: &'a Option<crate::analysis::diff::Effect>,
    pub figures: &'a [crate::analysis::diff::FigureDiff],
    pub baseline_outcome: &'a RunOutcome,
    pub candidate_outcome: &'a RunOutcome,
}

pub fn diff_doc<'a>(
    b: &Run,
    c: &Run,
    d: &'a RunDiff,
    attribution: serde_json::Value,
) -> DiffDoc<'a> {
    DiffDoc {
        schema_version: SCHEMA_VERSION,
        command: "diff",
        baseline: b.name.clone(),
        candidate: c.name.clone(),
        status: d.status,
        exit_code: d.status.exit_code(),
        verdict: d.headline.clone(),
        config: &d.config,
        config_note: &d.config_note,
        attribution,
        comparability: &d.comparability,
        first_divergence: &d.first_divergence,
        effect: &d.effect,
        figures: &d.figures,
        baseline_outcome: &d.baseline,
        candidate_outcome: &d.candidate,
    }
}
