//! Trial 15 of issue 28 (`sable-serve`, `tests/fixtures/made-up-server-17/`, written from
//! docs/grammars.md alone): a fork of SGLang, TP4, one stdout with NCCL's lines between
//! the ranks'. In `failing/` (`disable_custom_all_reduce` True → False) TP2's process
//! (pid 5103, TP2 by its NCCL init line 12) prints `NCCL WARN Cuda failure 'invalid
//! argument' during custom allreduce IPC registration` (line 35, NCCL's source line
//! `include/alloc.h:125` before `NCCL WARN`), then a traceback (37–45) closed by a bare
//! `torch.distributed.DistBackendError` (46) whose message goes on to line 49; TP0, TP1
//! and TP3 time out 120 s later (50–52). `failing-nowarn/` is ours: the same log without
//! line 35, so the words naming the trigger are only in the traceback's message (line 48
//! there). Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-17";

/// M7: NCCL's WARN names its source line before `NCCL WARN` (as real NCCL does); the
/// prefix reads it, so the line is pid 5103's — TP2's failure, not a launcher's.
#[test]
fn the_nccl_warn_is_tp2s_failure() {
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let tp2 = &common::rank_entry(&s, "TP2")["failure"];
    assert_eq!(tp2["kind"], "nccl");
    assert_eq!(tp2["line"], 35);
    assert_eq!(tp2["phase"], "cuda_graph");
    let launcher: Vec<i64> = (s["run"]["launcher_failures"].as_array().unwrap().iter())
        .map(|f| f["line"].as_i64().unwrap())
        .collect();
    assert_eq!(launcher, [53]);
    for rank in ["TP0", "TP1", "TP3"] {
        let f = &common::rank_entry(&s, rank)["failure"];
        assert_eq!(f["consequence_of"], "TP2", "{rank}");
        assert_eq!(f["kind"], "timeout", "{rank}");
    }
}

/// A non-memory failure: `diff` names the changed setting whose words the failure holds
/// and claims no memory cause and no memory remedy.
#[test]
fn diff_gives_the_nccl_failure_its_setting_not_a_memory_cause() {
    let d = common::fixture_json(
        DIR,
        "grammar.toml",
        &["diff", "--json", "baseline", "failing"],
    );
    let fc = &d["failure_cause"];
    assert_eq!(fc["kind"], "nccl");
    assert_eq!(fc["suspects"][0]["setting"], "disable_custom_all_reduce");
    assert_eq!(fc["suspects"][0]["why"], "named");
    assert!(d["first_divergence"].is_null(), "{}", d["first_divergence"]);
    assert!(d["remedies"]["deficit"].is_null());
    assert_eq!(d["remedies"]["remedies"].as_array().unwrap().len(), 0);
}

/// M6: a word found in the traceback's message is quoted at its own line (48: `Cuda
/// failure … custom allreduce …`, three lines after the exception line 45), not at the
/// failure's line.
#[test]
fn a_trigger_in_the_traceback_message_is_cited_at_its_own_line() {
    let d = common::fixture_json(
        DIR,
        "grammar.toml",
        &["diff", "--json", "baseline", "failing-nowarn"],
    );
    let fc = &d["failure_cause"];
    assert_eq!(fc["line"], 45);
    let s = &fc["suspects"][0];
    assert_eq!(s["found"], "custom allreduce");
    assert_eq!(s["line"], 48);
    assert_eq!(
        s["said"],
        "Cuda failure 'invalid argument' during custom allreduce IPC registration"
    );
}
