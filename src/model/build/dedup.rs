//! Lines that two files of one run both hold (`server.log` and `stdout.txt` of the same
//! console), kept once.

use std::collections::{HashMap, HashSet};

use chrono::NaiveDateTime;

use crate::base::event::{Event, Rank};
use crate::model::SourceInfo;

/// Events that are the same line seen in two files of one run (`server.log` and
/// `stdout.txt` of the same console) are kept once. Within one file repeats are real.
/// What makes two events of different files the same line: rank, pid, kind, stamp,
/// message. The pid (with its host: pids are per host) is in it because the rank often is not known yet (a process named by
/// its `assignment` line is resolved after this): one file per process, every process
/// printing a barrier's line at the same instant, are different events, not one.
type DedupKey<'e> = (
    Option<&'e Rank>,
    Option<&'e str>,
    Option<u32>,
    &'e str,
    Option<NaiveDateTime>,
    &'e str,
);

fn dedup_key(e: &Event) -> DedupKey<'_> {
    (
        e.rank.as_ref(),
        e.host(),
        e.pid(),
        e.kind.as_str(),
        e.ts,
        &*e.message,
    )
}

/// Who wrote an event, as far as its dedup key says.
type Writer<'e> = (Option<&'e Rank>, Option<&'e str>, Option<u32>);

fn writer(e: &Event) -> Writer<'_> {
    (e.rank.as_ref(), e.host(), e.pid())
}

type Hasher = foldhash::fast::RandomState;

/// The writers whose events two or more sources hold; `order` walks the events source by
/// source. Only their events can be another file's lines: a fleet of one file per rank
/// has none.
fn shared_writers<'e>(events: &'e [Event], order: &[usize]) -> HashSet<Writer<'e>, Hasher> {
    let mut first_source: HashMap<Writer<'e>, usize, Hasher> = HashMap::default();
    let mut shared = HashSet::default();
    // A source's consecutive events mostly share a writer: looked up once a run.
    let mut last = None;
    for e in order.iter().filter_map(|&i| events.get(i)) {
        let here = (writer(e), e.origin.source);
        if last == Some(here) {
            continue;
        }
        last = Some(here);
        if *first_source.entry(here.0).or_insert(here.1) != here.1 {
            shared.insert(here.0);
        }
    }
    shared
}

/// Events that several files of a run both hold (the same rank, pid, kind, stamp and
/// message)
/// kept once; each source's `duplicate_events` counts what it lost.
pub fn dedup_across_sources(mut events: Vec<Event>, sources: &mut [SourceInfo]) -> Vec<Event> {
    // Keys borrow from the events (no string copied per event); which events stay is
    // decided first, then they are moved out in source order.
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| events.get(i).map_or(0, |e| e.origin.source));
    let mut keep = vec![false; events.len()];
    {
        // The events of a writer only one source holds are all kept, without a key:
        // keying every event was 1.6 % of the instructions of `summary` over 8,192 rank
        // files (callgrind), for a map that finds nothing there.
        let shared = shared_writers(&events, &order);
        // foldhash, not SipHash: a key per event, and the keys are short.
        let mut kept: HashMap<DedupKey<'_>, usize, Hasher> = HashMap::default();
        let mut seen_here: HashMap<DedupKey<'_>, usize, Hasher> = HashMap::default();
        let mut current = None;
        let mut last: Option<(Writer<'_>, bool)> = None;
        for &i in &order {
            let Some(e) = events.get(i) else { continue };
            let w = writer(e);
            let is_shared = match last {
                Some((lw, s)) if lw == w => s,
                _ => {
                    let s = shared.contains(&w);
                    last = Some((w, s));
                    s
                }
            };
            if !is_shared {
                if let Some(k) = keep.get_mut(i) {
                    *k = true;
                }
                continue;
            }
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
    // Events come in source order (as the scan gives them): then those kept are kept in
    // place, not moved into a second vector beside the first.
    if order.iter().enumerate().all(|(k, &i)| k == i) {
        let mut keep = keep.into_iter();
        events.retain(|_| keep.next().unwrap_or(false));
        return events;
    }
    let mut slots: Vec<Option<Event>> = events.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter(|&i| keep.get(i).copied().unwrap_or(false))
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::event::{test_event, Writer as EventWriter};
    use std::sync::Arc;

    /// What is kept (by source and line) and each source's count of duplicates, by the
    /// rule itself: every event keyed, in source order.
    fn by_every_key(events: &[Event], n_sources: usize) -> (Vec<(usize, u64)>, Vec<u64>) {
        let mut order: Vec<usize> = (0..events.len()).collect();
        order.sort_by_key(|&i| events[i].origin.source);
        let (mut kept, mut dups) = (Vec::new(), vec![0; n_sources]);
        let mut total: HashMap<DedupKey<'_>, usize> = HashMap::new();
        let mut here: HashMap<(usize, DedupKey<'_>), usize> = HashMap::new();
        for &i in &order {
            let e = &events[i];
            let h = here.entry((e.origin.source, dedup_key(e))).or_insert(0);
            *h += 1;
            let t = total.entry(dedup_key(e)).or_insert(0);
            if *h <= *t {
                dups[e.origin.source] += 1;
            } else {
                *t += 1;
                kept.push((e.origin.source, e.origin.line));
            }
        }
        (kept, dups)
    }

    #[test]
    fn only_writers_two_sources_hold_are_keyed_and_the_rule_holds() {
        // Sources 0 and 1 are the same console (rank 0, pid 7, twice a line each, one
        // line only in 1); source 2 is rank 1 alone; source 3 names no writer, as
        // source 0's unnamed lines do; events out of source order.
        let ev = |source, line, rank: Option<u32>, pid: Option<u32>, msg: &str| {
            let mut e = test_event(source, line, Some(5));
            e.rank = rank.map(Rank::tp);
            e.writer = pid.map(|pid| {
                Arc::new(EventWriter {
                    pid: Some(pid),
                    ..Default::default()
                })
            });
            e.message = msg.into();
            e
        };
        let events = vec![
            ev(1, 1, Some(0), Some(7), "a"),
            ev(0, 1, Some(0), Some(7), "a"),
            ev(0, 2, Some(0), Some(7), "a"),
            ev(1, 2, Some(0), Some(7), "a"),
            ev(1, 3, Some(0), Some(7), "b"),
            ev(2, 1, Some(1), Some(8), "a"),
            ev(2, 2, Some(1), Some(8), "a"),
            ev(0, 3, None, None, "c"),
            ev(3, 1, None, None, "c"),
            ev(3, 2, None, None, "c"),
        ];
        let (want, want_dups) = by_every_key(&events, 4);
        // By hand: source 0 keeps its three; source 1 repeats its two `a`s and keeps
        // `b`; source 2 is alone; source 3 repeats one `c` and keeps the second.
        assert_eq!(
            want,
            [(0, 1), (0, 2), (0, 3), (1, 3), (2, 1), (2, 2), (3, 2)]
        );
        assert_eq!(want_dups, [0, 2, 0, 1]);
        let source = SourceInfo {
            path: String::new(),
            bytes: 0,
            counts: Default::default(),
            unknown_samples: Vec::new(),
            cut_last_line: None,
            cut_fields: Vec::new(),
            duplicate_events: 0,
            detected: Vec::new(),
            ranks_seen: Vec::new(),
            dated_lines: Vec::new(),
        };
        let mut sources = vec![source; 4];
        let got = dedup_across_sources(events, &mut sources);
        let got: Vec<(usize, u64)> = got
            .iter()
            .map(|e| (e.origin.source, e.origin.line))
            .collect();
        assert_eq!(got, want);
        let dups: Vec<u64> = sources.iter().map(|s| s.duplicate_events).collect();
        assert_eq!(dups, want_dups);
    }
}
