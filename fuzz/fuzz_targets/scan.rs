//! A log through the scan, the model, the renderers and the diff, as `summary` and
//! `diff` read it. Blocks of 4 KiB make the block merge part of most inputs. What is
//! printed never holds an escape byte or a bidi override.
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

fn assert_clean(out: &str) {
    assert!(!out.contains('\u{1b}'), "escape byte in output");
    assert!(!out
        .chars()
        .any(|c| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')));
}

fuzz_target!(|data: &[u8]| {
    let gs = grammars();
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
