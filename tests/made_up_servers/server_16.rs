//! Trial 14 of issue 28 (`brightline`, `tests/fixtures/made-up-server-16/`, written from
//! docs/grammars.md alone): a fork of vLLM V1 that renames its processes
//! (`(BrightWorker rank=1 pid=4243)`, `(BrightCore_0 pid=4100)`), counts KV in pages and
//! times its own torch.compile step. `grammar.toml` is the trial's grammar with an id of its
//! own beside the built-in vLLM grammar (its first attempt, which failed then); the
//! trial's replacing grammar (`id = "vllm"`) is kept as `grammar-replacing.toml`. In
//! `failing/` (gpu_memory_utilization 0.9 → 0.97) TP1 runs out of memory in capture
//! (line 32, under its `WorkerProc failed to start.` header at line 20), the engine
//! reports the worker's death (33), TP0 gets SIGTERM (34) and the API server fails (35,
//! its traceback's last line 41). Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-16";

/// The grammar, its id its own, with `new` replacing `old` once, written in a temporary
/// directory of the fixture: the temporary directory (kept alive) and the file's path.
fn variant(old: &str, new: &str) -> (tempfile::TempDir, String) {
    let (dir, name) = common::temp_in(DIR);
    let grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    let changed = grammar.replacen(old, new, 1);
    assert_ne!(changed, grammar, "`{old}` is in the fixture's grammar");
    std::fs::write(dir.path().join("g.toml"), changed).unwrap();
    (dir, format!("{name}/g.toml"))
}

/// M1: a user grammar's prefix reading the same span as the built-in vLLM one governs, so
/// the fork's worker lines keep the rank its `tp` capture reads (10 of 17 samples failed,
/// the engine's line became TP0's and its row vanished).
#[test]
fn the_forks_own_prefix_reads_its_workers_beside_the_built_in_vllm() {
    let (code, out) =
        common::fixture_run(DIR, "grammar.toml", &["grammars", "check", "grammar.toml"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("17 samples checked, 0 failed"), "{out}");
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let tp1 = &common::rank_entry(&s, "TP1")["failure"];
    assert_eq!(
        (tp1["kind"].as_str(), tp1["line"].as_i64()),
        (Some("oom"), Some(32))
    );
    let tp0 = &common::rank_entry(&s, "TP0");
    assert_eq!(tp0["outcome"], "terminated");
    assert_eq!(tp0["failure"]["line"], 34);
    let engine = common::rank_entry(&s, "engine");
    assert_eq!(engine["outcome"], "consequence");
}

/// The check message when another grammar's prefix does read the line: a worker prefix
/// cut short (it ends at `) `) loses to vLLM's `process_logger`, which ends after the
/// logger's `[file:line] `, and the message names it.
#[test]
fn a_sample_read_by_another_grammars_prefix_names_that_prefix() {
    // The worker prefix without its logger part, so it ends before vLLM's does.
    let full = r"\) (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<md>\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2}) \[[^\]]+\] '''";
    let (_dir, g) = variant(
        &format!("BrightWorker rank=(?P<tp>\\d+) pid=(?P<pid>\\d+){full}"),
        r"BrightWorker rank=(?P<tp>\d+) pid=(?P<pid>\d+)\) '''",
    );
    // The line's rank is still TP1 (vLLM's `[[process]]` rule reads `rank=1` in the
    // process name vLLM's prefix captured): a sample stating another rank shows the message.
    let path = format!("{DIR}/{g}");
    let text = std::fs::read_to_string(&path).unwrap();
    let wrong = text.replacen(
        "rank = \"TP1\"\ntime = \"12-02 09:14:06\"",
        "rank = \"TP3\"\ntime = \"12-02 09:14:06\"",
        1,
    );
    assert_ne!(wrong, text, "the dist_init_begin sample states TP1");
    std::fs::write(&path, wrong).unwrap();
    let (code, out) = common::fixture_run(DIR, &g, &["grammars", "check", &g]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "the line's prefix was read by grammar `vllm`'s `[[prefix]]` `process_logger`, not \
             by one of `brightline`"
        ),
        "{out}"
    );
}

/// M2: the server's grammar is named first, the others after it.
#[test]
fn read_as_names_the_server_first() {
    let (_, out) = common::fixture_run(DIR, "grammar-replacing.toml", &["summary", "failing"]);
    assert!(
        out.starts_with("FAILED  failing  2 ranks, 1 source, read as vllm+streams\n"),
        "{out}"
    );
}

/// M3, M8: a declared seconds figure prints as the durations do (38.2 s and 38.0 s:
/// median 38.1), and a count's delta keeps its word (20,756 − 17,920 = 2,836 pages).
#[test]
fn a_seconds_figure_and_a_page_delta_print_with_their_units() {
    let (_, out) = common::fixture_run(DIR, "grammar.toml", &["summary", "baseline"]);
    assert!(
        out.contains("\n  compile time     38.0 / 38.1 / 38.2 s\n"),
        "{out}"
    );
    let (_, out) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    assert!(
        out.contains("kv_cache     compile time    38.1 s       38.1 s       0 s          -\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "kv_cache     kv pages        17,920 pages 20,756 pages +2,836 pages 2/2 systematic\n"
        ),
        "{out}"
    );
}

/// M4: the API server's failure (line 35) came after both ranks' KV lines (16, 17) began
/// cuda_graph with `then`: it is placed in cuda_graph, where the ranks were.
#[test]
fn a_launcher_failure_after_then_lines_is_in_the_phase_they_began() {
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let f = &s["run"]["launcher_failures"][0];
    assert_eq!(f["line"], 35);
    assert_eq!(f["phase"], "cuda_graph");
    assert_eq!(f["phase_from"], "ranks_at_line");
}

/// Q4–Q6 as docs/grammars.md now answers them: the `WorkerProc failed to start.` header
/// as an `error` with `traceback = true` gives TP1's OOM the prefixed frames (phase from
/// frames: `capture_model` is the grammar's cuda_graph frame), and the engine's `died
/// unexpectedly` line as an `error` with a `peer_rank` follows TP1 in the phase the ranks
/// were in (the engine's own lines reached none).
#[test]
fn the_documented_header_and_engine_events_give_frames_and_the_engines_phase() {
    let (dir, g) = variant(
        "kind = \"worker_start_failed\"",
        "kind = \"error\"\ntraceback = true",
    );
    let text = std::fs::read_to_string(dir.path().join("g.toml")).unwrap();
    let text = text
        .replacen("kind = \"worker_start_failed\"", "kind = \"error\"", 1)
        .replacen(
            "kind = \"worker_died\"",
            "kind = \"error\"\nset = { outcome = \"consequence\" }",
            1,
        )
        .replace("(?P<worker>\\d+) died", "(?P<peer_rank>\\d+) died")
        .replacen(
            "units = { worker = \"int\" }",
            "units = { peer_rank = \"int\" }",
            1,
        )
        .replacen("kind = \"worker_died\"", "kind = \"error\"", 1)
        .replace("worker = 1", "peer_rank = 1");
    std::fs::write(dir.path().join("g.toml"), text).unwrap();
    let (code, out) = common::fixture_run(DIR, &g, &["grammars", "check", &g]);
    assert_eq!(code, Some(0), "{out}");
    let s = common::fixture_json(DIR, &g, &["summary", "--json", "failing"]);
    let tp1 = &common::rank_entry(&s, "TP1")["failure"];
    assert_eq!(tp1["kind"], "oom");
    assert_eq!(tp1["phase_from"], "frames");
    assert_eq!(tp1["phase"], "cuda_graph");
    let engine = &common::rank_entry(&s, "engine")["failure"];
    assert_eq!(engine["line"], 33);
    assert_eq!(engine["consequence_of"], "TP1");
    assert_eq!(engine["phase"], "cuda_graph");
    assert_eq!(engine["phase_from"], "ranks_at_line");
}
