//! What `diff` says when runs cannot be fully compared, and how it names the rank that
//! failed first when the others only followed. Logs written for these tests.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{load, run_of};

use rankscope::analysis::diff::{self, ComparabilityNote, Status};
use rankscope::model::{FailureKind, Outcome};
use rankscope::render::text::diff::comparability_note;

fn tp_run(n: u32, mem: &str) -> String {
    let mut s = String::from(
        "[2026-05-01 10:00:00] server_args=ServerArgs(model_path='/m/x', tp_size=8)\n",
    );
    for r in 0..n {
        s.push_str(&format!(
            "[2026-05-01 10:00:05 TP{r}] Init torch distributed ends. elapsed=1.00 s, mem usage={mem} GB\n"
        ));
    }
    s.push_str("[2026-05-01 10:00:30] The server is fired up and ready to roll!\n");
    s
}

#[test]
fn different_rank_sets_compare_outcomes_only() {
    let b = run_of("b.log", &tp_run(8, "0.60"));
    let c = run_of("c.log", &tp_run(4, "0.90"));
    let d = diff::diff(&b, &c);
    assert!(!d.comparability.memory_compared);
    assert!(d.figures.is_empty());
    assert_eq!(d.comparability.only_in_baseline.len(), 4);
    assert_eq!(
        d.comparability.notes[0],
        ComparabilityNote::RankSetsDiffer {
            baseline_ranks: 8,
            candidate_ranks: 4
        }
    );
    assert!(
        comparability_note(&d.comparability.notes[0]).contains("rank sets differ (8 vs 4 ranks)")
    );
    // Both reached ready: nothing else can be said, and nothing is made up.
    assert_eq!(d.status, Status::Same);
}

#[test]
fn a_file_with_no_start_up_event_is_refused_not_compared() {
    // Two lines of prose: no phase line, no failure. Comparing it would print SAME and
    // exit 0, a false pass in CI; it is an input error that names the file instead.
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("notes.txt");
    std::fs::write(&p, "hello\nthis is not a server log\n").expect("write");
    let gs = rankscope::grammar::GrammarSet::builtin().expect("grammars");
    let err = rankscope::session::Session::open(
        &gs,
        std::slice::from_ref(&p),
        &Default::default(),
        &|_, _| {},
    )
    .err()
    .expect("refused");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("{}: not a start-up log: 2 lines", p.display())),
        "{msg}"
    );
}

#[test]
fn runs_of_different_servers_say_so() {
    let b = run_of("b.log", &tp_run(2, "0.60"));
    let c = run_of(
        "c.log",
        "(Worker_TP0 pid=10) INFO 05-01 10:00:05 [gpu_model_runner.py:2653] Model loading took 7.00 GiB memory and 4.000000 seconds\n",
    );
    let d = diff::diff(&b, &c);
    assert!(d
        .comparability
        .notes
        .iter()
        .any(|n| comparability_note(n).contains("different servers (sglang vs vllm)")));
    // The note carries the two runs' server grammar ids as data; render words them.
    assert!(d
        .comparability
        .notes
        .contains(&ComparabilityNote::DifferentServers {
            baseline: vec!["sglang".into()],
            candidate: vec!["vllm".into()],
        }));
}

#[test]
fn the_first_failing_rank_is_named_and_the_others_follow() {
    let b = run_of("b.log", &tp_run(4, "0.60"));
    let c = run_of(
        "c.log",
        "[2026-05-01 10:00:00] server_args=ServerArgs(model_path='/m/x', tp_size=4)\n\
         [2026-05-01 10:00:05 TP0] Init torch distributed ends. elapsed=1.00 s, mem usage=0.60 GB\n\
         [2026-05-01 10:00:05 TP1] Init torch distributed ends. elapsed=1.00 s, mem usage=0.60 GB\n\
         [2026-05-01 10:00:05 TP2] Init torch distributed ends. elapsed=1.00 s, mem usage=0.60 GB\n\
         [2026-05-01 10:00:05 TP3] Init torch distributed ends. elapsed=1.00 s, mem usage=0.60 GB\n\
         [2026-05-01 10:00:09 TP3] Load weight begin. avail mem=70.00 GB\n\
         [2026-05-01 10:00:11 TP3] Scheduler hit an exception: Traceback (most recent call last):\n\
         \x20 File \"/srv/sglang/model_executor/model_runner.py\", line 210, in load_model\n\
         torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 2.10 GiB is free.\n\
         [2026-05-01 10:10:12 TP0] Scheduler hit an exception: Traceback (most recent call last):\n\
         RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n\
         [2026-05-01 10:10:12 TP1] Scheduler hit an exception: Traceback (most recent call last):\n\
         RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n\
         [2026-05-01 10:10:13] Received sigquit from a child process. It usually means the child failed.\n",
    );
    let d = diff::diff(&b, &c);
    assert_eq!(d.status, Status::Failed);
    let first = d.candidate.first_failure.as_ref().expect("a first failure");
    assert_eq!(first.0.to_string(), "TP3");
    assert_eq!(first.1, FailureKind::Oom);
    assert_eq!(first.2.name(), "weight_load");
    let tp0 = c
        .ranks
        .iter()
        .find(|r| r.rank.to_string() == "TP0")
        .expect("TP0");
    let f0 = tp0.failure.as_ref().expect("TP0 failed");
    assert_eq!(f0.kind, FailureKind::Nccl);
    assert_eq!(
        f0.consequence_of.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP3")
    );
    assert_eq!(tp0.outcome, Outcome::Consequence);
    // TP2 printed nothing after init; then the launcher says a child failed and (as SGLang
    // does) ends the process tree: TP2 was terminated after TP3's failure, and the
    // launcher's `Received sigquit` line (line 14) is the evidence.
    let tp2 = c
        .ranks
        .iter()
        .find(|r| r.rank.to_string() == "TP2")
        .expect("TP2");
    assert_eq!(tp2.outcome, Outcome::Terminated);
    let f2 = tp2.failure.as_ref().expect("evidence");
    assert_eq!(f2.origin.as_ref().map(|o| o.line), Some(14));
    assert_eq!(
        f2.consequence_of.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP3")
    );
    assert_eq!(tp2.last_phase.name(), "weight_load");
    assert_eq!(
        rankscope::render::text::diff::headline(&d.headline),
        "candidate: TP3 ran out of memory in weight_load; 2 ranks failed as a consequence; \
         1 rank was terminated; baseline reached ready"
    );
}

#[test]
fn environment_toggles_are_part_of_the_configuration_diff() {
    let base = "[2026-05-01 10:00:00] server_args=ServerArgs(model_path='/m/x', tp_size=1)\n\
                vm:11:11 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.\n\
                vm:11:11 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n";
    let cand = "[2026-05-01 11:00:00] server_args=ServerArgs(model_path='/m/x', tp_size=1)\n\
                vm:12:12 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 1.\n\
                vm:12:12 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL\n";
    let b = run_of("b.log", base);
    let c = run_of("c.log", cand);
    let d = diff::diff(&b, &c);
    let env: Vec<(String, Option<String>, Option<String>)> = d
        .env
        .iter()
        .map(|e| (e.name.clone(), e.baseline.clone(), e.candidate.clone()))
        .collect();
    assert_eq!(
        env,
        vec![
            (
                "NCCL_NVLS_ENABLE".into(),
                Some("0".into()),
                Some("1".into())
            ),
            ("NCCL_P2P_LEVEL".into(), None, Some("NVL".into())),
            ("NCCL_SOCKET_IFNAME".into(), Some("eth0".into()), None),
        ]
    );
}

#[test]
fn hard_wrapped_and_cut_server_args_compare_only_what_they_hold() {
    // The baseline's line was hard-wrapped by a terminal inside `enforce_eager` and after
    // a comma (FORMATS.md §8.6); the candidate's is whole.
    let b = run_of(
        "b.log",
        "[2026-05-01 10:00:00] server_args=ServerArgs(model_path='/m/x', tp_size=2, enforce_ea\n\
         ger=False, mem_fraction_static=0.88\n\
         , chunked_prefill_size=8192)\n\
         [2026-05-01 10:00:05 TP0] Init torch distributed ends. elapsed=1.00 s, mem usage=0.60 GB\n",
    );
    let c = run_of(
        "c.log",
        "[2026-05-01 11:00:00] server_args=ServerArgs(model_path='/m/x', tp_size=2, enforce_eager=False, mem_fraction_static=0.9, chunked_prefill_size=8192)\n\
         [2026-05-01 11:00:05 TP0] Init torch distributed ends. elapsed=1.00 s, mem usage=0.60 GB\n",
    );
    let d = diff::diff(&b, &c);
    let cfg = d.config.as_ref().expect("both read");
    let changed: Vec<(String, String, String)> = cfg
        .changed
        .iter()
        .map(|ch| {
            (
                ch.key.clone(),
                ch.old.to_python_repr(),
                ch.new.to_python_repr(),
            )
        })
        .collect();
    assert_eq!(
        changed,
        vec![(
            "mem_fraction_static".to_string(),
            "0.88".to_string(),
            "0.9".to_string()
        )]
    );
    assert!(cfg.added.is_empty() && cfg.removed.is_empty());
    assert_eq!(
        b.counts().unknown,
        0,
        "the wrapped lines belong to server_args"
    );

    // A candidate whose line is cut: the keys it lost are not "removed".
    let cut = run_of(
        "cut.log",
        "[2026-05-01 12:00:00] server_args=ServerArgs(model_path='/m/x', tp_size=4, enforce_eag",
    );
    let d = diff::diff(&c, &cut);
    let cfg = d.config.as_ref().expect("read up to the cut");
    assert_eq!(cfg.changed.len(), 1);
    assert_eq!(cfg.changed[0].key, "tp_size");
    assert!(cfg.removed.is_empty());
    assert!(d
        .config_note
        .as_ref()
        .map(rankscope::render::text::diff::config_note)
        .is_some_and(|n| n.contains("candidate is cut short")));
}

#[test]
fn a_component_stream_does_not_make_one_server_two() {
    // samples/vllm-tp2 reached uvicorn's `Application startup complete.` (grammar
    // `streams`); samples/vllm-tp2-oom died in cuda_graph before it. Both are vLLM: no
    // "different servers" note (it said `streams+vllm vs vllm` while `streams` counted as
    // a server).
    let (b, c) = (load("samples/vllm-tp2"), load("samples/vllm-tp2-oom"));
    assert!(
        b.grammars.iter().any(|g| g == "streams"),
        "{:?}",
        b.grammars
    );
    assert!(
        !c.grammars.iter().any(|g| g == "streams"),
        "{:?}",
        c.grammars
    );
    assert_eq!(b.servers, vec!["vllm".to_string()]);
    let d = diff::diff(&b, &c);
    assert!(
        !d.comparability
            .notes
            .iter()
            .any(|n| matches!(n, ComparabilityNote::DifferentServers { .. })),
        "{:?}",
        d.comparability.notes
    );
}

#[test]
fn one_stray_line_of_another_server_does_not_make_a_second_server() {
    // tests/fixtures/vllm-tp2-stray-sglang-line is samples/vllm-tp2 with one line (10) in
    // SGLang's wording (`Custom allreduce initialized: max_size=…, peers=…`), read by the
    // sglang grammar. The run is still vLLM's: its configuration line is vLLM's, and 20 of
    // its 24 events are vLLM's (the others: 2 NCCL, 1 uvicorn, the stray one). Against the unchanged sample there is no "different servers" note;
    // against an SGLang run there is.
    let stray = load("tests/fixtures/vllm-tp2-stray-sglang-line");
    assert!(
        stray.grammars.iter().any(|g| g == "sglang"),
        "{:?}",
        stray.grammars
    );
    assert_eq!(stray.servers, vec!["vllm".to_string()]);
    let different = |b: &rankscope::model::Run, c: &rankscope::model::Run| {
        diff::diff(b, c)
            .comparability
            .notes
            .iter()
            .any(|n| matches!(n, ComparabilityNote::DifferentServers { .. }))
    };
    assert!(!different(&load("samples/vllm-tp2"), &stray));
    assert!(different(&load("samples/tp2-straggler"), &stray));
}

/// A failure placed after the phase its rank had completed is worded so wherever a run's
/// end is said. In sgl05_nixl_glog_bindings_error.log TP0 ends cuda_graph (line 15,
/// `Capture cuda graph end`), raises at line 19 (`Scheduler hit an exception`), and the
/// log has no ready line: it never served. As a failed baseline (`baseline failed too
/// (…)`) and in the list of a log's start-ups (the log written twice: two attempts), both
/// said "while serving" before 2026-12-03.
#[test]
fn a_failure_before_ready_is_never_while_serving_as_baseline_or_attempt() {
    let log = "tests/verdicts/sgl05_nixl_glog_bindings_error.log";
    let dir = tempfile::tempdir().unwrap();
    let twice = dir.path().join("twice.log");
    let text = std::fs::read(log).unwrap();
    std::fs::write(&twice, [text.clone(), text].concat()).unwrap();
    let run = |args: &[&str]| -> String {
        let out = assert_cmd::Command::cargo_bin("rankscope")
            .unwrap()
            .args(["--color", "never", "--width", "200"])
            .args(args)
            .output()
            .unwrap();
        common::flat(&String::from_utf8_lossy(&out.stdout))
    };
    let d = run(&["diff", log, log]);
    assert!(
        d.contains("baseline failed too (TP0 raised an exception after cuda_graph, before ready)"),
        "{d}"
    );
    let s = run(&["summary", twice.to_str().unwrap()]);
    for n in [1, 2] {
        let attempt = format!("#{n} failed: TP0 exception after cuda_graph, before ready,");
        assert!(s.contains(&attempt), "{attempt}: {s}");
    }
    assert!(
        !d.contains("while serving") && !s.contains("while serving"),
        "{d}\n{s}"
    );
}
