//! The conventions a user of ripgrep, git or kubectl expects (issue 27): exit codes a script
//! can gate on, help with examples and environment, units alike across commands.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
        lines[0].starts_with("  #1–#40 failed: TP2 oom in cuda_graph, 40 start-ups"),
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
    // Past the last: an error that gives the range, exit 2 (it said `1 start-up(s)`).
    rankscope()
        .args(["summary", "--attempt", "42", "-"])
        .write_stdin(log.clone())
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--attempt 42: the log holds 41 start-ups (--attempt 1 to 41)",
        ));
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

fn stdout_of(args: &[&str]) -> String {
    let out = rankscope().args(args).output().expect("run");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The options that say how to read a log are those of the commands that read one: `mem`
/// reads snapshots and neither lists them nor takes them.
#[test]
fn mem_neither_lists_nor_takes_the_log_options() {
    let log_options = ["--grammar", "--attempt", "--no-clock-align"];
    for page in [vec!["mem", "--help"], vec!["mem", "diff", "--help"]] {
        let help = stdout_of(&page);
        for flag in log_options {
            assert!(!help.contains(flag), "{page:?} lists {flag}:\n{help}");
        }
    }
    for page in ["summary", "events", "diff", "tui", "export"] {
        let help = stdout_of(&[page, "--help"]);
        for flag in log_options {
            assert!(help.contains(flag), "{page} --help lacks {flag}");
        }
    }
    let snapshot = "samples/tp8-baseline/snapshot_rank0.pickle";
    rankscope()
        .args(["--attempt", "2", "mem", snapshot])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--attempt applies to the commands that read logs",
        ));
    rankscope()
        .args(["mem", "--no-clock-align", snapshot])
        .assert()
        .code(2);
    // Before the subcommand or after it, the same for the commands that read logs: the
    // first start-up of a two-start-up log (tp8-custom-ar's console, then tp8-baseline's)
    // is the failed one.
    let failed = std::fs::read_to_string("samples/tp8-custom-ar/server.log").expect("sample");
    let ready = std::fs::read_to_string("samples/tp8-baseline/server.log").expect("sample");
    for args in [
        ["--attempt", "1", "summary", "-"],
        ["summary", "--attempt", "1", "-"],
    ] {
        rankscope()
            .args(["--width", "200"])
            .args(args)
            .write_stdin(format!("{failed}{ready}"))
            .assert()
            .stdout(predicates::str::starts_with("FAILED"));
    }
}

/// Every page has EXAMPLES and ENVIRONMENT, in `--help` and in the man page; the variables
/// are those the code reads (render::Style: NO_COLOR, TERM, COLUMNS; grammar::
/// user_grammar_dir: RANKSCOPE_GRAMMAR_DIR; rayon: RAYON_NUM_THREADS); every sample path
/// an example names exists.
#[test]
fn help_and_man_pages_have_examples_and_environment() {
    let vars = [
        "NO_COLOR",
        "TERM",
        "COLUMNS",
        "RANKSCOPE_GRAMMAR_DIR",
        "RAYON_NUM_THREADS",
    ];
    let pages = stdout_of(&["man", "--list"]);
    let mut names: Vec<&str> = vec!["rankscope"];
    names.extend(pages.lines());
    assert!(names.len() > 10, "{names:?}");
    for name in names {
        let words: Vec<&str> = if name == "rankscope" {
            vec![]
        } else {
            name.split('-').collect()
        };
        let mut help_args = words.clone();
        help_args.push("--help");
        let help = stdout_of(&help_args);
        assert!(help.contains("\nExamples:\n"), "{name}:\n{help}");
        let man = if name == "rankscope" {
            stdout_of(&["man"])
        } else {
            stdout_of(&["man", name])
        };
        assert!(man.contains("\n.SH EXAMPLES\n"), "{name}");
        assert!(man.contains("\n.SH ENVIRONMENT\n"), "{name}");
        for v in vars {
            assert!(
                help.contains(&format!("\n  {v}\n")),
                "{name} --help lacks {v}"
            );
            assert!(man.contains(&format!("\\fB{v}\\fR")), "{name}: {v}");
        }
        for word in help.split_whitespace() {
            if word.starts_with("samples/") || word.starts_with("docs/examples/") {
                assert!(
                    std::path::Path::new(word).exists(),
                    "{name}: example path {word} does not exist"
                );
            }
        }
    }
    // `summary` documents --exit-code's codes in its man page too.
    assert!(stdout_of(&["man", "summary"]).contains(".SH \"EXIT STATUS\""));
}

/// `rank_failed`'s HELP lists the failure kinds of the JSON schema (FailureKindName:
/// oom, not_enough_memory, nccl, exception, timeout, signal, died); `hang` left it long ago.
#[test]
fn prometheus_help_lists_the_schemas_failure_kinds() {
    let text = stdout_of(&["export", "--prometheus", "samples/tp8-custom-ar"]);
    let help = text
        .lines()
        .find(|l| l.starts_with("# HELP rankscope_rank_failed "))
        .expect("the family's HELP");
    let schema = stdout_of(&["schema", "summary"]);
    let schema: serde_json::Value = serde_json::from_str(&schema).expect("JSON");
    let kinds = &schema["definitions"]["FailureKindName"];
    let mut names: Vec<String> = Vec::new();
    for v in kinds["enum"].as_array().into_iter().flatten() {
        names.extend(v.as_str().map(str::to_string));
    }
    for sub in kinds["oneOf"].as_array().into_iter().flatten() {
        for v in sub["enum"].as_array().into_iter().flatten() {
            names.extend(v.as_str().map(str::to_string));
        }
    }
    assert_eq!(names.len(), 7, "{kinds}");
    assert!(
        help.contains(&format!("(kind: {})", names.join(", "))),
        "{help}"
    );
    assert!(!help.contains("hang"), "{help}");
}

/// One unit style across commands: `events` prints a log's `mem usage=0.64 GB` (SGLang's GB
/// is GiB, two decimals printed) as `0.64 GiB`, as `summary` does (it printed 655.36 MiB);
/// a delta column keeps two decimals (+40.96 MiB = 0.04 GiB, +20.48 MiB = 0.02 GiB; it
/// mixed `+41 MiB` and `+20.5 MiB`); `mem` writes its times `t+4.2 s` as the rest do (it wrote `t+4.207 s`, one rule: `units::seconds`).
#[test]
fn one_unit_style_across_commands() {
    let events = stdout_of(&[
        "--width",
        "200",
        "events",
        "--rank",
        "TP0",
        "--kind",
        "dist_init_end",
        "samples/tp8-custom-ar",
    ]);
    assert!(events.contains("mem_usage_bytes=0.64 GiB"), "{events}");
    assert!(!events.contains("MiB"), "{events}");
    let summary = stdout_of(&["summary", "samples/tp8-custom-ar"]);
    assert!(summary.contains("mem usage        0.64 GiB"), "{summary}");

    let diff = stdout_of(&["diff", "samples/tp8-baseline", "samples/tp8-custom-ar"]);
    let table = &diff[diff
        .find("\nphase ")
        .or(diff.find("\nPHASE "))
        .expect("a table")..];
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.contains(" systematic"))
        .collect();
    assert!(rows.len() >= 4, "{table}");
    let delta = regex::Regex::new(r" ([+-]\d+\.\d\d (?:KiB|MiB|GiB)) ").expect("pattern");
    for row in &rows {
        assert!(
            delta.is_match(row),
            "a delta not in the common style: {row}"
        );
    }
    assert!(
        table.contains("+40.96 MiB") && table.contains("+20.48 MiB"),
        "{table}"
    );

    let mem = stdout_of(&["mem", "samples/tp8-custom-ar/snapshot_rank0.pickle"]);
    let joined = mem.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(joined.contains("at t+4.2 s in capture_graphs"), "{mem}");
    assert!(!regex::Regex::new(r"t\+\d+\.\d+s")
        .expect("pattern")
        .is_match(&mem));
}

/// `tui` without a terminal (stdout piped here) says what it needs and what to run
/// instead, and exits 2 (it printed `terminal: No such device or address (os error 6)`).
#[test]
fn tui_without_a_terminal_says_so() {
    rankscope()
        .args(["tui", "samples/tp2-nccl-fail"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "rankscope: tui needs a terminal (stdout is not a TTY); for text, try `rankscope summary`",
        ));
}

/// `mem` on a run directory reads the snapshots in it, in rank order (tp8-baseline holds
/// snapshot_rank0 to 7, eight summaries); a directory without one says so and, when it
/// holds logs, which command reads them (it said "a directory, not a snapshot file").
#[test]
fn mem_reads_the_snapshots_of_a_directory() {
    let out = stdout_of(&["mem", "samples/tp8-baseline"]);
    let headers: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("samples/tp8-baseline/"))
        .collect();
    let want: Vec<String> = (0..8)
        .map(|r| format!("samples/tp8-baseline/snapshot_rank{r}.pickle"))
        .collect();
    assert_eq!(headers, want, "{out}");

    let logs = tempfile::tempdir().unwrap();
    std::fs::copy(
        "samples/vllm-tp2/server.log",
        logs.path().join("server.log"),
    )
    .unwrap();
    let shown = logs.path().display().to_string();
    rankscope()
        .args(["mem", &shown])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!(
            "{shown}: no PyTorch memory snapshots in this directory (looked for *.pickle, *.pkl); it holds logs: read them with `rankscope summary {shown}`"
        )));
    // `mem diff` compares files: a directory is refused with a file to give instead.
    rankscope()
        .args(["mem", "diff", "samples/tp8-baseline", "samples/tp8-custom-ar"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "samples/tp8-baseline: a directory; `mem diff` compares two snapshot files: give one of the 8 it holds (e.g. samples/tp8-baseline/snapshot_rank0.pickle)",
        ));
}

/// Errors name the file and the command that fits it: a server log given to `mem` (it
/// said "pickle: not a pickle of protocol 2-5: byte 0 is 0x5b"), a missing file, and a
/// directory holding only a snapshot given to `summary` (it named only the log patterns).
#[test]
fn errors_name_the_file_and_the_command_that_reads_it() {
    rankscope()
        .args(["mem", "samples/tp8-baseline/server.log"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "samples/tp8-baseline/server.log: text, not a PyTorch memory snapshot (a pickle); a server log is read by `rankscope summary samples/tp8-baseline/server.log`",
        ));
    rankscope()
        .args(["mem", "/nonexistent/snapshot.pickle"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("/nonexistent/snapshot.pickle: "));

    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        "samples/tp8-baseline/snapshot_rank0.pickle",
        dir.path().join("snapshot_rank0.pickle"),
    )
    .unwrap();
    let shown = dir.path().display().to_string();
    rankscope()
        .args(["summary", &shown])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!(
            "it holds 1 PyTorch memory snapshot: read it with `rankscope mem {shown}`"
        )));
}
