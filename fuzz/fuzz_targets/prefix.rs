//! Record prefixes and their stamps, line by line (`GrammarSet::find_prefix`, the date,
//! time and `stamp` formats of every built-in grammar, rank tags, pids), and the whole
//! line's match (`match_text`: the event regexes, field captures and unit conversion).
//! Offsets the scan slices the line with stay inside it and on character boundaries; a
//! stamp flagged as inferred has a time; a rank that did not read is not also a rank.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rankscope::base::text::clean_line;
use rankscope::grammar::GrammarSet;

fn grammars() -> &'static GrammarSet {
    static GS: OnceLock<GrammarSet> = OnceLock::new();
    GS.get_or_init(|| GrammarSet::builtin().expect("built-in grammars compile"))
}

// The grammars are compiled before the first input (LLVMFuzzerInitialize), so the
// seconds that takes are not charged to an input against -timeout.
fuzz_target!(init: {
    let _ = grammars();
}, |data: &[u8]| {
    let gs = grammars();
    for raw in data.split(|&b| b == b'\n').take(32) {
        let line = clean_line(raw);
        if let Some(p) = gs.find_prefix(&line, line.len()) {
            for at in [p.prefix_start, p.prefix_end, p.message_start] {
                assert!(at <= line.len() && line.is_char_boundary(at), "{at} in {line:?}");
            }
            assert!(p.prefix_start <= p.prefix_end, "{p:?}");
            assert!(!(p.date_inferred || p.time_only) || p.ts.is_some(), "{p:?}");
            assert!(p.rank_error.is_none() || p.rank.is_none(), "{p:?}");
        }
        if let Some(m) = gs.match_text(&line) {
            assert!(!m.message.contains('\u{1b}'), "{m:?}");
            if let Some(p) = &m.prefix {
                assert!(p.message_start <= line.len(), "{p:?}");
            }
        }
    }
});
