//! An API server that logs an error per request once its engine is dead: thousands of
//! failure lines outside any rank. Each is placed in the phase the ranks had reached when
//! it was printed (from another file's stamps), and `summary` shows the wording once.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use serde_json::Value;

/// `workers.log`: two vLLM workers start loading weights at 10:11:10. `api{i}.log`, for
/// each of `files`: 3 request errors at 10:11:05 (lines 1-3), then `late` at 10:11:20.
fn flood(files: usize, late: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let workers: String = (0..2)
        .map(|tp| {
            format!(
                "(Worker_TP{tp} pid={}) INFO 03-04 10:11:10 [gpu_model_runner.py:1] \
                 Starting to load model /models/m...\n",
                1000 + tp
            )
        })
        .collect();
    std::fs::write(dir.path().join("workers.log"), workers).unwrap();
    for f in 0..files {
        let mut text = String::new();
        for i in 0..3 + late {
            let second = if i < 3 { "05" } else { "20" };
            text.push_str(&format!(
                "(APIServer pid={}) ERROR 03-04 10:11:{second} [core.py:9] \
                 RuntimeError: request {i} failed: engine dead\n",
                5000 + f
            ));
        }
        std::fs::write(dir.path().join(format!("api{f}.log")), text).unwrap();
    }
    dir
}

fn rankscope(args: &[&str], dir: &tempfile::TempDir) -> std::process::Output {
    Command::cargo_bin("rankscope")
        .unwrap()
        .args(args)
        .arg(dir.path())
        .output()
        .unwrap()
}

#[test]
fn a_flood_of_errors_outside_the_ranks_is_placed_by_stamp_and_shown_once() {
    let dir = flood(4, 500);
    let doc: Value = serde_json::from_slice(&rankscope(&["summary", "--json"], &dir).stdout)
        .expect("summary --json");
    let failures = doc["run"]["launcher_failures"].as_array().expect("list");
    // Every one is listed in the JSON: 4 files x 503 lines.
    assert_eq!(failures.len(), 4 * 503);
    // The workers' weight-load lines were printed at 10:11:10, in another file: the
    // errors of 10:11:05 are in launch, those of 10:11:20 in weight_load.
    let in_phase = |phase: &str| {
        (failures.iter())
            .filter(|f| f["phase"] == phase && f["phase_from"] == "ranks_at_line")
            .count()
    };
    assert_eq!(in_phase("launch"), 4 * 3);
    assert_eq!(in_phase("weight_load"), 4 * 500);

    let out = String::from_utf8(rankscope(&["summary"], &dir).stdout).unwrap();
    let outside: Vec<&str> = (out.lines())
        .filter(|l| l.starts_with("outside any rank"))
        .collect();
    // One wording (the request numbers aside), first printed at api0.log:1.
    assert_eq!(outside.len(), 1, "{out}");
    let rows = out.replace("\n  ", " ");
    let first = format!(
        "outside any rank: RuntimeError: request 0 failed: engine dead ({}:1, and 2011 more like it)",
        dir.path().join("api0.log").display()
    );
    assert!(rows.contains(&first), "{out}");
}
