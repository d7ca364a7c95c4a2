//! Trial 22 of issue 28 (`petrel-serve`, `tests/fixtures/made-up-server-24/`, written from
//! docs/grammars.md alone): a second vLLM V1 fork with a worker killed by the OOM killer
//! (the shape of trial 20, re-tried on the docs that answered it). In `failing/`
//! (`swap_space` 4 → 48) worker 5 goes silent after line 59; the engine core reports
//! `worker PetrelWorker-5 (pid 7105) died unexpectedly: exit code -9, killed by signal 9
//! (SIGKILL)` (line 76), read with a `dead_rank` and a `failure` capture. Values by
//! `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-24";

/// M3: `diff`'s cause says whose line it quotes, as `summary` does, and the dead rank's
/// failure does not carry the reporter's own `outcome: consequence`.
#[test]
fn diff_says_who_reported_the_dead_rank() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    assert!(
        common::flat(&text).contains(
            "cause TP5 was stopped by a signal in kv_cache (reported by engine at \
             failing/server.log:76)"
        ),
        "{text}"
    );
    let d = common::fixture_json(
        DIR,
        "grammar.toml",
        &["diff", "--json", "baseline", "failing"],
    );
    assert_eq!(d["failure_cause"]["reported_by"], "engine");
    assert_eq!(d["failure_cause"]["line"], 76);
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let fields = &common::rank_entry(&s, "TP5")["failure"]["fields"];
    assert!(fields.get("outcome").is_none(), "{fields}");
    assert_eq!(fields["dead_rank"], 5);
}

/// M5: a `failure` capture reads a kind's name or a signal's (`SIGKILL` reads `signal`,
/// line 76: `killed by signal 9 (SIGKILL)`); a word that names neither (`exit code`'s
/// `-9`) fails the check, as the same word in `set.failure` is refused (it would make the
/// failure a bare `exception`).
#[test]
fn a_failure_capture_reads_a_kind_or_a_signals_name() {
    let (_, text) = common::fixture_run(DIR, "failure-sigkill.toml", &["summary", "failing"]);
    assert!(
        common::flat(&text).contains("root: TP5 was stopped by a signal in kv_cache"),
        "{text}"
    );
    let (temp, name) = common::temp_in(DIR);
    let text = std::fs::read_to_string(format!("{DIR}/failure-sigkill.toml")).unwrap();
    let edited = text
        .replace(
            "exit code (?P<exit_code>-?\\d+), killed by signal (?P<signo>\\d+) \\((?P<failure>SIG\\w+)\\)",
            "exit code (?P<failure>-?\\d+), killed by signal (?P<signo>\\d+) \\(SIG\\w+\\)",
        )
        .replace("exit_code = -9, failure = \"SIGKILL\"", "failure = \"-9\"")
        .replace("exit_code = \"int\", ", "");
    assert_ne!(edited, text);
    std::fs::write(temp.path().join("g.toml"), edited).unwrap();
    let g = format!("{name}/g.toml");
    let (code, out) = common::fixture_run(DIR, &g, &["grammars", "check", &g]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("the `failure` capture reads `-9`, which is no failure kind"),
        "{out}"
    );
}
