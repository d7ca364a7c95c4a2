//! Trial 36 of issue 28 (`corvid-serve`, `tests/fixtures/made-up-server-38/`): an SGLang
//! fork, TP8, whose grammar was written from docs/grammars.md alone with no question left
//! that the doc did not answer (its QUESTIONS.md). `mem_static_frac 0.88 -> 0.97`; r5's
//! OOM closes its tagged traceback at line 68 (`Tried to allocate 1.00 GiB … 620.00 MiB is
//! free`); the launcher echoes it (69) and kills the rest (70). Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-38";

/// The reading the trial predicted by hand: TP5 the root in cuda_graph from its frames,
/// the others terminated by line 70, the deficit 1,024 − 620 = 404.00 MiB.
#[test]
fn the_trials_predictions_hold() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "--ranks", "failing"]);
    let text = common::flat(&text);
    for want in [
        "verdict: TP5 ran out of memory in cuda_graph; 7 ranks were terminated",
        "root: TP5 ran out of memory in cuda_graph (phase from frames), failing/corvid.log:68",
        "7/8 ranks: terminated (signal in cuda_graph), after TP5",
        "failing/corvid.log:70 (one line for all 7)",
        "deficit: at least 404.00 MiB (1.00 GiB asked for, 620.00 MiB free",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    let (code, text) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        common::flat(&text).contains("mem_static_frac 0.88 -> 0.97"),
        "{text}"
    );
}
