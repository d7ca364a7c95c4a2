//! The order literals are handed to Teddy in, so that ordinary text rarely stops it.
//!
//! Teddy (aho-corasick's packed searcher, behind both the block prefilter and the noise
//! test) puts its patterns in 16 buckets (8 when there are 32 or fewer) and compares,
//! at every position, each byte of a window of up to four against two 16-bit tables per
//! bucket: one for the byte's low nibble, one for its high nibble. A bucket's tables are
//! the union of its patterns' nibbles, so a bucket holding `Error` and `LLM ` also
//! accepts `ErM ` and `LLr `; every window a bucket accepts costs a comparison of each of
//! its patterns. Which bucket a pattern goes to follows its place in the list given to
//! the builder (aho-corasick 1.1: the pattern with id `i` opens bucket
//! `buckets - 1 - i % buckets`), so the order chooses the buckets. Patterns whose nibbles
//! agree, put together, accept little more than each alone.
//!
//! The order is chosen against the byte frequencies of the lines servers repeat for hours
//! ([`super::prefilter::TRAFFIC`]): each pattern, costliest first, joins the bucket where
//! it adds least to the expected comparisons per position. With the fragments chosen so
//! that none begins like ordinary text (`prefilter::teddy_head`), the block prefilter
//! over the 64 MB heads of the benchmark logs (callgrind, the built-in fragments searched
//! alone) went from 220.6 to 134.3 M instructions on the shared log, 276.9 to 167.4 M on
//! the vLLM V1 log and 210.8 to 131.5 M on this project's own, against 132.2 M for
//! patterns that never occur. The order alone, with the old fragments, removed a third
//! of the shared log's comparisons and 6 % of the vLLM log's (a model of Teddy's tables
//! over 8 MB of each); the new fragments in the given order made twice as many (60
//! patterns, more to a bucket). Only the order changes: which text
//! matches, and where, does not. If a later aho-corasick assigns buckets otherwise, the
//! order is merely unhelpful.
//!
//! The noise test's literals (`prefilter::AnyLiteral`) are left in grammar order: they
//! are fixed words, several of which begin like traffic (`INFO:`, `it/s]`), and ordered
//! this way the test took 344.5 M instructions on the shared log's head instead of
//! 295.6 M (the vLLM log's fell by 20 M).

use super::prefilter::TRAFFIC;

/// Teddy compares at most this many leading bytes of each pattern.
const MASK_MAX: usize = 4;

/// The buckets Teddy uses for `n` patterns (fat Teddy above 32, where AVX2 allows).
fn bucket_count(n: usize) -> usize {
    if n > 32 {
        16
    } else {
        8
    }
}

/// The share of each byte in [`TRAFFIC`] (one newline per line), by high then low nibble;
/// every byte counts once more, so a byte the sample lacks is rare, not impossible.
fn traffic_share() -> [[f64; 16]; 16] {
    let mut count = [1.0f64; 256];
    for line in TRAFFIC {
        for &b in line.as_bytes().iter().chain(b"\n") {
            if let Some(c) = count.get_mut(usize::from(b)) {
                *c += 1.0;
            }
        }
    }
    let total: f64 = count.iter().sum();
    let mut share = [[0.0; 16]; 16];
    for (b, c) in count.iter().enumerate() {
        if let Some(cell) = share.get_mut(b >> 4).and_then(|row| row.get_mut(b & 15)) {
            *cell = c / total;
        }
    }
    share
}

/// Expected comparisons per position of a bucket holding `members`: the chance that a
/// window passes its nibble tables, bytes taken as independent, times its pattern count.
fn bucket_cost(patterns: &[&[u8]], members: &[usize], mask: usize, share: &[[f64; 16]; 16]) -> f64 {
    if members.is_empty() {
        return 0.0;
    }
    let mut pass = 1.0;
    for j in 0..mask {
        let (mut low, mut high) = (0u16, 0u16);
        for p in members.iter().filter_map(|&m| patterns.get(m)) {
            if let Some(&b) = p.get(j) {
                low |= 1 << (b & 15);
                high |= 1 << (b >> 4);
            }
        }
        // In byte order, so that the sum is the same float whatever the members' order.
        let mut here = 0.0;
        for (hi, row) in share.iter().enumerate() {
            for (lo, s) in row.iter().enumerate() {
                if high & (1 << hi) != 0 && low & (1 << lo) != 0 {
                    here += s;
                }
            }
        }
        pass *= here;
    }
    pass * members.len() as f64
}

/// The order (indices into `patterns`) to give Teddy's builder.
pub(super) fn teddy_order<P: AsRef<[u8]>>(patterns: &[P]) -> Vec<usize> {
    let patterns: Vec<&[u8]> = patterns.iter().map(AsRef::as_ref).collect();
    let n = patterns.len();
    let mask = (patterns.iter().map(|p| p.len()).min()).map_or(0, |m| m.min(MASK_MAX));
    if n < 2 || mask == 0 {
        return (0..n).collect();
    }
    let buckets = bucket_count(n);
    let share = traffic_share();
    // Where pattern `i` of the order goes: bucket `buckets - 1 - i % buckets`.
    let bucket_of = |i: usize| buckets - 1 - i % buckets;
    let mut room = vec![0usize; buckets];
    for i in 0..n {
        if let Some(r) = room.get_mut(bucket_of(i)) {
            *r += 1;
        }
    }
    let alone: Vec<f64> = (0..n)
        .map(|i| bucket_cost(&patterns, &[i], mask, &share))
        .collect();
    let mut by_cost: Vec<usize> = (0..n).collect();
    // Stable: of equal costs, the earlier pattern first.
    by_cost.sort_by(|&a, &b| alone[b].total_cmp(&alone[a]));
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); buckets];
    let mut cost = vec![0.0f64; buckets];
    for i in by_cost {
        let mut best: Option<(f64, usize)> = None;
        for b in 0..buckets {
            let (Some(m), Some(&r), Some(&c)) = (members.get(b), room.get(b), cost.get(b)) else {
                continue;
            };
            if m.len() >= r {
                continue;
            }
            let mut with = m.clone();
            with.push(i);
            let added = bucket_cost(&patterns, &with, mask, &share) - c;
            if best.is_none_or(|(a, _)| added < a) {
                best = Some((added, b));
            }
        }
        let Some((added, b)) = best else { continue };
        if let (Some(m), Some(c)) = (members.get_mut(b), cost.get_mut(b)) {
            m.push(i);
            *c += added;
        }
    }
    // Position i of the order takes the next member of the bucket that position opens.
    let mut next: Vec<std::vec::IntoIter<usize>> =
        members.into_iter().map(Vec::into_iter).collect();
    (0..n)
        .filter_map(|i| next.get_mut(bucket_of(i)).and_then(Iterator::next))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_a_permutation_and_puts_alike_nibbles_together() {
        // 40 patterns (fat Teddy, 16 buckets) in 20 pairs; the two of a pair share their
        // four leading bytes, which no other pattern's resemble. A pair costs no more
        // in one bucket than one of its patterns, while unlike patterns together accept
        // the cross products of their nibbles: the order should keep pairs together,
        // the given order (pattern i in bucket 15 - i % 16) never does.
        let pats: Vec<String> = (0..40u8)
            .map(|i| {
                let k = i / 2;
                let head = [b'A' + k, b'a' + k, b'0' + k % 10, b'!' + k % 14];
                format!("{}tail{i}", String::from_utf8_lossy(&head))
            })
            .collect();
        let order = teddy_order(&pats);
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..40).collect::<Vec<_>>());
        let bucket_of: Vec<usize> = {
            let mut b = vec![0; 40];
            for (i, &p) in order.iter().enumerate() {
                b[p] = 15 - i % 16;
            }
            b
        };
        let together = (0..20)
            .filter(|k| bucket_of[2 * k] == bucket_of[2 * k + 1])
            .count();
        assert!(
            together >= 16,
            "{together} of 20 pairs share a bucket: {order:?}"
        );
        let share = traffic_share();
        let bytes: Vec<&[u8]> = pats.iter().map(String::as_bytes).collect();
        let total = |order: &[usize]| -> f64 {
            let mut members = vec![Vec::new(); 16];
            for (i, &p) in order.iter().enumerate() {
                members[15 - i % 16].push(p);
            }
            members
                .iter()
                .map(|m| bucket_cost(&bytes, m, 4, &share))
                .sum()
        };
        let given: Vec<usize> = (0..40).collect();
        assert!(
            total(&order) < total(&given) / 2.0,
            "{} vs {}",
            total(&order),
            total(&given)
        );
    }

    #[test]
    fn few_or_short_patterns_keep_their_order() {
        assert_eq!(teddy_order(&["only"]), [0]);
        assert_eq!(teddy_order::<&str>(&[]), Vec::<usize>::new());
        assert_eq!(teddy_order(&["abc", ""]), [0, 1]);
    }
}
