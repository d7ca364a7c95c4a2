//! Trial 25 of issue 28 (`wrenfield-serve`, `tests/fixtures/made-up-server-27/`, written
//! from docs/grammars.md alone): a vLLM V1 fork, TP8, worker 5 killed by the OOM killer
//! while it pins its host swap (`host_swap_gib 4 -> 60`, config line 2) and silent about
//! it; the engine core's monitor reports it at line 70 (`runner WrenWorker-5 (pid 5105)
//! exited with code -9, killed by signal SIGKILL`). `grammar-signame.toml` captures the
//! signal's name as `failure` and lists a `died` suspect only. Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-27";

/// Q2, Q3: a `failure` capture reading a signal's name (`SIGKILL`) reads as `signal`, and a
/// `died` suspect explains a rank another process reported dead, whatever its kind.
#[test]
fn a_signal_name_reads_as_signal_and_a_died_suspect_ties_it() {
    let (_, text) = common::fixture_run(DIR, "grammar-signame.toml", &["summary", "failing"]);
    let text = common::flat(&text);
    assert!(
        text.contains("root: TP5 was stopped by a signal in kv_cache (phase from last event at failing/server.log:60), reported by engine at failing/server.log:70"),
        "{text}"
    );
    let (code, text) = common::fixture_run(
        DIR,
        "grammar-signame.toml",
        &["diff", "baseline", "failing"],
    );
    let text = common::flat(&text);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("likely trigger: host_swap_gib 4 -> 60 (the failure holds \"SIGKILL\""),
        "{text}"
    );
}

/// Q1: the engine core's phase-less event of the grammar's own kind (`core up: …`, line
/// 87 of the baseline) makes its row, as a `[[process]]` engine's any event does.
#[test]
fn an_engines_event_of_no_phase_makes_its_row() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "--ranks", "baseline"]);
    let text = common::flat(&text);
    assert!(
        text.contains("1 engine process beside the ranks (not counted as ranks)"),
        "{text}"
    );
}
