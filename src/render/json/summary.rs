//! `summary --json`: the run document.

use super::*;

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SpreadDoc {
    pub(crate) min: f64,
    pub(crate) median: f64,
    pub(crate) max: f64,
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

/// A figure over the ranks that reported it: `{name, unit, …}` as every figure, with the
/// spread of its values in `unit`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct FigureStatsDoc {
    pub(crate) name: String,
    pub(crate) unit: UnitName,
    pub(crate) ranks: usize,
    pub(crate) spread: SpreadDoc,
    /// One step of the printed figure in `unit`; null when not known (seconds).
    pub(crate) resolution: Option<f64>,
    /// Ranks off the median by more than one print step.
    pub(crate) outliers: Vec<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct PhaseStatsDoc {
    pub(crate) phase: PhaseName,
    /// Ranks that reported the phase.
    pub(crate) ranks: usize,
    /// Of those, ranks that finished it.
    pub(crate) completed: usize,
    /// Seconds between the first and the last rank finishing.
    pub(crate) end_skew_s: Option<f64>,
    /// From the begin and end stamps, over the ranks that have both.
    pub(crate) duration_s: Option<SpreadDoc>,
    /// The durations the server printed on the end line, for the ranks with no begin line.
    pub(crate) printed_duration_s: Option<SpreadDoc>,
    /// Ranks with an end line but neither a begin line nor a printed duration.
    pub(crate) unknown_start: usize,
    pub(crate) figures: Vec<FigureStatsDoc>,
    /// Ranks that finished the phase after the other ranks' median by more than the
    /// stamps' step and the nodes' clock uncertainty.
    pub(crate) stragglers: Vec<String>,
    /// How each straggler was late, in the order of `stragglers`.
    pub(crate) straggler_detail: Vec<StragglerDoc>,
    /// Ranks whose end of the phase is stamped before its start: they have no duration,
    /// and their end takes no part in `end_skew_s` or the stragglers.
    pub(crate) end_before_start: Vec<EndBeforeStartDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct EndBeforeStartDoc {
    pub(crate) rank: String,
    /// Seconds by which the end is stamped before the start.
    pub(crate) by_s: f64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct StragglerDoc {
    pub(crate) rank: String,
    /// Seconds after the other ranks' median end of the phase.
    pub(crate) late_s: f64,
    /// Of which, seconds it began the phase late: the time went before its first line.
    pub(crate) before_first_line_s: f64,
    /// Of which, seconds it ran longer inside the phase.
    pub(crate) inside_s: f64,
    /// What `late_s` exceeded: one stamp step plus the nodes' clock uncertainty.
    pub(crate) uncertainty_s: f64,
}

/// One host of a run read from several nodes' files.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct NodeDoc {
    pub(crate) name: String,
    /// The node the others' clocks are aligned to.
    pub(crate) reference: bool,
    /// The paths of its log files.
    pub(crate) sources: Vec<String>,
    pub(crate) ranks: Vec<String>,
    /// `node_rank` and `nnodes` from its server arguments, when printed.
    pub(crate) node_rank: Option<u32>,
    pub(crate) nnodes: Option<u32>,
    /// The hosts its lines name (NCCL's `host:pid:tid` prefixes, a grammar's `host`
    /// capture); empty when none.
    pub(crate) hosts: Vec<String>,
    /// Its clock minus the reference node's; absent for the reference and for a node
    /// with no barrier exit in common with it.
    pub(crate) clock_offset: Option<ClockOffsetDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct ClockOffsetDoc {
    /// The estimate, the middle of the interval, in seconds.
    pub(crate) offset_s: f64,
    /// The offset lies in the open interval (`min_s`, `max_s`).
    pub(crate) min_s: f64,
    pub(crate) max_s: f64,
    /// The most the estimate can be off by: half the interval.
    pub(crate) uncertainty_s: f64,
    /// Barrier exits intersected, and those left out because they disagreed.
    pub(crate) barrier_events: usize,
    pub(crate) rejected_events: usize,
    /// The node's stamps were moved by `-offset_s` (false under `--no-clock-align`).
    pub(crate) applied: bool,
}

fn node_doc(run: &Run, n: &crate::model::node::Node) -> NodeDoc {
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
            offset_s: o.mid().get(),
            min_s: o.lo().get(),
            max_s: o.hi().get(),
            uncertainty_s: o.half_width().get(),
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
        end_skew_s: p.end_skew_s.map(f64::from),
        duration_s: p.duration_s.as_ref().map(Into::into),
        printed_duration_s: p.printed_duration_s.as_ref().map(Into::into),
        unknown_start: p.unknown_start,
        figures: p
            .figures
            .iter()
            .map(|f| {
                let unit = unit_of(&f.name);
                FigureStatsDoc {
                    name: f.name.to_string(),
                    resolution: figure_resolution(&unit, f.resolution),
                    unit,
                    ranks: f.ranks,
                    spread: (&f.spread).into(),
                    outliers: f.outliers.iter().map(|r| r.to_string()).collect(),
                }
            })
            .collect(),
        stragglers: p.stragglers.iter().map(|r| r.to_string()).collect(),
        straggler_detail: p
            .straggler_detail
            .iter()
            .map(|s| StragglerDoc {
                rank: s.rank.to_string(),
                late_s: s.late_s.get(),
                before_first_line_s: s.before_first_line_s.get(),
                inside_s: s.inside_s.get(),
                uncertainty_s: s.uncertainty_s.get(),
            })
            .collect(),
        end_before_start: p
            .end_before_start
            .iter()
            .map(|(r, by)| EndBeforeStartDoc {
                rank: r.to_string(),
                by_s: by.get(),
            })
            .collect(),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct RunDoc {
    /// Some rank printed the server's ready line.
    pub(crate) ready: bool,
    /// The ids of the grammars that gave the run's events: the server's first, the
    /// others by id.
    pub(crate) grammars: Vec<String>,
    pub(crate) year_inferred: bool,
    pub(crate) lines: LineCountsDoc,
    pub(crate) sources: Vec<SourceDoc>,
    pub(crate) ranks: Vec<RankDoc>,
    pub(crate) phases: Vec<PhaseStatsDoc>,
    /// Failures printed by the launcher, outside any rank.
    pub(crate) launcher_failures: Vec<FailureDoc>,
    /// The rank whose own failure came first (or, with none, whose stall did).
    pub(crate) root: Option<String>,
    /// Numbered ranks per outcome (engine and API processes are not counted).
    pub(crate) outcomes: BTreeMap<String, usize>,
    /// Every start-up the log holds, when it holds more than one.
    pub(crate) attempts: Vec<AttemptDoc>,
    pub(crate) notes: Vec<String>,
    /// GPU memory sampled by nvidia-smi (CSV files in the run directory).
    pub(crate) gpus: Vec<GpuMemoryDoc>,
    /// Per-process GPU memory from `nvidia-smi --query-compute-apps` samples.
    pub(crate) gpu_processes: Vec<GpuProcessDoc>,
    /// The hosts, for a run read from several nodes' files (empty otherwise). Times in
    /// this document are on the reference node's clock unless `--no-clock-align`.
    pub(crate) nodes: Vec<NodeDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct AttemptDoc {
    pub(crate) index: usize,
    pub(crate) start: Option<TimeDoc>,
    pub(crate) end: Option<TimeDoc>,
    pub(crate) events: usize,
    pub(crate) outcome: OutcomeName,
    pub(crate) root: Option<String>,
    pub(crate) root_kind: Option<FailureKindName>,
    pub(crate) root_phase: Option<PhaseName>,
}

fn attempt_doc(a: &model::AttemptInfo) -> AttemptDoc {
    AttemptDoc {
        index: a.index,
        start: a.start.map(|t| ts_stepped(t, a.start_step_ms)),
        end: a.end.map(|t| ts_stepped(t, a.end_step_ms)),
        events: a.events,
        outcome: a.outcome.into(),
        root: a.root.as_ref().map(|r| r.to_string()),
        root_kind: a.root_kind.map(Into::into),
        root_phase: a.root_phase.map(Into::into),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct GpuProcessDoc {
    pub(crate) source: String,
    pub(crate) pid: u32,
    pub(crate) process_name: Option<String>,
    pub(crate) gpu: Option<u32>,
    /// The rank whose log lines carry the same pid, when they do.
    pub(crate) rank: Option<String>,
    pub(crate) samples: usize,
    /// nvidia-smi's figures: whole MiB, `resolution_bytes` 1,048,576.
    pub(crate) peak_used_bytes: MemoryDoc,
    pub(crate) peak_at_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct GpuMemoryDoc {
    pub(crate) source: String,
    pub(crate) gpu: u32,
    pub(crate) samples: usize,
    /// nvidia-smi's figures: whole MiB, `resolution_bytes` 1,048,576.
    pub(crate) total_bytes: Option<MemoryDoc>,
    pub(crate) peak_used_bytes: MemoryDoc,
    /// Seconds since the run's first line (nvidia-smi and the logs share the wall clock).
    pub(crate) peak_at_s: Option<f64>,
    /// At most 256 points, each the largest sample of its interval.
    pub(crate) series: Vec<GpuPointDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct GpuPointDoc {
    /// Seconds since the run's first line.
    pub(crate) t_s: f64,
    pub(crate) used_bytes: MemoryDoc,
}

fn phase_doc(run: &Run, p: &model::PhaseSpan) -> PhaseDoc {
    PhaseDoc {
        phase: p.phase.into(),
        start: p.start.map(|t| ts_stepped(t, p.start_step_ms)),
        end: p.end.map(|t| ts_stepped(t, p.end_step_ms)),
        duration_s: p.duration_s(),
        end_before_start_s: p.end_before_start_s(),
        complete: p.complete,
        figures: figure_docs(run, &p.figures),
    }
}

pub(crate) fn rank_doc(run: &Run, r: &model::RankRun) -> RankDoc {
    RankDoc {
        rank: r.rank.to_string(),
        process: r.is_process(),
        outcome: r.outcome.into(),
        last_phase: r.last_phase.into(),
        reached_ready: r.reached_ready,
        failure: r.failure.as_ref().map(|f| failure_doc(run, f)),
        last_line: r.last_origin.as_ref().map(|o| run.cite(o)),
        phases: r.phases.iter().map(|p| phase_doc(run, p)).collect(),
    }
}

pub(crate) fn run_doc(run: &Run, report: &RunReport) -> RunDoc {
    RunDoc {
        ready: run.ready,
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
                total_bytes: g.total_bytes.map(MemoryDoc::smi),
                peak_used_bytes: MemoryDoc::smi(g.peak_used_bytes),
                peak_at_s: g.peak_at_s.map(f64::from),
                series: g
                    .series
                    .iter()
                    .map(|&(t_s, used)| GpuPointDoc {
                        t_s,
                        used_bytes: MemoryDoc::smi(used),
                    })
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
                peak_used_bytes: MemoryDoc::smi(p.peak_used_bytes),
                peak_at_s: p.peak_at_s.map(f64::from),
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
        attempts: run.attempts.iter().map(attempt_doc).collect(),
        notes: crate::render::text::notes::read_notes(&run.notes),
    }
}

/// `rankscope summary --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SummaryDoc {
    pub(crate) schema_version: u32,
    /// Always `summary`.
    pub(crate) command: String,
    pub(crate) identity: IdentityDoc,
    pub(crate) run: RunDoc,
    /// For a failed run: a memory failure's deficit and the settings that would cover it,
    /// from the run's own figures (null for a run that did not fail).
    pub(crate) remedies: Option<RemediesDoc>,
    /// Where each rank's memory went (by the server grammar's memory model) and what the
    /// KV pool buys; null parts when the grammar has no model or the log no pool.
    pub(crate) memory: super::capacity::MemoryReportDoc,
}

/// The `summary --json` document of a run.
pub fn summary_doc(
    run: &Run,
    report: &RunReport,
    identity: &crate::export::identity::RunIdentity,
) -> SummaryDoc {
    SummaryDoc {
        schema_version: SCHEMA_VERSION,
        command: "summary".into(),
        identity: identity.into(),
        run: run_doc(run, report),
        remedies: report
            .outcome
            .failed()
            .then(|| remedies_doc(&report.remedies)),
        memory: super::capacity::memory_report_doc(run, &report.memory),
    }
}
