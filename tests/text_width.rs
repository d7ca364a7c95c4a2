//! Text output at the width asked for: evidence wrapped, never cut; numbers kept with their
//! units; identical failures of several ranks grouped. Expected lines are read from the
//! sample logs themselves.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;

fn rankscope(args: &[&str]) -> String {
    let out = Command::cargo_bin("rankscope")
        .expect("bin")
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("run");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Line `n` (1-based) of `path`.
fn log_line(path: &str, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().nth(n - 1).expect("line exists").to_string()
}

/// The evidence entries of `--explain` (`  - path:line: message`, continuation lines
/// indented by six spaces), each joined back into one line.
fn evidence(text: &str) -> Vec<String> {
    let start = text
        .find("where each figure comes from")
        .expect("an --explain section");
    let mut out: Vec<String> = Vec::new();
    for line in text[start..].lines().skip(1) {
        if let Some(e) = line.strip_prefix("  - ").or(line.strip_prefix("  + ")) {
            out.push(e.to_string());
        } else if let (Some(cont), Some(last)) = (line.strip_prefix("      "), out.last_mut()) {
            last.push(' ');
            last.push_str(cont);
        }
    }
    out
}

/// `samples/…/server.log:26: Load weight end. …`: the message must be the log line after
/// its `[date time rank] ` prefix, whole.
fn assert_whole(entry: &str) {
    let (path, rest) = entry.split_once(':').expect("path:");
    let (line, message) = rest.split_once(": ").expect("line: message");
    let raw = log_line(path, line.parse().expect("a line number"));
    let after_prefix = raw.split_once("] ").map_or(raw.as_str(), |(_, m)| m);
    assert_eq!(message, after_prefix, "evidence cut or changed: {entry}");
}

/// tp8-baseline against tp8-custom-ar compares 8 figures (dist_init mem usage, weight_load
/// avail before/after and mem usage, kv_cache tokens, kv size and avail after, cuda_graph
/// avail before), each with a baseline and a candidate line: 16 evidence lines. At 200
/// columns each is on one line, whole — the longest, the candidate's `max_total_num_tokens=
/// 91141, …, available_gpu_mem=6.56 GB` (server.log:46, 153 characters after its prefix),
/// is 194 columns with `  + ` and its path; at 80 columns each wraps and, joined back, is
/// the same whole line.
#[test]
fn explain_evidence_is_never_cut() {
    let args = [
        "diff",
        "samples/tp8-baseline",
        "samples/tp8-custom-ar",
        "--explain",
    ];
    let wide = rankscope(&[&args[..], &["--width", "200"]].concat());
    let entries = evidence(&wide);
    assert_eq!(entries.len(), 16, "{wide}");
    for e in &entries {
        assert_whole(e);
    }
    // At 200 columns, no evidence entry needed a second line.
    let start = wide.find("where each figure comes from").expect("section");
    assert!(
        !wide[start..].lines().any(|l| l.starts_with("      ")),
        "{wide}"
    );
    assert!(wide.contains(&format!(
        "  - samples/tp8-baseline/server.log:45: {}",
        log_line("samples/tp8-baseline/server.log", 45)
            .split_once("] ")
            .expect("prefix")
            .1
    )));
    let narrow = rankscope(&[&args[..], &["--width", "80"]].concat());
    assert_eq!(evidence(&narrow), entries);
    assert!(narrow.lines().all(|l| !l.contains('…')), "{narrow}");
}

/// The units the text prints after a number.
const UNITS: [&str; 8] = ["B", "KiB", "MiB", "GiB", "GB", "s", "ranks", "tokens"];

/// No line ends in a number whose unit starts the next line.
fn assert_units_kept(text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    for w in lines.windows(2) {
        let ends_in_number = w[0]
            .trim_end()
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_digit());
        let next = w[1].split_whitespace().next().unwrap_or("");
        let next = next.trim_end_matches([',', ';', '.', ')']);
        assert!(
            !(ends_in_number && UNITS.contains(&next)),
            "number split from its unit:\n{}\n{}",
            w[0],
            w[1]
        );
    }
}

#[test]
fn numbers_stay_with_their_units_at_any_width() {
    for width in ["40", "50", "60", "72", "80", "100"] {
        assert_units_kept(&rankscope(&[
            "summary",
            "samples/tp8-custom-ar",
            "--ranks",
            "--width",
            width,
        ]));
        assert_units_kept(&rankscope(&[
            "diff",
            "samples/tp8-baseline",
            "samples/tp8-custom-ar",
            "--explain",
            "--width",
            width,
        ]));
        assert_units_kept(&rankscope(&[
            "mem",
            "samples/tp8-custom-ar/snapshot_rank0.pickle",
            "--width",
            width,
        ]));
    }
}

/// `mem` on tp8-custom-ar's rank-0 snapshot: its OOM is at `capture_graphs
/// (model_runner.py:161)`, under a process cap. At 40 columns every line of the OOM's
/// story wraps and nothing is cut.
#[test]
fn mem_evidence_wraps_at_any_width() {
    let text = rankscope(&[
        "mem",
        "samples/tp8-custom-ar/snapshot_rank0.pickle",
        "--width",
        "40",
    ]);
    assert!(!text.contains('…'), "{text}");
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        joined.contains("OOM asked 20.00 MiB at t+4.2 s in capture_graphs (model_runner.py:161)"),
        "{text}"
    );
    assert!(
        joined.contains("limit: the process's memory cap, not the device (31.05 GiB free on it)"),
        "{text}"
    );
}

/// samples/tp8-custom-ar/server.log holds eight `torch.OutOfMemoryError` lines, one per
/// rank TP0…TP7 (lines 82–144), the same message but for the per-process figures and their
/// order: under the rank table they are one entry naming the eight ranks, its message
/// printed once, whole (it ends in the PyTorch documentation URL).
#[test]
fn identical_failures_are_grouped_with_their_ranks() {
    let log = std::fs::read_to_string("samples/tp8-custom-ar/server.log").expect("log");
    assert_eq!(log.matches("torch.OutOfMemoryError").count(), 8);
    let text = rankscope(&[
        "summary",
        "samples/tp8-custom-ar",
        "--ranks",
        "--width",
        "120",
    ]);
    assert!(
        text.contains("  TP0–TP7 (8 ranks) failed: oom in cuda_graph  samples/tp8-custom-ar/server.log:98 (TP0,"),
        "{text}"
    );
    assert_eq!(text.matches("torch.OutOfMemoryError").count(), 1, "{text}");
    assert!(
        text.contains("#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"),
        "{text}"
    );
    // The snapshots' OOM requests: the eight ranks' pickles all OOM at the same site.
    assert!(
        text.contains("OOM request (snapshots): TP0–TP7 (8 ranks) asked"),
        "{text}"
    );
}

/// The verdict line of tp8-custom-ar, `8/8 ranks: oom in cuda_graph, tried to allocate
/// 20.00 MiB, 14.00 GiB allowed, 13.86 GiB allocated, 131.96 MiB reserved but
/// unallocated`, is 134 columns: one line at 140 columns, two at 80, each within the width.
#[test]
fn width_decides_where_lines_break() {
    let verdict = "8/8 ranks: oom in cuda_graph, tried to allocate 20.00 MiB, 14.00 GiB allowed, 13.86 GiB allocated, 131.96 MiB reserved but unallocated";
    assert_eq!(verdict.chars().count(), 134);
    let wide = rankscope(&["summary", "samples/tp8-custom-ar", "--width", "140"]);
    assert!(wide.lines().any(|l| l == verdict), "{wide}");
    let narrow = rankscope(&["summary", "samples/tp8-custom-ar"]);
    let at = narrow
        .lines()
        .position(|l| l.starts_with("8/8 ranks: oom"))
        .expect("verdict");
    let lines: Vec<&str> = narrow.lines().collect();
    assert!(lines[at].chars().count() <= 80 && lines[at + 1].chars().count() <= 80);
    assert_eq!(
        format!("{} {}", lines[at], lines[at + 1].trim_start()),
        verdict
    );
}

fn rankscope_env(env: &[(&str, &str)], args: &[&str]) -> String {
    let mut c = Command::cargo_bin("rankscope").expect("bin");
    c.env("NO_COLOR", "1").env_remove("COLUMNS");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.args(args).output().expect("run");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Piped output (stdout is not a terminal here) takes `COLUMNS`, as `ls` and git do; `--width`
/// still wins. node2-skew's clock section ("2 nodes, clocks against node0's (barrier exits;
/// stamps moved onto its clock):", 77 columns, and the 73-column "no straggler" line) was
/// printed whole at any width; tp8 baseline against custom-ar has 80-column lines at 80.
#[test]
fn columns_is_honoured_when_piped() {
    let skew = ["summary", "samples/node2-skew"];
    let at60 = rankscope_env(&[("COLUMNS", "60")], &skew);
    assert!(at60.contains("clocks against node0's"), "{at60}");
    assert!(widest(&at60) <= 60, "a line wider than COLUMNS=60:\n{at60}");
    let flag = rankscope_env(&[], &["summary", "--width", "60", "samples/node2-skew"]);
    assert_eq!(flag, at60);

    let diff = ["diff", "samples/tp8-baseline", "samples/tp8-custom-ar"];
    let default = rankscope_env(&[], &diff);
    assert_eq!(widest(&default), 80, "{default}");
    let narrow = rankscope_env(&[("COLUMNS", "60")], &diff);
    assert!(widest(&narrow) <= 60, "{narrow}");
    // --width wins over COLUMNS.
    let mut wide_args = vec!["--width", "80"];
    wide_args.extend(diff);
    assert_eq!(rankscope_env(&[("COLUMNS", "60")], &wide_args), default);
    // A COLUMNS that is not a width is ignored.
    assert_eq!(rankscope_env(&[("COLUMNS", "wide")], &diff), default);
}

/// At 60 columns (COLUMNS=60 in a narrow pane) the phase table's notes go under their row
/// instead of past the width (vllm-tp2's cuda_graph note "duration as printed (no begin
/// line)" reached column 71, trtllm-tp2's dist_init note column 70), and `diff
/// --explain`'s heading and clock line wrap (73 and 114 columns).
#[test]
fn narrow_output_keeps_notes_and_explain_lines_inside_the_width() {
    let vllm = rankscope_env(&[("COLUMNS", "60")], &["summary", "samples/vllm-tp2"]);
    assert!(widest(&vllm) <= 60, "{vllm}");
    let lines: Vec<&str> = vllm.lines().collect();
    let row = lines
        .iter()
        .position(|l| l.starts_with("cuda_graph "))
        .expect("the cuda_graph row");
    assert_eq!(
        lines[row + 1],
        "    duration as printed (no begin line)",
        "{vllm}"
    );
    let trt = rankscope_env(&[("COLUMNS", "60")], &["summary", "samples/trtllm-tp2"]);
    assert!(widest(&trt) <= 60, "{trt}");
    let explain = rankscope_env(
        &[("COLUMNS", "60")],
        &[
            "diff",
            "--explain",
            "samples/tp8-baseline",
            "samples/tp8-custom-ar",
        ],
    );
    assert!(widest(&explain) <= 60, "{explain}");
    assert!(
        explain.contains("\nclock: candidate snapshot clock"),
        "{explain}"
    );
    // At 80 the notes stay in their column.
    let wide = rankscope_env(&[], &["summary", "samples/vllm-tp2"]);
    assert!(
        wide.lines()
            .any(|l| l.starts_with("cuda_graph ") && l.ends_with("duration as printed (no")),
        "{wide}"
    );
}

#[test]
fn a_fleet_phase_table_shows_every_rank_count_whole() {
    // 128 TP ranks in one log, each with TP0's start-up lines of tp8-baseline: every phase
    // is `128/128`, one character wider than the narrowest RANKS column, which cut it to
    // `128/1…`. The column widens and the durations stay under their header.
    let base = std::fs::read_to_string("samples/tp8-baseline/server.log").expect("sample");
    let mut log = String::new();
    for line in base.lines().filter(|l| !l.contains(" TP")) {
        log.push_str(&line.replace("tp_size=8", "tp_size=128"));
        log.push('\n');
    }
    let tp0: Vec<&str> = base.lines().filter(|l| l.contains(" TP0]")).collect();
    assert_eq!(tp0.len(), 11, "TP0's lines in the sample");
    for line in &tp0 {
        for tp in 0..128 {
            log.push_str(&line.replace(" TP0]", &format!(" TP{tp}]")));
            log.push('\n');
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("server.log");
    std::fs::write(&path, log).expect("write");
    let out = rankscope(&["summary", "--width", "100", path.to_str().expect("utf-8")]);
    let header = (out.lines())
        .find(|l| l.starts_with("PHASE"))
        .unwrap_or_else(|| panic!("no phase table:\n{out}"));
    let duration_at = header.find("DURATION").expect("DURATION");
    let mut rows = 0;
    for phase in ["dist_init", "weight_load", "kv_cache", "cuda_graph"] {
        let row = (out.lines())
            .find(|l| l.starts_with(phase))
            .unwrap_or_else(|| panic!("no {phase} row:\n{out}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells.get(1), Some(&"128/128"), "{row}");
        // The duration (`2.0 / 2.0 / 2.0 s`, from the sample's stamps) starts under its
        // header.
        assert!(
            row[duration_at..].starts_with(|c: char| c.is_ascii_digit()),
            "{header}\n{row}"
        );
        rows += 1;
    }
    assert_eq!(rows, 4);
}
