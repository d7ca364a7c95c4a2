//! A run's memory breakdown is worked out a rank at a time: `summary` keeps each group's
//! first breakdown, never every rank's. Holding them all (c49de21) raised the peak RSS of
//! `summary` over 65,536 rank files from 493 to 606 MiB, past issue 26's 512 MiB, and
//! only the bench series showed it.
//!
//! Heap bytes are counted by this test binary's own allocator (`tests/counting`), exactly.
//! This file holds one test: tests of one binary run in parallel and would share the
//! count.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rankscope::grammar::GrammarSet;
use rankscope::report::MemoryReport;
use rankscope::session::Session;

mod counting;

#[global_allocator]
static COUNTING: counting::Counting = counting::Counting;

const RANKS: usize = 2048;

/// An SGLang start-up of `RANKS` ranks that all print the same memory figures (made-up
/// values): one breakdown group.
fn start_up() -> Vec<u8> {
    let mut log = String::from(
        "[2026-11-29 09:18:09] server_args=ServerArgs(model_path='m', tp_size=2048, mem_fraction_static=0.9)\n",
    );
    let each = [
        ("09:18:12", "Init torch distributed begin."),
        ("09:18:14", "Init torch distributed ends. elapsed=1.38 s, mem usage=0.60 GB"),
        ("09:18:14", "Load weight begin. avail mem=14.00 GB"),
        ("09:18:18", "Load weight end. elapsed=4.06 s, type=M, dtype=torch.bfloat16, avail mem=6.60 GB, mem usage=7.29 GB."),
        ("09:18:18", "KV Cache is allocated. #tokens: 91141, K size: 2.98 GB, V size: 2.98 GB"),
        ("09:18:18", "Memory pool end. avail mem=0.64 GB"),
        ("09:18:18", "Capture cuda graph begin. This can take up to several minutes. avail mem=0.64 GB"),
        ("09:18:21", "Capture cuda graph end. Time elapsed: 2.50 s. mem usage=0.30 GB. avail mem=0.34 GB."),
        ("09:18:22", "The server is fired up and ready to roll!"),
    ];
    for (time, text) in each {
        for tp in 0..RANKS {
            log.push_str(&format!("[2026-11-29 {time} TP{tp}] {text}\n"));
        }
    }
    log.into_bytes()
}

#[test]
fn a_runs_breakdown_holds_one_rank_at_a_time() {
    let gs = GrammarSet::builtin().unwrap();
    let session = Session::from_bytes(&gs, "ranks.log", &start_up(), 1 << 20);
    let run = &session.run;
    assert_eq!(run.worker_ranks().count(), RANKS);
    let (peak, report) = counting::peak_of(|| MemoryReport::of(run, &[], None));
    // Every rank read alike: one group of all of them.
    let groups = &report.breakdown.as_ref().expect("a breakdown").groups;
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].ranks.len(), RANKS);
    // Its rank list and one breakdown, not 2,048: a rank at a time measured 152,641
    // bytes here, every rank's breakdown held at once 4,344,675 (2,121 a rank).
    assert!(peak < 512 << 10, "{peak} bytes at the peak of the report");
}
