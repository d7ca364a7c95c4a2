//! `events --json` and the NDJSON stream: events, messages, phase records.

use super::*;

/// `rankscope events --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct EventsDoc {
    pub(crate) schema_version: u32,
    /// Always `events`.
    pub(crate) command: String,
    pub(crate) identity: IdentityDoc,
    pub(crate) lines: LineCountsDoc,
    pub(crate) events: Vec<EventDoc>,
}

/// The `events --json` document: the run's events that `filter` keeps.
pub fn events_doc(run: &Run, filter: &EventFilter, identity: IdentityDoc) -> EventsDoc {
    EventsDoc {
        schema_version: SCHEMA_VERSION,
        command: "events".into(),
        identity,
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

/// One line of `rankscope events --ndjson`. The order on the stream is: one `run`, the
/// `event`s in time order, one `rank` per rank, one `failure` per failure, and `summary`
/// last.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MessageDoc {
    #[serde(flatten)]
    pub(crate) message: Message,
    pub(crate) schema_version: u32,
    pub(crate) run: IdentityDoc,
}

impl MessageDoc {
    /// One `events --ndjson` message about `run`.
    pub fn new(message: Message, run: IdentityDoc) -> MessageDoc {
        MessageDoc {
            message,
            schema_version: SCHEMA_VERSION,
            run,
        }
    }
}

/// One line of `rankscope summary --ndjson`: a `phase` record per rank × phase, in rank
/// order then start-up order, then one `memory` record (the breakdown and capacity of
/// `summary --json`'s `memory`, the same shape).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PhaseRecordDoc {
    #[serde(flatten)]
    pub(crate) line: SummaryLine,
    pub(crate) schema_version: u32,
    pub(crate) run: IdentityDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub(crate) enum SummaryLine {
    Phase(PhaseRecord),
    Memory(Box<super::capacity::MemoryReportDoc>),
}

/// The `memory` line of `summary --ndjson`.
pub fn memory_record(
    run: &Run,
    memory: &crate::report::MemoryReport,
    id: &IdentityDoc,
) -> PhaseRecordDoc {
    PhaseRecordDoc {
        line: SummaryLine::Memory(Box::new(super::capacity::memory_report_doc(run, memory))),
        schema_version: SCHEMA_VERSION,
        run: id.clone(),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct PhaseRecord {
    pub(crate) rank: String,
    /// An engine or API process, not counted among the ranks.
    pub(crate) process: bool,
    /// The node the rank ran on, in a run read from several nodes.
    pub(crate) node: Option<String>,
    pub(crate) phase: PhaseName,
    pub(crate) start: Option<TimeDoc>,
    pub(crate) end: Option<TimeDoc>,
    /// `end - start`, only where both are known and in order; null otherwise. Never
    /// negative.
    pub(crate) duration_s: Option<f64>,
    /// Seconds by which `end` is stamped before `start` (stamps out of order); null when
    /// they are in order or either is unknown.
    pub(crate) end_before_start_s: Option<f64>,
    /// What the server printed on the end line (`elapsed`), for a phase with no begin
    /// line; null when there was a begin line or no such figure.
    pub(crate) printed_duration_s: Option<f64>,
    /// The phase's closing line was seen.
    pub(crate) complete: bool,
    /// The rank's outcome (the same on each of its phases).
    pub(crate) outcome: OutcomeName,
    /// The rank failed in this phase (its own failure, a consequence, a stall or a
    /// termination).
    pub(crate) failed_here: bool,
    /// The failure's kind when `failed_here`.
    pub(crate) failure_kind: Option<FailureKindName>,
    /// As in `summary --json`: `{name, unit, value, resolution, source, line}`.
    pub(crate) figures: Vec<FigureDoc>,
}

/// The records of `summary --ndjson`, one per rank × phase the rank reported.
pub fn phase_records(run: &Run, id: &IdentityDoc) -> Vec<PhaseRecordDoc> {
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
                schema_version: SCHEMA_VERSION,
                run: id.clone(),
                line: SummaryLine::Phase(PhaseRecord {
                    rank: r.rank.to_string(),
                    process: r.is_process(),
                    node: node.clone(),
                    phase: p.phase.into(),
                    start: p.start.map(|t| ts_stepped(t, p.start_step_ms)),
                    end: p.end.map(|t| ts_stepped(t, p.end_step_ms)),
                    duration_s,
                    end_before_start_s: p.end_before_start_s(),
                    printed_duration_s: printed,
                    complete: p.complete,
                    outcome: r.outcome.into(),
                    failed_here,
                    failure_kind: r
                        .failure
                        .as_ref()
                        .filter(|_| failed_here)
                        .map(|f| f.kind.into()),
                    figures: figure_docs(run, &p.figures),
                }),
            });
        }
    }
    out
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
#[expect(
    missing_docs,
    reason = "docs/json.md documents it; a doc comment here would become the schema's description"
)]
pub enum Message {
    Run(RunMessage),
    Event(EventDoc),
    Rank(RankMessage),
    Failure(FailureMessage),
    Summary(SummaryMessage),
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[expect(
    missing_docs,
    reason = "docs/json.md documents it; a doc comment here would become the schema's description"
)]
pub struct RunMessage {
    pub(crate) grammars: Vec<String>,
    pub(crate) sources: Vec<SourceDoc>,
    /// The configuration the run's first configuration line printed (SGLang's
    /// `server_args=`, vLLM's engine config, TGI's `Args {…}`, …), parsed; null when no
    /// such line was read or it could not be parsed (`config_error` says why).
    pub(crate) config: Option<RunConfigDoc>,
    pub(crate) config_error: Option<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct RunConfigDoc {
    /// The grammar whose rule read the line.
    pub(crate) grammar: String,
    /// The server version the line printed, where it printed one.
    pub(crate) version: Option<String>,
    /// The line ended before the configuration did: `settings` holds what came before.
    pub(crate) truncated: bool,
    /// Every setting in printed order, values as JSON (`None` is null, `Some(2)` is 2).
    pub(crate) settings: Vec<KeyValueDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[expect(
    missing_docs,
    reason = "docs/json.md documents it; a doc comment here would become the schema's description"
)]
pub struct RankMessage {
    pub(crate) rank: String,
    pub(crate) process: bool,
    pub(crate) outcome: OutcomeName,
    pub(crate) last_phase: PhaseName,
    pub(crate) reached_ready: bool,
    pub(crate) failure: Option<FailureDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[expect(
    missing_docs,
    reason = "docs/json.md documents it; a doc comment here would become the schema's description"
)]
pub struct FailureMessage {
    /// Null for a failure the launcher printed outside any rank.
    pub(crate) rank: Option<String>,
    #[serde(flatten)]
    pub(crate) failure: FailureDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[expect(
    missing_docs,
    reason = "docs/json.md documents it; a doc comment here would become the schema's description"
)]
pub struct SummaryMessage {
    /// `event` messages written (after `--kind`/`--rank` filters).
    pub(crate) events: u64,
    pub(crate) ranks: usize,
    pub(crate) failed_ranks: usize,
    pub(crate) root: Option<String>,
    pub(crate) ready: bool,
    pub(crate) lines: LineCountsDoc,
}

pub(crate) fn run_message(run: &Run) -> Message {
    let (config, config_error) = match &run.config {
        Some(Ok(c)) => (
            Some(RunConfigDoc {
                grammar: c.config.source.grammar.clone(),
                version: c.config.source.version.clone(),
                truncated: c.truncated,
                settings: (c.config.entries.iter())
                    .map(|(k, v)| KeyValueDoc {
                        key: k.clone(),
                        value: py(v),
                    })
                    .collect(),
            }),
            None,
        ),
        Some(Err(e)) => (None, Some(e.to_string())),
        None => (None, None),
    };
    Message::Run(RunMessage {
        grammars: run.grammars.clone(),
        sources: run.sources.iter().map(source_doc).collect(),
        config,
        config_error,
    })
}

pub(crate) fn rank_message(run: &Run, r: &model::RankRun) -> Message {
    Message::Rank(RankMessage {
        rank: r.rank.to_string(),
        process: r.is_process(),
        outcome: r.outcome.into(),
        last_phase: r.last_phase.into(),
        reached_ready: r.reached_ready,
        failure: r.failure.as_ref().map(|f| failure_doc(run, f)),
    })
}

pub(crate) fn failure_message(
    run: &Run,
    rank: Option<&crate::base::event::Rank>,
    f: &Failure,
) -> Message {
    Message::Failure(FailureMessage {
        rank: rank.map(|r| r.to_string()),
        failure: failure_doc(run, f),
    })
}

pub(crate) fn summary_message(run: &Run, events: u64) -> Message {
    Message::Summary(SummaryMessage {
        events,
        ranks: run.worker_ranks().count(),
        failed_ranks: run.failed_ranks(),
        root: run.root.as_ref().map(|r| r.to_string()),
        ready: run.ready,
        lines: (&run.counts()).into(),
    })
}
