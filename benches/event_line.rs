//! What one start-up event line costs the scan: on the many-file path (8,192 rank files
//! of 180 lines, 13 events each) event lines are most of the scan, and this is their
//! unit. `match_text` is the whole of it (candidates, the governing prefix, the event's
//! regex and fields); `find_prefix` the prefix alone. The lines are SGLang's wordings
//! with made-up values. `cargo bench --bench event_line`; docs/performance.md gives the
//! instruction counts that split it further.

// A bench that unwraps fails on its own line; the grammars are the built-in ones.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_main, Criterion};
use rankscope::grammar::GrammarSet;

const LINES: [&str; 5] = [
    "[2026-07-14 03:22:41 TP6] Init torch distributed ends. elapsed=2.07 s, mem usage=0.52 GB",
    "[2026-07-14 03:22:41 TP6] Load weight begin. avail mem=78.41 GB",
    "[2026-07-14 03:23:58 TP6] Load weight end. elapsed=77.12 s, type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=41.86 GB, mem usage=36.55 GB.",
    "[2026-07-14 03:24:02 TP6] KV Cache is allocated. #tokens: 402318, K size: 13.81 GB, V size: 13.81 GB",
    "[2026-07-14 03:24:31 TP6] Capture cuda graph end. Time elapsed: 28.40 s. mem usage=1.92 GB. avail mem=11.70 GB.",
];

fn bench(c: &mut Criterion) {
    let gs = GrammarSet::builtin().expect("the built-in grammars load");
    // Every line is an event, and the regexes are compiled before timing (on first use).
    for line in LINES {
        assert!(gs.match_text(line).is_some(), "no event in {line}");
    }
    let mut g = c.benchmark_group("event_line");
    g.bench_function("match_text (5 lines)", |b| {
        b.iter(|| LINES.map(|l| gs.match_text(std::hint::black_box(l))))
    });
    g.bench_function("find_prefix (5 lines)", |b| {
        b.iter(|| LINES.map(|l| gs.find_prefix(std::hint::black_box(l), l.len())))
    });
    g.finish();
}

// As in benches/snapshot.rs: criterion_group! makes a `pub fn` that cannot carry a doc
// comment, so it lives in a module of its own.
mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
