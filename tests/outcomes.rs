//! Per-rank outcomes on real runs: what a careful reader says of each rank, checked by hand
//! against the logs (line numbers and wordings quoted in each test).

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use assert_cmd::Command;
use common::{load, run_of};
use rankscope::analysis::diff::{self, Status};
use rankscope::model::{FailureKind, Outcome, Phase};

fn rank<'r>(run: &'r rankscope::model::Run, name: &str) -> &'r rankscope::model::RankRun {
    run.ranks
        .iter()
        .find(|r| r.rank.to_string() == name)
        .unwrap_or_else(|| panic!("no rank {name}"))
}

/// `samples/tp2-nccl-fail` (the real NCCL bootstrap failure of fixtures/gpu2): TP0's
/// traceback (server.log:4) ends in `DistBackendError: NCCL error … invalid usage` at
/// line 20; TP1's (line 25) ends at line 41 in "retrieving ncclUniqueId from [0] … store->get('0')
/// got error: Failed to recv … Connection was likely closed" — it died waiting for TP0.
#[test]
fn nccl_bootstrap_failure_has_one_root_and_one_consequence() {
    let run = load("samples/tp2-nccl-fail");
    let tp0 = rank(&run, "TP0");
    assert_eq!(tp0.outcome, Outcome::Failed);
    let f0 = tp0.failure.as_ref().expect("TP0 evidence");
    assert_eq!(f0.kind, FailureKind::Nccl);
    assert_eq!(f0.phase, Phase::DistInit);
    // The traceback's frames run through init_process_group: the phase is read there.
    assert_eq!(f0.phase_from, "frames");
    assert_eq!(f0.origin.as_ref().map(|o| o.line), Some(20));

    let tp1 = rank(&run, "TP1");
    assert_eq!(tp1.outcome, Outcome::Consequence);
    let f1 = tp1.failure.as_ref().expect("TP1 evidence");
    assert_eq!(
        f1.consequence_of.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP0")
    );
    assert_eq!(f1.phase, Phase::DistInit);
    // The exception line closing its traceback (41), not the header (25): of two
    // consequence lines the one naming its type is the evidence, as of two own failures.
    assert_eq!(f1.origin.as_ref().map(|o| o.line), Some(41));

    assert_eq!(
        run.root.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP0")
    );
    assert_eq!(run.failed_ranks(), 1);
    assert_eq!(run.count(Outcome::Consequence), 1);
}

/// `samples/tp8-custom-ar`: every rank prints its own OOM traceback (lines 76–134 of
/// server.log, `Tried to allocate 20.00 MiB` each): eight independent failures, none a
/// consequence of another.
#[test]
fn eight_independent_ooms_are_eight_failures_and_no_consequences() {
    let run = load("samples/tp8-custom-ar");
    assert_eq!(run.ranks.len(), 8);
    for r in &run.ranks {
        assert_eq!(r.outcome, Outcome::Failed, "{}", r.rank);
        let f = r.failure.as_ref().expect("evidence");
        assert_eq!(f.kind, FailureKind::Oom);
        assert_eq!(f.phase, Phase::CudaGraph);
        assert!(f.consequence_of.is_none());
    }
    assert_eq!(run.failed_ranks(), 8);
    // All in 09:18:41; TP2's traceback is the first in the file (line 76, its OOM line 82).
    assert_eq!(
        run.root.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP2")
    );
    let out = diff::outcome(&run);
    assert_eq!(
        rankscope::render::text::outcome::failure_story(&out.story),
        "all 8 ranks ran out of memory in cuda_graph"
    );
}

/// The first 25 lines of `samples/tp8-baseline/server.log`, then half a line: the excerpt
/// ends during weight loading. Nothing failed and nothing says anything hung.
#[test]
fn a_cut_log_is_incomplete_not_a_hang() {
    let full = std::fs::read_to_string("samples/tp8-baseline/server.log").expect("sample");
    let mut cut: String = full.lines().take(25).map(|l| format!("{l}\n")).collect();
    cut.push_str("[2026-11-29 09:18:18 TP2] Load weight en");
    let run = run_of("cut.log", &cut);
    assert_eq!(run.ranks.len(), 8);
    for r in &run.ranks {
        assert_eq!(r.outcome, Outcome::Incomplete, "{}", r.rank);
        assert!(r.failure.is_none());
    }
    assert!(run.root.is_none());
    // Lines 20–25 open weight loading on TP0, TP7, TP3, TP4 (`Load weight begin`).
    assert_eq!(rank(&run, "TP0").last_phase, Phase::WeightLoad);

    let base = load("samples/tp8-baseline");
    let d = diff::diff(&base, &run);
    assert_eq!(d.status, Status::Incomplete);
    assert_eq!(d.status.exit_code(), 3);
    let headline = rankscope::render::text::diff::headline(&d.headline);
    assert!(!headline.contains("hang"), "{headline}");
}

/// Two start-ups in one file, as a restarted server appends: the failing tp8-custom-ar
/// console, then the baseline's. The second `server_args` line comes after the first
/// attempt's phase lines, so it opens attempt 2.
#[test]
fn a_restarted_server_is_two_attempts_and_the_last_is_shown() {
    let a = std::fs::read_to_string("samples/tp8-custom-ar/server.log").expect("sample");
    let b = std::fs::read_to_string("samples/tp8-baseline/server.log").expect("sample");
    let run = run_of("restarted.log", &format!("{a}{b}"));
    assert_eq!(run.attempts.len(), 2);
    assert_eq!(run.attempt, 2);
    assert_eq!(run.attempts[0].outcome, Outcome::Failed);
    assert_eq!(run.attempts[0].root_kind, Some(FailureKind::Oom));
    assert_eq!(run.attempts[1].outcome, Outcome::Ready);
    assert!(run.ready);
    assert_eq!(run.failed_ranks(), 0);
    // Phase durations stay those of one start-up (weight loading took 4 s in the baseline).
    let wl = rank(&run, "TP0")
        .phase(Phase::WeightLoad)
        .expect("weight_load");
    assert_eq!(wl.duration_s(), Some(4.0));
}

/// vLLM V1 `samples/vllm-tp2-oom`: TP1's worker OOMs in graph capture (line 22); TP0 then
/// prints `WorkerProc was terminated` (line 23); the engine core's `EngineCore failed to
/// start` (line 24) repeats the worker's failure. Two ranks; the engine is a process.
#[test]
fn vllm_cascade_root_termination_and_engine_process() {
    let run = load("samples/vllm-tp2-oom");
    assert_eq!(run.worker_ranks().count(), 2);
    let tp1 = rank(&run, "TP1");
    assert_eq!(tp1.outcome, Outcome::Failed);
    assert_eq!(tp1.failure.as_ref().map(|f| f.kind), Some(FailureKind::Oom));
    let tp0 = rank(&run, "TP0");
    assert_eq!(tp0.outcome, Outcome::Terminated);
    assert_eq!(
        tp0.failure
            .as_ref()
            .and_then(|f| f.consequence_of.as_ref())
            .map(|r| r.to_string())
            .as_deref(),
        Some("TP1")
    );
    let engine = run.ranks.iter().find(|r| r.is_process()).expect("engine");
    assert_eq!(engine.outcome, Outcome::Consequence);
    assert_eq!(
        run.root.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP1")
    );
}

/// A rank that printed its last line minutes before the others went on loading is stalled
/// by the evidence of its silence; the others' progress is what makes silence evidence.
#[test]
fn silence_while_others_progress_is_a_stall() {
    let log = "[2026-06-01 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=2)\n\
        [2026-06-01 10:00:05 TP0] Init torch distributed ends. elapsed=1.00 s, mem usage=0.60 GB\n\
        [2026-06-01 10:00:05 TP1] Init torch distributed ends. elapsed=1.00 s, mem usage=0.60 GB\n\
        [2026-06-01 10:00:06 TP0] Load weight begin. avail mem=70.00 GB\n\
        [2026-06-01 10:05:06 TP0] Load weight end. elapsed=300.00 s, type=LlamaForCausalLM, avail mem=50.00 GB, mem usage=20.00 GB.\n\
        [2026-06-01 10:05:07 TP0] KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB\n";
    let run = run_of("stall.log", log);
    let tp1 = rank(&run, "TP1");
    assert_eq!(tp1.outcome, Outcome::Stalled);
    let f = tp1.failure.as_ref().expect("evidence");
    // 10:00:05 to TP0's last phase line at 10:05:07: 302 s of silence.
    assert!(f.message.starts_with("no line for 302 s"), "{}", f.message);
    assert_eq!(f.origin.as_ref().map(|o| o.line), Some(3));
    assert_eq!(rank(&run, "TP0").outcome, Outcome::Incomplete);
    assert_eq!(
        run.root.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP1")
    );
}

fn rankscope(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("rankscope")
        .expect("binary")
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn a_non_log_on_either_side_of_a_diff_is_an_input_error_naming_it() {
    let out = rankscope(&["diff", "samples/tp8-baseline", "Cargo.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Cargo.toml: not a start-up log"), "{err}");
    assert!(out.stdout.is_empty());

    let out = rankscope(&[
        "diff",
        "samples/tp8-baseline",
        "samples/tp8-baseline/snapshot_rank0.pickle",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rankscope mem samples/tp8-baseline/snapshot_rank0.pickle"),
        "{err}"
    );
}

#[test]
fn filters_that_match_nothing_are_errors_listing_the_valid_values() {
    let out = rankscope(&["events", "samples/tp8-baseline", "--rank", "TP9"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ranks: TP0, TP1, TP2, TP3, TP4, TP5, TP6, TP7"),
        "{err}"
    );
    let out = rankscope(&["events", "samples/tp8-baseline", "--kind", "dist_init_ends"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dist_init_end"));
}

#[test]
fn summary_names_the_root_and_counts_the_consequence_apart() {
    let out = rankscope(&["summary", "samples/tp2-nccl-fail"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("verdict: TP0 failed in NCCL in dist_init; 1 rank failed as a consequence"),
        "{text}"
    );
    assert!(text.contains("root: TP0 failed in NCCL in dist_init (phase from frames)"));
}

/// vLLM with two data-parallel replicas: `EngineCore_DP1` and `EngineCore_DP4` are two
/// engine processes (two pids), not one `engine` row, and neither is counted as a rank.
#[test]
fn engine_processes_of_two_replicas_stay_apart() {
    let log = "(EngineCore_DP1 pid=700) INFO 03-02 11:20:05 [kv_cache_utils.py:634] GPU KV cache size: 120,000 tokens\n\
        (EngineCore_DP4 pid=703) INFO 03-02 11:20:06 [kv_cache_utils.py:634] GPU KV cache size: 118,000 tokens\n\
        (Worker_DP1_TP0 pid=710) INFO 03-02 11:20:01 [gpu_model_runner.py:2653] Model loading took 7.00 GiB memory and 4.000000 seconds\n\
        (Worker_DP4_TP0 pid=713) INFO 03-02 11:20:01 [gpu_model_runner.py:2653] Model loading took 7.00 GiB memory and 4.100000 seconds\n";
    let run = run_of("dp.log", log);
    let engines: Vec<String> = run
        .ranks
        .iter()
        .filter(|r| r.is_process())
        .map(|r| r.rank.to_string())
        .collect();
    assert_eq!(engines, ["engine DP1", "engine DP4"]);
    assert_eq!(run.worker_ranks().count(), 2);
}

/// A rank whose lines are only notices (no start-up event) and one whose only line is cut
/// still exist: their record prefixes name them. Line 3 is TP1's notice; line 5 is TP2's
/// cut line.
#[test]
fn ranks_named_only_by_notices_or_a_cut_line_exist() {
    let log = "[2026-04-01 08:00:00] server_args=ServerArgs(model_path='/m/x', tp_size=3)\n\
        [2026-04-01 08:00:04 TP0] Init torch distributed begin.\n\
        [2026-04-01 08:00:04 TP1] Using model weights format ['*.safetensors']\n\
        [2026-04-01 08:00:05 TP0] Init torch distributed ends. mem usage=0.51 GB\n\
        [2026-04-01 08:00:05 TP2] Init torch dist";
    let run = run_of("notices.log", log);
    let names: Vec<String> = run.ranks.iter().map(|r| r.rank.to_string()).collect();
    assert_eq!(names, ["TP0", "TP1", "TP2"]);
    let tp1 = rank(&run, "TP1");
    assert_eq!(tp1.outcome, Outcome::Incomplete);
    assert_eq!(tp1.last_origin.as_ref().map(|o| o.line), Some(3));
    let tp2 = rank(&run, "TP2");
    assert_eq!(tp2.outcome, Outcome::Incomplete);
    assert_eq!(tp2.last_origin.as_ref().map(|o| o.line), Some(5));

    let vllm = "(Worker_TP0 pid=41) INFO 04-01 08:00:01 [parallel_state.py:1] world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:5 backend=nccl\n\
        (Worker_TP1 pid=42) INFO 04-01 08:00:01 [cuda.py:1] Using Flash Attention backend.\n";
    let run = run_of("notices2.log", vllm);
    let names: Vec<String> = run.ranks.iter().map(|r| r.rank.to_string()).collect();
    assert_eq!(names, ["TP0", "TP1"]);
}

/// vLLM 0.8's engine core prints its monitor's line with no process tag: `Worker proc
/// VllmWorker-2 died unexpectedly` (server.log:15) is the only word of worker 2's end,
/// whose own last line is its weight-load begin (line 10; the three others finished
/// loading at lines 12–14). TP2 is the root, `died` (the line says not how), reported by
/// the engine; the others' logs just end.
#[test]
fn a_worker_reported_dead_by_the_engine_is_the_root() {
    let run = load("tests/fixtures/vllm-tp4-worker-killed");
    let tp2 = rank(&run, "TP2");
    let f = tp2.failure.as_ref().expect("TP2's failure");
    assert_eq!(f.kind, FailureKind::Died);
    assert_eq!(f.phase, Phase::WeightLoad);
    assert_eq!(f.reported_by.as_deref(), Some("engine"));
    assert_eq!(f.origin.as_ref().map(|o| o.line), Some(15));
    assert_eq!(f.phase_line.as_ref().map(|o| o.line), Some(10));
    for r in ["TP0", "TP1", "TP3"] {
        assert_eq!(rank(&run, r).outcome, Outcome::Incomplete, "{r}");
    }
}

/// `tests/verdicts/vllm_restart_time_jump.log`: the first start-up (lines 1–12) fails in
/// dist init; the second begins with `vLLM API server version` at line 13, stamped
/// 21:14:40, an hour before the first's 22:10:00, then its configuration at line 14. The
/// version line is the second start-up's preamble, not the first's end: the first holds
/// the 9 events of lines 1, 2, 3, 4, 8, 9, 10, 11, 12 and starts at 22:10:00; the second
/// holds lines 13–24's 12 events.
#[test]
fn a_restart_takes_its_launchers_preamble_line() {
    let out = rankscope(&[
        "summary",
        "--json",
        "tests/verdicts/vllm_restart_time_jump.log",
    ]);
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let attempts = s["run"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    let (first, second) = (&attempts[0], &attempts[1]);
    assert_eq!(
        (first["events"].as_u64(), second["events"].as_u64()),
        (Some(9), Some(12))
    );
    assert_eq!(first["start"]["at"], "2026-11-05T22:10:00.000000-00:00");
    assert_eq!(first["end"]["at"], "2026-11-05T22:10:13.000000-00:00");
    assert_eq!(second["start"]["at"], "2026-11-05T21:14:40.000000-00:00");
    assert_eq!(first["root"], "TP1");
}

/// `tests/verdicts/sgl02_fastchat_compose_exception.log`: SGLang 0.2 under FastChat, TP2
/// named by `[gpu_id=N]` (lines 2–5). `Exception in ControllerSingle:` (line 6) opens a
/// traceback through `load_model` (line 10) that line 14 closes with `CUDA out of memory …
/// GPU 0 has a total capacty of 23.69 GiB`, none of them naming a rank: the controller runs
/// TP0's model in its own process. The OOM names GPU 0, TP0's: it is TP0's failure, placed
/// in weight_load by its frames; TP1 only stops.
#[test]
fn an_unnamed_oom_naming_its_gpu_is_that_ranks() {
    let run = load("tests/verdicts/sgl02_fastchat_compose_exception.log");
    let tp0 = rank(&run, "TP0");
    let f = tp0.failure.as_ref().expect("TP0's failure");
    assert_eq!(
        (f.kind, f.phase, f.origin.as_ref().map(|o| o.line)),
        (FailureKind::Oom, Phase::WeightLoad, Some(14))
    );
    assert_eq!(
        run.root.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP0")
    );
    assert_eq!(rank(&run, "TP1").outcome, Outcome::Incomplete);
}
