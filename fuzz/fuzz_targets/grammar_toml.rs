//! User grammar files: any TOML gives a grammar or a typed error, and a grammar that
//! loads also compiles into a set with the built-in ones (its regexes and literals).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankscope::grammar::{Grammar, GrammarSet};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(g) = Grammar::from_toml(text, "fuzz.toml") {
        if let Ok(set) = GrammarSet::new(vec![g]) {
            let _ =
                rankscope::grammar::check_samples(&set, 0, &rankscope::model::config::read_sample);
        }
    }
});
