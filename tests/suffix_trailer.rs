//! The fields a rank-less `[[suffix]]` cuts from a failure line are searched for a
//! suspect's words and a setting's new value (issue #28): a made-up logfmt server,
//! `emberline` (our own values), whose failure line says why in an `err="…"` field after
//! the quoted message. The message quoted stays `engine failed`; the field names the
//! trigger, quoted at the failure's own file and line.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;

const GRAMMAR: &str = r#"
id = "emberline"
name = "emberline"
description = "emberline (made up): logfmt records, one rank per file"
describes = "server"

[[prefix]]
id = "logfmt"
regex = '''^ts=(?P<stamp>\S+) level=(?:info|warn|error) rank=(?P<tp>\d+) msg="'''
stamp_format = "%Y-%m-%dT%H:%M:%S%.3fZ"
starts_with = ["ts="]

# logfmt's fields after the message: names no rank, kept out of the quoted message.
[[suffix]]
id = "fields"
regex = '''"(?: \w+=(?:"[^"]*"|\S*))*$'''

[[config]]
marker = "opts="
syntax = "python_dict"

[[event]]
kind = "server_args"
literals = ['msg="options" opts=']
regex = '''^options" opts=\{'''

[[event]]
kind = "weight_load_begin"
phase = "weight_load"
edge = "begins"
literals = ['msg="loading weights"']
regex = '''^loading weights'''

[[event]]
kind = "ready"
literals = ['msg="serving"']
regex = '''^serving'''

[[event]]
kind = "error"
set = { failure = "exception" }
literals = ['msg="engine failed"']
regex = '''^engine failed'''

[[suspect]]
kinds = ["exception"]
settings = ["kv_layout"]
words = ["unsupported by kernel"]

[[suspect]]
kinds = ["exception"]
settings = ["max_batch"]
words = ["batch too large"]
"#;

const BASELINE: &str = r#"ts=2026-12-02T09:00:00.000Z level=info rank=0 msg="options" opts={'kv_layout': 'nhd', 'max_batch': 64, 'seed': 11}
ts=2026-12-02T09:00:01.000Z level=info rank=0 msg="loading weights" path="/m/ember-3b"
ts=2026-12-02T09:00:04.000Z level=info rank=0 msg="serving" port=8100
"#;

const FAILING: &str = r#"ts=2026-12-02T09:30:00.000Z level=info rank=0 msg="options" opts={'kv_layout': 'hnd', 'max_batch': 96, 'seed': 11}
ts=2026-12-02T09:30:01.000Z level=info rank=0 msg="loading weights" path="/m/ember-3b"
ts=2026-12-02T09:30:02.500Z level=error rank=0 msg="engine failed" err="kv layout hnd unsupported by kernel" code=17
"#;

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("grammar.toml"), GRAMMAR).unwrap();
    for (run, text) in [("baseline", BASELINE), ("failing", FAILING)] {
        std::fs::create_dir(dir.path().join(run)).unwrap();
        std::fs::write(dir.path().join(run).join("rank0.log"), text).unwrap();
    }
    dir
}

fn rankscope(dir: &tempfile::TempDir, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(dir.path())
        .args([
            "--grammar",
            "grammar.toml",
            "--color",
            "never",
            "--width",
            "200",
        ])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn the_cut_err_field_names_the_trigger() {
    let dir = setup();
    let (code, out) = rankscope(&dir, &["diff", "baseline", "failing"]);
    assert_eq!(code, Some(1), "{out}");
    // Both settings changed and both are listed for exceptions; only kv_layout is named
    // by the failure: its word `unsupported by kernel` and its new value `hnd` are in
    // the `err` field the suffix cut from failing/rank0.log:3 (two hits). max_batch's
    // new value `96` is in no line: less likely.
    assert!(
        out.contains(
            "cause     TP0 raised an exception in weight_load (failing/rank0.log:3): engine failed\n          \
             likely trigger: kv_layout 'nhd' -> 'hnd' (the failure holds \"unsupported by kernel\": \"err=\"kv layout \
             hnd unsupported by kernel\" code=17\", failing/rank0.log:3)\n          less likely: max_batch 64 -> 96\n"
        ),
        "{out}"
    );
}

#[test]
fn the_json_names_the_same_line_and_the_message_stays_cut() {
    let dir = setup();
    let (_, out) = rankscope(&dir, &["diff", "--json", "baseline", "failing"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cause = &doc["failure_cause"];
    assert_eq!(cause["message"], "engine failed", "{cause:#}");
    assert_eq!(cause["line"], 3, "{cause:#}");
    let first = &cause["suspects"][0];
    assert_eq!(first["setting"], "kv_layout", "{cause:#}");
    assert_eq!(first["why"], "named", "{cause:#}");
    assert_eq!(
        first["said"], "err=\"kv layout hnd unsupported by kernel\" code=17",
        "{cause:#}"
    );
    assert_eq!(first["source"], "failing/rank0.log", "{cause:#}");
    assert_eq!(first["line"], 3, "{cause:#}");
    assert_eq!(cause["suspects"][1]["setting"], "max_batch", "{cause:#}");
    assert_eq!(cause["suspects"][1]["why"], "listed", "{cause:#}");
    // The event's message is what the server said, without its fields.
    let (_, events) = rankscope(&dir, &["events", "--json", "failing"]);
    let doc: serde_json::Value = serde_json::from_str(&events).unwrap();
    let failure = (doc["events"].as_array().unwrap().iter())
        .find(|e| e["kind"] == "error")
        .unwrap();
    assert_eq!(failure["message"], "engine failed");
}
