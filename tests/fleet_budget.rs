//! A fleet's rank files are kept whole: the run's event budget grows with its file count
//! (`scan::budget::EVENTS_PER_FILE`), so a run of thousands of rank files does not leave
//! the ranks read last out of every phase. Past the grown budget, the note says so.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use serde_json::Value;

/// `files` rank files, file `i` holding `per_file` `Init torch distributed begin.` lines
/// of rank TP`i`, one second apart.
fn fleet(files: usize, per_file: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..files {
        let mut text = String::new();
        for s in 0..per_file {
            text.push_str(&format!(
                "[2026-11-29 09:{:02}:{:02} TP{i}] Init torch distributed begin.\n",
                s / 60,
                s % 60
            ));
        }
        std::fs::write(dir.path().join(format!("rank{i}.log")), text).expect("write");
    }
    dir
}

fn summary(dir: &tempfile::TempDir) -> Value {
    let out = Command::cargo_bin("rankscope")
        .expect("bin")
        .args(["summary", "--json"])
        .arg(dir.path())
        .output()
        .expect("run");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    })
}

fn notes(doc: &Value) -> Vec<String> {
    (doc["run"]["notes"].as_array().expect("notes"))
        .iter()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

fn events_read(doc: &Value) -> u64 {
    (doc["run"]["sources"].as_array().expect("sources"))
        .iter()
        .map(|s| s["lines"]["events"].as_u64().expect("events"))
        .sum()
}

#[test]
fn a_fleet_past_the_run_budget_keeps_every_rank_file_whole() {
    // 2,100 files of 63 events: 132,300 events, past the 131,072 a run of fewer than
    // 2,048 files keeps, within the 2,100 x 64 = 134,400 of this one. Before the budget
    // grew with the file count, 1,228 events were not kept and their ranks' phase lines
    // with them.
    let doc = summary(&fleet(2_100, 63));
    assert_eq!(events_read(&doc), 132_300);
    let dropped: Vec<String> = (notes(&doc).into_iter())
        .filter(|n| n.contains("not kept"))
        .collect();
    assert!(dropped.is_empty(), "{dropped:?}");
    // Every rank began dist_init: all 2,100 are in the phase.
    let dist_init = (doc["run"]["phases"].as_array().expect("phases"))
        .iter()
        .find(|p| p["phase"] == "dist_init")
        .unwrap_or_else(|| panic!("no dist_init: {}", doc["run"]["phases"]));
    assert_eq!(dist_init["ranks"], 2_100, "{dist_init}");
}

#[test]
fn past_the_grown_budget_the_note_gives_the_count_and_the_limit() {
    // 2,100 files of 65 events: 136,500 read, 134,400 kept, 2,100 not.
    let doc = summary(&fleet(2_100, 65));
    assert_eq!(events_read(&doc), 136_500);
    let notes = notes(&doc);
    let note = (notes.iter())
        .find(|n| n.contains("events not kept"))
        .unwrap_or_else(|| panic!("no budget note: {notes:?}"));
    assert!(note.contains("2100 events not kept"), "{note}");
    assert!(note.contains("a run keeps 134400 events"), "{note}");
}
