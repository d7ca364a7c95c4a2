//! The made-up server of trial 8 (`heronserve`, `tests/fixtures/made-up-server-10/`):
//! Python logging lines, DP2 x TP2 workers, one coordinator ("engine") per replica and a
//! launcher with a watchdog, all in one interleaved `heron.log` per run; in the failing
//! run DP1 TP1 hangs reading shard 3/4 from NFS while the three others print `still
//! waiting at post-load barrier … rank 3` every 60 s. Every expected value is read off
//! the logs by hand (line numbers are `grep -n`'s); the trial's experiments (out/) are
//! the grammars behind its questions Q1-Q7, Q12-Q14 and mismatches M3, M4.

use super::common;

use serde_json::Value;

const DIR: &str = "tests/fixtures/made-up-server-10";

fn run(grammar: &str, args: &[&str]) -> (Option<i32>, String) {
    common::fixture_run(DIR, grammar, args)
}

fn json(grammar: &str, args: &[&str]) -> Value {
    common::fixture_json(DIR, grammar, args)
}

/// M4: the baseline's two coordinators are engine rows, which are no ranks: both runs
/// are the same four workers, so memory is compared. dist_init's `nccl buffers 492 MiB`
/// and weight_load's `weights loaded: 12.25 GiB` are printed alike in both runs (by the
/// three workers that got there in the failing one), so neither moves.
#[test]
fn diff_leaves_engine_rows_out_of_the_rank_sets() {
    let (code, out) = run("grammar.toml", &["diff", "baseline", "failing"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(!out.contains("rank sets differ"), "{out}");
    assert!(
        out.contains("dist_init    mem usage       492 MiB    492 MiB    ±0 B"),
        "{out}"
    );
    assert!(
        out.contains("weight_load  mem usage       12.25 GiB  12.25 GiB  ±0 B"),
        "{out}"
    );
    let d = json("grammar.toml", &["diff", "--json", "baseline", "failing"]);
    let c = &d["comparability"];
    assert_eq!(c["only_in_baseline"], serde_json::json!([]), "{c}");
    assert_eq!(c["only_in_candidate"], serde_json::json!([]), "{c}");
    assert_eq!(c["memory_compared"], true, "{c}");
    assert_eq!(d["first_divergence"], Value::Null);
}

/// Q12: a coordinator's events make its engine row, phase or not: in the failing run the
/// two `replica dpN lost 2 workers; shutting down` lines (heron.log:72, 73) are the
/// engines' only events. The rows are listed beside the ranks, not counted as ranks, and
/// an engine that printed no phase line has no "log ends in launch" entry.
#[test]
fn any_event_of_an_engine_process_makes_its_row() {
    let (_, out) = run("grammar.toml", &["summary", "--ranks", "failing"]);
    assert!(
        out.starts_with("FAILED  failing  4 ranks, 1 source"),
        "{out}"
    );
    assert!(
        out.contains("2 engine processes beside the ranks (not counted as ranks)"),
        "{out}"
    );
    assert!(
        out.contains("\nengine DP0   launch      incomplete"),
        "{out}"
    );
    assert!(
        out.contains("\nengine DP1   launch      incomplete"),
        "{out}"
    );
    assert!(!out.contains("its log ends in launch"), "{out}");
}

/// Q7 (out/experiments/nowd.toml: no watchdog event): DP1 TP1's last phase line is
/// heron.log:36 (`shard 2/4 read`, 17:03:01.580); the three others, in the same phase,
/// print `still waiting … rank 3 (dp1,tp1)` until 17:07:49.290 (DP0 TP1, line 61):
/// 287.710 s of silence, printed 288 s, and rank 3 is DP1 TP1 (dp 1 x tp_size 2 + tp 1).
#[test]
fn a_rank_the_others_wait_for_at_the_closing_barrier_stalled() {
    let grammar = "out/experiments/nowd.toml";
    let (_, out) = run(grammar, &["summary", "failing"]);
    assert!(
        out.contains("verdict: DP1 TP1 stalled in weight_load; 3 ranks failed as a consequence"),
        "{out}"
    );
    assert!(
        out.contains(
            "no line for 288 s after this one while the others waited for it (DP0 TP1 in weight_load)"
        ),
        "{out}"
    );
    assert!(
        out.contains("3/4 ranks: consequence (signal in weight_load), after DP1 TP1"),
        "{out}"
    );
    let s = json(grammar, &["summary", "--json", "failing"]);
    let ranks = s["run"]["ranks"].as_array().unwrap();
    let dp1tp1 = ranks.iter().find(|r| r["rank"] == "DP1 TP1").unwrap();
    assert_eq!(dp1tp1["outcome"], "stalled", "{dp1tp1}");
    assert_eq!(dp1tp1["failure"]["kind"], "timeout", "{dp1tp1}");
    assert_eq!(dp1tp1["failure"]["line"], 36, "{dp1tp1}");
}

/// The same log with every waiting line naming rank 2 (DP1 TP0) instead: those lines do
/// not point at DP1 TP1, so its silence in the others' phase is no stall of its own.
#[test]
fn waiting_lines_that_name_another_rank_blame_no_one() {
    let (_temp, name) = common::temp_in(DIR);
    let log = std::fs::read_to_string(format!("{DIR}/failing/heron.log")).unwrap();
    let log = log.replace("rank(s): rank 3 (dp1,tp1)", "rank(s): rank 2 (dp1,tp0)");
    std::fs::create_dir(format!("{DIR}/{name}/failing")).unwrap();
    std::fs::write(format!("{DIR}/{name}/failing/heron.log"), log).unwrap();
    let (_, out) = run(
        "out/experiments/nowd.toml",
        &["summary", &format!("{name}/failing")],
    );
    assert!(!out.contains("stalled"), "{out}");
}

/// Q7, out/experiments/nowd2.toml (`weights loaded` ends weight_load): the three waiting
/// ranks closed weight_load and printed no kv_cache line, so their SIGTERM lines
/// (heron.log:69-71) come between the two phases; their last phase is weight_load.
#[test]
fn a_consequence_between_phases_is_worded_after_and_before() {
    let (_, out) = run(
        "out/experiments/nowd2.toml",
        &["summary", "--ranks", "failing"],
    );
    assert!(
        out.contains(
            "3/4 ranks: consequence (signal after weight_load, before kv_cache), after DP1 TP1"
        ),
        "{out}"
    );
    assert!(
        out.contains("\nDP0 TP0      weight_load consequence"),
        "{out}"
    );
    assert!(!out.contains("signal in kv_cache"), "{out}");
}

/// Q1, M6: `[dp0|tp0]` tags read (out/grammar.v1-tags-pipe.toml, the trial's first
/// grammar, failed 14 of its 19 samples). Q5's watchdog sample states `DP1 TP1` for
/// `rank 3`: the grammar's `server_args` sample prints `dp_size=2, tp_size=2` and its
/// world is `across_replicas`, so 3 = dp 1 · 2 + tp 1 is DP1 TP1, as the run names it.
#[test]
fn tags_joined_by_a_bar_read() {
    let (code, out) = run(
        "grammar.toml",
        &["grammars", "check", "out/grammar.v1-tags-pipe.toml"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("19 samples checked, 0 failed"), "{out}");
}

/// Q2: a worker rule's `dp` capture names the replica (`Worker_dp1_TP3` is DP1 TP3),
/// and a rule's `tags` read in any case (`Worker_tp3` is TP3).
#[test]
fn a_worker_rule_reads_its_dp_capture_and_lower_case_tags() {
    let (code, out) = run(
        "grammar.toml",
        &["grammars", "check", "out/experiments/proc-dp.toml"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("1 samples checked, 0 failed"), "{out}");
    // proc-lower's sample expects DP1 TP3 from `Worker_tp3`, which names no replica.
    let (_, out) = run(
        "grammar.toml",
        &["grammars", "check", "out/experiments/proc-lower.toml"],
    );
    assert!(
        out.contains("the line's rank reads as `TP3`, the sample says `DP1 TP3`"),
        "{out}"
    );
}

/// Q6: the watchdog's `grank` capture without `units = { grank = "int" }`
/// (out/experiments/nounit.toml) still moves heron.log:62 to rank 3, DP1 TP1; the sample
/// that states `grank = 3` says which unit to add.
#[test]
fn a_rank_capture_reads_as_a_number_whatever_its_unit() {
    let grammar = "out/experiments/nounit.toml";
    let (_, out) = run(grammar, &["summary", "failing"]);
    assert!(
        out.contains("root: DP1 TP1 stalled in weight_load (phase from last event at"),
        "{out}"
    );
    assert!(out.contains("failing/heron.log:62"), "{out}");
    let (code, out) = run(grammar, &["grammars", "check", grammar]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "field `grank` read the text \"3\", expected 3 (add `units = { grank = \"int\" }` to the event)"
        ),
        "{out}"
    );
}

/// M3: the coordinators' `- WARNING - replica dp0 lost 2 workers` lines (heron.log:72,
/// 73) under the grammar as first written (out/grammar.v2-before-engine-fix.toml, no
/// event of its own for them) are Python logging warnings of no server: not vLLM's.
#[test]
fn python_logging_warnings_are_no_vllm_lines() {
    let (_, out) = run(
        "out/grammar.v2-before-engine-fix.toml",
        &["summary", "failing"],
    );
    assert!(
        out.starts_with("FAILED  failing  4 ranks, 1 source, read as heronserve+pytorch+streams"),
        "{out}"
    );
    assert!(!out.contains("vllm"), "{out}");
}

/// Q13: the first event is at 17:02:10.003 (heron.log:2, the config line), the last line
/// at 17:08:02.000 (line 74): 351.997 s, printed rounded.
#[test]
fn the_run_length_is_rounded() {
    let (_, out) = run("grammar.toml", &["summary", "failing"]);
    assert!(
        out.contains("started 2026-11-30 17:02:10.003, last event 352 s later"),
        "{out}"
    );
}

/// Q14: the cause row says what tied the change to the failure: the suspect's first word
/// the failure's lines hold, `no progress`, in the watchdog line (heron.log:62). Its
/// traceback also holds `nfs` and the new value, `/mnt/nfs/heron-13b` (line 68): 3 hits.
#[test]
fn the_likely_trigger_says_what_tied_it() {
    let d = json("grammar.toml", &["diff", "--json", "baseline", "failing"]);
    // The text's rows, unwrapped.
    assert_eq!(
        d["failure_cause"]["text"][1],
        "likely trigger: weights_dir '/local/nvme/heron-13b' -> '/mnt/nfs/heron-13b' \
         (the failure holds \"no progress\": \"watchdog: rank 3 (dp1,tp1) made no progress \
         for 300s in load_weights; terminating 4 workers\", failing/heron.log:62)"
    );
    let s = &d["failure_cause"]["suspects"][0];
    assert_eq!(s["setting"], "weights_dir", "{s}");
    assert_eq!(s["why"], "named", "{s}");
    assert_eq!(s["found"], "no progress", "{s}");
    assert_eq!(s["line"], 62, "{s}");
}
