//! `rankscope export --perfetto`: the Trace Event Format's JSON Object Format, checked
//! field by field against the format document ("Trace Event Format", the spec that
//! chrome://tracing and ui.perfetto.dev's JSON importer follow). No trace parser can be
//! installed here without downloading a prebuilt binary (Perfetto's trace_processor), so
//! the rules the viewers rely on are checked directly.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use assert_cmd::Command;
use serde_json::Value;

fn export(run: &str) -> Value {
    let out = Command::cargo_bin("rankscope")
        .expect("binary built")
        .args(["export", run, "--perfetto", "-"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the trace is one JSON object")
}

/// The per-event rules of the format for the phases rankscope writes.
fn check_event(e: &Value) -> Result<(), String> {
    let ph = e["ph"].as_str().ok_or("ph missing")?;
    if !e["name"].is_string() {
        return Err("name missing".into());
    }
    if !e["pid"].is_u64() || !e["tid"].is_u64() {
        return Err("pid/tid must be integers".into());
    }
    match ph {
        "M" => {
            let name = e["name"].as_str().unwrap_or_default();
            if !["process_name", "thread_name", "thread_sort_index"].contains(&name) {
                return Err(format!("unknown metadata event {name}"));
            }
            if !e["args"].is_object() {
                return Err("metadata without args".into());
            }
        }
        "X" => {
            if !e["ts"].is_u64() || !e["dur"].is_u64() {
                return Err("complete event needs ts and dur ≥ 0 (µs)".into());
            }
        }
        "i" => {
            if !e["ts"].is_u64() {
                return Err("instant needs ts".into());
            }
            if !["g", "p", "t"].contains(&e["s"].as_str().unwrap_or("t")) {
                return Err("instant scope must be g, p or t".into());
            }
        }
        "C" => {
            let args = e["args"].as_object().ok_or("counter needs args")?;
            if args.is_empty() || !args.values().all(Value::is_number) {
                return Err("counter args must be numbers".into());
            }
        }
        other => return Err(format!("unexpected ph {other}")),
    }
    Ok(())
}

#[test]
fn trace_follows_the_trace_event_format() {
    for run in [
        "samples/tp8-baseline",
        "samples/tp8-custom-ar",
        "samples/tp8-custom-ar-fixed",
    ] {
        let t = export(run);
        let events = t["traceEvents"].as_array().expect("traceEvents array");
        assert!(["ms", "ns"].contains(&t["displayTimeUnit"].as_str().unwrap_or("ms")));
        for e in events {
            if let Err(msg) = check_event(e) {
                panic!("{run}: {msg}: {e}");
            }
        }
        // One process: the run.
        let pids: BTreeSet<u64> = events.iter().filter_map(|e| e["pid"].as_u64()).collect();
        assert_eq!(pids.len(), 1, "{run}");
        let procs: Vec<&Value> = events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
            .collect();
        assert_eq!(procs.len(), 1);
        assert_eq!(procs[0]["args"]["name"], run);
        // Every thread that carries events is named; the ranks are threads.
        let names: BTreeMap<u64, String> = events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
            .filter_map(|e| Some((e["tid"].as_u64()?, e["args"]["name"].as_str()?.to_string())))
            .collect();
        for e in events.iter().filter(|e| e["ph"] != "M" && e["ph"] != "C") {
            let tid = e["tid"].as_u64().unwrap_or(u64::MAX);
            assert!(
                names.contains_key(&tid),
                "{run}: tid {tid} has no thread_name"
            );
        }
        let rank_names: BTreeSet<&str> = names.values().map(String::as_str).collect();
        for r in 0..8 {
            assert!(
                rank_names.contains(format!("TP{r}").as_str()),
                "{run}: TP{r}"
            );
        }
        // Times are relative to the run's first line.
        let min_ts = events
            .iter()
            .filter(|e| e["ph"] != "M")
            .filter_map(|e| e["ts"].as_u64())
            .min();
        assert_eq!(min_ts, Some(0), "{run}");
        // Complete events on one thread must nest or follow each other, never overlap
        // partially, or viewers draw them wrongly.
        let mut by_tid: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
        for e in events.iter().filter(|e| e["ph"] == "X") {
            let (Some(tid), Some(ts), Some(dur)) =
                (e["tid"].as_u64(), e["ts"].as_u64(), e["dur"].as_u64())
            else {
                continue;
            };
            by_tid.entry(tid).or_default().push((ts, ts + dur));
        }
        for (tid, mut spans) in by_tid {
            // Outer slices first when two start together.
            spans.sort_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
            for w in spans.windows(2) {
                let ((a0, a1), (b0, b1)) = (w[0], w[1]);
                let nested = b0 >= a0 && b1 <= a1;
                let after = b0 >= a1;
                assert!(nested || after, "{run}: tid {tid}: {w:?} overlap");
            }
        }
    }
}

#[test]
fn phases_memory_and_failures_are_on_the_rank_tracks() {
    let t = export("samples/tp8-custom-ar");
    let events = t["traceEvents"].as_array().expect("traceEvents");
    let tid_of = |rank: &str| {
        events
            .iter()
            .find(|e| e["name"] == "thread_name" && e["args"]["name"] == rank)
            .and_then(|e| e["tid"].as_u64())
            .expect("rank thread")
    };
    let tp0 = tid_of("TP0");
    let dist = events
        .iter()
        .find(|e| e["ph"] == "X" && e["name"] == "dist_init" && e["tid"] == tp0)
        .expect("dist_init slice on TP0");
    // `mem usage=0.64 GB` on TP0's dist_init end line: 0.64 × 2^30 = 687,194,767.36 bytes,
    // printed to 0.01 GiB = 10,737,418 bytes; the memory shape of the JSON documents.
    assert_eq!(dist["args"]["mem_usage"]["bytes"], 687_194_767);
    assert_eq!(dist["args"]["mem_usage"]["resolution_bytes"], 10_737_418);
    let counters: Vec<&Value> = events
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "TP0 avail")
        .collect();
    assert!(counters.len() >= 2, "free memory over time on TP0");
    let failures: Vec<&Value> = events
        .iter()
        .filter(|e| e["ph"] == "i" && e["cat"] == "failure")
        .collect();
    assert_eq!(failures.len(), 8);
    let f0 = failures
        .iter()
        .find(|e| e["tid"] == tp0)
        .expect("TP0 failure");
    assert_eq!(f0["name"], "failure: oom");
    assert_eq!(f0["s"], "t");
    assert_eq!(f0["args"]["phase"], "cuda_graph");
    // `Tried to allocate 20.00 MiB`: 20 × 2^20 bytes, printed to 0.01 MiB = 10,485.76 bytes.
    assert_eq!(f0["args"]["requested_bytes"]["bytes"], 20_971_520);
    assert_eq!(f0["args"]["requested_bytes"]["resolution_bytes"], 10_486);
    assert!(f0["args"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("CUDA out of memory"));
    // Failures come after the rank's last phase began.
    let graph = events
        .iter()
        .find(|e| e["ph"] == "X" && e["name"] == "cuda_graph" && e["tid"] == tp0);
    if let Some(g) = graph {
        assert!(f0["ts"].as_u64() >= g["ts"].as_u64());
    }
}

#[test]
fn trace_is_written_to_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("run.trace.json");
    Command::cargo_bin("rankscope")
        .expect("binary built")
        .args(["export", "samples/tp8-baseline", "--perfetto"])
        .arg(&path)
        .assert()
        .success()
        .stdout("");
    let text = std::fs::read_to_string(&path).expect("file written");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    assert!(v["traceEvents"].as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn export_needs_a_format() {
    Command::cargo_bin("rankscope")
        .expect("binary built")
        .args(["export", "samples/tp8-baseline"])
        .assert()
        .code(2);
}
