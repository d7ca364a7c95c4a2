//! The scan's memory does not grow with the thread count (issue 29, D4: a 17 KB `.zst`
//! of 6.9 million unprefixed `Exception in ModelRpcClient:` lines took 343 MiB at 1
//! thread and 2,466 MiB at 8, because every block of a batch held every event it
//! matched until the merge dropped all but 1,024 of them).
//!
//! Heap bytes are counted by this test binary's own allocator (`tests/counting`),
//! exactly, so the figure is not the test process's resident memory. This file holds one
//! test: tests of one binary run in parallel and would share the count.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rankscope::grammar::GrammarSet;
use rankscope::ingest::scan::{budget, scan_reader};

mod counting;

#[global_allocator]
static COUNTING: counting::Counting = counting::Counting;

/// Blocks of 256 KiB (a sixteenth of the default): a batch at 8 threads is 16 blocks, and
/// an input of 32 blocks fills two batches without making the debug-built test slow.
const BLOCK: usize = 256 << 10;
const FLOOD_LINES: usize = 295_000;

/// A start-up that reaches ready, then a flood of the unprefixed exception header (an
/// event of the sglang grammar that opens a traceback), the shape of D4's input.
fn flood() -> Vec<u8> {
    let mut log = String::new();
    log.push_str("[2026-03-02 11:40:01] server_args=ServerArgs(model_path='m', tp_size=2)\n");
    for tp in 0..2 {
        log.push_str(&format!(
            "[2026-03-02 11:40:05 TP{tp}] Init torch distributed begin.\n"
        ));
    }
    log.push_str("[2026-03-02 11:40:09 TP0] The server is fired up and ready to roll!\n");
    for _ in 0..FLOOD_LINES {
        log.push_str("Exception in ModelRpcClient:\n");
    }
    log.into_bytes()
}

/// Peak heap bytes of one scan of `input` on a pool of `threads`, above what was live
/// before it.
fn scan_peak(gs: &GrammarSet, input: &[u8], threads: usize) -> (usize, u64, u64) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    let (peak, scan) = counting::peak_of(|| {
        pool.install(|| scan_reader(gs, 0, input, BLOCK, |_| {}))
            .expect("scan of bytes in memory")
    });
    let kept_errors = scan.events.iter().filter(|e| e.kind == "error").count() as u64;
    let dropped = scan.dropped_events.get("error").copied().unwrap_or(0);
    drop(pool);
    (peak, kept_errors, dropped)
}

#[test]
fn scan_memory_does_not_grow_with_threads() {
    let gs = GrammarSet::builtin().expect("built-in grammars compile");
    let input = flood();
    assert!(input.len() > 32 * BLOCK, "{} bytes", input.len());
    let (peak1, kept1, dropped1) = scan_peak(&gs, &input, 1);
    let (peak8, kept8, dropped8) = scan_peak(&gs, &input, 8);
    // Every flood line is an error event of no rank: the file keeps the per-file limit
    // of them and counts the rest as dropped, at any thread count.
    let limit = u64::from(budget::SAME_EVENT_PER_SOURCE);
    let flood = FLOOD_LINES as u64;
    for (kept, dropped) in [(kept1, dropped1), (kept8, dropped8)] {
        assert_eq!((kept, dropped), (limit, flood - limit));
    }
    // A batch is 2 blocks a thread: 8 threads scan 14 blocks more at once than 1 does.
    // Their read buffers and what each block holds while the batch is scanned (at most
    // the limit of one event kind: 1,024 events of about 1.2 KB, 1.2 MiB, measured) are
    // the growth allowed. Holding every event of a block (9,000 here) took 10 MiB a
    // block, and 2,466 MiB at 8 threads on D4's input.
    let per_block = BLOCK + (2 << 20);
    eprintln!("peak heap: 1 thread {peak1} B, 8 threads {peak8} B");
    assert!(
        peak8 <= peak1 + 14 * per_block,
        "8 threads {peak8} B against 1 thread {peak1} B"
    );
    // One thread's own peak: two blocks, their events and the kept 1,024.
    assert!(peak1 <= 4 * per_block, "1 thread {peak1} B");
}
