//! The snapshot reader: the pickle machine and the typed model, from memory and through
//! the chunked file reader. Any input gives a snapshot or a typed error, never a panic,
//! and no string it returns holds a control character.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankscope::snapshot::{self, pickle};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = snapshot::read_bytes(data) {
        for f in &s.frames {
            assert!(!f.name.chars().any(|c| c.is_control() && c != '\t'));
            assert!(!f.filename.chars().any(|c| c.is_control() && c != '\t'));
        }
        let _ = snapshot::analysis::summarize(&s, &snapshot::analysis::SiteRule::default());
    }
    // The chunked reader takes other paths (refills, items straddling its buffer).
    let _ = pickle::parse_reader(data, data.len() as u64);
});
