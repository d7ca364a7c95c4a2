//! nvidia-smi CSV parsing, on the fixtures and on hand-made awkward input.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::path::Path;

use chrono::NaiveDate;
use rankscope::ingest::nvsmi::parse;

const MIB: u64 = 1 << 20;

#[test]
fn sample_csv() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/tp8-custom-ar/nvidia-smi-gpu.csv");
    let t = parse(&std::fs::read_to_string(p).unwrap());
    assert_eq!(t.lines_not_understood, 0, "{:?}", t.examples_not_understood);
    let g0 = &t.gpus[&0];
    // By hand: first row `2026/11/29 09:18:27.203, 0, 0 MiB, 143771 MiB, 0 %`.
    let first = &g0[0];
    let ts = NaiveDate::from_ymd_opt(2026, 11, 29)
        .unwrap()
        .and_hms_milli_opt(9, 18, 27, 203)
        .unwrap();
    assert_eq!(first.timestamp, Some(ts));
    assert_eq!(first.memory_used_bytes.map(u64::from), Some(0));
    assert_eq!(first.memory_total_bytes.map(u64::from), Some(143_771 * MIB));
    assert_eq!(first.utilization_gpu_pct, Some(0.0));
    // `2026/11/29 09:18:48.075, 0, 15019 MiB, ...` is in the file.
    assert!(g0
        .iter()
        .any(|s| s.memory_used_bytes.map(u64::from) == Some(15_019 * MIB)));
}

#[test]
fn all_fixture_csvs_parse_cleanly() {
    // The runs in samples/ are copies of the GPU fixtures, each with its CSV.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let entries = std::fs::read_dir(&dir).expect("samples/");
    let mut n = 0;
    for e in entries.flatten() {
        let f = e.path().join("nvidia-smi-gpu.csv");
        if let Ok(text) = std::fs::read_to_string(&f) {
            let t = parse(&text);
            assert_eq!(t.lines_not_understood, 0, "{}", f.display());
            assert!(!t.gpus.is_empty());
            n += 1;
        }
    }
    // tp1-nccl-baseline, tp1-nccl-custom-ar, tp8-baseline, tp8-custom-ar, tp8-custom-ar-fixed
    // (fixtures/gpu) and the four tp2 runs of fixtures/gpu2.
    assert!(n >= 9, "{n} files");
}

#[test]
fn any_order_na_junk_and_apps() {
    let text = "\
memory.used [MiB], utilization.gpu [%], index, timestamp
1024 MiB, 5 %, 1, 2026/11/29 09:18:49.649
[N/A], [N/A], 0, 2026/11/29 09:18:49.650
user@host:~$ nvidia-smi
1 GiB, 3 %, 0
2048, 7 %, 0, 2026/11/29 09:18:49.851
pid, process_name, used_gpu_memory [MiB]
4242, python3 -m sglang.launch_server, 15019 MiB
4243, /usr/bin/weird,name, 12 MiB
4244, python3, [N/A]
";
    let t = parse(text);
    assert_eq!(
        t.gpus[&1][0].memory_used_bytes.map(u64::from),
        Some(1024 * MIB)
    );
    assert_eq!(t.gpus[&0][0].memory_used_bytes.map(u64::from), None);
    assert_eq!(
        t.gpus[&0][1].memory_used_bytes.map(u64::from),
        Some(2048 * MIB)
    );
    assert_eq!(t.lines_not_understood, 2);
    assert_eq!(t.examples_not_understood[0].0, 4);
    assert_eq!(t.apps.len(), 3);
    assert_eq!(t.apps[0].pid, Some(4242));
    assert_eq!(
        t.apps[0].used_memory_bytes.map(u64::from),
        Some(15_019 * MIB)
    );
    assert_eq!(
        t.apps[1].process_name.as_deref(),
        Some("/usr/bin/weird,name")
    );
    assert_eq!(t.apps[2].used_memory_bytes.map(u64::from), None);
    assert_eq!(t.peak_used()[&0].0.get(), 2048 * MIB);
}

#[test]
fn garbage_is_counted_not_fatal() {
    let t = parse("\u{1b}[31mhello\nno header here, 1, 2\n\n");
    assert_eq!(t.lines_not_understood, 2);
    assert!(t.gpus.is_empty());
}
