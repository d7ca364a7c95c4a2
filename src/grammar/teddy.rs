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
//! The order is chosen against the lines servers repeat for hours
//! ([`super::prefilter::TRAFFIC`]): each pattern, costliest first, joins the bucket where
//! it adds least to the comparisons a bucket would cost there (`Tables::cost`: the
//! windows of those lines its tables pass, and as many again as their byte frequencies
//! predict). With the fragments chosen so that none begins like ordinary text
//! (`prefilter::teddy_head`), the block prefilter over the 64 MB heads of the benchmark
//! logs (callgrind, the built-in fragments searched alone) went from 220.6 to 134.3 M
//! instructions on the shared log, 276.9 to 167.4 M on the vLLM V1 log and 210.8 to
//! 131.5 M on this project's own, against 132.2 M for patterns that never occur (ac487f0,
//! by frequencies alone). Judged by frequencies alone, one more line of ordinary text
//! (SGLang's capture bar, `prefilter::REPEATED_AT_START_UP`) changed the fragments and
//! the order cost the shared log 13 % more; judged by both, the new fragments' order
//! costs a model of Teddy's tables 0 comparisons on 4 MB of the shared log, 21 on the
//! vLLM log's and 0 on the own log's (ac487f0's fragments and order: 5,256, 65,908 and
//! 0). Only the order changes: which text matches, and where, does not. If a later
//! aho-corasick assigns buckets otherwise, the order is merely unhelpful. Choosing it
//! costs some 3.6 M instructions (about a millisecond) of every command's start-up.
//!
//! The noise test's literals (`any_literal::AnyLiteral`) are left in grammar order: they
//! are fixed words, several of which begin like traffic (`INFO:`, `it/s]`), and ordered
//! by frequencies the test took 344.5 M instructions on the shared log's head instead of
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

/// The four-byte windows of [`TRAFFIC`]'s lines, as bit sets over those windows: which
/// have low (then high) nibble `v` at place `j` of the window.
struct TrafficWindows {
    count: usize,
    low: Vec<[Vec<u64>; 16]>,
    high: Vec<[Vec<u64>; 16]>,
}

impl TrafficWindows {
    fn new(mask: usize) -> TrafficWindows {
        let windows: Vec<&[u8]> = (TRAFFIC.iter())
            .flat_map(|line| line.as_bytes().windows(MASK_MAX))
            .collect();
        let words = windows.len().div_ceil(64);
        let empty = || std::array::from_fn(|_| vec![0u64; words]);
        let mut low: Vec<[Vec<u64>; 16]> = (0..mask).map(|_| empty()).collect();
        let mut high: Vec<[Vec<u64>; 16]> = (0..mask).map(|_| empty()).collect();
        for (n, w) in windows.iter().enumerate() {
            for (j, &b) in w.iter().take(mask).enumerate() {
                let bit = 1u64 << (n % 64);
                let cells = [
                    low.get_mut(j).and_then(|t| t.get_mut(usize::from(b & 15))),
                    high.get_mut(j).and_then(|t| t.get_mut(usize::from(b >> 4))),
                ];
                for cell in cells.into_iter().flatten() {
                    if let Some(word) = cell.get_mut(n / 64) {
                        *word |= bit;
                    }
                }
            }
        }
        TrafficWindows {
            count: windows.len(),
            low,
            high,
        }
    }

    /// How many windows pass a bucket's tables.
    fn passing(&self, t: &Tables, mask: usize) -> usize {
        let words = self.count.div_ceil(64);
        let (mut pass, mut any) = (vec![u64::MAX; words], vec![0u64; words]);
        let places = (self.low.iter().zip(t.low)).chain(self.high.iter().zip(t.high));
        for (by_nibble, set) in places.take(2 * mask) {
            any.fill(0);
            for through in bits(set).filter_map(|v| by_nibble.get(v)) {
                any.iter_mut().zip(through).for_each(|(a, x)| *a |= x);
            }
            pass.iter_mut().zip(&any).for_each(|(p, a)| *p &= a);
        }
        pass.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// The nibble values a table holds, in ascending order.
fn bits(set: u16) -> impl Iterator<Item = usize> {
    let mut left = set;
    std::iter::from_fn(move || {
        let v = left.trailing_zeros();
        left &= left.wrapping_sub(1);
        (v < 16).then_some(v as usize)
    })
}

/// What a bucket's cost is judged by: [`TRAFFIC`]'s windows and its byte shares.
struct Sample {
    windows: TrafficWindows,
    share: [[f64; 16]; 16],
}

/// A bucket's tables: the nibbles its patterns hold at each place, and how many it holds.
#[derive(Clone, Copy, Default)]
struct Tables {
    low: [u16; MASK_MAX],
    high: [u16; MASK_MAX],
    patterns: usize,
}

impl Tables {
    fn with(mut self, pattern: &[u8]) -> Tables {
        for ((low, high), &b) in self.low.iter_mut().zip(&mut self.high).zip(pattern) {
            *low |= 1 << (b & 15);
            *high |= 1 << (b >> 4);
        }
        self.patterns += 1;
        self
    }

    /// Comparisons the bucket would cost over [`TRAFFIC`]: the windows of its lines that
    /// pass the bucket's tables, plus as many again as the lines' byte frequencies predict
    /// for a text of their length with the bytes independent, times the bucket's pattern
    /// count. The windows are the words servers do print (`page`, `fail`, `cache`); the
    /// frequencies stand for the rest of a server's lines, other values and other words.
    /// Either alone chose orders that cost much more on some log: by frequencies alone an
    /// order put `capturin` beside `Failed` and `paged KV`, whose tables pass most words of
    /// the form `?a??`, and by the windows alone the order fitted TRAFFIC's 2 KB and little
    /// else (a model of Teddy's tables over the benchmark logs).
    fn cost(&self, mask: usize, sample: &Sample) -> f64 {
        if self.patterns == 0 {
            return 0.0;
        }
        let mut pass = 1.0;
        for (&low, &high) in self.low.iter().zip(&self.high).take(mask) {
            // In byte order, so that the sum is the same float whatever the members' order.
            let mut here = 0.0;
            for hi in bits(high) {
                for lo in bits(low) {
                    here += (sample.share.get(hi).and_then(|row| row.get(lo))).unwrap_or(&0.0);
                }
            }
            pass *= here;
        }
        let seen = sample.windows.passing(self, mask) as f64;
        (seen + pass * sample.windows.count as f64) * self.patterns as f64
    }
}

/// Comparisons a bucket holding `members` would cost (the order's tests).
#[cfg(test)]
fn bucket_cost(patterns: &[&[u8]], members: &[usize], mask: usize, sample: &Sample) -> f64 {
    (members.iter().filter_map(|&m| patterns.get(m)))
        .fold(Tables::default(), |t, p| t.with(p))
        .cost(mask, sample)
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
    let sample = Sample {
        windows: TrafficWindows::new(mask),
        share: traffic_share(),
    };
    // Where pattern `i` of the order goes: bucket `buckets - 1 - i % buckets`.
    let bucket_of = |i: usize| buckets - 1 - i % buckets;
    let mut room = vec![0usize; buckets];
    for i in 0..n {
        if let Some(r) = room.get_mut(bucket_of(i)) {
            *r += 1;
        }
    }
    let alone: Vec<f64> = (patterns.iter())
        .map(|p| Tables::default().with(p).cost(mask, &sample))
        .collect();
    let mut by_cost: Vec<usize> = (0..n).collect();
    // Stable: of equal costs, the earlier pattern first.
    by_cost.sort_by(|&a, &b| alone[b].total_cmp(&alone[a]));
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); buckets];
    let mut tables = vec![Tables::default(); buckets];
    let mut cost = vec![0.0f64; buckets];
    for i in by_cost {
        let Some(p) = patterns.get(i) else { continue };
        let mut best: Option<(f64, usize, Tables)> = None;
        for (b, (t, (&r, &c))) in tables.iter().zip(room.iter().zip(&cost)).enumerate() {
            if t.patterns >= r {
                continue;
            }
            let grown = t.with(p);
            let added = grown.cost(mask, &sample) - c;
            if best.is_none_or(|(a, _, _)| added < a) {
                best = Some((added, b, grown));
            }
        }
        let Some((added, b, grown)) = best else {
            continue;
        };
        if let (Some(m), Some(t), Some(c)) =
            (members.get_mut(b), tables.get_mut(b), cost.get_mut(b))
        {
            m.push(i);
            *t = grown;
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
        let sample = Sample {
            windows: TrafficWindows::new(4),
            share: traffic_share(),
        };
        let bytes: Vec<&[u8]> = pats.iter().map(String::as_bytes).collect();
        let total = |order: &[usize]| -> f64 {
            let mut members = vec![Vec::new(); 16];
            for (i, &p) in order.iter().enumerate() {
                members[15 - i % 16].push(p);
            }
            members
                .iter()
                .map(|m| bucket_cost(&bytes, m, 4, &sample))
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
