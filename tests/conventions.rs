//! The conventions a user of ripgrep, git or kubectl expects (issue 27): exit codes a script
//! can gate on, help with examples and environment, units alike across commands.

use assert_cmd::Command;

fn rankscope() -> Command {
    let mut c = Command::cargo_bin("rankscope").expect("binary built");
    c.env("NO_COLOR", "1").env_remove("COLUMNS");
    c
}

/// `summary --exit-code`: tp8-custom-ar fails (TP3's OOM in cuda_graph), tp8-baseline is
/// ready, and vllm-tp2 cut after its 12th line (before its "Application startup complete",
/// line 28) is incomplete. Without the flag `summary` exits 0 on all three.
#[test]
fn summary_exit_code_gates_on_the_run_state() {
    for (run, code) in [("samples/tp8-custom-ar", 1), ("samples/tp8-baseline", 0)] {
        for format in [None, Some("--json"), Some("--ndjson")] {
            let mut c = rankscope();
            c.args(["summary", "--exit-code", run]);
            if let Some(f) = format {
                c.arg(f);
            }
            c.assert().code(code);
        }
        rankscope().args(["summary", run]).assert().code(0);
    }
    let log = std::fs::read_to_string("samples/vllm-tp2/server.log").expect("sample");
    let head: String = log.lines().take(12).map(|l| format!("{l}\n")).collect();
    assert!(!head.contains("Application startup complete"));
    rankscope()
        .args(["summary", "--exit-code", "-"])
        .write_stdin(head.clone())
        .assert()
        .code(3)
        .stdout(predicates::str::starts_with("INCOMPLETE"));
    rankscope()
        .args(["summary", "-"])
        .write_stdin(head)
        .assert()
        .code(0);
    // Documented where the other codes are.
    let help = rankscope()
        .args(["summary", "--help"])
        .output()
        .expect("run");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--exit-code"), "{help}");
    assert!(
        help.contains("`summary --exit-code`: the run failed"),
        "{help}"
    );
}

/// `summary` without `--ranks` quotes a root failure that is not about memory: tp2-nccl-fail's
/// root TP0 is server.log:20, `torch.distributed.DistBackendError: NCCL error in: …`.
/// With `--ranks`, TP1's consequence is quoted by its exception (server.log:41, `…
/// DistBackendError: [1] is setting up NCCL communicator …`), not by its header line 25
/// `Scheduler hit an exception: Traceback (most recent call last):`.
#[test]
fn summary_quotes_the_root_failure_and_a_consequence_by_its_error() {
    let out = rankscope()
        .args(["--width", "200", "summary", "samples/tp2-nccl-fail"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    let line20 = std::fs::read_to_string("samples/tp2-nccl-fail/server.log").expect("sample");
    let line20 = line20.lines().nth(19).expect("line 20");
    assert!(line20.starts_with("torch.distributed.DistBackendError: NCCL error in:"));
    assert!(
        text.lines().any(|l| l.trim() == line20),
        "root's line not quoted:\n{text}"
    );
    let out = rankscope()
        .args([
            "--width",
            "200",
            "summary",
            "--ranks",
            "samples/tp2-nccl-fail",
        ])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    let tp1 = &text[text.find("  TP1 consequence of TP0").expect("TP1's entry")..];
    let quote = tp1.lines().nth(1).expect("its quote");
    assert!(
        quote
            .trim()
            .starts_with("torch.distributed.DistBackendError: [1] is setting up NCCL communicator"),
        "{tp1}"
    );
    assert!(
        !text.contains("Scheduler hit an exception: Traceback"),
        "{text}"
    );
}

/// The TensorRT-LLM runs print no configuration line: said so without SGLang's word.
#[test]
fn a_missing_configuration_is_said_in_the_servers_common_word() {
    let out = rankscope()
        .args(["diff", "samples/trtllm-tp2", "samples/trtllm-tp2-nccl"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("samples/trtllm-tp2: no configuration line"),
        "{text}"
    );
    assert!(!text.contains("server_args"), "{text}");
}

/// The attempt section of `summary` (between its heading and the blank line).
fn attempt_section(text: &str) -> Vec<String> {
    let from = text
        .find("start-ups in this log")
        .expect("an attempt section");
    text[from..]
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.to_string())
        .collect()
}

/// A restart loop: tp8-custom-ar's console 40 times (each start-up fails the same way, its
/// root TP2's OOM in cuda_graph), then tp8-baseline's (ready). The 40 alike collapse into
/// one line; the shown one (the last, by default) keeps its own. Before, 41 lines.
#[test]
fn a_restart_loop_collapses_into_groups() {
    let failed = std::fs::read_to_string("samples/tp8-custom-ar/server.log").expect("sample");
    let ready = std::fs::read_to_string("samples/tp8-baseline/server.log").expect("sample");
    let log = format!("{}{ready}", failed.repeat(40));
    let run = |extra: &[&str]| {
        let mut c = rankscope();
        c.args(["--width", "200"])
            .args(extra)
            .args(["summary", "-"]);
        let out = c.write_stdin(log.clone()).output().expect("run");
        attempt_section(&String::from_utf8_lossy(&out.stdout))
    };
    let lines = run(&[]);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[0].starts_with("  #1–#40 failed TP2 oom in cuda_graph, 40 start-ups"),
        "{lines:#?}"
    );
    assert!(lines[1].starts_with("  #41 ready,"), "{lines:#?}");
    assert!(lines[1].ends_with("(shown)"), "{lines:#?}");
    // Another attempt shown splits its group around it.
    let lines = run(&["--attempt", "20"]);
    let heads: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_start().split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(heads, ["#1–#19", "#20", "#21–#40", "#41"], "{lines:#?}");
    assert!(lines[1].ends_with("(shown)"));
}

/// Start-ups that alternate (fail, ready, fail, …, 24 of them) keep the first four and the
/// last four, and say which were left out.
#[test]
fn a_long_alternating_loop_keeps_its_head_and_tail() {
    let failed = std::fs::read_to_string("samples/tp8-custom-ar/server.log").expect("sample");
    let ready = std::fs::read_to_string("samples/tp8-baseline/server.log").expect("sample");
    let log = format!("{failed}{ready}").repeat(12);
    let out = rankscope()
        .args(["--width", "200", "summary", "-"])
        .write_stdin(log)
        .output()
        .expect("run");
    let lines = attempt_section(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(lines.len(), 9, "{lines:#?}");
    assert_eq!(
        lines[4],
        "  … #5–#20: 16 start-ups in 16 groups (--json lists all)"
    );
    assert!(lines[8].starts_with("  #24 ready,") && lines[8].ends_with("(shown)"));
}
