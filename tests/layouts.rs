//! Runs laid out in more than one dimension: a global rank number (c10's `[rankN]:`, a
//! monitored barrier's `Ranks N failed`) names the rank the layout puts there, never a rank
//! of its own.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use rankscope::analysis::align::phase_stats;
use rankscope::base::event::Rank;
use rankscope::grammar::GrammarSet;
use rankscope::model::{Outcome, Run};
use rankscope::session::{LoadOptions, Session};

fn load(path: &str) -> Run {
    let gs = GrammarSet::builtin().expect("built-in grammars compile");
    Session::open(
        &gs,
        &[PathBuf::from(path)],
        &LoadOptions::default(),
        &|_, _| {},
    )
    .expect("run loads")
    .run
}

fn rank(s: &str) -> Rank {
    Rank::parse_tags(s).expect("tags")
}

/// `tests/fixtures/pptp-sglang/server.log`, SGLang PP2 × TP4 (tags `PP{p} TP{t}`,
/// `pp_size=2, tp_size=4` in server_args). PP1 TP2 runs out of memory creating the KV pool
/// (line 43). Rank 0's monitored barrier (lines 45, 51) names rank 6 = 1 · 4 + 2 = PP1 TP2;
/// ranks 1–5 and 7 (lines 52–57) report errors from rank 0 = PP0 TP0, who followed PP1 TP2.
/// c10 `[W…]` warnings from ranks 0, 3 and 5 (lines 58–60) come 30 s after everything
/// else: before, each became a rank `rankN` of its own, a launch straggler.
#[test]
fn pp2_tp4_run_has_eight_ranks_and_seven_consequences() {
    let run = load("tests/fixtures/pptp-sglang");
    let names: Vec<String> = run.ranks.iter().map(|r| r.rank.to_string()).collect();
    let expected: Vec<String> = (0..2)
        .flat_map(|p| (0..4).map(move |t| format!("PP{p} TP{t}")))
        .collect();
    assert_eq!(names, expected);
    assert_eq!(run.root, Some(rank("PP1 TP2")));
    let root = run
        .ranks
        .iter()
        .find(|r| r.rank == rank("PP1 TP2"))
        .expect("root rank");
    assert_eq!(root.outcome, Outcome::Failed);
    assert_eq!(
        root.failure
            .as_ref()
            .and_then(|f| f.origin.as_ref())
            .map(|o| o.line),
        Some(43)
    );
    let consequences = run
        .ranks
        .iter()
        .filter(|r| r.outcome == Outcome::Consequence)
        .filter(|r| {
            r.failure.as_ref().and_then(|f| f.consequence_of.as_ref()) == Some(&rank("PP1 TP2"))
        })
        .count();
    assert_eq!(consequences, 7);
    // Each [rankN]: line is the rank the layout puts at N: rank 5 = PP1 TP1 (line 56).
    let pp1_tp1 = run
        .ranks
        .iter()
        .find(|r| r.rank == rank("PP1 TP1"))
        .expect("PP1 TP1");
    assert_eq!(
        pp1_tp1
            .failure
            .as_ref()
            .and_then(|f| f.origin.as_ref())
            .map(|o| o.line),
        Some(56)
    );
    for p in phase_stats(&run) {
        assert!(
            p.stragglers.is_empty(),
            "{:?}: stragglers {:?}",
            p.phase,
            p.stragglers
        );
    }
}

/// vLLM numbers one world across its data-parallel replicas (`world = "across_replicas"`
/// in grammars/vllm.toml): in DP2 × TP2, `[rank3]:` is 1 · 2 + 1 = DP1 TP1. SGLang's
/// replicas are worlds of their own, so there the same number would name no rank.
#[test]
fn vllm_global_ranks_span_the_data_parallel_replicas() {
    let mut text = String::new();
    for (dp, tp, pid) in [(0, 0, 610), (0, 1, 611), (1, 0, 710), (1, 1, 711)] {
        text.push_str(&format!(
            "(Worker_DP{dp}_TP{tp} pid={pid}) INFO 06-02 08:00:10 [gpu_model_runner.py:2602] Starting to load model /m/owl-30b...\n"
        ));
    }
    for (dp, tp, pid) in [(0, 0, 610), (0, 1, 611), (1, 0, 710), (1, 1, 711)] {
        text.push_str(&format!(
            "(Worker_DP{dp}_TP{tp} pid={pid}) INFO 06-02 08:00:40 [default_loader.py:267] Loading weights took 29.{tp}0 seconds\n"
        ));
    }
    // Line 9: printed by rank 3's process straight to stderr, without the worker prefix.
    text.push_str("[rank3]:[W602 08:00:41.118204377 ProcessGroupNCCL.cpp:1538] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources.\n");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("server.log"), text).expect("write");
    let run = load(dir.path().to_str().expect("utf-8 path"));
    let names: Vec<String> = run.ranks.iter().map(|r| r.rank.to_string()).collect();
    assert_eq!(names, ["DP0 TP0", "DP0 TP1", "DP1 TP0", "DP1 TP1"]);
    let warning = run
        .events
        .iter()
        .find(|e| e.origin.line == 9)
        .expect("the c10 warning is an event");
    assert_eq!(warning.kind, "warning");
    assert_eq!(warning.rank, Some(rank("DP1 TP1")));
}
