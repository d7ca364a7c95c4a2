//! Trial 12 of issue 28 (`sandpiper`, `tests/fixtures/made-up-server-14/`, written from
//! docs/grammars.md alone): a C++ server's log4j lines, one CRLF file per rank, DP4 with
//! EP4 on the same four ranks and no TP tag, its configuration one JSON object. Rank 2
//! fails a checksum in weight_load (failing/rank-2.log:6); ranks 0, 1, 3 time out at a
//! barrier naming `rank 2` (rank-0.log:8, rank-1.log:8, rank-3.log:7). Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-14";

/// M1: the peers' `rank 2` is DP2 EP2 (`world = "across_replicas"`, one TP rank per
/// replica), not a rank of its own (`after rank2`, before).
#[test]
fn the_barrier_timeouts_follow_dp2_ep2() {
    let (code, out) = common::fixture_run(DIR, "grammar.toml", &["summary", "failing"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("3/4 ranks: consequence (timeout in weight_load), after DP2 EP2"),
        "{out}"
    );
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    for (rank, line) in [("DP0 EP0", 8), ("DP1 EP1", 8), ("DP3 EP3", 7)] {
        let f = &common::rank_entry(&s, rank)["failure"];
        assert_eq!(f["consequence_of"], "DP2 EP2", "{rank}");
        assert_eq!(f["line"], line, "{rank}");
    }
    assert_eq!(common::rank_entry(&s, "DP2 EP2")["failure"]["line"], 6);
}

/// M2: `syntax = "json"` reads the configuration and `diff` writes it as JSON.
#[test]
fn the_json_configuration_diffs_in_json() {
    let (code, out) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("config    model  \"/m/x\" -> \"/m/x-v2\"\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "cause     DP2 EP2 raised an exception in weight_load (failing/rank-2.log:6):"
        ),
        "{out}"
    );
}

/// Trial 12's note: the rank table cut `failed exception` to `failed exce…`; a
/// kind too long beside `failed` now stands alone.
#[test]
fn the_rank_tables_outcome_is_never_cut_inside_a_word() {
    // The cell is 12 columns at any width the table is drawn at (80 and over).
    let (_, out) = common::fixture_run(DIR, "grammar.toml", &["summary", "failing", "--ranks"]);
    assert!(
        out.contains("DP2 EP2      weight_load exception    256 MiB"),
        "{out}"
    );
    assert!(!out.contains("exce…"), "{out}");
}
