//! One run's outcome in words: how a rank failed, a group of ranks that failed alike, and
//! the run's failure story. `summary` and `diff` both word outcomes with these.

use crate::analysis::diff::{FailureGroup, FailureStory, StoryRoot};
use crate::model::{FailureKind, Outcome, Phase};

/// A failure kind as a verb phrase: `ran out of memory`.
pub(crate) fn failure_verb(k: FailureKind) -> &'static str {
    match k {
        FailureKind::Oom => "ran out of memory",
        FailureKind::NotEnoughMemory => "had not enough memory",
        FailureKind::Nccl => "failed in NCCL",
        FailureKind::Exception => "raised an exception",
        FailureKind::Timeout => "timed out",
        FailureKind::Signal => "was stopped by a signal",
        FailureKind::Died => "died",
    }
}

/// Where a failure happened, as a phrase: `in kv_cache`; `while serving` once the server
/// was ready (the canonical phase is `ready`, but nothing failed *in* becoming ready).
pub(crate) fn in_phase(p: Phase) -> String {
    match p {
        Phase::Ready => "while serving".to_string(),
        p => format!("in {p}"),
    }
}

/// Where a failure happened, as [`in_phase`] words it, but `after cuda_graph, before
/// ready` for one placed in the next phase only because the rank had completed the phase
/// before it (in `ready`: the run had printed no ready line, it never served).
pub(crate) fn in_phase_after(p: Phase, after: Option<Phase>) -> String {
    match (p, after) {
        (p, Some(a)) => format!("after {a}, before {p}"),
        (p, _) => in_phase(p),
    }
}

/// `8/8 ranks: oom in cuda_graph, tried to allocate 20.00 MiB, …`;
/// `1/2 ranks: consequence of TP0 (nccl in dist_init)`.
pub fn failure_group(g: &FailureGroup) -> String {
    let what = match g.outcome {
        Outcome::Failed => format!(
            "{} {}",
            g.kind.name(),
            in_phase_after(g.phase, g.after_phase)
        ),
        o => format!(
            "{o} ({} {})",
            g.kind.name(),
            in_phase_after(g.phase, g.after_phase)
        ),
    };
    let mut s = format!("{}/{} ranks: {what}", g.ranks.len(), g.total_ranks);
    let oom = &g.oom;
    if let Some(b) = oom.requested {
        s.push_str(&format!(", tried to allocate {}", b.shown()));
    }
    if let Some(b) = oom.allowed {
        s.push_str(&format!(", {} allowed", b.shown()));
    }
    if let (Some(b), None) = (oom.free, oom.allowed) {
        s.push_str(&format!(", {} free on the device", b.shown()));
    }
    if let Some(b) = oom.allocated {
        s.push_str(&format!(", {} allocated", b.shown()));
    }
    if let Some(b) = oom.reserved_unallocated {
        s.push_str(&format!(", {} reserved but unallocated", b.shown()));
    }
    if let Some(r) = &g.consequence_of {
        s.push_str(&format!(", after {r}"));
    }
    s
}

/// One run's failure in a phrase: `all 8 ranks ran out of memory in cuda_graph`;
/// `TP0 failed in NCCL in dist_init; 1 rank failed as a consequence`.
pub fn failure_story(story: &FailureStory) -> String {
    let mut what = match &story.root {
        StoryRoot::OnlyRank {
            rank,
            kind,
            phase,
            after,
        } => {
            format!(
                "its only rank {rank} {} {}",
                failure_verb(*kind),
                in_phase_after(*phase, *after)
            )
        }
        StoryRoot::AllRanks {
            ranks,
            kind,
            phase,
            after,
        } => {
            format!(
                "all {ranks} ranks {} {}",
                failure_verb(*kind),
                in_phase_after(*phase, *after)
            )
        }
        StoryRoot::Root {
            rank,
            kind,
            phase,
            after,
            stalled,
            others_failed,
        } => {
            let verb = if *stalled {
                "stalled"
            } else {
                failure_verb(*kind)
            };
            let mut s = format!("{rank} {verb} {}", in_phase_after(*phase, *after));
            match others_failed {
                0 => {}
                1 => s.push_str("; 1 more rank failed on its own"),
                n => s.push_str(&format!("; {n} more ranks failed on their own")),
            }
            s
        }
        StoryRoot::LauncherFailed => "the launcher failed".to_string(),
        StoryRoot::LauncherReportsChild => {
            "the launcher reports a failed child; no rank's own failure is in the log".to_string()
        }
        StoryRoot::NoOwnFailure => "no rank's own failure is in the log".to_string(),
    };
    for &(o, n) in &story.followers {
        let said = match (o, n) {
            (Outcome::Consequence, 1) => "1 rank failed as a consequence".to_string(),
            (Outcome::Consequence, n) => format!("{n} ranks failed as a consequence"),
            (Outcome::Terminated, 1) => "1 rank was terminated".to_string(),
            (Outcome::Terminated, n) => format!("{n} ranks were terminated"),
            (Outcome::Stalled, 1) => "1 rank stalled".to_string(),
            (Outcome::Stalled, n) => format!("{n} ranks stalled"),
            (_, 1) => "1 rank's log ends without a reason".to_string(),
            (_, n) => format!("{n} ranks' logs end without a reason"),
        };
        what.push_str("; ");
        what.push_str(&said);
    }
    what
}

/// The line that says what went wrong: the failure's message, unless it is only a
/// traceback's header (`Scheduler hit an exception: Traceback (most recent call last):`),
/// then the traceback's exception line (`torch.distributed.DistBackendError: …`), the last
/// one when exceptions are chained.
pub(crate) fn quoted_message(f: &crate::model::Failure) -> &str {
    if !f
        .message
        .trim_end()
        .ends_with("Traceback (most recent call last):")
    {
        return &f.message;
    }
    let exception_line = |l: &&str| {
        l.split_once(": ").is_some_and(|(head, _)| {
            !head.is_empty()
                && head
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && head
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
    };
    f.traceback
        .as_deref()
        .and_then(|tb| tb.lines().rfind(exception_line))
        .unwrap_or(&f.message)
}
