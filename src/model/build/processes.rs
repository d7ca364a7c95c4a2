//! Processes resolved to ranks: the rank each pid's lines are learnt to be, given to all
//! its lines.

// foldhash, not SipHash: keys per event of every rank, hashed where no input chooses
// them to collide (the maps' order is never read).
use foldhash::{HashMap, HashMapExt, HashSet};

use crate::base::event::{kind, Event, Name, Rank};
use crate::grammar::{Knowledge, ProcessRole, RankEvidence};
use crate::model::layout::LayoutSizes;
use crate::model::notes::ReadNote;
use crate::model::Phase;

/// A process: its pid on the host that wrote the line. Pids are per host — two machines'
/// workers may share a pid (one file a framework forwards both hosts' lines into), so a
/// pid alone would merge them; a line that names no host keys on its pid alone.
type Proc = (Option<Name>, u32);

fn proc_of(e: &Event) -> Option<Proc> {
    let w = e.writer.as_ref()?;
    w.pid.map(|p| (w.host.clone(), p))
}

/// vLLM and NCCL lines name a process, not a rank: the rank is learnt per process (a pid
/// on the host the line names, if it names one) from the
/// strongest evidence any line of that pid gives (the grammars' process and rank rules),
/// then given to all its lines. Lines of an engine or driver process that report a
/// start-up phase or a failure, and the phase-less events of a process a rule calls an
/// engine, never naming a rank, are placed on the `engine` rank; the launcher's own lines
/// stay rank-less. A line that names its own rank (a suffix, a `line` rule) keeps it,
/// unless all it names is a global number and its process's `assignment` line names the
/// rank.
///
/// Returns a note for each process whose `assignment` line names another rank than the
/// configured sizes place its global number at (`run_sizes`: the sizes another node's
/// configuration printed, for a node that prints none).
pub(super) fn resolve_processes(
    events: &mut [Event],
    know: &Knowledge,
    run_sizes: Option<LayoutSizes>,
) -> Vec<ReadNote> {
    let (learnt, numbered) = learn_ranks(events, know);
    let in_engine_traceback = in_pidless_engine_tracebacks(events, know);
    let notes = disagreements(events, know, run_sizes, &learnt, &numbered);
    // A driver without a prefix can still say which rank it is.
    let driver_rank = events
        .iter()
        .filter(|e| e.pid().is_none() && e.rank.is_none())
        .find_map(|e| {
            know.meaning(e)?
                .rank
                .iter()
                .filter(|r| r.evidence == RankEvidence::Assignment)
                .find_map(|r| r.rank(e))
        });
    for (i, e) in events.iter_mut().enumerate() {
        if let Some(r) = &e.rank {
            // A line named by a global number alone takes its process's rank when another
            // of its lines says it more strongly (an `assignment`: `placement: pp=1 tp=2`).
            if r.as_global().is_some() {
                if let Some((ev, to)) = proc_of(e).and_then(|p| learnt.get(&p)) {
                    if *ev > RankEvidence::Global {
                        e.rank = Some(to.clone());
                    }
                }
            }
            continue;
        }
        if let Some((_, r)) = proc_of(e).and_then(|p| learnt.get(&p)) {
            e.rank = Some(r.clone());
            continue;
        }
        let process = e.process().and_then(|p| know.process(p));
        let pidless_engine = e.pid().is_none()
            && (know.pidless_is_engine(&e.grammar) || in_engine_traceback.get(i) == Some(&true));
        if pidless_engine {
            if let Some(r) = &driver_rank {
                e.rank = Some(r.clone());
                continue;
            }
        }
        let engine = process.as_ref().filter(|p| p.role == ProcessRole::Engine);
        if engine.is_some() || pidless_engine {
            // An engine's row holds its start-up phase lines and failures, and, of a
            // process a `[[process]]` rule calls an engine, its events of no phase (a
            // coordinator's `replica dp1 lost 2 workers`). Its launch and ready lines
            // are the server's (an engine row in launch would be the launch row's
            // straggler); a pidless line is an engine's only by what it reports.
            let phase = know.phase_of(e).map(|(p, _)| p);
            if phase.is_some_and(|p| p != Phase::Launch && p != Phase::Ready)
                || (engine.is_some() && phase.is_none())
                || kind::is_failure(&e.kind)
            {
                e.rank = Some(Rank::engine_of(engine.and_then(|p| p.dp)));
            }
            continue;
        }
        // A worker process that never said which rank it is: named by its pid rather than
        // guessed from spawn order.
        let launcher = process.is_some_and(|p| p.role == ProcessRole::Launcher);
        if let (Some(pid), false) = (e.pid(), launcher) {
            if e.process().is_some() {
                e.rank = Some(Rank::from_pairs([("pid".to_string(), pid)]));
            }
        }
    }
    notes
}

/// Events another grammar read inside the traceback of a pidless engine's failure line (the
/// `RuntimeError: …` closing it, read by the `streams` grammar): the engine's, as the
/// traceback is — by its grammar alone such a line would be a launcher's.
fn in_pidless_engine_tracebacks(events: &[Event], know: &Knowledge) -> Vec<bool> {
    // Per source, the latest such failure line and its traceback's lines: a set, so that
    // each later line is one lookup, not a search of up to 64 KiB of traceback.
    let mut owner_of_source: HashMap<usize, (u64, HashSet<&str>)> = HashMap::new();
    let mut inside = vec![false; events.len()];
    for (i, e) in events.iter().enumerate() {
        if e.pid().is_some() || e.rank.is_some() {
            continue;
        }
        let source = e.origin.source;
        if know.pidless_is_engine(&e.grammar) {
            if let Some(d) = e.detail() {
                let lines = d.lines().map(str::trim).collect();
                owner_of_source.insert(source, (e.origin.line, lines));
            }
            continue;
        }
        inside[i] = owner_of_source
            .get(&source)
            .is_some_and(|(line, lines)| *line < e.origin.line && lines.contains(e.message.trim()));
    }
    inside
}

/// Each process's rank with its evidence, and each process's first global number.
type Learnt = (HashMap<Proc, (RankEvidence, Rank)>, HashMap<Proc, u32>);

/// What a process's rank is (per process, from the strongest evidence any of its lines
/// gives), and each process's first global number (a prefix's `grank`, kept to compare
/// with its assignment). Cuts a rank printed after the message (a `[[suffix]]`) from it
/// and names a line whose own words name its rank.
fn learn_ranks(events: &mut [Event], know: &Knowledge) -> Learnt {
    let mut learnt: HashMap<Proc, (RankEvidence, Rank)> = HashMap::new();
    // Each process's first global number (a prefix's `grank`), to compare with its
    // assignment.
    let mut numbered: HashMap<Proc, u32> = HashMap::new();
    let mut learn = |pid: &Proc, ev: RankEvidence, r: Rank| {
        if let Some(n) = r.as_global() {
            numbered.entry(pid.clone()).or_insert(n);
        }
        // Looked up before it is keyed: a key holds the host's name, a copy per event.
        match learnt.get_mut(pid) {
            Some(e) if ev > e.0 => *e = (ev, r),
            Some(_) => {}
            None => {
                learnt.insert(pid.clone(), (ev, r));
            }
        }
    };
    for e in events.iter_mut() {
        // A `line` rule moves its one line to the rank it names (an engine's `worker 5
        // died`): the process is not that rank, so it learns nothing from it.
        let mut moved_by_line = false;
        if e.rank.is_none() {
            // A rank printed after the message (`… rank=1`) is the record's field: it is
            // cut from the message the verdict quotes.
            if let Some((rank, at)) = know.suffix_of(&e.message) {
                let kept = e.message.get(..at).map_or("", str::trim_end);
                e.message = kept.into();
                e.rank = Some(rank);
            } else {
                e.rank = know.line_rank(&e.grammar, &e.kind, &e.fields, &e.message);
                moved_by_line = e.rank.is_some();
            }
        }
        let Some(pid) = proc_of(e) else { continue };
        if let Some(r) = e.rank.as_ref().filter(|_| !moved_by_line) {
            // A global number (a prefix's `grank`) is weaker evidence than the process's
            // own `assignment` line: it becomes a rank only through sizes or a layout.
            let ev = if r.as_global().is_some() {
                RankEvidence::Global
            } else {
                RankEvidence::Tags
            };
            learn(&pid, ev, r.clone());
        }
        if let Some(m) = know.meaning(e) {
            for rule in m.rank.iter().filter(|r| r.evidence != RankEvidence::Line) {
                if let Some(r) = rule.rank(e) {
                    learn(&pid, rule.evidence, r);
                }
            }
        }
        if let Some(g) = e
            .process()
            .and_then(|p| know.process(p))
            .and_then(|i| i.global_rank)
        {
            learn(&pid, RankEvidence::Global, Rank::global(g));
        }
    }
    (learnt, numbered)
}

/// Processes whose `assignment` line names a rank other than the one the configured sizes
/// place their prefix's global number at: the assignment is taken (it spells the rank
/// out), and the run says so — the sizes or the numbering are not what the server ran.
fn disagreements(
    events: &[Event],
    know: &Knowledge,
    run_sizes: Option<LayoutSizes>,
    learnt: &HashMap<Proc, (RankEvidence, Rank)>,
    numbered: &HashMap<Proc, u32>,
) -> Vec<ReadNote> {
    let mut assigned: Vec<(&Proc, u32, &Rank)> = (numbered.iter())
        .filter_map(|(pid, n)| {
            let (ev, r) = learnt.get(pid)?;
            (*ev == RankEvidence::Assignment).then_some((pid, *n, r))
        })
        .collect();
    if assigned.is_empty() {
        return Vec::new();
    }
    // In pid order: the map's order is not the same from one run to the next.
    assigned.sort_by(|a, b| (a.0 .1, &a.0 .0).cmp(&(b.0 .1, &b.0 .0)));
    let sizes = super::names::sizes_or_run(events, know, run_sizes);
    assigned
        .into_iter()
        .filter_map(|(pid, n, r)| {
            let (dp, pp, tp) = crate::model::layout::place_global(n, sizes)?;
            let at = |t: &str| r.get(t).unwrap_or(0);
            if (at("DP"), at("PP"), r.get("TP")) == (dp, pp, Some(tp)) {
                return None;
            }
            Some(ReadNote::AssignmentOverGlobal {
                pid: pid.1,
                global: n,
                placed: crate::model::layout::global_name(n, sizes, dp > 0)?,
                assigned: r.clone(),
            })
        })
        .collect()
}
