//! What analysis says of one run (and of a run against its baseline), computed once and read by every renderer (text, JSON,
//! exports, the TUI): renderers do no analysis of their own.

use crate::analysis::align::{phase_stats, PhaseStats};
use crate::analysis::attribute::{
    attribute, snapshot_evidence, snapshot_notes, Attribution, RankSnapshot, SnapshotEvidence,
    SnapshotNote,
};
use crate::analysis::diff::{diff_with, outcome, DiffOptions, RunDiff, RunOutcome};
use crate::model::Run;

#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// Per phase across ranks: durations, end skew, stragglers, figure spreads.
    pub phases: Vec<PhaseStats>,
    /// Where the ranks stopped, grouped by failure.
    pub outcome: RunOutcome,
    /// For a memory failure, what the run's own figures support without a baseline: the
    /// deficit at the failed request and the settings that would cover it.
    pub remedies: crate::analysis::remedy::Remedies,
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
    pub fn of(run: &Run) -> RunReport {
        RunReport {
            phases: phase_stats(run),
            outcome: outcome(run),
            remedies: crate::analysis::remedy::remedies(None, run, None),
        }
    }

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
    pub diff: RunDiff,
    /// The first divergence placed on allocation sites, when both runs have snapshots.
    pub attribution: Option<Attribution>,
    /// The failing ranks' OOMs, fragmentation and allocator settings from the snapshots.
    pub evidence: SnapshotEvidence,
    /// Snapshots that could not be used, how the others were matched, what is missing.
    pub notes: Vec<SnapshotNote>,
}

impl DiffReport {
    /// `snapshot_errors` are the snapshots that could not be used, as
    /// `load::load_snapshots` returns them (baseline's first).
    pub fn of(
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
    pub fn with_diff(
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
        DiffReport {
            diff,
            attribution,
            evidence,
            notes,
        }
    }
}
