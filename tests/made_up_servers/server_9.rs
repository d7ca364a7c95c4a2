//! The eighth made-up server of issue 28 (`kestrel-serve`), written by trial 7 from
//! docs/grammars.md alone (`tests/fixtures/made-up-server-9/`: grammar.toml,
//! grammar-assignment.toml, the runs, EXPECTED.md written before running the tool,
//! QUESTIONS.md): PP2 x TP4 on two nodes, glog lines whose prefix names every record's
//! GLOBAL rank (`[g6]`), one `placement: pp=1 tp=2` line per process, the configuration
//! (`tp_size=4, pp_size=2`) printed once by g0, an OOM on g6 in kv_cache. Every expected
//! value is read off the logs by hand (line numbers are `grep -n`'s). The logs carry no
//! year and git keeps no mtimes, so no test here compares a date: durations and names only.
//! The tests of M1/M11 (global ranks through the layout), M2 (a prefix's global number
//! against the process's assignment), M8 (events of different processes merged as one
//! file's duplicates) and M4 (launch to the first event) fail on the tool as it was before
//! h-ranks.

use super::common;

use serde_json::Value;

const DIR: &str = "tests/fixtures/made-up-server-9";

fn run(grammar: &str, args: &[&str]) -> (Option<i32>, String) {
    common::fixture_run(DIR, grammar, args)
}

fn json(grammar: &str, args: &[&str]) -> Value {
    common::fixture_json(DIR, grammar, args)
}

/// The fixture's grammar with `edit` applied, written into a temporary directory inside
/// the fixture; its path relative to the fixture.
fn edited_grammar(edit: impl Fn(String) -> String) -> (tempfile::TempDir, String) {
    let (temp, name) = common::temp_in(DIR);
    let grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    std::fs::write(temp.path().join("grammar.toml"), edit(grammar)).unwrap();
    (temp, format!("{name}/grammar.toml"))
}

/// The grammar as trial 7 might have written it without the `placement` rule: ranks are
/// named by the prefix's global number `[gN]` alone.
fn grank_only() -> (tempfile::TempDir, String) {
    edited_grammar(|g| {
        let rule = "rank = { evidence = \"assignment\" }\n";
        assert!(g.contains(rule));
        g.replace(rule, "")
    })
}

fn rank_names(summary: &Value) -> Vec<String> {
    summary["run"]["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_str().unwrap().to_string())
        .collect()
}

const LAYOUT: [&str; 8] = [
    "PP0 TP0", "PP0 TP1", "PP0 TP2", "PP0 TP3", "PP1 TP0", "PP1 TP1", "PP1 TP2", "PP1 TP3",
];

#[test]
fn m1_global_ranks_are_named_through_the_configured_layout() {
    let (_temp, grammar) = grank_only();
    // g0's `engine args` line prints tp_size=4, pp_size=2: global = pp · 4 + tp, so
    // g0..g3 are PP0 TP0..TP3 and g4..g7 (node1, which prints no configuration) PP1 TP0..TP3.
    let s = json(&grammar, &["summary", "--json", "baseline"]);
    assert_eq!(rank_names(&s), LAYOUT);
    let (_, out) = run(&grammar, &["summary", "baseline"]);
    assert!(
        out.contains("node0 (4 ranks PP0 TP0…PP0 TP3): reference"),
        "{out}"
    );
    assert!(
        out.contains("node1 (4 ranks PP1 TP0…PP1 TP3): +2.40 s"),
        "{out}"
    );
    // failing/node1/kestrel-g6.log:17 is g6's OOM; g4, g5, g7 time out naming "global
    // rank 6" (g4.log:21, g5.log:22, g7.log:21): 6 = 1 · 4 + 2.
    let (code, out) = run(&grammar, &["summary", "failing"]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains(
            "verdict: PP1 TP2 ran out of memory in kv_cache; 3 ranks failed as a consequence; \
             2 ranks were terminated; 2 ranks'\n  logs end without a reason"
        ),
        "{out}"
    );
    let s = json(&grammar, &["summary", "--json", "failing"]);
    assert_eq!(rank_names(&s), LAYOUT);
    let root = common::rank_entry(&s, "PP1 TP2");
    assert_eq!(root["outcome"], "failed");
    assert_eq!(root["failure"]["line"], 17, "{}", root["failure"]);
    for (rank, line) in [("PP1 TP0", 21), ("PP1 TP1", 22), ("PP1 TP3", 21)] {
        let r = common::rank_entry(&s, rank);
        assert_eq!(r["outcome"], "consequence", "{rank}");
        assert_eq!(r["failure"]["consequence_of"], "PP1 TP2", "{rank}");
        assert_eq!(r["failure"]["line"], line, "{rank}");
    }
}

#[test]
fn m11_check_names_a_global_rank_as_the_summary_does() {
    // The fixture's grammar now states PP0 TP0 and PP1 TP2: it passes.
    let (code, out) =
        common::fixture_run(DIR, "grammar.toml", &["grammars", "check", "grammar.toml"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("19 samples checked, 0 failed"), "{out}");
    // With the grammar's own `server_args` sample (tp_size=4, pp_size=2), [g6] of a line
    // with no assignment is PP1 TP2, as in the summary; `rank6` is refused, saying why.
    let (_temp, grammar) = edited_grammar(|g| {
        let g = g.replace("rank = { evidence = \"assignment\" }\n", "");
        g.replacen("rank = \"PP1 TP2\"", "rank = \"rank6\"", 1)
    });
    let (code, out) = run(&grammar, &["grammars", "check", &grammar]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "the line's rank reads as `PP1 TP2` (global rank 6, the prefix's `grank`, placed \
             by tp_size=4, pp_size=2 of this grammar's `server_args` sample), the sample says \
             `rank6`: write `rank = \"PP1 TP2\"` if that is the line's rank"
        ),
        "{out}"
    );
    assert!(out.contains("19 samples checked, 1 failed"), "{out}");
    // With no `server_args` sample no sizes are known: the check names g6 as a run with no
    // configuration does, TP6, and says why `PP1 TP2` cannot be checked.
    let (_temp2, grammar) = edited_grammar(|g| {
        let g = g.replace("rank = { evidence = \"assignment\" }\n", "");
        let at = g
            .find("[[sample]]\nline = \"I1127 09:14:00.150000")
            .unwrap();
        let end = at + g[at..].find("\n\n").unwrap() + 2;
        format!("{}{}", &g[..at], &g[end..])
    });
    let (code, out) = run(&grammar, &["grammars", "check", &grammar]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "the line's rank reads as `TP6` (global rank 6, the prefix's `grank`: no sizes \
             known in a one-line sample"
        ),
        "{out}"
    );
    assert!(
        out.contains("the sample says `PP1 TP2`: write `rank = \"TP6\"` or `rank = \"rank6\"`"),
        "{out}"
    );
}

#[test]
fn m2_an_assignment_line_outweighs_the_prefix_global_number() {
    // grammar.toml reads both: g6's `placement: pp=1 tp=2` names its process PP1 TP2, and
    // so does [g6] through the layout; every line of pid 5230 is PP1 TP2.
    let (_, out) = run("grammar.toml", &["events", "--rank", "PP1 TP2", "baseline"]);
    assert!(
        out.contains("PP1 TP2      placement          gpu=2 pp=1 tp=2"),
        "{out}"
    );
    // Where they disagree the assignment wins: g6's lines printed as [g5] (pid 5230 still
    // prints `placement: pp=1 tp=2`) stay PP1 TP2, and g5 (pid 5229) PP1 TP1 — not one
    // rank on two processes.
    let (temp, name) = common::temp_in(DIR);
    let from = std::path::Path::new(DIR).join("failing");
    for node in ["node0", "node1"] {
        std::fs::create_dir_all(temp.path().join(node)).unwrap();
        for entry in std::fs::read_dir(from.join(node)).unwrap() {
            let entry = entry.unwrap();
            let text = std::fs::read_to_string(entry.path()).unwrap();
            let text = if entry.file_name() == "kestrel-g6.log" {
                text.replace("[g6]", "[g5]")
            } else {
                text
            };
            std::fs::write(temp.path().join(node).join(entry.file_name()), text).unwrap();
        }
    }
    let s = json("grammar.toml", &["summary", "--json", &name]);
    assert_eq!(rank_names(&s), LAYOUT);
    assert_eq!(common::rank_entry(&s, "PP1 TP2")["outcome"], "failed");
    assert_eq!(common::rank_entry(&s, "PP1 TP1")["outcome"], "consequence");
    // …and the run says the two disagreed: 5 = 1 · 4 + 1 is PP1 TP1 by tp_size=4,
    // pp_size=2, while pid 5230's placement line names PP1 TP2.
    let (_, out) = run("grammar.toml", &["summary", &name]);
    let one_line = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        one_line.contains(
            "process 5230: its lines' global rank 5 is PP1 TP1 by the configured sizes, but \
             its assignment line names PP1 TP2: the assignment line is taken"
        ),
        "{out}"
    );
    assert_eq!(
        one_line.matches("its assignment line names").count(),
        1,
        "{out}"
    );
    let (_, out) = run("grammar.toml", &["summary", "failing"]);
    assert!(!out.contains("its assignment line names"), "{out}");
}

#[test]
fn m8_same_text_and_stamp_of_different_processes_are_not_duplicates() {
    // grammar-assignment.toml: ranks from the `placement` lines only, learnt by pid. g1..g3
    // print their barrier lines at the same stamps with the same text as each other, from
    // different pids (7302, 7303, 7304): 89 events each run, none dropped.
    let (code, out) = run("grammar-assignment.toml", &["summary", "failing"]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains(
            "verdict: PP1 TP2 ran out of memory in kv_cache; 3 ranks failed as a consequence; \
             2 ranks were terminated; 2 ranks'\n  logs end without a reason"
        ),
        "{out}"
    );
    assert!(!out.contains("seen in more than one file"), "{out}");
    assert!(out.contains("169 lines: 89 events"), "{out}");
    let s = json(
        "grammar-assignment.toml",
        &["summary", "--json", "baseline"],
    );
    assert_eq!(rank_names(&s), LAYOUT);
    // Every rank's `kv cache allocated` line (baseline/*/kestrel-gN.log) reports
    // 1097728 tokens: 34304 blocks x 32.
    for rank in LAYOUT {
        let r = common::rank_entry(&s, rank);
        let kv = r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["phase"] == "kv_cache")
            .unwrap();
        let tokens = kv["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "tokens")
            .unwrap_or_else(|| panic!("{rank}: no tokens"));
        assert_eq!(tokens["value"], 1_097_728, "{rank}");
    }
}

#[test]
fn m4_launch_ends_at_each_rank_first_event() {
    // Run start: g0's `engine args` line at 09:14:00.150 (g0.log:6), also g0's first
    // event: its launch is 0 s, although that line is a `launch` line and g0's first
    // phase line is `joining nccl world` at .500. g1's first event is its placement at
    // .210 (g1.log:6): 0.06 s; g3's at .230: 0.08 s.
    let s = json("grammar.toml", &["summary", "--json", "baseline"]);
    let launch = |rank: &str| {
        common::rank_entry(&s, rank)["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["phase"] == "launch")
            .unwrap()["duration_s"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(launch("PP0 TP0"), 0.0);
    assert!(
        (launch("PP0 TP1") - 0.06).abs() < 1e-9,
        "{}",
        launch("PP0 TP1")
    );
    assert!(
        (launch("PP0 TP3") - 0.08).abs() < 1e-9,
        "{}",
        launch("PP0 TP3")
    );
    let (_, out) = run("grammar.toml", &["summary", "baseline"]);
    assert!(
        out.contains("launch       8/8    0.0 / 0.1 / 0.1 s     0.1 s"),
        "{out}"
    );
}

/// A global number the configured sizes cannot hold is named as the TP rank of that
/// number, and the run says so: node0 alone (g0..g3) with its configuration edited to
/// `tp_size=2, pp_size=1` (a world of 2 ranks, per replica) cannot place g2.
#[test]
fn a_global_number_past_the_configured_layout_is_noted() {
    let (_temp, grammar) = grank_only();
    let (temp, name) = common::temp_in(DIR);
    for g in 0..4 {
        let file = format!("kestrel-g{g}.log");
        let text = std::fs::read_to_string(format!("{DIR}/baseline/node0/{file}")).unwrap();
        let edited = text.replace("tp_size=4, pp_size=2", "tp_size=2, pp_size=1");
        assert_eq!(
            edited != text,
            g == 0,
            "{file}: only g0 prints the configuration"
        );
        std::fs::write(temp.path().join(&file), edited).unwrap();
    }
    let s = json(&grammar, &["summary", "--json", &name]);
    assert_eq!(rank_names(&s), ["TP0", "TP1", "TP2", "TP3"]);
    let (_, out) = run(&grammar, &["summary", &name]);
    let one_line = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        one_line.contains(
            "global rank 2 lies past the configured layout (tp_size 2 × pp_size 1 = 2 ranks, \
             numbered per replica): the global numbers are named as TP ranks of those \
             numbers, not placed by the sizes"
        ),
        "{out}"
    );
    // With the fixture's own sizes nothing is noted.
    let (_, out) = run(&grammar, &["summary", "baseline"]);
    assert!(!out.contains("lies past the configured layout"), "{out}");
}
