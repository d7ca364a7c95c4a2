//! Which node each log belongs to: by directory, by the hosts its lines name, by
//! the ranks it holds, or line by line for a stream that interleaves wrapped nodes.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::PathBuf;

use crate::base::event::{Event, Rank};
use crate::ingest::source::{NodeFiles, SourceFile, SourceKind};
use crate::model::node::Node;
use crate::model::notes::ReadNote;

use super::by_source::BySource;

pub(super) fn shown_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| crate::base::text::shown_path(p))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// A rank whose NCCL lines name two hosts: its pid was taken for another host's process
/// (a file collected from two machines, or directories mixed up).
pub(super) fn ranks_on_two_hosts(node: &str, events: &[Event]) -> Vec<ReadNote> {
    let mut seen: std::collections::BTreeMap<&crate::base::event::Rank, BTreeSet<(&str, u32)>> =
        Default::default();
    for e in events {
        if let (Some(r), Some(h)) = (e.rank.as_ref(), e.host()) {
            seen.entry(r).or_default().insert((h, e.pid().unwrap_or(0)));
        }
    }
    seen.into_iter()
        .filter(|(_, hp)| hp.iter().map(|(h, _)| h).collect::<BTreeSet<_>>().len() > 1)
        .map(|(r, hp)| ReadNote::RankOnTwoHosts {
            node: node.to_string(),
            rank: r.clone(),
            hosts: hp.into_iter().map(|(h, p)| (h.to_string(), p)).collect(),
        })
        .collect()
}

/// Node directories whose lines all name one and the same host: one machine's logs
/// split into directories, whose clocks are then one clock (their offsets are estimated all
/// the same; a non-zero one is the stamps' own spread).
pub(super) fn nodes_sharing_a_host(nodes: &[Node]) -> Vec<ReadNote> {
    let mut by_host: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for n in nodes {
        if let [h] = n.hosts.as_slice() {
            by_host.entry(h).or_default().push(&n.name);
        }
    }
    by_host
        .into_iter()
        .filter(|(_, ns)| ns.len() > 1)
        .map(|(h, ns)| ReadNote::NodesShareHost {
            host: h.to_string(),
            nodes: ns.into_iter().map(str::to_string).collect(),
        })
        .collect()
}

/// The hosts NCCL's prefixes name in each source: the one a source names, or `None` for
/// a source naming none (no NCCL line) or several (a console several hosts wrote to).
pub(super) fn hosts_by_source(events: &BySource, sources: usize) -> Vec<Option<String>> {
    // `Some(None)`: several. No set per source: a run of 65,536 rank files held 65,536 of
    // them at once, freed small blocks the run's model was then built around.
    let mut named: Vec<Option<Option<&str>>> = vec![None; sources];
    for e in events.iter() {
        if let (Some(h), Some(seen)) = (e.host(), named.get_mut(e.origin.source)) {
            match seen {
                None => *seen = Some(Some(h)),
                Some(Some(one)) if *one != h => *seen = Some(None),
                Some(_) => {}
            }
        }
    }
    (named.into_iter())
        .map(|seen| seen.flatten().map(str::to_string))
        .collect()
}

/// The ranks each log source names in its record prefixes (before pids are resolved).
pub(super) fn ranks_by_source(events: &BySource, sources: usize) -> Vec<Vec<String>> {
    // Each distinct rank named once, not once per event (a rank's events mostly follow
    // one another), in order; vectors, not a set per source (see `hosts_by_source`).
    let mut named: Vec<Vec<&Rank>> = vec![Vec::new(); sources];
    for e in events.iter() {
        if let (Some(r), Some(list)) = (e.rank.as_ref(), named.get_mut(e.origin.source)) {
            if !r.is_engine() && list.last() != Some(&r) {
                list.push(r);
            }
        }
    }
    (named.into_iter())
        .map(|mut list| {
            list.sort_unstable();
            list.dedup();
            list.into_iter().map(Rank::to_string).collect()
        })
        .collect()
}

/// The nodes wrappers name in each source (kubectl pods, compose services, journald
/// hosts), in the order they first appear.
pub(super) fn wrapped_nodes_by_source(events: &BySource, sources: usize) -> Vec<Vec<String>> {
    let mut named: Vec<Vec<String>> = vec![Vec::new(); sources.max(1)];
    for e in events.iter() {
        if let (Some(n), Some(list)) = (e.node(), named.get_mut(e.origin.source)) {
            if !list.iter().any(|x| x == n) {
                list.push(n.to_string());
            }
        }
    }
    named
}

/// The hosts each source's lines name, in the order they first appear, for a source to
/// be read line by line as one node per host: one that names two or more hosts and whose
/// every line naming a process or a rank names its host (a framework that forwards its
/// workers' lines into the driver's log, `(ShardActor pid=N, ip=A.B.C.D) `). Empty for any
/// other source: a console whose server lines name no host beside NCCL's `host:pid:tid`
/// lines cannot be split by line (its ranks' lines would land on no host).
pub(super) fn host_split_by_source(events: &BySource, sources: usize) -> Vec<Vec<String>> {
    let mut named: Vec<Vec<String>> = vec![Vec::new(); sources.max(1)];
    let mut unsplittable = vec![false; sources.max(1)];
    for e in events.iter() {
        let s = e.origin.source;
        let (Some(list), Some(bad)) = (named.get_mut(s), unsplittable.get_mut(s)) else {
            continue;
        };
        match e.host() {
            Some(h) if !list.iter().any(|x| x == h) => list.push(h.to_string()),
            Some(_) => {}
            None => *bad |= e.pid().is_some() || e.rank.is_some(),
        }
    }
    named
        .into_iter()
        .zip(unsplittable)
        .map(|(list, bad)| {
            if bad || list.len() < 2 {
                Vec::new()
            } else {
                list
            }
        })
        .collect()
}

/// Whether the events name two hosts or more (NCCL's prefixes do).
pub(super) fn names_several_hosts(events: &BySource) -> bool {
    // Whether a second host is named, not how many: a set of every event's host was
    // half a percent of loading 8,192 rank files of 1,024 hosts.
    let mut hosts = events.iter().filter_map(|e| e.host());
    let first = hosts.next();
    hosts.any(|h| Some(h) != first)
}

/// The nodes of a run, and which node each log source and each discovered group of files
/// belongs to.
pub(super) struct NodeAssignment {
    pub(crate) names: Vec<String>,
    pub(crate) node_of_source: Vec<usize>,
    /// Where a group's files other than logs go (nvidia-smi CSVs).
    pub(crate) home_of_group: Vec<usize>,
}

/// A directory names its node (`run/node1/`, `node1/`). Where no directory does — one
/// path, or files given one by one from one directory — the host NCCL's prefixes name is
/// the node: files of one host are one node whatever their names, files of two hosts are
/// two. A file that names no host stays with the one host of its group; otherwise it
/// joins the one node whose files name the same ranks (a server log beside its console:
/// one rank does not run on two hosts), or forms a node of its own (named as its group
/// is) when no node, or several, share its ranks.
pub(super) fn assign_nodes(
    paths: &[PathBuf],
    groups: &[NodeFiles],
    group_of_source: &[usize],
    hosts: &[Option<String>],
    ranks: &[Vec<String>],
) -> NodeAssignment {
    #[derive(PartialEq, Eq, Hash)]
    enum Key {
        Dir(usize),
        Host(String),
        Plain(usize),
    }
    let mut names: Vec<String> = Vec::new();
    let mut index: foldhash::HashMap<Key, usize> = Default::default();
    let mut node_for = |key: Key, name: String| -> usize {
        *index.entry(key).or_insert_with(|| {
            names.push(name);
            names.len() - 1
        })
    };
    let group_name = |g: usize| {
        groups
            .get(g)
            .and_then(|x| x.node.clone())
            .unwrap_or_else(|| {
                paths
                    .first()
                    .map_or(format!("node{g}"), |p| crate::base::text::shown_path(p))
            })
    };
    let named_by_dir = |g: usize| groups.get(g).is_some_and(|x| x.by_dir && x.node.is_some());
    let mut node_of_source: Vec<Option<usize>> = vec![None; group_of_source.len()];
    let mut members_of: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
    for (s, &g) in group_of_source.iter().enumerate() {
        if let Some(m) = members_of.get_mut(g) {
            m.push(s);
        }
    }
    let host_of = |s: usize| hosts.get(s).and_then(|h| h.clone());
    // First the files whose node is certain: by directory, by host.
    let mut home_of_group: Vec<Option<usize>> = vec![None; groups.len()];
    for (g, members) in members_of.iter().enumerate() {
        if named_by_dir(g) {
            let n = node_for(Key::Dir(g), group_name(g));
            for &s in members {
                node_of_source[s] = Some(n);
            }
            home_of_group[g] = Some(n);
            continue;
        }
        let group_hosts: BTreeSet<String> = members.iter().filter_map(|&s| host_of(s)).collect();
        let only_host = match (group_hosts.len(), group_hosts.first()) {
            (1, Some(h)) => Some(node_for(Key::Host(h.clone()), h.clone())),
            _ => None,
        };
        for &s in members {
            node_of_source[s] = match host_of(s) {
                Some(h) => Some(node_for(Key::Host(h.clone()), h)),
                None => only_host,
            };
        }
        home_of_group[g] = only_host;
    }
    // Then the files that name no host, in a group that names none or several: each
    // joins the one node already holding its ranks, if there is one.
    let mut nodes_of_rank: foldhash::HashMap<&str, BTreeSet<usize>> = Default::default();
    for (s, n) in node_of_source.iter().enumerate() {
        if let (Some(n), Some(rs)) = (n, ranks.get(s)) {
            for r in rs {
                nodes_of_rank.entry(r.as_str()).or_default().insert(*n);
            }
        }
    }
    for (g, members) in members_of.iter().enumerate() {
        for &s in members {
            if node_of_source[s].is_some() {
                continue;
            }
            let mine = ranks.get(s).into_iter().flatten();
            let sharing: BTreeSet<usize> = mine
                .clone()
                .filter_map(|r| nodes_of_rank.get(r.as_str()))
                .flatten()
                .copied()
                .collect();
            let n = match (sharing.len(), sharing.first()) {
                (1, Some(&n)) => n,
                _ => node_for(Key::Plain(g), group_name(g)),
            };
            node_of_source[s] = Some(n);
            for r in mine {
                nodes_of_rank.entry(r.as_str()).or_default().insert(n);
            }
        }
        if home_of_group[g].is_none() {
            home_of_group[g] = members.first().and_then(|&s| node_of_source[s]);
        }
    }
    let home_of_group: Vec<usize> = (0..groups.len())
        .map(|g| home_of_group[g].unwrap_or_else(|| node_for(Key::Plain(g), group_name(g))))
        .collect();
    let node_of_source: Vec<usize> = node_of_source.into_iter().map(|n| n.unwrap_or(0)).collect();
    in_given_order(&names, &node_of_source, &home_of_group, group_of_source)
}

/// The nodes renumbered in the order their files were given (the first given is the
/// reference unless one says it is node_rank 0), not in the order `assign_nodes`'s passes
/// made them.
fn in_given_order(
    names: &[String],
    node_of_source: &[usize],
    home_of_group: &[usize],
    group_of_source: &[usize],
) -> NodeAssignment {
    let mut first_seen = vec![(usize::MAX, usize::MAX); names.len()];
    for (s, (&n, &g)) in node_of_source.iter().zip(group_of_source).enumerate() {
        first_seen[n] = first_seen[n].min((g, s));
    }
    for (g, &n) in home_of_group.iter().enumerate() {
        first_seen[n] = first_seen[n].min((g, usize::MAX));
    }
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&n| first_seen[n]);
    let mut renumbered = vec![0; names.len()];
    for (new, &old) in order.iter().enumerate() {
        renumbered[old] = new;
    }
    NodeAssignment {
        names: order.iter().map(|&n| names[n].clone()).collect(),
        node_of_source: node_of_source.iter().map(|&n| renumbered[n]).collect(),
        home_of_group: home_of_group.iter().map(|&n| renumbered[n]).collect(),
    }
}

/// How many events each of `nodes` nodes holds, from each event's node.
fn events_per_node(node_of_event: &[usize], nodes: usize) -> Vec<usize> {
    let mut counts = vec![0usize; nodes];
    for &n in node_of_event {
        if let Some(c) = counts.get_mut(n) {
            *c += 1;
        }
    }
    counts
}

/// The events in node order, each node's in source then line order, in the scan's own
/// vector: each event is swapped straight to its place (`model::order::permute_in_place`;
/// `node_of_event`, in source then line order, is its node among the kept ones). Moved
/// into a second vector, or into a vector per node, the events' size was resident twice
/// at the peak of a many-node load (the first vector's memory, or the small vectors'
/// freed blocks, stayed with the process). `counts[n]`: node n's events.
fn place_by_node(
    events: BySource,
    node_of_event: &[usize],
    counts: &[usize],
) -> (Vec<Event>, Vec<Range<usize>>) {
    let mut ranges = Vec::with_capacity(counts.len());
    let mut start = 0;
    for &c in counts {
        ranges.push(start..start + c);
        start += c;
    }
    let mut events = events.into_flat();
    if node_of_event.windows(2).all(|w| w[0] <= w[1]) || node_of_event.len() != events.len() {
        // Already in node order (one node, or nodes in source order). (A count that is
        // not the events' cannot happen: every event was given its node.)
        return (events, ranges);
    }
    // What each place takes: each node's events in turn, in their order.
    let mut next: Vec<usize> = ranges.iter().map(|r| r.start).collect();
    let mut order: Vec<usize> = (0..events.len()).collect();
    for (i, &n) in node_of_event.iter().enumerate() {
        if let Some(place) = order.get_mut(next[n]) {
            *place = i;
        }
        next[n] += 1;
    }
    crate::model::order::permute_in_place(&mut events, order);
    (events, ranges)
}

/// The run's events in node order (`events[ranges[n]]` are node n's), with each node's
/// name and the sources it holds.
pub(super) struct Split {
    pub(crate) names: Vec<String>,
    pub(crate) events: Vec<Event>,
    pub(crate) ranges: Vec<Range<usize>>,
    pub(crate) sources: Vec<BTreeSet<usize>>,
}

/// Per node: the events whose ranks are resolved among that host's processes only. A
/// stream that interleaves several wrapped nodes (kubectl --prefix over the pods of a
/// LeaderWorkerSet, compose services) is split line by line: the wrapper names the node; a
/// line with no wrapper goes with the line before it. A file whose lines name two or more
/// hosts (`host_split_by_source`) is split line by line too: the host names the node; a
/// line naming no host (the driver's own) goes with the file's first host. `node_of_file`
/// is renumbered when a node is dropped.
pub(super) fn split_by_node(
    events: BySource,
    assigned: NodeAssignment,
    files: &[SourceFile],
    node_of_file: &mut [usize],
) -> Split {
    let NodeAssignment {
        mut names,
        node_of_source,
        ..
    } = assigned;
    let sources = node_of_source.len();
    let wrapped = wrapped_nodes_by_source(&events, sources);
    let by_host = host_split_by_source(&events, sources);
    let whole = |s: usize| {
        wrapped.get(s).is_none_or(|w| w.len() < 2) && by_host.get(s).is_none_or(Vec::is_empty)
    };
    let mut sources_of_node: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); names.len()];
    let mut split_node_of: Vec<Option<usize>> = vec![None; sources];
    let node_named =
        |names: &mut Vec<String>, sources_of_node: &mut Vec<BTreeSet<usize>>, w: &str| {
            names.iter().position(|x| x == w).unwrap_or_else(|| {
                names.push(w.to_string());
                sources_of_node.push(BTreeSet::new());
                names.len() - 1
            })
        };
    // Each event's node first, then the events moved once (`place_by_node`).
    let mut node_of_event = Vec::with_capacity(events.len());
    for e in events.iter() {
        let s = e.origin.source;
        let split = wrapped.get(s).is_some_and(|w| w.len() >= 2);
        let n = match (split, e.node()) {
            (true, Some(w)) => {
                let n = node_named(&mut names, &mut sources_of_node, w);
                split_node_of[s] = Some(n);
                n
            }
            (true, None) => match split_node_of[s] {
                Some(n) => n,
                // Before the stream's first wrapped line: its first wrapper's node.
                None => node_named(&mut names, &mut sources_of_node, &wrapped[s][0]),
            },
            // A file split by host: the line's host, else the file's first host.
            (false, _) => match (by_host.get(s).filter(|hs| !hs.is_empty()))
                .and_then(|hs| e.host().or(hs.first().map(String::as_str)))
            {
                Some(h) => node_named(&mut names, &mut sources_of_node, h),
                None => node_of_source.get(s).copied().unwrap_or(0),
            },
        };
        sources_of_node[n].insert(s);
        node_of_event.push(n);
    }
    for (s, &n) in node_of_source.iter().enumerate() {
        if whole(s) {
            sources_of_node[n].insert(s);
        }
    }
    let counts = events_per_node(&node_of_event, names.len());
    // A split stream's own node (named by its path) holds nothing: dropped (unless another
    // file, an nvidia-smi CSV, lives there), and the indices after it moved down.
    let keep: Vec<bool> = (0..names.len())
        .map(|n| {
            counts[n] > 0
                || !sources_of_node[n].is_empty()
                || node_of_file
                    .iter()
                    .zip(files)
                    .any(|(&m, f)| m == n && f.kind != SourceKind::Log)
        })
        .collect();
    let mut new_index = vec![0usize; names.len()];
    let mut next = 0;
    for (n, k) in keep.iter().enumerate() {
        new_index[n] = next;
        if *k {
            next += 1;
        }
    }
    for i in node_of_file.iter_mut() {
        *i = new_index[*i];
    }
    for n in node_of_event.iter_mut() {
        *n = new_index[*n];
    }
    let counts: Vec<usize> = (counts.into_iter().zip(&keep))
        .filter_map(|(c, &k)| k.then_some(c))
        .collect();
    let (events, ranges) = place_by_node(events, &node_of_event, &counts);
    let (names, sources) = (names.into_iter().zip(sources_of_node).zip(&keep))
        .filter(|(_, &k)| k)
        .map(|(pair, _)| pair)
        .unzip();
    Split {
        names,
        events,
        ranges,
        sources,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::by_source::tests::event;

    fn origins(events: &[Event]) -> Vec<(usize, u64)> {
        events
            .iter()
            .map(|e| (e.origin.source, e.origin.line))
            .collect()
    }

    #[test]
    fn events_are_placed_in_node_order_keeping_their_order_within_a_node() {
        // Three sources; source 1 is a stream split line by line between nodes 0 and 2,
        // source 2 is node 1's: node order is not source order (the slot path).
        let by = BySource(vec![
            event(0, 1),
            event(0, 2),
            event(1, 1),
            event(1, 2),
            event(1, 3),
            event(2, 5),
        ]);
        let node_of_event = [2, 2, 0, 2, 0, 1];
        let (events, ranges) =
            place_by_node(by, &node_of_event, &events_per_node(&node_of_event, 3));
        assert_eq!(ranges, [0..2, 2..3, 3..6]);
        assert_eq!(
            origins(&events),
            [(1, 1), (1, 3), (2, 5), (0, 1), (0, 2), (1, 2)]
        );
        assert_eq!(events.capacity(), 6, "placed in the scan's own vector");
    }

    #[test]
    fn a_thousand_events_in_long_cycles_come_out_as_a_stable_sort_by_node_puts_them() {
        // Nodes drawn by a linear congruential sequence: every cycle length, many nodes
        // interleaved within one source.
        let mut x = 12345u64;
        let node_of_event: Vec<usize> = (0..1000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 33) as usize % 7
            })
            .collect();
        let by = BySource((0..1000).map(|i| event(i / 100, i as u64)).collect());
        let mut expected: Vec<(usize, (usize, u64))> = node_of_event
            .iter()
            .zip(origins(&by.0))
            .map(|(&n, o)| (n, o))
            .collect();
        expected.sort_by_key(|&(n, _)| n);
        let (events, ranges) =
            place_by_node(by, &node_of_event, &events_per_node(&node_of_event, 7));
        let want: Vec<(usize, u64)> = expected.iter().map(|&(_, o)| o).collect();
        assert_eq!(origins(&events), want);
        for (n, r) in ranges.iter().enumerate() {
            assert_eq!(r.len(), node_of_event.iter().filter(|&&m| m == n).count());
        }
    }

    fn with(source: usize, line: u64, host: Option<&str>, rank: Option<Rank>) -> Event {
        let mut e = event(source, line);
        e.writer = crate::base::event::Writer::of(Some(7), None, host.map(Into::into));
        e.rank = rank;
        e
    }

    #[test]
    fn a_source_has_a_host_when_its_lines_name_exactly_one() {
        let by = BySource(vec![
            with(0, 1, Some("a"), None),
            with(0, 2, Some("a"), None),
            with(1, 1, Some("a"), None),
            with(1, 2, Some("b"), None),
            with(1, 3, Some("a"), None),
            with(2, 1, None, None),
        ]);
        assert_eq!(
            hosts_by_source(&by, 4),
            [Some("a".to_string()), None, None, None]
        );
    }

    #[test]
    fn a_sources_ranks_are_listed_once_each_in_rank_order_without_engines() {
        let by = BySource(vec![
            with(0, 1, None, Some(Rank::tp(3))),
            with(0, 2, None, Some(Rank::tp(1))),
            with(0, 3, None, Some(Rank::tp(3))),
            with(0, 4, None, Some(Rank::engine())),
            with(0, 5, None, Some(Rank::tp(1))),
            with(1, 1, None, Some(Rank::tp(0))),
        ]);
        assert_eq!(
            ranks_by_source(&by, 3),
            [
                vec!["TP1".to_string(), "TP3".into()],
                vec!["TP0".into()],
                vec![]
            ]
        );
    }

    #[test]
    fn events_already_in_node_order_are_taken_as_they_are() {
        let by = BySource(vec![event(0, 1), event(1, 1), event(1, 2)]);
        let (events, ranges) = place_by_node(by, &[0, 1, 1], &[1, 2]);
        assert_eq!(ranges, [0..1, 1..3]);
        assert_eq!(origins(&events), [(0, 1), (1, 1), (1, 2)]);
    }
}
