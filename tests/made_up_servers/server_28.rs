//! Trial 26 of issue 28 (`skua-serve`, `tests/fixtures/made-up-server-28/`, written from
//! docs/grammars.md alone): an SGLang fork, TP8 in one file. `mem_static_frac 0.85 ->
//! 0.93` (config line 2); r5 runs out of memory capturing graphs (line 88, the end of its
//! tagged traceback); the launcher echoes its death (line 89, `scheduler r5 (pid 48215)
//! died with exit code 1`: `kind = "error"`, `set.outcome = "consequence"`, `peer_rank`),
//! then kills the others (line 90, `sending SIGKILL to 7 remaining schedulers`,
//! `set.outcome = "terminated"`). Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-28";

/// M1, Q6: the ranks whose logs simply end quote the launcher's kill line (90), not its
/// echo of TP5's death (89), and take its kind (`signal`, not the echo's `exception`);
/// the echo names TP5 in `launcher_failures[].consequence_of`, as its `peer_rank` says.
#[test]
fn the_killed_ranks_quote_the_kill_line_and_the_echo_names_its_rank() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "--ranks", "failing"]);
    let text = common::flat(&text);
    assert!(
        text.contains("7/8 ranks: terminated (signal in cuda_graph), after TP5"),
        "{text}"
    );
    assert!(
        text.contains(
            "terminated after TP5: signal in cuda_graph failing/skua.log:90 (one line for all 7)"
        ),
        "{text}"
    );
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let launcher: Vec<(u64, &str, &str)> = s["run"]["launcher_failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["line"].as_u64().unwrap(),
                f["outcome"].as_str().unwrap(),
                f["consequence_of"].as_str().unwrap_or("null"),
            )
        })
        .collect();
    assert_eq!(
        launcher,
        vec![(89, "consequence", "TP5"), (90, "terminated", "TP5")]
    );
}

/// `diff --json`'s skip remedy says the value now (`disable_decode_graphs=False`, config
/// line 2) beside the one proposed.
#[test]
fn a_skip_remedy_says_the_value_now() {
    let s = common::fixture_json(
        DIR,
        "grammar.toml",
        &["diff", "--json", "baseline", "failing"],
    );
    let skip = s["remedies"]["remedies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "skip_phase")
        .unwrap();
    assert_eq!(
        (
            skip["setting"].as_str(),
            skip["from"].as_str(),
            skip["to"].as_str()
        ),
        (Some("disable_decode_graphs"), Some("False"), Some("True"))
    );
}

/// The events table shows a millisecond stamp to the millisecond (line 88:
/// `2026-12-03 11:02:43.215`).
#[test]
fn events_show_millisecond_stamps() {
    let (_, text) =
        common::fixture_run(DIR, "grammar.toml", &["events", "--kind", "oom", "failing"]);
    assert!(text.starts_with("TIME          RANK"), "{text}");
    assert!(text.contains("\n11:02:43.215  TP5          oom"), "{text}");
}
