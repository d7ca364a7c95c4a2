//! `rankscope grammars check` refuses every grammar key the model would ignore, with the
//! reason: one test per rejection, each a small valid grammar (`BASE`, which checks
//! clean) with one key added or changed.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;

/// A valid grammar: a prefix naming the rank, a failure line, a teardown line, a phase line.
const BASE: &str = r#"
id = "probe"
name = "probe"

[[prefix]]
id = "main"
regex = '''(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2}) probe\[(?P<tp>\d+)\] '''
starts_with = ["20"]

[[event]]
kind = "error"
literals = ["fatal:"]
regex = '''fatal: (?P<reason>.*)'''

[[event]]
kind = "teardown"
literals = ["shutting down"]
regex = '''shutting down'''
set = { outcome = "terminated" }

[[event]]
kind = "weight_load_end"
phase = "weight_load"
edge = "ends"
literals = ["weights in"]
regex = '''weights in (?P<secs>[\d.]+)s'''
units = { secs = "s" }
figures = { elapsed = "secs" }
"#;

/// `grammars check` on `text`: exit code, and standard output (where sample failures are
/// reported) followed by standard error (where a grammar that does not load is).
fn check(text: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("probe.toml");
    std::fs::write(&path, text).unwrap();
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .args(["grammars", "check", path.to_str().unwrap()])
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), said)
}

/// `BASE` with `from` replaced by `to` must be refused with `reason` in the message.
fn refused(from: &str, to: &str, reason: &str) {
    assert!(BASE.contains(from), "{from}");
    let (code, err) = check(&BASE.replacen(from, to, 1));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(reason), "expected {reason:?} in:\n{err}");
}

#[test]
fn the_base_grammar_checks() {
    let (code, err) = check(BASE);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_prefix_capture_the_scanner_does_not_read() {
    // `rank` is not a prefix capture (`tp`, `tags`, `grank` are): the rank would be lost.
    refused(
        r"probe\[(?P<tp>\d+)\]",
        r"probe\[(?P<rank>\d+)\]",
        "prefix `main`: capture `rank` is read by nothing here (the captures read are date, md, time, stamp, tags, tp, gpu, grank, pid, proc, host)",
    );
}

#[test]
fn a_suffix_capture_that_names_no_rank() {
    let with_suffix = format!(
        "{BASE}\n[[suffix]]\nid = \"end\"\nregex = ''' \\(worker=(?P<tp>\\d+) pid=(?P<pid>\\d+)\\)$'''\n"
    );
    let (code, err) = check(&with_suffix);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("suffix `end`: capture `pid` is read by nothing here (the captures read are tags, tp, gpu, grank)"),
        "{err}"
    );
}

#[test]
fn a_process_name_capture_nothing_reads() {
    let with_process =
        format!("{BASE}\n[[process]]\nname = '''^Worker_(?P<tp>\\d+)$'''\nrole = \"worker\"\n");
    let (code, err) = check(&with_process);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("process 1: capture `tp` is read by nothing here (the captures read are tags, global_rank, dp)"),
        "{err}"
    );
}

#[test]
fn an_outcome_capture_other_than_peer() {
    let with_outcome = format!(
        "{BASE}\n[[outcome]]\nstate = \"consequence\"\nliterals = [\"peer died\"]\nregex = '''peer (?P<rank>\\d+) died'''\n"
    );
    let (code, err) = check(&with_outcome);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("capture `rank` is read by nothing here (the captures read are peer)"),
        "{err}"
    );
}

#[test]
fn set_failure_on_a_line_that_is_no_failure() {
    refused(
        "regex = '''weights in (?P<secs>[\\d.]+)s'''",
        "regex = '''weights in (?P<secs>[\\d.]+)s'''\nset = { failure = \"nccl\" }",
        "event 3 (`weight_load_end`): set.failure is read only from failures (kind `oom` or `error`) and lines that give an outcome (`set.outcome`); on a `weight_load_end` event it would be ignored",
    );
}

#[test]
fn set_phase_on_a_line_that_is_no_failure() {
    refused(
        "regex = '''weights in (?P<secs>[\\d.]+)s'''",
        "regex = '''weights in (?P<secs>[\\d.]+)s'''\nset = { phase = \"kv_cache\" }",
        "set.phase is read only from failures",
    );
}

#[test]
fn set_failure_on_an_oom_event() {
    refused(
        "kind = \"error\"",
        "kind = \"oom\"\nset = { failure = \"nccl\" }",
        "event 1 (`oom`): set.failure on an `oom` event would be ignored",
    );
}

#[test]
fn set_failure_of_no_kind_a_line_sets() {
    // `oom` is an event kind, not a `failure` value: as a value it would read as an
    // exception.
    refused(
        "regex = '''fatal: (?P<reason>.*)'''",
        "regex = '''fatal: (?P<reason>.*)'''\nset = { failure = \"oom\" }",
        "set.failure `oom` is not a failure kind a line sets (not_enough_memory, nccl, timeout, signal, exception); an out-of-memory line is an event of kind `oom`",
    );
    refused(
        "regex = '''fatal: (?P<reason>.*)'''",
        "regex = '''fatal: (?P<reason>.*)'''\nset = { failure = \"ncll\" }",
        "set.failure `ncll` is not a failure kind",
    );
}

#[test]
fn set_waits_for_other_than_peer() {
    refused(
        "set = { outcome = \"terminated\" }",
        "set = { outcome = \"terminated\", waits_for = \"launcher\" }",
        "set.waits_for `launcher`: the one value is `peer`",
    );
}

#[test]
fn set_and_a_capture_of_one_name() {
    refused(
        "regex = '''fatal: (?P<reason>.*)'''",
        "regex = '''fatal: (?P<reason>.*)'''\nset = { reason = \"unknown\" }",
        "set.reason and the capture `reason` give the same field",
    );
}

#[test]
fn a_failure_that_ends_its_phase() {
    refused(
        "kind = \"error\"",
        "kind = \"error\"\nphase = \"kv_cache\"\nedge = \"ends\"",
        "event 1 (`error`): a failure does not end its phase",
    );
}

#[test]
fn a_failure_in_a_phase_is_accepted() {
    // `phase` on a failure is read: it places the failure (tests/made_up_servers/server_1.rs runs one).
    let (code, err) = check(&BASE.replacen(
        "kind = \"error\"",
        "kind = \"error\"\nphase = \"kv_cache\"",
        1,
    ));
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_declared_figure_no_event_reports() {
    let declared = BASE.replacen(
        "[[prefix]]",
        "[[figure]]\nname = \"kv_blocks\"\nunit = \"blocks\"\nworse = \"less\"\n\n[[prefix]]",
        1,
    );
    let (code, err) = check(&declared);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("figure `kv_blocks` is declared but no event's `figures` reports it"),
        "{err}"
    );
}

#[test]
fn a_sample_time_is_shown_at_its_format_resolution() {
    // A millisecond stamp reading `.000` is shown as `.000`, not as a whole second.
    let ms = BASE.replacen(
        r"(?P<time>\d{2}:\d{2}:\d{2})",
        r"(?P<time>\d{2}:\d{2}:\d{2}\.\d{3})",
        1,
    )
    .replacen(
        "starts_with = [\"20\"]",
        "starts_with = [\"20\"]\ntime_format = \"%H:%M:%S%.3f\"",
        1,
    ) + "\n[[sample]]\nline = '2026-12-01 21:00:00.000 probe[0] weights in 1.5s'\nkind = \"weight_load_end\"\ntime = \"2026-12-01 21:00:00.500\"\n";
    let (code, err) = check(&ms);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("time `2026-12-01 21:00:00.000`, expected `2026-12-01 21:00:00.500`"),
        "{err}"
    );
}

/// Found by the `grammar_toml` fuzz target (docs/reliability.md): a `'''` string left open
/// makes an event's regex thousands of atoms long, and the miss explanation compiled a
/// regex per leading part of it — quadratic, 23 CPU-s for one 12 KB file. The leading
/// parts are now bisected. Here 20,000 atoms (`x` after each of 19,999 `a`s would be a
/// cut): one compile per part would take minutes; the test ends in a second or two.
#[test]
fn a_miss_on_a_regex_of_thousands_of_atoms_is_explained_at_once() {
    let long = format!("fatal: {}x", "a".repeat(19_999));
    let text = BASE.replacen("fatal: (?P<reason>.*)", &long, 1)
        + "\n[[sample]]\nline = '2026-12-01 21:00:00 probe[0] fatal: aaaa'\nkind = \"error\"\n";
    let (code, said) = check(&text);
    assert_eq!(code, Some(1), "{said}");
    // The sample's message `fatal: aaaa` matches the regex up to its fourth `a`.
    assert!(
        said.contains("probe:error: matched `fatal: aaaa`, failed at `aaaa"),
        "{said}"
    );
}
