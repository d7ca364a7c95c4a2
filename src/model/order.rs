//! The order the model reads a run's events in: by time where known, file order otherwise.

use std::collections::HashMap;

use chrono::NaiveDateTime;

use crate::base::event::Event;

/// Stable order: by time where known, file order otherwise. Events without a time take
/// the time of the event before them in their own file for ordering only.
pub(super) fn time_order(mut events: Vec<Event>) -> Vec<Event> {
    let mut last_ts: HashMap<usize, NaiveDateTime> = HashMap::new();
    // Indices sorted, not the events: an event is a few hundred bytes to move, and a
    // second vector of them was a run's whole event list again at the peak (33 MiB at
    // 131,072 events). File order first, for the times the untimed events borrow.
    let mut in_file: Vec<usize> = (0..events.len()).collect();
    in_file.sort_by_key(|&i| (events[i].origin.source, events[i].origin.line));
    let mut keyed: Vec<(Option<NaiveDateTime>, usize, u64, usize)> =
        Vec::with_capacity(events.len());
    for i in in_file {
        let e = &events[i];
        let t = e.ts.or_else(|| last_ts.get(&e.origin.source).copied());
        if let Some(ts) = e.ts {
            last_ts.insert(e.origin.source, ts);
        }
        keyed.push((t, e.origin.source, e.origin.line, i));
    }
    // Source and line break ties, then the index: the unstable sort keeps file order.
    keyed.sort_unstable();
    let order: Vec<usize> = keyed.into_iter().map(|k| k.3).collect();
    permute_in_place(&mut events, order);
    events
}

/// Reorders `items` so that position `i` holds what was at `order[i]` (`order` is a
/// permutation), by swaps along each cycle: no second vector of items.
fn permute_in_place<T>(items: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..order.len() {
        let mut at = start;
        while order[at] != DONE {
            let from = order[at];
            order[at] = DONE;
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::permute_in_place;

    #[test]
    fn permute_in_place_gathers_by_the_order_across_cycles_and_fixed_points() {
        // Cycles 0→3→1→0 and 2→2 (fixed), 4↔5: position i takes what was at order[i].
        let mut items = vec!['a', 'b', 'c', 'd', 'e', 'f'];
        permute_in_place(&mut items, vec![3, 0, 2, 1, 5, 4]);
        assert_eq!(items, ['d', 'a', 'c', 'b', 'f', 'e']);
    }
}
