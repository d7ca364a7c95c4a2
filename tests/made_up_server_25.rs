//! Trial 23 of issue 28 (`finchd`, `tests/fixtures/made-up-server-25/`, written from
//! docs/grammars.md alone): an LMDeploy fork whose C++ engine prints an OOM line with the
//! size it asked for (line 30: `tried to allocate 3489660928 bytes … on device 2`), then
//! the Python side's bare traceback (31–38) closes on a second OOM line without a size
//! (39). `grammar-frames.toml` adds the trial's `[[frame_phase]]` for `_create_buffers`
//! (phase kv_cache). Values by `grep -n`.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

const DIR: &str = "tests/fixtures/made-up-server-25";

/// Q1: the kept failure (line 30, it says what it asked for) takes the traceback of the
/// rank's other OOM line when it printed none, and the phase its frames give: it had no
/// traceback, so a `[[frame_phase]]` could never place it.
#[test]
fn the_sized_oom_takes_the_later_lines_traceback() {
    let s = common::fixture_json(
        DIR,
        "grammar-frames.toml",
        &["summary", "--json", "failing"],
    );
    let f = &common::rank_entry(&s, "TP2")["failure"];
    assert_eq!(f["line"], 30);
    assert_eq!(f["fields"]["requested_bytes"]["bytes"], 3_489_660_928_i64);
    assert_eq!(
        (f["phase"].as_str(), f["phase_from"].as_str()),
        (Some("kv_cache"), Some("frames"))
    );
    let tb = f["traceback"].as_str().unwrap();
    assert!(tb.contains("in _create_buffers"), "{tb}");
    // Without the frame table the phase stays where the rank was.
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let f = &common::rank_entry(&s, "TP2")["failure"];
    assert_eq!(f["phase"], "cuda_graph");
    assert!(f["traceback"]
        .as_str()
        .is_some_and(|t| t.contains("allocate_runtime_buffers")));
}

/// M3: the three ranks the exit line (40) terminated share that one line: it is not
/// "TP0, and 2 more lines".
#[test]
fn one_line_that_ended_three_ranks_is_one_line() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "--ranks", "failing"]);
    let text = common::flat(&text);
    assert!(
        text.contains("failing/finchd.log:40 (one line for all 3)"),
        "{text}"
    );
    assert!(!text.contains("and 2 more lines"), "{text}");
}
