//! What analysis says of one run (and of a run against its baseline), computed once and read by every renderer (text, JSON,
//! exports, the TUI): renderers do no analysis of their own.

use crate::analysis::align::{phase_stats, PhaseStats};
use crate::analysis::attribute::{
    attribute, snapshot_evidence, snapshot_notes, Attribution, RankSnapshot, SnapshotEvidence,
    SnapshotNote,
};
use crate::analysis::breakdown::{breakdown, breakdowns_compared, BreakdownDiff, RunBreakdown};
use crate::analysis::capacity::{
    capacity, capacity_cost, Capacity, CapacityCost, ModelShape, DEFAULT_LENGTHS,
};
use crate::analysis::diff::{diff_with, outcome, DiffOptions, RunDiff, RunOutcome};
use crate::model::Run;

/// Where a run's memory went and what its KV pool buys (`summary --memory`).
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryReport {
    /// None when the run's server grammar has no memory model.
    pub breakdown: Option<RunBreakdown>,
    /// None when the log shows no KV pool size.
    pub(crate) capacity: Option<Capacity>,
    /// What PyTorch's allocator held of each category, per rank with a snapshot: filled
    /// by [`MemoryReport::with_snapshots`] where the command read them.
    pub held: Vec<crate::analysis::held::RankHeld>,
    /// Per GPU of the run's nvidia-smi CSVs, what it saw used against the breakdown.
    pub smi: Vec<crate::analysis::smi::SmiComparison>,
}

impl MemoryReport {
    /// For request lengths in tokens (the defaults when empty) and, when given, the
    /// model's shape for the bytes per token.
    pub fn of(run: &Run, lengths: &[i64], shape: Option<&ModelShape>) -> MemoryReport {
        Self::with_breakdown(run, lengths, shape, breakdown(run))
    }

    /// [`MemoryReport::of`] with the run's breakdown already worked out.
    fn with_breakdown(
        run: &Run,
        lengths: &[i64],
        shape: Option<&ModelShape>,
        breakdown: Option<RunBreakdown>,
    ) -> MemoryReport {
        let lengths = if lengths.is_empty() {
            &DEFAULT_LENGTHS[..]
        } else {
            lengths
        };
        MemoryReport {
            breakdown,
            capacity: capacity(run, lengths, shape),
            held: Vec::new(),
            smi: crate::analysis::smi::smi_comparisons(run),
        }
    }

    /// With the ranks' snapshots split by category (`analysis::held`).
    pub fn with_snapshots(mut self, run: &Run, snaps: &[RankSnapshot]) -> MemoryReport {
        self.held = crate::analysis::held::held(run, snaps);
        self
    }
}

/// Two runs' memory: each one's, the categories that moved, what the changes cost.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryDiff {
    /// The baseline's own memory report.
    pub baseline: MemoryReport,
    /// The candidate's own memory report.
    pub candidate: MemoryReport,
    /// Per memory category, both runs' ranks compared; `None` when either run's grammar has
    /// no memory model.
    pub moved: Option<BreakdownDiff>,
    /// What the changed settings cost in capacity; `None` unless both runs have a capacity
    /// answer.
    pub cost: Option<CapacityCost>,
}

impl MemoryDiff {
    /// Both runs' memory reports and what changed, for the prompt `lengths` and the model
    /// `shape` a capacity answer needs.
    pub fn of(
        baseline: &Run,
        candidate: &Run,
        diff: &RunDiff,
        attribution: Option<&Attribution>,
        lengths: &[i64],
        shape: Option<&ModelShape>,
    ) -> MemoryDiff {
        // Each rank's breakdown once, for its run's report and for the comparison.
        let (b_grouped, c_grouped, moved) = breakdowns_compared(baseline, candidate, attribution);
        let (b, c) = (
            MemoryReport::with_breakdown(baseline, lengths, shape, b_grouped),
            MemoryReport::with_breakdown(candidate, lengths, shape, c_grouped),
        );
        // The changed settings the cost belongs to (addresses and ports size nothing).
        let changes: Vec<String> = (diff.config.iter())
            .flat_map(|d| d.changed.iter().map(move |ch| (ch, d.spelling)))
            .filter(|(ch, _)| !crate::analysis::remedy::names_an_address(&ch.key))
            .map(|(ch, (was, now))| {
                format!(
                    "{} {} → {}",
                    ch.key,
                    ch.old.spelled(was),
                    ch.new.spelled(now)
                )
            })
            .collect();
        let cost = match (&b.capacity, &c.capacity) {
            (Some(bc), Some(cc)) => Some(capacity_cost(bc, cc, changes)),
            _ => None,
        };
        MemoryDiff {
            moved,
            baseline: b,
            candidate: c,
            cost,
        }
    }
}

/// What analysis says of one run, computed once and read by `summary` (text and JSON), the
/// exports and the TUI.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// Per phase across ranks: durations, end skew, stragglers, figure spreads.
    pub(crate) phases: Vec<PhaseStats>,
    /// Where the ranks stopped, grouped by failure.
    pub(crate) outcome: RunOutcome,
    /// For a memory failure, what the run's own figures support without a baseline: the
    /// deficit at the failed request and the settings that would cover it.
    pub(crate) remedies: crate::analysis::remedy::Remedies,
    /// The memory breakdown and capacity, for the default request lengths; commands
    /// given other lengths or a model's config replace it.
    pub memory: MemoryReport,
}

/// One run's state as `summary` heads it (and `summary --exit-code` returns it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Some rank (or the launcher) failed.
    Failed,
    /// Every rank reached ready.
    Ready,
    /// No rank was found in the logs.
    NoRanks,
    /// The log ends before ready and nothing says why.
    Incomplete,
}

impl RunState {
    /// `summary --exit-code`: 1 failed, 3 not ready with nothing saying why (as `diff`'s
    /// incomplete), 0 ready.
    pub fn exit_code(self) -> u8 {
        match self {
            RunState::Ready => 0,
            RunState::Failed => 1,
            RunState::NoRanks | RunState::Incomplete => 3,
        }
    }
}

impl RunReport {
    /// The report of a run on its own (no baseline, no prompt lengths, no model shape).
    pub fn of(run: &Run) -> RunReport {
        RunReport {
            phases: phase_stats(run),
            outcome: outcome(run),
            remedies: crate::analysis::remedy::remedies(None, run, None),
            memory: MemoryReport::of(run, &[], None),
        }
    }

    /// The run's state for the verdict line; a failure wins over a ready line printed by
    /// another rank.
    pub fn state(&self, run: &Run) -> RunState {
        if self.outcome.failed() {
            RunState::Failed
        } else if run.ready {
            RunState::Ready
        } else if run.ranks.is_empty() {
            RunState::NoRanks
        } else {
            RunState::Incomplete
        }
    }
}

/// What analysis says of a candidate against its baseline, computed once and read by
/// `diff` (text and JSON) and the TUI's Diff view.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffReport {
    /// The comparison itself: statuses, phase timings, figures, config and environment
    /// changes, the first divergence.
    pub diff: RunDiff,
    /// The first divergence placed on allocation sites, when both runs have snapshots.
    pub attribution: Option<Attribution>,
    /// The failing ranks' OOMs, fragmentation and allocator settings from the snapshots.
    pub evidence: SnapshotEvidence,
    /// Snapshots that could not be used, how the others were matched, what is missing.
    pub(crate) notes: Vec<SnapshotNote>,
    /// Both runs' memory breakdowns and capacity, what moved and what it cost (default
    /// request lengths; `diff --tokens/--model-config` replaces it).
    pub memory: MemoryDiff,
}

impl DiffReport {
    /// `snapshot_errors` are the snapshots that could not be used, as
    /// `load::load_snapshots` returns them (baseline's first).
    pub(crate) fn of(
        baseline: &Run,
        candidate: &Run,
        base_snaps: &[RankSnapshot],
        cand_snaps: &[RankSnapshot],
        snapshot_errors: Vec<String>,
        options: DiffOptions,
    ) -> DiffReport {
        Self::with_diff(
            diff_with(baseline, candidate, options),
            baseline,
            candidate,
            base_snaps,
            cand_snaps,
            snapshot_errors,
        )
    }

    /// The same, for a caller that holds the runs' `diff` already (the TUI computes it
    /// before the snapshots are read).
    pub(crate) fn with_diff(
        diff: RunDiff,
        baseline: &Run,
        candidate: &Run,
        base_snaps: &[RankSnapshot],
        cand_snaps: &[RankSnapshot],
        snapshot_errors: Vec<String>,
    ) -> DiffReport {
        let attribution = attribute(baseline, candidate, &diff, base_snaps, cand_snaps);
        let evidence = snapshot_evidence(candidate, base_snaps, cand_snaps);
        let notes = snapshot_notes(
            baseline,
            candidate,
            &diff,
            attribution.as_ref(),
            base_snaps,
            cand_snaps,
            snapshot_errors,
        );
        let memory = MemoryDiff::of(baseline, candidate, &diff, attribution.as_ref(), &[], None);
        DiffReport {
            diff,
            attribution,
            evidence,
            notes,
            memory,
        }
    }
}
