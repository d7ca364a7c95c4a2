//! What rankscope gives the shell around it: completions and a man page generated from the
//! one clap definition, and quiet exits when the reader of a pipe goes away.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use assert_cmd::cargo::CommandCargoExt;
use assert_cmd::Command;

fn stdout_of(args: &[&str]) -> String {
    let out = Command::cargo_bin("rankscope")
        .expect("binary built")
        .args(args)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn completions_know_every_command() {
    for shell in ["bash", "zsh", "fish"] {
        let s = stdout_of(&["completions", shell]);
        for cmd in [
            "summary",
            "events",
            "diff",
            "export",
            "schema",
            "completions",
            "man",
        ] {
            assert!(s.contains(cmd), "{shell} completion lacks {cmd}");
        }
        assert!(s.contains("perfetto"), "{shell}: export flags");
    }
}

#[test]
fn man_page_is_roff_from_the_clap_definition() {
    let s = stdout_of(&["man"]);
    assert!(s.starts_with(".ie") || s.starts_with(".TH") || s.contains("\n.TH "));
    assert!(s.contains("rankscope"));
    assert!(
        s.contains("\n.SH \"EXIT STATUS\"\n"),
        "the exit codes are a section of the page"
    );
    for cmd in ["summary", "diff", "export"] {
        assert!(s.contains(cmd), "man page lacks {cmd}");
    }
}

/// `rankscope events … --ndjson | head -1`: the reader closes after one line; the writer
/// must stop with exit 0 and nothing on stderr. The input is large enough that the output
/// overflows any pipe buffer, so the write really meets a closed pipe.
#[test]
fn closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = std::fs::read("samples/tp8-baseline/server.log").expect("sample");
    let path = dir.path().join("big.log");
    let mut f = std::fs::File::create(&path).expect("create");
    for _ in 0..300 {
        f.write_all(&log).expect("write");
    }
    drop(f);
    let mut child = std::process::Command::cargo_bin("rankscope")
        .expect("binary built")
        .args(["events", "--ndjson"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("one line");
    // The reader is dropped here: the pipe closes with megabytes still to write.
    let out = child.wait_with_output().expect("wait");
    assert!(first.starts_with("{\"type\":\"run\""), "{first}");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// Many files would show a progress bar on a terminal; stderr here is a pipe, as in CI
/// logs and scripts, so nothing may be drawn there.
#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..40 {
        std::fs::copy(
            "samples/tp8-baseline/server.log",
            dir.path().join(format!("part{i}.log")),
        )
        .expect("copy");
    }
    let out = Command::cargo_bin("rankscope")
        .expect("binary built")
        .arg("summary")
        .arg(dir.path())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
