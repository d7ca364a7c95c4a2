//! Trial 21 of issue 28 (`plover-serve`, `tests/fixtures/made-up-server-23/`, written from
//! docs/grammars.md alone): a fork of LMDeploy with its C++ engine, TP4 in one file — the
//! Python side's lines (no pid, no rank; `without_pid = "engine"`) and the engine's
//! `[TM][…]` lines naming a rank. In `failing/` (`cache_max_entry_count` 0.8 → 0.95) device
//! 2's workspace allocation runs out of memory; the Python side's failure line (35) opens a
//! bare traceback (36–41) that `RuntimeError: plovermind: …` closes (41), and the process
//! exits (42). `grammar.toml` is the trial's final grammar, with an event of its own on
//! line 41; `grammar-v1.toml` its first, without it. Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-23";

/// M2: the line closing a pidless engine's traceback, read by the built-in `streams`
/// grammar (its `SomethingError: message` event), is the engine's, as the traceback is:
/// it was a launcher's failure (`outside any rank: RuntimeError: …`), one failure told
/// twice.
#[test]
fn the_line_closing_an_engines_traceback_is_the_engines() {
    let e = common::fixture_json(DIR, "grammar-v1.toml", &["events", "--json", "failing"]);
    let at = |line: u64| {
        (e["events"].as_array().unwrap().iter())
            .find(|e| e["line"] == line)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (at(41)["grammar"].as_str(), at(41)["rank"].as_str()),
        (Some("streams"), Some("engine"))
    );
    assert_eq!(at(35)["rank"], "engine");
    let s = common::fixture_json(DIR, "grammar-v1.toml", &["summary", "--json", "failing"]);
    let launcher: Vec<u64> = (s["run"]["launcher_failures"].as_array().unwrap().iter())
        .filter_map(|f| f["line"].as_u64())
        .collect();
    assert_eq!(launcher, [42], "only the exit line is the launcher's");
    let (_, text) = common::fixture_run(DIR, "grammar-v1.toml", &["summary", "failing"]);
    assert!(!text.contains("outside any rank"), "{text}");
    assert!(
        common::flat(&text).contains("root: TP2 ran out of memory in cuda_graph"),
        "{text}"
    );
}

/// Q5: a pool that is a fraction of free memory with nothing subtracted is written without
/// `used` (the trial wrote `X - X` for zero; `used` was required). The remedy is the same:
/// `cache_max_entry_count 0.95 -> 0.94`, the run's pool following the sizing rule.
#[test]
fn a_pool_with_nothing_subtracted_needs_no_used_formula() {
    let grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    let used = "used = [\"kv_cache.avail_before - kv_cache.avail_before\"]";
    let line = grammar.lines().find(|l| l.starts_with(used)).unwrap();
    let without = grammar.replace(&format!("{line}\n"), "");
    assert_ne!(without, grammar);
    let (temp, name) = common::temp_in(DIR);
    std::fs::write(temp.path().join("g.toml"), without).unwrap();
    let g = format!("{name}/g.toml");
    let (_, text) = common::fixture_run(DIR, &g, &["diff", "baseline", "failing"]);
    let text = common::flat(&text);
    assert!(
        text.contains("cache_max_entry_count 0.95 -> 0.94"),
        "{text}"
    );
    assert!(
        text.contains("this run's pool follows the server's sizing rule"),
        "{text}"
    );
}

/// The trial's silent misspellings: a memory-model or suspect setting its own
/// `server_args` sample does not print, beside a printed key nearly the same, fails the
/// check with the printed key (`diff` lost the computed remedy without a word).
#[test]
fn a_misspelt_setting_beside_its_printed_key_fails_the_check() {
    let grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    for (from, to, printed) in [
        (
            "fraction = \"cache_max_entry_count\"",
            "fraction = \"cache_max_entry\"",
            "cache_max_entry_count",
        ),
        (
            "page_size = \"cache_block_seq_len\"",
            "page_size = \"block_seq_len\"",
            "cache_block_seq_len",
        ),
    ] {
        let changed = grammar.replacen(from, to, 1);
        assert_ne!(changed, grammar, "{from}");
        let (temp, name) = common::temp_in(DIR);
        std::fs::write(temp.path().join("g.toml"), changed).unwrap();
        let g = format!("{name}/g.toml");
        let (code, out) = common::fixture_run(DIR, &g, &["grammars", "check", &g]);
        assert_eq!(code, Some(1), "{out}");
        assert!(
            out.contains(&format!(
                "it prints `{printed}`: write `{printed}` if that is the setting"
            )),
            "{out}"
        );
    }
}

/// M7: a breakdown's derivation quotes each figure as its line printed it: capture's
/// `640.00 MB` (baseline/plover.log:40, MB being MiB) is `640.00 MiB`, not `0.62 GiB`.
#[test]
fn a_derivation_quotes_figures_as_printed() {
    let (_, json) = common::fixture_run(
        DIR,
        "grammar.toml",
        &["diff", "--json", "baseline", "failing"],
    );
    assert!(
        json.contains("cuda_graph.mem_usage 640.00 MiB (baseline/plover.log:40)"),
        "{json}"
    );
    assert!(!json.contains("cuda_graph.mem_usage 0.62 GiB"), "{json}");
}
