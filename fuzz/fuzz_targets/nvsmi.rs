//! nvidia-smi CSVs (`--query-gpu`, `--query-compute-apps`, any column order).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let t = rankscope::ingest::nvsmi::parse(&String::from_utf8_lossy(data));
    assert!(t.examples_not_understood.len() <= 5);
});
