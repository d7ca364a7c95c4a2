//! A log through the scan, the model, the report, `summary`'s text, `diff` with itself
//! and its text, as `summary` and `diff` read it (the `scan` target stops at the model,
//! and is several times faster). Blocks of 4 KiB and inputs of up to 8 KiB. What is
//! printed never holds an escape byte or a bidi override.
//!
//! Built for throughput: the grammar set is compiled once per process, and each input
//! runs on a one-thread rayon pool whose only worker is the fuzzer's own thread, so no
//! input pays for a thread hand-off and a `-fork=N`/`-jobs=N` campaign uses N cores, not
//! N × the pool.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rankscope::analysis::diff;
use rankscope::grammar::GrammarSet;
use rankscope::render::{self, Style};
use rankscope::report::RunReport;

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

fn assert_clean(out: &str) {
    assert!(!out.contains('\u{1b}'), "escape byte in output");
    assert!(!out
        .chars()
        .any(|c| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')));
}

// The grammars are compiled before the first input (LLVMFuzzerInitialize), so the
// seconds that takes are not charged to an input against -timeout.
fuzz_target!(init: {
    let _ = grammars();
    let _ = pool();
}, |data: &[u8]| {
    let gs = grammars();
    pool().install(|| {
        let run = rankscope::session::Session::from_bytes(gs, "fuzz.log", data, 4096).run;
        assert_clean(&render::text::summary::summary(
            &run,
            &RunReport::of(&run),
            true,
            Style::plain(),
        ));
        let d = diff::diff(&run, &run);
        let extra = render::text::diff::Extra::default();
        assert_clean(&render::text::diff::diff(&d, &extra, Style::plain()));
    });
});
