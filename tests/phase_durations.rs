//! A phase's duration only where both of its ends are known: an end line with no begin
//! line before it leaves the start unknown, and the duration is the one the server
//! printed, said as such, or none.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use assert_cmd::Command;
use common::run_of;
use rankscope::analysis::align::phase_stats;
use rankscope::model::Phase;

/// Two SGLang ranks whose logs were cut after the weights began loading: TP0's excerpt
/// starts at its `Load weight end` line, which prints `elapsed=4.06 s`; TP1's starts at a
/// `Load weight end` with no elapsed figure (older SGLang). Both then run into the KV
/// cache phase, so `weight_load` is complete on both.
const CUT_LOG: &str = "\
[2026-11-29 09:21:10 TP0] Load weight end. elapsed=4.06 s, type=LlamaForCausalLM, avail mem=6.60 GB, mem usage=7.29 GB.
[2026-11-29 09:21:14 TP1] Load weight end. type=LlamaForCausalLM, avail mem=6.60 GB, mem usage=7.29 GB.
[2026-11-29 09:21:15 TP0] max_total_num_tokens=120000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=64, context_len=8192, available_gpu_mem=1.20 GB
[2026-11-29 09:21:15 TP1] max_total_num_tokens=120000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=64, context_len=8192, available_gpu_mem=1.20 GB
";

#[test]
fn an_end_line_alone_leaves_the_start_unknown() {
    let run = run_of("server.log", CUT_LOG);
    for r in &run.ranks {
        let w = r.phase(Phase::WeightLoad).expect("weight_load span");
        assert_eq!(w.start, None, "{}: no begin line, no start", r.rank);
        assert!(w.end.is_some() && w.complete);
        // Not 0 s: without a start there is no measured duration.
        assert_eq!(w.duration_s(), None);
    }
    let tp0 = run.ranks.iter().find(|r| r.rank.to_string() == "TP0");
    let w0 = tp0.and_then(|r| r.phase(Phase::WeightLoad)).expect("TP0");
    // `elapsed=4.06 s` on TP0's line 1.
    assert_eq!(w0.printed_elapsed_s(), Some(4.06));

    let stats = phase_stats(&run);
    let w = stats
        .iter()
        .find(|s| s.phase == Phase::WeightLoad)
        .expect("weight_load stats");
    assert_eq!(w.duration_s, None);
    // Only TP0 printed one: 4.06 s is min, median and max.
    let p = w.printed_duration_s.as_ref().expect("printed");
    assert_eq!((p.min, p.median, p.max), (4.06, 4.06, 4.06));
    // TP1 printed nothing: one rank, ended at its stamp 09:21:14.
    assert_eq!(w.unknown_start, 1);
    assert_eq!(
        w.unknown_start_last_end.map(|t| t.to_string()).as_deref(),
        Some("2026-11-29 09:21:14")
    );
}

#[test]
fn the_summary_says_what_is_known_instead_of_a_duration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("server.log");
    std::fs::write(&log, CUT_LOG).expect("write");
    let out = Command::cargo_bin("rankscope")
        .expect("bin")
        // Wide enough for the NOTES cell to stay on the row's line.
        .args(["summary", "--color", "never", "--width", "200"])
        .arg(&log)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("weight_load"))
        .unwrap_or_else(|| panic!("no weight_load row in\n{text}"));
    // TP0's printed 4.06 s shown at one decimal, and TP1's end stamp.
    assert!(row.contains("4.1 / 4.1 / 4.1 s"), "{row}");
    assert!(row.contains("duration as printed (no begin line)"), "{row}");
    assert!(
        row.contains("1 rank with no begin line nor duration, ended 09:21:14"),
        "{row}"
    );
    assert!(!row.contains("0.0 / 0.0 / 0.0"), "{row}");
}

/// docs/examples/lmserve.log: `weights resident: 13.02 GiB in 11.70s` (shard-0) and
/// `in 12.15s` (shard-1), no begin line for the weights; the JSON leaves `duration_s`
/// null per rank and gives the printed spread, median (11.70 + 12.15) / 2 = 11.925.
#[test]
fn json_duration_is_null_and_the_printed_figure_is_kept() {
    let out = Command::cargo_bin("rankscope")
        .expect("bin")
        .args([
            "--grammar",
            "docs/examples/lmserve.toml",
            "summary",
            "--json",
            "docs/examples/lmserve.log",
        ])
        .output()
        .expect("run");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let stats = doc["run"]["phases"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["phase"] == "weight_load"))
        .unwrap_or_else(|| panic!("no weight_load in {doc}"));
    assert!(stats["duration_s"].is_null());
    let p = &stats["printed_duration_s"];
    assert_eq!(p["min"].as_f64(), Some(11.70));
    assert_eq!(p["max"].as_f64(), Some(12.15));
    assert!((p["median"].as_f64().unwrap_or(0.0) - 11.925).abs() < 1e-9);
    let ranks = doc["run"]["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 2);
    for r in ranks {
        let w = r["phases"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["phase"] == "weight_load"))
            .expect("rank weight_load");
        assert!(w["start"].is_null() && w["duration_s"].is_null(), "{w}");
    }
}

/// The Perfetto slice of a phase with no begin line is drawn back from its end by the
/// printed duration. lmserve.log's run starts at shard-0's 10:00:04.100; shard-0's weights
/// end at 10:00:15.870 (11.770 s in) after `11.70s`, so the slice starts at 0.070 s;
/// its dist_init ends at 0 s after `2.20s`, so it starts 2.2 s before the trace's 0.
#[test]
fn perfetto_draws_a_printed_duration_back_from_the_end() {
    let out = Command::cargo_bin("rankscope")
        .expect("bin")
        .args([
            "--grammar",
            "docs/examples/lmserve.toml",
            "export",
            "--perfetto",
            "-",
            "docs/examples/lmserve.log",
        ])
        .output()
        .expect("run");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    let slice = |name: &str| {
        events
            .iter()
            .find(|e| e["cat"] == "phase" && e["name"] == name && e["tid"] == 1)
            .unwrap_or_else(|| panic!("no {name} slice"))
    };
    let w = slice("weight_load");
    assert_eq!(w["ts"].as_i64(), Some(70_000));
    assert_eq!(w["dur"].as_i64(), Some(11_700_000));
    assert_eq!(w["args"]["start_from"], "printed");
    let d = slice("dist_init");
    assert_eq!(
        (d["ts"].as_i64(), d["dur"].as_i64()),
        (Some(-2_200_000), Some(2_200_000))
    );
}
