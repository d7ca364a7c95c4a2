//! One run's outcome across ranks: failed ranks grouped by kind, phase and OOM figures,
//! the root, and the failure told root first. `summary`, `diff` and the TUI read it.

use std::collections::BTreeMap;

use crate::base::event::Rank;
use crate::model::{Failure, FailureKind, Outcome, Phase, Run};

/// Ranks that stopped the same way: one outcome, one failure kind, one phase.
#[derive(Clone, Debug, PartialEq)]
pub struct FailureGroup {
    /// `failed`, `consequence`, `terminated` or `stalled`.
    pub(crate) outcome: Outcome,
    /// The kind of failure.
    pub kind: FailureKind,
    /// The phase the ranks stopped in.
    pub phase: Phase,
    pub(crate) ranks: Vec<Rank>,
    pub(crate) total_ranks: usize,
    /// The OOM's memory figures, as the group's first rank's failure printed them.
    pub oom: OomFigures,
    pub(crate) message: String,
    /// The ranks failed because `consequence_of` did first.
    pub(crate) consequence_of: Option<Rank>,
    /// Placed in `ready` only as the phase after this completed one, the run not yet
    /// ready (`Failure::after_phase`).
    pub(crate) after_phase: Option<Phase>,
}

/// Where a run's ranks stopped, grouped by failure, and the root.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutcome {
    /// Numbered ranks (engine and API processes apart).
    pub(crate) ranks: usize,
    pub(crate) ready: bool,
    /// Ranks that failed on their own.
    pub failed_ranks: usize,
    /// Ranks per outcome, in `Outcome::ALL` order, zero counts left out.
    pub(crate) counts: Vec<(Outcome, usize)>,
    /// The ranks that did not reach ready, grouped by outcome, kind and phase.
    pub groups: Vec<FailureGroup>,
    /// The root: the rank whose own failure (or, failing none, stall) came first.
    pub first_failure: Option<(Rank, FailureKind, Phase)>,
    /// The root's outcome (`failed` or `stalled`).
    pub(crate) root_outcome: Option<Outcome>,
    /// The phase the root had completed when its failure is placed in the next one only
    /// for that (`after kv_cache, before ready`: it never served).
    pub(crate) root_after: Option<Phase>,
    /// Failures printed outside any rank, each with where (`file:line`) when known.
    pub(crate) launcher_failures: Vec<(String, Option<String>)>,
    /// Launcher lines that report a failure elsewhere (`Received sigquit from a child`).
    pub(crate) launcher_consequences: Vec<String>,
    /// Ranks whose log ends with nothing said, and the phase most of them were in.
    pub(crate) incomplete: usize,
    /// The run's failure as told: the root first, what followed counted apart.
    pub story: FailureStory,
}

/// Who failed first, as the story of a failed run tells it.
#[derive(Clone, Debug, PartialEq)]
pub enum StoryRoot {
    /// The run's one rank failed on its own.
    OnlyRank {
        /// The rank.
        rank: Rank,
        /// Its failure's kind.
        kind: FailureKind,
        /// The phase it failed in.
        phase: Phase,
        /// The phase it had completed, when it failed only after it (`in_phase_after`).
        after: Option<Phase>,
    },
    /// Every rank failed on its own, the same way.
    AllRanks {
        /// How many ranks.
        ranks: usize,
        /// Their failure's kind.
        kind: FailureKind,
        /// The phase they failed in.
        phase: Phase,
        /// The phase they had completed, when they failed only after it.
        after: Option<Phase>,
    },
    /// The root, and how many more ranks failed on their own.
    Root {
        /// The root rank.
        rank: Rank,
        /// Its failure's kind.
        kind: FailureKind,
        /// The phase it failed (or stalled) in.
        phase: Phase,
        /// The phase it had completed, when it failed only after it.
        after: Option<Phase>,
        /// It stalled rather than failed.
        stalled: bool,
        /// Other ranks that failed on their own.
        others_failed: usize,
    },
    /// The launcher printed a failure; no rank's own failure is in the log.
    LauncherFailed,
    /// The launcher saw a child fail; no rank's own failure is in the log.
    LauncherReportsChild,
    /// No rank failed on its own, and the launcher said nothing of a failure.
    NoOwnFailure,
}

/// One run's failure: the root first, then the ranks per outcome that followed it
/// (consequence, terminated, stalled, incomplete; zero counts left out).
#[derive(Clone, Debug, PartialEq)]
pub struct FailureStory {
    pub(crate) root: StoryRoot,
    pub(crate) followers: Vec<(Outcome, usize)>,
}

impl RunOutcome {
    /// The run failed: a root, or the launcher saw a failure.
    pub(crate) fn failed(&self) -> bool {
        self.first_failure.is_some()
            || !self.launcher_failures.is_empty()
            || !self.launcher_consequences.is_empty()
    }
    pub(crate) fn count(&self, o: Outcome) -> usize {
        self.counts
            .iter()
            .find(|(x, _)| *x == o)
            .map_or(0, |(_, n)| *n)
    }
}

/// A byte figure as the log printed it: the bytes, and the step of the printed number
/// (`0.42 GiB`: 0.01 GiB), so that it is shown as printed rather than re-rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrintedBytes {
    /// The figure in bytes.
    pub bytes: i64,
    /// The step of the printed number, in bytes (1 for an exact count).
    pub step: u64,
}

impl PrintedBytes {
    /// A failure field's bytes and step, when it is a byte figure.
    fn of(f: &Failure, field: &str) -> Option<Self> {
        let v = f.fields.get(field)?;
        Some(Self {
            bytes: v.as_bytes()?,
            step: v.resolution(),
        })
    }
    /// As the log printed it (`0.42 GiB`, not `430.08 MiB`).
    pub(crate) fn shown(self) -> String {
        crate::base::units::bytes_as_printed(self.bytes, self.step)
    }
}

/// The memory figures an OOM message gives (the failure's fields of these names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OomFigures {
    /// What the failing allocation asked for (`requested_bytes`).
    pub requested: Option<PrintedBytes>,
    /// The process's limit (`allowed_bytes`).
    pub allowed: Option<PrintedBytes>,
    /// Free on the device (`free_bytes`).
    pub free: Option<PrintedBytes>,
    /// What the process's allocator held when it failed (`allocated_bytes`: PyTorch's
    /// "allocated by PyTorch", a server's own wording): where the device's memory went.
    pub allocated: Option<PrintedBytes>,
    /// Reserved by the allocator but not allocated (`reserved_unallocated_bytes`).
    pub reserved_unallocated: Option<PrintedBytes>,
    /// Held by CUDA graphs' private pools (`private_pools_bytes`).
    pub private_pools: Option<PrintedBytes>,
}

impl OomFigures {
    /// The figures a failure's fields give.
    pub(crate) fn of(f: &Failure) -> Self {
        Self {
            requested: PrintedBytes::of(f, "requested_bytes"),
            allowed: PrintedBytes::of(f, "allowed_bytes"),
            free: PrintedBytes::of(f, "free_bytes"),
            allocated: PrintedBytes::of(f, "allocated_bytes"),
            reserved_unallocated: PrintedBytes::of(f, "reserved_unallocated_bytes"),
            private_pools: PrintedBytes::of(f, "private_pools_bytes"),
        }
    }
}

/// Where the run's ranks stopped, grouped by failure, with the root and its story.
pub fn outcome(run: &Run) -> RunOutcome {
    let total = run.worker_ranks().count();
    type Key = (
        Outcome,
        FailureKind,
        Phase,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<Rank>,
        Option<Phase>,
    );
    let mut groups: BTreeMap<Key, (Vec<Rank>, &Failure)> = BTreeMap::new();
    let b = |f: &Failure, n: &str| f.fields.get(n).and_then(|v| v.as_bytes());
    for r in run.worker_ranks() {
        let Some(f) = &r.failure else { continue };
        let key: Key = (
            f.outcome,
            f.kind,
            f.phase,
            b(f, "requested_bytes"),
            b(f, "allowed_bytes"),
            b(f, "reserved_unallocated_bytes"),
            f.consequence_of.clone(),
            f.after_phase,
        );
        groups
            .entry(key)
            .or_insert_with(|| (Vec::new(), f))
            .0
            .push(r.rank.clone());
    }
    let mut groups: Vec<FailureGroup> = groups
        .into_iter()
        .map(|(key, (ranks, first))| FailureGroup {
            outcome: key.0,
            kind: key.1,
            phase: key.2,
            ranks,
            total_ranks: total,
            oom: OomFigures::of(first),
            message: first.message.clone(),
            consequence_of: key.6,
            after_phase: key.7,
        })
        .collect();
    // Own failures first, then what followed them; larger groups first within each.
    groups.sort_by_key(|g| (g.outcome, std::cmp::Reverse(g.ranks.len())));
    let root = run.root_failure();
    let counts = Outcome::ALL
        .into_iter()
        .map(|o| (o, run.count(o)))
        .filter(|(_, n)| *n > 0)
        .collect();
    // A launcher's own shutdown notices (`Killing local vLLM worker processes`) say nothing
    // about which rank failed, or whether one did.
    let (launcher_failures, launcher_consequences): (Vec<&Failure>, Vec<&Failure>) = run
        .launcher_failures
        .iter()
        .filter(|f| f.outcome != Outcome::Terminated)
        .partition(|f| f.outcome == Outcome::Failed);
    let mut out = RunOutcome {
        ranks: total,
        ready: run.ready,
        failed_ranks: run.failed_ranks(),
        counts,
        groups,
        first_failure: root.map(|(r, f)| (r.rank.clone(), f.kind, f.phase)),
        root_outcome: root.map(|(_, f)| f.outcome),
        root_after: root.and_then(|(_, f)| f.after_phase),
        launcher_failures: launcher_failures
            .iter()
            .map(|f| {
                let at = (f.origin.as_ref()).map(|o| run.cite(o));
                (f.message.clone(), at)
            })
            .collect(),
        launcher_consequences: launcher_consequences
            .iter()
            .map(|f| f.message.clone())
            .collect(),
        incomplete: run.count(Outcome::Incomplete),
        story: FailureStory {
            root: StoryRoot::NoOwnFailure,
            followers: Vec::new(),
        },
    };
    out.story = failure_story(&out);
    out
}

/// One run's failure: the root first, what followed counted apart.
fn failure_story(c: &RunOutcome) -> FailureStory {
    let own: Vec<&FailureGroup> = c
        .groups
        .iter()
        .filter(|g| g.outcome == Outcome::Failed)
        .collect();
    let root = match (own.as_slice(), &c.first_failure) {
        ([g], _) if g.ranks.len() == c.ranks && c.ranks == 1 => StoryRoot::OnlyRank {
            rank: g.ranks[0].clone(),
            kind: g.kind,
            phase: g.phase,
            after: g.after_phase,
        },
        ([g], _) if g.ranks.len() == c.ranks => StoryRoot::AllRanks {
            ranks: c.ranks,
            kind: g.kind,
            phase: g.phase,
            after: g.after_phase,
        },
        (_, Some((rank, kind, phase))) => StoryRoot::Root {
            rank: rank.clone(),
            kind: *kind,
            phase: *phase,
            after: c.root_after,
            stalled: c.root_outcome == Some(Outcome::Stalled),
            others_failed: c.failed_ranks.saturating_sub(1),
        },
        _ if !c.launcher_failures.is_empty() => StoryRoot::LauncherFailed,
        _ if !c.launcher_consequences.is_empty() => StoryRoot::LauncherReportsChild,
        _ => StoryRoot::NoOwnFailure,
    };
    let followers = [
        Outcome::Consequence,
        Outcome::Terminated,
        Outcome::Stalled,
        Outcome::Incomplete,
    ]
    .into_iter()
    // The root's own stall is already the headline.
    .map(|o| {
        let n = c.count(o) - usize::from(o == Outcome::Stalled && c.root_outcome == Some(o));
        (o, n)
    })
    .filter(|(_, n)| *n > 0)
    .collect();
    FailureStory { root, followers }
}
