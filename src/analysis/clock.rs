//! Node clocks: each node's offset from the reference node, as an interval, from the
//! events every rank prints as it leaves a collective (grammar events marked
//! `barrier_exit`). The method is in docs/architecture.md (Nodes and clocks).

use std::collections::{BTreeMap, BTreeSet};

use chrono::NaiveDateTime;

use crate::base::event::{Event, Name, Rank};
use crate::model::node::{Alignment, ClockOffset, Node};

/// How far apart, at most, ranks are assumed to leave one collective and print its line,
/// across all nodes: the release itself spreads by microseconds to a few milliseconds, the
/// print after it by the Python work in between. Each offset interval is widened by this
/// much on both sides.
pub(crate) const BARRIER_SPREAD_MS: i64 = 50;

fn ms(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp_millis()
}

/// Per barrier exit (kind, n-th occurrence on a rank), on a node's local clock, the
/// latest stamp of its ranks and the earliest end of a stamp's step: `(max s, min (s +
/// step))`. Rank r left at local time in `[s_r, s_r + step_r)`; all ranks left within the
/// spread of one another, so when the latest stamp is past the earliest end by the spread
/// or more, the node's ranks did not leave together and the event is `None` for it.
type Windows = BTreeMap<(Name, usize), Option<(i64, i64)>>;

fn node_windows<'a>(
    events: impl Iterator<Item = &'a Event>,
    barrier: &BTreeSet<(String, String)>,
) -> Windows {
    // (kind, occurrence) → (latest stamp start, earliest stamp end)
    let mut seen: BTreeMap<(&Rank, &str), usize> = BTreeMap::new();
    let mut acc: BTreeMap<(Name, usize), (i64, i64)> = BTreeMap::new();
    for e in events {
        let (Some(t), Some(rank)) = (e.ts, e.rank.as_ref()) else {
            continue;
        };
        // A handful of marked (grammar, kind) pairs: compared in place, no pair built
        // per event.
        let marked = (barrier.iter()).any(|(g, k)| *g == e.grammar && *k == e.kind);
        if rank.is_engine() || !marked {
            continue;
        }
        let n = seen.entry((rank, e.kind.as_str())).or_insert(0);
        let key = (e.kind.clone(), *n);
        *n += 1;
        // The step the line's format prints (`Event::ts_step_ms`), not the value's digits.
        let (lo, hi) = (ms(t), ms(t) + i64::from(e.ts_step_ms));
        let w = acc.entry(key).or_insert((lo, hi));
        w.0 = w.0.max(lo);
        w.1 = w.1.min(hi);
    }
    acc.into_iter()
        .map(|(k, (lo, hi))| (k, (lo - hi < BARRIER_SPREAD_MS).then_some((lo, hi))))
        .collect()
}

/// The largest set of open intervals that share a point, and their intersection.
/// Returns (lo, hi, how many agree).
fn most_agreeing(intervals: &[(i64, i64)]) -> Option<(i64, i64, usize)> {
    let mut best: Option<(i64, i64, usize)> = None;
    for &(lo, _) in intervals {
        // Just right of `lo`: the intervals that contain it.
        let members: Vec<&(i64, i64)> = intervals
            .iter()
            .filter(|(l, h)| *l <= lo && *h > lo)
            .collect();
        if members.is_empty() {
            continue;
        }
        let cut_lo = members.iter().map(|m| m.0).max().unwrap_or(lo);
        let cut_hi = members.iter().map(|m| m.1).min().unwrap_or(lo);
        let better = match best {
            None => true,
            // More agreeing events win; among as many, the narrower intersection.
            Some((bl, bh, n)) => {
                members.len() > n || (members.len() == n && cut_hi - cut_lo < bh - bl)
            }
        };
        if better {
            best = Some((cut_lo, cut_hi, members.len()));
        }
    }
    best
}

/// Estimates each node's clock against the reference node's (the node that says it is
/// `node_rank` 0, else the first given) and, when `apply`, moves its events' stamps onto
/// the reference clock, so every timeline downstream is on one clock. `events[n]` are node
/// n's events with ranks resolved; `nodes[n]` records its offset and whether it is the
/// reference.
pub(crate) fn align_nodes(
    nodes: &mut [Node],
    events: &mut [&mut [Event]],
    barrier: &BTreeSet<(String, String)>,
    apply: bool,
) -> Alignment {
    let reference = nodes
        .iter()
        .position(|n| n.node_rank == Some(0))
        .unwrap_or(0);
    let by_node: Vec<Vec<&Event>> = events.iter().map(|evs| evs.iter().collect()).collect();
    let offsets = estimate_offsets(&by_node, reference, barrier);
    if let Some(r) = nodes.get_mut(reference) {
        r.reference = true;
    }
    let mut shift_ms = vec![0i64; nodes.len()];
    for (n, o) in offsets.into_iter().enumerate() {
        nodes[n].offset = o.map(|mut o| {
            o.applied = apply;
            if o.applied {
                shift_ms[n] = -o.mid_ms();
            }
            o
        });
    }
    for (evs, &shift) in events.iter_mut().zip(&shift_ms) {
        if shift != 0 {
            let d = chrono::Duration::milliseconds(shift);
            for e in evs.iter_mut() {
                e.ts = e.ts.map(|t| t + d);
            }
        }
    }
    let unaligned = (0..nodes.len())
        .filter(|&n| n != reference && nodes[n].offset.is_none() && nodes.len() > 1)
        .collect();
    Alignment {
        reference,
        shift_ms,
        unaligned,
    }
}

/// Each node's clock against `reference`'s, from the barrier exits the two have in
/// common. `events_by_node[n]` are node n's events with ranks resolved. The reference
/// gets `None`; so does a node with no barrier exit in common with it.
pub(crate) fn estimate_offsets(
    events_by_node: &[Vec<&Event>],
    reference: usize,
    barrier: &BTreeSet<(String, String)>,
) -> Vec<Option<ClockOffset>> {
    let windows: Vec<Windows> = events_by_node
        .iter()
        .map(|evs| node_windows(evs.iter().copied(), barrier))
        .collect();
    let Some(refw) = windows.get(reference) else {
        return vec![None; events_by_node.len()];
    };
    windows
        .iter()
        .enumerate()
        .map(|(n, w)| {
            if n == reference {
                return None;
            }
            // Node clock = reference clock + offset. Rank r here and q on the reference
            // left within the spread of each other, at local times in [s_r, s_r + step)
            // and [s_q, s_q + step): offset in (s_r - s_q - step - spread, s_r + step -
            // s_q + spread). Over every pair that is (a - d - spread, b - c + spread),
            // with (a, b) this node's window and (c, d) the reference's.
            let intervals: Vec<(i64, i64)> = w
                .iter()
                .filter_map(|(k, here)| {
                    let (a, b) = (*here)?;
                    let (c, d) = refw.get(k).copied().flatten()?;
                    Some((a - d - BARRIER_SPREAD_MS, b - c + BARRIER_SPREAD_MS))
                })
                .collect();
            let (lo_ms, hi_ms, agree) = most_agreeing(&intervals)?;
            Some(ClockOffset {
                lo_ms,
                hi_ms,
                barrier_events: agree,
                rejected_events: intervals.len() - agree,
                applied: false,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreeing_intervals_intersect_and_an_outlier_is_left_out() {
        // Three barrier exits agree on (-3050, -1950) ∩ (-4050, -1950) ∩ (-3050, -950);
        // a fourth, 6 s away, is a straggler's line and is left out.
        let iv = [(-3050, -950), (-4050, -1950), (-3050, -1950), (2950, 5050)];
        assert_eq!(most_agreeing(&iv), Some((-3050, -1950, 3)));
    }
}
