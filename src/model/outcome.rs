//! Each rank's outcome from the evidence its lines give, then across ranks: which failure
//! is the root, which failures follow it, who was terminated, who stalled, whose log merely
//! ends. What a wording means comes from the grammar files (`Knowledge`); this module only
//! weighs the evidence.

// foldhash, not SipHash: a key per rank or event (the maps' order is never read).
use foldhash::{HashMap, HashMapExt};

use chrono::NaiveDateTime;

use super::{Failure, FailureKind, Outcome, Phase, RankRun};
use crate::base::event::{kind, Event, FieldValue, Rank};
use crate::grammar::{Knowledge, OutcomeWord};

mod blame;
use blame::{
    blame_the_reported_rank, blame_the_silent_rank, follow_named_stalls, mark_silent_stalls,
};

/// A line that ends (or explains the end of) a rank's start-up, before the cross-rank
/// reading: its failure record and the rank number its wording names.
#[derive(Clone, Debug)]
pub(crate) struct Stop {
    pub(crate) failure: Failure,
    pub(crate) peer: Option<u32>,
    /// The peer is a rank the line reports dead (a `dead_rank` capture), not one it
    /// waited for or blames.
    pub(crate) peer_died: bool,
}

/// How long a rank may print nothing while the others go on before its silence is itself
/// evidence of a stall. Start-up phases log at least every few seconds; weight loading
/// from a slow disk can take minutes, but then every rank is slow.
pub(crate) const SILENCE_STALL_S: i64 = 120;

/// The outcome a line's captures say outright (`outcome = "…"`, or a `consequence`).
fn outcome_word(e: &Event) -> Option<OutcomeWord> {
    let text_field = |n: &str| e.field(n).and_then(FieldValue::as_text);
    text_field("outcome")
        .and_then(OutcomeWord::from_name)
        .or_else(|| text_field("consequence").map(|_| OutcomeWord::Consequence))
}

/// Whether [`stop_of`] can give this line a stop (a failure, or a line whose captures
/// name an outcome): asked before the phase it needs is worked out.
pub(crate) fn may_stop(e: &Event) -> bool {
    kind::is_failure(&e.kind) || outcome_word(e).is_some()
}

/// The stop evidence an event gives, if any: failures (`oom`, `error`), and lines whose
/// grammar gives them an outcome (teardown notices). `carried` is the traceback printed
/// just before, for a failure line that has none of its own.
pub(crate) fn stop_of(
    e: &Event,
    in_phase: Phase,
    default_from: &'static str,
    know: &Knowledge,
    carried: Option<&str>,
) -> Option<Stop> {
    if !may_stop(e) {
        return None;
    }
    let word_field = outcome_word(e);
    let is_failure = kind::is_failure(&e.kind);
    let text_field = |n: &str| e.field(n).and_then(FieldValue::as_text);
    let failure_word = text_field("failure").and_then(crate::grammar::captured_failure);
    let kind = match (e.kind.as_str(), failure_word) {
        (kind::OOM, _) => FailureKind::Oom,
        (_, Some("not_enough_memory")) => FailureKind::NotEnoughMemory,
        (_, Some("nccl")) => FailureKind::Nccl,
        (_, Some("timeout")) => FailureKind::Timeout,
        (_, Some("signal")) => FailureKind::Signal,
        _ if !is_failure => FailureKind::Signal,
        _ => FailureKind::Exception,
    };
    let traceback = e.detail().or(carried).map(str::to_string);
    // What this failure's wording and frames are read from: its own traceback, not a
    // later one the scan kept with it (the launcher's `Initialization failed. Please see
    // the error messages above` after a scheduler's traceback is a consequence; the
    // scheduler's own failure is not).
    let own_tb = traceback.as_deref().map(own_traceback);
    let mut text = e.message.to_string();
    if let Some(tb) = own_tb {
        text.push('\n');
        text.push_str(tb);
    }
    let matched = know.outcome_of(&text);
    let word = word_field.or(matched.map(|m| m.state));
    let dead = e
        .field("dead_rank")
        .and_then(FieldValue::as_i64)
        .and_then(|p| u32::try_from(p).ok());
    let peer = e
        .field("peer_rank")
        .or_else(|| e.field("blamed_rank"))
        .or_else(|| e.field("errors_from_rank"))
        .and_then(FieldValue::as_i64)
        .and_then(|p| u32::try_from(p).ok())
        .or(matched.and_then(|m| m.peer))
        .or(dead);
    // Frames first, the failing call's wording second, the last phase line third.
    let (phase, phase_from) = match own_tb.and_then(|tb| know.phase_from_traceback(tb)) {
        Some(p) => (p, "frames"),
        None => match text_field("phase").and_then(Phase::from_name) {
            Some(p) => (p, "wording"),
            None => (in_phase, default_from),
        },
    };
    let outcome = match word {
        None => Outcome::Failed,
        Some(OutcomeWord::Consequence) => Outcome::Consequence,
        Some(OutcomeWord::Terminated) => Outcome::Terminated,
        Some(OutcomeWord::Stalled) => Outcome::Stalled,
        Some(OutcomeWord::Failed) => Outcome::Failed,
    };
    let kind = match (outcome, kind) {
        (Outcome::Stalled, FailureKind::Exception) => FailureKind::Timeout,
        (_, k) => k,
    };
    Some(Stop {
        failure: Failure {
            outcome,
            phase,
            phase_from,
            phase_line: None,
            kind,
            message: e.message.to_string(),
            fields: e.fields.clone(),
            ts: e.ts,
            ts_step_ms: e.ts_step_ms,
            origin: Some(e.origin.clone()),
            traceback,
            consequence_of: None,
            after_phase: None,
            reported_by: None,
        },
        peer_died: dead.is_some() && dead == peer,
        peer,
    })
}

/// The first traceback of a record's continuation lines: up to a later `Traceback (most
/// recent call last):` that starts a traceback of its own, i.e. one not introduced by
/// Python's chaining sentences (`During handling of the above exception …`, `The above
/// exception was the direct cause …`).
pub(crate) fn own_traceback(tb: &str) -> &str {
    const HEADER: &str = "Traceback (most recent call last):";
    let mut previous = "";
    let mut offset = 0;
    // A header ends the traceback only after one: lines before any frame (a wrapper's
    // `Attaching to …`, the excerpt's lead) are not a traceback of their own.
    let mut seen_frame = false;
    for line in tb.split_inclusive('\n') {
        let text = line.trim();
        if seen_frame && text.ends_with(HEADER) {
            let chained = previous.contains("During handling of the above exception")
                || previous.contains("The above exception was the direct cause");
            if !chained {
                return &tb[..offset];
            }
        }
        if !text.is_empty() {
            previous = text;
        }
        seen_frame |= text.contains("File \"");
        offset += line.len();
    }
    tb
}

/// How much a failure explains: an OOM more than the exception that carried it, a
/// closing exception line (with its type) more than a bare "hit an exception" header, and
/// an OOM that says what it asked for more than one that does not (a C++ runtime's
/// `cudaMallocAsync: out of memory` before torch's `Tried to allocate 1.50 GiB`).
fn specificity(f: &Failure) -> (u8, bool, bool) {
    let k = match f.kind {
        FailureKind::Oom => 5,
        FailureKind::NotEnoughMemory => 4,
        FailureKind::Nccl => 3,
        FailureKind::Exception => 2,
        FailureKind::Timeout => 1,
        FailureKind::Signal | FailureKind::Died => 0,
    };
    (
        k,
        f.fields.contains_key("exc_type"),
        f.fields.contains_key("requested_bytes"),
    )
}

/// The one line that decides a rank's outcome: its own failure if it has one (the most
/// specific, the first among equals), else the first consequence, stall or termination.
pub(crate) fn decisive(stops: Vec<Stop>) -> Option<Stop> {
    let mut own: Option<Stop> = None;
    let mut other: Option<Stop> = None;
    for s in stops {
        match s.failure.outcome {
            Outcome::Failed => {
                own = Some(match own.take() {
                    None => s,
                    Some(o) if specificity(&s.failure) > specificity(&o.failure) => {
                        with_traceback_of(s, &o)
                    }
                    Some(o) => with_traceback_of(o, &s),
                });
            }
            o => {
                let rank = |o: Outcome| match o {
                    Outcome::Consequence => 0,
                    Outcome::Stalled => 1,
                    _ => 2,
                };
                // Of two consequences, the one naming whom it followed, else the more
                // specific: a bare `WorkerProc failed to start.` header, whose traceback
                // says `remote process exited`, yields to the `NCCL error` line closing it.
                let weight = |s: &Stop| (s.peer.is_some(), specificity(&s.failure));
                if other.as_ref().is_none_or(|x| {
                    let (a, b) = (rank(o), rank(x.failure.outcome));
                    a < b || (a == b && weight(&s) > weight(x))
                }) {
                    other = Some(s);
                }
            }
        }
    }
    own.or(other)
}

/// The kept failure of a rank, with the traceback of the other when it printed none: a
/// C++ runtime's OOM line says what it asked for, the Python traceback after it closes
/// on a second OOM line (LMDeploy's TurboMind) — the frames, and the phase they give,
/// are the kept one's too.
fn with_traceback_of(mut kept: Stop, other: &Stop) -> Stop {
    if kept.failure.traceback.is_some() || other.failure.traceback.is_none() {
        return kept;
    }
    kept.failure.traceback = other.failure.traceback.clone();
    if other.failure.phase_from == "frames" && kept.failure.phase_from != "frames" {
        kept.failure.phase = other.failure.phase;
        kept.failure.phase_from = "frames";
        kept.failure.phase_line = None;
        kept.failure.after_phase = None;
    }
    kept
}

type Order = (bool, Option<NaiveDateTime>, Option<(usize, u64)>);

/// When each source's stamped lines were printed, by line: an untimed failure line (the
/// exception line closing a bare traceback) was printed at or after the stamped line
/// before it in its file, and takes that stamp to be ordered among the ranks' failures.
struct StampsBySource(HashMap<usize, Vec<(u64, NaiveDateTime)>>);

impl StampsBySource {
    /// Built only when some rank's failure has no stamp: a run whose failures are all
    /// stamped (most) indexes none of its events.
    fn of(events: &[Event], ranks: &[RankRun]) -> StampsBySource {
        let mut by: HashMap<usize, Vec<(u64, NaiveDateTime)>> = HashMap::new();
        if !(ranks.iter()).any(|r| r.failure.as_ref().is_some_and(|f| f.ts.is_none())) {
            return StampsBySource(by);
        }
        for e in events {
            if let Some(ts) = e.ts {
                by.entry(e.origin.source)
                    .or_default()
                    .push((e.origin.line, ts));
            }
        }
        by.values_mut().for_each(|v| v.sort_unstable());
        StampsBySource(by)
    }

    /// The failure's own stamp, else that of the last stamped line before it in its file.
    fn of_failure(&self, f: &Failure) -> Option<NaiveDateTime> {
        f.ts.or_else(|| {
            let o = f.origin.as_ref()?;
            let lines = self.0.get(&o.source)?;
            let before = lines.partition_point(|&(line, _)| line < o.line);
            Some(lines.get(before.checked_sub(1)?)?.1)
        })
    }
}

fn order(r: &RankRun, stamps: &StampsBySource) -> Order {
    let f = r.failure.as_ref();
    (
        r.is_process(),
        f.and_then(|f| stamps.of_failure(f)),
        f.and_then(|f| f.origin.as_ref().map(|o| (o.source, o.line))),
    )
}

fn first_with(ranks: &[RankRun], o: Outcome, stamps: &StampsBySource) -> Option<usize> {
    ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.outcome == o)
        .min_by_key(|(_, r)| order(r, stamps))
        .map(|(i, _)| i)
}

/// The ranks a wording's number (a global rank) names, looked up: built once per run, as
/// every rank's stop may name one (a search per name was quadratic in the ranks).
struct NumberedRanks<'g> {
    globals: &'g std::collections::HashMap<u32, Rank>,
    /// Where the run has the rank a global number names, its index.
    global_at: HashMap<u32, usize>,
    /// The first worker with that single number (`TP3` for 3), by index.
    single_at: HashMap<u32, usize>,
}

impl<'g> NumberedRanks<'g> {
    fn of(ranks: &[RankRun], globals: &'g std::collections::HashMap<u32, Rank>) -> Self {
        let mut single_at: HashMap<u32, usize> = HashMap::new();
        let mut index: HashMap<&Rank, usize> = HashMap::new();
        for (i, r) in ranks.iter().enumerate() {
            index.entry(&r.rank).or_insert(i);
            if let (false, Some((_, n))) = (r.is_process(), r.rank.single()) {
                single_at.entry(n).or_insert(i);
            }
        }
        let global_at = (globals.iter())
            .filter_map(|(n, r)| Some((*n, *index.get(r)?)))
            .collect();
        NumberedRanks {
            globals,
            global_at,
            single_at,
        }
    }

    /// The rank number `n` names: the rank the run's layout puts there (`PP1 TP2` for 6 in
    /// PP2 × TP4), else the rank with that single number (`TP3` for 3), as the global rank
    /// of a TP-only run; otherwise a rank the log itself does not show.
    fn named(&self, ranks: &[RankRun], n: u32) -> Rank {
        match (self.globals.get(&n), self.single_at.get(&n)) {
            (Some(r), _) => r.clone(),
            (None, Some(&i)) => ranks[i].rank.clone(),
            (None, None) => Rank::global(n),
        }
    }

    /// The index of the rank `named` gives, where the run has it.
    fn index(&self, n: u32) -> Option<usize> {
        match self.globals.contains_key(&n) {
            true => self.global_at.get(&n).copied(),
            false => self.single_at.get(&n).copied(),
        }
    }
}

fn set_outcome(r: &mut RankRun, o: Outcome, of: Option<Rank>) {
    r.outcome = o;
    if let Some(f) = r.failure.as_mut() {
        f.outcome = o;
        f.consequence_of = of;
    }
}

/// Reads the ranks' stops together and returns the root rank: the first own failure (a
/// worker's before an engine process's), else the first stall.
pub(crate) fn resolve(
    ranks: &mut [RankRun],
    stops: Vec<Option<Box<Stop>>>,
    launcher: &mut [Stop],
    events: &[Event],
    run_ready: bool,
    know: &Knowledge,
    globals: &std::collections::HashMap<u32, Rank>,
) -> Option<Rank> {
    let peers: Vec<Option<u32>> = stops
        .iter()
        .map(|s| s.as_ref().and_then(|s| s.peer))
        .collect();
    let stamps = StampsBySource::of(events, ranks);
    let numbers = NumberedRanks::of(ranks, globals);
    let mut root = first_with(ranks, Outcome::Failed, &stamps);
    if root.is_none_or(|i| ranks[i].is_process()) {
        root = blame_the_reported_rank(ranks, &stops, launcher, &numbers, &stamps).or(root);
    }
    if root.is_none() {
        root = blame_the_silent_rank(ranks, events);
    }
    // An engine's bare exception reports its workers' failures (`WorkerProc initialization
    // failed` after a worker's `remote process exited`); its OOM or NCCL error is its own.
    let engine_reports = |i: usize| {
        ranks[i].is_process()
            && (ranks[i].failure.as_ref()).is_some_and(|f| f.kind == FailureKind::Exception)
    };
    if root.is_none_or(engine_reports) {
        // A consequence wording with nobody to be a consequence of is the rank's own
        // failure.
        for (i, r) in ranks.iter_mut().enumerate() {
            if r.outcome == Outcome::Consequence && peers[i].is_none() {
                set_outcome(r, Outcome::Failed, None);
            }
        }
        root = first_with(ranks, Outcome::Failed, &stamps);
    }
    let root_rank = root.map(|i| ranks[i].rank.clone());
    // With no rank's own failure the first stall is the root: the ranks terminated or
    // failing as a consequence after it are shown after it.
    let after = (root_rank.clone())
        .or_else(|| first_with(ranks, Outcome::Stalled, &stamps).map(|i| ranks[i].rank.clone()));
    let root_kind = root.and_then(|i| ranks[i].failure.as_ref().map(|f| f.kind));
    let root_ts = root.and_then(|i| ranks[i].failure.as_ref().and_then(|f| f.ts));
    for i in 0..ranks.len() {
        if Some(i) == root {
            continue;
        }
        let named = peers[i].map(|p| numbers.named(ranks, p));
        let of = named.or_else(|| after.clone());
        let r = &mut ranks[i];
        let Some(f) = r.failure.as_ref() else {
            continue;
        };
        match r.outcome {
            Outcome::Failed if root.is_some() => {
                // Engine processes report their workers' failures; a collective error after
                // another rank's non-collective failure follows that rank's death.
                let collective_after = f.kind == FailureKind::Nccl
                    && root_kind != Some(FailureKind::Nccl)
                    && f.ts >= root_ts;
                if r.is_process() || collective_after {
                    set_outcome(r, Outcome::Consequence, root_rank.clone());
                }
            }
            Outcome::Consequence | Outcome::Terminated => {
                let o = r.outcome;
                set_outcome(r, o, of);
            }
            Outcome::Stalled if root.is_some() => {
                set_outcome(r, Outcome::Consequence, root_rank.clone());
            }
            _ => {}
        }
    }
    follow_chains(ranks);
    // With no rank's own failure, a silent rank's stall is read before the launcher's
    // teardown: a launcher that gives up on a hung worker group (`worker group failed …`
    // with `set.outcome`) would otherwise make the hung rank `terminated`, and a rank that
    // only waited for it the root.
    let silence_first = root.is_none() && !run_ready;
    let mut after = after;
    if silence_first {
        mark_silent_stalls(ranks, events, know, &numbers);
        follow_named_stalls(ranks, &peers, &numbers);
        after = first_with(ranks, Outcome::Stalled, &stamps).map(|i| ranks[i].rank.clone());
    }
    if let Some(r) = &after {
        launcher_teardown(ranks, launcher, r, run_ready);
    } else if run_ready {
        // Shutdown notices after a server that was ready, with nothing failed: an
        // ordinary stop.
        for r in ranks
            .iter_mut()
            .filter(|r| r.outcome == Outcome::Terminated)
        {
            r.outcome = Outcome::Ready;
            r.failure = None;
            r.reached_ready = true;
            r.last_phase = Phase::Ready;
        }
    }
    if !run_ready && !silence_first {
        mark_silent_stalls(ranks, events, know, &numbers);
        follow_named_stalls(ranks, &peers, &numbers);
    }
    // A launcher line that followed a failure names the rank it came from (its
    // `peer_rank`), else it followed the root, as the ranks it ended say.
    for s in launcher.iter_mut().filter(|s| {
        matches!(
            s.failure.outcome,
            Outcome::Consequence | Outcome::Terminated
        )
    }) {
        s.failure.consequence_of = (s.peer.map(|p| numbers.named(ranks, p))).or(after.clone());
    }
    root.map(|i| ranks[i].rank.clone())
        .or_else(|| first_with(ranks, Outcome::Stalled, &stamps).map(|i| ranks[i].rank.clone()))
}

/// `A` followed `B`, which followed `C`: `A` followed `C`, the failure that started it
/// (rank 0's `Ranks 2 failed to pass monitoredBarrier` behind rank 1's complaint about 0).
fn follow_chains(ranks: &mut [RankRun]) {
    // Who each consequence followed, looked up by rank (linear per pass; chains are short).
    let followed: HashMap<Rank, Rank> = ranks
        .iter()
        .filter(|r| r.outcome == Outcome::Consequence)
        .filter_map(|r| Some((r.rank.clone(), r.failure.as_ref()?.consequence_of.clone()?)))
        .collect();
    if followed.is_empty() {
        return;
    }
    for r in ranks.iter_mut() {
        let me = r.rank.clone();
        let Some(f) = r.failure.as_mut() else {
            continue;
        };
        let Some(mut of) = f.consequence_of.clone() else {
            continue;
        };
        // At most as many steps as there are links, so a cycle cannot loop.
        for _ in 0..followed.len() {
            match followed.get(&of) {
                Some(next) if *next != me && *next != of => of = next.clone(),
                _ => break,
            }
        }
        f.consequence_of = Some(of);
    }
}

/// A launcher line after the root failure that reports it and ends the server (SGLang's
/// `Received sigquit from a child process` kills the process tree): the ranks whose logs
/// simply ended were terminated, and that line is the evidence — the first that says it
/// terminates (`sending SIGKILL to the other ranks`), else the first consequence line (a
/// launcher's echo of the root's death, `scheduler r5 died with exit code 1`, is about the
/// root, not the others).
fn launcher_teardown(ranks: &mut [RankRun], launcher: &[Stop], root: &Rank, run_ready: bool) {
    let first = |o: Outcome| launcher.iter().find(|s| s.failure.outcome == o);
    let Some(line) = first(Outcome::Terminated).or_else(|| first(Outcome::Consequence)) else {
        return;
    };
    for r in ranks
        .iter_mut()
        .filter(|r| r.outcome == Outcome::Incomplete && !r.is_process())
    {
        // A rank in `ready` only because it completed the phase before, in a run that
        // printed no ready line, never served: `after kv_cache, before ready`, its LAST
        // PHASE the one it completed, as a rank's own failure there reads.
        let completed = (r.last_phase == Phase::Ready && !run_ready)
            .then(|| {
                (r.phases.iter().map(|s| s.phase))
                    .filter(|p| *p != Phase::Ready)
                    .max()
            })
            .flatten();
        if let Some(p) = completed {
            r.last_phase = p;
        }
        r.outcome = Outcome::Terminated;
        r.failure = Some(Box::new(Failure {
            outcome: Outcome::Terminated,
            phase: completed.map_or(r.last_phase, |_| Phase::Ready),
            phase_from: "last_event",
            phase_line: None,
            consequence_of: Some(root.clone()),
            after_phase: completed,
            ..line.failure.clone()
        }));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn own_traceback_stops_at_a_new_traceback_but_not_at_a_chained_one() {
        let tb = "  File \"a.py\", line 1, in f\nRuntimeError: first\n\nTraceback (most recent call last):\n  File \"b.py\", line 2, in g\nRuntimeError: second";
        assert_eq!(
            super::own_traceback(tb),
            "  File \"a.py\", line 1, in f\nRuntimeError: first\n\n"
        );
        // Lines before any frame are no traceback of their own.
        let lead = "Attaching to svc-1\nsvc-1  | Traceback (most recent call last):\nsvc-1  |   File \"b.py\", line 2, in g\n";
        assert_eq!(super::own_traceback(lead), lead);
        let chained = "  File \"a.py\", line 1, in f\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"b.py\", line 2, in g\nRuntimeError: second";
        assert_eq!(super::own_traceback(chained), chained);
    }
}
