//! The snapshot model: the typed decode of a pickle into segments, blocks, trace entries
//! and stacks (`snapshot::types`, `trace`), and what `mem` and `diff` compute from it
//! (the summary, the OOM analysis, free space at the dump, allocation sites, a summary
//! compared with itself, the sites between two times).
//!
//! Structure-aware: the input is not pickle bytes (the `pickle` target mutates those, and
//! most mutations break the pickle before the model sees it) but a recipe a small writer
//! turns into a valid protocol-2 pickle: dicts whose keys come from the snapshot's own
//! vocabulary, lists, ints of any width, strings, floats, and memo references, which
//! may point back into a container being built (a cycle, as a hostile pickle can make).
//! So nearly every input reaches the typed decode with a shape close to a snapshot's.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rankscope::snapshot::{self, inspect, oom, pickle, site::SiteRule};

const KEYS: &[&str] = &[
    "segments", "device_traces", "allocator_settings", "external_annotations",
    "host_segments", "host_traces", "blocks", "address", "total_size", "allocated_size",
    "active_size", "requested_size", "stream", "segment_type", "segment_pool_id",
    "is_expandable", "device", "state", "size", "frames", "filename", "line", "name",
    "action", "addr", "time_us", "device_free", "names", "streams", "snapshot",
];
const WORDS: &[&str] = &[
    "active_allocated", "active_pending_free", "inactive", "alloc", "free_requested",
    "free_completed", "segment_alloc", "segment_free", "segment_map", "segment_unmap",
    "snapshot", "oom", "large", "small", "forward", "/torch/nn/modules/module.py",
    "model_runner.py", "<frozen importlib>", "", "\u{1b}]0;x\u{7}", "\u{202e}evil",
];

/// Reads the recipe; past its end every read is 0, which makes empty dicts, so any
/// recipe ends.
struct Recipe<'a>(&'a [u8]);

impl Recipe<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

struct Writer {
    out: Vec<u8>,
    memo: u8,
}

impl Writer {
    fn str(&mut self, s: &[u8]) {
        self.out.push(b'X');
        self.out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.out.extend_from_slice(s);
    }
    /// Memoizes the value just written (CPython does so right after an empty container,
    /// before its items: a reference inside it then points back at it).
    fn put(&mut self) {
        self.out.extend_from_slice(&[b'q', self.memo]);
        self.memo = self.memo.saturating_add(1);
    }
    fn value(&mut self, r: &mut Recipe<'_>, depth: usize) {
        let kind = if depth >= 8 { 2 + r.byte() % 6 } else { r.byte() % 9 };
        match kind {
            0 | 1 => {
                let dict = kind == 0;
                self.out.push(if dict { b'}' } else { b']' });
                self.put();
                let n = r.byte() % 8;
                if n == 0 {
                    return;
                }
                self.out.push(b'(');
                for _ in 0..n {
                    if dict {
                        let k = KEYS[usize::from(r.byte()) % KEYS.len()];
                        self.str(k.as_bytes());
                    }
                    self.value(r, depth + 1);
                }
                self.out.push(if dict { b'u' } else { b'e' });
            }
            2 => {
                self.out.push(b'J');
                self.out.extend_from_slice(&i32::from(r.byte() as i8).to_le_bytes());
            }
            3 => {
                // Any width up to 17 bytes: past 64 bits, negative, or a size near 2^64.
                let n = r.byte() % 18;
                self.out.extend_from_slice(&[0x8a, n]);
                let digits = r.bytes(usize::from(n));
                self.out.extend_from_slice(&digits);
            }
            4 => {
                let w = WORDS[usize::from(r.byte()) % WORDS.len()];
                self.str(w.as_bytes());
            }
            5 => {
                let n = usize::from(r.byte() % 16);
                let raw = r.bytes(n);
                self.str(&raw);
            }
            6 => {
                self.out.push(b'G');
                let raw = r.bytes(8);
                self.out.extend_from_slice(&raw);
            }
            7 => self.out.push([b'N', 0x88, 0x89][usize::from(r.byte() % 3)]),
            _ => {
                if self.memo == 0 {
                    self.out.push(b'N');
                } else {
                    let i = r.byte() % self.memo;
                    self.out.extend_from_slice(&[b'h', i]);
                }
            }
        }
    }
}

fn rule() -> &'static SiteRule {
    static RULE: OnceLock<SiteRule> = OnceLock::new();
    RULE.get_or_init(SiteRule::default)
}

fn clean(s: &str) -> bool {
    !s.chars().any(|c| (c.is_control() && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}'))
}

fuzz_target!(|data: &[u8]| {
    let mut w = Writer { out: vec![0x80, 2], memo: 0 };
    w.value(&mut Recipe(data), 0);
    w.out.push(b'.');
    let bytes = w.out;
    // Both readers of the model: the one decoding while it reads, and the general one.
    let direct = snapshot::read_bytes(&bytes);
    let general = pickle::parse(&bytes)
        .map_err(|e| e.to_string())
        .and_then(|p| snapshot::types::from_pickle(&p).map_err(|e| e.to_string()));
    assert_eq!(direct.is_ok(), general.is_ok(), "{direct:?} / {general:?}");
    let Ok(s) = direct else { return };
    for f in &s.frames {
        assert!(clean(&f.name) && clean(&f.filename), "{f:?}");
    }
    let rule = rule();
    let sum = inspect::summarize(&s, rule);
    let d = inspect::diff(&sum, &sum);
    let _ = format!("{d:?}");
    let _ = oom::analyse(&s, rule);
    let _ = oom::free_space_at_dump(&s);
    let _ = oom::expandable_segments(&s);
    let _ = oom::allocation_sites(&s, rule);
    let _ = inspect::sites_between(&s, rule, 0, i64::MAX);
});
