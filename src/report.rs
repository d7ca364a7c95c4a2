//! What analysis says of one run, computed once and read by every renderer (text, JSON,
//! exports, the TUI): renderers do no analysis of their own.

use crate::analysis::align::{phase_stats, PhaseStats};
use crate::analysis::diff::{outcome, RunOutcome};
use crate::model::Run;

#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// Per phase across ranks: durations, end skew, stragglers, figure spreads.
    pub phases: Vec<PhaseStats>,
    /// Where the ranks stopped, grouped by failure.
    pub outcome: RunOutcome,
}

impl RunReport {
    pub fn of(run: &Run) -> RunReport {
        RunReport {
            phases: phase_stats(run),
            outcome: outcome(run),
        }
    }
}
