//! The fourth made-up server of issue 28 (`tarnlight`), written by a third newcomer from
//! docs/grammars.md alone (`tests/fixtures/made-up-server-5/`: grammar.toml, the runs,
//! EXPECTED.md written before running the tool, QUESTIONS.md): 8 ranks as 2 PP x 4 TP on
//! two hosts, epoch-second stamps, ranks named by an `assignment` line and learnt by pid,
//! KV in pages, no kv_cache begin line, a panic in weight_load on PP1 TP2. Every expected
//! value is read off `baseline/*.log` and `failing/*.log` by hand (EXPECTED.md derives
//! them; line numbers are `grep -n`'s); the tests of the trial's defects (M1 rank names,
//! M5 first-line resolution, Q9 borrowed barrier exits, E1 assignment samples) fail on
//! the tool as it was before the fixes.

use super::common;

use serde_json::Value;

const DIR: &str = "tests/fixtures/made-up-server-5";
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

/// `rankscope --grammar GRAMMAR ARGS…` from the fixture's directory (sources are named
/// `failing/gpu-b.log`, as EXPECTED.md names them): exit code and stdout.
fn run_in(grammar: &str, args: &[&str]) -> (Option<i32>, String) {
    common::fixture_run(DIR, grammar, args)
}

fn run(args: &[&str]) -> (Option<i32>, String) {
    run_in("grammar.toml", args)
}

fn json_in(grammar: &str, args: &[&str]) -> Value {
    common::fixture_json(DIR, grammar, args)
}

fn json(args: &[&str]) -> Value {
    json_in("grammar.toml", args)
}

/// A grammar or a run, edited, in a temporary directory inside the fixture's.
fn temp() -> (tempfile::TempDir, String) {
    common::temp_in(DIR)
}

fn grammar_text() -> String {
    std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap()
}

fn rank<'a>(summary: &'a Value, name: &str) -> &'a Value {
    common::rank_entry(summary, name)
}

fn phase<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["run"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == name)
        .unwrap()
}

fn figure<'a>(phase: &'a Value, name: &str) -> &'a Value {
    phase["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no figure {name}"))
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_str()
                .unwrap_or_else(|| r["rank"].as_str().unwrap())
                .to_string()
        })
        .collect()
}

/// The 8 ranks, stage by stage (EXPECTED.md "Ranks are expected to be named").
const RANKS: [&str; 8] = [
    "PP0 TP0", "PP0 TP1", "PP0 TP2", "PP0 TP3", "PP1 TP0", "PP1 TP1", "PP1 TP2", "PP1 TP3",
];

/// E1: sample 3 (`rank map: global 6 = pp 1 / tp 2`) states the rank the line assigns its
/// process, and a wrong one is named as an assignment's.
#[test]
fn the_grammar_checks_its_19_samples_and_an_assignment_sample_states_its_rank() {
    let (code, out) = run(&["grammars", "check", "grammar.toml"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("19 samples checked, 0 failed"), "{out}");

    let text = grammar_text();
    let (dir, name) = temp();
    let wrong = text.replacen("rank = \"PP1 TP2\"", "rank = \"PP1 TP1\"", 1);
    assert_ne!(wrong, text);
    std::fs::write(dir.path().join("wrong.toml"), &wrong).unwrap();
    let (code, out) = run(&["grammars", "check", &format!("{name}/wrong.toml")]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "the line's rank reads as `PP1 TP2` (assigned to the line's process by its \
             `assignment` rule), the sample says `PP1 TP1`: write `rank = \"PP1 TP2\"`"
        ),
        "{out}"
    );

    // A stage-0 assignment read from one line is `TP2` (the line cannot know of other
    // stages); the run names it `PP0 TP2`, and a sample may say either.
    let stage0 = text.replacen(
        "1796158801.278 gpu-b tarnlight[7733]: lr2 I rank map: global 6 = pp 1 / tp 2 on cuda:2\"\nkind = \"rank_map\"\nrank = \"PP1 TP2\"",
        "1796158801.278 gpu-a tarnlight[4103]: lr2 I rank map: global 2 = pp 0 / tp 2 on cuda:2\"\nkind = \"rank_map\"\nrank = \"PP0 TP2\"",
        1,
    ).replacen("fields = { pp = 1, tp = 2, device = 2 }", "fields = { pp = 0, tp = 2, device = 2 }", 1);
    assert_ne!(stage0, text);
    std::fs::write(dir.path().join("stage0.toml"), &stage0).unwrap();
    let (code, out) = run(&["grammars", "check", &format!("{name}/stage0.toml")]);
    assert_eq!(code, Some(0), "{out}");
}

/// M1: stage 0 is `PP0 TP0` … beside `PP1 TP0` …, in (PP, TP) order, in the rank list,
/// the nodes and the text.
#[test]
fn ranks_are_named_pp_by_tp_and_sorted_by_stage() {
    for run_dir in ["baseline", "failing"] {
        let s = json(&["summary", "--json", run_dir]);
        assert_eq!(names(&s["run"]["ranks"]), RANKS, "{run_dir}");
        let nodes = s["run"]["nodes"].as_array().unwrap();
        assert_eq!(nodes[0]["name"], "gpu-a");
        assert_eq!(names(&nodes[0]["ranks"]), RANKS[..4]);
        assert_eq!(names(&nodes[1]["ranks"]), RANKS[4..]);
    }
    let (code, out) = run(&["summary", "baseline"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("gpu-a (4 ranks PP0 TP0…PP0 TP3)"), "{out}");
    assert!(!out.contains(" TP0…TP3"), "{out}");
}

/// M5: the first line `1796158800.000` is a millisecond stamp (`%s%.3f`), read as UTC.
#[test]
fn the_first_line_keeps_its_formats_millisecond_resolution() {
    let s = json(&["summary", "--json", "baseline"]);
    let first = &s["identity"]["first_line"];
    // 1796158800 s since the epoch is 2026-12-01 21:00:00 UTC (EXPECTED.md).
    assert_eq!(first["at"], "2026-12-01T21:00:00.000000-00:00");
    assert_eq!(first["resolution_s"], 0.001);
    let (_, out) = run(&["summary", "baseline"]);
    assert!(out.contains("started 2026-12-01 21:00:00.000,"), "{out}");
    let f = json(&["summary", "--json", "failing"]);
    assert_eq!(f["identity"]["first_line"]["resolution_s"], 0.001);
}

#[test]
fn baseline_is_ready_with_its_figures_and_line_counts() {
    let s = json(&["summary", "--json", "baseline"]);
    for r in RANKS {
        assert_eq!(rank(&s, r)["outcome"], "ready", "{r}");
    }
    // 8.61 GiB (stage 0) and 8.86 GiB (stage 1, the LM head) of weights, rounded bytes.
    let w = figure(phase(&s, "weight_load"), "mem_usage");
    assert_eq!(w["spread"]["min"], (8.61 * GIB).round());
    assert_eq!(w["spread"]["max"], (8.86 * GIB).round());
    // 72,000 pages of 640 KiB on stage 0 (45000.0 MiB), 71,600 on stage 1 (44750.0 MiB).
    let kv = phase(&s, "kv_cache");
    let pages = figure(kv, "kv_pages");
    assert_eq!(pages["unit"], "pages");
    assert_eq!(pages["spread"]["min"], 71600.0);
    assert_eq!(pages["spread"]["max"], 72000.0);
    assert_eq!(figure(kv, "page_tokens")["spread"]["max"], 32.0);
    assert_eq!(figure(kv, "kv_size")["spread"]["min"], 44750.0 * MIB);
    assert_eq!(figure(kv, "kv_size")["spread"]["max"], 45000.0 * MIB);
    // kv_cache is begun by the weights line (`then`): 1.170 s (PP0 TP3) to 1.493 s
    // (PP1 TP0) from it to the pages line.
    assert_eq!(kv["completed"], 8);
    assert_eq!(kv["duration_s"]["min"], 1.17);
    assert_eq!(kv["duration_s"]["max"], 1.493);
    // 47 + 44 lines; 2 launcher events and 10 per worker; 8 progress lines and 1 http line.
    let lines = &s["run"]["lines"];
    assert_eq!(lines["lines"], 91);
    assert_eq!(lines["events"], 82);
    assert_eq!(lines["noise"], 9);
    assert_eq!(lines["unknown"], 0);
}

#[test]
fn failing_run_root_is_pp1_tp2_and_seven_ranks_timed_out_after_it() {
    let (code, _) = run(&["summary", "failing"]);
    assert_eq!(code, Some(0));
    let s = json(&["summary", "--json", "failing"]);
    assert_eq!(s["run"]["root"], "PP1 TP2");
    let root = &rank(&s, "PP1 TP2")["failure"];
    assert_eq!(root["outcome"], "failed");
    assert_eq!(root["kind"], "exception");
    assert_eq!(root["phase"], "weight_load");
    assert_eq!(root["phase_from"], "last_event");
    assert_eq!(root["source"], "failing/gpu-b.log");
    assert_eq!(root["line"], 17);
    assert_eq!(root["ts"]["at"], "2026-12-01T22:30:07.225000-00:00");
    // The `timed out` lines: gpu-a.log:40-43 (stage 0), gpu-b.log:33-35 (PP1 TP0, 1, 3).
    let expect = [
        ("PP0 TP0", "failing/gpu-a.log", 40),
        ("PP0 TP1", "failing/gpu-a.log", 41),
        ("PP0 TP2", "failing/gpu-a.log", 42),
        ("PP0 TP3", "failing/gpu-a.log", 43),
        ("PP1 TP0", "failing/gpu-b.log", 33),
        ("PP1 TP1", "failing/gpu-b.log", 34),
        ("PP1 TP3", "failing/gpu-b.log", 35),
    ];
    for (r, source, line) in expect {
        let f = &rank(&s, r)["failure"];
        assert_eq!(f["outcome"], "consequence", "{r}");
        assert_eq!(f["kind"], "timeout", "{r}");
        assert_eq!(f["phase"], "kv_cache", "{r}");
        assert_eq!(f["consequence_of"], "PP1 TP2", "{r}");
        assert_eq!(f["source"], source, "{r}");
        assert_eq!(f["line"], line, "{r}");
    }
    // 44 + 35 lines; launcher 4 events, PP1 TP2 5, the 7 others 9 each; 7 progress lines.
    let lines = &s["run"]["lines"];
    assert_eq!(lines["lines"], 79);
    assert_eq!(lines["events"], 72);
    assert_eq!(lines["noise"], 7);
    assert_eq!(lines["unknown"], 0);
}

/// Q9/M6: only the grammar's own marked line (the post-load barrier) aligns the clocks;
/// its `dist_init_end`, `kv_cache_alloc` and `cuda_graph_end` no longer borrow SGLang's
/// mark (before: 4 barrier exits in the baseline, 1 in the failing run, which has no
/// barrier line of its own).
#[test]
fn only_the_lines_the_grammar_marks_are_barrier_exits() {
    let s = json(&["summary", "--json", "baseline"]);
    let gpu_b = &s["run"]["nodes"][1];
    assert_eq!(gpu_b["clock_offset"]["barrier_events"], 1, "{gpu_b}");
    let f = json(&["summary", "--json", "failing"]);
    assert_eq!(f["run"]["nodes"][1]["clock_offset"], Value::Null);

    let text = grammar_text();
    let (dir, name) = temp();
    let unmarked = text.replacen("barrier_exit = true ", "barrier_exit = false", 1);
    assert_ne!(unmarked, text);
    std::fs::write(dir.path().join("unmarked.toml"), &unmarked).unwrap();
    let g = format!("{name}/unmarked.toml");
    let s = json_in(&g, &["summary", "--json", "baseline"]);
    assert_eq!(s["run"]["nodes"][1]["clock_offset"], Value::Null);
    let (_, out) = run_in(&g, &["summary", "baseline"]);
    assert!(out.contains("no barrier exit in common"), "{out}");
}

#[test]
fn diff_names_the_config_change_the_suspects_and_the_time() {
    let d = json(&["diff", "--json", "baseline", "failing"]);
    assert_eq!(d["exit_code"], 1);
    assert_eq!(d["status"], "failed");
    // gpu-a.log:2 of each run: the only two changed keys, in the configuration's order.
    let changed = d["config"]["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert_eq!(changed[0]["key"], "model");
    assert_eq!(changed[1]["key"], "load_format");
    // Both are named by the failure ("shard file"); `model`'s new value is in the message
    // too (one hit more), so it comes first (docs/grammars.md, Causes and remedies).
    let suspects = d["failure_cause"]["suspects"].as_array().unwrap();
    assert_eq!(suspects[0]["setting"], "model");
    assert_eq!(suspects[1]["setting"], "load_format");
    assert_eq!(suspects[1]["why"], "named");
    // Remedies only for memory failures: none for an exception.
    assert_eq!(d["remedies"]["remedies"], Value::Array(Vec::new()));
    // weight_load from dist_init's end to the weights line: 21.02 … 21.34 s in the
    // baseline, 6.31 … 6.46 s in the failing run, on the 7 ranks that finished it; no
    // figure moved, so no first divergence (times never are one).
    let wl = d["time"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "weight_load")
        .unwrap();
    assert_eq!(wl["ranks_compared"], 7);
    assert_eq!(wl["ranks_moved"], 7);
    let delta = wl["delta"]["median"].as_f64().unwrap();
    assert!((-14.9..=-14.7).contains(&delta), "{delta}");
    assert_eq!(d["first_divergence"], Value::Null);

    let (code, out) = run(&["diff", "baseline", "failing"]);
    assert_eq!(code, Some(1));
    // Printed in Rust's `{:?}`: no quotes around the variant, double quotes on the path.
    assert!(out.contains("load_format  Safetensors -> Sharded"), "{out}");
    assert!(
        out.contains(r#"model  "/models/tarn-70b" -> "/models/tarn-70b-sharded""#),
        "{out}"
    );
    assert!(out.contains("weight_load -14.8 s on 7/7 ranks"), "{out}");
}

/// Q10: a configuration pretty-printed over several unprefixed lines (`{:#?}`) is read
/// with `traceback = true` on the `server_args` event, as docs/grammars.md says.
#[test]
fn a_pretty_printed_config_is_read_with_traceback() {
    let text = grammar_text();
    let (dir, name) = temp();
    let g = text.replacen(
        "kind = \"server_args\"\nliterals",
        "kind = \"server_args\"\ntraceback = true\nliterals",
        1,
    );
    assert_ne!(g, text);
    std::fs::write(dir.path().join("g.toml"), &g).unwrap();
    let run_dir = dir.path().join("run");
    std::fs::create_dir(&run_dir).unwrap();
    std::fs::copy(
        format!("{DIR}/baseline/gpu-b.log"),
        run_dir.join("gpu-b.log"),
    )
    .unwrap();
    let a = std::fs::read_to_string(format!("{DIR}/baseline/gpu-a.log")).unwrap();
    let one_line = a.lines().nth(1).unwrap();
    let (head, body) = one_line.split_once("TarnConfig { ").unwrap();
    let body = body.strip_suffix(" }").unwrap();
    // Split on `, ` outside the list `[1, 2, …]`.
    let mut fields = Vec::new();
    let (mut depth, mut start) = (0, 0);
    let bytes = body.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'[' => depth += 1,
            b']' => depth -= 1,
            b',' if depth == 0 => {
                fields.push(&body[start..i]);
                start = i + 2;
            }
            _ => {}
        }
    }
    fields.push(&body[start..]);
    assert_eq!(fields.len(), 11, "{fields:?}");
    let pretty: String = std::iter::once(format!("{head}TarnConfig {{"))
        .chain(fields.iter().map(|f| format!("    {f},")))
        .chain(std::iter::once("}".to_string()))
        .collect::<Vec<_>>()
        .join("\n");
    let a = a.replacen(one_line, &pretty, 1);
    std::fs::write(run_dir.join("gpu-a.log"), a).unwrap();
    let gname = format!("{name}/g.toml");
    let d = json_in(
        &gname,
        &["diff", "--json", &format!("{name}/run"), "failing"],
    );
    let changed: Vec<&str> = d["config"]["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["key"].as_str().unwrap())
        .collect();
    assert_eq!(changed, ["model", "load_format"]);
}
