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

/// Wordings of failures outside any rank shown before the rest are counted.
const OUTSIDE_WORDINGS_SHOWN: usize = 3;

/// The failures printed outside any rank (`message`, where it was printed when known), as
/// the lines `summary`, `diff` and the report show: each wording — the message with its
/// numbers aside — once, where it was first printed, with how many more said it; past
/// [`OUTSIDE_WORDINGS_SHOWN`] wordings, how many more failures and wordings there were.
/// An API server that logs an error per request once its engine is dead prints
/// thousands of one wording; they were a line each.
pub(crate) fn outside_any_rank(failures: &[(String, Option<String>)]) -> Vec<String> {
    let wording = |m: &str| -> String {
        let mut w = String::with_capacity(m.len());
        for c in m.chars() {
            match c {
                '0'..='9' if w.ends_with('#') => {}
                '0'..='9' => w.push('#'),
                c => w.push(c),
            }
        }
        w
    };
    // (first failure's index, how many said it), by wording, in order of first saying.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, (message, _)) in failures.iter().enumerate() {
        let g = *index.entry(wording(message)).or_insert_with(|| {
            groups.push((i, 0));
            groups.len() - 1
        });
        if let Some(group) = groups.get_mut(g) {
            group.1 += 1;
        }
    }
    let mut lines: Vec<String> = (groups.iter().take(OUTSIDE_WORDINGS_SHOWN))
        .filter_map(|&(first, n)| {
            let (message, at) = failures.get(first)?;
            // In brackets: a message often ends in punctuation of its own (`… output:`).
            let more = (n > 1).then(|| format!("and {} more like it", n - 1));
            let said = match (at, more) {
                (Some(at), Some(more)) => format!(" ({at}, {more})"),
                (Some(at), None) => format!(" ({at})"),
                (None, Some(more)) => format!(" ({more})"),
                (None, None) => String::new(),
            };
            Some(format!("outside any rank: {message}{said}"))
        })
        .collect();
    let rest = groups.get(OUTSIDE_WORDINGS_SHOWN..).unwrap_or_default();
    if !rest.is_empty() {
        let failures: usize = rest.iter().map(|&(_, n)| n).sum();
        lines.push(format!(
            "outside any rank: {failures} more failure{} in {} other wording{} (`rankscope events` lists every one)",
            if failures == 1 { "" } else { "s" },
            rest.len(),
            if rest.len() == 1 { "" } else { "s" },
        ));
    }
    lines
}

#[cfg(test)]
mod outside_tests {
    use super::outside_any_rank;

    #[test]
    fn failures_outside_any_rank_are_grouped_by_wording() {
        // 1,000 request errors of one wording (numbers differ), two other wordings, then
        // three more wordings of one failure each, past the three shown.
        let mut failures: Vec<(String, Option<String>)> = (0..1000)
            .map(|i| {
                let at = format!("api.log:{}", i + 10);
                (format!("EngineDeadError: request {i} failed"), Some(at))
            })
            .collect();
        failures.insert(1, ("Bootstrap : no socket interface found".into(), None));
        failures.push(("Worker 7 died".into(), Some("api.log:2000".into())));
        for w in ["a", "b", "c"] {
            failures.push((format!("{w} went wrong"), None));
        }
        let lines = outside_any_rank(&failures);
        assert_eq!(
            lines,
            vec![
                "outside any rank: EngineDeadError: request 0 failed (api.log:10, and 999 more like it)",
                "outside any rank: Bootstrap : no socket interface found",
                "outside any rank: Worker 7 died (api.log:2000)",
                "outside any rank: 3 more failures in 3 other wordings (`rankscope events` lists every one)",
            ]
        );
        // One failure: one line, as before, with where it was printed.
        let one = outside_any_rank(&[("Killed".into(), Some("launcher.log:3".into()))]);
        assert_eq!(one, vec!["outside any rank: Killed (launcher.log:3)"]);
        assert!(outside_any_rank(&[]).is_empty());
    }
}
