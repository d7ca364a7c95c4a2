//! The third made-up server of issue 28 (`tarnwell`), written by a second newcomer from
//! docs/grammars.md alone (`tests/fixtures/made-up-server-4/`: grammar.toml, the runs,
//! EXPECTED.md written before running the tool, QUESTIONS.md). Every expected value below
//! is read off `baseline/*.log` and `failing/*.log` by hand (EXPECTED.md derives them;
//! line numbers are `grep -n`'s), and the tests of the trial's defects (QUESTIONS.md 2, 3,
//! 8, 10 and the KiB cell) fail on the tool as it was before the fixes.

use super::common;

use serde_json::Value;

const DIR: &str = "tests/fixtures/made-up-server-4";
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// `rankscope --grammar GRAMMAR ARGS…` from the fixture's directory (sources are named
/// `failing/worker-2.log`, as EXPECTED.md names them): exit code and stdout.
fn run_in(grammar: &str, args: &[&str]) -> (Option<i32>, String) {
    common::fixture_run(DIR, grammar, args)
}

fn run(args: &[&str]) -> (Option<i32>, String) {
    run_in("grammar.toml", args)
}

fn json(args: &[&str]) -> Value {
    common::fixture_json(DIR, "grammar.toml", args)
}

/// The grammar, or a copy of a run, edited, in a temporary directory inside the fixture's.
fn temp() -> (tempfile::TempDir, String) {
    common::temp_in(DIR)
}

fn rank<'a>(summary: &'a Value, name: &str) -> &'a Value {
    common::rank_entry(summary, name)
}

fn diff_figure<'a>(d: &'a Value, phase: &str, name: &str) -> Option<&'a Value> {
    d["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["phase"] == phase && f["name"] == name)
}

#[test]
fn the_grammar_checks_its_13_samples() {
    let (code, out) = run_in("grammar.toml", &["grammars", "check", "grammar.toml"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("13 samples checked, 0 failed"), "{out}");
}

/// QUESTIONS.md 2 and 3: the newcomer's first guesses, `rank = "-"` for a launcher line
/// (as summary prints it) and `waited_s = 20` for a printed `(20s)`, now pass; wrong
/// values fail with words a grammar author reads, not Rust debug or a bare ``.
#[test]
fn samples_accept_a_dash_rank_and_whole_seconds_and_say_what_was_read() {
    let text = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    let (dir, name) = temp();
    let guessed = text.replacen("rank = \"\"", "rank = \"-\"", 1).replacen(
        "waited_s = 20.0",
        "waited_s = 20",
        1,
    );
    assert_ne!(guessed, text);
    std::fs::write(dir.path().join("guessed.toml"), &guessed).unwrap();
    let (code, out) = run(&["grammars", "check", &format!("{name}/guessed.toml")]);
    assert_eq!(code, Some(0), "{out}");

    let wrong = text.replacen("rank = \"\"", "rank = \"TP0\"", 1).replacen(
        "waited_s = 20.0",
        "waited_s = 21",
        1,
    );
    std::fs::write(dir.path().join("wrong.toml"), &wrong).unwrap();
    let (code, out) = run(&["grammars", "check", &format!("{name}/wrong.toml")]);
    assert_eq!(code, Some(1), "{out}");
    // launcher.log's config line names no rank; worker-0's wait line printed `(20s)`.
    assert!(
        out.contains(
            "the line's rank reads as none (`-`: the line names no rank), the sample says `TP0`: \
             write `rank = \"-\"` if the line names no rank on its own"
        ),
        "{out}"
    );
    assert!(
        out.contains("field `waited_s` read 20 (a number), expected 21"),
        "{out}"
    );
    assert!(!out.contains("Some("), "{out}");
    assert!(out.contains("13 samples checked, 2 failed"), "{out}");
}

#[test]
fn failing_run_root_and_consequences_as_expected() {
    let s = json(&["summary", "--json", "failing"]);
    assert_eq!(s["run"]["root"], "TP2");
    let f = &rank(&s, "TP2")["failure"];
    assert_eq!(f["outcome"], "failed");
    assert_eq!(f["kind"], "oom");
    assert_eq!(f["phase"], "cuda_graph");
    // No `phase` on the oom event: the phase is the rank's last phase line (worker-2.log:6,
    // `tracing 12 batch shapes`).
    assert_eq!(f["phase_from"], "last_event");
    assert_eq!(f["source"], "failing/worker-2.log");
    assert_eq!(f["line"], 7);
    // `wanted 640.00 MiB, 418.00 MiB free of 48.00 GiB`
    assert_eq!(f["fields"]["requested_bytes"]["bytes"], 640 * 1024 * 1024);
    assert_eq!(f["fields"]["free_bytes"]["bytes"], 418 * 1024 * 1024);
    assert_eq!(f["fields"]["capacity_bytes"]["bytes"], 48u64 << 30);
    for name in ["TP0", "TP1", "TP3"] {
        let f = &rank(&s, name)["failure"];
        assert_eq!(f["outcome"], "consequence", "{name}");
        assert_eq!(f["kind"], "timeout", "{name}");
        assert_eq!(f["phase"], "cuda_graph", "{name}");
        assert_eq!(f["consequence_of"], "TP2", "{name}");
        assert_eq!(f["line"], 8, "{name}");
    }
    // 35 lines: launcher 4 (2 noise before the failure, `exited with status` the third)
    // + workers 8 + 8 + 7 + 8; 32 events.
    let lines = &s["run"]["lines"];
    assert_eq!(lines["lines"], 35);
    assert_eq!(lines["events"], 32);
    assert_eq!(lines["noise"], 3);
    let (_, out) = run(&["summary", "failing"]);
    assert!(out.starts_with("FAILED"), "{out}");
    assert!(
        out.contains("remedy: deficit: at least 222.00 MiB"),
        "{out}"
    );
}

#[test]
fn baseline_is_ready_with_its_figures() {
    let (code, out) = run(&["summary", "baseline"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("READY"), "{out}");
    assert!(out.contains("started 2026-11-30 14:02:00.020"), "{out}");
    assert!(out.contains("kv blocks        4,060 blocks"), "{out}");
    // QUESTIONS.md 8: a declared figure counted in tokens says so.
    assert!(out.contains("block tokens     32 tokens"), "{out}");
    let s = json(&["summary", "--json", "baseline"]);
    let kv = rank(&s, "TP1")["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "kv_cache")
        .unwrap();
    let figure = |n: &str| {
        kv["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == n)
            .unwrap()
            .clone()
    };
    // `block table ready: 4060 blocks x 32 tok, 31.72 GiB`
    assert_eq!(figure("kv_blocks")["value"], 4060);
    assert_eq!(figure("block_tokens")["value"], 32);
    assert_eq!(figure("block_tokens")["unit"], "tokens");
    assert_eq!(figure("kv_size")["value"], (31.72 * GIB).round() as i64);
}

/// `comm buffers 294912 KiB` is 288 MiB exactly, resolution 1 KiB: `--json` keeps that
/// resolution; the rank table's and diff's 10-column cells show `288.00 MiB`, whole,
/// where they printed `288.000 MiB` past the column and `288.000 M…`.
#[test]
fn a_whole_kib_figure_fits_its_cells_and_keeps_its_resolution_in_json() {
    let s = json(&["summary", "--json", "failing"]);
    let dist = rank(&s, "TP0")["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "dist_init")
        .unwrap()
        .clone();
    let mem = &dist["figures"][0];
    assert_eq!(mem["name"], "mem_usage");
    assert_eq!(mem["value"], 294_912 * 1024);
    assert_eq!(mem["resolution"], 1024);
    let (_, out) = run(&["summary", "--ranks", "failing"]);
    assert!(
        out.contains("TP0          cuda_graph  consequence  288.00 MiB 7.25 GiB   -          -"),
        "{out}"
    );
    let (_, out) = run(&["diff", "baseline", "failing"]);
    assert!(
        out.contains("dist_init    mem usage       288.00 MiB   288.00 MiB   ±0 B"),
        "{out}"
    );
    assert!(!out.contains("M…"), "{out}");
}

#[test]
fn diff_names_the_config_change_and_the_first_divergence() {
    let d = json(&["diff", "--json", "baseline", "failing"]);
    assert_eq!(d["exit_code"], 1);
    assert_eq!(
        d["config"]["changed"],
        serde_json::json!([{"key": "cache_frac", "old": 0.8, "new": 0.93}])
    );
    assert_eq!(d["first_divergence"]["phase"], "kv_cache");
    assert_eq!(d["first_divergence"]["name"], "kv_size");
    // 4722 - 4060 blocks, on every rank.
    let blocks = diff_figure(&d, "kv_cache", "kv_blocks").unwrap();
    assert_eq!(blocks["ranks_moved"], 4);
    assert_eq!(blocks["delta"]["median"], 662.0);
    let (_, out) = run(&["diff", "baseline", "failing"]);
    assert!(out.contains("config    cache_frac  0.8 -> 0.93"), "{out}");
    assert!(out.contains("cache_frac 0.93 -> 0.8"), "{out}");
}

/// QUESTIONS.md 10: the grammar maps `avail_before` on kv_cache's begin line, a phase no
/// built-in grammar prints it in; summary showed it, diff never compared it. Now it is
/// compared, and a free-memory drop there (39.67 -> 37.10 GiB on every worker, line 4) is
/// the run's first divergence: it is read before the KV pool's size.
#[test]
fn diff_compares_avail_before_where_the_grammar_maps_it() {
    let d = json(&["diff", "--json", "baseline", "failing"]);
    let kv = diff_figure(&d, "kv_cache", "avail_before").expect("kv_cache avail_before");
    assert_eq!(kv["baseline_median"], (39.67 * GIB).round());
    assert_eq!(kv["ranks_moved"], 0);

    let (dir, name) = temp();
    let probe = dir.path().join("failing");
    std::fs::create_dir(&probe).unwrap();
    for entry in std::fs::read_dir(format!("{DIR}/failing")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text.replace("39.67 GiB free", "37.10 GiB free");
        std::fs::write(probe.join(path.file_name().unwrap()), text).unwrap();
    }
    let d = json(&["diff", "--json", "baseline", &format!("{name}/failing")]);
    assert_eq!(d["first_divergence"]["phase"], "kv_cache");
    assert_eq!(d["first_divergence"]["name"], "avail_before");
    let kv = diff_figure(&d, "kv_cache", "avail_before").unwrap();
    assert_eq!(kv["ranks_moved"], 4);
    assert_eq!(kv["worse"], true);
    let (_, out) = run(&["diff", "baseline", &format!("{name}/failing")]);
    assert!(
        out.contains("cause     kv_cache  avail before -2.57 GiB on 4/4 ranks"),
        "{out}"
    );
}
