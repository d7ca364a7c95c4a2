//! The order the model reads a run's events in: by time where known, file order otherwise.

use chrono::NaiveDateTime;

use crate::base::event::Event;

/// Stable order: by time where known, file order otherwise. Events without a time take
/// the time of the event before them in their own file for ordering only.
pub(super) fn time_order(mut events: Vec<Event>) -> Vec<Event> {
    // Indices sorted, not the events: an event is a few hundred bytes to move, and a
    // second vector of them was a run's whole event list again at the peak (33 MiB at
    // 131,072 events). File order first, for the times the untimed events borrow.
    let mut in_file: Vec<usize> = (0..events.len()).collect();
    in_file.sort_by_key(|&i| (events[i].origin.source, events[i].origin.line));
    // Each event's time (its own stamp, else its file's last before it), and its place in
    // file order: the place breaks ties as source, line and index would, in a key of
    // 24 bytes rather than 40 (the keys are the peak of building a run of 65,536 ranks).
    let mut keyed: Vec<(Option<NaiveDateTime>, usize)> = Vec::with_capacity(events.len());
    let mut last: Option<(usize, NaiveDateTime)> = None;
    for (place, &i) in in_file.iter().enumerate() {
        let e = &events[i];
        let source = e.origin.source;
        let t = e.ts.or(last.filter(|(s, _)| *s == source).map(|(_, t)| t));
        if let Some(ts) = e.ts {
            last = Some((source, ts));
        }
        keyed.push((t, place));
    }
    // Unique places: the unstable sort is as stable as file order.
    keyed.sort_unstable();
    let order: Vec<usize> = (keyed.into_iter())
        .map(|(_, place)| in_file.get(place).copied().unwrap_or(place))
        .collect();
    drop(in_file);
    permute_in_place(&mut events, order);
    events
}

/// Reorders `items` so that position `i` holds what was at `order[i]` (`order` is a
/// permutation), by swaps along each cycle: no second vector of items.
pub(crate) fn permute_in_place<T>(items: &mut [T], mut order: Vec<usize>) {
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
    use super::{permute_in_place, time_order};
    use crate::base::event::test_event as at;

    #[test]
    fn events_go_by_time_an_unstamped_one_after_its_files_last_stamp_ties_in_file_order() {
        // An unstamped line borrows its own file's last stamp before it: file 1's line 2
        // 10:00:05 from its line 1, file 0's line 3 10:00:05 from its line 2 (not 10:00:09
        // from line 1, nor file 1's). Equal times keep source then line order.
        let events = vec![
            at(0, 1, Some(9)),
            at(1, 2, None),
            at(1, 1, Some(5)),
            at(0, 2, Some(5)),
            at(1, 3, Some(5)),
            at(0, 3, None),
        ];
        let ordered: Vec<(usize, u64)> = (time_order(events).iter())
            .map(|e| (e.origin.source, e.origin.line))
            .collect();
        assert_eq!(ordered, [(0, 2), (0, 3), (1, 1), (1, 2), (1, 3), (0, 1)]);
    }

    #[test]
    fn permute_in_place_gathers_by_the_order_across_cycles_and_fixed_points() {
        // Cycles 0→3→1→0 and 2→2 (fixed), 4↔5: position i takes what was at order[i].
        let mut items = vec!['a', 'b', 'c', 'd', 'e', 'f'];
        permute_in_place(&mut items, vec![3, 0, 2, 1, 5, 4]);
        assert_eq!(items, ['d', 'a', 'c', 'b', 'f', 'e']);
    }
}
