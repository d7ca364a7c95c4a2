//! Events to a run: duplicates across files dropped, processes resolved to ranks, attempts
//! split, each rank's events gathered and its outcome weighed.

use std::collections::{BTreeMap, HashMap};

use chrono::NaiveDateTime;

use super::order::time_order;
use super::{attempts, outcome, Edge, Figure, Outcome, Phase, PhaseSpan, RankRun, Run, SourceInfo};
use crate::base::event::{kind, Event, Origin, Rank};
use crate::grammar::{Knowledge, ProcessRole, RankEvidence};

/// Events that are the same line seen in two files of one run (`server.log` and
/// `stdout.txt` of the same console) are kept once. Within one file repeats are real.
/// What makes two events of different files the same line: rank, kind, stamp, message.
type DedupKey<'e> = (Option<&'e Rank>, &'e str, Option<NaiveDateTime>, &'e str);

fn dedup_key(e: &Event) -> DedupKey<'_> {
    (e.rank.as_ref(), e.kind.as_str(), e.ts, e.message.as_str())
}

/// Events that several files of a run both hold (the same rank, kind, stamp and message)
/// kept once; each source's `duplicate_events` counts what it lost.
pub fn dedup_across_sources(events: Vec<Event>, sources: &mut [SourceInfo]) -> Vec<Event> {
    // Keys borrow from the events (no string copied per event); which events stay is
    // decided first, then they are moved out in source order.
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| events.get(i).map_or(0, |e| e.origin.source));
    let mut keep = vec![false; events.len()];
    {
        // foldhash, not SipHash: a key per event, and the keys are short.
        let mut kept: HashMap<DedupKey<'_>, usize, foldhash::fast::RandomState> =
            HashMap::default();
        let mut seen_here: HashMap<DedupKey<'_>, usize, foldhash::fast::RandomState> =
            HashMap::default();
        let mut current = None;
        for &i in &order {
            let Some(e) = events.get(i) else { continue };
            if current != Some(e.origin.source) {
                current = Some(e.origin.source);
                seen_here.clear();
            }
            let k = dedup_key(e);
            let here = seen_here.entry(k).or_insert(0);
            *here += 1;
            let total = kept.entry(k).or_insert(0);
            if *here <= *total {
                if let Some(s) = sources.get_mut(e.origin.source) {
                    s.duplicate_events += 1;
                }
                continue;
            }
            *total += 1;
            if let Some(k) = keep.get_mut(i) {
                *k = true;
            }
        }
    }
    let mut slots: Vec<Option<Event>> = events.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter(|&i| keep.get(i).copied().unwrap_or(false))
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

/// vLLM and NCCL lines name a process, not a rank: the rank is learnt per pid from the
/// strongest evidence any line of that pid gives (the grammars' process and rank rules),
/// then given to all its lines. Lines of an engine or driver process that report figures
/// but never name a rank are placed on the `engine` rank; the launcher's own lines stay
/// rank-less. A line that names its own rank (a suffix, a `line` rule) keeps it.
fn resolve_processes(events: &mut [Event], know: &Knowledge) {
    let mut learnt: HashMap<u32, (RankEvidence, Rank)> = HashMap::new();
    let mut learn = |pid: u32, ev: RankEvidence, r: Rank| {
        let e = learnt.entry(pid).or_insert((ev, r.clone()));
        if ev > e.0 {
            *e = (ev, r);
        }
    };
    for e in events.iter_mut() {
        if e.rank.is_none() {
            // A rank printed after the message (`… rank=1`) is the record's field: it is
            // cut from the message the verdict quotes.
            if let Some((rank, at)) = know.suffix_of(&e.message) {
                let kept = e.message.get(..at).map_or(0, |m| m.trim_end().len());
                e.message.truncate(kept);
                e.rank = Some(rank);
            } else {
                e.rank = know.line_rank(&e.grammar, &e.kind, &e.fields, &e.message);
            }
        }
        let Some(pid) = e.pid else { continue };
        if let Some(r) = &e.rank {
            learn(pid, RankEvidence::Tags, r.clone());
        }
        if let Some(m) = know.meaning(e) {
            for rule in m.rank.iter().filter(|r| r.evidence != RankEvidence::Line) {
                if let Some(r) = rule.rank(e) {
                    learn(pid, rule.evidence, r);
                }
            }
        }
        if let Some(g) = e
            .process
            .as_deref()
            .and_then(|p| know.process(p))
            .and_then(|i| i.global_rank)
        {
            learn(pid, RankEvidence::Global, Rank::tp(g));
        }
    }
    // A driver without a prefix can still say which rank it is.
    let driver_rank = events
        .iter()
        .filter(|e| e.pid.is_none() && e.rank.is_none())
        .find_map(|e| {
            know.meaning(e)?
                .rank
                .iter()
                .filter(|r| r.evidence == RankEvidence::Assignment)
                .find_map(|r| r.rank(e))
        });
    for e in events.iter_mut() {
        if e.rank.is_some() {
            continue;
        }
        if let Some((_, r)) = e.pid.and_then(|p| learnt.get(&p)) {
            e.rank = Some(r.clone());
            continue;
        }
        let process = e.process.as_deref().and_then(|p| know.process(p));
        let pidless_engine = e.pid.is_none() && know.pidless_is_engine(&e.grammar);
        if pidless_engine {
            if let Some(r) = &driver_rank {
                e.rank = Some(r.clone());
                continue;
            }
        }
        let engine = process.as_ref().filter(|p| p.role == ProcessRole::Engine);
        if engine.is_some() || pidless_engine {
            if know
                .phase_of(e)
                .is_some_and(|(p, _)| p != Phase::Launch && p != Phase::Ready)
                || matches!(e.kind.as_str(), kind::OOM | kind::ERROR)
            {
                e.rank = Some(Rank::engine_of(engine.and_then(|p| p.dp)));
            }
            continue;
        }
        // A worker process that never said which rank it is: named by its pid rather than
        // guessed from spawn order.
        let launcher = process.is_some_and(|p| p.role == ProcessRole::Launcher);
        if let (Some(pid), false) = (e.pid, launcher) {
            if e.process.is_some() {
                e.rank = Some(Rank::from_pairs([("pid".to_string(), pid)]));
            }
        }
    }
}

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
    resolve_processes(&mut events, know);
    let (attempt_of, n_attempts, chosen) = choose_attempt(&events, know, attempt);
    let mut infos = Vec::new();
    let mut kept = Vec::new();
    if n_attempts > 1 {
        let mut per: Vec<Vec<Event>> = vec![Vec::new(); n_attempts];
        for (e, a) in events.into_iter().zip(attempt_of) {
            per[a].push(e);
        }
        for (i, evs) in per.into_iter().enumerate() {
            let sub = build_one(name.clone(), evs, Vec::new(), know);
            infos.push(attempts::info(i + 1, &sub));
            if i == chosen {
                kept = sub.events;
            }
        }
    } else {
        kept = events;
    }
    let mut run = build_one(name, kept, sources, know);
    if n_attempts > 1 {
        run.attempt = chosen + 1;
        run.attempts = infos;
    }
    run
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
}

/// What `build` does to one node's events before the run is read, and no more: a run of
/// several nodes is built once from all of them, and building every node's ranks, phases
/// and outcomes first (only to throw them away) was a fifth of loading 1,024 nodes. The
/// events come out exactly as `build(…).events` would give them.
pub fn prepare_node(
    mut events: Vec<Event>,
    know: &Knowledge,
    attempt: Option<usize>,
) -> NodeEvents {
    resolve_processes(&mut events, know);
    let (attempt_of, n_attempts, chosen) = choose_attempt(&events, know, attempt);
    if n_attempts > 1 {
        // `build` ordered and settled the chosen attempt on its own before the run.
        events = events
            .into_iter()
            .zip(attempt_of)
            .filter(|(_, a)| *a == chosen)
            .map(|(e, _)| e)
            .collect();
        events = settle_rank_names(time_order(events), know);
    }
    let events = settle_rank_names(time_order(events), know);
    let (rank_events, _) = group_by_rank(&events, know);
    let config = crate::model::config::Config::of_events(&events, know);
    NodeEvents {
        attempts: n_attempts,
        ranks: rank_events.into_keys().collect(),
        events,
        config,
    }
}

/// Each rank's events (indices), and the launcher's: the events that name no rank and
/// that no rank adopts.
fn group_by_rank(events: &[Event], know: &Knowledge) -> (BTreeMap<Rank, Vec<usize>>, Vec<usize>) {
    // Hashed while grouping, sorted once at the end: a search of an ordered map of
    // thousands of ranks per event (string comparisons all the way down) was a tenth of
    // building a run of 8,192 ranks.
    let mut by_rank: HashMap<&Rank, Vec<usize>, foldhash::fast::RandomState> = HashMap::default();
    let mut launcher: Vec<usize> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        match &e.rank {
            Some(r) if !r.is_empty() => by_rank.entry(r).or_default().push(i),
            _ => launcher.push(i),
        }
    }
    // The rank is cloned once per rank, not once per event.
    let mut rank_events: BTreeMap<Rank, Vec<usize>> = by_rank
        .into_iter()
        .map(|(r, list)| (r.clone(), list))
        .collect();
    adopt_rankless(&mut rank_events, &mut launcher, events, know);
    (rank_events, launcher)
}

fn build_one(name: String, events: Vec<Event>, sources: Vec<SourceInfo>, know: &Knowledge) -> Run {
    let events = time_order(events);
    let start = events
        .iter()
        .filter_map(|e| Some((e.ts?, e.ts_step_ms)))
        .min_by_key(|(t, _)| *t);
    let ready = events.iter().any(|e| e.kind == kind::READY);
    // A run has a handful of grammars: kept distinct as they come (one comparison per
    // event, almost always with the previous event's), then sorted; collecting every
    // event's name into a sorted set was a tenth of building a run of 8,192 ranks.
    let mut grammars: Vec<String> = Vec::new();
    for e in &events {
        if !grammars.iter().rev().any(|g| *g == e.grammar) {
            grammars.push(e.grammar.clone());
        }
    }
    grammars.sort();
    let year_inferred = events.iter().any(|e| e.year_inferred);

    let names = RankNames::of(&events, know);
    let mut events = events;
    settle_with(&mut events, &names);
    let (mut rank_events, launcher) = group_by_rank(&events, know);
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

    let mut stops: Vec<Option<outcome::Stop>> = Vec::new();
    let mut ranks: Vec<RankRun> = Vec::new();
    // Lines after the server's ready line happen while serving, whatever a rank's own
    // last phase line was (vLLM workers print none after KV sizing).
    let ready_at = events.iter().position(|e| e.kind == kind::READY);
    for (rank, idx) in rank_events {
        let seen_at = silent.get(&rank).cloned();
        let (mut r, stop) = build_rank(rank, idx, &events, start, ready, ready_at, know);
        if r.last_origin.is_none() {
            r.last_origin = seen_at;
        }
        ranks.push(r);
        stops.push(stop);
    }
    let launcher_stops: Vec<outcome::Stop> = launcher
        .iter()
        .filter_map(|&i| outcome::stop_of(&events[i], Phase::Launch, "last_event", know, None))
        .collect();
    let root = outcome::resolve(
        &mut ranks,
        stops,
        &launcher_stops,
        &events,
        ready,
        know,
        &names.globals,
    );
    let startup_events = events
        .iter()
        .any(|e| know.phase_of(e).is_some() || matches!(e.kind.as_str(), kind::OOM | kind::ERROR));
    let config = crate::model::config::Config::of_events(&events, know);
    let launcher_failures = launcher_stops.into_iter().map(|s| s.failure).collect();
    let servers = server_of(&events, know).into_iter().collect();

    Run {
        name,
        sources,
        events,
        ranks,
        launcher_failures,
        root,
        attempt: 1,
        attempts: Vec::new(),
        ready,
        start: start.map(|(t, _)| t),
        servers,
        grammars,
        frame_phases: know.frames.clone(),
        remedy_rules: know.remedy.clone(),
        year_inferred,
        notes: Vec::new(),
        gpus: Vec::new(),
        gpu_processes: Vec::new(),
        nodes: Vec::new(),
        startup_events,
        config,
    }
}

/// Names that only the whole run can settle. A global rank (c10's `[rank3]:`) is the TP
/// rank of that number when the run's ranks are TP ranks alone, else the rank the run's
/// layout puts at that number (`layout::global_ranks`: `PP1 TP2` is 6 of PP2 × TP4), and
/// no rank at all where the layout does not say: a global number never makes a rank of
/// its own beside the tagged ones. A run with no numbered rank but an engine process is a
/// single-GPU run whose engine does the work (TP0); an unprefixed V0-style driver beside
/// one unnamed worker process is rank 0 beside rank 1.
struct RankNames {
    rename: HashMap<Rank, Rank>,
    tp_only: bool,
    globals: HashMap<u32, Rank>,
}

impl RankNames {
    fn of(events: &[Event], know: &Knowledge) -> RankNames {
        // Distinct first (a hash per event), then sorted: sorting every event's rank was
        // a tenth of loading a run of thousands of ranks.
        let distinct: std::collections::HashSet<&Rank, foldhash::fast::RandomState> = events
            .iter()
            .filter_map(|e| e.rank.as_ref())
            .filter(|r| r.as_global().is_none() && !r.is_empty())
            .collect();
        let mut named: Vec<&Rank> = distinct.into_iter().collect();
        // Distinct, so the unstable sort gives the one order.
        named.sort_unstable();
        let tp_only = named.iter().all(|r| {
            r.is_engine() || r.get("pid").is_some() || r.single().is_some_and(|(t, _)| t == "TP")
        });
        let engines = named.iter().filter(|r| r.is_engine()).count();
        let pids: Vec<Rank> = named
            .iter()
            .filter(|r| r.get("pid").is_some())
            .map(|r| (*r).clone())
            .collect();
        let workers = named.len() - engines - pids.len();
        let mut rename = first_stage_names(&named);
        if workers == 0 && engines == 1 && pids.len() <= 1 {
            if let Some(e) = named.iter().find(|r| r.is_engine()) {
                rename.insert((*e).clone(), Rank::tp(0));
            }
            if let Some(p) = pids.first() {
                rename.insert(p.clone(), Rank::tp(1));
            }
        }
        let globals = if tp_only {
            HashMap::new()
        } else {
            let config = events
                .iter()
                .find(|e| e.kind == kind::SERVER_ARGS)
                .and_then(|e| crate::model::config::Config::from_event(e, know).ok());
            let mut sizes = super::layout::LayoutSizes::from_config(config.as_ref());
            sizes.across_replicas =
                server_of(events, know).is_some_and(|g| know.world_spans_replicas(&g));
            let renamed: Vec<&Rank> = named.iter().map(|r| rename.get(*r).unwrap_or(*r)).collect();
            super::layout::global_ranks(renamed, sizes)
        };
        RankNames {
            rename,
            tp_only,
            globals,
        }
    }

    /// What `r` is called in the run: `None` when nothing is to change, `Some(None)` when
    /// the line names a global rank the layout cannot place.
    fn settle(&self, r: &Rank) -> Option<Option<Rank>> {
        if !self.rename.is_empty() {
            if let Some(to) = self.rename.get(r) {
                return Some(Some(to.clone()));
            }
        }
        let n = r.as_global()?;
        if self.tp_only {
            Some(Some(Rank::tp(n)))
        } else {
            Some(self.globals.get(&n).cloned())
        }
    }
}

/// A run of more than one pipeline stage names its first stage `PP0 TP0`, as SGLang's log
/// prefix does once `pp_size > 1` — but a line that spells the rank out by itself
/// (`assignment` evidence, a per-line rule) cannot know the run's stage count and drops
/// the zero stage (`TP0`). Named beside `PP1 TP0`, that rank would read as another
/// layout and sort after stage 1, so where any rank names a stage above 0, every worker
/// rank named by TP (and no stage) gets `PP0`.
fn first_stage_names(named: &[&Rank]) -> HashMap<Rank, Rank> {
    let staged = named
        .iter()
        .any(|r| !r.is_engine() && r.get("PP").is_some_and(|p| p > 0));
    if !staged {
        return HashMap::new();
    }
    named
        .iter()
        .filter(|r| {
            !r.is_engine()
                && r.get("pid").is_none()
                && r.get("PP").is_none()
                && r.get("TP").is_some()
        })
        .map(|r| {
            let mut pairs: Vec<(String, u32)> = r
                .tag_names()
                .map(|t| (t.to_string(), r.get(t).unwrap_or(0)))
                .collect();
            pairs.push(("PP".to_string(), 0));
            ((*r).clone(), Rank::from_pairs(pairs))
        })
        .collect()
}

/// [`first_stage_names`] across the nodes of one run: each node is settled on its own, and
/// a node that holds only the first stage cannot see that there are others.
pub fn name_first_stage(nodes: &mut [NodeEvents]) {
    let all: std::collections::BTreeSet<&Rank> = nodes.iter().flat_map(|n| &n.ranks).collect();
    let all: Vec<&Rank> = all.into_iter().collect();
    let rename = first_stage_names(&all);
    if rename.is_empty() {
        return;
    }
    for node in nodes.iter_mut() {
        for e in node.events.iter_mut() {
            if let Some(to) = e.rank.as_ref().and_then(|r| rename.get(r)) {
                e.rank = Some(to.clone());
            }
        }
        for r in node.ranks.iter_mut() {
            if let Some(to) = rename.get(r) {
                *r = to.clone();
            }
        }
        node.ranks.sort();
    }
}

fn settle_rank_names(mut events: Vec<Event>, know: &Knowledge) -> Vec<Event> {
    let names = RankNames::of(&events, know);
    settle_with(&mut events, &names);
    events
}

fn settle_with(events: &mut [Event], names: &RankNames) {
    for e in events.iter_mut() {
        let Some(r) = e.rank.as_ref() else { continue };
        if let Some(to) = names.settle(r) {
            e.rank = to;
        }
    }
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
        return Some(e.grammar.clone());
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

/// Lines that name no rank in a run of one rank are that rank's: an untagged single-GPU
/// SGLang scheduler, or a failure printed without the rank's prefix. Launcher lines whose
/// grammar gives them an outcome (`Received sigquit from a child`) stay the launcher's.
fn adopt_rankless(
    rank_events: &mut BTreeMap<Rank, Vec<usize>>,
    launcher: &mut Vec<usize>,
    events: &[Event],
    know: &Knowledge,
) {
    let workers: Vec<Rank> = rank_events
        .keys()
        .filter(|r| !r.is_engine())
        .cloned()
        .collect();
    let adoptable = |e: &Event| {
        let failure = matches!(e.kind.as_str(), kind::OOM | kind::ERROR)
            && !e.fields.contains_key("outcome")
            && !e.fields.contains_key("consequence");
        let phase_line = know
            .phase_of(e)
            .is_some_and(|(p, _)| p != Phase::Launch && p != Phase::Ready);
        (failure, phase_line)
    };
    // A failure printed by no named process (a bare traceback, no prefix, no pid) in a
    // log that names no rank is the one process's own: the single GPU rank, TP0.
    let unnamed_failure = |e: &Event| adoptable(e).0 && e.pid.is_none() && e.process.is_none();
    let target = match workers.as_slice() {
        [one] => one.clone(),
        [] if launcher.iter().any(|&i| adoptable(&events[i]).1) => Rank::tp(0),
        [] if rank_events.is_empty() && launcher.iter().any(|&i| unnamed_failure(&events[i])) => {
            Rank::tp(0)
        }
        _ => return,
    };
    let (adopt, keep): (Vec<usize>, Vec<usize>) = launcher.iter().partition(|&&i| {
        let (failure, phase_line) = adoptable(&events[i]);
        failure || phase_line
    });
    if adopt.is_empty() {
        return;
    }
    *launcher = keep;
    let list = rank_events.entry(target).or_default();
    list.extend(adopt);
    list.sort_unstable();
}

/// A rank's phases as its phase lines are read in order.
struct PhaseWalk {
    spans: BTreeMap<Phase, PhaseSpan>,
    /// The phase the rank is in.
    current: Phase,
    /// A phase begun again after later phases (a speculative draft model's own model
    /// runner: `Init torch distributed begin.` after `Memory pool end.`), while it is the
    /// rank's latest phase line: where the rank is, whatever phases it finished before.
    reentered: Option<Phase>,
    furthest: Phase,
    /// The last phase line read: where a failure with no phase of its own was placed from.
    last_line: Option<crate::base::event::Origin>,
}

impl Default for PhaseWalk {
    fn default() -> Self {
        PhaseWalk {
            spans: BTreeMap::new(),
            current: Phase::Launch,
            reentered: None,
            furthest: Phase::Launch,
            last_line: None,
        }
    }
}

impl PhaseWalk {
    /// One phase line: its phase begun, ended or entered, its figures recorded.
    fn take(&mut self, e: &Event, phase: Phase, edge: Edge, know: &Knowledge) {
        let span = self
            .spans
            .entry(phase)
            .or_insert_with(|| PhaseSpan::empty(phase));
        self.reentered = (edge == Edge::Begin && phase < self.furthest).then_some(phase);
        self.last_line = Some(e.origin.clone());
        self.furthest = self.furthest.max(phase);
        match edge {
            Edge::Begin => {
                if span.start.is_none() {
                    span.start = e.ts;
                    span.start_step_ms = e.ts_step_ms;
                }
                self.current = phase;
            }
            Edge::Inside => {
                if span.start.is_none() {
                    span.start = e.ts;
                    span.start_step_ms = e.ts_step_ms;
                }
                self.current = self.current.max(phase);
            }
            Edge::End => {
                // No begin line: the start stays unknown rather than a zero-length
                // phase; the end line's printed `elapsed` may still give a duration.
                span.end = e.ts;
                span.end_step_ms = e.ts_step_ms;
                span.complete = true;
                span.end_printed = true;
                self.current = phase;
            }
        }
        for (figure, value) in know.figures_of(e) {
            if span.figure(figure.name()).is_none() {
                span.figures.push(Figure {
                    name: figure,
                    value,
                    origin: e.origin.clone(),
                });
            }
        }
        // A line that ends its phase and begins the next (`then`): the next phase's
        // row starts here, so a failure before its own first line is placed in it.
        if let (Edge::End, Some(next)) = (edge, know.then_of(e)) {
            let next_span = self
                .spans
                .entry(next)
                .or_insert_with(|| PhaseSpan::empty(next));
            if next_span.start.is_none() {
                next_span.start = e.ts;
                next_span.start_step_ms = e.ts_step_ms;
            }
            self.furthest = self.furthest.max(next);
            self.current = next;
        }
    }
}

/// A phase is over once a later one has begun, whether or not the server prints an end
/// line for it (vLLM has no `Memory pool end`).
fn close_by_later_starts(spans: &mut BTreeMap<Phase, PhaseSpan>) {
    let starts: Vec<(Phase, Option<NaiveDateTime>, u32)> = spans
        .values()
        .map(|s| (s.phase, s.start, s.start_step_ms))
        .collect();
    for span in spans.values_mut() {
        if span.complete {
            continue;
        }
        if let Some((_, next_start, step)) = starts.iter().find(|(p, ..)| *p > span.phase) {
            span.complete = true;
            if span.end.is_none() {
                span.end = *next_start;
                span.end_step_ms = *step;
            }
        }
    }
}

fn build_rank(
    rank: Rank,
    idx: Vec<usize>,
    events: &[Event],
    run_start: Option<(NaiveDateTime, u32)>,
    run_ready: bool,
    ready_at: Option<usize>,
    know: &Knowledge,
) -> (RankRun, Option<outcome::Stop>) {
    let mut walk = PhaseWalk::default();
    let mut stops: Vec<outcome::Stop> = Vec::new();
    let mut traceback: Option<String> = None;
    for &i in &idx {
        let e = &events[i];
        let is_failure = matches!(e.kind.as_str(), kind::OOM | kind::ERROR);
        // A failure line given a phase by its grammar is still a failure, in that phase
        // (after what its frames and wording say, before the phase the rank was in).
        let mut own_phase = None;
        if let Some((phase, edge)) = know.phase_of(e) {
            if !is_failure {
                walk.take(e, phase, edge, know);
                continue;
            }
            own_phase = Some((phase, edge));
        }
        if e.kind == kind::ERROR && e.detail.is_some() {
            traceback = e.detail.clone();
        }
        // The phase a failure belongs to when neither its frames nor its wording say: the
        // one in progress, or the next one when the last line closed a phase.
        let in_phase = match walk.spans.get(&walk.current) {
            _ if ready_at.is_some_and(|r| i > r) => Phase::Ready,
            Some(s) if s.complete && walk.current != Phase::Ready => walk.current.next(),
            _ => walk.current,
        };
        let (in_phase, from) = match own_phase {
            Some((p, _)) => (p, "event"),
            None => (in_phase, "last_event"),
        };
        if let Some(mut stop) = outcome::stop_of(e, in_phase, from, know, traceback.as_deref()) {
            if stop.failure.phase_from == "last_event" {
                stop.failure.phase_line = walk.last_line.clone();
            }
            stops.push(stop);
        }
        if let Some((phase, edge)) = own_phase {
            walk.take(e, phase, edge, know);
        }
    }
    let PhaseWalk {
        mut spans,
        reentered,
        ..
    } = walk;
    close_by_later_starts(&mut spans);
    // Launch runs from the first line of the run to the rank's first line.
    let first_ts = (idx.iter())
        .filter_map(|&i| Some((events[i].ts?, events[i].ts_step_ms)))
        .min_by_key(|(t, _)| *t);
    if let (Some((s, s_step)), Some((f, f_step)), false) = (run_start, first_ts, rank.is_engine()) {
        spans.entry(Phase::Launch).or_insert_with(|| PhaseSpan {
            start: Some(s),
            end: Some(f),
            start_step_ms: s_step,
            end_step_ms: f_step,
            complete: true,
            ..PhaseSpan::empty(Phase::Launch)
        });
    }
    let last_phase = spans.keys().copied().max().unwrap_or(Phase::Launch);
    let stop = outcome::decisive(stops);
    let reached_ready = stop.is_none() && run_ready;
    if reached_ready {
        // A rank that reached ready finished every phase it began, whether or not the
        // server prints an end line for the last one (TensorRT-LLM's graph warm-up): the
        // phase is complete, its end unknown, so no duration is made up.
        for span in spans.values_mut() {
            span.complete = true;
        }
        spans.entry(Phase::Ready).or_insert(PhaseSpan {
            complete: true,
            ..PhaseSpan::empty(Phase::Ready)
        });
    }
    // Where a log that simply ends stopped: in the open phase, or the next one once the
    // last phase closed.
    let open_phase = match (reentered, spans.get(&last_phase)) {
        (Some(p), _) => p,
        (None, Some(s)) if s.complete && last_phase != Phase::Ready => last_phase.next(),
        (None, _) => last_phase,
    };
    let last_origin = idx.last().map(|&i| events[i].origin.clone());
    let (out, last_phase) = match &stop {
        Some(s) => (s.failure.outcome, s.failure.phase),
        None if reached_ready => (Outcome::Ready, Phase::Ready),
        None => (Outcome::Incomplete, open_phase),
    };
    (
        RankRun {
            rank,
            phases: spans.into_values().collect(),
            last_phase,
            reached_ready,
            outcome: out,
            failure: stop.as_ref().map(|s| s.failure.clone()),
            last_origin,
            events: idx,
        },
        stop,
    )
}
