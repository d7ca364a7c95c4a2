//! A server of our own making, read from one grammar file and nothing else
//! (`tests/fixtures/made-up-server/pagesrv.toml`): it prints no line when CUDA graph
//! capture begins — the line that ends the KV pool's sizing begins it (`then`) — and its
//! out-of-memory line carries the phase from the grammar (`phase` on a failure event).
//! Every expected value is read off `run/rank0.log` and `run/rank1.log` by hand.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;

const DIR: &str = "tests/fixtures/made-up-server";

fn summary_json() -> serde_json::Value {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .args([
            "--grammar",
            &format!("{DIR}/pagesrv.toml"),
            "summary",
            "--json",
            &format!("{DIR}/run"),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_grammar_checks() {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .args(["grammars", "check", &format!("{DIR}/pagesrv.toml")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_failure_in_a_phase_with_no_begin_line_is_placed_in_it() {
    let doc = summary_json();
    let run = &doc["run"];
    let ranks = run["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    // TP0 ran out of memory at 10:00:09, three seconds after its page pool was ready
    // (10:00:06), the line that begins capture; TP1 likewise at 10:00:10.
    for (r, rank) in ranks.iter().enumerate() {
        assert_eq!(rank["rank"], format!("TP{r}"), "{rank}");
        assert_eq!(rank["outcome"], "failed", "{rank}");
        assert_eq!(rank["failure"]["kind"], "oom", "{rank}");
        assert_eq!(rank["failure"]["phase"], "cuda_graph", "{rank}");
    }
    // 512.00 MiB asked for, 96.00 MiB free (rank0.log line 6).
    let f = &ranks[0]["failure"];
    assert_eq!(f["fields"]["requested_bytes"]["bytes"], 512u64 << 20);
    assert_eq!(f["fields"]["free_bytes"]["bytes"], 96u64 << 20);
    assert_eq!(f["line"], 6);
    // The phase table has a cuda_graph row, begun by the page-pool line on both ranks
    // and finished by neither.
    let phases = run["phases"].as_array().unwrap();
    let names: Vec<&str> = phases
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "launch",
            "dist_init",
            "weight_load",
            "kv_cache",
            "cuda_graph"
        ],
        "{phases:?}"
    );
    assert_eq!(
        (phases[4]["ranks"].as_u64(), phases[4]["completed"].as_u64()),
        (Some(2), Some(0))
    );
    let rank0 = ranks[0]["phases"].as_array().unwrap();
    assert_eq!(rank0[4]["phase"], "cuda_graph");
    assert_eq!(
        rank0[4]["start"]["at"], "2026-12-01T10:00:06.000000-00:00",
        "{}",
        rank0[4]
    );
    // kv_cache ran 10:00:05 -> 10:00:06 and is complete; the pool's 3.25 GiB is its figure.
    assert_eq!(rank0[3]["duration_s"], 1.0, "{}", rank0[3]);
    assert_eq!(rank0[3]["complete"], true);
    // 3.25 × 2^30 bytes.
    let kv_size = rank0[3]["figures"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == "kv_size"))
        .expect("a kv_size figure");
    assert_eq!(
        (&kv_size["unit"], &kv_size["value"]),
        (
            &serde_json::json!("bytes"),
            &serde_json::json!(3_489_660_928u64)
        )
    );
    // TP0 failed first: it is the root.
    assert_eq!(run["root"], "TP0");
}

/// `then` needs an end line and a later phase; a grammar that says otherwise is refused
/// with the reason, by `grammars check` as by every command.
#[test]
fn then_on_a_line_that_does_not_end_its_phase_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let grammar = std::fs::read_to_string(format!("{DIR}/pagesrv.toml"))
        .unwrap()
        .replace(
            "edge = \"ends\"\nthen = \"cuda_graph\"",
            "edge = \"begins\"\nthen = \"cuda_graph\"",
        );
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, grammar).unwrap();
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .args(["grammars", "check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("then = `cuda_graph`") && err.contains("needs edge = \"ends\""),
        "{err}"
    );
}
