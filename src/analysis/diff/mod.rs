//! Baseline against candidate: which figure moved first, on which ranks, by how much,
//! what it cost, and where each run stopped.
//!
//! The verdict and its headline are here; the jobs it is made of live beside it:
//! `figures` (the compared figures, their classes, the first divergence and its effect),
//! `comparability` (common ranks and the limits of the comparison) and `config` (the
//! configurations, key by key).

mod comparability;
mod config;
mod figures;

use super::env::env_changes;
pub(crate) use super::env::EnvChange;
use crate::base::units::{ByteDelta, Seconds};

use crate::base::event::Rank;
use crate::model::config::ConfigDiff;
use crate::model::{FailureKind, Phase, Run};

pub use super::outcome::{outcome, FailureGroup, FailureStory, RunOutcome, StoryRoot};
use comparability::comparability;
pub use comparability::{Comparability, ComparabilityNote, Side};
use config::compare_config;
pub use config::ConfigNote;
pub(crate) use figures::FigureLine;
use figures::{compare_figures, effect, first_divergence};
pub use figures::{DeltaClass, Divergence, Effect, FigureDiff, RankDelta};

/// The verdict of a diff, and the exit code it gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Nothing beyond noise.
    Same,
    /// The candidate fails where the baseline did not (or fails too).
    Failed,
    /// No failure, but less capacity or more memory used.
    Regressed,
    /// Only changes for the better.
    Improved,
    /// The candidate's log ends before ready and nothing says why: no verdict either way.
    Incomplete,
}

impl Status {
    /// The process exit code: 0 same or improved, 1 failed or regressed, 3 incomplete.
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Same | Status::Improved => 0,
            Status::Failed | Status::Regressed => 1,
            Status::Incomplete => 3,
        }
    }
    pub(crate) fn label(self) -> &'static str {
        match self {
            Status::Same => "SAME",
            Status::Failed => "FAILED",
            Status::Regressed => "REGRESSED",
            Status::Improved => "IMPROVED",
            Status::Incomplete => "INCOMPLETE",
        }
    }
}

/// How the baseline ended, as a failed or incomplete candidate's headline names it.
#[derive(Clone, Debug, PartialEq)]
pub enum BaselineEnd {
    /// It reached ready.
    Ready,
    /// It failed as well: its root rank, failure kind and phase.
    FailedToo {
        /// The baseline's root rank.
        rank: Rank,
        /// The kind of the baseline's root failure.
        kind: FailureKind,
        /// The phase the baseline's root rank failed in.
        phase: Phase,
        /// The phase it had completed, when the failure is placed in the next one only
        /// because of that (`after kv_cache, before ready`: it never served).
        after: Option<Phase>,
    },
    /// Its log ends before ready with nothing said.
    EndsBeforeReady,
    /// It did not reach ready, with no failure and no rank left incomplete.
    NotReady,
}

/// What a regressed candidate lost: capacity, time, or both.
#[derive(Clone, Debug, PartialEq)]
pub struct Regression {
    /// `None` when no memory figure got worse.
    pub(crate) capacity: Option<CapacityLoss>,
    /// The start-up got slower: the first line to ready (when both runs have it) and the
    /// finding that leads.
    pub(crate) slower: Option<SlowerStartup>,
}

/// A start-up that became slower, as the headline names it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SlowerStartup {
    /// Baseline and candidate seconds from the first line to ready, when both are known
    /// and the change is beyond resolution and tolerance.
    pub(crate) to_ready: Option<(Seconds, Seconds)>,
    pub(crate) lead: Option<super::timing::TimeFinding>,
}

/// What a regressed candidate lost in memory.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum CapacityLoss {
    /// KV tokens per rank lost (positive), and their bytes when known.
    KvTokens {
        tokens: i64,
        bytes: Option<ByteDelta>,
    },
    /// Less free memory after the KV pool (positive bytes).
    FreeAfterPool { bytes: ByteDelta },
    /// Less capacity, by a figure the effect does not name.
    Unnamed,
}

/// The verdict's headline, as facts.
#[derive(Clone, Debug, PartialEq)]
pub enum Headline {
    /// The candidate failed: its failure story and how the baseline ended.
    Failed {
        /// The candidate's root failure and what followed it.
        story: FailureStory,
        /// How the baseline ended.
        baseline: BaselineEnd,
    },
    /// The candidate's log ends before ready and nothing says why.
    Incomplete {
        /// Ranks that did not finish.
        incomplete: usize,
        /// Ranks in all.
        ranks: usize,
        /// How the baseline ended.
        baseline: BaselineEnd,
    },
    /// No failure, but something was lost.
    Regressed(Regression),
    /// Only changes for the better.
    Improved,
    /// Nothing beyond noise.
    Same,
}

/// A candidate run compared with its baseline: every fact `diff` reports, typed.
#[derive(Clone, Debug, PartialEq)]
pub struct RunDiff {
    /// The verdict.
    pub status: Status,
    /// What the verdict line says, as facts.
    pub headline: Headline,
    /// `server_args` (or the vLLM engine config) of the two runs, key by key.
    pub config: Option<ConfigDiff>,
    /// Why the configurations could not be compared, when they could not.
    pub config_note: Option<ConfigNote>,
    /// Environment toggles the logs show (`NCCL_… set by environment to …`) that differ.
    pub env: Vec<EnvChange>,
    /// What the runs share, and the limits of the comparison.
    pub comparability: Comparability,
    /// Every figure compared, phase by phase.
    pub figures: Vec<FigureDiff>,
    /// Where the runs first part, if they do.
    pub first_divergence: Option<Divergence>,
    /// What the first divergence cost further on.
    pub effect: Option<Effect>,
    pub(crate) baseline: RunOutcome,
    /// Where the candidate's ranks stopped, grouped by failure.
    pub candidate: RunOutcome,
    /// Phase windows and the time to ready, compared.
    pub time: super::timing::TimeDiff,
    /// The candidate's root failure and the changes ranked against it.
    pub failure_cause: Option<super::cause::FailureCause>,
    /// For a memory failure: the deficit and the settings that would cover it.
    pub remedies: super::remedy::Remedies,
}

/// How `diff` compares: what a time change must exceed besides the stamps' resolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiffOptions {
    /// A fraction of the baseline's figure (0.2: 20 %).
    pub time_tolerance: f64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            time_tolerance: super::timing::DEFAULT_TOLERANCE,
        }
    }
}

/// The diff with the default options.
pub fn diff(baseline: &Run, candidate: &Run) -> RunDiff {
    diff_with(baseline, candidate, DiffOptions::default())
}

/// Compares `candidate` with `baseline`: status, headline, figures, timings, config,
/// environment and cause.
pub fn diff_with(baseline: &Run, candidate: &Run, options: DiffOptions) -> RunDiff {
    let (comparability, common) = comparability(baseline, candidate);
    let figures = if comparability.memory_compared {
        compare_figures(baseline, candidate, &common)
    } else {
        Vec::new()
    };
    let first_divergence = first_divergence(&figures);
    let effect = first_divergence
        .as_ref()
        .map(|_| effect(candidate, &figures));

    let b_out = outcome(baseline);
    let c_out = outcome(candidate);
    let time = super::timing::compare(baseline, candidate, options.time_tolerance);
    let (status, any_worse) = status(&c_out, &figures, &time);
    let headline = headline(status, &b_out, &c_out, effect.as_ref(), any_worse, &time);
    let (config, config_note) = compare_config(baseline, candidate);
    let env = env_changes(baseline, candidate);
    let failure_cause = super::cause::failure_cause(candidate, config.as_ref(), &env);
    let mut remedies = super::remedy::remedies(Some(baseline), candidate, config.as_ref());
    if let Some(fc) = &failure_cause {
        super::remedy::order_reverts(&mut remedies, fc);
    }
    RunDiff {
        status,
        headline,
        config,
        config_note,
        env,
        comparability,
        figures,
        first_divergence,
        effect,
        baseline: b_out,
        candidate: c_out,
        time,
        failure_cause,
        remedies,
    }
}

/// The verdict on the candidate against the baseline, and whether a figure moved the
/// worse way.
fn status(
    c_out: &RunOutcome,
    figures: &[FigureDiff],
    time: &super::timing::TimeDiff,
) -> (Status, bool) {
    let any_worse = figures.iter().any(|f| f.class.is_signal() && f.worse);
    let any_signal = figures.iter().any(|f| f.class.is_signal());
    let status = if c_out.failed() {
        Status::Failed
    } else if !c_out.ready && c_out.incomplete > 0 {
        Status::Incomplete
    } else if any_worse || time.slower() {
        Status::Regressed
    } else if any_signal || time.faster() {
        Status::Improved
    } else {
        Status::Same
    };
    (status, any_worse)
}

fn headline(
    status: Status,
    b: &RunOutcome,
    c: &RunOutcome,
    effect: Option<&Effect>,
    memory_worse: bool,
    time: &super::timing::TimeDiff,
) -> Headline {
    let baseline = if b.ready {
        BaselineEnd::Ready
    } else if let Some((rank, kind, phase)) = &b.first_failure {
        BaselineEnd::FailedToo {
            rank: rank.clone(),
            kind: *kind,
            phase: *phase,
            after: b.root_after,
        }
    } else if b.incomplete > 0 {
        BaselineEnd::EndsBeforeReady
    } else {
        BaselineEnd::NotReady
    };
    match status {
        Status::Failed => Headline::Failed {
            story: c.story.clone(),
            baseline,
        },
        Status::Incomplete => Headline::Incomplete {
            incomplete: c.incomplete,
            ranks: c.ranks,
            baseline,
        },
        Status::Regressed => {
            let loss = effect.filter(|_| memory_worse).and_then(|e| {
                if let Some(d) = e.kv_tokens_delta.filter(|d| *d < 0) {
                    Some(CapacityLoss::KvTokens {
                        tokens: -d,
                        bytes: e.kv_bytes_delta.map(|b| -b),
                    })
                } else {
                    e.avail_after_pool_delta
                        .filter(|d| *d < ByteDelta::ZERO)
                        .map(|d| CapacityLoss::FreeAfterPool { bytes: -d })
                }
            });
            let slower = time.slower().then(|| SlowerStartup {
                to_ready: time
                    .to_ready
                    .as_ref()
                    .filter(|t| t.beyond && t.delta_s.is_positive())
                    .map(|t| (t.baseline_s, t.candidate_s)),
                lead: time.lead().cloned(),
            });
            let capacity = match (loss, memory_worse) {
                (Some(l), _) => Some(l),
                (None, true) => Some(CapacityLoss::Unnamed),
                (None, false) => None,
            };
            Headline::Regressed(Regression { capacity, slower })
        }
        Status::Improved => Headline::Improved,
        Status::Same => Headline::Same,
    }
}
