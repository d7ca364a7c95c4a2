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
