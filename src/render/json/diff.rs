//! `diff --json`: the comparison, its attribution and snapshot evidence.

use super::*;
use crate::analysis::diff;
use crate::analysis::outcome::{OomFigures, PrintedBytes};
use crate::render::text::notes::read_notes;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StatusName {
    /// Nothing beyond noise (exit 0).
    Same,
    /// The candidate fails (exit 1).
    Failed,
    /// No failure, but less capacity, more memory used, or a slower start-up (exit 1).
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
pub(crate) enum DeltaClassName {
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
pub(crate) struct ChangeDoc {
    pub(crate) key: String,
    pub(crate) old: serde_json::Value,
    pub(crate) new: serde_json::Value,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct ConfigDiffDoc {
    pub(crate) changed: Vec<ChangeDoc>,
    /// Keys only in the candidate.
    pub(crate) added: Vec<KeyValueDoc>,
    /// Keys only in the baseline.
    pub(crate) removed: Vec<KeyValueDoc>,
}

fn config_doc(c: &config::ConfigDiff) -> ConfigDiffDoc {
    let kv = |(k, v): &(String, crate::model::config::pyrepr::PyValue)| KeyValueDoc {
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
pub(crate) struct ComparabilityDoc {
    pub(crate) common_ranks: usize,
    pub(crate) only_in_baseline: Vec<String>,
    pub(crate) only_in_candidate: Vec<String>,
    /// Per-rank memory is compared only when the rank sets match.
    pub(crate) memory_compared: bool,
    pub(crate) notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct RankDeltaDoc {
    pub(crate) rank: String,
    pub(crate) baseline: f64,
    pub(crate) candidate: f64,
    pub(crate) delta: f64,
    /// Beyond one print step.
    pub(crate) beyond_noise: bool,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct FigureDiffDoc {
    pub(crate) phase: PhaseName,
    /// The figure's name, as in every figure of every document.
    pub(crate) name: String,
    /// The unit of `baseline_median`, `candidate_median`, `delta` and `per_rank`.
    pub(crate) unit: UnitName,
    /// One print step in `unit` (deltas within it are noise); null when not known.
    pub(crate) resolution: Option<f64>,
    pub(crate) class: DeltaClassName,
    pub(crate) ranks_compared: usize,
    /// Ranks that moved beyond noise in the dominant direction.
    pub(crate) ranks_moved: usize,
    pub(crate) baseline_median: f64,
    pub(crate) candidate_median: f64,
    pub(crate) delta: SpreadDoc,
    /// The candidate is worse on this figure (more used, less free, fewer tokens).
    pub(crate) worse: bool,
    pub(crate) per_rank: Vec<RankDeltaDoc>,
    /// `file:line: message` of the first compared rank, baseline and candidate.
    pub(crate) baseline_text: Option<String>,
    pub(crate) candidate_text: Option<String>,
}

fn figure_diff_doc(f: &diff::FigureDiff) -> FigureDiffDoc {
    FigureDiffDoc {
        phase: f.phase.into(),
        name: f.figure.to_string(),
        unit: unit_of(&f.figure),
        resolution: figure_resolution(&unit_of(&f.figure), f.resolution),
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
            .map(|l| crate::render::text::diff::figure_line(l.as_ref())),
        candidate_text: f
            .candidate_line
            .as_ref()
            .map(|l| crate::render::text::diff::figure_line(l.as_ref())),
    }
}

/// The first compared figure (in start-up order) that moved beyond noise.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct DivergenceDoc {
    pub(crate) phase: PhaseName,
    pub(crate) name: String,
    pub(crate) class: DeltaClassName,
    pub(crate) ranks_moved: usize,
    pub(crate) ranks_compared: usize,
    pub(crate) delta: SpreadDoc,
    /// The unit of `delta` and the medians.
    pub(crate) unit: UnitName,
    /// One print step in `unit`, as in `figures[]`; null when not known.
    pub(crate) resolution: Option<f64>,
    pub(crate) baseline_median: f64,
    pub(crate) candidate_median: f64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct BaselineCandidate {
    pub(crate) baseline_bytes: MemoryDoc,
    pub(crate) candidate_bytes: MemoryDoc,
}

/// What the first divergence cost further on (medians over ranks).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct EffectDoc {
    /// Change in KV tokens per rank (negative: lost).
    pub(crate) kv_tokens_delta: Option<i64>,
    pub(crate) kv_tokens_baseline: Option<i64>,
    /// The same in bytes, from the candidate's bytes per token (its `kv_size` figure
    /// over its tokens: the resolution is the figure's step scaled as the bytes are).
    pub(crate) kv_delta_bytes: Option<MemoryDoc>,
    /// Change of free memory after the KV pool (medians over ranks); the resolution is
    /// the figure's step in both runs.
    pub(crate) avail_after_pool_delta_bytes: Option<MemoryDoc>,
    pub(crate) avail_after_pool: Option<BaselineCandidate>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct FailureGroupDoc {
    pub(crate) outcome: OutcomeName,
    pub(crate) kind: FailureKindName,
    pub(crate) phase: PhaseName,
    pub(crate) ranks: Vec<String>,
    pub(crate) total_ranks: usize,
    /// The OOM's figures common to the group, as the failure's `fields` give them.
    pub(crate) requested_bytes: Option<MemoryDoc>,
    pub(crate) allowed_bytes: Option<MemoryDoc>,
    pub(crate) free_bytes: Option<MemoryDoc>,
    /// What the process's allocator held when it failed (the OOM's `allocated_bytes`).
    pub(crate) allocated_bytes: Option<MemoryDoc>,
    pub(crate) reserved_unallocated_bytes: Option<MemoryDoc>,
    pub(crate) private_pools_bytes: Option<MemoryDoc>,
    pub(crate) message: String,
    pub(crate) consequence_of: Option<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct FirstFailureDoc {
    pub(crate) rank: String,
    pub(crate) kind: FailureKindName,
    pub(crate) phase: PhaseName,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct RunOutcomeDoc {
    /// Numbered ranks (engine and API processes apart).
    pub(crate) ranks: usize,
    pub(crate) ready: bool,
    /// Ranks that failed on their own.
    pub(crate) failed_ranks: usize,
    /// Ranks per outcome.
    pub(crate) outcomes: BTreeMap<String, usize>,
    /// Ranks that ended the same way: own failures first, then what followed them.
    pub(crate) groups: Vec<FailureGroupDoc>,
    /// The root: the rank whose own failure came first (by time, then file order), or,
    /// with none, whose stall did. Consequences and logs that merely end never are.
    pub(crate) first_failure: Option<FirstFailureDoc>,
    pub(crate) launcher_failures: Vec<String>,
    /// Launcher lines that report a failure elsewhere.
    pub(crate) launcher_consequences: Vec<String>,
}

/// A memory field of the failure of a group's first rank, in the memory shape (the
/// group's figure is that rank's: `analysis::outcome` groups by it).
fn memory_doc(p: Option<PrintedBytes>) -> Option<MemoryDoc> {
    p.map(|p| MemoryDoc {
        bytes: p.bytes,
        resolution_bytes: p.step,
    })
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
                requested_bytes: memory_doc(g.oom.requested),
                allowed_bytes: memory_doc(g.oom.allowed),
                free_bytes: memory_doc(g.oom.free),
                allocated_bytes: memory_doc(g.oom.allocated),
                reserved_unallocated_bytes: memory_doc(g.oom.reserved_unallocated),
                private_pools_bytes: memory_doc(g.oom.private_pools),
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
        launcher_failures: (o.launcher_failures.iter())
            .map(|(message, _)| message.clone())
            .collect(),
        launcher_consequences: o.launcher_consequences.clone(),
    }
}

/// `rankscope diff --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DiffDoc {
    pub(crate) schema_version: u32,
    /// Always `diff`.
    pub(crate) command: String,
    /// The two runs' identities.
    pub(crate) baseline: IdentityDoc,
    pub(crate) candidate: IdentityDoc,
    pub(crate) status: StatusName,
    /// The exit code the command returns: 1 for `failed` and `regressed`, else 0.
    pub(crate) exit_code: i32,
    /// The verdict in one line, as the text output's first line.
    pub(crate) verdict: String,
    pub(crate) config: Option<ConfigDiffDoc>,
    /// Why the configurations could not be compared, when they could not.
    pub(crate) config_note: Option<String>,
    /// Environment toggles shown in the logs that differ (`null` side: not shown).
    pub(crate) env: Vec<EnvChangeDoc>,
    /// The candidate's root failure and the changes ranked against it (null when it has
    /// no root failure). The text leads its cause with it when the failure is not about
    /// memory.
    pub(crate) failure_cause: Option<FailureCauseDoc>,
    /// The first divergence attributed to allocation sites from the ranks' PyTorch
    /// snapshots; null when either run has none.
    pub(crate) attribution: Option<AttributionDoc>,
    /// What the snapshots say about a failure: each failing rank's OOM request and who
    /// else allocates there, fragmentation, the allocator settings compared. Null when
    /// snapshots were not read.
    pub(crate) snapshot_evidence: Option<SnapshotEvidenceDoc>,
    /// How the snapshots were read: which ranks they were matched to and on what, how
    /// their clocks were matched to the logs, which could not be used and why — the
    /// text's snapshot notes, worded the same.
    pub(crate) snapshot_notes: Vec<String>,
    /// What `summary` notes about each run as it was read (a file cut short, one that
    /// could not be read, events past a budget), worded the same.
    pub(crate) baseline_notes: Vec<String>,
    pub(crate) candidate_notes: Vec<String>,
    pub(crate) comparability: ComparabilityDoc,
    pub(crate) first_divergence: Option<DivergenceDoc>,
    pub(crate) effect: Option<EffectDoc>,
    pub(crate) figures: Vec<FigureDiffDoc>,
    pub(crate) baseline_outcome: RunOutcomeDoc,
    pub(crate) candidate_outcome: RunOutcomeDoc,
    /// The start-up's time compared: phase windows per rank, the first line to ready,
    /// and the findings the verdict names.
    pub(crate) time: TimeDiffDoc,
    /// For a failed candidate: the deficit of the failing phase and the settings that
    /// would cover it (null otherwise).
    pub(crate) remedies: Option<RemediesDoc>,
    /// Both runs' memory breakdowns and capacity, the categories that moved and what
    /// the changes cost in KV tokens and requests (as `summary --json`'s `memory`).
    pub(crate) memory: super::capacity::MemoryDiffDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct EnvChangeDoc {
    pub(crate) name: String,
    /// Null when the run did not print it: then `baseline_logged` says whether that
    /// means unset (the run printed its settings and reached ready) or not logged.
    pub(crate) baseline: Option<String>,
    pub(crate) candidate: Option<String>,
    pub(crate) baseline_logged: bool,
    pub(crate) candidate_logged: bool,
}

/// The candidate's root failure as the cause of a failure not about memory, and the
/// changes between the runs ranked against it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct FailureCauseDoc {
    pub(crate) rank: String,
    pub(crate) kind: String,
    pub(crate) phase: PhaseName,
    /// For a root whose own log says nothing of its end: who reported it dead (the line
    /// below is theirs).
    pub(crate) reported_by: Option<String>,
    /// The root's failure line.
    pub(crate) source: Option<String>,
    pub(crate) line: Option<u64>,
    pub(crate) message: Option<String>,
    /// Likeliest first.
    pub(crate) suspects: Vec<SuspectDoc>,
    /// The `cause` rows as the text prints them.
    pub(crate) text: Vec<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SuspectDoc {
    /// `config` or `env`.
    pub(crate) scope: &'static str,
    pub(crate) setting: String,
    /// `named` (a grammar lists it for this failure and the failure's lines hold one of
    /// its words or its value), `listed` (a grammar lists it), `other`.
    pub(crate) why: &'static str,
    /// For `named`: what tied it, the first of the suspect's words the failure's lines
    /// hold (as the grammar writes it), else the setting's new value (as printed).
    pub(crate) found: Option<String>,
    /// For `named`: the line that ties it, as printed, and where.
    pub(crate) said: Option<String>,
    pub(crate) source: Option<String>,
    pub(crate) line: Option<u64>,
    /// The change as the text prints it.
    pub(crate) change: String,
}

fn failure_cause_doc(
    d: &diff::RunDiff,
    fc: &crate::analysis::cause::FailureCause,
) -> FailureCauseDoc {
    use crate::analysis::cause::{Setting, SuspectWhy};
    FailureCauseDoc {
        rank: fc.rank.to_string(),
        kind: fc.kind.name().to_string(),
        phase: fc.phase.into(),
        reported_by: fc.reported_by.clone(),
        source: fc.quote.as_ref().map(|q| q.source.clone()),
        line: fc.quote.as_ref().map(|q| q.line),
        message: fc.quote.as_ref().map(|q| q.text.clone()),
        suspects: fc
            .suspects
            .iter()
            .map(|s| {
                let (why, found, said, source, line) = match &s.why {
                    SuspectWhy::Named {
                        found,
                        said,
                        source,
                        line,
                        ..
                    } => (
                        "named",
                        Some(found.clone()),
                        Some(said.clone()),
                        Some(source.clone()),
                        Some(*line),
                    ),
                    SuspectWhy::Listed => ("listed", None, None, None, None),
                    SuspectWhy::Other => ("other", None, None, None, None),
                };
                SuspectDoc {
                    scope: match s.setting {
                        Setting::Config(_) => "config",
                        Setting::Env(_) => "env",
                    },
                    setting: s.setting.name().to_string(),
                    why,
                    found,
                    said,
                    source,
                    line,
                    change: crate::render::text::cause::setting_change(d, &s.setting),
                }
            })
            .collect(),
        text: crate::render::text::cause::lines(d, fc),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SiteShareDoc {
    /// `init_custom_ar (model_runner.py)`: the first frame outside PyTorch.
    pub(crate) site: String,
    /// The same with the source lines it spans.
    pub(crate) label: String,
    /// The phase where the site first allocated, on the log's clock.
    pub(crate) phase: Option<PhaseName>,
    pub(crate) ranks: usize,
    /// Change in reserved bytes at this site, candidate − baseline, median over ranks
    /// (exact: from the snapshots).
    pub(crate) delta_reserved_bytes: MemoryDoc,
    pub(crate) delta_allocated_bytes: MemoryDoc,
    pub(crate) blocks: u64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct NewSegmentsDoc {
    pub(crate) site: String,
    pub(crate) count: u64,
    /// The segments' sizes added (exact).
    pub(crate) total_bytes: MemoryDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct AttributionDoc {
    pub(crate) phase: PhaseName,
    pub(crate) ranks_compared: usize,
    pub(crate) sites: Vec<SiteShareDoc>,
    /// Allocator-level change of reserved bytes in the phase (sum of its sites; exact).
    pub(crate) allocator_delta_reserved_bytes: MemoryDoc,
    /// Driver-level change from the log's figure (candidate − baseline: the figure's
    /// print step in both runs is its resolution).
    pub(crate) driver_delta_bytes: Option<MemoryDoc>,
    /// driver − allocator: memory PyTorch's allocator did not see (the driver delta's
    /// resolution: within ± half of it, indistinguishable from none).
    pub(crate) residual_bytes: Option<MemoryDoc>,
    pub(crate) new_segments: Vec<NewSegmentsDoc>,
    /// How the snapshot clock was matched to the log clock.
    pub(crate) clock: Vec<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct OomSiteDoc {
    pub(crate) rank: String,
    /// The OOM against the allocator's state then, as `mem --json` reports it.
    pub(crate) oom: crate::render::json::mem::OomAnalysisDoc,
    /// The other candidate ranks with a snapshot, and those that allocate at the site.
    pub(crate) other_ranks: Vec<String>,
    pub(crate) others_allocating: Vec<String>,
    /// Null without baseline snapshots.
    pub(crate) baseline_allocates: Option<bool>,
    /// No other rank and not the baseline allocate at the site.
    pub(crate) only_this_rank: bool,
    /// The cap the rank's OOM message printed, when it did, with its print step.
    pub(crate) allowed_bytes: Option<MemoryDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct AllocatorSettingChangeDoc {
    /// Dotted for nested settings: `roundup_power2_divisions.64`.
    pub(crate) key: String,
    /// The value as JSON text; null when that side does not record the key.
    pub(crate) baseline: Option<String>,
    pub(crate) candidate: Option<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SnapshotEvidenceDoc {
    pub(crate) oom_sites: Vec<OomSiteDoc>,
    /// Ranks whose OOM the snapshot shows as fragmentation.
    pub(crate) fragmented_ranks: Vec<String>,
    /// Whether both runs had a snapshot to compare allocator settings from.
    pub(crate) allocator_settings_compared: bool,
    pub(crate) allocator_settings: Vec<AllocatorSettingChangeDoc>,
}

pub(crate) fn snapshot_evidence_doc(
    candidate: &Run,
    e: &crate::analysis::attribute::SnapshotEvidence,
) -> SnapshotEvidenceDoc {
    let names = |v: &[crate::base::event::Rank]| v.iter().map(|r| r.to_string()).collect();
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
                // The rank's message's figure, for its print step (the same field
                // `o.allowed` was read from).
                allowed_bytes: o.allowed.map(|a| {
                    let step = (candidate.rank(&o.rank).and_then(|r| r.failure.as_ref()))
                        .and_then(|f| OomFigures::of(f).allowed)
                        .map_or(0, |p| p.step);
                    MemoryDoc::with_step(a, step)
                }),
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

pub(crate) fn attribution_doc(a: &crate::analysis::attribute::Attribution) -> AttributionDoc {
    // A delta of the log's figure between two runs: one print step on each side.
    let step = 2 * a.log_resolution.unwrap_or(0);
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
                delta_reserved_bytes: MemoryDoc::exact(s.delta_reserved.median.round() as i64),
                delta_allocated_bytes: MemoryDoc::exact(s.delta_allocated.median.round() as i64),
                blocks: s.blocks,
            })
            .collect(),
        allocator_delta_reserved_bytes: MemoryDoc::exact(a.allocator_delta_reserved),
        driver_delta_bytes: a.driver_delta.map(|d| MemoryDoc::with_step(d, step)),
        residual_bytes: a.residual.map(|r| MemoryDoc::with_step(r, step)),
        new_segments: a
            .new_segments
            .iter()
            .map(|(site, count, bytes)| NewSegmentsDoc {
                site: site.clone(),
                count: *count,
                total_bytes: MemoryDoc::exact(*bytes),
            })
            .collect(),
        clock: crate::render::text::diff::attribution_clock(a)
            .into_iter()
            .collect(),
    }
}

/// The `diff --json` document of a candidate (`c`) against its baseline (`b`), each with
/// its identity.
pub fn diff_doc(
    (b, b_id): (&Run, IdentityDoc),
    (c, c_id): (&Run, IdentityDoc),
    report: &crate::report::DiffReport,
) -> DiffDoc {
    let d = &report.diff;
    DiffDoc {
        schema_version: SCHEMA_VERSION,
        command: "diff".into(),
        baseline: b_id,
        candidate: c_id,
        status: d.status.into(),
        exit_code: d.status.exit_code(),
        verdict: crate::render::text::diff::headline(&d.headline),
        config: d.config.as_ref().map(config_doc),
        config_note: d
            .config_note
            .as_ref()
            .map(crate::render::text::diff::config_note),
        env: d
            .env
            .iter()
            .map(|e| EnvChangeDoc {
                name: e.name.clone(),
                baseline: e.baseline.clone(),
                candidate: e.candidate.clone(),
                baseline_logged: e.baseline_logged,
                candidate_logged: e.candidate_logged,
            })
            .collect(),
        failure_cause: d.failure_cause.as_ref().map(|fc| failure_cause_doc(d, fc)),
        attribution: report.attribution.as_ref().map(attribution_doc),
        snapshot_evidence: Some(snapshot_evidence_doc(c, &report.evidence)),
        snapshot_notes: (report.notes.iter())
            .map(crate::render::text::diff::snapshot_note)
            .collect(),
        baseline_notes: read_notes(&b.notes),
        candidate_notes: read_notes(&c.notes),
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
                .map(crate::render::text::diff::comparability_note)
                .collect(),
        },
        first_divergence: d.first_divergence.as_ref().map(|v| DivergenceDoc {
            phase: v.phase.into(),
            name: v.figure.to_string(),
            class: v.class.into(),
            ranks_moved: v.ranks_moved,
            ranks_compared: v.ranks_compared,
            delta: (&v.delta).into(),
            unit: unit_of(&v.figure),
            // The divergence is one of the compared figures: its print step is theirs.
            resolution: d
                .figures
                .iter()
                .find(|f| f.phase == v.phase && f.figure == v.figure)
                .and_then(|f| figure_resolution(&unit_of(&f.figure), f.resolution)),
            baseline_median: v.baseline_median,
            candidate_median: v.candidate_median,
        }),
        effect: d.effect.as_ref().map(|e| effect_doc(c, d, e)),
        figures: d.figures.iter().map(figure_diff_doc).collect(),
        baseline_outcome: outcome_doc(&d.baseline),
        candidate_outcome: outcome_doc(&d.candidate),
        time: time_doc(&d.time),
        remedies: (d.status == diff::Status::Failed).then(|| remedies_doc(&d.remedies)),
        memory: super::capacity::memory_diff_doc(b, c, &report.memory),
    }
}

/// What the first divergence cost, each memory quantity with its resolution: the
/// `kv_cache.avail_after` figure's print step (once per side, twice for the delta), and
/// for the KV bytes the candidate's `kv_size` step over its tokens, times the tokens.
fn effect_doc(candidate: &Run, d: &diff::RunDiff, e: &diff::Effect) -> EffectDoc {
    let pool_step = (d.figures.iter())
        .find(|f| f.phase == model::Phase::KvCache && f.figure == "avail_after")
        .map_or(0, |f| f.resolution.round() as u64);
    let kv_step = candidate.ranks.first().and_then(|r| {
        let tokens = r.kv_bytes_per_token()?.1;
        let step = r
            .figure(model::Phase::KvCache, "kv_size")?
            .value
            .resolution();
        Some(step as f64 / tokens as f64)
    });
    EffectDoc {
        kv_tokens_delta: e.kv_tokens_delta,
        kv_tokens_baseline: e.kv_tokens_baseline,
        // One byte more for the rounding to whole bytes.
        kv_delta_bytes: e.kv_bytes_delta.map(|b| {
            let tokens = e.kv_tokens_delta.unwrap_or(0).unsigned_abs() as f64;
            MemoryDoc::with_step(b, (tokens * kv_step.unwrap_or(0.0)).ceil() as u64 + 1)
        }),
        avail_after_pool_delta_bytes: e
            .avail_after_pool_delta
            .map(|b| MemoryDoc::with_step(b, 2 * pool_step)),
        avail_after_pool: e.avail_after_pool.map(|(b, c)| BaselineCandidate {
            baseline_bytes: MemoryDoc::with_step(b, pool_step),
            candidate_bytes: MemoryDoc::with_step(c, pool_step),
        }),
    }
}
