//! The servers taught by grammar files alone (`grammars/tgi.toml`, `trtllm.toml`,
//! `lmdeploy.toml`): a healthy and a failing start-up of each, written for this project in
//! each server's wording with our own values (`samples/<server>-*`). Every expected value
//! is read off those files by hand, as each comment says.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::load;

use rankscope::analysis::diff::{self, Status};
use rankscope::base::event::Rank;
use rankscope::model::{FailureKind, Outcome, Phase, Run};

fn phases(run: &Run, rank: u32) -> Vec<Phase> {
    run.rank(&Rank::tp(rank))
        .expect("rank")
        .phases
        .iter()
        .map(|p| p.phase)
        .collect()
}

fn outcome(run: &Run, rank: u32) -> Outcome {
    run.rank(&Rank::tp(rank)).expect("rank").outcome
}

#[test]
fn tgi_ranks_come_from_the_end_of_the_line() {
    // samples/tgi-tp2/launcher.log: `Starting shard rank=0|1` (lines 4-5), `Shard ready in
    // 15.43s rank=0` and `16.63s rank=1` (lines 10-11), `Connected` (line 15). The stamps
    // are RFC 3339 with microseconds: the run starts at 08:15:01.204118.
    let run = load("samples/tgi-tp2");
    assert!(run.ready);
    assert_eq!(
        run.start.map(|t| t.to_string()).as_deref(),
        Some("2026-04-02 08:15:01.204118")
    );
    assert_eq!(run.worker_ranks().count(), 2);
    for r in 0..2 {
        assert_eq!(outcome(&run, r), Outcome::Ready);
        assert_eq!(
            phases(&run, r),
            [Phase::Launch, Phase::WeightLoad, Phase::Ready]
        );
    }
    let tp1 = run.rank(&Rank::tp(1)).expect("TP1");
    // The printed duration is a figure; the measured one is 08:15:21.512 - 08:15:04.8815.
    let wl = tp1.phase(Phase::WeightLoad).expect("weight_load");
    assert_eq!(wl.printed_elapsed_s(), Some(16.63));
    assert_eq!(wl.duration_s(), Some(16.63));
    // The launcher's `Args { … }` is read as the configuration: num_shard: Some(2).
    let cfg = run
        .config
        .as_ref()
        .expect("Args line")
        .as_ref()
        .expect("parses");
    assert_eq!(
        cfg.config.get("num_shard"),
        Some(&rankscope::model::config::pyrepr::PyValue::Int(2))
    );
}

#[test]
fn tgi_shard_oom_is_the_cause_and_the_other_shard_terminated() {
    // samples/tgi-tp2-oom: shard 1's standard error dump ends in `torch.OutOfMemoryError:
    // CUDA out of memory. Tried to allocate 250.00 MiB … rank=1` (line 16) while loading
    // weights; `Terminating shard rank=0` (line 19). The launcher's Args differ in
    // cuda_memory_fraction, 1.0 -> 0.6.
    let b = load("samples/tgi-tp2");
    let c = load("samples/tgi-tp2-oom");
    assert_eq!(outcome(&c, 1), Outcome::Failed);
    assert_eq!(outcome(&c, 0), Outcome::Terminated);
    let (root, f) = c.root_failure().expect("a root");
    assert_eq!(root.rank, Rank::tp(1));
    assert_eq!((f.kind, f.phase), (FailureKind::Oom, Phase::WeightLoad));
    assert_eq!(f.origin.as_ref().map(|o| o.line), Some(16));
    // 250.00 MiB = 250 × 2^20 bytes.
    assert_eq!(
        f.fields.get("requested_bytes").and_then(|v| v.as_bytes()),
        Some(262_144_000)
    );
    let d = diff::diff(&b, &c);
    assert_eq!(d.status, Status::Failed);
    let cfg = d.config.as_ref().expect("both Args lines");
    assert_eq!(cfg.changed.len(), 1);
    assert_eq!(cfg.changed[0].key, "cuda_memory_fraction");
    let first = d.candidate.first_failure.as_ref().expect("first failure");
    assert_eq!(
        (first.0.to_string(), first.1, first.2),
        ("TP1".to_string(), FailureKind::Oom, Phase::WeightLoad)
    );
    // Neither launcher log prints a memory figure (`grep -c 'GiB\|MiB\|GB\|MB'
    // samples/tgi-tp2/launcher.log` is 0): the diff says there was nothing to compare,
    // not that nothing moved.
    assert!(d.figures.is_empty());
    let text = assert_cmd::Command::cargo_bin("rankscope")
        .expect("binary")
        .args([
            "diff",
            "samples/tgi-tp2",
            "samples/tgi-tp2-oom",
            "--width",
            "200",
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("cause     no memory figure printed by both runs, nothing to compare"),
        "{text}"
    );
    assert!(!text.contains("no figure moved"), "{text}");
}

#[test]
fn trtllm_stamps_and_rank_prefixes() {
    // samples/trtllm-tp2/server.log: `[11/30/2026-10:00:02] [TRT-LLM] [RANK 0] …` stamps
    // (MM/DD/YYYY); `Use 14.97 GB for model weights.` (GB is GiB: 14.97 × 2^30 =
    // 16,073,915,105.28); KV cache `Allocated 52.61 GiB … (812480)` on rank 0 and
    // `52.58 GiB … (812000)` on rank 1; uvicorn's `Application startup complete.`
    let run = load("samples/trtllm-tp2");
    assert!(run.ready);
    // The log's first line, `[11/30/2026-10:00:01] [TRT-LLM] [I] Starting TensorRT-LLM
    // init.`, is where the run starts (it was the first rank's line, 10:00:02).
    assert_eq!(
        run.start.map(|t| t.to_string()).as_deref(),
        Some("2026-11-30 10:00:01")
    );
    // The same in the failed run, whose log begins 10:02:10 and whose first rank's stamp
    // is 10:02:17.
    let failed = load("samples/trtllm-tp2-nccl");
    assert_eq!(
        failed.start.map(|t| t.to_string()).as_deref(),
        Some("2026-11-30 10:02:10")
    );
    for r in 0..2 {
        assert_eq!(outcome(&run, r), Outcome::Ready);
        let rr = run.rank(&Rank::tp(r)).expect("rank");
        let mem = rr.figure(Phase::WeightLoad, "mem_usage").expect("weights");
        assert_eq!(mem.value.as_bytes(), Some(16_073_915_105));
    }
    let tokens = |r: u32| {
        run.rank(&Rank::tp(r))
            .and_then(|x| x.figure(Phase::KvCache, "tokens"))
            .and_then(|f| f.value.as_i64())
    };
    assert_eq!((tokens(0), tokens(1)), (Some(812_480), Some(812_000)));
    // 52.58 × 2^30 = 56,457,345,105.92
    let kv1 = run
        .rank(&Rank::tp(1))
        .and_then(|x| x.figure(Phase::KvCache, "kv_size"))
        .and_then(|f| f.value.as_bytes());
    assert_eq!(kv1, Some(56_457_345_106));
}

#[test]
fn trtllm_nccl_failure_names_the_rank() {
    // samples/trtllm-tp2-nccl: rank 1 prints `NCCL error: unhandled system error` (line
    // 4) after `Rank 1 is using GPU 1`; mpirun then says `MPI_ABORT was invoked on rank 1`.
    let b = load("samples/trtllm-tp2");
    let c = load("samples/trtllm-tp2-nccl");
    let (root, f) = c.root_failure().expect("a root");
    assert_eq!(root.rank, Rank::tp(1));
    assert_eq!((f.kind, f.phase), (FailureKind::Nccl, Phase::DistInit));
    assert_eq!(f.origin.as_ref().map(|o| o.line), Some(4));
    assert_eq!(outcome(&c, 0), Outcome::Terminated);
    let d = diff::diff(&b, &c);
    assert_eq!(d.status, Status::Failed);
    let first = d.candidate.first_failure.as_ref().expect("first failure");
    assert_eq!(
        (first.0.to_string(), first.1, first.2),
        ("TP1".to_string(), FailureKind::Nccl, Phase::DistInit)
    );
}

#[test]
fn lmdeploy_kv_budget_grows_and_the_cache_does_not_fit() {
    // samples/lmdeploy-tp1{,-oom}: `cache_max_entry_count=0.8` -> `0.95` in the engine
    // config; `available cache memory: 42.81 GiB` -> `50.84 GiB`; the failing run's cache
    // allocation raises `No enough gpu memory for kv cache.` with a torch OOM of 1.50 GiB
    // whose frames name `_allocate_cache` (kv_cache). Stamps carry milliseconds after a
    // comma (`14:00:03,120`).
    let b = load("samples/lmdeploy-tp1");
    let c = load("samples/lmdeploy-tp1-oom");
    assert!(b.ready);
    assert_eq!(
        b.start.map(|t| t.to_string()).as_deref(),
        Some("2026-05-06 14:00:03.120")
    );
    assert_eq!(outcome(&b, 0), Outcome::Ready);
    assert_eq!(
        phases(&b, 0),
        [
            Phase::Launch,
            Phase::WeightLoad,
            Phase::KvCache,
            Phase::CudaGraph,
            Phase::Ready
        ]
    );
    let (root, f) = c.root_failure().expect("a root");
    assert_eq!(root.rank, Rank::tp(0));
    assert_eq!((f.kind, f.phase), (FailureKind::Oom, Phase::KvCache));
    let d = diff::diff(&b, &c);
    assert_eq!(d.status, Status::Failed);
    let cfg = d.config.as_ref().expect("both configs");
    assert_eq!(cfg.changed.len(), 1);
    assert_eq!(cfg.changed[0].key, "cache_max_entry_count");
    let div = d.first_divergence.as_ref().expect("a divergence");
    assert_eq!((div.phase, div.figure.name()), (Phase::KvCache, "kv_avail"));
    // Each side rounded to bytes first: 50.84 × 2^30 = 54,589,034,332.16 and
    // 42.81 × 2^30 = 45,966,887,485.44, so 54,589,034,332 - 45,966,887,485.
    assert_eq!(div.delta.median, 8_622_146_847.0);
}
