//! A log through the scan and the model (`Session::from_bytes`: line splitting, the
//! literal prefilter, prefixes and stamps, the event regexes, tracebacks, the block
//! merge, dates, the run model), as every command reads a log. Blocks of 512 bytes and
//! inputs of up to 2 KiB (`fuzz/run.sh` passes `-max_len`) make the block merge part of
//! most inputs, and keep each input cheap. No event's message or detail holds an escape
//! byte. The renderers and `diff` on top are the `pipeline` target's.
//!
//! Built for throughput: the grammar set is compiled once per process, and each input
//! runs on a one-thread rayon pool whose only worker is the fuzzer's own thread, so no
//! input pays for a thread hand-off and a `-fork=N`/`-jobs=N` campaign uses N cores, not
//! N × the pool.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rankscope::grammar::GrammarSet;

fn grammars() -> &'static GrammarSet {
    // Compiling the grammars costs far more than scanning one input: done once.
    static GS: OnceLock<GrammarSet> = OnceLock::new();
    GS.get_or_init(|| GrammarSet::builtin().expect("built-in grammars compile"))
}

fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .use_current_thread()
            .build()
            .expect("a one-thread pool")
    })
}

// The grammars are compiled before the first input (LLVMFuzzerInitialize), so the
// seconds that takes are not charged to an input against -timeout.
fuzz_target!(init: {
    let _ = grammars();
    let _ = pool();
}, |data: &[u8]| {
    let gs = grammars();
    pool().install(|| {
        let run = rankscope::session::Session::from_bytes(gs, "fuzz.log", data, 512).run;
        for e in &run.events {
            assert!(!e.message.contains('\u{1b}'), "{e:?}");
            assert!(!e.detail().unwrap_or("").contains('\u{1b}'), "{e:?}");
        }
    });
});
