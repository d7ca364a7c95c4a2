//! The order the model reads a run's events in: by time where known, file order otherwise.

use chrono::NaiveDateTime;

use crate::base::event::Event;

/// Stable order: by time where known, file order otherwise. Events without a time take
/// the time of the event before them in their own file for ordering only.
pub(super) fn time_order(mut events: Vec<Event>) -> Vec<Event> {
    let Some(order) = packed_order(&events) else {
        return time_order_by_tuples(events);
    };
    permute_in_place(&mut events, order);
    events
}

/// `time_order`'s permutation, its keys packed into integers: file order as (source,
/// line, index) in a `u128`, then (stamp, place in file order) in another, each sorted
/// as plain integers. Sorting indices by tuples read from the events themselves (each a
/// few hundred bytes away from the next) was two thirds of ordering a run of 8,192
/// ranks. `None` where a source, an index or a place does not fit 32 bits.
fn packed_order(events: &[Event]) -> Option<Vec<usize>> {
    let mut in_file: Vec<u128> = Vec::with_capacity(events.len());
    for (i, e) in events.iter().enumerate() {
        let source = u32::try_from(e.origin.source).ok()?;
        let index = u32::try_from(i).ok()?;
        in_file.push(
            (u128::from(source) << 96) | (u128::from(e.origin.line) << 32) | u128::from(index),
        );
    }
    // Unique keys (the index): the unstable sort is as stable as file order.
    in_file.sort_unstable();
    let index_of = |key: u128| (key & u128::from(u32::MAX)) as usize;
    let mut keyed: Vec<u128> = Vec::with_capacity(events.len());
    let mut last: Option<(usize, NaiveDateTime)> = None;
    for (place, &key) in in_file.iter().enumerate() {
        let e = &events[index_of(key)];
        let source = e.origin.source;
        let t = e.ts.or(last.filter(|(s, _)| *s == source).map(|(_, t)| t));
        if let Some(ts) = e.ts {
            last = Some((source, ts));
        }
        keyed.push(stamp_key(t) | u128::from(u32::try_from(place).ok()?));
    }
    keyed.sort_unstable();
    let order = (keyed.into_iter())
        .map(|k| {
            in_file
                .get(index_of(k))
                .map_or(index_of(k), |&key| index_of(key))
        })
        .collect();
    Some(order)
}

/// A stamp in the top 96 bits of a `u128`, ordered as `Option<NaiveDateTime>` orders:
/// none first (bit 127 clear), then by second since the epoch (sign bit flipped, so the
/// unsigned order is the signed one) and the nanosecond within it (a leap second's
/// runs to 2·10⁹ − 1, 31 bits).
fn stamp_key(t: Option<NaiveDateTime>) -> u128 {
    let Some(t) = t else { return 0 };
    let utc = t.and_utc();
    let seconds = (utc.timestamp() as u64) ^ (1 << 63);
    let nanos = u128::from(utc.timestamp_subsec_nanos() & 0x7fff_ffff);
    (1 << 127) | (u128::from(seconds) << 63) | (nanos << 32)
}

/// `time_order` with its keys as tuples: for the inputs `packed_order` cannot pack.
fn time_order_by_tuples(mut events: Vec<Event>) -> Vec<Event> {
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
    use super::{packed_order, permute_in_place, time_order, time_order_by_tuples};
    use crate::base::event::test_event as at;
    use chrono::NaiveDate;

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
    fn packed_keys_order_as_the_tuples_do_across_eras_leap_seconds_and_sources() {
        // Stamps the packing could get wrong: before 1970 (a negative second count),
        // 1969-12-31 23:59:59.5 against 1970-01-01 00:00:00 (the sign bit), a leap second
        // (nanoseconds past 10^9) against the next second, two sources' stamps a
        // nanosecond apart (the nanosecond decides, not file order), unstamped lines
        // borrowing their file's last stamp, and lines given out of order within a file.
        let stamp = |y, mo, d, h, mi, s, nano| {
            NaiveDate::from_ymd_opt(y, mo, d)
                .and_then(|day| day.and_hms_nano_opt(h, mi, s, nano))
                .unwrap()
        };
        let stamps = [
            Some(stamp(2026, 12, 4, 10, 0, 5, 1)),
            None,
            Some(stamp(1969, 12, 31, 23, 59, 59, 500_000_000)),
            Some(stamp(1970, 1, 1, 0, 0, 0, 0)),
            Some(stamp(2016, 12, 31, 23, 59, 59, 1_500_000_000)),
            Some(stamp(2017, 1, 1, 0, 0, 0, 0)),
            Some(stamp(1900, 1, 1, 0, 0, 0, 1)),
            Some(stamp(2026, 12, 4, 10, 0, 5, 0)),
            None,
        ];
        let events = || {
            (stamps.iter().enumerate())
                .map(|(i, &ts)| {
                    let mut e = at(i % 3, 20 - i as u64, None);
                    e.ts = ts;
                    e
                })
                .collect::<Vec<_>>()
        };
        let key = |e: &crate::base::event::Event| (e.origin.source, e.origin.line);
        let packed: Vec<_> = time_order(events()).iter().map(key).collect();
        let tuples: Vec<_> = time_order_by_tuples(events()).iter().map(key).collect();
        assert_eq!(packed, tuples);
        // By hand, in file order source 0 is lines 14 (1900), 17 (1970), 20 (2026);
        // source 1 lines 13 (2026), 16 (the leap second), 19 (unstamped: borrows the leap
        // second); source 2 lines 12 (unstamped, nothing before it: no time, so first),
        // 15 (2017), 18 (1969). Then by time: 1900, 1969 before 1970, the leap second
        // and the line borrowing it (file order) before 2017, and the two equal 2026
        // stamps a nanosecond apart: source 1's first, though source 0 is first in file
        // order.
        assert_eq!(
            packed,
            [
                (2, 12),
                (0, 14),
                (2, 18),
                (0, 17),
                (1, 16),
                (1, 19),
                (2, 15),
                (1, 13),
                (0, 20)
            ]
        );
        assert!(packed_order(&events()).is_some());
    }

    #[test]
    fn permute_in_place_gathers_by_the_order_across_cycles_and_fixed_points() {
        // Cycles 0→3→1→0 and 2→2 (fixed), 4↔5: position i takes what was at order[i].
        let mut items = vec!['a', 'b', 'c', 'd', 'e', 'f'];
        permute_in_place(&mut items, vec![3, 0, 2, 1, 5, 4]);
        assert_eq!(items, ['d', 'a', 'c', 'b', 'f', 'e']);
    }
}
