//! The snapshot reader: the pickle machine and the typed model, from memory and through
//! the chunked file reader. Any input gives a snapshot or a typed error, never a panic,
//! and no string it returns holds a control character.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rankscope::snapshot::{self, pickle, site::SiteRule};

fn rule() -> &'static SiteRule {
    // Built once: the fuzzer's time goes to the reader, not to setup.
    static RULE: OnceLock<SiteRule> = OnceLock::new();
    RULE.get_or_init(SiteRule::default)
}

fuzz_target!(|data: &[u8]| {
    // Trace entries decoded while reading (read_bytes) must give what the general
    // reader gives: the same snapshot or the same error.
    let direct = snapshot::read_bytes(data);
    let general = pickle::parse(data)
        .map_err(|e| e.to_string())
        .and_then(|p| snapshot::types::from_pickle(&p).map_err(|e| e.to_string()));
    match (&direct, &general) {
        (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
        (Err(a), Err(b)) => assert!(a.to_string().ends_with(b.as_str()), "{a} / {b}"),
        _ => panic!(
            "direct {:?} / general {:?}",
            direct.is_ok(),
            general.is_ok()
        ),
    }
    if let Ok(s) = direct {
        for f in &s.frames {
            assert!(!f.name.chars().any(|c| c.is_control() && c != '\t'));
            assert!(!f.filename.chars().any(|c| c.is_control() && c != '\t'));
        }
        let _ = snapshot::inspect::summarize(&s, rule());
    }
    // The chunked reader takes other paths (refills, items straddling its buffer).
    let _ = pickle::parse_reader(data, data.len() as u64);
});
