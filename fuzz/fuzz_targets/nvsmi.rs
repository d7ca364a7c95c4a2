//! nvidia-smi CSVs (`--query-gpu`, `--query-compute-apps`, any column order), and the
//! per-GPU memory timelines and processes the model makes of them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankscope::model::{GpuMemory, GpuProcess};

fuzz_target!(|data: &[u8]| {
    let t = rankscope::ingest::nvsmi::parse(&String::from_utf8_lossy(data));
    assert!(t.examples_not_understood.len() <= 5);
    let start = chrono::NaiveDate::from_ymd_opt(2026, 11, 29)
        .and_then(|d| d.and_hms_opt(9, 18, 12));
    for g in GpuMemory::from_nvsmi("fuzz.csv", &t, start) {
        let _ = format!("{g:?}");
    }
    let _ = GpuProcess::from_nvsmi("fuzz.csv", &t, start, &[]);
});
