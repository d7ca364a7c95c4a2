//! From the inputs to a run: scan every log, resolve nodes and ranks, build the model.
//! The node clocks are put on one between [`gather`] and [`assemble`] by the session
//! (`analysis::clock`): nothing here analyses.

use std::collections::BTreeSet;

use crate::base::event::Event;
use crate::grammar::GrammarSet;
use crate::ingest::scan;
use crate::ingest::source::{SourceFile, SourceKind};
use crate::model::node::{Alignment, Node};
use crate::model::notes::ReadNote;
use crate::model::{self, Run, SourceInfo};
use crate::render::text::notes as words;

use super::by_source::BySource;
use super::dates::{implausible_stamps, infer_dates, reference_dates, time_regressions, FileDates};
use super::inputs::Inputs;
use super::nodes::{
    assign_nodes, hosts_by_source, names_several_hosts, nodes_sharing_a_host, ranks_by_source,
    ranks_on_two_hosts, shown_paths, split_by_node, wrapped_nodes_by_source,
};
use super::options::{check_attempt, LoadError, LoadOptions};
use super::read::{attach_nvsmi, scan_logs, source_info, Scanned};

/// A loaded run and the files it came from (snapshots and CSVs are listed for the
/// readers that attach them).
pub(crate) struct Loaded {
    pub(crate) run: Run,
    pub(crate) files: Vec<SourceFile>,
}

/// A run made of one log held in memory, read the way a file is (the fuzz target of the
/// scan, model and renderers uses it; `block_size` small makes blocks and their merge
/// part of every input).
pub(crate) fn run_from_bytes(gs: &GrammarSet, name: &str, bytes: &[u8], block_size: usize) -> Run {
    let scan = scan::scan_stream(
        gs,
        0,
        bytes,
        block_size,
        &scan::EventBudget::default(),
        |_| {},
    );
    let (info, events) = source_info(gs, name.to_string(), scan);
    let refs = [FileDates {
        printed: &info.dated_lines,
        modified: None,
    }];
    let mut events = BySource(events);
    infer_dates(&mut events, &refs);
    let events = events.into_flat();
    let mut sources = vec![info];
    let events = model::dedup_across_sources(events, &mut sources);
    model::build(name.to_string(), events, sources, gs.knowledge(), None)
}

/// Builds a one-node run from its scanned logs (`files` in discovery order, the logs among
/// them being the scanned sources in order).
pub(super) fn finish_single(
    gs: &GrammarSet,
    read: SingleRead,
    opts: &LoadOptions,
) -> Result<Loaded, LoadError> {
    let (events, sources, notes) = prepare_single(&read.files, read.scanned);
    let name = read.name;
    let run = model::build(name.clone(), events, sources, gs.knowledge(), opts.attempt);
    check_attempt(&name, opts.attempt, run.attempts.len().max(1))?;
    finish_built(run, read.files, notes, name)
}

/// Each start-up of a one-node run in turn, as `finish_single` gives the one asked for,
/// from one reading of its logs (`--attempt all`): a load per start-up read and built
/// the whole log once per start-up, quadratic in a crash loop's restarts.
pub(super) fn finish_single_every<E: From<LoadError>>(
    gs: &GrammarSet,
    read: SingleRead,
    mut each: impl FnMut(Loaded) -> Result<(), E>,
) -> Result<(), E> {
    let (events, sources, notes) = prepare_single(&read.files, read.scanned);
    let name = read.name;
    for run in model::build_every_attempt(name.clone(), events, sources, gs.knowledge()) {
        each(finish_built(
            run,
            read.files.clone(),
            notes.clone(),
            name.clone(),
        )?)?;
    }
    Ok(())
}

/// A one-node run's events dated and deduplicated, ready to build.
fn prepare_single(
    files: &[SourceFile],
    (mut sources, mut events, mut notes): Scanned,
) -> (Vec<Event>, Vec<SourceInfo>, Vec<ReadNote>) {
    let logs: Vec<&SourceFile> = files.iter().filter(|f| f.kind == SourceKind::Log).collect();
    notes.extend(implausible_stamps(&mut events, &logs));
    notes.extend(time_regressions(&events, &logs));
    let refs = reference_dates(&events, &logs, &sources);
    let how = infer_dates(&mut events, &refs);
    if let Some(how) = how {
        notes.push(how);
    }
    let events = events.into_flat();
    // Duplicates are looked for across files; one file has none to find (its repeats
    // are real), and a 100,000-event log need not pay for the lookup.
    let events = if sources.len() > 1 {
        model::dedup_across_sources(events, &mut sources)
    } else {
        events
    };
    (events, sources, notes)
}

/// A one-node run built: its nvidia-smi samples attached, then `finish`.
fn finish_built(
    mut run: Run,
    files: Vec<SourceFile>,
    mut notes: Vec<ReadNote>,
    name: String,
) -> Result<Loaded, LoadError> {
    let smi: Vec<(&SourceFile, i64)> = files
        .iter()
        .filter(|f| f.kind == SourceKind::NvidiaSmi)
        .map(|f| (f, 0))
        .collect();
    attach_nvsmi(&mut run, &smi, &mut notes);
    finish(run, files, notes, name)
}

/// The last steps of every load: the notes joined to the run, and a run with no start-up
/// event refused with what it held instead.
fn finish(
    mut run: Run,
    files: Vec<SourceFile>,
    notes: Vec<ReadNote>,
    name: String,
) -> Result<Loaded, LoadError> {
    run.notes.extend(notes);
    if !run.has_startup_events() {
        // Server output that shows no start-up (a log that starts after it, or stops
        // before its first phase line) is read, `incomplete`; only input in which nothing
        // is recognised is refused.
        if !recognised(&run) {
            return Err(LoadError::NotAStartupLog {
                path: name,
                found: with_read_problems(what_was_found(&run), &run.notes),
            });
        }
        let note = ReadNote::NoStartup {
            lines: run.counts().lines,
            families: detected_families(&run)
                .into_iter()
                .map(str::to_string)
                .collect(),
        };
        run.notes.push(note);
    }
    Ok(Loaded { run, files })
}

/// Some line is one a grammar or a generic reader knows: an event (a Python traceback's
/// closing line, a c10 or Python-logging record), a record of a known family, or a known
/// noise line (progress bars, NCCL INFO). Prose and unrelated traffic are none of these.
fn recognised(run: &Run) -> bool {
    let c = run.counts();
    !run.events.is_empty() || c.events > 0 || c.records > 0 || c.noise > 0
}

/// The grammar families the run's files were detected as, each once.
fn detected_families(run: &Run) -> Vec<&str> {
    let mut families: Vec<&str> = run
        .sources
        .iter()
        .flat_map(|s| s.detected.iter().map(String::as_str))
        .collect();
    families.sort();
    families.dedup();
    families
}

/// What reading the inputs gives before the model is built: a run of one node, scanned;
/// or the nodes of a multi-node run with their events, for their clocks to be put on one
/// (`analysis::clock`) before [`assemble`] builds the run.
pub(crate) enum Gathered {
    /// One node: its logs scanned, the model not yet built (`finish_single` builds the
    /// start-up asked for, `finish_single_every` each in turn).
    Single(Box<SingleRead>),
    Nodes(NodesRead),
}

/// A one-node run as scanned.
pub(crate) struct SingleRead {
    name: String,
    files: Vec<SourceFile>,
    scanned: Scanned,
}

/// The nodes of a multi-node run as read: each node's events with ranks resolved and
/// duplicates dropped, on the node's own clock.
pub(crate) struct NodesRead {
    pub(crate) name: String,
    pub(crate) nodes: Vec<Node>,
    /// The nodes' events in node order: `events[ranges[n]]` are node n's.
    events: Vec<Event>,
    ranges: Vec<std::ops::Range<usize>>,
    sources: Vec<SourceInfo>,
    files: Vec<SourceFile>,
    node_of_file: Vec<usize>,
    notes: Vec<ReadNote>,
}

impl NodesRead {
    /// Puts the nodes' clocks on one (`clock::align_nodes`), each node's events in its
    /// part of the run's vector.
    pub(crate) fn align_clocks(
        &mut self,
        barrier: &BTreeSet<(String, String)>,
        apply: bool,
    ) -> crate::model::node::Alignment {
        let mut parts = Vec::with_capacity(self.ranges.len());
        let mut rest: &mut [Event] = &mut self.events;
        for r in &self.ranges {
            let n = r.len().min(rest.len());
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(n);
            parts.push(part);
            rest = tail;
        }
        crate::analysis::clock::align_nodes(&mut self.nodes, &mut parts, barrier, apply)
    }
}

/// Each node's events, node n's at `[n]`, of events held in node order.
fn node_parts<'a>(events: &'a [Event], ranges: &[std::ops::Range<usize>]) -> Vec<&'a [Event]> {
    (ranges.iter())
        .map(|r| events.get(r.clone()).unwrap_or(&[]))
        .collect()
}

/// Reads a run given as one or more paths (`Inputs`): files of one host, or directories
/// that are nodes' (`run/node0/`, `run/node1/`). Ranks are resolved per node (pids repeat
/// across hosts), and a rank found on two nodes is an error. One path that is not split
/// into nodes is read as one node.
pub(crate) fn gather(
    gs: &GrammarSet,
    inputs: &Inputs,
    opts: &LoadOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<Gathered, LoadError> {
    let paths = &inputs.paths;
    let groups = &inputs.groups;
    let mut files: Vec<SourceFile> = Vec::new();
    let mut group_of_file: Vec<usize> = Vec::new();
    for (n, g) in groups.iter().enumerate() {
        for f in &g.files {
            files.push(f.clone());
            group_of_file.push(n);
        }
    }
    let log_idx: Vec<usize> = (0..files.len())
        .filter(|&i| files[i].kind == SourceKind::Log)
        .collect();
    let logs: Vec<&SourceFile> = log_idx.iter().map(|&i| &files[i]).collect();
    let (mut sources, mut events, scan_notes) = scan_logs(gs, &logs, opts, progress)?;
    let dir_notes = groups
        .iter()
        .flat_map(|g| g.notes.iter().cloned().map(ReadNote::Listing));
    let mut notes: Vec<ReadNote> = if inputs.undivided() {
        // One path: its directory's notes first, as it was listed.
        dir_notes.chain(scan_notes).collect()
    } else {
        scan_notes.into_iter().chain(dir_notes).collect()
    };
    // One path is a single node unless its files' NCCL lines name several hosts.
    if inputs.undivided()
        && !names_several_hosts(&events)
        && wrapped_nodes_by_source(&events, 1)[0].len() < 2
    {
        let name = crate::base::text::shown_path(&paths[0]);
        let scanned = (sources, events, notes);
        return Ok(Gathered::Single(Box::new(SingleRead {
            name,
            files,
            scanned,
        })));
    }
    let group_of_source: Vec<usize> = log_idx.iter().map(|&i| group_of_file[i]).collect();
    let hosts = hosts_by_source(&events, logs.len());
    let ranks = ranks_by_source(&events, logs.len());
    let assigned = assign_nodes(paths, groups, &group_of_source, &hosts, &ranks);
    // A log goes with its own node; another file (nvidia-smi CSV) with its group's.
    let mut node_of_file: Vec<usize> = group_of_file
        .iter()
        .map(|&g| assigned.home_of_group.get(g).copied().unwrap_or(0))
        .collect();
    for (s, &i) in log_idx.iter().enumerate() {
        node_of_file[i] = assigned.node_of_source[s];
    }
    notes.extend(implausible_stamps(&mut events, &logs));
    notes.extend(time_regressions(&events, &logs));
    let refs = reference_dates(&events, &logs, &sources);
    if let Some(how) = infer_dates(&mut events, &refs) {
        notes.push(how);
    }
    let split = split_by_node(events, assigned, &files, &mut node_of_file);
    // The configuration is often printed by one process of one node (kestrel's rank 0):
    // the other nodes' global ranks are named by its sizes.
    let run_sizes = (node_parts(&split.events, &split.ranges).into_iter())
        .map(|evs| model::configured_sizes(evs, gs.knowledge()))
        .find(|s| s.tp.is_some());
    let prepared = prepare_nodes(split.events, &split.ranges, &mut sources, |evs, sources| {
        let evs = model::dedup_across_sources(evs, sources);
        model::prepare_node(evs, gs.knowledge(), opts.attempt, run_sizes)
    });
    let Prepared {
        mut built,
        mut events,
        ranges,
    } = prepared;
    model::name_first_stage(&mut built, &mut events);
    let most = built.iter().map(|n| n.attempts).max().unwrap_or(1);
    check_attempt(&shown_paths(paths), opts.attempt, most)?;
    let by_node = node_parts(&events, &ranges);
    let nodes = nodes_of(&split.names, &split.sources, &built, &by_node, &mut notes)?;
    let name = if paths.len() == 1 {
        crate::base::text::shown_path(&paths[0])
    } else {
        shown_paths(paths)
    };
    Ok(Gathered::Nodes(NodesRead {
        name,
        nodes,
        events,
        ranges,
        sources,
        files,
        node_of_file,
        notes,
    }))
}

/// The nodes prepared: what each node's preparation found, and their events in one
/// vector in node order (`events[ranges[n]]` are node n's).
struct Prepared {
    built: Vec<model::NodeEvents>,
    events: Vec<Event>,
    ranges: Vec<std::ops::Range<usize>>,
}

/// Prepares each node (`prepare`: deduplication and `model::prepare_node`) from the
/// events in node order, last node first: each is split off the end of `placed`, whose
/// room is given back as it empties, and its prepared events go to one vector that the
/// run is built from. A vector per node, prepared and then joined into the run's, left
/// the events' size resident once more at the peak of a load of thousands of small nodes
/// (the nodes' freed small vectors; docs/performance.md).
fn prepare_nodes(
    mut placed: Vec<Event>,
    ranges: &[std::ops::Range<usize>],
    sources: &mut [SourceInfo],
    mut prepare: impl FnMut(Vec<Event>, &mut [SourceInfo]) -> model::NodeEvents,
) -> Prepared {
    // Filled from its back, as the nodes come last first: each node's events go in once,
    // where appending them and then reversing the whole and each node's part moved every
    // event three times more. Pushed to the front of a ring as large as the input, the
    // prepared events end at its back; `Vec::from` moves them to the front once if
    // deduplication dropped any, and not at all otherwise.
    let mut events: std::collections::VecDeque<Event> =
        std::collections::VecDeque::with_capacity(placed.len());
    let mut built = Vec::with_capacity(ranges.len());
    let mut lens = Vec::with_capacity(ranges.len());
    for r in ranges.iter().rev() {
        let node_events = placed.split_off(r.start.min(placed.len()));
        // A vector this large is a mapping of its own: shrinking it gives the pages back.
        if placed.capacity() - placed.len() > placed.capacity() / 8 {
            placed.shrink_to_fit();
        }
        let mut node = prepare(node_events, sources);
        lens.push(node.events.len());
        for e in std::mem::take(&mut node.events).into_iter().rev() {
            events.push_front(e);
        }
        built.push(node);
    }
    built.reverse();
    lens.reverse();
    let mut ranges = Vec::with_capacity(lens.len());
    let mut start = 0;
    for len in lens {
        ranges.push(start..start + len);
        start += len;
    }
    let events = Vec::from(events);
    Prepared {
        built,
        events,
        ranges,
    }
}

/// Each node as the run lists it, from its resolved events; a rank on two nodes is an
/// error.
fn nodes_of(
    names: &[String],
    sources_of_node: &[BTreeSet<usize>],
    built: &[model::NodeEvents],
    events: &[&[Event]],
    notes: &mut Vec<ReadNote>,
) -> Result<Vec<Node>, LoadError> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut owner: foldhash::HashMap<&crate::base::event::Rank, usize> = Default::default();
    for (n, r) in built.iter().enumerate() {
        let node_events = events.get(n).copied().unwrap_or(&[]);
        for rank in &r.ranks {
            if let Some(&first) = owner.get(rank) {
                return Err(LoadError::RankOnTwoNodes {
                    rank: rank.to_string(),
                    first: names[first].clone(),
                    second: names[n].clone(),
                });
            }
            owner.insert(rank, n);
        }
        let args = r.config.as_ref().and_then(|c| c.as_ref().ok());
        let int = |key: &str| match args.as_ref()?.config.get(key)? {
            crate::model::config::pyrepr::PyValue::Int(v) => u32::try_from(*v).ok(),
            _ => None,
        };
        nodes.push(Node {
            name: names[n].clone(),
            sources: sources_of_node[n].iter().copied().collect(),
            ranks: r.ranks.clone(),
            node_rank: int("node_rank"),
            nnodes: int("nnodes"),
            hosts: (node_events.iter())
                .filter_map(|e| e.host())
                .collect::<BTreeSet<&str>>()
                .into_iter()
                .map(str::to_string)
                .collect(),
            reference: false,
            offset: None,
        });
        notes.extend(ranks_on_two_hosts(&names[n], node_events));
        // Every node of a run named by one configuration notes the same numbers once.
        for note in &r.notes {
            if !notes.contains(note) {
                notes.push(note.clone());
            }
        }
    }
    notes.extend(nodes_sharing_a_host(&nodes));
    Ok(nodes)
}

/// Builds the run from its nodes once their clocks are on one (`alignment` says what was
/// added to each node's stamps, and which nodes could not be aligned).
pub(crate) fn assemble(
    gs: &GrammarSet,
    read: NodesRead,
    alignment: &Alignment,
) -> Result<Loaded, LoadError> {
    let NodesRead {
        name,
        nodes,
        events,
        ranges: _,
        sources,
        files,
        node_of_file,
        mut notes,
    } = read;
    for &n in &alignment.unaligned {
        notes.push(ReadNote::NodeNotAligned {
            node: nodes[n].name.clone(),
            reference: nodes[alignment.reference].name.clone(),
        });
    }
    let mut run = model::build_prepared(name.clone(), events, sources, gs.knowledge());
    run.nodes = nodes;
    let smi: Vec<(&SourceFile, i64)> = files
        .iter()
        .zip(&node_of_file)
        .filter(|(f, _)| f.kind == SourceKind::NvidiaSmi)
        .map(|(f, &n)| (f, alignment.shift_ms.get(n).copied().unwrap_or(0)))
        .collect();
    attach_nvsmi(&mut run, &smi, &mut notes);
    finish(run, files, notes, name)
}

/// The refusal of a run with no start-up event also says what could not be read: a cut
/// stream or a skipped file may be why nothing was found.
fn with_read_problems(mut found: String, notes: &[ReadNote]) -> String {
    for n in notes
        .iter()
        .filter(|n| matches!(n, ReadNote::Skipped { .. } | ReadNote::ReadStopped { .. }))
    {
        found.push_str("; ");
        found.push_str(&words::read_note(n));
    }
    found
}

/// What a file with no start-up event held instead, for the error that refuses it.
fn what_was_found(run: &Run) -> String {
    let c = run.counts();
    let families = detected_families(run);
    let example = run.sources.iter().find_map(|s| {
        let u = s.unknown_samples.first()?;
        Some(format!(
            ", the first at {}:{}: {}",
            s.path,
            u.line,
            crate::base::text::truncate(&u.text, 60)
        ))
    });
    format!(
        "{} lines, no start-up event (no phase line, no failure); {} not understood{}{}; `rankscope grammars list` shows what is read, docs/grammars.md how to add a server",
        c.lines,
        c.unknown,
        example.unwrap_or_default(),
        if families.is_empty() {
            String::new()
        } else {
            format!("; line prefixes look like {}", families.join("+"))
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::by_source::tests::event;

    #[test]
    fn a_files_events_of_one_process_share_its_writer_and_rank() {
        #![allow(clippy::expect_used)]
        let gs = GrammarSet::builtin().expect("built-in grammars compile");
        // Two lines of rank TP5, three NCCL lines of one process, one of another pid.
        let log = "[2026-12-04 10:00:01 TP5] Init torch distributed begin.\n\
                   node-a:4005:4005 [5] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
                   node-a:4005:4005 [5] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0.\n\
                   node-a:4005:4005 [5] NCCL INFO NCCL_IB_HCA set by environment to mlx5.\n\
                   node-a:4006:4006 [6] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
                   [2026-12-04 10:00:03 TP5] Init torch distributed ends. mem usage=0.60 GB\n";
        let run = run_from_bytes(&gs, "tp5.log", log.as_bytes(), 1 << 20);
        let at = |line: u64| run.events.iter().find(|e| e.origin.line == line);
        let writer = |line: u64| at(line).and_then(|e| e.writer.as_ref());
        let (w2, w3, w4, w5) = (writer(2), writer(3), writer(4), writer(5));
        let same = |a: Option<&std::sync::Arc<_>>, b: Option<&std::sync::Arc<_>>| {
            a.zip(b).is_some_and(|(a, b)| std::sync::Arc::ptr_eq(a, b))
        };
        assert!(
            same(w2, w3) && same(w3, w4),
            "one process's lines share one writer"
        );
        assert!(
            w5.is_some() && !same(w4, w5),
            "another pid is another writer"
        );
        let first = at(2).expect("the NCCL version line is an event");
        assert_eq!((first.pid(), first.host()), (Some(4005), Some("node-a")));
        assert_eq!(at(5).and_then(Event::pid), Some(4006));
        let rank = |line: u64| at(line).and_then(|e| e.rank.as_ref());
        assert_eq!(rank(1).map(ToString::to_string).as_deref(), Some("TP5"));
        assert!(rank(1)
            .zip(rank(6))
            .is_some_and(|(a, b)| a.shares_tags_with(b)));
    }

    #[test]
    fn nodes_prepared_last_first_come_out_in_node_order() {
        // Nodes of 2, 3 and 1 events; each node's preparation drops its first event and
        // keeps the rest in order, as deduplication may.
        let placed = vec![
            event(0, 1),
            event(0, 2),
            event(1, 1),
            event(1, 2),
            event(1, 3),
            event(2, 1),
        ];
        let mut order_prepared = Vec::new();
        let prepared = prepare_nodes(placed, &[0..2, 2..5, 5..6], &mut [], |evs, _| {
            order_prepared.push(evs.first().map(|e| e.origin.source));
            model::NodeEvents {
                events: evs.into_iter().skip(1).collect(),
                ranks: Vec::new(),
                config: None,
                attempts: 1,
                notes: Vec::new(),
            }
        });
        assert_eq!(
            order_prepared,
            [Some(2), Some(1), Some(0)],
            "last node first"
        );
        assert_eq!(prepared.ranges, [0..1, 1..3, 3..3]);
        let origins: Vec<(usize, u64)> = (prepared.events.iter())
            .map(|e| (e.origin.source, e.origin.line))
            .collect();
        assert_eq!(origins, [(0, 2), (1, 2), (1, 3)]);
        assert_eq!(prepared.built.len(), 3);
    }
}
