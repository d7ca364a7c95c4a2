//! `diff` for the regressions that are not a memory figure: a slower start-up, a failure
//! that is not about memory (its cause is the failure, the trigger a changed setting), and
//! a memory failure's remedy with numbers. Every expected value is worked out by hand from
//! the logs, as each comment says.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::load;

use rankscope::analysis::cause::{Setting, SuspectWhy};
use rankscope::analysis::diff::{self, Status};
use rankscope::analysis::remedy::{DeficitBasis, RemedyKind, RuleCheck};
use rankscope::analysis::timing::TimeFinding;
use rankscope::base::event::Rank;
use rankscope::base::units::Seconds;
use rankscope::model::Phase;

const GIB: f64 = 1_073_741_824.0;

/// `samples/tp2-straggler` against `samples/tp2-nccl-2gpu` (the same TP2 start-up on two
/// H200s): TP1's `Load weight begin` comes 6 s after its `Init torch distributed ends`
/// (09:20:17 → 09:20:23), where both ranks of the baseline go on at once (09:19:34); its
/// loading itself takes 3 s in both (`elapsed=3.04 s`). TP0 ends loading at 09:20:20 and
/// waits for TP1 at the KV pool's barrier: its `KV Cache is allocated` line is at 09:20:26.
#[test]
fn a_straggler_is_a_regression_naming_the_rank_and_the_phase() {
    let b = load("samples/tp2-nccl-2gpu");
    let c = load("samples/tp2-straggler");
    let d = diff::diff(&b, &c);
    assert_eq!(d.status, Status::Regressed);
    assert_eq!(d.status.exit_code(), 1);
    // TP1's weight_load window: 09:19:34 → 09:19:37 = 3 s; 09:20:17 → 09:20:26 = 9 s, of
    // which 6 s before its first line.
    let lead = d.time.lead().expect("a time finding leads");
    match lead {
        TimeFinding::Rank {
            rank,
            phase,
            baseline_s,
            candidate_s,
            delta_s,
            before_first_line_delta_s,
            straggler,
            waited_for,
        } => {
            assert_eq!(rank, &Rank::tp(1));
            assert_eq!(*phase, Phase::WeightLoad);
            assert_eq!(
                (*baseline_s, *candidate_s, *delta_s),
                (Seconds(3.0), Seconds(9.0), Seconds(6.0))
            );
            assert_eq!(*before_first_line_delta_s, Some(Seconds(6.0)));
            assert!(straggler, "summary of the candidate names TP1 a straggler");
            assert!(waited_for.is_none());
        }
        other => panic!("expected TP1's finding, got {other:?}"),
    }
    // TP0's kv_cache window grew by the same 6 s (09:19:37 → 09:19:37 = 0 s; 09:20:20 →
    // 09:20:26 = 6 s): it waited for TP1, it is no second cause.
    let tp0 = d
        .time
        .findings
        .iter()
        .find(|f| matches!(f, TimeFinding::Rank { rank, .. } if *rank == Rank::tp(0)))
        .expect("TP0's wait is listed");
    assert!(
        matches!(tp0, TimeFinding::Rank { phase: Phase::KvCache, waited_for: Some((r, Phase::WeightLoad)), delta_s, .. } if *r == Rank::tp(1) && *delta_s == Seconds(6.0)),
        "{tp0:?}"
    );
    // The text names TP1 and weight_load in its first line.
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .expect("binary")
        .args(["diff", "samples/tp2-nccl-2gpu", "samples/tp2-straggler"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let head: String = text.split("\n\n").next().unwrap_or("").to_string();
    assert!(head.starts_with("REGRESSED"), "{text}");
    assert!(
        head.contains("TP1 +6.0 s in weight_load (straggler; began 6.0 s"),
        "{text}"
    );
}

/// `tests/fixtures/time`: one TP4 SGLang start-up written twice, `Load weight begin` at
/// :04 on every rank and `Load weight end` at :07 (3 s) or :15 (11 s); nothing else
/// differs but the hour.
#[test]
fn slower_weight_loading_on_every_rank_is_systematic() {
    let b = load("tests/fixtures/time/load_3s.log");
    let c = load("tests/fixtures/time/load_11s.log");
    let d = diff::diff(&b, &c);
    assert_eq!(d.status, Status::Regressed);
    assert_eq!(
        d.time.lead(),
        Some(&TimeFinding::Systematic {
            phase: Phase::WeightLoad,
            ranks_moved: 4,
            ranks_compared: 4,
            baseline_s: Seconds(3.0),
            candidate_s: Seconds(11.0),
            delta_s: Seconds(8.0),
        })
    );
    // First line (:00) to the ready line: :15 in the baseline (3 s load + capture), :23.
    let t = d.time.to_ready.as_ref().expect("both runs are ready");
    assert_eq!(
        (t.baseline_s, t.candidate_s),
        (Seconds(15.0), Seconds(23.0))
    );
    assert!(t.beyond);
    // No memory figure moved: the regression is the time alone.
    assert!(d.first_divergence.is_none());
}

/// The same start-up with two ranks 1 s slower to load (4 s instead of 3): within the two
/// seconds two whole-second windows can differ by with no change at all.
#[test]
fn a_rerun_with_only_jitter_stays_the_same() {
    let b = load("tests/fixtures/time/load_3s.log");
    let c = load("tests/fixtures/time/load_3s_jitter.log");
    let d = diff::diff(&b, &c);
    assert!(d.time.findings.is_empty(), "{:?}", d.time.findings);
    assert_eq!(d.status, Status::Same);
}

/// A run against itself, and the custom-AR pair whose only change is memory: no time
/// finding in either (the tp8 runs' phases take the same whole seconds to within one).
#[test]
fn no_time_finding_without_a_time_change() {
    for name in [
        "samples/tp8-baseline",
        "samples/tp2-straggler",
        "samples/vllm-tp2",
        "samples/tgi-tp2",
    ] {
        let r = load(name);
        let d = diff::diff(&r, &r);
        assert!(d.time.findings.is_empty(), "{name}: {:?}", d.time.findings);
        assert_eq!(d.status, Status::Same, "{name}");
    }
    let d = diff::diff(
        &load("samples/tp8-baseline"),
        &load("samples/tp8-custom-ar-fixed"),
    );
    assert!(d.time.findings.is_empty(), "{:?}", d.time.findings);
    assert!(d.time.to_ready.as_ref().is_some_and(|t| !t.beyond));
}

/// `samples/tp2-nccl-fail`: `NCCL_SOCKET_IFNAME=nonexistent0` (NCCL prints `set by
/// environment to nonexistent0`), TP0's `init_process_group` fails at server.log:20 with
/// `DistBackendError: NCCL error … invalid usage`, its traceback ending `Bootstrap : no
/// socket interface found`. NCCL never got to print `NCCL_NVLS_ENABLE`, which the baseline
/// printed (`set by environment to 0`).
#[test]
fn an_nccl_failure_is_its_own_cause_and_the_socket_setting_its_trigger() {
    let b = load("samples/tp2-nccl-2gpu");
    let c = load("samples/tp2-nccl-fail");
    let d = diff::diff(&b, &c);
    assert_eq!(d.status, Status::Failed);
    let fc = d.failure_cause.as_ref().expect("a root failure");
    assert_eq!(fc.rank, Rank::tp(0));
    let q = fc.quote.as_ref().expect("the root's line");
    assert!(q.source.ends_with("server.log"), "{}", q.source);
    assert_eq!(q.line, 20);
    assert!(q.text.contains("NCCL error"), "{}", q.text);
    let first = fc.suspects.first().expect("a suspect");
    assert_eq!(first.setting, Setting::Env("NCCL_SOCKET_IFNAME".into()));
    assert!(
        matches!(&first.why, SuspectWhy::Named { said, .. } if said.contains("no socket interface found")),
        "{:?}",
        first.why
    );
    // The setting the candidate never printed is not "unset".
    let nvls = d
        .env
        .iter()
        .find(|e| e.name == "NCCL_NVLS_ENABLE")
        .expect("NVLS");
    assert_eq!(nvls.candidate, None);
    assert!(!nvls.candidate_logged);
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .expect("binary")
        .args([
            "diff",
            "samples/tp2-nccl-2gpu",
            "samples/tp2-nccl-fail",
            "--width",
            "200",
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("env NCCL_NVLS_ENABLE  0 -> (not logged)"),
        "{text}"
    );
    assert!(
        text.contains("likely trigger: env NCCL_SOCKET_IFNAME (unset) -> nonexistent0"),
        "{text}"
    );
    assert!(
        !text.contains("no memory figure printed by both runs"),
        "{text}"
    );
}

/// `samples/tp8-custom-ar`: graph capture ran out of memory on every rank. Its figures:
/// the baseline's `Capture cuda graph end … mem usage=0.63 GB`, the candidate's `Capture
/// cuda graph begin … avail mem=0.60 GB`, `Load weight begin. avail mem=13.96 GB` on every
/// rank, `mem_fraction_static=0.9`, `#tokens: 91141` with K and V sizes 2.98 GB each.
#[test]
fn a_capture_oom_gets_a_remedy_whose_arithmetic_follows_the_logs() {
    let b = load("samples/tp8-baseline");
    let c = load("samples/tp8-custom-ar");
    let d = diff::diff(&b, &c);
    let r = &d.remedies;
    let def = r.deficit.as_ref().expect("a deficit");
    assert_eq!(def.basis, DeficitBasis::BaselinePhase);
    let gb = |x: f64| (x * GIB) as i64;
    // 0.63 GiB needed, 0.60 GiB left: 0.03 GiB short, ± one 0.01 GiB step each.
    assert_eq!(def.need, gb(0.63));
    assert_eq!(def.have, gb(0.60));
    assert_eq!(def.deficit, gb(0.63) - gb(0.60));
    assert_eq!(def.resolution, 2 * 10_737_418);
    let mfs = r
        .remedies
        .iter()
        .find(|x| x.setting == "mem_fraction_static")
        .expect("mem_fraction_static");
    match &mfs.kind {
        RemedyKind::PoolFraction {
            total,
            from,
            to,
            check,
            tokens_lost,
            pool_tokens,
            ..
        } => {
            // The memory model's pool rule: `total` = weight_load.avail_before, the
            // smallest over the ranks (13.96 GB on every rank, line 33 of server.log).
            assert_eq!(total.bytes, gb(13.96));
            assert_eq!((*from, *to), (0.9, 0.89));
            // One step: 1 % of 13.96 GiB = 0.1396 GiB (142.95 MiB) covers the upper
            // bound (0.05 GiB) with the 20 % margin (0.06 GiB).
            assert_eq!(mfs.frees, Some((gb(13.96) as f64 * 0.01).floor() as i64));
            // 2 × 2.98 GiB over 91,141 tokens is 70,216 bytes a token: the step is
            // 149,894,... / 70,216 ≈ 2,135 tokens.
            assert_eq!(*pool_tokens, Some(91_141));
            let lost = tokens_lost.expect("tokens lost");
            assert!((2_130..=2_140).contains(&lost), "{lost}");
            // The same rule as the capacity section's: 13.96 × 0.9 − (13.96 − 6.56 weights)
            // = 5.164 GiB of pool, where K + V = 2.98 + 2.98 = 5.96 GiB were allocated:
            // the run does not follow it, and the remedy says so.
            match check {
                RuleCheck::Differs { predicted, logged } => {
                    // Figures are read to the nearest byte.
                    let gbr = |x: f64| (x * GIB).round() as i64;
                    let want = (gbr(13.96) as f64 * 0.9).round() as i64 - (gbr(13.96) - gbr(6.56));
                    assert_eq!(*predicted, want);
                    assert_eq!(*logged, 2 * gbr(2.98));
                }
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
    // The baseline reached ready with the custom all-reduce off.
    assert!(r.remedies.iter().any(|x| x.setting == "enable_custom_allreduce"
        && matches!(&x.kind, RemedyKind::Revert { from, to, .. } if from == "True" && to == "False")));
}

/// `samples/vllm-tp2-oom`: `Tried to allocate 512.00 MiB. GPU 1 has a total capacity of
/// 139.80 GiB of which 301.25 MiB is free` with `gpu_memory_utilization 0.95`.
#[test]
fn a_vllm_capture_oom_lowers_gpu_memory_utilization_by_the_device_share() {
    let d = diff::diff(&load("samples/vllm-tp2"), &load("samples/vllm-tp2-oom"));
    let def = d.remedies.deficit.as_ref().expect("a deficit");
    assert_eq!(def.basis, DeficitBasis::OomRequest);
    assert_eq!(def.deficit, (512.0 - 301.25) as i64 * 1_048_576 + 786_432);
    let gmu = d
        .remedies
        .remedies
        .iter()
        .find(|x| x.setting == "gpu_memory_utilization")
        .expect("gpu_memory_utilization");
    match &gmu.kind {
        RemedyKind::PoolFraction {
            total,
            from,
            to,
            check,
            tokens_lost,
            pool_tokens,
            ..
        } => {
            // `total = ["device"]`: TP1's device is the OOM message's capacity; TP0
            // printed no device figure.
            assert_eq!(total.bytes, (139.80 * GIB) as i64);
            assert_eq!((*from, *to), (0.95, 0.94));
            // 1 % of 139.80 GiB over the log's bytes per token (63.08 GiB of
            // `Available KV cache memory` / 413,344 tokens of `GPU KV cache size`):
            // 1,501,091,069 / 163,863 ≈ 9,161 tokens.
            assert_eq!(*pool_tokens, Some(413_344));
            let per_token = (63.08 * GIB).round() / 413_344.0;
            let want = (((139.80 * GIB) as i64 as f64 * 0.01).floor() / per_token).round() as i64;
            assert_eq!(*tokens_lost, Some(want));
            assert!((9_155..=9_165).contains(&want), "{want}");
            // No activation peak or outside-PyTorch figure in these logs: the rule's
            // `used` cannot be read, so nothing is claimed about it.
            assert_eq!(*check, RuleCheck::Unchecked);
        }
        other => panic!("{other:?}"),
    }
}

/// The fragmentation pair keeps its allocator remedy.
#[test]
fn the_fragmentation_pair_keeps_expandable_segments() {
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .expect("binary")
        .args([
            "diff",
            "samples/tp2-frag-grouped",
            "samples/tp2-frag-interleaved",
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("expandable_segments:True"), "{text}");
}

/// `--time-tolerance` sets what a change must reach beyond the stamps' resolution: the
/// 3 s → 11 s load (+8 s, 267 % of 3 s; the start-up +8 s of 15 s, 53 %) is a regression
/// at the default 20 %, and not at 300 %.
#[test]
fn the_time_tolerance_is_the_users_to_set() {
    let run = |tol: &str| {
        assert_cmd::Command::cargo_bin("rankscope")
            .expect("binary")
            .args([
                "diff",
                "tests/fixtures/time/load_3s.log",
                "tests/fixtures/time/load_11s.log",
                "--time-tolerance",
                tol,
            ])
            .output()
            .expect("runs")
    };
    assert_eq!(run("20%").status.code(), Some(1));
    let lax = run("300");
    assert_eq!(
        lax.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&lax.stdout)
    );
    assert!(String::from_utf8_lossy(&lax.stdout).starts_with("SAME"));
    let bad = run("lots");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("percentage"));
}

/// Without a baseline, `summary` of a failed run gives what its own figures support: the
/// vLLM capture OOM's request against the device's free memory (512.00 − 301.25 MiB) and
/// one step of `gpu_memory_utilization` (1 % of the 139.80 GiB the OOM message gives).
#[test]
fn summary_of_a_memory_failure_gives_its_remedy() {
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .expect("binary")
        .args(["summary", "samples/vllm-tp2-oom", "--width", "200"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "remedy: deficit: at least 210.75 MiB (512.00 MiB asked for, 301.25 MiB free"
        ),
        "{text}"
    );
    assert!(
        text.contains("gpu_memory_utilization 0.95 -> 0.94"),
        "{text}"
    );
    let json = assert_cmd::Command::cargo_bin("rankscope")
        .expect("binary")
        .args(["summary", "samples/vllm-tp2-oom", "--json"])
        .output()
        .expect("runs");
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(
        doc["remedies"]["deficit"]["deficit_bytes"]["bytes"],
        220_987_392
    );
    assert_eq!(doc["remedies"]["remedies"][0]["to"], "0.94");
    // A run that reached ready has no remedies.
    let ready = assert_cmd::Command::cargo_bin("rankscope")
        .expect("binary")
        .args(["summary", "samples/vllm-tp2", "--json"])
        .output()
        .expect("runs");
    let doc: serde_json::Value = serde_json::from_slice(&ready.stdout).expect("JSON");
    assert!(doc["remedies"].is_null());
}

/// `samples/tp8-custom-ar-fixed` reaches ready on every rank (597 tokens fewer): no
/// memory failure, so no deficit and no value proposed from the memory model.
#[test]
fn a_run_that_reached_ready_gets_no_memory_remedy() {
    let d = diff::diff(
        &load("samples/tp8-baseline"),
        &load("samples/tp8-custom-ar-fixed"),
    );
    assert_eq!(d.remedies.deficit, None);
    assert!(d.remedies.remedies.is_empty(), "{:?}", d.remedies);
}

/// The memory model's `skip` on the `cuda_graphs` category (`disable_cuda_graph`): a
/// capture OOM on a build that has the setting off gets it, freeing what the baseline's
/// category took — Memory pool end 0.70 GB − Capture cuda graph end 0.05 GB = 0.65 GB —
/// and the pool rule's fraction, 1 % of the 14.00 GB before weights. Logs written here.
#[test]
fn a_capture_oom_can_skip_the_capture_by_the_models_setting() {
    let head = "[2026-05-01 10:00:00] server_args=ServerArgs(model_path='/m/x', tp_size=1, mem_fraction_static=0.88, disable_cuda_graph=False, mem_note=ONE)\n\
        [2026-05-01 10:00:05 TP0] Init torch distributed ends. elapsed=1.00 s, mem usage=0.50 GB\n\
        [2026-05-01 10:00:05 TP0] Load weight begin. avail mem=14.00 GB\n\
        [2026-05-01 10:00:09 TP0] Load weight end. type=X, dtype=torch.bfloat16, avail mem=7.00 GB, mem usage=7.00 GB.\n\
        [2026-05-01 10:00:09 TP0] KV Cache is allocated. #tokens: 50000, K size: 3.15 GB, V size: 3.15 GB\n";
    let b = common::run_of(
        "b.log",
        &format!(
            "{}{}",
            head.replace("ONE", "'a'"),
            "[2026-05-01 10:00:09 TP0] Memory pool end. avail mem=0.70 GB\n\
             [2026-05-01 10:00:09 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=0.70 GB\n\
             [2026-05-01 10:00:10 TP0] Capture cuda graph end. Time elapsed: 1.00 s. mem usage=0.65 GB. avail mem=0.05 GB.\n\
             [2026-05-01 10:00:11] The server is fired up and ready to roll!\n"
        ),
    );
    let c = common::run_of(
        "c.log",
        &format!(
            "{}{}",
            head.replace("ONE", "'b'"),
            "[2026-05-01 10:00:09 TP0] Memory pool end. avail mem=0.60 GB\n\
             [2026-05-01 10:00:09 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=0.60 GB\n\
             [2026-05-01 10:00:10 TP0] Scheduler hit an exception: Traceback (most recent call last):\n\
             torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 10.00 MiB is free.\n"
        ),
    );
    let d = diff::diff(&b, &c);
    let gb = |x: f64| (x * GIB).round() as i64;
    let skip = d
        .remedies
        .remedies
        .iter()
        .find(|x| x.setting == "disable_cuda_graph")
        .expect("the model's skip setting");
    match &skip.kind {
        RemedyKind::SkipPhase {
            value,
            phase,
            baseline_took,
            ..
        } => {
            assert_eq!((value.as_str(), *phase), ("True", Phase::CudaGraph));
            assert_eq!(*baseline_took, Some(gb(0.70) - gb(0.05)));
        }
        other => panic!("{other:?}"),
    }
    let mfs = d
        .remedies
        .remedies
        .iter()
        .find(|x| x.setting == "mem_fraction_static")
        .expect("the pool rule's fraction");
    assert_eq!(mfs.frees, Some((gb(14.00) as f64 * 0.01).floor() as i64));
}
