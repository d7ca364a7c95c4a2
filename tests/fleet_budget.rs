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

/// The number before `what` in `text` (`2068 events not kept` → 2068).
fn count_before(text: &str, what: &str) -> u64 {
    let end = text
        .find(what)
        .unwrap_or_else(|| panic!("no {what:?} in {text}"));
    let digits = text[..end].trim_end();
    let start = digits
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |p| p + 1);
    digits[start..]
        .parse()
        .unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn past_the_grown_budget_the_note_gives_the_count_and_the_limit() {
    // 2,100 files of 65 events: 136,500 read, 134,400 within the budget, 2,100 past it.
    // Of those, a file reached after the budget was spent still keeps its first
    // `dist_init_begin` (the first of its kind for its rank); how many files that is
    // depends on the order the threads reach them, so the two counts are checked
    // together.
    let doc = summary(&fleet(2_100, 65));
    assert_eq!(events_read(&doc), 136_500);
    let notes = notes(&doc);
    let note = (notes.iter())
        .find(|n| n.contains("events not kept"))
        .unwrap_or_else(|| panic!("no budget note: {notes:?}"));
    assert!(note.contains("a run keeps 134400 events"), "{note}");
    let not_kept = count_before(note, "events not kept");
    let kept_past = if note.contains("events past it were kept") {
        count_before(note, "events past it were kept")
    } else {
        0
    };
    assert_eq!(not_kept + kept_past, 2_100, "{note}");
    // At most one a file, and only in the files the budget touched (three named, and
    // how many more).
    assert!(kept_past <= 3 + count_before(note, "more files"), "{note}");
}

#[test]
fn a_rank_failing_after_the_budget_is_spent_still_fails_the_run_in_its_phase() {
    // 600 rank files, each a start-up with 250 NCCL `env` lines (a flood of one kind,
    // as NCCL_DEBUG=INFO prints): 600 x 254 = 152,400 events, past the 131,072 a run of
    // fewer than 2,048 files keeps, which is spent about 516 files in. The last file's
    // rank runs out of memory while loading weights. Before the first of a kind was kept
    // past the budget, that OOM and the phases of the last ~83 ranks were dropped with
    // the flood, and the run read INCOMPLETE over 517 ranks.
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..600 {
        let mut text = format!("[2026-11-29 09:00:00 TP{i}] Init torch distributed begin.\n");
        for k in 0..250 {
            text.push_str(&format!(
                "gpu-node-000:{pid}:{pid} [{dev}] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth{k}.\n",
                pid = 40_000 + i,
                dev = i % 8
            ));
        }
        text.push_str(&format!(
            "[2026-11-29 09:01:00 TP{i}] Init torch distributed ends. mem usage=0.60 GB\n\
             [2026-11-29 09:01:01 TP{i}] Load weight begin. avail mem=14.00 GB\n"
        ));
        if i == 599 {
            text.push_str(
                "[2026-11-29 09:01:05 TP599] torch.OutOfMemoryError: CUDA out of memory. \
                 Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB of \
                 which 1.12 GiB is free.\n",
            );
        } else {
            text.push_str(&format!(
                "[2026-11-29 09:01:09 TP{i}] Load weight end. type=LlamaForCausalLM, \
                 avail mem=6.60 GB, mem usage=7.29 GB.\n"
            ));
        }
        std::fs::write(dir.path().join(format!("rank{i:04}.log")), text).expect("write");
    }
    let doc = summary(&dir);
    assert_eq!(events_read(&doc), 600 * 254);
    let notes = notes(&doc);
    let note = (notes.iter())
        .find(|n| n.contains("events not kept"))
        .unwrap_or_else(|| panic!("no budget note: {notes:?}"));
    // The budget bound: the flood's repeats were let go, the first of each kind kept.
    assert!(note.contains(": env ×"), "{note}");
    assert!(!note.contains("oom ×"), "{note}");
    assert!(count_before(note, "events past it were kept") > 0, "{note}");
    assert_eq!(doc["run"]["root"], "TP599", "{}", doc["run"]["root"]);
    assert_eq!(
        doc["run"]["outcomes"]["failed"], 1,
        "{}",
        doc["run"]["outcomes"]
    );
    let rank = (doc["run"]["ranks"].as_array().expect("ranks"))
        .iter()
        .find(|r| r["rank"] == "TP599")
        .expect("TP599");
    assert_eq!(rank["outcome"], "failed", "{rank}");
    assert_eq!(rank["failure"]["kind"], "oom", "{rank}");
    assert_eq!(rank["failure"]["phase"], "weight_load", "{rank}");
    // Every rank's weight load is in the table: 599 finished it, TP599 began it.
    let weight_load = (doc["run"]["phases"].as_array().expect("phases"))
        .iter()
        .find(|p| p["phase"] == "weight_load")
        .unwrap_or_else(|| panic!("no weight_load: {}", doc["run"]["phases"]));
    assert_eq!(weight_load["ranks"], 600, "{weight_load}");
}
