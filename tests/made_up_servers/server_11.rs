//! The tenth made-up server of issue 28 (`ferrite-serve`), written by trial 9 from
//! docs/grammars.md alone (`tests/fixtures/made-up-server-11/`: grammar.toml, the runs,
//! EXPECTED.md written before running the tool, QUESTIONS.md): Rust `tracing` lines,
//! PP2 x TP4 on two node directories, a `{:#?}` configuration printed by the launcher,
//! and a failing run whose PP1 TP2 cannot reach its bootstrap peer after
//! `nccl_socket_ifname` changed. Every expected value is read off the logs by hand
//! (line numbers are `grep -n`'s).

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-11";

/// failing/node-b/worker-pp1-tp2.log:2 is the `bootstrap connect failed` ERROR; the four
/// stage-0 ranks time out with `peer_rank=6` (6 = pp 1 · tp_size 4 + tp 2: PP1 TP2), and
/// the other three stage-1 ranks print `received SIGTERM` 0.7 s after the failure, naming
/// no one. The terminated ranks read "terminated after PP1 TP2", not "terminated of"
/// (trial 9's M5), and the consequences "consequence of PP1 TP2".
#[test]
fn the_bootstrap_failure_is_the_root_and_the_others_follow_it() {
    let (code, out) = common::fixture_run(DIR, "grammar.toml", &["summary", "failing", "--ranks"]);
    assert_eq!(code, Some(0), "{out}");
    let rows = out.replace("\n      ", " ").replace("\n  ", " ");
    assert!(
        rows.contains("root: PP1 TP2 failed in NCCL in dist_init (phase from event), failing/node-b/worker-pp1-tp2.log:2"),
        "{out}"
    );
    assert!(
        rows.contains("4/8 ranks: consequence (timeout in dist_init), after PP1 TP2"),
        "{out}"
    );
    assert!(
        rows.contains("3/8 ranks: terminated (signal in dist_init), after PP1 TP2"),
        "{out}"
    );
    assert!(
        rows.contains("PP0 TP0–PP0 TP3 (4 ranks) consequence of PP1 TP2: timeout in dist_init"),
        "{out}"
    );
    assert!(
        rows.contains("PP1 TP0, PP1 TP1, PP1 TP3 (3 ranks) terminated after PP1 TP2: signal in"),
        "{out}"
    );
    assert!(!out.contains("terminated of"), "{out}");
}
