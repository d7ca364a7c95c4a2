//! Read + summarise the 23 MB `decode_heavy` snapshot (212,637 trace entries).
//! Skips, saying so, when `../shared/fixtures` is absent.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use criterion::{criterion_main, Criterion};
use rankscope::snapshot::{inspect, read_bytes, read_path};

fn bench(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/gpu/decode_heavy/snapshot.pickle");
    if !path.exists() {
        eprintln!("SKIPPED snapshot bench: {} is absent", path.display());
        return;
    }
    let rule = inspect::SiteRule::default();
    let mut g = c.benchmark_group("decode_heavy");
    g.sample_size(10);
    g.bench_function("read_path+summarize", |b| {
        b.iter(|| {
            let s = read_path(&path).expect("read");
            inspect::summarize(&s, &rule)
        })
    });
    let bytes = std::fs::read(&path).expect("read file");
    g.bench_function("read_bytes (in memory)", |b| {
        b.iter(|| read_bytes(&bytes).expect("parse"))
    });
    let snap = read_bytes(&bytes).expect("parse");
    g.bench_function("summarize", |b| b.iter(|| inspect::summarize(&snap, &rule)));
    g.finish();
}

// criterion_group! makes a `pub fn` that cannot carry a doc comment; in a module of its
// own it is not part of the bench crate's root, which `missing_docs` checks.
mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
