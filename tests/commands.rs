//! The command layer: commands that read no log load no grammar, `describes` marks the
//! component grammars, and `events` keeps one filter for its three outputs.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use rankscope::grammar::{Grammar, GrammarSet};

fn rankscope() -> Command {
    let mut c = Command::cargo_bin("rankscope").expect("binary built");
    c.env("NO_COLOR", "1");
    c
}

/// A user grammar directory holding one file that is not TOML.
fn broken_grammar_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("broken.toml"), "id = \"broken\" [[[\n").expect("write");
    dir
}

#[test]
fn a_broken_user_grammar_breaks_only_the_commands_that_read_a_log() {
    let dir = broken_grammar_dir();
    let bad_file = dir.path().join("broken.toml");
    for args in [
        vec!["completions", "bash"],
        vec!["schema", "summary"],
        vec!["man", "diff"],
        vec!["man", "--list"],
        vec!["mem", "samples/tp8-baseline/snapshot_rank0.pickle"],
    ] {
        rankscope()
            .env("RANKSCOPE_GRAMMAR_DIR", dir.path())
            .args(&args)
            .assert()
            .code(0);
        // `--grammar` does nothing for these: refused as a usage error, which names the
        // flag, not the file (it is not read).
        let out = rankscope()
            .env("RANKSCOPE_GRAMMAR_DIR", "/nonexistent")
            .arg("--grammar")
            .arg(&bad_file)
            .args(&args)
            .output()
            .expect("ran");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--grammar applies to the commands that read logs"),
            "{err}"
        );
        assert!(!err.contains("broken.toml"), "{err}");
    }
    // A command that reads a log says which grammar file is wrong and exits 2.
    let out = rankscope()
        .env("RANKSCOPE_GRAMMAR_DIR", dir.path())
        .args(["summary", "samples/tp2-straggler"])
        .output()
        .expect("ran");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("broken.toml: not a valid grammar"), "{err}");
}

#[test]
fn describes_marks_pytorch_and_nccl_as_components() {
    let gs = GrammarSet::builtin().expect("built-in grammars");
    let know = gs.knowledge();
    // grammars/pytorch.toml and grammars/nccl.toml say `describes = "component"`; the
    // server grammars say nothing and are servers.
    assert!(!know.describes_server("pytorch"));
    assert!(!know.describes_server("nccl"));
    for server in ["sglang", "vllm", "tgi", "trtllm", "lmdeploy"] {
        assert!(know.describes_server(server), "{server}");
    }
    let err = Grammar::from_toml(
        "id = \"x\"\nname = \"x\"\ndescribes = \"library\"\n",
        "x.toml",
    )
    .err()
    .expect("an unknown `describes` is refused");
    assert!(
        err.to_string()
            .contains("describes: `library` is not server or component"),
        "{err}"
    );
}

#[test]
fn events_text_json_and_ndjson_keep_the_same_events() {
    // tp2-nccl-fail/stdout.txt: TP1 prints one record after `Init torch distributed
    // begin.` (line 56, `Scheduler hit an exception`, an `error` event) whose traceback
    // ends in a `torch.distributed.DistBackendError` line (line 72, a second `error`
    // event, unprefixed, so TP1's): two `error` events of TP1, in each output.
    let args = ["samples/tp2-nccl-fail", "--kind", "error", "--rank", "TP1"];
    let text = rankscope().arg("events").args(args).output().expect("ran");
    let json = rankscope()
        .args(["events", "--json"])
        .args(args)
        .output()
        .expect("ran");
    let ndjson = rankscope()
        .args(["events", "--ndjson"])
        .args(args)
        .output()
        .expect("ran");
    // The table's last line: `N of M events shown; …`.
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    let footer = text.lines().last().expect("footer");
    let text_rows: usize = footer
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count");
    // 11 events in all: the nine phase and failure lines and, since c10 `[W…]` lines
    // without the `[rankN]:` lead are warnings, stdout.txt:30 and :31.
    assert!(footer.contains(" of 11 events shown"), "{footer}");
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let json_rows = doc["events"].as_array().expect("events").len();
    let nd: Vec<serde_json::Value> = String::from_utf8_lossy(&ndjson.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("line"))
        .collect();
    let nd_rows = nd.iter().filter(|m| m["type"] == "event").count();
    let written = nd.last().expect("summary")["data"]["events"].as_u64();
    let expected = 2;
    assert_eq!(text_rows, expected);
    assert_eq!(json_rows, expected);
    assert_eq!(nd_rows, expected);
    assert_eq!(written, Some(expected as u64));
    // Only TP1's rank message is written, and the launcher's failures are not.
    let ranks: Vec<&str> = nd
        .iter()
        .filter(|m| m["type"] == "rank")
        .filter_map(|m| m["data"]["rank"].as_str())
        .collect();
    assert_eq!(ranks, ["TP1"]);
}
