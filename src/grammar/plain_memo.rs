//! The plain-line memo: what the wrapper peel and the noise test said of a line that
//! starts no record and holds no event literal, kept by the line's shape (its text with
//! every ASCII digit written `0`), so that the next line of the shape is not searched
//! again.
//!
//! Such lines are a start-up's progress bars (`Loading safetensors checkpoint shards:
//! 44% Completed | 72/163 [...]`, a capture bar per batch size) and NCCL's `INFO` lines:
//! some 57 of a rank file's 259 lines, each costing ~650 instructions in `peel` (two
//! `memmem` searches of its head, the wrapper tests) and the noise test after it. Their
//! shapes repeat within a file and from rank to rank, and a memo's answer is one pass
//! writing the shape, a hash and a comparison.
//!
//! Exact by construction. `peel` tests digits only as a class (`is_ascii_digit`,
//! `is_ascii_alphanumeric`) and looks for bytes and words that hold none, so two lines
//! of one shape peel at the same offsets. The noise test looks for literals; one with no
//! digit is found at the same places in two lines of one shape (they agree on every byte
//! that is not a digit, and a digit matches no byte of it), so its answer is kept only
//! when no noise literal holds a digit (a user grammar's may): otherwise the test runs on
//! every line. Whether a line starts a record is not kept (`[2…` is a record start,
//! `[3…` is not): that test is cheap and runs on every line.

use std::hash::BuildHasher;

use super::set::{GrammarSet, LineMemo};

/// Slots of the memo's table, each one shape (direct-mapped: two shapes of one slot
/// replace each other). A rank file shows a dozen plain shapes; a serving log's traffic
/// never reaches this memo (its lines start records).
const SLOTS: usize = 256;

/// Lines longer than this are peeled and tested without the memo.
const SHAPE_MAX: usize = 512;

/// What `peel_wrapper` and the noise test said of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Peeled {
    /// Where the line inside its wrappers starts (`peel` strips only from the front).
    pub(crate) inner_from: usize,
    /// The node a naming wrapper gave, as a range of the line.
    pub(crate) node: Option<(usize, usize)>,
    /// Whether the line holds a noise literal; `None` where the memo may not say
    /// (a noise literal holds a digit): the caller tests the line itself.
    pub(crate) noise: Option<bool>,
}

struct Slot {
    shape: Box<[u8]>,
    peeled: Peeled,
}

/// One scanning thread's kept plain lines (part of the memo a block takes from the pool).
#[derive(Default)]
pub(crate) struct PlainMemo {
    /// Allocated on first use: most blocks of a serving log never ask.
    slots: Vec<Option<Slot>>,
    /// The current line's shape, built here so a memo hit allocates nothing.
    shape: Vec<u8>,
    /// Lines answered from the memo (for tests).
    pub(crate) hits: u64,
}

impl PlainMemo {
    /// Writes `line`'s shape into `self.shape`; its slot.
    fn shape_of(&mut self, line: &[u8]) -> usize {
        self.shape.clear();
        self.shape.extend_from_slice(line);
        // A branch-free select per byte, which the compiler does 32 bytes at a time.
        for b in self.shape.iter_mut() {
            *b = if b.wrapping_sub(b'0') < 10 { b'0' } else { *b };
        }
        // A fixed hash: a collision only costs a search, so no seed is needed.
        let hash = foldhash::fast::FixedState::default().hash_one(self.shape.as_slice());
        (hash as usize) % SLOTS
    }
}

impl GrammarSet {
    /// `peel_wrapper(line)`, and whether `line` is noise (where the memo may say), from
    /// `memo` when a line of its shape was answered before. For lines that start no record
    /// (the caller has tested that): those are the memo's whole use.
    pub(crate) fn peeled(
        &self,
        line: &[u8],
        memo: &mut PlainMemo,
        line_memo: &mut LineMemo,
    ) -> Peeled {
        if line.len() > SHAPE_MAX {
            return self.peel_now(line, line_memo);
        }
        let slot = memo.shape_of(line);
        if memo.slots.is_empty() {
            memo.slots.resize_with(SLOTS, || None);
        }
        if let Some(Some(kept)) = memo.slots.get(slot) {
            if *kept.shape == *memo.shape {
                memo.hits += 1;
                return kept.peeled;
            }
        }
        let peeled = self.peel_now(line, line_memo);
        if let Some(s) = memo.slots.get_mut(slot) {
            *s = Some(Slot {
                shape: memo.shape.as_slice().into(),
                peeled,
            });
        }
        peeled
    }

    /// No noise literal holds a digit: `is_noise` answers alike for two lines that differ
    /// only in their digits.
    fn noise_is_digit_blind(&self) -> bool {
        self.noise.digit_free()
    }

    /// What the memo would keep of `line`, found by searching it.
    fn peel_now(&self, line: &[u8], line_memo: &mut LineMemo) -> Peeled {
        let (inner, node) = crate::base::text::peel_wrapper(line);
        let base = line.as_ptr() as usize;
        let offset = |s: &[u8]| (s.as_ptr() as usize).saturating_sub(base);
        Peeled {
            inner_from: line.len() - inner.len(),
            node: node.map(|n| (offset(n), offset(n) + n.len())),
            noise: self
                .noise_is_digit_blind()
                .then(|| self.is_noise(line, line_memo)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::base::text::peel_wrapper;

    /// Lines that start no record: the bars, NCCL lines and every wrapper `peel` takes
    /// (kubectl, compose, journald, RFC 3339 and syslog stamps, a Python logging level).
    const PLAIN: &[&str] = &[
        "Loading safetensors checkpoint shards:  44% Completed | 72/163 [00:12<00:15, 7.01it/s]",
        "Capturing batches (bs=128 avail_mem=0.64 GB):  20% Completed | 3/15 [00:00<00:02, 2.75it/s]",
        "gpu-node-007:40012:40019 [3] NCCL INFO Channel 04/0 : 3[3] -> 4[4] via P2P/CUMEM/read",
        "[pod/sglang-worker-3/server] [2026-11-29 09:18:14 TP3] Load weight begin. avail mem=14.00 GB",
        "sglang-node2-1  | Loading safetensors checkpoint shards:  9% Completed | 16/163",
        "2026-11-29T09:18:14.123456Z node-12 sglang[4012]: Init torch distributed begin.",
        "Nov 29 09:18:14 node-12 vllm[4012]: INFO 11-29 09:18:14 [loader.py:12] Loading weights",
        "2026-11-29 09:18:14,123 - INFO - worker 3 ready on port 30001",
        "2026-11-29 09:18:14 | ERROR | stderr | RuntimeError: CUDA error: out of memory",
        "  File \"/opt/sglang/python/sglang/srt/model_executor/model_runner.py\", line 212",
        "Warning: 12 requests were retried",
        "plain text without any digit at all",
    ];

    /// `line` with each digit replaced by the next in a fixed sequence (seeded by `k`).
    fn digits_varied(line: &str, k: usize) -> String {
        (line.bytes().enumerate())
            .map(|(i, b)| match b.is_ascii_digit() {
                true => char::from(b'0' + ((i * 7 + k * 3) % 10) as u8),
                false => char::from(b),
            })
            .collect()
    }

    fn direct(gs: &GrammarSet, line: &[u8]) -> Peeled {
        gs.peel_now(line, &mut LineMemo::default())
    }

    #[test]
    fn every_digit_variant_of_a_plain_line_peels_from_the_memo_as_it_does_itself() {
        let gs = GrammarSet::builtin().unwrap();
        assert!(gs.noise_is_digit_blind());
        let mut memo = PlainMemo::default();
        let mut line_memo = LineMemo::default();
        for line in PLAIN {
            for k in 0..6 {
                let varied = digits_varied(line, k);
                let bytes = varied.as_bytes();
                let got = gs.peeled(bytes, &mut memo, &mut line_memo);
                let (inner, node) = peel_wrapper(bytes);
                assert_eq!(&bytes[got.inner_from..], inner, "{varied}");
                assert_eq!(got.node.map(|(a, b)| &bytes[a..b]), node, "{varied}");
                assert_eq!(got, direct(&gs, bytes), "{varied}");
            }
        }
        // Each line's first variant was searched, the five after it answered.
        assert_eq!(memo.hits, 5 * PLAIN.len() as u64);
        // By hand: the compose line's node is its service, the journald line's its host,
        // the kubectl line's its pod; the bar and the NCCL line are not wrapped, and the
        // bar is noise (`% Completed |`), the plain sentence is not.
        let at = |i: usize| direct(&gs, PLAIN[i].as_bytes());
        let node = |i: usize| at(i).node.map(|(a, b)| &PLAIN[i][a..b]);
        assert_eq!(node(4), Some("sglang-node2-1"));
        assert_eq!(node(5), Some("node-12"));
        assert_eq!(node(3), Some("sglang-worker-3"));
        assert_eq!(
            (at(0).inner_from, at(0).node, at(0).noise),
            (0, None, Some(true))
        );
        assert_eq!(at(2).inner_from, 0);
        assert_eq!(at(11).noise, Some(false));
    }

    #[test]
    fn a_noise_literal_with_a_digit_leaves_the_noise_test_to_each_line() {
        // A user grammar's noise literal `step 7` is held by one variant of a shape and
        // not by the other: the memo must not answer for it.
        let toml = r#"
id = "digits"
name = "digits"
[[prefix]]
id = "bracket"
regex = '''\[(?P<time>\d{2}:\d{2}:\d{2})\] '''
[[noise]]
id = "steps"
literals = ["step 7"]
"#;
        let g = crate::grammar::Grammar::from_toml(toml, "digits.toml").unwrap();
        let gs = GrammarSet::new(vec![g]).unwrap();
        assert!(!gs.noise_is_digit_blind());
        let mut memo = PlainMemo::default();
        let mut line_memo = LineMemo::default();
        let a = gs.peeled(b"training step 7 done", &mut memo, &mut line_memo);
        let b = gs.peeled(b"training step 8 done", &mut memo, &mut line_memo);
        assert_eq!((a.noise, b.noise), (None, None));
        assert!(gs.is_noise(b"training step 7 done", &mut line_memo));
        assert!(!gs.is_noise(b"training step 8 done", &mut line_memo));
    }
}
