//! Trial 23 of issue 28 (`finchd`, `tests/fixtures/made-up-server-25/`, written from
//! docs/grammars.md alone): an LMDeploy fork whose C++ engine prints an OOM line with the
//! size it asked for (line 30: `tried to allocate 3489660928 bytes … on device 2`), then
//! the Python side's bare traceback (31–38) closes on a second OOM line without a size
//! (39). `grammar-frames.toml` adds the trial's `[[frame_phase]]` for `_create_buffers`
//! (phase kv_cache). Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-25";

/// Q1: the kept failure (line 30, it says what it asked for) takes the traceback of the
/// rank's other OOM line when it printed none, and the phase its frames give: it had no
/// traceback, so a `[[frame_phase]]` could never place it.
#[test]
fn the_sized_oom_takes_the_later_lines_traceback() {
    let s = common::fixture_json(
        DIR,
        "grammar-frames.toml",
        &["summary", "--json", "failing"],
    );
    let f = &common::rank_entry(&s, "TP2")["failure"];
    assert_eq!(f["line"], 30);
    assert_eq!(f["fields"]["requested_bytes"]["bytes"], 3_489_660_928_i64);
    assert_eq!(
        (f["phase"].as_str(), f["phase_from"].as_str()),
        (Some("kv_cache"), Some("frames"))
    );
    let tb = f["traceback"].as_str().unwrap();
    assert!(tb.contains("in _create_buffers"), "{tb}");
    // Without the frame table the phase stays where the rank was.
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let f = &common::rank_entry(&s, "TP2")["failure"];
    assert_eq!(f["phase"], "cuda_graph");
    assert!(f["traceback"]
        .as_str()
        .is_some_and(|t| t.contains("allocate_runtime_buffers")));
}

/// M3: the three ranks the exit line (40) terminated share that one line: it is not
/// "TP0, and 2 more lines".
#[test]
fn one_line_that_ended_three_ranks_is_one_line() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "--ranks", "failing"]);
    let text = common::flat(&text);
    assert!(
        text.contains("failing/finchd.log:40 (one line for all 3)"),
        "{text}"
    );
    assert!(!text.contains("and 2 more lines"), "{text}");
}

/// Q3: a run whose configuration does not print the pool's fraction is read at the
/// grammar's `fraction_default` (0.8): the computed remedy says so. The failing log with
/// `cache_max_entry_count=0.95, ` taken out of its config line (line 3): the deficit is
/// 3.25 GiB asked − 3.00 GiB free (line 30) = 256 MiB, × 1.2 = 307.2 MiB; one step of
/// 0.01 × 60.00 GiB (line 22's free memory, the pool's `total`) leaves 614.40 MiB, so
/// 0.8 → 0.79. The log's pool (57.00 GiB, lines 22–25) is not 0.8 × 60 = 48.00 GiB: the
/// rule check says the remedy is an estimate.
#[test]
fn an_unprinted_fraction_is_read_at_the_grammars_default() {
    let (temp, name) = common::temp_in(DIR);
    let log = std::fs::read_to_string(format!("{DIR}/failing/finchd.log")).unwrap();
    assert!(log.contains("cache_max_entry_count=0.95, "));
    std::fs::write(
        temp.path().join("finchd.log"),
        log.replace("cache_max_entry_count=0.95, ", ""),
    )
    .unwrap();
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", &name]);
    let text = common::flat(&text);
    assert!(
        text.contains(
            "cache_max_entry_count 0.8 (the default: not printed) -> 0.79: leaves 0.01 x 60.00 GiB"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "the server's sizing rule gives a 48.00 GiB pool where this run's is 57.00 GiB"
        ),
        "{text}"
    );
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", &name]);
    let r = &s["remedies"]["remedies"][0];
    assert_eq!(
        (
            r["from"].as_str(),
            r["to"].as_str(),
            r["from_default"].as_bool()
        ),
        (Some("0.8"), Some("0.79"), Some(true))
    );
    // Printed, the fraction is the run's own.
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let r = &s["remedies"]["remedies"][0];
    assert_eq!(
        (r["from"].as_str(), r["from_default"].as_bool()),
        (Some("0.95"), Some(false))
    );
}

/// Q4: the run's first event (line 3, `2026-12-03T07:40:00.240`) prints its date; only the
/// C++ lines after it (`[FM][INFO] 07:40:…`) were dated from it. The header says that,
/// not that the start is a guess.
#[test]
fn a_dated_start_is_not_called_inferred() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "failing"]);
    let text = common::flat(&text);
    assert!(
        text.contains(
            "started 2026-12-03 07:40:00.240, last event 23 s later (later lines' dates inferred)"
        ),
        "{text}"
    );
    assert!(!text.contains("(date inferred)"), "{text}");
}

/// Q6: a sample that gives no event still states its line's rank, which its prefix reads
/// (`[rank 0]`), and cannot state fields it has no event for: both are checked.
#[test]
fn a_sample_without_kind_has_its_rank_checked_and_no_fields() {
    let line = "line = \"[FM][INFO] 07:40:23.000 [rank 0] runtime buffers: 3.25 GiB\"";
    let (code, said) = common::check_edited(
        DIR,
        "grammar.toml",
        &format!("{line}\nrank = \"TP0\""),
        &format!("{line}\nrank = \"TP3\"\nfields = {{ bytes = 1 }}"),
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("the line's rank reads as `TP0` (a line without an event is named by its prefix alone), the sample says `TP3`"),
        "{said}"
    );
    assert!(
        said.contains("`fields` on a sample without `kind`"),
        "{said}"
    );
}
