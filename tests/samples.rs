//! The demo runs (real H200 start-ups in `samples/`), with every expected value checked
//! by hand against the logs: `grep 'Init torch distributed ends' samples/tp8-baseline/server.log`
//! shows `mem usage=0.60 GB` on all eight ranks (0.60 × 2^30 = 644,245,094.4 bytes), the
//! `max_total_num_tokens=` lines say 91141, and the custom-AR tracebacks end in
//! `Tried to allocate 20.00 MiB` (20 × 2^20 = 20,971,520 bytes).

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;
use common::load;

use rankscope::analysis::diff::{self, DeltaClass, Status};
use rankscope::base::event::Rank;
use rankscope::grammar::GrammarSet;
use rankscope::model::{FailureKind, Phase};
use rankscope::session::{LoadOptions, Session};

#[test]
fn baseline_all_ranks_ready_with_hand_checked_figures() {
    let run = load("samples/tp8-baseline");
    assert_eq!(run.ranks.len(), 8);
    for (i, r) in run.ranks.iter().enumerate() {
        assert_eq!(r.rank, Rank::tp(i as u32));
        assert!(r.reached_ready, "{} should reach ready", r.rank);
        assert!(r.failure.is_none());
        let mem = r
            .figure(Phase::DistInit, "mem_usage")
            .expect("dist_init mem usage");
        assert_eq!(mem.value.as_bytes(), Some(644_245_094));
        // 0.01 GiB, the step of a two-decimal GB figure.
        assert_eq!(mem.value.resolution(), 10_737_418);
        let tokens = r.figure(Phase::KvCache, "tokens").expect("KV tokens");
        assert_eq!(tokens.value.as_i64(), Some(91_141));
    }
    // server.log and stdout.txt hold the same console stream: events are counted once.
    let dist_ends = run
        .events
        .iter()
        .filter(|e| e.kind == "dist_init_end")
        .count();
    assert_eq!(dist_ends, 8);
}

#[test]
fn custom_ar_all_ranks_oom_in_cuda_graph() {
    let run = load("samples/tp8-custom-ar");
    assert!(!run.ready);
    assert_eq!(run.ranks.len(), 8);
    for r in &run.ranks {
        assert!(!r.reached_ready);
        let f = r.failure.as_ref().expect("every rank fails");
        assert_eq!(f.kind, FailureKind::Oom, "{}", r.rank);
        assert_eq!(f.phase, Phase::CudaGraph, "{}", r.rank);
        assert_eq!(
            f.fields.get("requested_bytes").and_then(|v| v.as_bytes()),
            Some(20_971_520)
        );
        // "14.00 GiB allowed; … and 131.96 MiB is reserved by PyTorch but unallocated"
        assert_eq!(
            f.fields.get("allowed_bytes").and_then(|v| v.as_bytes()),
            Some(15_032_385_536)
        );
        assert_eq!(
            f.fields
                .get("reserved_unallocated_bytes")
                .and_then(|v| v.as_bytes()),
            Some(138_370_089)
        );
        let tb = f.traceback.as_deref().expect("traceback attached");
        assert!(tb.contains("in capture_graphs"), "{tb}");
        assert_eq!(r.last_phase, Phase::CudaGraph);
    }
    // TP2's traceback is the first in the file (server.log line 82).
    let out = diff::outcome(&run);
    assert_eq!(
        out.first_failure.as_ref().map(|f| f.0.clone()),
        Some(Rank::tp(2))
    );
    assert_eq!(out.groups.len(), 1);
    assert_eq!(
        rankscope::render::text::outcome::failure_group(&out.groups[0]),
        "8/8 ranks: oom in cuda_graph, tried to allocate 20.00 MiB, 14.00 GiB allowed, 13.86 GiB allocated, 131.96 MiB reserved but unallocated"
    );
}

#[test]
fn per_rank_files_read_like_the_interleaved_log() {
    // tp8-custom-ar-fixed has server.log, stdout.txt and rank0..7.log: the same events.
    let run = load("samples/tp8-custom-ar-fixed");
    assert_eq!(run.ranks.len(), 8);
    assert!(run.ranks.iter().all(|r| r.reached_ready));
    for r in &run.ranks {
        assert_eq!(
            r.figure(Phase::KvCache, "tokens")
                .and_then(|f| f.value.as_i64()),
            Some(90_544)
        );
    }
    let single = load("samples/tp8-custom-ar-fixed/rank3.log");
    assert_eq!(single.ranks.len(), 1);
    assert_eq!(single.ranks[0].rank, Rank::tp(3));
}

#[test]
fn diff_custom_ar_names_config_divergence_and_failure() {
    let b = load("samples/tp8-baseline");
    let c = load("samples/tp8-custom-ar");
    let d = diff::diff(&b, &c);
    assert_eq!(d.status, Status::Failed);
    assert_eq!(d.status.exit_code(), 1);
    let cfg = d.config.as_ref().expect("both runs print server_args");
    assert_eq!(cfg.changed.len(), 1);
    assert_eq!(cfg.changed[0].key, "enable_custom_allreduce");
    assert_eq!(cfg.changed[0].old.to_python_repr(), "False");
    assert_eq!(cfg.changed[0].new.to_python_repr(), "True");
    let div = d.first_divergence.as_ref().expect("a divergence");
    assert_eq!(div.phase, Phase::DistInit);
    assert_eq!(div.figure, "mem_usage");
    assert_eq!(div.class, DeltaClass::Systematic);
    assert_eq!((div.ranks_moved, div.ranks_compared), (8, 8));
    // 0.64 GB − 0.60 GB = 687,194,767 − 644,245,094 bytes.
    assert_eq!(div.delta.median, 42_949_673.0);
    assert_eq!(div.delta.min, div.delta.max);
    assert_eq!(d.candidate.failed_ranks, 8);
    let g = &d.candidate.groups[0];
    assert_eq!(
        (g.kind, g.phase, g.oom.requested.map(|p| p.bytes)),
        (FailureKind::Oom, Phase::CudaGraph, Some(20_971_520))
    );
    let e = d.effect.as_ref().expect("an effect");
    assert_eq!(e.kv_tokens_delta, Some(0));
    assert_eq!(e.avail_after_pool, Some((687_194_767, 644_245_094)));
}

#[test]
fn diff_custom_ar_fixed_is_a_capacity_regression() {
    let b = load("samples/tp8-baseline");
    let c = load("samples/tp8-custom-ar-fixed");
    let d = diff::diff(&b, &c);
    assert_eq!(d.status, Status::Regressed);
    assert_eq!(d.status.exit_code(), 1);
    assert_eq!(d.candidate.failed_ranks, 0);
    let div = d.first_divergence.as_ref().expect("a divergence");
    assert_eq!(
        (div.phase, div.figure.name()),
        (Phase::DistInit, "mem_usage")
    );
    assert_eq!(div.delta.median, 42_949_673.0);
    let tokens = d
        .figures
        .iter()
        .find(|f| f.phase == Phase::KvCache && f.figure == "tokens")
        .expect("tokens compared");
    assert_eq!(tokens.class, DeltaClass::Systematic);
    assert!(tokens
        .per_rank
        .iter()
        .all(|r| r.baseline == 91_141.0 && r.candidate == 90_544.0));
    assert_eq!(
        d.effect.as_ref().and_then(|e| e.kv_tokens_delta),
        Some(-597)
    );
}

#[test]
fn diff_of_a_run_with_itself_is_clean() {
    let b = load("samples/tp8-baseline");
    let d = diff::diff(&b, &b);
    assert_eq!(d.status, Status::Same);
    assert_eq!(d.status.exit_code(), 0);
    assert!(d.first_divergence.is_none());
    assert!(d.config.as_ref().is_some_and(|c| c.is_empty()));
    assert!(d.figures.iter().all(|f| f.class == DeltaClass::Same));
}

#[test]
fn nvidia_smi_samples_join_the_run_clock() {
    // samples/tp8-custom-ar/nvidia-smi-gpu.csv: 107 rows; the first at the maximum,
    // `2026/11/29 09:18:42.638, 0, 120114 MiB, 143771 MiB`, is 12.638 s after the run's
    // first line (server_args at 09:18:30).
    let run = load("samples/tp8-custom-ar");
    assert_eq!(run.gpus.len(), 1);
    let g = &run.gpus[0];
    assert_eq!((g.gpu, g.samples), (0, 107));
    assert_eq!(g.peak_used_bytes.get(), 125_948_657_664);
    assert_eq!(g.total_bytes.map(u64::from), Some(150_754_820_096));
    assert!(
        g.peak_at_s.is_some_and(|s| (s.get() - 12.638).abs() < 1e-9),
        "{:?}",
        g.peak_at_s
    );
}

#[test]
fn vllm_runs_diff_like_sglang_runs() {
    // samples/vllm-tp2{,-oom}: gpu_memory_utilization 0.9 -> 0.95; both workers print
    // `Available KV cache memory: 55.84 GiB` -> `63.08 GiB`; the engine's KV cache grows
    // 365,904 -> 413,344 tokens; TP1 then runs out of memory capturing CUDA graphs.
    let b = load("samples/vllm-tp2");
    let c = load("samples/vllm-tp2-oom");
    assert!(b.year_inferred && b.ready);
    let d = diff::diff(&b, &c);
    assert_eq!(d.status, Status::Failed);
    let cfg = d.config.as_ref().expect("non-default args of both");
    assert_eq!(cfg.changed.len(), 1);
    assert_eq!(cfg.changed[0].key, "gpu_memory_utilization");
    let div = d.first_divergence.as_ref().expect("a divergence");
    assert_eq!((div.phase, div.figure.name()), (Phase::KvCache, "kv_avail"));
    assert_eq!((div.ranks_moved, div.ranks_compared), (2, 2));
    // 63.08 GiB - 55.84 GiB
    assert_eq!(div.delta.median, 7_773_890_806.0);
    assert_eq!(
        d.effect.as_ref().and_then(|e| e.kv_tokens_delta),
        Some(47_440)
    );
    let first = d.candidate.first_failure.as_ref().expect("first failure");
    assert_eq!(
        (first.0.to_string(), first.1, first.2),
        ("TP1".to_string(), FailureKind::Oom, Phase::CudaGraph)
    );
}

#[test]
fn nccl_debug_lines_of_the_real_fixtures() {
    // A copy of fixtures/gpu/tp1_nccl_custom_ar.
    let dir = "samples/tp1-nccl-custom-ar";
    // stdout.txt line 5 `NCCL version 2.28.9+cuda13.0`, line 94 `… rank 0 nranks 1 …
    // Init COMPLETE`, line 95 `Init timings … total 0.28`: all from pid 1138, whose
    // communicator rank 0 is TP0.
    let run = load(dir);
    let tp0 = run.rank(&Rank::tp(0)).expect("TP0");
    let kinds: Vec<&str> = tp0
        .events
        .iter()
        .map(|&i| run.events[i].kind.as_str())
        .filter(|k| k.starts_with("nccl"))
        .collect();
    assert_eq!(
        kinds,
        [
            "nccl_version",
            "nccl_comm_init",
            "nccl_comm_init",
            "nccl_init_time"
        ]
    );
    let timing = run
        .events
        .iter()
        .find(|e| e.kind == "nccl_init_time")
        .expect("timing");
    assert_eq!(timing.field("total_s").and_then(|v| v.as_f64()), Some(0.28));
    assert_eq!(
        run.events
            .iter()
            .find(|e| e.kind == "nccl_version")
            .and_then(|e| e.field("version"))
            .and_then(|v| v.as_text()),
        Some("2.28.9+cuda13.0")
    );
    let f = tp0.failure.as_ref().expect("the custom-AR run fails");
    assert_eq!((f.kind, f.phase), (FailureKind::Oom, Phase::CudaGraph));
}

#[test]
fn nvidia_smi_processes_are_matched_to_ranks_by_pid() {
    // A --query-compute-apps CSV beside the vLLM TP2 log: pids 4210 and 4211 are the
    // workers Worker_TP0 and Worker_TP1 of samples/vllm-tp2/server.log.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy("samples/vllm-tp2/server.log", dir.path().join("server.log")).expect("copy");
    std::fs::write(
        dir.path().join("nvidia-smi-apps.csv"),
        "timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n\
         2026/03/14 10:03:00.000, GPU-aaaa, 4210, VLLM::Worker_TP0, 60000 MiB\n\
         2026/03/14 10:03:00.000, GPU-bbbb, 4211, VLLM::Worker_TP1, 61000 MiB\n\
         2026/03/14 10:03:46.000, GPU-aaaa, 4210, VLLM::Worker_TP0, 131000 MiB\n\
         2026/03/14 10:03:46.000, GPU-bbbb, 4211, VLLM::Worker_TP1, 130500 MiB\n",
    )
    .expect("write");
    let gs = GrammarSet::builtin().expect("grammars");
    let run = Session::open(
        &gs,
        &[dir.path().to_path_buf()],
        &LoadOptions::default(),
        &|_, _| {},
    )
    .expect("loads")
    .run;
    let procs: Vec<(u32, Option<String>, u64)> = run
        .gpu_processes
        .iter()
        .map(|p| {
            (
                p.pid,
                p.rank.as_ref().map(|r| r.to_string()),
                p.peak_used_bytes.get(),
            )
        })
        .collect();
    assert_eq!(
        procs,
        vec![
            (4210, Some("TP0".to_string()), 131_000 << 20),
            (4211, Some("TP1".to_string()), 130_500 << 20),
        ]
    );
    // The run starts at the API server's first line, 10:02:11; the peak is at 10:03:46.
    assert_eq!(
        run.gpu_processes[0].peak_at_s,
        Some(rankscope::base::units::Seconds(95.0))
    );
}

/// c10's lines carry their time to the nanosecond (`[W1129 09:19:45.780667540
/// ProcessGroupNCCL.cpp:1575]`, stdout.txt:114) and the built-in prefix keeps the fraction:
/// the run's last event is that warning, 13.78 s after the first stamp (09:19:32), so the
/// header rounds to 14 s; line 118's warning is stamped earlier (09:19:45.467) though
/// printed later. Cut to the second, both were 09:19:45 and the later-printed one was last.
#[test]
fn c10_stamps_keep_their_fraction() {
    let run = |args: &[&str]| {
        let out = assert_cmd::Command::cargo_bin("rankscope")
            .unwrap()
            .args(["--color", "never"])
            .args(args)
            .arg("samples/tp1-nccl-custom-ar")
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run(&["summary"]);
    assert!(
        text.contains("started 2026-11-29 09:19:32, last event 14 s later"),
        "{text}"
    );
    let s: serde_json::Value = serde_json::from_str(&run(&["summary", "--json"])).unwrap();
    assert_eq!(
        common::rank_entry(&s, "TP0")["last_line"],
        "samples/tp1-nccl-custom-ar/stdout.txt:114"
    );
}
