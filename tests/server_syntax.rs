//! What rankscope quotes of a server is what the server printed: configuration values in
//! the server's own syntax (Rust's `false` for TGI's `Args { … }`, not Python's `False`),
//! and a record's message without the rank field a `[[suffix]]` read off its end.
//! Expected values are read off `samples/tgi-tp2*/launcher.log` by hand.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;

fn rankscope(args: &[&str]) -> String {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// TGI prints its arguments with Rust's `{:?}` (`json_output: false`); a diff of two runs
/// that differ in that flag says `false -> true`, as the launcher wrote it.
#[test]
fn a_rust_servers_config_values_are_printed_as_rust() {
    let dir = tempfile::tempdir().unwrap();
    let log = std::fs::read_to_string("samples/tgi-tp2/launcher.log").unwrap();
    // launcher.log line 1: `Args { …, cuda_memory_fraction: 1.0, port: 8080, json_output:
    // false }`.
    assert!(log.contains("json_output: false }"));
    for (name, text) in [
        ("baseline", log.clone()),
        (
            "candidate",
            log.replace("json_output: false", "json_output: true"),
        ),
    ] {
        std::fs::create_dir(dir.path().join(name)).unwrap();
        std::fs::write(dir.path().join(name).join("launcher.log"), text).unwrap();
    }
    let (b, c) = (dir.path().join("baseline"), dir.path().join("candidate"));
    let out = rankscope(&["diff", b.to_str().unwrap(), c.to_str().unwrap()]);
    assert!(
        out.contains("config    json_output  false -> true\n"),
        "{out}"
    );
    assert!(!out.contains("False"), "{out}");
}

/// The baseline's launcher.log and the OOM run's differ in `cuda_memory_fraction: 1.0`
/// against `0.6`: floats are written as Rust writes them, and the remedy proposes the
/// baseline's value in the same spelling.
#[test]
fn a_rust_servers_remedy_names_the_value_as_rust() {
    let out = rankscope(&["diff", "samples/tgi-tp2", "samples/tgi-tp2-oom"]);
    assert!(
        out.contains("config    cuda_memory_fraction  1.0 -> 0.6\n"),
        "{out}"
    );
    assert!(out.contains("cuda_memory_fraction 0.6 -> 1.0"), "{out}");
}

/// TGI's launcher prints the shard's rank after the message (`… rank=1`, the tgi
/// grammar's `[[suffix]]`): the rank is read from it, and the quoted message ends before it.
#[test]
fn a_rank_read_off_the_end_of_a_line_stays_out_of_the_message() {
    let doc: serde_json::Value =
        serde_json::from_str(&rankscope(&["summary", "--json", "samples/tgi-tp2-oom"])).unwrap();
    let ranks = doc["run"]["ranks"].as_array().unwrap();
    let message = |rank: &str| {
        let r = ranks.iter().find(|r| r["rank"] == rank).unwrap();
        r["failure"]["message"].as_str().unwrap().to_string()
    };
    // launcher.log:19 `… text_generation_launcher: Terminating shard rank=0`.
    assert_eq!(message("TP0"), "Terminating shard");
    // launcher.log:16 `torch.OutOfMemoryError: … but unallocated. rank=1`.
    let oom = message("TP1");
    assert!(
        oom.starts_with(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 250.00 MiB."
        ),
        "{oom}"
    );
    assert!(
        oom.ends_with("41.20 MiB is reserved by PyTorch but unallocated."),
        "{oom}"
    );
    let text = rankscope(&["summary", "--ranks", "samples/tgi-tp2-oom"]);
    assert!(
        !text.contains("rank=1") && !text.contains("rank=0"),
        "{text}"
    );
}
