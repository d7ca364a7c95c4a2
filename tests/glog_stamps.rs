//! Stamps without a year, on the seventh made-up server of issue 28 (`kestrel-serve`,
//! `tests/fixtures/made-up-server-9/`: glog lines `I1127 09:14:02.340000  7301 file.cc:131]`,
//! each file opening with `Log file created at: 2026/11/27 09:14:00`). Trial 7's Q1, Q2,
//! Q6, M9, M10 and its `grammars check` messages 2-5: the header dates the file's lines
//! (before the file's modification date), `md` reads glog's `MMDD`, samples compare a
//! dateless stamp's time of day, a yearless `stamp_format` is refused with its fix, and a
//! line no prefix matched is said so. Values are read off the fixture's logs by hand.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

const DIR: &str = "tests/fixtures/made-up-server-9";

/// 2026-12-01 08:00:00 UTC, days after the 2026-11-27 every header prints.
fn december_first() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_112_000)
}

/// The fixture's `baseline` copied into a temporary directory inside the fixture, every
/// file's modification time set to `mtime`, and `edit` applied to each file's text; the
/// run's path relative to the fixture.
fn baseline_copy(mtime: SystemTime, edit: impl Fn(&str) -> String) -> (tempfile::TempDir, String) {
    let (temp, name) = common::temp_in(DIR);
    for node in ["node0", "node1"] {
        let to = temp.path().join("baseline").join(node);
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(Path::new(DIR).join("baseline").join(node)).unwrap() {
            let entry = entry.unwrap();
            let text = std::fs::read_to_string(entry.path()).unwrap();
            let file = to.join(entry.file_name());
            std::fs::write(&file, edit(&text)).unwrap();
            let f = std::fs::File::options().write(true).open(&file).unwrap();
            f.set_modified(mtime).unwrap();
        }
    }
    (temp, format!("{name}/baseline"))
}

fn first_line_at(summary: &Value) -> &str {
    summary["identity"]["first_line"]["at"].as_str().unwrap()
}

#[test]
fn the_glog_header_dates_the_lines_before_the_files_mtime() {
    // Every file's mtime says 2026-12-01; every header says 2026/11/27. g0's first event
    // is its `engine args:` line at 09:14:00.150000 (baseline/node0/kestrel-g0.log:6).
    let (_t, run) = baseline_copy(december_first(), |t| t.to_string());
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", &run]);
    assert_eq!(first_line_at(&s), "2026-11-27T09:14:00.150000-00:00");
    assert_eq!(s["run"]["year_inferred"], true);
    let notes = s["run"]["notes"].to_string();
    assert!(
        notes.contains("inferred from the fully dated lines of the run"),
        "{notes}"
    );
    // Without the header line the mtime is all there is.
    let (_t, run) = baseline_copy(december_first(), |t| {
        t.lines()
            .filter(|l| !l.starts_with("Log file created at: "))
            .map(|l| format!("{l}\n"))
            .collect()
    });
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", &run]);
    assert_eq!(first_line_at(&s), "2026-12-01T09:14:00.150000-00:00");
    let notes = s["run"]["notes"].to_string();
    assert!(
        notes.contains("inferred from the files' modification dates"),
        "{notes}"
    );
}

#[test]
fn a_header_date_rolls_over_midnight() {
    // A header at 23:59:58 on Nov 27, dist_init begun at 23:59:59.5 and ended at
    // 00:00:01.0 of the next day (printed `I1128`, the year and date taken from the
    // header): Nov 28, 1.5 s later, not 23 h 59 min earlier.
    let (temp, name) = common::temp_in(DIR);
    let log = "Log file created at: 2026/11/27 23:59:58\n\
        I1127 23:59:59.500000  7301 nccl_comm.cc:77] [g0] joining nccl world: 1 ranks, root a:1\n\
        I1128 00:00:01.000000  7301 nccl_comm.cc:131] [g0] nccl world up: 1 ranks in 1.50s, 0.50 GiB used\n";
    std::fs::write(temp.path().join("late.log"), log).unwrap();
    let file = std::fs::File::options()
        .write(true)
        .open(temp.path().join("late.log"))
        .unwrap();
    file.set_modified(december_first()).unwrap();
    let path = format!("{name}/late.log");
    let ev = common::fixture_json(DIR, "grammar.toml", &["events", "--json", &path]);
    let at: Vec<&str> = (ev["events"].as_array().unwrap().iter())
        .map(|e| e["ts"]["at"].as_str().unwrap())
        .collect();
    assert_eq!(
        at,
        [
            "2026-11-27T23:59:59.500000-00:00",
            "2026-11-28T00:00:01.000000-00:00"
        ]
    );
}

#[test]
fn md_reads_glogs_month_day_and_a_bad_one_is_a_stamp_error() {
    // experiments/md.toml captures `1127` as `md`: read as Nov 27 (the year from the
    // header), so the run starts as with `grammar.toml`.
    let s = common::fixture_json(
        DIR,
        "experiments/md.toml",
        &["summary", "--json", "baseline"],
    );
    assert_eq!(first_line_at(&s), "2026-11-27T09:14:00.150000-00:00");
    // Three digits of it (`112`) read as no month-day: `grammars check` says so on the
    // first sample, and summary notes the untimed lines (g0: its 12 event lines, from line 6).
    let (temp, name) = common::temp_in(DIR);
    let grammar = std::fs::read_to_string(format!("{DIR}/experiments/md.toml")).unwrap();
    let bad = grammar.replace(r"[IWEF](?P<md>\d{4}) ", r"[IWEF](?P<md>\d{3})\d ");
    assert_ne!(bad, grammar);
    std::fs::write(temp.path().join("md.toml"), bad).unwrap();
    let g = format!("{name}/md.toml");
    let (code, out) = common::fixture_run(DIR, &g, &["grammars", "check", &g]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("sample 1 (\"I1127 09:14:00.150000  7301 main.cc:61] [g0] engine args: mo…\"): md `112` does not parse with `MM-DD, MMDD or MM/DD`"),
        "{out}"
    );
    let s = common::fixture_json(DIR, &g, &["summary", "--json", "baseline"]);
    let notes = s["run"]["notes"].to_string();
    assert!(
        notes.contains("baseline/node0/kestrel-g0.log: 12 event line(s) with a stamp that is no date or time, first at line 6 (md `112` does not parse with `MM-DD, MMDD or MM/DD`)"),
        "{notes}"
    );
}

/// What `grammars check` says of `sample` appended to a copy of `grammar.toml`: its
/// lines (empty when it passes). The other samples are not this test's business.
fn check_with_sample(sample: &str) -> String {
    let (temp, name) = common::temp_in(DIR);
    let grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    let n = grammar.matches("[[sample]]").count() + 1;
    std::fs::write(temp.path().join("g.toml"), format!("{grammar}\n{sample}\n")).unwrap();
    let g = format!("{name}/g.toml");
    let (_, out) = common::fixture_run(DIR, &g, &["grammars", "check", &g]);
    let label = format!("g.toml sample {n} (");
    out.lines()
        .filter(|l| l.contains(&label))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_dateless_stamps_sample_time_is_its_time_of_day() {
    let line = "kind = \"placement\"\nline = \"I1127 09:14:02.660000  5230 worker.cc:52] [g6] placement: pp=1 tp=2 device=cuda:2\"";
    for ok in ["09:14:02.660", "09:14:02.66", "2026-11-27 09:14:02.660"] {
        let out = check_with_sample(&format!("[[sample]]\n{line}\ntime = \"{ok}\""));
        assert_eq!(out, "", "{ok}");
    }
    let out = check_with_sample(&format!("[[sample]]\n{line}\ntime = \"09:14:02.670\""));
    assert!(
        out.contains("time `09:14:02.660`, expected `09:14:02.670` (the stamp prints no date: only its time of day is compared"),
        "{out}"
    );
    assert!(!out.contains("2000-01-01"), "{out}");
}

#[test]
fn a_stamp_format_without_a_year_is_refused_with_its_fix() {
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(DIR)
        .args(["grammars", "check", "experiments/e2.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("prefix `glog`: stamp_format `%m%d %H:%M:%S%.6f` reads no year"),
        "{err}"
    );
    assert!(
        err.contains(
            "capture the month and day as `md` (MM-DD, MMDD or MM/DD) and the time as `time`"
        ),
        "{err}"
    );
}

#[test]
fn a_line_no_prefix_matched_is_said_so() {
    // experiments/pfx.toml reads the fraction with `\d{3}` where glog prints six digits.
    let (code, out) = common::fixture_run(
        DIR,
        "experiments/pfx.toml",
        &["grammars", "check", "experiments/pfx.toml"],
    );
    assert_eq!(code, Some(1));
    let first = out.split("\nexperiments/pfx.toml sample 2").next().unwrap();
    assert!(
        first.contains(r"no prefix of grammar `kestrel` matched the line; closest, prefix `glog`: matched `[IWEF]\d{4} (?P<time>\d{2}:\d{2}:\d{2}\.\d{3})`, failed at ` +(?P<pid>\d+)"),
        "{first}"
    );
    assert!(
        first.contains("on the line (no prefix) \"I1127 09:14:00.150000"),
        "{first}"
    );
    assert!(!first.contains("on the text after the prefix"), "{first}");
}

#[test]
fn microsecond_stamps_report_millisecond_resolution_as_documented() {
    // glog prints `09:14:00.150000`; steps are whole milliseconds (docs/grammars.md).
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "baseline"]);
    assert_eq!(s["identity"]["first_line"]["resolution_s"], 0.001);
}

/// `watch` reads a file as it is written: the header arrives in a piece with no event to
/// date, the dateless lines after it. It dates them from the header as `summary` does,
/// not from the files' modification date (2026-12-01 here).
#[test]
fn watch_dates_the_lines_from_the_header_too() {
    let (_t, run) = baseline_copy(december_first(), |t| t.to_string());
    let s = common::fixture_json(
        DIR,
        "grammar.toml",
        &["watch", "--replay", "1000", "--json", &run],
    );
    assert_eq!(first_line_at(&s), "2026-11-27T09:14:00.150000-00:00");
    let notes = s["run"]["notes"].to_string();
    assert!(
        notes.contains("inferred from the fully dated lines of the run"),
        "{notes}"
    );
}
