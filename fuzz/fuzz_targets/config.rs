//! Configuration lines as the model reads them (`Config::from_line`, the lenient reader
//! for cut lines, `find_in_lines` over every line): SGLang's `server_args=ServerArgs(…)`,
//! vLLM's `non-default args: {…}` and engine-config lines, with the Python-repr parser
//! under them (the `pyrepr` target fuzzes that parser alone). A configuration compared
//! with itself has no difference, and the strict reader never gives more than the
//! lenient one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankscope::model::config::{self, Config};

// The grammars are compiled before the first input (LLVMFuzzerInitialize), so the
// seconds that takes are not charged to an input against -timeout.
fuzz_target!(init: {
    let _ = rankscope::grammar::builtin_knowledge();
}, |data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let strict = Config::from_line(&text);
    let lenient = Config::from_line_lenient(&text);
    if let (Ok(s), Ok(l)) = (&strict, &lenient) {
        assert!(s.entries.len() <= l.config.entries.len());
    }
    if let Ok(l) = &lenient {
        assert!(config::diff(&l.config, &l.config).is_empty());
    }
    // Two lines: the first configuration found, and a diff against the strict one.
    if let Some(Ok(found)) = Config::find_in_lines(text.lines()) {
        if let Ok(s) = &strict {
            let _ = config::diff(s, &found.config);
        }
    }
});
