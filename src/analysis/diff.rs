//! Baseline against candidate: which figure moved first, on which ranks, by how much,
//! what it cost, and where each run stopped.

use super::env::env_changes;
pub(crate) use super::env::EnvChange;
use crate::base::units::{ByteDelta, Seconds};
use std::collections::HashMap;

use super::align::Spread;
use crate::base::event::{BuiltinFigure, FigureName, Rank, WorseWhen};
use crate::model::config::{self, Config, ConfigDiff};
use crate::model::{FailureKind, Figure, Phase, RankRun, Run};

pub use super::outcome::{outcome, FailureGroup, FailureStory, RunOutcome, StoryRoot};

/// The built-in figures compared, in start-up order; which direction is worse is the
/// figure's own (`base::event::BUILTIN_FIGURES`). Durations are compared by
/// `analysis::timing`, not as `elapsed` figures. A figure a grammar declared is compared in
/// every phase that reports it, after that phase's built-in ones (`compared_figures`).
pub(crate) const COMPARED: &[(Phase, BuiltinFigure)] = &[
    (Phase::DistInit, BuiltinFigure::MemUsage),
    (Phase::WeightLoad, BuiltinFigure::AvailBefore),
    (Phase::WeightLoad, BuiltinFigure::AvailAfter),
    (Phase::WeightLoad, BuiltinFigure::MemUsage),
    (Phase::KvCache, BuiltinFigure::KvAvail),
    (Phase::KvCache, BuiltinFigure::Tokens),
    (Phase::KvCache, BuiltinFigure::KvSize),
    (Phase::KvCache, BuiltinFigure::AvailAfter),
    (Phase::CudaGraph, BuiltinFigure::AvailBefore),
    (Phase::CudaGraph, BuiltinFigure::MemUsage),
    (Phase::CudaGraph, BuiltinFigure::AvailAfter),
];

/// The figures `diff` compares, in start-up order: per phase, `COMPARED`'s entries and any
/// other built-in figure (but `elapsed`) either run reports there — a grammar may map
/// `avail_before` onto a phase no built-in grammar prints it in, and a figure summary
/// shows must not go uncompared (issue #28); such an `avail_before` comes first, as free
/// memory is read as the phase begins —, then the declared ones (each group in the order
/// the baseline, then the candidate, first lists them).
fn compared_figures(baseline: &Run, candidate: &Run) -> Vec<(Phase, FigureName)> {
    let mut out: Vec<(Phase, FigureName)> = Vec::new();
    for phase in Phase::ALL {
        let mut builtin: Vec<FigureName> = (COMPARED.iter().filter(|(p, _)| *p == phase))
            .map(|&(_, f)| FigureName::Builtin(f))
            .collect();
        let mut declared: Vec<FigureName> = Vec::new();
        for run in [baseline, candidate] {
            for r in &run.ranks {
                let Some(span) = r.phase(phase) else {
                    continue;
                };
                for f in &span.figures {
                    let list = match &f.name {
                        FigureName::Declared(_) => &mut declared,
                        FigureName::Builtin(BuiltinFigure::Elapsed) => continue,
                        FigureName::Builtin(BuiltinFigure::AvailBefore)
                            if !builtin.contains(&f.name) =>
                        {
                            builtin.insert(0, f.name.clone());
                            continue;
                        }
                        FigureName::Builtin(_) => &mut builtin,
                    };
                    if !list.contains(&f.name) {
                        list.push(f.name.clone());
                    }
                }
            }
        }
        out.extend(builtin.into_iter().chain(declared).map(|n| (phase, n)));
    }
    out
}

/// How the ranks moved on one figure between the runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeltaClass {
    /// No rank moved.
    Same,
    /// Within the printed resolution, and not all ranks the same way.
    Noise,
    /// At least 3/4 of the ranks moved the same way beyond noise, or every rank moved the
    /// same way at all.
    Systematic,
    /// Some ranks only.
    Local,
}

impl DeltaClass {
    pub(crate) fn name(self) -> &'static str {
        match self {
            DeltaClass::Same => "same",
            DeltaClass::Noise => "noise",
            DeltaClass::Systematic => "systematic",
            DeltaClass::Local => "local",
        }
    }
    pub(crate) fn is_signal(self) -> bool {
        matches!(self, DeltaClass::Systematic | DeltaClass::Local)
    }
}

/// One rank's value of a figure in both runs.
#[derive(Clone, Debug, PartialEq)]
pub struct RankDelta {
    pub(crate) rank: Rank,
    /// The baseline's value.
    pub baseline: f64,
    /// The candidate's value.
    pub candidate: f64,
    pub(crate) delta: f64,
    /// Beyond one print step.
    pub(crate) beyond_noise: bool,
}

/// One figure of one phase compared across the ranks both runs have.
#[derive(Clone, Debug, PartialEq)]
pub struct FigureDiff {
    /// The phase that reported the figure.
    pub phase: Phase,
    /// Which figure.
    pub figure: FigureName,
    pub(crate) is_bytes: bool,
    /// One print step (bytes for memory); deltas within it are noise.
    pub(crate) resolution: f64,
    /// How the ranks moved on it.
    pub class: DeltaClass,
    pub(crate) ranks_compared: usize,
    /// Ranks that moved beyond noise in the dominant direction.
    pub ranks_moved: usize,
    pub(crate) baseline_median: f64,
    pub(crate) candidate_median: f64,
    pub(crate) delta: Spread,
    /// The candidate is worse on this figure (more used, less free, fewer tokens).
    pub(crate) worse: bool,
    /// Each compared rank's value in both runs.
    pub per_rank: Vec<RankDelta>,
    /// Baseline and candidate lines of the first rank, for `--explain` (`None` inside:
    /// the line is not among the run's events).
    pub(crate) baseline_line: Option<Option<FigureLine>>,
    pub(crate) candidate_line: Option<Option<FigureLine>>,
}

/// The first figure, in start-up order, that changed beyond noise: where the runs part.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    /// The phase it belongs to.
    pub phase: Phase,
    /// The figure that changed.
    pub figure: FigureName,
    /// How the ranks moved on it (systematic or local).
    pub class: DeltaClass,
    /// Ranks that moved beyond noise in the dominant direction.
    pub ranks_moved: usize,
    /// Ranks both runs have the figure for.
    pub ranks_compared: usize,
    /// The change across the compared ranks: min, median, max.
    pub delta: Spread,
    pub(crate) is_bytes: bool,
    pub(crate) baseline_median: f64,
    pub(crate) candidate_median: f64,
}

/// What the first divergence cost further on.
#[derive(Clone, Debug, PartialEq)]
pub struct Effect {
    /// Median change in KV tokens per rank (negative: lost).
    pub kv_tokens_delta: Option<i64>,
    pub(crate) kv_tokens_baseline: Option<i64>,
    /// The same in bytes, from the candidate's bytes per token.
    pub(crate) kv_bytes_delta: Option<ByteDelta>,
    /// Median change of free memory after the KV pool.
    pub(crate) avail_after_pool_delta: Option<ByteDelta>,
    /// Median free memory after the KV pool, baseline and candidate (bytes).
    pub avail_after_pool: Option<(i64, i64)>,
}

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

/// What the two runs share, and what keeps them from being compared in full.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparability {
    pub(crate) common_ranks: usize,
    /// Ranks only the baseline has.
    pub only_in_baseline: Vec<Rank>,
    pub(crate) only_in_candidate: Vec<Rank>,
    /// Per-rank memory is compared only when the rank sets match.
    pub memory_compared: bool,
    /// Each limit of the comparison, as facts.
    pub notes: Vec<ComparabilityNote>,
}

/// Which of the two runs of a diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The run compared against.
    Baseline,
    /// The run under question.
    Candidate,
}

/// What limits a comparison, as facts; `render` words them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ComparabilityNote {
    /// A run gave no start-up event at all.
    NoEvents {
        /// Which run.
        side: Side,
        /// Its name (the path given).
        run: String,
    },
    /// Lines of either run that no grammar understood.
    NotUnderstood {
        /// The baseline's lines no grammar understood.
        baseline_lines: u64,
        /// The candidate's lines no grammar understood.
        candidate_lines: u64,
    },
    /// Both runs have ranks in common but not the same set: per-rank memory is not
    /// compared.
    RankSetsDiffer {
        /// Ranks the baseline has.
        baseline_ranks: usize,
        /// Ranks the candidate has.
        candidate_ranks: usize,
    },
    /// Both runs have ranks, none of the same name.
    NoCommonRanks,
    /// The server grammars that gave each run's events differ.
    DifferentServers {
        /// The baseline's server grammars.
        baseline: Vec<String>,
        /// The candidate's server grammars.
        candidate: Vec<String>,
    },
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

/// Why the configurations could not be compared in full.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigNote {
    /// A run has no configuration line.
    Missing {
        /// The run's name (the path given).
        run: String,
    },
    /// A run's configuration line could not be read.
    Unreadable {
        /// The run's name (the path given).
        run: String,
        /// Why the line could not be read.
        error: String,
    },
    /// A run's line is cut short: keys after the cut are not compared.
    CutShort {
        /// The baseline's line is cut.
        baseline: bool,
        /// The candidate's line is cut.
        candidate: bool,
    },
}

/// The log line a figure was read from: source, line number and message.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FigureLine {
    pub(crate) source: String,
    pub(crate) line: u64,
    pub(crate) message: String,
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

/// The line a figure was read from, for `--explain`.
fn figure_line(run: &Run, f: &Figure) -> Option<FigureLine> {
    run.events
        .iter()
        .find(|e| e.origin == f.origin)
        .map(|e| FigureLine {
            source: run.source_name(&f.origin).to_string(),
            line: f.origin.line,
            message: e.message.to_string(),
        })
}

fn classify(per_rank: &[RankDelta]) -> (DeltaClass, usize) {
    let n = per_rank.len();
    if n == 0 || per_rank.iter().all(|d| d.delta == 0.0) {
        return (DeltaClass::Same, 0);
    }
    let up = per_rank
        .iter()
        .filter(|d| d.beyond_noise && d.delta > 0.0)
        .count();
    let down = per_rank
        .iter()
        .filter(|d| d.beyond_noise && d.delta < 0.0)
        .count();
    let moved = up.max(down);
    let all_same_way =
        per_rank.iter().all(|d| d.delta > 0.0) || per_rank.iter().all(|d| d.delta < 0.0);
    if moved * 4 >= n * 3 || (all_same_way && n >= 2) {
        let same_way = if all_same_way { n } else { moved };
        return (DeltaClass::Systematic, same_way);
    }
    if up + down > 0 {
        return (DeltaClass::Local, up + down);
    }
    (DeltaClass::Noise, 0)
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

/// Which ranks the two runs share, and what makes them less than comparable: a run with
/// no events, lines not understood, rank sets that differ, different servers. The common
/// ranks are returned in the baseline's order.
fn comparability<'a>(baseline: &'a Run, candidate: &Run) -> (Comparability, Vec<&'a Rank>) {
    // Sets, not `Vec::contains`: a run may name tens of thousands of ranks.
    let b_ranks: Vec<&Rank> = baseline.ranks.iter().map(|r| &r.rank).collect();
    let c_ranks: Vec<&Rank> = candidate.ranks.iter().map(|r| &r.rank).collect();
    let b_set: std::collections::HashSet<&Rank> = b_ranks.iter().copied().collect();
    let c_set: std::collections::HashSet<&Rank> = c_ranks.iter().copied().collect();
    let common: Vec<&Rank> = b_ranks
        .iter()
        .copied()
        .filter(|r| c_set.contains(r))
        .collect();
    let only_in_baseline: Vec<Rank> = b_ranks
        .iter()
        .filter(|r| !c_set.contains(*r))
        .map(|r| (*r).clone())
        .collect();
    let only_in_candidate: Vec<Rank> = c_ranks
        .iter()
        .filter(|r| !b_set.contains(*r))
        .map(|r| (*r).clone())
        .collect();
    let mut notes = Vec::new();
    let memory_compared =
        !common.is_empty() && only_in_baseline.is_empty() && only_in_candidate.is_empty();
    if baseline.events.is_empty() {
        notes.push(ComparabilityNote::NoEvents {
            side: Side::Baseline,
            run: baseline.name.clone(),
        });
    }
    if candidate.events.is_empty() {
        notes.push(ComparabilityNote::NoEvents {
            side: Side::Candidate,
            run: candidate.name.clone(),
        });
    }
    let (ub, uc) = (baseline.counts().unknown, candidate.counts().unknown);
    if ub + uc > 0 {
        notes.push(ComparabilityNote::NotUnderstood {
            baseline_lines: ub,
            candidate_lines: uc,
        });
    }
    if !memory_compared && !common.is_empty() {
        notes.push(ComparabilityNote::RankSetsDiffer {
            baseline_ranks: b_ranks.len(),
            candidate_ranks: c_ranks.len(),
        });
    } else if common.is_empty() && !b_ranks.is_empty() && !c_ranks.is_empty() {
        notes.push(ComparabilityNote::NoCommonRanks);
    }
    if !baseline.grammars.is_empty() && !candidate.grammars.is_empty() {
        let (bs, cs) = (&baseline.servers, &candidate.servers);
        if !bs.is_empty() && !cs.is_empty() && bs != cs {
            notes.push(ComparabilityNote::DifferentServers {
                baseline: bs.clone(),
                candidate: cs.clone(),
            });
        }
    }
    let comparability = Comparability {
        common_ranks: common.len(),
        only_in_baseline,
        only_in_candidate,
        memory_compared,
        notes,
    };
    (comparability, common)
}

/// Every compared figure (`COMPARED`) that both runs report for at least one common rank,
/// with its per-rank deltas and how they move together.
fn compare_figures(baseline: &Run, candidate: &Run, common: &[&Rank]) -> Vec<FigureDiff> {
    // Each common rank's two rows, looked up once: per figure and rank a search of the
    // rank list (string comparisons) was most of a diff of thousands of ranks.
    let b_rows: HashMap<&Rank, &RankRun> = baseline.ranks.iter().map(|r| (&r.rank, r)).collect();
    let c_rows: HashMap<&Rank, &RankRun> = candidate.ranks.iter().map(|r| (&r.rank, r)).collect();
    let rows: Vec<(&Rank, &RankRun, &RankRun)> = common
        .iter()
        .filter_map(|&r| Some((r, *b_rows.get(r)?, *c_rows.get(r)?)))
        .collect();
    let mut figures = Vec::new();
    for (phase, figure) in compared_figures(baseline, candidate) {
        let name = figure.name();
        let mut per_rank = Vec::new();
        let mut resolution: f64 = 0.0;
        let mut is_bytes = false;
        let mut texts = (None, None);
        for &(r, b_row, c_row) in &rows {
            let (Some(bf), Some(cf)) = (b_row.figure(phase, name), c_row.figure(phase, name))
            else {
                continue;
            };
            let (bv, cv) = (&bf.value, &cf.value);
            let (Some(b), Some(c)) = (bv.as_f64(), cv.as_f64()) else {
                continue;
            };
            is_bytes |= bv.as_bytes().is_some();
            let step = bv.resolution().max(cv.resolution()) as f64;
            resolution = resolution.max(step);
            // The lines behind the first rank's figures; searching them for every rank
            // would cost events × ranks per figure.
            if texts.0.is_none() {
                texts = (
                    Some(figure_line(baseline, bf)),
                    Some(figure_line(candidate, cf)),
                );
            }
            let delta = c - b;
            per_rank.push(RankDelta {
                rank: r.clone(),
                baseline: b,
                candidate: c,
                delta,
                beyond_noise: delta.abs() > step * 1.01,
            });
        }
        if per_rank.is_empty() {
            continue;
        }
        let (class, ranks_moved) = classify(&per_rank);
        let mut deltas: Vec<f64> = per_rank.iter().map(|d| d.delta).collect();
        let mut bs: Vec<f64> = per_rank.iter().map(|d| d.baseline).collect();
        let mut cs: Vec<f64> = per_rank.iter().map(|d| d.candidate).collect();
        let (Some(delta), Some(bm), Some(cm)) = (
            Spread::of(&mut deltas),
            Spread::of(&mut bs),
            Spread::of(&mut cs),
        ) else {
            continue;
        };
        let worse = figure.worse().is_worse(delta.median);
        figures.push(FigureDiff {
            phase,
            figure: figure.clone(),
            is_bytes,
            resolution,
            class,
            ranks_compared: per_rank.len(),
            ranks_moved,
            baseline_median: bm.median,
            candidate_median: cm.median,
            delta,
            worse,
            per_rank,
            baseline_line: texts.0,
            candidate_line: texts.1,
        });
    }
    figures
}

/// The first compared figure that moved beyond noise: where the runs part. A figure with
/// no worse direction is shown, but is never what a regression began with.
fn first_divergence(figures: &[FigureDiff]) -> Option<Divergence> {
    figures
        .iter()
        .find(|f| f.class.is_signal() && f.figure.worse() != WorseWhen::Neither)
        .map(|f| Divergence {
            phase: f.phase,
            figure: f.figure.clone(),
            class: f.class,
            ranks_moved: f.ranks_moved,
            ranks_compared: f.ranks_compared,
            delta: f.delta.clone(),
            is_bytes: f.is_bytes,
            baseline_median: f.baseline_median,
            candidate_median: f.candidate_median,
        })
}

/// What the divergence did to the KV cache: tokens and bytes gained or lost, and the
/// memory left after the pool.
fn effect(candidate: &Run, figures: &[FigureDiff]) -> Effect {
    let find = |p: Phase, n: &str| figures.iter().find(|f| f.phase == p && f.figure == n);
    let tokens = find(Phase::KvCache, "tokens");
    let kv_tokens_delta = tokens.map(|t| t.delta.median.round() as i64);
    let bytes_per_token = (candidate.ranks.first())
        .and_then(RankRun::kv_bytes_per_token)
        .map(|(bpt, _)| bpt);
    let pool = find(Phase::KvCache, "avail_after");
    Effect {
        kv_tokens_delta,
        kv_tokens_baseline: tokens.map(|t| t.baseline_median.round() as i64),
        kv_bytes_delta: match (kv_tokens_delta, bytes_per_token) {
            (Some(d), Some(bpt)) => Some(ByteDelta((d as f64 * bpt).round() as i64)),
            _ => None,
        },
        avail_after_pool_delta: pool.map(|p| ByteDelta(p.delta.median.round() as i64)),
        avail_after_pool: pool.map(|p| (p.baseline_median as i64, p.candidate_median as i64)),
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

/// A run's configuration (read by the model with its grammar's config rule), and whether
/// its line was cut short.
fn run_config(run: &Run) -> Result<(Config, bool), ConfigNote> {
    match &run.config {
        None => Err(ConfigNote::Missing {
            run: run.name.clone(),
        }),
        Some(Ok(p)) => Ok((p.config.clone(), p.truncated)),
        Some(Err(e)) => Err(ConfigNote::Unreadable {
            run: run.name.clone(),
            error: e.to_string(),
        }),
    }
}

fn compare_config(b: &Run, c: &Run) -> (Option<ConfigDiff>, Option<ConfigNote>) {
    match (run_config(b), run_config(c)) {
        (Ok((a, cut_a)), Ok((b_cfg, cut_b))) => {
            let mut d = config::diff(&a, &b_cfg);
            // Keys missing from a cut line are unknown, not removed or added.
            let mut note = None;
            if cut_a || cut_b {
                if cut_a {
                    d.added.clear();
                }
                if cut_b {
                    d.removed.clear();
                }
                note = Some(ConfigNote::CutShort {
                    baseline: cut_a,
                    candidate: cut_b,
                });
            }
            (Some(d), note)
        }
        (Err(e), _) | (_, Err(e)) => (None, Some(e)),
    }
}
