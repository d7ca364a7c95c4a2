//! The second made-up server of issue 28 (`mistbox`), written by a newcomer from
//! docs/grammars.md alone (`tests/fixtures/made-up-server-3/`: grammar.toml, the runs,
//! EXPECTED.md written before running the tool, QUESTIONS.md). Every expected value below
//! is read off `baseline/mistbox.log` and `failing/mistbox.log` by hand (EXPECTED.md
//! derives them; the line numbers are `grep -n`'s), and the tests of the trial's defects
//! fail on the tool as it was before the fixes (C1, B1, B4, B5, B6, B8, B9, C2, C3, C4, D).

use super::common;

use assert_cmd::Command;

use serde_json::Value;

const DIR: &str = "tests/fixtures/made-up-server-3";
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// `rankscope --grammar GRAMMAR ARGS…` from the fixture's directory (so that sources are
/// named `failing/mistbox.log`, as EXPECTED.md names them): exit code and stdout.
fn run_in(grammar: &str, args: &[&str]) -> (Option<i32>, String) {
    common::fixture_run(DIR, grammar, args)
}

fn run(args: &[&str]) -> (Option<i32>, String) {
    run_in("grammar.toml", args)
}

fn json(args: &[&str]) -> Value {
    common::fixture_json(DIR, "grammar.toml", args)
}

/// The grammar edited by `edit`, written to a temporary directory inside the fixture's
/// (so the runs stay at their relative paths): its file name there.
fn edited(edit: impl Fn(String) -> String) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir_in(DIR).unwrap();
    let text = edit(std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap());
    std::fs::write(dir.path().join("edited.toml"), text).unwrap();
    let name = dir
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    (dir, format!("{name}/edited.toml"))
}

fn rank<'a>(summary: &'a Value, name: &str) -> &'a Value {
    common::rank_entry(summary, name)
}

#[test]
fn the_grammar_checks_its_16_samples() {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(DIR)
        .args(["grammars", "check", "grammar.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        // Sample 1's `MistboxOpts { … }` holds 9 settings: model, tp, mem_frac,
        // block_tokens, max_batch, eager, kv_dtype, seed, port.
        "16 samples checked, 0 failed; configuration read: sample 1, 9 settings"
    );
}

#[test]
fn failing_run_roots_at_tp2_oom_in_cuda_graph() {
    let s = json(&["summary", "--json", "failing"]);
    let run = &s["run"];
    assert_eq!(run["root"], "TP2");
    let f = &rank(&s, "TP2")["failure"];
    assert_eq!(f["outcome"], "failed");
    assert_eq!(f["kind"], "oom");
    assert_eq!(f["phase"], "cuda_graph");
    assert_eq!(f["source"], "failing/mistbox.log");
    assert_eq!(f["line"], 31);
    // `1.50 GiB` asked, `1.21 GiB` free (line 31), in bytes: the printed value × 2^30.
    assert_eq!(f["fields"]["requested_bytes"]["bytes"], 1_610_612_736);
    assert_eq!(
        f["fields"]["free_bytes"]["bytes"],
        (1.21 * GIB).round() as i64
    );
    // TP0, TP3, TP1 gave up waiting for w2 at lines 33, 34, 35.
    for (name, line) in [("TP0", 33), ("TP3", 34), ("TP1", 35)] {
        let f = &rank(&s, name)["failure"];
        assert_eq!(f["outcome"], "consequence", "{name}");
        assert_eq!(f["kind"], "timeout", "{name}");
        assert_eq!(f["phase"], "cuda_graph", "{name}");
        assert_eq!(f["consequence_of"], "TP2", "{name}");
        assert_eq!(f["line"], line, "{name}");
    }
    // kv_cache of the failing run: 4347 blocks, 67.92 GiB (line 23 for TP2).
    let kv = rank(&s, "TP2")["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "kv_cache")
        .unwrap()
        .clone();
    let figure = |n: &str| {
        kv["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(figure("kv_blocks")["value"], 4347);
    assert_eq!(figure("kv_blocks")["unit"], "blocks");
    assert_eq!(figure("kv_size")["value"], (67.92 * GIB).round() as i64);
}

#[test]
fn baseline_is_ready_on_4_ranks_with_3486_blocks() {
    let (code, out) = run(&["summary", "baseline"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("READY  baseline  4 ranks"), "{out}");
    assert!(out.contains("kv blocks        3,486 blocks"), "{out}");
    assert!(out.contains("kv size          54.47 GiB"), "{out}");
}

#[test]
fn summary_text_names_the_root_its_phase_line_and_the_allocator() {
    let (_, out) = run(&["summary", "failing"]);
    // B8: the phase came from TP2's last phase line, `replay: recording plan` at :25.
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "root: TP2 ran out of memory in cuda_graph (phase from last event at \
             failing/mistbox.log:25), failing/mistbox.log:31"
        ),
        "{out}"
    );
    // B6: `allocator holds 76.88 GiB` is among the failure's figures.
    assert!(
        flat.contains(
            "1/4 ranks: oom in cuda_graph, tried to allocate 1.50 GiB, 1.21 GiB free on the \
             device, 76.88 GiB allocated"
        ),
        "{out}"
    );
}

#[test]
fn noise_entry_counts_its_known_prefix_line_as_noise() {
    // B1: line 1 (`mbx/main … mistbox 0.9.2 starting 4 workers`) has the launcher's
    // prefix and the `[[noise]]` literal ` starting 4 workers`: 36 lines = 35 events +
    // 1 noise, no other record.
    let s = json(&["summary", "--json", "failing"]);
    let lines = &s["run"]["lines"];
    assert_eq!(lines["lines"], 36);
    assert_eq!(lines["events"], 35);
    assert_eq!(lines["noise"], 1);
    assert_eq!(lines["records"], 0);
    let (_, out) = run(&["summary", "baseline"]);
    assert!(
        out.contains("43 lines: 42 events, 0 other records, 0 continuation, 1 noise"),
        "{out}"
    );
}

#[test]
fn a_millisecond_stamp_reading_000_keeps_its_millisecond_resolution() {
    // C1: TP1's kv_cache ends at `042115.000` (failing:28) and `041015.000` (baseline:28),
    // printed with `%.3f`.
    let s = json(&["summary", "--json", "failing"]);
    let kv = rank(&s, "TP1")["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "kv_cache")
        .unwrap()
        .clone();
    assert_eq!(kv["end"]["at"], "2026-12-02T04:21:15.000000-00:00");
    assert_eq!(kv["end"]["resolution_s"], 0.001);
    // diff: TP1's kv_cache window is 12.779 -> 15.000 = 2.221 s in both runs, so its
    // threshold is the 20 % tolerance, 0.4442 s, not two one-second steps.
    let d = json(&["diff", "--json", "baseline", "failing"]);
    let kv = d["time"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "kv_cache")
        .unwrap()
        .clone();
    assert_eq!(kv["resolution"], 0.002);
    let tp1 = kv["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rank"] == "TP1")
        .unwrap()
        .clone();
    assert_eq!(tp1["baseline"], 2.221);
    assert!(
        (tp1["threshold"].as_f64().unwrap() - 0.4442).abs() < 1e-9,
        "{tp1}"
    );
}

#[test]
fn diff_names_the_suspect_orders_the_reverts_and_exits_1() {
    let (code, out) = run(&["diff", "baseline", "failing"]);
    assert_eq!(code, Some(1), "{out}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("config mem_frac 0.8 -> 0.97 seed 7 -> 11"),
        "{out}"
    );
    // The first divergence, either direction (A11): kv size 54.47 -> 67.92 GiB on 4/4.
    assert!(
        flat.contains(
            "cause kv_cache kv size +13.45 GiB on 4/4 ranks (systematic; 54.47 GiB -> 67.92 GiB"
        ),
        "{out}"
    );
    // B5: the `[[suspect]]` names mem_frac (the message holds `replay`), in the text.
    assert!(
        flat.contains(
            "likely trigger: mem_frac 0.8 -> 0.97 (the failure holds \"replay\": \"replay: cannot reserve"
        ),
        "{out}"
    );
    // B4: mem_frac's revert before seed's, which no suspect ties to the failure.
    let mem_frac = flat
        .find("mem_frac 0.97 -> 0.8 (the baseline's value")
        .unwrap();
    let seed = flat
        .find("seed 11 -> 7 (the baseline's value; the baseline reached ready with it; no suspect ties it to this failure)")
        .unwrap();
    assert!(mem_frac < seed, "{out}");
    // B9: the declared unit word; C2 and C3: the legends say what they mean.
    assert!(
        flat.contains("kv_cache kv blocks 3,486 blocks 4,347 blocks +861 blocks 4/4 systematic"),
        "{out}"
    );
    assert!(
        flat.contains("ranks -: no rank moved beyond the resolution (time: or the tolerance)"),
        "{out}"
    );
    assert!(
        flat.contains("time: from the previous phase's end to this phase's end"),
        "{out}"
    );
    assert!(!out.contains("no rank's figure moved"), "{out}");
}

#[test]
fn diff_json_carries_the_allocated_bytes_and_the_config_change() {
    let d = json(&["diff", "--json", "baseline", "failing"]);
    assert_eq!(d["exit_code"], 1);
    let g = &d["candidate_outcome"]["groups"][0];
    assert_eq!(g["kind"], "oom");
    assert_eq!(g["ranks"], serde_json::json!(["TP2"]));
    // `allocator holds 76.88 GiB` (line 31).
    assert_eq!(g["allocated_bytes"]["bytes"], (76.88 * GIB).round() as i64);
    assert_eq!(d["first_divergence"]["phase"], "kv_cache");
    assert_eq!(d["first_divergence"]["name"], "kv_size");
    let remedies: Vec<&str> = d["remedies"]["remedies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["setting"].as_str().unwrap())
        .collect();
    assert_eq!(remedies, ["mem_frac", "seed"]);
}

#[test]
fn a_phase_on_the_oom_event_places_the_failure_there() {
    // C4 / A12: `phase = "weight_load"` on the oom event is the failure's phase (its
    // traceback and wording say nothing), even though the rank had finished weight_load.
    let (_dir, grammar) = edited(|g| {
        g.replacen(
            "[[event]]\nkind = \"oom\"\n",
            "[[event]]\nkind = \"oom\"\nphase = \"weight_load\"\n",
            1,
        )
    });
    let (code, out) = run_in(&grammar, &["summary", "--json", "failing"]);
    assert!(matches!(code, Some(0 | 1)), "{out}");
    let s: Value = serde_json::from_str(&out).unwrap();
    let f = &rank(&s, "TP2")["failure"];
    assert_eq!(f["phase"], "weight_load");
    assert_eq!(f["phase_from"], "event");
}

#[test]
fn a_noise_entry_without_id_says_what_the_id_is_for() {
    let (_dir, grammar) = edited(|g| g.replacen("id = \"launcher_banner\"\n", "", 1));
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(DIR)
        .args(["grammars", "check", &grammar])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[[noise]] entry 1: missing field `id`: the name of the entry"),
        "{err}"
    );
}

#[test]
fn a_word_unit_on_a_capture_is_refused_with_the_unit_to_use() {
    // A4: a `blocks` figure's capture is printed as a whole number: `int`.
    let (_dir, grammar) = edited(|g| {
        g.replacen(
            "units = { blocks = \"int\"",
            "units = { blocks = \"blocks\"",
            1,
        )
    });
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(DIR)
        .args(["grammars", "check", &grammar])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("declared word-unit figure such as `blocks` is `int`"),
        "{err}"
    );
}
