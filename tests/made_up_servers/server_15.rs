//! Trial 13 of issue 28 (`gannetgen`, `tests/fixtures/made-up-server-15/`, written from
//! docs/grammars.md alone): a TGI-like Rust launcher's one log, TP2, each shard's rank only
//! a trailing `rank=N`. In `failing/` shard 1 dies in warm-up: the launcher forwards its
//! bare traceback (lines 19–28) and the unstamped `torch.OutOfMemoryError … rank=1`
//! (line 29). `failing-two/` is ours: the same run with rank 0's stamped OOM at
//! 09:14:28.100 (line 18) before it, so shard 1's unstamped OOM (line 30), printed after
//! the 09:14:29.843 line, came second. Line numbers by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-15";

/// Q1, Q2: the bare traceback before the bare OOM line is its traceback, its frames give
/// the phase, and the suffix's `rank=1` names the rank of a line with no prefix.
#[test]
fn the_forwarded_traceback_and_bare_oom_are_tp1s() {
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let f = &common::rank_entry(&s, "TP1")["failure"];
    assert_eq!(f["kind"], "oom");
    assert_eq!(f["line"], 29);
    assert_eq!(f["phase"], "kv_cache");
    assert_eq!(f["phase_from"], "frames");
    assert!(f["ts"].is_null(), "{f}");
    let tb = f["traceback"].as_str().unwrap();
    assert!(tb.starts_with("Traceback (most recent call last):"), "{tb}");
    assert!(tb.contains("in warmup"), "{tb}");
    let t0 = &common::rank_entry(&s, "TP0")["failure"];
    assert_eq!(t0["consequence_of"], "TP1");
    assert_eq!(t0["line"], 32);
}

/// Q7: a failure line with no stamp is ordered at the stamp of the line before it. TP1's
/// OOM (line 30) follows the 09:14:29.843 record; TP0's was stamped 09:14:28.100, so TP0
/// failed first. An unstamped failure used to sort before every stamped one: TP1 was root.
#[test]
fn an_unstamped_failure_is_ordered_after_the_stamp_before_it() {
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing-two"]);
    assert_eq!(s["run"]["root"], "TP0", "{}", s["run"]);
    assert_eq!(common::rank_entry(&s, "TP0")["failure"]["line"], 18);
    assert_eq!(common::rank_entry(&s, "TP1")["failure"]["line"], 30);
    let (_, out) = common::fixture_run(DIR, "grammar.toml", &["summary", "failing-two"]);
    assert!(
        out.contains("verdict: TP0 ran out of memory in kv_cache; 1 more rank failed on its own"),
        "{out}"
    );
}

/// M1 and the check message without a fix: a sample's time must give every digit of a
/// microsecond stamp, and the mismatch says what to write.
#[test]
fn a_sample_time_to_the_millisecond_is_told_its_microseconds() {
    let (dir, name) = common::temp_in(DIR);
    let grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    let cut = grammar.replacen(
        "time = \"2026-12-02 09:14:05.123456\"",
        "time = \"2026-12-02 09:14:05.123\"",
        1,
    );
    assert_ne!(cut, grammar, "the fixture's first sample gives its time");
    std::fs::write(dir.path().join("g.toml"), cut).unwrap();
    let (code, out) = common::fixture_run(
        DIR,
        &format!("{name}/g.toml"),
        &["grammars", "check", &format!("{name}/g.toml")],
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "time `2026-12-02 09:14:05.123456`, expected `2026-12-02 09:14:05.123`: write time = \
             \"2026-12-02 09:14:05.123456\" if that is the line's time"
        ),
        "{out}"
    );
    assert!(out.ends_with("21 samples checked, 1 failed\n"), "{out}");
}

/// Q3: `grammars show` prints a built-in grammar's TOML as shipped, and a user's file.
#[test]
fn grammars_show_prints_the_built_in_tgi_grammar() {
    let (code, out) = common::fixture_run(DIR, "grammar.toml", &["grammars", "show", "tgi"]);
    assert_eq!(code, Some(0), "{out}");
    let shipped = std::fs::read_to_string("grammars/tgi.toml").unwrap();
    assert_eq!(out, shipped);
    let (code, out) = common::fixture_run(DIR, "grammar.toml", &["grammars", "show", "gannet"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("name = \"gannetgen\"\n"), "{out}");
    let (code, _) = common::fixture_run(DIR, "grammar.toml", &["grammars", "show", "gannetgen"]);
    assert_eq!(code, Some(2));
}
