//! Lines that two files of one run both hold (`server.log` and `stdout.txt` of the same
//! console), kept once.

use std::collections::HashMap;

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
