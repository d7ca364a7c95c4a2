//! The figures a diff compares, rank by rank: which ones, how the ranks moved on each,
//! where the runs first part and what that cost the KV cache.

use std::collections::HashMap;

use crate::analysis::align::Spread;
use crate::base::event::{BuiltinFigure, FigureName, Rank, WorseWhen};
use crate::base::units::ByteDelta;
use crate::model::{Figure, Phase, RankRun, Run};

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

/// The log line a figure was read from: source, line number and message.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FigureLine {
    pub(crate) source: String,
    pub(crate) line: u64,
    pub(crate) message: String,
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

/// Every compared figure (`COMPARED`) that both runs report for at least one common rank,
/// with its per-rank deltas and how they move together.
pub(super) fn compare_figures(
    baseline: &Run,
    candidate: &Run,
    common: &[&Rank],
) -> Vec<FigureDiff> {
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
pub(super) fn first_divergence(figures: &[FigureDiff]) -> Option<Divergence> {
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
pub(super) fn effect(candidate: &Run, figures: &[FigureDiff]) -> Effect {
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
