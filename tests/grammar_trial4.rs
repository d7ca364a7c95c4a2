//! Trial 4 of issue 28 (`quillserve`, `tests/fixtures/made-up-server-6/`), grammar-engine
//! side: what QUESTIONS.md asked of the doc and found the tool not to do, fixed (h-fix4a).
//! Values are read off the fixture's lines by hand (line numbers are `grep -n`'s):
//! `baseline/rank2.log:1` prints `mem_total="85.52 GB"` (85.52 × 10^9 = 85,520,000,000
//! bytes), `:3` `took_ms=828` (0.828 s), `:8` `device_free="69.18 GB"`; the configuration
//! is `baseline/launcher.log:2` and the 21 lines after it; `failing/rank2.log:12` is the
//! OOM, lines 13–17 its backtrace, 18 the same pid's `worker exiting` record.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use serde_json::Value;

const DIR: &str = "tests/fixtures/made-up-server-6";

fn run_in(grammar: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(DIR)
        .env("RANKSCOPE_GRAMMAR_DIR", "/nonexistent")
        .args(["--grammar", grammar, "--color", "never", "--width", "120"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn run(args: &[&str]) -> (Option<i32>, String) {
    run_in("grammar.toml", args)
}

fn events(kind: &str, path: &str) -> Vec<Value> {
    let (code, out) = run(&["events", "--json", "--kind", kind, path]);
    assert!(matches!(code, Some(0 | 1)), "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    v.get("events")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_else(|| v.as_array().cloned().unwrap_or_default())
}

/// The fixture's grammar with one text replaced, written beside it (removed on drop).
fn edited(from: &str, to: &str) -> (tempfile::TempDir, String) {
    let text = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    assert!(text.contains(from), "{from}");
    let dir = tempfile::tempdir_in(DIR).unwrap();
    let path = dir.path().join("g.toml");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    let rel = format!(
        "{}/g.toml",
        dir.path().file_name().unwrap().to_str().unwrap()
    );
    (dir, rel)
}

fn check(grammar: &str) -> (Option<i32>, String) {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(DIR)
        .env("RANKSCOPE_GRAMMAR_DIR", "/nonexistent")
        .args(["grammars", "check", grammar])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn the_fixture_grammar_passes_its_check() {
    let (code, out) = check("grammar.toml");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("0 failed"), "{out}");
}

/// Q1/E1: literals written with the prefix's `msg="` (as the newcomer first wrote them)
/// and without it both read; a regex that fails shows the text it ran on.
#[test]
fn a_literal_may_begin_inside_the_prefix() {
    // The fixture writes `msg="worker bound"`; the form without `msg="` reads the same.
    let (_d, g) = edited(
        r#"literals = ['msg="worker bound"']"#,
        r#"literals = ['worker bound"']"#,
    );
    assert_eq!(check(&g).0, Some(0));
    let bound = events("worker_bound", "baseline");
    assert_eq!(bound.len(), 8);
    // A typo in the regex: the message names the text after the prefix.
    let (_d, g) = edited(r#"'''^worker bound" dp="#, r#"'''^worker bond" dp="#);
    let (code, out) = check(&g);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(r#"matched `^worker bo`, failed at `nd" dp="#),
        "{out}"
    );
    assert!(
        out.contains(r#"on the text after the prefix "worker bound\" dp=0 tp=2"#),
        "{out}"
    );
}

/// Q2/E3/M3: the user's `sigterm` event reads `received SIGTERM` before pytorch's
/// `teardown`; a sample stating `teardown` says who read it and why.
#[test]
fn a_users_grammar_is_tried_before_the_built_in_ones() {
    let sig = events("sigterm", "failing");
    // failing/rank4.log … rank7.log, line 14 each.
    assert_eq!(sig.len(), 4);
    let (_, out) = run(&["summary", "failing"]);
    assert!(out.contains("read as quillserve\n"), "{out}");
    let (_d, g) = edited(
        "kind = \"sigterm\"              # the user's grammar",
        "kind = \"teardown\"             # the user's grammar",
    );
    let (code, out) = check(&g);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("expected `teardown`, got `sigterm` (read by grammar `quillserve`"),
        "{out}"
    );
    assert!(
        out.contains("`teardown` of grammar `pytorch` matches the line too, but is tried later: a user's grammar is tried before the built-in ones"),
        "{out}"
    );
}

/// Q3/Q4: `decimal GB` is 10^9 bytes, `ms` is read as seconds.
#[test]
fn decimal_gb_and_milliseconds_read() {
    let bound = events("worker_bound", "baseline/rank2.log");
    assert_eq!(bound.len(), 1);
    let f = &bound[0]["fields"];
    assert_eq!(
        f["mem_total_bytes"]["bytes"].as_i64(),
        Some(85_520_000_000),
        "{f}"
    );
    let prof = events("kv_profile", "baseline/rank2.log");
    assert_eq!(
        prof[0]["fields"]["device_free_bytes"]["bytes"].as_i64(),
        Some(69_180_000_000)
    );
    let ready = events("dist_init_end", "baseline/rank2.log");
    let s = ready[0]["fields"]["elapsed_s"].as_f64().unwrap();
    assert!((s - 0.828).abs() < 1e-9, "{s}");
}

/// Q12: a rank-less suffix keeps logfmt's closing quote and fields out of the message.
#[test]
fn a_rankless_suffix_ends_the_quoted_message() {
    let oom = events("oom", "failing");
    assert_eq!(oom.len(), 1);
    assert_eq!(
        oom[0]["message"].as_str(),
        Some("cuda graph capture failed: out of memory")
    );
    // The captures are still read from the whole text.
    assert_eq!(oom[0]["fields"]["bs"].as_i64(), Some(512));
    // The configuration line keeps its message: the configuration is read from it.
    let (_, out) = run(&["diff", "baseline", "failing"]);
    assert!(out.contains("max_batch  256 -> 512"), "{out}");
}

/// M2/Q7: the `{:#?}` configuration reads (`Some(` / `7,` / `),`), nested keys dotted.
#[test]
fn the_pretty_printed_configuration_reads_with_dotted_keys() {
    let (_, out) = run(&["diff", "baseline", "failing"]);
    assert!(!out.contains("not readable"), "{out}");
    for row in [
        "max_batch  256 -> 512",
        "mem_fraction  0.88 -> 0.92",
        "cuda_graph_max_bs  160 -> 512",
        "metrics_port  9400 -> 9500",
    ] {
        assert!(out.contains(row), "{row}\n{out}");
    }
    // A copy of the failing run whose nested `sched.policy` changed.
    let dir = tempfile::tempdir_in(DIR).unwrap();
    let run_dir = dir.path().join("failing");
    std::fs::create_dir(&run_dir).unwrap();
    for e in std::fs::read_dir(format!("{DIR}/failing")).unwrap() {
        let e = e.unwrap();
        let text = std::fs::read_to_string(e.path()).unwrap();
        std::fs::write(
            run_dir.join(e.file_name()),
            text.replace("policy: Fcfs", "policy: Priority"),
        )
        .unwrap();
    }
    let rel = format!(
        "{}/failing",
        dir.path().file_name().unwrap().to_str().unwrap()
    );
    let (_, out) = run(&["diff", "baseline", &rel]);
    assert!(out.contains("sched.policy  Fcfs -> Priority"), "{out}");
}

/// M5/Q16: the configuration record stops at the launcher's next record; the OOM's
/// backtrace stops at its pid's `worker exiting` record.
#[test]
fn a_record_body_stops_at_the_next_record() {
    let (_, out) = run(&["summary", "baseline"]);
    assert!(
        out.contains("140 lines: 83 events, 2 other records, 21 continuation, 33 noise"),
        "{out}"
    );
    // failing: the 21 configuration lines and the 5 backtrace lines (rank2.log:13-17).
    let (_, out) = run(&["summary", "failing"]);
    assert!(out.contains(" 26 continuation,"), "{out}");
    let args = events("server_args", "failing/launcher.log");
    let detail = args[0]["detail"].as_str().unwrap_or("");
    assert!(detail.ends_with('}'), "{detail}");
    assert!(!detail.contains("spawned worker"), "{detail}");
    let spawns = events("spawn", "failing/launcher.log");
    assert_eq!(spawns.len(), 8);
}

/// Q5/E4: a `tags` capture reads logfmt's `dp=1 tp=3` and `DP1 TP3` in any case; one it
/// cannot read fails the check saying so.
#[test]
fn a_tags_capture_reads_logfmt_and_says_when_it_cannot() {
    let prefix = r#"comp=(?P<proc>\w+) msg="'''"#;
    for (tags, shown, rank) in [
        (r"dp=\d+ tp=\d+", "dp=1 tp=3", "DP1 TP3"),
        (r"(?i:dp\d+ tp\d+)", "Dp1 tP3", "DP1 TP3"),
    ] {
        let (_d, g) = edited(
            prefix,
            &format!(r#"comp=(?P<proc>\w+) (?:(?P<tags>{tags}) )?msg="'''"#),
        );
        let path = format!("{DIR}/{g}");
        let text = std::fs::read_to_string(&path).unwrap();
        let sample = format!(
            "\n[[sample]]\nline = 'ts=2026-12-01T21:00:01.202Z level=info pid=4212 comp=worker {shown} msg=\"replica warm\" dp=1'\nkind = \"replica_warm\"\nrank = \"{rank}\"\n"
        );
        std::fs::write(&path, text + &sample).unwrap();
        let (code, out) = check(&g);
        assert_eq!(code, Some(0), "{tags}: {out}");
    }
    let (_d, g) = edited(
        prefix,
        r#"comp=(?P<proc>\w+) (?:(?P<tags>rank=\d+) )?msg="'''"#,
    );
    let path = format!("{DIR}/{g}");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text + "\n[[sample]]\nline = 'ts=2026-12-01T21:00:01.202Z level=info pid=4212 comp=worker rank=3 msg=\"replica warm\" dp=1'\nkind = \"replica_warm\"\n",
    )
    .unwrap();
    let (code, out) = check(&g);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("the prefix's `tags` capture matched `rank=3` but reads no rank"),
        "{out}"
    );
    // The message names every accepted form, the JSON members included.
    assert!(
        out.contains("`dp:1;tp:3` or JSON's `\"dp\":1,\"tp\":3`"),
        "{out}"
    );
}
