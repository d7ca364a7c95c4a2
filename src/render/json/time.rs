//! `diff --json`'s `time`: phase windows and the time to ready compared, with the
//! findings the verdict names (worded by `render::text::time`, as the text prints them).

use super::*;
use crate::analysis::timing;
use crate::base::units::Seconds;

/// The start-up's time, baseline against candidate. Seconds throughout.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct TimeDiffDoc {
    /// What a change had to exceed besides the stamps' resolution, as a fraction of the
    /// baseline's figure (`--time-tolerance`).
    pub(crate) tolerance: f64,
    /// From the run's first line to its last ready line; null unless both runs have both.
    pub(crate) to_ready: Option<ToReadyDoc>,
    /// Per phase, each rank's window (from its previous phase's end to this one's end).
    pub(crate) phases: Vec<PhaseTimeDoc>,
    /// The changes the verdict names, in start-up order.
    pub(crate) findings: Vec<TimeFindingDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct ToReadyDoc {
    pub(crate) unit: &'static str,
    pub(crate) baseline: f64,
    pub(crate) candidate: f64,
    pub(crate) delta: f64,
    /// The change had to exceed this (stamps' resolution or tolerance, the larger).
    pub(crate) threshold: f64,
    /// Beyond the threshold: a finding.
    pub(crate) changed: bool,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct PhaseTimeDoc {
    pub(crate) phase: PhaseName,
    pub(crate) unit: &'static str,
    /// `same`, `systematic` or `local`.
    pub(crate) class: &'static str,
    pub(crate) ranks_compared: usize,
    pub(crate) ranks_moved: usize,
    pub(crate) baseline: SpreadDoc,
    pub(crate) candidate: SpreadDoc,
    pub(crate) delta: SpreadDoc,
    /// The widest resolution of one rank's comparison (both windows' stamp steps).
    pub(crate) resolution: f64,
    pub(crate) per_rank: Vec<RankTimeDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct RankTimeDoc {
    pub(crate) rank: String,
    pub(crate) baseline: f64,
    pub(crate) candidate: f64,
    pub(crate) delta: f64,
    /// The change of the time before the phase's first line; null when either run's
    /// phase printed no line before its end.
    pub(crate) before_first_line_delta: Option<f64>,
    pub(crate) threshold: f64,
    pub(crate) changed: bool,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct TimeFindingDoc {
    /// `systematic` (most ranks) or `rank` (one rank).
    pub(crate) scope: &'static str,
    pub(crate) phase: PhaseName,
    /// For `rank` findings.
    pub(crate) rank: Option<String>,
    pub(crate) delta: f64,
    pub(crate) baseline: f64,
    pub(crate) candidate: f64,
    /// The candidate's `summary` names the rank a straggler in this phase.
    pub(crate) straggler: bool,
    /// The rank waited for another's delay (`[rank, phase]`): not a cause.
    pub(crate) waited_for: Option<(String, PhaseName)>,
    /// As the text prints it.
    pub(crate) text: String,
}

pub(crate) fn time_doc(t: &timing::TimeDiff) -> TimeDiffDoc {
    TimeDiffDoc {
        tolerance: t.tolerance,
        to_ready: t.to_ready.as_ref().map(|r| ToReadyDoc {
            unit: "seconds",
            baseline: r.baseline_s.get(),
            candidate: r.candidate_s.get(),
            delta: r.delta_s.get(),
            threshold: r.threshold_s.get(),
            changed: r.beyond,
        }),
        phases: t
            .phases
            .iter()
            .map(|p| PhaseTimeDoc {
                phase: p.phase.into(),
                unit: "seconds",
                class: p.class.name(),
                ranks_compared: p.ranks_compared,
                ranks_moved: p.ranks_moved,
                baseline: (&p.baseline).into(),
                candidate: (&p.candidate).into(),
                delta: (&p.delta).into(),
                resolution: p.resolution_s.get(),
                per_rank: p
                    .per_rank
                    .iter()
                    .map(|r| RankTimeDoc {
                        rank: r.rank.to_string(),
                        baseline: r.baseline_s.get(),
                        candidate: r.candidate_s.get(),
                        delta: r.delta_s.get(),
                        before_first_line_delta: r.before_first_line_delta_s.map(Seconds::get),
                        threshold: r.threshold_s.get(),
                        changed: r.beyond,
                    })
                    .collect(),
            })
            .collect(),
        findings: t.findings.iter().map(finding_doc).collect(),
    }
}

fn finding_doc(f: &timing::TimeFinding) -> TimeFindingDoc {
    let text = crate::render::text::time::finding(f);
    match f {
        timing::TimeFinding::Systematic {
            phase,
            baseline_s,
            candidate_s,
            delta_s,
            ..
        } => TimeFindingDoc {
            scope: "systematic",
            phase: (*phase).into(),
            rank: None,
            delta: delta_s.get(),
            baseline: baseline_s.get(),
            candidate: candidate_s.get(),
            straggler: false,
            waited_for: None,
            text,
        },
        timing::TimeFinding::Rank {
            rank,
            phase,
            baseline_s,
            candidate_s,
            delta_s,
            straggler,
            waited_for,
            ..
        } => TimeFindingDoc {
            scope: "rank",
            phase: (*phase).into(),
            rank: Some(rank.to_string()),
            delta: delta_s.get(),
            baseline: baseline_s.get(),
            candidate: candidate_s.get(),
            straggler: *straggler,
            waited_for: waited_for
                .as_ref()
                .map(|(r, p)| (r.to_string(), (*p).into())),
            text,
        },
    }
}

/// A memory failure's deficit and the settings that would cover it. Bytes throughout.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct RemediesDoc {
    pub(crate) deficit: Option<DeficitDoc>,
    pub(crate) remedies: Vec<RemedyDoc>,
    /// The `remedy` rows as the text prints them.
    pub(crate) text: Vec<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct DeficitDoc {
    pub(crate) phase: PhaseName,
    /// What the phase needed and what was left, each with its print step.
    pub(crate) need_bytes: MemoryDoc,
    pub(crate) have_bytes: MemoryDoc,
    /// `need − have` (`need` when as much was free as asked: no block large enough), its
    /// resolution the sum of theirs.
    pub(crate) deficit_bytes: MemoryDoc,
    /// `baseline_phase` (the baseline's figure of the phase against what was left) or
    /// `oom_request` (the failed request against the OOM's free memory: a lower bound).
    pub(crate) basis: &'static str,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct RemedyDoc {
    pub(crate) setting: String,
    /// `pool_fraction`, `skip_phase` or `revert`.
    pub(crate) kind: &'static str,
    /// The value now and the value proposed, as the configuration prints them.
    pub(crate) from: Option<String>,
    pub(crate) to: Option<String>,
    /// What it frees for the failing phase, when the figures say.
    pub(crate) frees_bytes: Option<MemoryDoc>,
    /// For `pool_fraction`: the memory the fraction scales, and the KV tokens per rank it
    /// costs.
    pub(crate) total_bytes: Option<MemoryDoc>,
    pub(crate) tokens_lost: Option<i64>,
    /// For `pool_fraction`: `follows`, `differs` or `unchecked`.
    pub(crate) rule_check: Option<&'static str>,
    /// For `pool_fraction`: `from` is the grammar's default for a setting the
    /// configuration did not print.
    pub(crate) from_default: Option<bool>,
}

pub(crate) fn remedies_doc(r: &crate::analysis::remedy::Remedies) -> RemediesDoc {
    use crate::analysis::remedy::{DeficitBasis, RemedyKind, RuleCheck};
    RemediesDoc {
        deficit: r.deficit.as_ref().map(|d| DeficitDoc {
            phase: d.phase.into(),
            need_bytes: MemoryDoc::with_step(d.need, d.need_step),
            have_bytes: MemoryDoc::with_step(d.have, d.have_step),
            deficit_bytes: MemoryDoc::with_step(
                d.deficit,
                if d.need > d.have {
                    d.need_step + d.have_step
                } else {
                    d.need_step
                },
            ),
            basis: match d.basis {
                DeficitBasis::BaselinePhase => "baseline_phase",
                DeficitBasis::OomRequest => "oom_request",
            },
        }),
        remedies: r
            .remedies
            .iter()
            .map(|x| {
                let (kind, from, to, total, tokens_lost, rule_check) = match &x.kind {
                    RemedyKind::PoolFraction {
                        total,
                        from,
                        to,
                        check,
                        tokens_lost,
                        ..
                    } => (
                        "pool_fraction",
                        Some(from.to_string()),
                        Some(to.to_string()),
                        Some(MemoryDoc::with_step(total.bytes, total.step)),
                        *tokens_lost,
                        Some(match check {
                            RuleCheck::Follows { .. } => "follows",
                            RuleCheck::Differs { .. } => "differs",
                            RuleCheck::Unchecked => "unchecked",
                        }),
                    ),
                    RemedyKind::SkipPhase { from, value, .. } => (
                        "skip_phase",
                        Some(from.clone()),
                        Some(value.clone()),
                        None,
                        None,
                        None,
                    ),
                    RemedyKind::Revert { from, to, .. } => (
                        "revert",
                        Some(from.clone()),
                        Some(to.clone()),
                        None,
                        None,
                        None,
                    ),
                };
                RemedyDoc {
                    setting: x.setting.clone(),
                    kind,
                    from,
                    to,
                    frees_bytes: x.frees.map(|f| MemoryDoc::with_step(f, x.frees_step)),
                    total_bytes: total,
                    tokens_lost,
                    rule_check,
                    from_default: match &x.kind {
                        RemedyKind::PoolFraction { from_default, .. } => Some(*from_default),
                        _ => None,
                    },
                }
            })
            .collect(),
        text: crate::render::text::remedy::lines(r),
    }
}
