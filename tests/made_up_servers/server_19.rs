//! Trial 17 of issue 28 (`pelican-serve`, `tests/fixtures/made-up-server-19/`, written
//! from docs/grammars.md alone): a Python server started by `torchrun --nnodes 2
//! --nproc-per-node 4 --tee 3`, TP8, one log per node directory, every worker line behind
//! torchrun's local-rank tag (`[default1]:`, the same on both nodes; the grammar captures
//! it as the pid, and each worker's `rank 5 of 8` line assigns its rank). In `failing/`
//! (`dist_iface` 'ens5' → 'ens9') global rank 5 (node-b's `[default1]`) raises NCCL's
//! `DistBackendError` in dist init (line 24, `Bootstrap : no socket interface found
//! matching ens9` at 27); the other seven ranks' c10 watchdogs time out at 09:24:03
//! (`[defaultL]:[rankN]:[E1202 09:24:03.5… ProcessGroupNCCL.cpp:616] …`, node-b lines 28,
//! 30, 32); torchrun's agent prints its `ChildFailedError: ` summary, a line that ends in a
//! space (node-a 31, node-b 42). `grammar-v1.toml` is the trial's first grammar, before
//! its work-arounds: a literal `"ChildFailedError: "` with its trailing space, and no
//! watchdog event of its own. Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-19";

use common::flat;

/// The root, its cause and the others' consequence, from the trial's final grammar.
#[test]
fn rank_5_fails_in_nccl_and_the_diff_names_the_interface() {
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let tp5 = &common::rank_entry(&s, "TP5")["failure"];
    assert_eq!(tp5["kind"], "nccl");
    assert_eq!(tp5["phase"], "dist_init");
    assert_eq!(tp5["phase_from"], "frames");
    assert_eq!(tp5["source"], "failing/node-b/torchrun.log");
    assert_eq!(tp5["line"], 24);
    for rank in ["TP0", "TP1", "TP2", "TP3", "TP4", "TP6", "TP7"] {
        let f = &common::rank_entry(&s, rank)["failure"];
        assert_eq!(f["outcome"], "consequence", "{rank}");
        assert_eq!(f["consequence_of"], "TP5", "{rank}");
    }
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    assert!(
        flat(&text).contains(
            "likely trigger: dist_iface 'ens5' -> 'ens9' (the failure holds \"socket \
             interface\": \"Bootstrap : no socket interface found matching ens9\", \
             failing/node-b/torchrun.log:27)"
        ),
        "{text}"
    );
}

/// M6: PyTorch's watchdog line under torchrun's tag is timed by c10's prefix, which the
/// built-in event's `.cpp:` literal begins in (it was untimed: the bare `[rank4]:`
/// prefix, ending before the literal, governed).
#[test]
fn the_watchdog_line_under_a_launcher_tag_has_c10s_time() {
    let e = common::fixture_json(DIR, "grammar-v1.toml", &["events", "--json", "failing"]);
    let tp4 = (e["events"].as_array().unwrap().iter())
        .find(|e| e["kind"] == "error" && e["rank"] == "TP4")
        .unwrap();
    assert_eq!(tp4["line"], 28);
    assert_eq!(tp4["grammar"], "pytorch");
    // c10 prints `E1202 09:24:03.500123456`; the built-in prefix captures the time of day
    // with its fraction (JSON keeps microseconds), dated by the file's dated lines
    // (2026-12-02).
    assert_eq!(tp4["ts"]["at"], "2026-12-02T09:24:03.500123-00:00");
}

/// M2: a literal that ends in a space finds the line that ends in it (the scan trims a
/// line's trailing white space; the grammar's literals are trimmed the same way).
#[test]
fn a_literal_with_a_trailing_space_finds_its_line() {
    let e = common::fixture_json(DIR, "grammar-v1.toml", &["events", "--json", "failing"]);
    let found: Vec<(&str, i64)> = (e["events"].as_array().unwrap().iter())
        .filter(|e| e["kind"] == "child_failed")
        .map(|e| (e["source"].as_str().unwrap(), e["line"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        found,
        [
            ("failing/node-a/torchrun.log", 31),
            ("failing/node-b/torchrun.log", 42)
        ]
    );
}

/// M7: an end skew of 1.0 s with millisecond stamps and a ±0.02 s clock is no straggler
/// because lateness under a second never is; the summary says so, not that it is within
/// the stamps' uncertainty.
#[test]
fn no_straggler_says_the_one_second_floor() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "baseline"]);
    let text = flat(&text);
    assert!(
        text.contains("weight_load 8/8 38.4 / 38.9 / 39.4 s 1.0 s"),
        "{text}"
    );
    assert!(
        text.contains(
            "no straggler: no rank ends a phase more than 1 s after the others, nor past the \
             stamps' step and the clocks' uncertainty"
        ),
        "{text}"
    );
}
