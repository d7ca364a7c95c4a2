//! What two runs share (their common ranks) and what keeps them from being compared in
//! full, as facts.

use crate::base::event::Rank;
use crate::model::Run;

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

/// A run's ranks, engine rows left out.
fn ranks_of(run: &Run) -> Vec<&Rank> {
    (run.ranks.iter())
        .filter(|r| !r.is_process())
        .map(|r| &r.rank)
        .collect()
}

/// Which ranks the two runs share, and what makes them less than comparable: a run with
/// no events, lines not understood, rank sets that differ, different servers. The common
/// ranks are returned in the baseline's order.
pub(super) fn comparability<'a>(
    baseline: &'a Run,
    candidate: &Run,
) -> (Comparability, Vec<&'a Rank>) {
    // Sets, not `Vec::contains`: a run may name tens of thousands of ranks. Engine rows
    // (a replica's coordinator) are no ranks: one that printed only in the baseline (its
    // figures came before the candidate's failure) must not make the layouts differ.
    let b_ranks: Vec<&Rank> = ranks_of(baseline);
    let c_ranks: Vec<&Rank> = ranks_of(candidate);
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
    let common_ranks = common.len();
    // Engine rows both runs have are compared beside the ranks (vLLM's engine reports
    // the KV pool's tokens), in the baseline's order.
    let c_all: std::collections::HashSet<&Rank> = candidate.ranks.iter().map(|r| &r.rank).collect();
    let common: Vec<&Rank> = (baseline.ranks.iter())
        .filter(|r| c_all.contains(&r.rank) && (r.is_process() || c_set.contains(&r.rank)))
        .map(|r| &r.rank)
        .collect();
    let comparability = Comparability {
        common_ranks,
        only_in_baseline,
        only_in_candidate,
        memory_compared,
        notes,
    };
    (comparability, common)
}
