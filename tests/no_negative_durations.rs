//! A duration is never negative. Where a phase's end is stamped before its start (stamps
//! out of order), `summary --json` gives `duration_s: null` with `end_before_start_s`, and
//! the text says so instead of printing a number. Walked over every run this repository
//! holds (`samples/*`, `tests/fixtures/*`, every `tests/verdicts/*.log`) and, in an
//! ignored test, the shared GPU fixtures.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// Keys whose numbers are durations or lateness (seconds that cannot be below zero). Clock
/// offsets (`offset_s`, `min_s`, `max_s`) and times are not among them.
fn is_duration_key(k: &str) -> bool {
    k.contains("duration")
        || k.contains("skew")
        || k.contains("elapsed")
        || matches!(
            k,
            "late_s" | "inside_s" | "before_first_line_s" | "end_before_start_s" | "by_s"
        )
}

/// Every negative number under a duration key, as `path = value`.
fn negatives(v: &Value, path: &str, under_duration: bool, out: &mut Vec<String>) {
    match v {
        Value::Number(n) if under_duration && n.as_f64().is_some_and(|x| x < 0.0) => {
            out.push(format!("{path} = {n}"));
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                negatives(x, &format!("{path}[{i}]"), under_duration, out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                negatives(
                    x,
                    &format!("{path}.{k}"),
                    under_duration || is_duration_key(k),
                    out,
                );
            }
        }
        _ => {}
    }
}

/// The command's JSON document; `None` when it refused the input (exit 2, nothing on
/// standard output: not a start-up log).
fn try_json_of(args: &[&str]) -> Option<Value> {
    let out = Command::cargo_bin("rankscope")
        .expect("binary")
        .args(args)
        .output()
        .expect("runs");
    if out.status.code() == Some(2) && out.stdout.is_empty() {
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}); exit {:?}, stderr {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    }))
}

fn json_of(args: &[&str]) -> Value {
    try_json_of(args).unwrap_or_else(|| panic!("{args:?} refused its input"))
}

fn runs_in(dir: &str, logs_too: bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() || (logs_too && p.extension().is_some_and(|x| x == "log")))
        .collect();
    out.sort();
    out
}

/// Every run's `summary --json`, and `diff --json` of each run against the next: no
/// negative duration anywhere. Returns the runs whose phases had an end before a start.
fn check(runs: &[PathBuf]) -> Vec<String> {
    let mut bad = Vec::new();
    let mut inverted = Vec::new();
    let mut read = Vec::new();
    let summaries = common::par_map(runs, |p| {
        try_json_of(&["summary", "--json", &p.to_string_lossy()])
    });
    for (p, doc) in runs.iter().zip(summaries) {
        let s = p.to_string_lossy();
        let Some(doc) = doc else {
            rankscope_note!("{s}: refused as not a start-up log; not checked");
            continue;
        };
        read.push(p.clone());
        negatives(&doc, &format!("summary {s}"), false, &mut bad);
        let phases = doc["run"]["phases"].as_array().cloned().unwrap_or_default();
        if phases.iter().any(|ph| {
            ph["end_before_start"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        }) {
            inverted.push(s.to_string());
        }
    }
    assert!(
        read.len() * 10 >= runs.len() * 9,
        "{} of {} read",
        read.len(),
        runs.len()
    );
    let mut diffed = 0;
    let pairs: Vec<&[PathBuf]> = read.windows(2).collect();
    let diffs = common::par_map(&pairs, |pair| {
        let (a, b) = (pair[0].to_string_lossy(), pair[1].to_string_lossy());
        try_json_of(&["diff", "--json", &a, &b])
    });
    for (pair, doc) in pairs.iter().zip(diffs) {
        let (a, b) = (pair[0].to_string_lossy(), pair[1].to_string_lossy());
        // `diff` refuses a side with no start-up event to compare (server output that
        // `summary` reads as incomplete), exit 2 with nothing on stdout.
        let Some(doc) = doc else {
            continue;
        };
        diffed += 1;
        negatives(&doc, &format!("diff {a} {b}"), false, &mut bad);
    }
    assert!(
        diffed * 10 >= read.len() * 8,
        "{diffed} of {} pairs diffed",
        read.len()
    );
    assert!(bad.is_empty(), "negative durations:\n{}", bad.join("\n"));
    inverted
}

#[test]
fn no_negative_duration_in_the_repository_runs() {
    let mut runs = runs_in("samples", false);
    // A made-up server's fixture carries its own grammar (`*.toml` at its top) and is read
    // with it by its own test; without it, it is not a run of a known server.
    let own_grammar = |dir: &PathBuf| {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "toml"))
        })
    };
    runs.extend(
        runs_in("tests/fixtures", false)
            .into_iter()
            .filter(|d| !own_grammar(d)),
    );
    runs.extend(runs_in("tests/verdicts", true));
    assert!(runs.len() > 70, "{} runs", runs.len());
    let inverted = check(&runs);
    // tests/fixtures/out-of-order-kv: TP0's `KV Cache is allocated` is stamped 09:00:26 and
    // its `Memory pool end` 09:00:21 (lines 10–11): kv_cache would have lasted −5 s.
    assert!(
        inverted.iter().any(|r| r.ends_with("out-of-order-kv")),
        "{inverted:?}"
    );
}

#[test]
fn an_end_stamped_before_its_start_is_said_not_measured() {
    let doc = json_of(&["summary", "--json", "tests/fixtures/out-of-order-kv"]);
    let kv = doc["run"]["phases"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["phase"] == "kv_cache"))
        .expect("kv_cache phase");
    assert_eq!(kv["end_before_start"][0]["rank"], "TP0");
    assert_eq!(kv["end_before_start"][0]["by_s"], 5.0);
    // TP1's kv_cache lines are both 09:00:26: the one duration left is 0 s, and TP1 is no
    // straggler for ending after TP0's out-of-order end.
    assert_eq!(kv["duration_s"]["max"], 0.0);
    assert!(kv["stragglers"].as_array().is_some_and(|a| a.is_empty()));
    let tp0 = doc["run"]["ranks"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["rank"] == "TP0"))
        .expect("TP0");
    let span = tp0["phases"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["phase"] == "kv_cache"))
        .expect("TP0 kv_cache");
    assert!(span["duration_s"].is_null());
    assert_eq!(span["end_before_start_s"], 5.0);
    let text = Command::cargo_bin("rankscope")
        .expect("binary")
        .args([
            "summary",
            "--width",
            "200",
            "tests/fixtures/out-of-order-kv",
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("TP0: end stamped 5.0 s before start (stamps out of order), no duration"),
        "{text}"
    );
    assert!(!text.contains("-5.0"), "{text}");
}

#[test]
#[ignore = "needs ../shared/fixtures (the real GPU runs)"]
fn no_negative_duration_in_the_shared_gpu_runs() {
    let mut runs = Vec::new();
    for dir in ["../shared/fixtures/gpu", "../shared/fixtures/gpu2"] {
        assert!(Path::new(dir).is_dir(), "{dir} is absent");
        runs.extend(runs_in(dir, false));
    }
    assert!(runs.len() >= 10, "{} runs", runs.len());
    check(&runs);
}
