//! Ranks blamed on others' evidence: one reported dead by another process's line, one
//! the others' collective timeouts waited for, one silent while the others went on, and
//! stalls that name the rank they waited for.

use chrono::NaiveDateTime;

use super::{set_outcome, NumberedRanks, Order, StampsBySource, Stop, SILENCE_STALL_S};
use crate::base::event::{Event, FieldValue};
use crate::grammar::Knowledge;
use crate::model::{Failure, FailureKind, Outcome, RankRun};

/// A stall whose line names the rank it waited for (`peer_rank`), when that rank stalled
/// too — silent, or hung before the collective — followed it: `15 ranks: consequence
/// (timeout in weight_load), after TP11`, not sixteen ranks stalled alike.
pub(super) fn follow_named_stalls(
    ranks: &mut [RankRun],
    peers: &[Option<u32>],
    numbers: &NumberedRanks,
) {
    // Who stalled before any is made a consequence here: a flag per rank, looked up by the
    // named rank's index (a list searched per rank was quadratic).
    let stalled: Vec<bool> = (ranks.iter())
        .map(|r| r.outcome == Outcome::Stalled)
        .collect();
    for i in 0..ranks.len() {
        let Some(j) = peers
            .get(i)
            .copied()
            .flatten()
            .and_then(|p| numbers.index(p))
        else {
            continue;
        };
        if j != i && stalled[j] && ranks[i].outcome == Outcome::Stalled {
            let named = ranks[j].rank.clone();
            set_outcome(&mut ranks[i], Outcome::Consequence, Some(named));
        }
    }
}

/// A rank whose log ends with nothing said of its end, reported dead by another process's
/// line (vLLM's engine: `Worker proc VllmWorker-5 died unexpectedly`, a `dead_rank`
/// capture): no rank failed on its own, so it is the root. Its kind is the line's
/// `failure` (`signal` for an exit by SIGKILL), else `died`: how it died is not in the
/// logs. The line is the evidence; `reported_by` says whose it is.
pub(super) fn blame_the_reported_rank(
    ranks: &mut [RankRun],
    stops: &[Option<Box<Stop>>],
    launcher: &[Stop],
    numbers: &NumberedRanks,
    stamps: &StampsBySource,
) -> Option<usize> {
    // Reporters by index (`None`: the launcher); only lines that report a death.
    let reports = (stops.iter().enumerate())
        .filter_map(|(i, s)| Some((Some(i), s.as_deref()?)))
        .chain(launcher.iter().map(|s| (None, s)))
        .filter(|(_, s)| s.peer_died);
    let mut first: Option<(Order, usize, Option<usize>, &Stop)> = None;
    for (reporter, s) in reports {
        let Some(i) = s.peer.and_then(|n| numbers.index(n)) else {
            continue;
        };
        if ranks[i].outcome != Outcome::Incomplete || ranks[i].is_process() || reporter == Some(i) {
            continue;
        }
        let at = (
            false,
            stamps.of_failure(&s.failure),
            s.failure.origin.as_ref().map(|o| (o.source, o.line)),
        );
        if first.as_ref().is_none_or(|f| at < f.0) {
            first = Some((at, i, reporter, s));
        }
    }
    let (_, i, reporter, report) = first?;
    let who = (reporter.and_then(|r| ranks.get(r)))
        .map_or_else(|| "launcher".to_string(), |r| r.rank.to_string());
    let kind = match report.failure.fields.get("failure") {
        Some(_) => report.failure.kind,
        None => FailureKind::Died,
    };
    // The reporter's own outcome (`consequence`) is not the dead rank's.
    let mut fields = report.failure.fields.clone();
    fields.remove("outcome");
    let r = &mut ranks[i];
    r.outcome = Outcome::Failed;
    r.failure = Some(Box::new(Failure {
        fields,
        outcome: Outcome::Failed,
        phase: r.last_phase,
        phase_from: "last_event",
        phase_line: r.last_origin.clone(),
        kind,
        consequence_of: None,
        after_phase: None,
        reported_by: Some(who),
        traceback: None,
        ..report.failure.clone()
    }));
    Some(i)
}

/// Collective timeouts on some ranks and no failure anywhere: the rank they waited for is
/// the one that fell behind and went quiet — the rank whose log ends earliest, in an
/// earlier phase than the ranks that timed out. It stalled; their timeouts follow from it.
pub(super) fn blame_the_silent_rank(ranks: &mut [RankRun], events: &[Event]) -> Option<usize> {
    let timed_out: Vec<usize> = (0..ranks.len())
        .filter(|&i| ranks[i].outcome == Outcome::Stalled && !ranks[i].is_process())
        .collect();
    let furthest = timed_out.iter().map(|&i| ranks[i].last_phase).max()?;
    let last_ts = |r: &RankRun| r.events.iter().filter_map(|&i| events[i].ts).max();
    let culprit = (0..ranks.len())
        .filter(|&i| {
            ranks[i].outcome == Outcome::Incomplete
                && !ranks[i].is_process()
                && ranks[i].last_phase < furthest
        })
        .min_by_key(|&i| last_ts(&ranks[i]))?;
    let evidence = ranks[timed_out[0]].failure.clone()?;
    let name = ranks[culprit].rank.clone();
    let quiet_since = last_ts(&ranks[culprit]);
    let r = &mut ranks[culprit];
    r.outcome = Outcome::Stalled;
    r.failure = Some(Box::new(Failure {
        outcome: Outcome::Stalled,
        phase: r.last_phase,
        phase_from: "last_event",
        phase_line: None,
        kind: FailureKind::Timeout,
        message: format!(
            "the others' collective timed out waiting; this rank's last line{} was in {}",
            quiet_since.map(|t| format!(" ({t})")).unwrap_or_default(),
            r.last_phase
        ),
        consequence_of: None,
        after_phase: None,
        ..*evidence
    }));
    for &i in &timed_out {
        set_outcome(&mut ranks[i], Outcome::Consequence, Some(name.clone()));
    }
    Some(culprit)
}

/// A rank whose log ends while the others go on for minutes printed nothing because it
/// was stuck: silence is evidence of a stall, when it is long and the others kept making
/// start-up progress (phase lines, not their own dying words).
pub(super) fn mark_silent_stalls(
    ranks: &mut [RankRun],
    events: &[Event],
    know: &Knowledge,
    numbers: &NumberedRanks,
) {
    let last_ts = |r: &RankRun| {
        r.events
            .iter()
            .filter(|&&i| know.phase_of(&events[i]).is_some())
            .filter_map(|&i| events[i].ts)
            .max()
    };
    // The others' progress also counts their lines that say they still wait for a peer
    // (a grammar's `waits_for` field: vLLM's broadcast queue finding no free block while
    // a reader has not taken the last message): the silent rank is what they wait for.
    let lasts: Vec<Option<NaiveDateTime>> = ranks
        .iter()
        .map(|r| if r.is_process() { None } else { last_ts(r) })
        .collect();
    let progress: Vec<Option<NaiveDateTime>> = (ranks.iter().zip(&lasts))
        .map(|(r, last)| {
            let waits = (r.events.iter())
                .filter(|&&i| events[i].field("waits_for").is_some())
                .filter_map(|&i| events[i].ts)
                .max();
            if r.is_process() {
                None
            } else {
                (*last).max(waits)
            }
        })
        .collect();
    // The latest progress of the others, for every rank at once: the overall latest, or
    // for the rank that holds it, the second latest (linear in the ranks, not quadratic).
    let mut best: Option<(usize, NaiveDateTime)> = None;
    let mut second: Option<(usize, NaiveDateTime)> = None;
    for (j, t) in progress.iter().enumerate() {
        let Some(t) = *t else { continue };
        if best.is_none_or(|(_, b)| t > b) {
            second = best;
            best = Some((j, t));
        } else if second.is_none_or(|(_, b)| t > b) {
            second = Some((j, t));
        }
    }
    // Waiting lines count for a rank that fell behind: one still in an earlier phase than
    // the furthest rank (the ranks that went on and now wait with the printer are not
    // what it waits for). A rank in that furthest phase is not behind it, unless the
    // waiting lines point at it (`others_wait_for`): peers at the barrier that closes the
    // phase it hangs in.
    let furthest = (ranks.iter())
        .filter(|r| !r.is_process())
        .map(|r| r.last_phase)
        .max();
    for i in 0..ranks.len() {
        if ranks[i].outcome != Outcome::Incomplete || ranks[i].is_process() {
            continue;
        }
        let Some(mine) = lasts[i] else { continue };
        let Some((j, theirs)) = (match best {
            Some((b, _)) if b == i => second,
            other => other,
        }) else {
            continue;
        };
        if (theirs - mine).num_milliseconds() < SILENCE_STALL_S * 1000 {
            continue;
        }
        let silent = crate::base::units::round_s(theirs - mine);
        let waits = progress[i] != lasts[i] || progress[j] != lasts[j];
        let waited_on = waits && others_wait_for(ranks, i, mine, events, numbers);
        if waits && furthest.is_none_or(|p| ranks[i].last_phase >= p) && !waited_on {
            continue;
        }
        let (other, their_phase) = (ranks[j].rank.clone(), ranks[j].last_phase);
        let message = if waited_on {
            format!(
                "no line for {silent} s after this one while the others waited for it ({other} in {their_phase})"
            )
        } else {
            format!(
                "no line for {silent} s after this one while {other} went on (to {their_phase})"
            )
        };
        let r = &mut ranks[i];
        let origin = r.last_origin.clone();
        // The step of the line stamped `mine`, from its format.
        let step = (r.events.iter())
            .filter(|&&k| events[k].ts == Some(mine))
            .map(|&k| events[k].ts_step_ms)
            .min()
            .unwrap_or(1000);
        r.outcome = Outcome::Stalled;
        r.failure = Some(Box::new(Failure {
            outcome: Outcome::Stalled,
            phase: r.last_phase,
            phase_from: "last_event",
            phase_line: None,
            kind: FailureKind::Timeout,
            message,
            fields: Default::default(),
            ts: Some(mine),
            ts_step_ms: step,
            origin,
            traceback: None,
            consequence_of: None,
            after_phase: None,
            reported_by: None,
        }));
    }
}

/// Whether the others' waiting lines printed while rank `i` was silent (`SILENCE_STALL_S`
/// after its last phase line at `since` and later) show that they wait for it: one
/// names it by its `peer_rank` (a number read as the other peer numbers are), or none
/// names a peer and every other rank printed one. Lines that name only other ranks
/// clear it.
pub(super) fn others_wait_for(
    ranks: &[RankRun],
    i: usize,
    since: NaiveDateTime,
    events: &[Event],
    numbers: &NumberedRanks,
) -> bool {
    let from = since + chrono::Duration::seconds(SILENCE_STALL_S);
    let (mut others, mut waiting, mut named_another) = (0usize, 0usize, false);
    for (j, r) in ranks.iter().enumerate() {
        if j == i || r.is_process() {
            continue;
        }
        others += 1;
        let mut waited = false;
        for e in r.events.iter().map(|&k| &events[k]) {
            if e.field("waits_for").is_none() || e.ts.is_none_or(|t| t < from) {
                continue;
            }
            waited = true;
            let peer = (e.field("peer_rank"))
                .and_then(FieldValue::as_i64)
                .and_then(|p| u32::try_from(p).ok());
            match peer {
                Some(p) if numbers.named(ranks, p) == ranks[i].rank => return true,
                Some(_) => named_another = true,
                None => {}
            }
        }
        waiting += usize::from(waited);
    }
    !named_another && others > 0 && waiting == others
}
