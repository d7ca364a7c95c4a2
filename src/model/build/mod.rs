//! Events to a run: duplicates across files dropped, processes resolved to ranks, attempts
//! split, each rank's events gathered and its outcome weighed.
//!
//! The run is assembled here; the jobs it is made of live beside it: `dedup` (lines two
//! files share), `processes` (pids to ranks), `names` (names only the whole run settles)
//! and `per_rank` (one rank's phases, failure and outcome).

mod dedup;
mod names;
mod per_rank;
mod phase_at;
mod processes;

use std::collections::{BTreeMap, HashMap};

use super::order::time_order;
use super::{attempts, outcome, AttemptInfo, Phase, PhaseOrder, RankRun, Run, SourceInfo};
use crate::base::event::{kind, Event, FieldValue, Origin, Rank};
use crate::grammar::Knowledge;
use crate::model::notes::ReadNote;

pub use dedup::dedup_across_sources;
pub(crate) use names::configured_sizes;
pub use names::name_first_stage;
use names::{settle_rank_names, settle_with, RankNames};
use per_rank::{build_rank, RunFacts};
use processes::resolve_processes;

/// Each event's start-up attempt (0-based), how many the log holds, and the one to read:
/// `attempt` (1-based, clamped) when given, else the last.
fn choose_attempt(
    events: &[Event],
    know: &Knowledge,
    attempt: Option<usize>,
) -> (Vec<usize>, usize, usize) {
    let attempt_of = attempts::split(events, know);
    let n_attempts = attempt_of.iter().copied().max().map_or(1, |m| m + 1);
    let chosen = attempt
        .map(|a| a.clamp(1, n_attempts) - 1)
        .unwrap_or(n_attempts - 1);
    (attempt_of, n_attempts, chosen)
}

/// Builds the run model from deduplicated events: the last start-up attempt the log
/// holds, or `attempt` (1-based) when given.
pub fn build(
    name: String,
    mut events: Vec<Event>,
    sources: Vec<SourceInfo>,
    know: &Knowledge,
    attempt: Option<usize>,
) -> Run {
    let process_notes = resolve_processes(&mut events, know, None);
    let (attempt_of, n_attempts, chosen) = choose_attempt(&events, know, attempt);
    if n_attempts < 2 {
        let run = build_one(name, events, sources, know);
        return numbered(run, &process_notes, 0, &std::sync::Arc::from([]));
    }
    let (mut kept, infos) = by_attempt(&name, events, &attempt_of, n_attempts, know, |i| {
        i == chosen
    });
    let chosen_events = kept.get_mut(chosen).and_then(Option::take);
    let run = build_one(name, chosen_events.unwrap_or_default(), sources, know);
    numbered(run, &process_notes, chosen, &infos.into())
}

/// Builds the run model from the events of nodes each prepared on its own
/// (`prepare_node`): each node kept one start-up (the one asked for, else its last), so
/// the events are not split into start-ups again. The split found one start-up here, or
/// would have chosen the last where `--attempt` asked for another; on a run of 8,192 rank
/// files over 1,024 nodes it was 2 % of the work.
///
/// Nor are processes resolved again: a process and a pidless driver run on one host, so
/// each node resolved its own, with the sizes the run's configuration gives. Resolved
/// over the whole run, a pid one node's worker shares with another node's (pids are per
/// host, and most lines name no host) could lend the one's rank to a line of the other's
/// still named by a global number alone. Over the 81 runs `scripts/same-outputs.sh`
/// reads, resolving again changed no output.
pub(crate) fn build_prepared(
    name: String,
    events: Vec<Event>,
    sources: Vec<SourceInfo>,
    know: &Knowledge,
) -> Run {
    build_one(name, events, sources, know)
}

/// Every start-up the events hold, in order, each built as `build` builds the one it is
/// asked for (`--attempt all`), the start-ups split and summed up once for all of them.
pub fn build_every_attempt<'k>(
    name: String,
    mut events: Vec<Event>,
    sources: Vec<SourceInfo>,
    know: &'k Knowledge,
) -> impl Iterator<Item = Run> + 'k {
    let process_notes = resolve_processes(&mut events, know, None);
    let (attempt_of, n_attempts, _) = choose_attempt(&events, know, None);
    let (kept, infos) = if n_attempts < 2 {
        (vec![Some(events)], Vec::new())
    } else {
        by_attempt(&name, events, &attempt_of, n_attempts, know, |_| true)
    };
    let infos: std::sync::Arc<[AttemptInfo]> = infos.into();
    (kept.into_iter().enumerate()).map(move |(i, evs)| {
        let run = build_one(name.clone(), evs.unwrap_or_default(), sources.clone(), know);
        numbered(run, &process_notes, i, &infos)
    })
}

/// Start-up `i` (0-based) of a log's `infos` (empty for a log of one) as `build` gives
/// it: with the notes resolving the processes made, and its number when there are several.
fn numbered(
    mut run: Run,
    process_notes: &[ReadNote],
    i: usize,
    infos: &std::sync::Arc<[AttemptInfo]>,
) -> Run {
    run.notes.extend(process_notes.iter().cloned());
    if infos.len() > 1 {
        run.attempt = i + 1;
        run.attempts = infos.clone();
    }
    run
}

/// The events of each start-up as its own build keeps them (of those `keep` asks for;
/// the others are dropped as soon as they are summed up), and what each start-up says of
/// itself (`attempts::info`).
fn by_attempt(
    name: &str,
    events: Vec<Event>,
    attempt_of: &[usize],
    n_attempts: usize,
    know: &Knowledge,
    keep: impl Fn(usize) -> bool,
) -> (Vec<Option<Vec<Event>>>, Vec<AttemptInfo>) {
    let mut per: Vec<Vec<Event>> = vec![Vec::new(); n_attempts];
    for (e, &a) in events.into_iter().zip(attempt_of) {
        if let Some(p) = per.get_mut(a) {
            p.push(e);
        }
    }
    let mut infos = Vec::with_capacity(n_attempts);
    let mut kept = Vec::with_capacity(n_attempts);
    for (i, evs) in per.into_iter().enumerate() {
        let sub = build_one(name.to_string(), evs, Vec::new(), know);
        infos.push(attempts::info(i + 1, &sub));
        kept.push(keep(i).then_some(sub.events));
    }
    (kept, infos)
}

/// One node's events as the whole run's build takes them, with what the node's own
/// reading needs: its ranks and its configuration.
pub struct NodeEvents {
    /// Processes resolved to ranks, the chosen attempt, in time order, rank names settled.
    pub(crate) events: Vec<Event>,
    /// The node's ranks, sorted, as `build` would list them.
    pub(crate) ranks: Vec<Rank>,
    pub(crate) config:
        Option<Result<crate::model::config::ParsedConfig, crate::model::config::ConfigError>>,
    /// How many start-ups the node's logs hold.
    pub(crate) attempts: usize,
    /// What naming its ranks noted (global numbers the sizes could not place).
    pub(crate) notes: Vec<crate::model::notes::ReadNote>,
}

/// What `build` does to one node's events before the run is read, and no more: a run of
/// several nodes is built once from all of them, and building every node's ranks, phases
/// and outcomes first (only to throw them away) was a fifth of loading 1,024 nodes. The
/// events come out exactly as `build(…).events` would give them. `run_sizes`: the layout
/// sizes the run's configuration printed, wherever it was printed (a node with no
/// configuration line of its own names global ranks by them).
pub(crate) fn prepare_node(
    mut events: Vec<Event>,
    know: &Knowledge,
    attempt: Option<usize>,
    run_sizes: Option<crate::model::layout::LayoutSizes>,
) -> NodeEvents {
    let mut notes = resolve_processes(&mut events, know, run_sizes);
    let (attempt_of, n_attempts, chosen) = choose_attempt(&events, know, attempt);
    if n_attempts > 1 {
        // `build` ordered and settled the chosen attempt on its own before the run.
        events = events
            .into_iter()
            .zip(attempt_of)
            .filter(|(_, a)| *a == chosen)
            .map(|(e, _)| e)
            .collect();
        events = settle_rank_names(time_order(events), know, run_sizes).0;
    }
    let (events, unplaced) = settle_rank_names(time_order(events), know, run_sizes);
    let (rank_events, _, _) = group_by_rank(&events, know);
    let config = crate::model::config::Config::of_events(&events, know);
    notes.extend(unplaced);
    NodeEvents {
        notes,
        attempts: n_attempts,
        ranks: rank_events.into_keys().collect(),
        events,
        config,
    }
}

/// Lines of no rank that a rank adopted: the event's index and the rank.
type Adopted = Vec<(usize, Rank)>;

/// Each rank's events (indices), the launcher's (the events that name no rank and that no
/// rank adopts), and the adopted ones.
fn group_by_rank(
    events: &[Event],
    know: &Knowledge,
) -> (BTreeMap<Rank, Vec<usize>>, Vec<usize>, Adopted) {
    // Hashed while grouping, sorted once at the end: a search of an ordered map of
    // thousands of ranks per event (string comparisons all the way down) was a tenth of
    // building a run of 8,192 ranks.
    let mut slot_of: HashMap<&Rank, usize, foldhash::fast::RandomState> = HashMap::default();
    // The same slots by where a rank's list of tags is (`Rank::tags_address`): a file's
    // events of one rank share one list, so most events find their slot without reading
    // their rank's tags. In time order a run of thousands of ranks meets each list again
    // tens of thousands of events later, its tags long gone from the caches.
    let mut slot_of_list: HashMap<usize, usize, foldhash::fast::RandomState> = HashMap::default();
    let mut lists: Vec<(&Rank, Vec<usize>)> = Vec::new();
    let mut launcher: Vec<usize> = Vec::new();
    // Events of one stamp are in file order, so a rank's events often come one after
    // another: those after the first join the list of the rank before without a hash.
    let mut last: Option<(&Rank, usize)> = None;
    for (i, e) in events.iter().enumerate() {
        let Some(r) = e.rank.as_ref().filter(|r| !r.is_empty()) else {
            launcher.push(i);
            continue;
        };
        let slot = match last {
            Some((lr, slot)) if lr == r => slot,
            _ => *slot_of_list.entry(r.tags_address()).or_insert_with(|| {
                *slot_of.entry(r).or_insert_with(|| {
                    lists.push((r, Vec::new()));
                    lists.len() - 1
                })
            }),
        };
        last = Some((r, slot));
        if let Some((_, list)) = lists.get_mut(slot) {
            list.push(i);
        }
    }
    // The rank is cloned once per rank, not once per event.
    let mut rank_events: BTreeMap<Rank, Vec<usize>> = (lists.into_iter())
        .map(|(r, list)| (r.clone(), list))
        .collect();
    let adopted = adopt_rankless(&mut rank_events, &mut launcher, events, know);
    (rank_events, launcher, adopted)
}

/// Each rank read (`build_rank`), with what stopped it; a rank with no events of its own
/// ends at the last line its record prefixes were seen on (`silent`).
fn build_ranks(
    rank_events: BTreeMap<Rank, Vec<usize>>,
    silent: &BTreeMap<Rank, Origin>,
    events: &[Event],
    facts: &RunFacts,
    know: &Knowledge,
) -> (Vec<RankRun>, Vec<Option<Box<outcome::Stop>>>) {
    // Boxed: a stop is a failure's evidence, a few hundred bytes, and few ranks have one.
    let mut stops = Vec::with_capacity(rank_events.len());
    let mut ranks = Vec::with_capacity(rank_events.len());
    for (rank, idx) in rank_events {
        let seen_at = silent.get(&rank).cloned();
        let (mut r, stop) = build_rank(rank, idx, events, facts, know);
        if r.last_origin.is_none() {
            r.last_origin = seen_at;
        }
        ranks.push(r);
        stops.push(stop.map(Box::new));
    }
    (ranks, stops)
}

fn build_one(name: String, events: Vec<Event>, sources: Vec<SourceInfo>, know: &Knowledge) -> Run {
    let events = time_order(events);
    let first_stamped = events
        .iter()
        .filter(|e| e.ts.is_some())
        .min_by_key(|e| e.ts);
    let start = first_stamped.and_then(|e| Some((e.ts?, e.ts_step_ms)));
    let start_date_inferred = first_stamped.is_some_and(|e| e.year_inferred);
    let ready = events.iter().any(|e| e.kind == kind::READY);
    // A run has a handful of grammars: kept distinct as they come (one comparison per
    // event, almost always with the previous event's), then sorted; collecting every
    // event's name into a sorted set was a tenth of building a run of 8,192 ranks.
    let mut grammars: Vec<String> = Vec::new();
    for e in &events {
        if !grammars.iter().rev().any(|g| *g == e.grammar) {
            grammars.push(e.grammar.to_string());
        }
    }
    grammars.sort();
    let year_inferred = events.iter().any(|e| e.year_inferred);

    let names = RankNames::of(&events, know, None);
    let unplaced = names.unplaced.clone();
    let mut events = events;
    settle_with(&mut events, &names);
    let (mut rank_events, launcher, adopted) = group_by_rank(&events, know);
    // A line a rank adopted (a failure it printed without its prefix, the Python side's
    // line after its OOM) is listed with that rank by `events` and `--rank` too.
    for (i, rank) in adopted {
        events[i].rank = Some(rank);
    }
    // Ranks whose record lines named them but gave no event (notices, a cut line): they
    // exist, and their log ends where their last line is.
    let mut silent: BTreeMap<Rank, Origin> = BTreeMap::new();
    for (si, src) in sources.iter().enumerate() {
        for (seen, _, last) in &src.ranks_seen {
            let settled = names.settle(seen);
            let Some(rank) = settled.as_ref().map_or(Some(seen), Option::as_ref) else {
                continue;
            };
            if rank_events.contains_key(rank) {
                continue;
            }
            let o = Origin {
                source: si,
                line: *last,
            };
            let e = silent.entry(rank.clone()).or_insert_with(|| o.clone());
            if e.source == si && e.line < *last {
                *e = o;
            }
        }
    }
    for r in silent.keys() {
        rank_events.insert(r.clone(), Vec::new());
    }

    // Lines after the server's ready line happen while serving, whatever a rank's own
    // last phase line was (vLLM workers print none after KV sizing).
    let ready_at = events.iter().position(|e| e.kind == kind::READY);
    let facts = RunFacts {
        start,
        ready,
        ready_at,
        order: phase_order(&events, &grammars, know),
    };
    let (mut ranks, stops) = build_ranks(rank_events, &silent, &events, &facts, know);
    let mut launcher_stops = launcher_stops(&events, &launcher, know);
    let root = outcome::resolve(
        &mut ranks,
        stops,
        &mut launcher_stops,
        &events,
        ready,
        know,
        &names.globals,
    );
    let startup_events = events.iter().any(|e| know.is_startup_event(e));
    let config = crate::model::config::Config::of_events(&events, know);
    let launcher_failures = launcher_stops.into_iter().map(|s| s.failure).collect();
    let servers: Vec<String> = server_of(&events, know).into_iter().collect();
    // The server's grammar first (`read as vllm+streams`), the others by name.
    grammars.sort_by_key(|g| !servers.contains(g));

    Run {
        name,
        sources,
        events,
        ranks,
        launcher_failures,
        root,
        attempt: 1,
        attempts: std::sync::Arc::from([]),
        ready,
        start: start.map(|(t, _)| t),
        servers,
        grammars,
        frame_phases: know.frames.clone(),
        remedy_rules: know.remedy.clone(),
        year_inferred,
        start_date_inferred,
        notes: unplaced.into_iter().collect(),
        gpus: Vec::new(),
        gpu_processes: Vec::new(),
        nodes: Vec::new(),
        startup_events,
        config,
        phase_order: facts.order,
    }
}

/// The stops the launcher's own lines give (no rank's): a failure's phase, unless its
/// frames, wording or own event say, is the one the ranks had reached by its line.
fn launcher_stops(events: &[Event], launcher: &[usize], know: &Knowledge) -> Vec<outcome::Stop> {
    let mut ranks_at = None;
    (launcher.iter())
        .filter(|&&i| outcome::may_stop(&events[i]))
        .filter_map(|&i| {
            let e = &events[i];
            let (phase, from) = match know.phase_of(e) {
                Some((p, _)) => (p, "event"),
                None => phase_at::ranks_at_line(&mut ranks_at, events, launcher, know, e),
            };
            outcome::stop_of(e, phase, from, know, None)
        })
        .collect()
}

/// The phases the run's server goes through: those the run's server grammars declare and
/// those its lines reached. A run read by no server grammar (component lines only) may be
/// any server: every canonical phase.
fn phase_order(events: &[Event], grammars: &[String], know: &Knowledge) -> PhaseOrder {
    let servers: Vec<&String> = (grammars.iter())
        .filter(|g| know.describes_server(g))
        .collect();
    if servers.is_empty() {
        return PhaseOrder::CANONICAL;
    }
    let declared = servers.into_iter().flat_map(|g| know.declared_phases(g));
    // A line of a kind its grammar declares nothing for takes another grammar's meaning
    // (`Knowledge::meaning_of`): its phase is reached, declared or not.
    let reached = events
        .iter()
        .flat_map(|e| (know.phase_of(e).map(|(p, _)| p).into_iter()).chain(know.then_of(e)));
    PhaseOrder::of(declared.chain(reached))
}

/// Which server a run is, as its lines say as a whole: the grammar that read its
/// configuration line, else the server grammar with the most events. A few lines another
/// server's grammar also matches (a vLLM log with one SGLang-worded line, SGLang's vendored
/// vLLM modules) do not make a second server.
fn server_of(events: &[Event], know: &Knowledge) -> Option<String> {
    if let Some(e) = events
        .iter()
        .find(|e| e.kind == kind::SERVER_ARGS && know.describes_server(&e.grammar))
    {
        return Some(e.grammar.to_string());
    }
    // A handful of grammars, and events of one grammar come in runs: a linear list with
    // the previous event's entry tried first, not a map entry per event (runs of
    // thousands of ranks).
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let mut last = usize::MAX;
    for e in events {
        let g = e.grammar.as_str();
        match counts.get_mut(last) {
            Some(c) if c.0 == g => c.1 += 1,
            _ => match counts.iter().position(|c| c.0 == g) {
                Some(i) => {
                    counts[i].1 += 1;
                    last = i;
                }
                None => {
                    counts.push((g, 1));
                    last = counts.len() - 1;
                }
            },
        }
    }
    counts
        .into_iter()
        .filter(|(g, _)| know.describes_server(g))
        // Most events first; among equals the first name, so the choice is stable.
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
        .map(|(g, _)| g.to_string())
}

/// Failures printed by no named process, given to the rank they are of:
/// - one that names its GPU (PyTorch's `GPU 1 has a total capacity of …`), in a one-node
///   run of plain TP ranks, is that GPU's rank's: the GPU a process allocates on is its TP
///   rank there, as a `gpu` prefix names a rank (SGLang 0.2's ControllerSingle runs TP0's
///   model in the launcher process and prints its traceback with no rank);
/// - one, or any failure no process names, that is the next event of its file after a
///   rank's own out-of-memory line is that rank's: one process driving several GPUs tells
///   one failure twice (LMDeploy's TurboMind prints the sized C++ line naming its device,
///   then Python's traceback closes on a `RuntimeError` naming none).
///
/// Each takes along the unnamed failure line whose traceback it closes (`Exception in
/// ControllerSingle:`, `engine start-up failed:`): its frames place the failure. Anything
/// less certain stays the launcher's.
fn adopt_unnamed_failures(
    rank_events: &mut BTreeMap<Rank, Vec<usize>>,
    launcher: &mut Vec<usize>,
    events: &[Event],
    unnamed_failure: &dyn Fn(&Event) -> bool,
) -> Adopted {
    // A map lookup, not a search of the ranks: a hostile log may hold many unnamed
    // failures beside many ranks.
    let is_worker = |r: &Rank| !r.is_engine() && rank_events.contains_key(r);
    let candidates: Vec<usize> = (launcher.iter().copied())
        .filter(|&i| unnamed_failure(&events[i]))
        .collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    let plain_tp = (rank_events.keys())
        .filter(|r| !r.is_engine())
        .all(|r| r.single().is_some_and(|(tag, _)| tag == "TP"));
    let mut places = events
        .iter()
        .filter(|e| e.rank.is_some())
        .map(|e| (e.node(), e.host()));
    let one_node = places.next().is_none_or(|first| places.all(|p| p == first));
    // Each event's predecessor in its file, by line.
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_unstable_by_key(|&i| (events[i].origin.source, events[i].origin.line));
    let mut position = vec![0; events.len()];
    for (p, &i) in order.iter().enumerate() {
        position[i] = p;
    }
    let before = |i: usize| {
        let p = position[i].checked_sub(1)?;
        Some(order[p]).filter(|&j| events[j].origin.source == events[i].origin.source)
    };
    let mut in_launcher = vec![false; events.len()];
    for &i in launcher.iter() {
        in_launcher[i] = true;
    }
    let mut adopted: Vec<(usize, Rank)> = Vec::new();
    for i in candidates {
        let e = &events[i];
        let opener = before(i).filter(|&j| {
            in_launcher[j] && unnamed_failure(&events[j]) && events[j].detail().is_some()
        });
        let on_gpu = (plain_tp && one_node && e.kind == kind::OOM)
            .then(|| e.field("gpu").and_then(FieldValue::as_i64))
            .flatten()
            .and_then(|g| u32::try_from(g).ok())
            .map(Rank::tp)
            .filter(|r| is_worker(r));
        let after_ranks_oom = || {
            let prev = &events[before(opener.unwrap_or(i))?];
            (prev.kind == kind::OOM)
                .then(|| prev.rank.clone())
                .flatten()
                .filter(|r| is_worker(r))
        };
        let Some(rank) = on_gpu.or_else(after_ranks_oom) else {
            continue;
        };
        if let Some(j) = opener {
            adopted.push((j, rank.clone()));
        }
        adopted.push((i, rank));
    }
    let moved: std::collections::HashSet<usize> = adopted.iter().map(|(i, _)| *i).collect();
    launcher.retain(|l| !moved.contains(l));
    let mut touched: Vec<&Rank> = Vec::new();
    for (i, rank) in &adopted {
        rank_events.entry(rank.clone()).or_default().push(*i);
        touched.push(rank);
    }
    touched.sort_unstable();
    touched.dedup();
    for r in touched {
        if let Some(list) = rank_events.get_mut(r) {
            list.sort_unstable();
        }
    }
    adopted
}

/// Lines that name no rank in a run of one rank are that rank's: an untagged single-GPU
/// SGLang scheduler, or a failure printed without the rank's prefix. Launcher lines whose
/// grammar gives them an outcome (`Received sigquit from a child`) stay the launcher's.
fn adopt_rankless(
    rank_events: &mut BTreeMap<Rank, Vec<usize>>,
    launcher: &mut Vec<usize>,
    events: &[Event],
    know: &Knowledge,
) -> Adopted {
    let workers: Vec<Rank> = rank_events
        .keys()
        .filter(|r| !r.is_engine())
        .cloned()
        .collect();
    let adoptable = |e: &Event| {
        let failure = kind::is_failure(&e.kind)
            && !e.fields.contains_key("outcome")
            && !e.fields.contains_key("consequence");
        let phase_line = know
            .phase_of(e)
            .is_some_and(|(p, _)| p != Phase::Launch && p != Phase::Ready);
        (failure, phase_line)
    };
    // A failure printed by no named process (a bare traceback, no prefix, no pid) in a
    // log that names no rank is the one process's own: the single GPU rank, TP0.
    let unnamed_failure = |e: &Event| adoptable(e).0 && e.pid().is_none() && e.process().is_none();
    if workers.len() > 1 {
        return adopt_unnamed_failures(rank_events, launcher, events, &unnamed_failure);
    }
    let target = match workers.as_slice() {
        [one] => one.clone(),
        [] if launcher.iter().any(|&i| adoptable(&events[i]).1) => Rank::tp(0),
        [] if rank_events.is_empty() && launcher.iter().any(|&i| unnamed_failure(&events[i])) => {
            Rank::tp(0)
        }
        _ => return Vec::new(),
    };
    let (adopt, keep): (Vec<usize>, Vec<usize>) = launcher.iter().partition(|&&i| {
        let (failure, phase_line) = adoptable(&events[i]);
        failure || phase_line
    });
    if adopt.is_empty() {
        return Vec::new();
    }
    *launcher = keep;
    let list = rank_events.entry(target.clone()).or_default();
    list.extend(&adopt);
    list.sort_unstable();
    adopt.into_iter().map(|i| (i, target.clone())).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::base::event::test_event;

    /// An event at `line` of source 0, second 0, of `rank` (sharing its list of tags).
    pub(super) fn ranked(line: u64, rank: &Rank) -> Event {
        Event {
            rank: Some(rank.clone()),
            ..test_event(0, line, Some(0))
        }
    }

    #[test]
    fn a_ranks_events_are_grouped_whether_they_share_its_list_of_tags_or_hold_an_equal_one() {
        // TP0 as one shared list (lines 1, 5) and as a list of its own equal to it (line
        // 3); TP1 shared (lines 2, 4), met again after TP0's other list. By hand: TP0 has
        // events 0, 2, 4 and TP1 events 1, 3, whatever list each event holds.
        let tp0 = Rank::tp(0);
        let tp1 = Rank::tp(1);
        let events = vec![
            ranked(1, &tp0),
            ranked(2, &tp1),
            ranked(3, &Rank::tp(0)),
            ranked(4, &tp1),
            ranked(5, &tp0),
        ];
        assert!(!tp0.shares_tags_with(events[2].rank.as_ref().unwrap()));
        let (rank_events, launcher, _) = group_by_rank(&events, &Knowledge::empty());
        let grouped: Vec<(String, Vec<usize>)> = (rank_events.into_iter())
            .map(|(r, list)| (r.to_string(), list))
            .collect();
        assert_eq!(
            grouped,
            [
                ("TP0".to_string(), vec![0, 2, 4]),
                ("TP1".to_string(), vec![1, 3])
            ]
        );
        assert!(launcher.is_empty());
    }
}
