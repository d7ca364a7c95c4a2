//! Trial 20 of issue 28 (`glintserve`, `tests/fixtures/made-up-server-22/`, written from
//! docs/grammars.md alone): a vLLM V1 fork, TP8 in one file — the API server's stdout,
//! into which the engine core (`{GlintCore pid=4100}`) and eight workers (`{GlintWorker-R
//! rk=R pid=P}`, named by a `[[process]]` rule's `global_rank`) write. In `failing/`
//! (`swap_space_gib` 4 → 48) worker 5 is killed by the kernel during KV-cache allocation
//! and prints nothing of it: its last line is its memory profile (line 45); the engine
//! reports `monitor: worker GlintWorker-5 (pid 4206) died unexpectedly, exitcode=-9
//! (SIGKILL)` (line 55), then `shutting down executor: 7 of 8 workers still alive` (56);
//! the seven others print `stop requested by executor` (57–63). `grammar.toml` captures
//! the dead worker as `dead_rank`; `grammar-v1.toml` is the trial's, which moved the line
//! to TP5 with a `line` rank rule. Values by `grep -n`.

use super::common;

use common::flat;

const DIR: &str = "tests/fixtures/made-up-server-22";

/// Q3: the worker the engine reports dead, whose own log just ends, is the root; the
/// engine's line is its evidence (`reported_by`), the engine a consequence of it, and the
/// line's `failure = "signal"` (from `exitcode=-9 (SIGKILL)`) its kind.
#[test]
fn the_worker_the_engine_reports_dead_is_the_root() {
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let tp5 = &common::rank_entry(&s, "TP5")["failure"];
    assert_eq!(tp5["outcome"], "failed");
    assert_eq!(tp5["kind"], "signal");
    assert_eq!(tp5["phase"], "kv_cache");
    assert_eq!(tp5["phase_from"], "last_event");
    assert_eq!(tp5["reported_by"], "engine");
    assert_eq!(
        (tp5["source"].as_str(), tp5["line"].as_u64()),
        (Some("failing/glint.log"), Some(55))
    );
    let engine = &common::rank_entry(&s, "engine")["failure"];
    assert_eq!(engine["outcome"], "consequence");
    assert_eq!(engine["consequence_of"], "TP5");
    for r in [0, 1, 2, 3, 4, 6, 7] {
        let f = &common::rank_entry(&s, &format!("TP{r}"))["failure"];
        assert_eq!(f["outcome"], "terminated", "TP{r}");
        assert_eq!(f["consequence_of"], "TP5", "TP{r}");
    }
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "failing"]);
    let text = flat(&text);
    assert!(
        text.contains(
            "root: TP5 was stopped by a signal in kv_cache (phase from last event at \
             failing/glint.log:45), reported by engine at failing/glint.log:55; its own log \
             says nothing of its end"
        ),
        "{text}"
    );
}

/// M1: a `line` rank rule moves its one line: the engine's other line (56) stays the
/// engine's, and the engine keeps its row (the process took TP5's rank from it).
#[test]
fn a_line_rule_moves_one_line_not_the_process() {
    let e = common::fixture_json(DIR, "grammar-v1.toml", &["events", "--json", "failing"]);
    let rank_at = |line: u64| {
        (e["events"].as_array().unwrap().iter())
            .find(|e| e["line"] == line)
            .map(|e| e["rank"].clone())
            .unwrap()
    };
    assert_eq!(rank_at(55), "TP5");
    assert_eq!(rank_at(56), "engine");
    let s = common::fixture_json(DIR, "grammar-v1.toml", &["summary", "--json", "failing"]);
    let engine = &common::rank_entry(&s, "engine")["failure"];
    assert_eq!(
        (engine["line"].as_u64(), &engine["consequence_of"]),
        (Some(56), &"TP5".into())
    );
}

/// M2: with workers named by a global rank alone (`VllmWorker rank=1`) and a configuration
/// giving `tensor_parallel_size`, vLLM's engine core is the engine, not TP0 (a lone engine
/// was taken for a one-GPU run's process); and its `Worker proc VllmWorker-1 died
/// unexpectedly` line, read by the built-in grammar, blames TP1, whose log ends at line 3.
#[test]
fn vllms_engine_is_no_rank_and_names_the_dead_worker() {
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(DIR)
        .args(["summary", "--json", "repro-engine-tp0.log"])
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tp1 = &common::rank_entry(&s, "TP1")["failure"];
    assert_eq!(
        (tp1["kind"].as_str(), tp1["line"].as_u64()),
        (Some("died"), Some(4))
    );
    assert_eq!(tp1["reported_by"], "engine");
    assert_eq!(tp1["phase"], "weight_load");
    assert_eq!(
        common::rank_entry(&s, "engine")["failure"]["consequence_of"],
        "TP1"
    );
    assert_eq!(common::rank_entry(&s, "TP0")["outcome"], "incomplete");
}
