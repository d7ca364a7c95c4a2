//! The `scan` fuzz target's work per input, natively (no instrumentation): each file of a
//! directory cut to 2 KiB, through `Session::from_bytes` in 512-byte blocks on a
//! one-thread pool, as the target runs it. What libFuzzer's figures are compared against
//! (docs/reliability.md): run it under `/usr/bin/time` and divide the CPU by the inputs.
//!
//!   cargo run --release --example scan_input_cost -- fuzz/seeds/scan 10
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use rankscope::grammar::GrammarSet;

fn main() {
    let dir = std::env::args().nth(1).expect("a directory of inputs");
    let rounds: usize = std::env::args().nth(2).map_or(10, |s| s.parse().unwrap());
    let gs = GrammarSet::builtin().unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .use_current_thread()
        .build()
        .unwrap();
    let mut inputs = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let mut bytes = std::fs::read(entry.unwrap().path()).unwrap();
        bytes.truncate(2048);
        inputs.push(bytes);
    }
    let start = Instant::now();
    let mut events = 0usize;
    pool.install(|| {
        for _ in 0..rounds {
            for bytes in &inputs {
                let s = rankscope::session::Session::from_bytes(&gs, "fuzz.log", bytes, 512);
                events += s.run.events.len();
            }
        }
    });
    let n = rounds * inputs.len();
    let wall = start.elapsed().as_secs_f64();
    println!(
        "{n} inputs ({events} events): {:.0} µs of wall time each",
        wall * 1e6 / n as f64
    );
}
