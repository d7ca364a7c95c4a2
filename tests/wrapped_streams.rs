//! Lines behind a wrapper (kubectl's `[pod/NAME/CONTAINER] `, docker compose's
//! `NAME  | `, journald's `Mon DD HH:MM:SS host unit[pid]: `, RFC 3339 stamps) are read as
//! the server's own, and the wrapper names the node: one stream that interleaves two pods
//! or two compose services is a two-node run.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

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

fn tp(range: std::ops::Range<u32>) -> Vec<Rank> {
    range.map(Rank::tp).collect()
}

/// `tests/fixtures/wrap-kubectl-lws/stream.log`: `kubectl logs --prefix` over the two pods
/// of a LeaderWorkerSet, SGLang TP8 with `nnodes=2`: pod `wren-lws-0` runs TP0–TP3 (its
/// server_args says node_rank=0), pod `wren-lws-0-1` TP4–TP7. Every rank reaches graph
/// capture end (lines 63–70) and the leader prints the ready line (72).
#[test]
fn kubectl_prefixed_pods_are_two_nodes() {
    let run = load("tests/fixtures/wrap-kubectl-lws");
    let names: Vec<&str> = run.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["wren-lws-0", "wren-lws-0-1"]);
    assert_eq!(run.nodes[0].ranks, tp(0..4));
    assert_eq!(run.nodes[1].ranks, tp(4..8));
    assert_eq!(run.nodes[0].node_rank, Some(0));
    assert_eq!(run.nodes[1].node_rank, Some(1));
    assert!(run.nodes[0].reference);
    // Both nodes' stamps agree at the barrier exits: offset within one stamp step.
    let off = run.nodes[1]
        .offset
        .as_ref()
        .expect("an offset for the second pod");
    assert!(off.lo_ms <= 0 && off.hi_ms >= 0, "{off:?}");
    assert_eq!(run.ranks.len(), 8);
    assert!(run.ready);
    assert!(run.ranks.iter().all(|r| r.outcome == Outcome::Ready));
    // Nothing behind the wrapper was left unread.
    let unknown: u64 = run.sources.iter().map(|s| s.counts.unknown).sum();
    assert_eq!(unknown, 0);
}

/// `tests/fixtures/wrap-compose-2node/stream.log`: docker compose with two services,
/// `sgl-head-1` (TP0, TP1; node_rank=0) and `sgl-worker-1` (TP2, TP3). TP3 runs out of
/// memory capturing graphs (its traceback, every line behind the compose prefix, ends in
/// the OOM on line 36); the worker's launcher takes TP2 down (line 38); ten minutes
/// later the head's watchdogs time out in the all-reduce (lines 39, 40).
#[test]
fn compose_services_are_two_nodes_and_the_failure_is_read_through_the_wrapper() {
    let run = load("tests/fixtures/wrap-compose-2node");
    let names: Vec<&str> = run.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["sgl-head-1", "sgl-worker-1"]);
    assert_eq!(run.nodes[0].ranks, tp(0..2));
    assert_eq!(run.nodes[1].ranks, tp(2..4));
    assert_eq!(run.root, Some(Rank::tp(3)));
    let outcome = |n: u32| {
        let r = run
            .ranks
            .iter()
            .find(|r| r.rank == Rank::tp(n))
            .expect("rank");
        (
            r.outcome,
            r.failure
                .as_ref()
                .and_then(|f| f.origin.as_ref())
                .map(|o| o.line),
        )
    };
    assert_eq!(outcome(3), (Outcome::Failed, Some(36)));
    assert_eq!(outcome(2), (Outcome::Terminated, Some(38)));
    assert_eq!(outcome(0), (Outcome::Consequence, Some(39)));
    assert_eq!(outcome(1), (Outcome::Consequence, Some(40)));
}

/// One compose service (the common case) stays a single-node run.
#[test]
fn one_wrapped_service_is_one_node() {
    let run = load("tests/verdicts/vllm_v1_010_compose_ansi_crlf_ready.log");
    assert!(run.nodes.len() <= 1, "{:?}", run.nodes);
}

/// kubectl interleaves the pods' lines one by one: pod b's records (lines 6, 9) fall inside
/// pod a's traceback (lines 5–10). The traceback is still a's, and its closing OOM line
/// (10), which names no rank of its own, is TP1's failure, in weight_load (its frames).
#[test]
fn a_traceback_interrupted_by_another_pods_records_is_still_its_own() {
    let text = "\
[pod/kite-0/sglang] [2026-03-02 10:00:01 TP0] Load weight begin. avail mem=70.10 GB
[pod/kite-0/sglang] [2026-03-02 10:00:01 TP1] Load weight begin. avail mem=70.10 GB
[pod/kite-0-1/sglang] [2026-03-02 10:00:01 TP2] Load weight begin. avail mem=70.10 GB
[pod/kite-0-1/sglang] [2026-03-02 10:00:01 TP3] Load weight begin. avail mem=70.10 GB
[pod/kite-0/sglang] [2026-03-02 10:00:09 TP1] Scheduler hit an exception: Traceback (most recent call last):
[pod/kite-0-1/sglang] [2026-03-02 10:00:09 TP2] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=40.02 GB, mem usage=30.08 GB.
[pod/kite-0/sglang]   File \"/opt/sglang/srt/model_executor/model_runner.py\", line 401, in load_model
[pod/kite-0/sglang]     self.model = get_model(
[pod/kite-0-1/sglang] [2026-03-02 10:00:09 TP3] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=40.02 GB, mem usage=30.08 GB.
[pod/kite-0/sglang] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 1 has a total capacity of 79.15 GiB of which 512.00 MiB is free.
";
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("stream.log"), text).expect("write");
    let run = load(dir.path().to_str().expect("utf-8 path"));
    let tp1 = run
        .ranks
        .iter()
        .find(|r| r.rank == Rank::tp(1))
        .expect("TP1");
    let f = tp1.failure.as_ref().expect("TP1 failed");
    assert_eq!(f.origin.as_ref().map(|o| o.line), Some(10));
    assert_eq!(f.kind, rankscope::model::FailureKind::Oom);
    assert_eq!(f.phase, rankscope::model::Phase::WeightLoad);
    assert_eq!(run.root, Some(Rank::tp(1)));
    let names: Vec<&str> = run.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["kite-0", "kite-0-1"]);
}

/// Wordings anchored at the start of a record (a traceback's closing `ValueError: …`, a
/// bare c10 `[W…]`, a glog `E…` line) are read behind a compose prefix too (lines 5–7).
#[test]
fn anchored_wordings_are_read_behind_a_wrapper() {
    let text = "\
llm-1  | [2026-01-02 10:00:01 TP0] Load weight begin. avail mem=70.00 GB
llm-1  | [2026-01-02 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):
llm-1  |   File \"/x/model_runner.py\", line 3, in load_model
llm-1  |     raise ValueError(\"bad shard\")
llm-1  | ValueError: bad shard
llm-1  | [W102 10:00:06.123456789 ProcessGroupNCCL.cpp:1538] Warning: WARNING: process group has NOT been destroyed.
llm-1  | E0102 10:00:06.123456    9131 ucx_utils.cpp:601] VRAM memory is detected as host by UCX.
";
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("stream.log"), text).expect("write");
    let run = load(dir.path().to_str().expect("utf-8 path"));
    let kind_at = |line: u64| {
        run.events
            .iter()
            .find(|e| e.origin.line == line)
            .map(|e| e.kind.as_str())
    };
    assert_eq!(kind_at(5), Some("error"));
    assert_eq!(kind_at(6), Some("warning"));
    assert_eq!(kind_at(7), Some("error"));
    let tp0 = run
        .ranks
        .iter()
        .find(|r| r.rank == Rank::tp(0))
        .expect("TP0");
    let f = tp0.failure.as_ref().expect("TP0 failed");
    // The closing exception line, with its type, is the evidence.
    assert_eq!(f.origin.as_ref().map(|o| o.line), Some(5));
}
