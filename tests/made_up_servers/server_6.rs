//! The fifth made-up server of issue 28 (`quillserve`), written by a fourth newcomer from
//! docs/grammars.md alone (`tests/fixtures/made-up-server-6/`: grammar.toml, the runs,
//! EXPECTED.md written before running the tool, QUESTIONS.md): 8 ranks as DP2 x TP4,
//! logfmt records, ranks named once by an `assignment` line and learnt by pid, KV in
//! blocks, an OOM in cuda_graph capture on DP0 TP2, three consequences, four ranks
//! SIGTERMed. Every expected value is read off `baseline/*.log` and `failing/*.log` by hand
//! (line numbers are `grep -n`'s). The tests of M1 (DP0's names), M4 (a termination
//! before ready), M6 (a new value inside `key=value`), M8 (remedy order) and M13 (diff's
//! cells) fail on the tool as it was before h-fix4b. Quoted message text and the config
//! rows are left to the grammar-engine side (h-fix4a).

use super::common;

use assert_cmd::Command;

use serde_json::Value;

const DIR: &str = "tests/fixtures/made-up-server-6";

fn run(args: &[&str]) -> (Option<i32>, String) {
    common::fixture_run(DIR, "grammar.toml", args)
}

fn json(args: &[&str]) -> Value {
    common::fixture_json(DIR, "grammar.toml", args)
}

/// A copy of the fixture whose grammar has no `[[suffix]]`: the logfmt fields after the
/// quoted message (`bs=512 … free="0.48 GiB"`) stay in the OOM's message, where a
/// suspect's `words` and a setting's new value are looked for (docs/grammars.md,
/// Suffixes) — the trial's experiment for M6-M8, made before the suffix existed.
fn without_field_suffix() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    let suffix = "[[suffix]]\nid = \"logfmt_fields\"\n";
    let at = grammar.find(suffix).expect("the fixture's suffix block");
    let end = at + grammar[at..].find("\n\n").expect("a blank line after it");
    let grammar = format!("{}{}", &grammar[..at], &grammar[end..]);
    std::fs::write(dir.path().join("grammar.toml"), grammar).unwrap();
    for run in ["baseline", "failing"] {
        let to = dir.path().join(run);
        std::fs::create_dir(&to).unwrap();
        for entry in std::fs::read_dir(format!("{DIR}/{run}")).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
    dir
}

#[test]
fn verdicts_exit_codes_and_root() {
    let (code, out) = run(&["summary", "baseline"]);
    assert_eq!(code, Some(0));
    assert!(
        out.starts_with("READY  baseline  8 ranks, 9 sources"),
        "{out}"
    );
    let (code, out) = run(&["summary", "--exit-code", "failing"]);
    assert_eq!(code, Some(1));
    assert!(
        out.starts_with("FAILED  failing  8 ranks, 9 sources"),
        "{out}"
    );
    // failing/rank2.log:12 is the OOM; rank2.log:9 the `kv pool ready` line whose `then`
    // began capture.
    assert!(
        out.contains(
            "root: DP0 TP2 ran out of memory in cuda_graph (phase from last event at \
             failing/rank2.log:9), failing/rank2.log:12"
        ),
        "{out}"
    );
    // 1.25 GiB asked, 0.48 GiB free: 1280 - 491.52 = 788.48 MiB.
    assert!(out.contains("deficit: at least 788.48 MiB"), "{out}");
    let (code, _) = run(&["diff", "baseline", "failing"]);
    assert_eq!(code, Some(1));
}

/// M1/Q6: DP0's ranks are `DP0 TP0` … and sort before DP1's.
#[test]
fn first_replica_is_named_dp0() {
    let v = json(&["summary", "--json", "failing"]);
    let ranks: Vec<&str> = (v["run"]["ranks"].as_array().unwrap().iter())
        .map(|r| r["rank"].as_str().unwrap())
        .collect();
    assert_eq!(
        ranks,
        ["DP0 TP0", "DP0 TP1", "DP0 TP2", "DP0 TP3", "DP1 TP0", "DP1 TP1", "DP1 TP2", "DP1 TP3"]
    );
    let (_, out) = run(&["summary", "--ranks", "baseline"]);
    assert!(!out.contains("\nTP"), "{out}");
}

/// M1/E2: a sample of the first replica's `assignment` line may state the run's name.
#[test]
fn assignment_sample_may_name_dp0() {
    let dir = tempfile::tempdir().unwrap();
    let grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    let line = (grammar.lines())
        .find(|l| l.starts_with("rank = \"TP2\""))
        .unwrap();
    for (want, ok) in [("DP0 TP2", true), ("DP1 TP2", false)] {
        let edited = grammar.replace(line, &format!("rank = \"{want}\""));
        let path = dir.path().join("g.toml");
        std::fs::write(&path, edited).unwrap();
        let out = Command::cargo_bin("rankscope")
            .unwrap()
            .args(["grammars", "check", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.success(), ok, "{want}");
    }
}

/// The three consequences and four terminations at the lines QUESTIONS.md names; M4/Q19:
/// the terminated ranks completed cuda_graph in a run that never printed ready.
#[test]
fn consequences_and_terminations() {
    let v = json(&["summary", "--json", "failing"]);
    let ranks = v["run"]["ranks"].as_array().unwrap();
    let at = |r: &Value| {
        format!(
            "{}:{}",
            r["failure"]["source"].as_str().unwrap(),
            r["failure"]["line"]
        )
    };
    for (i, line) in [(0, 17), (1, 14), (3, 14)] {
        let r = &ranks[i];
        assert_eq!(r["outcome"], "consequence");
        assert_eq!(r["failure"]["kind"], "timeout");
        assert_eq!(r["failure"]["phase"], "cuda_graph");
        assert_eq!(at(r), format!("failing/rank{i}.log:{line}"));
    }
    for (i, r) in ranks.iter().enumerate().skip(4) {
        assert_eq!(r["outcome"], "terminated");
        assert_eq!(r["last_phase"], "cuda_graph");
        assert_eq!(r["failure"]["phase_from"], "after_last_phase");
        assert_eq!(at(r), format!("failing/rank{i}.log:14"));
    }
    let (_, out) = run(&["summary", "--ranks", "failing"]);
    assert!(out.contains("3/8 ranks: consequence (timeout in cuda_graph), after DP0 TP2"));
    assert!(
        out.contains(
            "4/8 ranks: terminated (signal after cuda_graph, before ready), after DP0 TP2"
        ),
        "{out}"
    );
    assert!(!out.contains("while serving"), "{out}");
}

/// Durations and figures (baseline), min / med / max over the 8 ranks.
#[test]
fn phases_and_figures() {
    let (_, out) = run(&["summary", "baseline"]);
    for row in [
        "launch       8/8    1.2 / 1.2 / 1.3 s     0.1 s",
        "dist_init    8/8    0.8 / 0.8 / 0.8 s     0.0 s",
        "kv_cache     8/8    2.1 / 2.3 / 2.5 s     0.0 s",
        "cuda_graph   8/8    19.0 / 19.0 / 19.1 s  0.1 s",
        "kv blocks        70,956 blocks",
        "kv block tokens  16 tokens",
        "kv size          51.97 GiB",
        "ready        8/8",
    ] {
        assert!(out.contains(row), "{row}\n{out}");
    }
}

/// First divergence and M13: diff's cells keep a declared figure's unit, nothing cut, and
/// a byte-exact figure's resolution is worded.
#[test]
fn diff_first_divergence_and_cells() {
    let (_, out) = run(&["diff", "baseline", "failing"]);
    // 59,222,261,760 - 55,802,068,992 B = 3,420,192,768 B = 3.19 GiB, pool_bytes exact.
    assert!(
        out.contains(
            "kv_cache  kv size +3.19 GiB on 8/8 ranks (systematic; 51.97 GiB -> 55.16 GiB; \
             logged to the byte)"
        ),
        "{out}"
    );
    assert!(
        out.contains("kv blocks       70,956 blocks 75,305 blocks +4,349 blocks 8/8 systematic"),
        "{out}"
    );
    assert!(
        out.contains("16 tokens     16 tokens     0 tokens"),
        "{out}"
    );
    assert!(!out.contains('…'), "{out}");
    assert!(
        out.contains(
            "cuda_graph   mem usage       2.10 GiB      5.90 GiB      +3.80 GiB     4/4 systematic"
        ),
        "{out}"
    );
}

/// M6/M8 (configuration read, the trial's experiment copy): `bs=512` holds max_batch's
/// new value, so it is an `also:`; the reverts follow the cause rows' order; M7: the port
/// is never a memory remedy.
#[test]
fn suspects_and_remedies() {
    let dir = without_field_suffix();
    let d = dir.path().to_str().unwrap();
    let (code, out) = common::fixture_run(d, "grammar.toml", &["diff", "baseline", "failing"]);
    assert_eq!(code, Some(1));
    let pos = |s: &str| out.find(s).unwrap_or_else(|| panic!("{s}\n{out}"));
    let trigger = pos("likely trigger: cuda_graph_max_bs 160 -> 512");
    let also_batch = pos("also: max_batch 256 -> 512");
    let also_frac = pos("also: mem_fraction 0.88 -> 0.92");
    assert!(trigger < also_batch && also_batch < also_frac);
    assert!(!out.contains("less likely"), "{out}");
    let r1 = pos("cuda_graph_max_bs 512 -> 160 (the baseline's value");
    let r2 = pos("max_batch 512 -> 256 (the baseline's value");
    let r3 = pos("mem_fraction 0.92 -> 0.88 (the baseline's value");
    assert!(r1 < r2 && r2 < r3);
    assert!(!out.contains("metrics_port 9500 -> 9400"), "{out}");
}

/// The fixture as it is: its `[[suffix]]` cuts `bs=512 … free=…` from the OOM's message
/// (`cuda graph capture failed: out of memory`, failing/rank2.log:12), which is what the
/// trigger quotes; the cut fields are still searched (h-cfg), so `max_batch`'s new value
/// `512` (in `bs=512`) and `mem_fraction`'s word `free=` name them, `also:` rows quoting
/// the fields at the same file and line — as the trial's copy without the suffix reads.
#[test]
fn a_field_suffix_keeps_its_fields_out_of_the_quote_not_out_of_the_search() {
    let (code, out) = run(&["diff", "baseline", "failing"]);
    assert_eq!(code, Some(1));
    // The rows as one line each: the text is wrapped at 120 columns, indented 10.
    let rows = out.replace("\n          ", " ");
    assert!(
        rows.contains("likely trigger: cuda_graph_max_bs 160 -> 512 (the failure holds \"cuda graph capture\": \"cuda graph capture failed: out of memory\", failing/rank2.log:12) also:"),
        "{out}"
    );
    let fields = "bs=512 requested=\"1.25 GiB\" free=\"0.48 GiB\" total=\"79.65 GiB\" graph_pool=\"4.69 GiB\"";
    assert!(
        rows.contains(&format!(
            "also: max_batch 256 -> 512 (the failure holds \"512\": \"{fields}\", failing/rank2.log:12) \
             also: mem_fraction 0.88 -> 0.92 (the failure holds \"free=\": \"{fields}\", failing/rank2.log:12)\n"
        )),
        "{out}"
    );
    assert!(!out.contains("less likely"), "{out}");
}
