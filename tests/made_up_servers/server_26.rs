//! Trial 24 of issue 28 (`wren-serve`, `tests/fixtures/made-up-server-26/`, written from
//! docs/grammars.md alone): an LMDeploy fork, TP4, one Python process driving four GPUs.
//! The C++ engine's line 34 (`[WC][E …] [dev 2] CUDA out of memory: cannot allocate
//! 3489660928 bytes for graph workspace (free 3221225472 bytes, …)`) is TP2's; the
//! Python side's `engine start-up failed:` (35) opens a traceback through
//! `_capture_graphs` (41) that line 43 closes with `RuntimeError: [WrenCore] device 2: CUDA
//! out of memory`, naming no rank. `grammar.toml` gives line 43 a `line` rank rule on its
//! device; `grammar-norule.toml` does not. Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-26";

/// Q1: without a rank rule, the Python side's closing line still joins TP2's failure —
/// through its device (GPU 2 in a one-node run of plain TP ranks) and, where it names
/// none, as the next failure after TP2's own OOM line — and its frames place the failure
/// (`_capture_graphs`: cuda_graph, "from frames", not "from last event").
#[test]
fn the_python_sides_closing_line_is_tp2s_without_a_rank_rule() {
    let root = |dir: &str| {
        let (_, text) = common::fixture_run(DIR, "grammar-norule.toml", &["summary", dir]);
        common::flat(&text)
    };
    let text = root("failing");
    assert!(
        text.contains(
            "root: TP2 ran out of memory in cuda_graph (phase from frames), failing/wren.log:34"
        ),
        "{text}"
    );
    assert!(!text.contains("outside any rank"), "{text}");
    // The same log whose closing line names no device (`RuntimeError: [WrenCore] CUDA out
    // of memory`): the line after TP2's OOM is still TP2's.
    let (temp, name) = common::temp_in(DIR);
    let log = std::fs::read_to_string(format!("{DIR}/failing/wren.log")).unwrap();
    let bare = log.replace(
        "RuntimeError: [WrenCore] device 2: ",
        "RuntimeError: [WrenCore] ",
    );
    assert_ne!(bare, log);
    std::fs::write(temp.path().join("wren.log"), bare).unwrap();
    let text = root(&name);
    assert!(
        text.contains(&format!(
            "root: TP2 ran out of memory in cuda_graph (phase from frames), {name}/wren.log:34"
        )),
        "{text}"
    );
    let s = common::fixture_json(DIR, "grammar-norule.toml", &["summary", "--json", &name]);
    assert_eq!(
        s["run"]["launcher_failures"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(s["run"]["launcher_failures"][0]["line"], 44);
}

/// Q2: a `[memory_model]` without `tokens` (or `blocks`) reads the built-in kv_cache
/// `tokens` figure: line 29, 1,245,184 tokens in 57.00 GiB = 61,203,283,968 B / 1,245,184
/// = 49,152 B per token; the remedy's one step frees 0.01 × 60.00 GiB (line 25's free
/// memory) = 644,245,094 B, ~13,107 tokens (1.05 % of the pool).
#[test]
fn a_memory_model_without_tokens_reads_the_pools_tokens() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "--memory", "failing"]);
    let text = common::flat(&text);
    assert!(text.contains("bytes per token (log): 49,152"), "{text}");
    assert!(
        text.contains("the KV pool loses ~13,107 tokens/rank (1.1 % of 1,245,184)"),
        "{text}"
    );
    assert!(!text.contains("the log shows no KV pool size"), "{text}");
}

/// The check message for a rank rule naming a capture its regex lacks lists the captures.
#[test]
fn a_missing_capture_is_told_with_the_regexs_captures() {
    let (code, said) = common::check_edited(
        DIR,
        "grammar.toml",
        "rank = { evidence = \"line\", capture = \"gpu\" }",
        "rank = { evidence = \"line\", capture = \"dev\" }",
    );
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("rank.capture `dev` is not a capture of the regex: its captures are `gpu`"),
        "{said}"
    );
}

/// Trial 29's M2: the line the model gives TP2 (43, the Python side's unstamped closing
/// `RuntimeError`, which names no rank) is TP2's in `events` too, so `--rank TP2` lists
/// both its OOM lines (34 and 43).
#[test]
fn events_list_the_adopted_lines_with_their_rank() {
    let (_, text) = common::fixture_run(
        DIR,
        "grammar-norule.toml",
        &["events", "--rank", "TP2", "--kind", "oom,error", "failing"],
    );
    let rows: Vec<String> = text
        .lines()
        .filter(|l| l.contains(" TP2 "))
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(rows, ["11:20:25.612 TP2 oom", "- TP2 oom"], "{text}");
}
