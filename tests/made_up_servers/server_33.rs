//! Trial 31 of issue 28 (`grebe-serve`, `tests/fixtures/made-up-server-33/`, written from
//! docs/grammars.md alone): an LMDeploy fork with no CUDA graph phase, TP4. After the KV
//! pool (lines 33–36, kv_cache's end) device 2 cannot reserve its decode workspace (line
//! 38, `failed to allocate 4294967296 bytes`), the Python side's traceback follows, and the exit line
//! (46) ends the others; no ready line is ever printed. Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-33";

/// M1, M2: a failure placed in `ready` only because kv_cache was complete — the server
/// never served — reads `after kv_cache, before ready` everywhere: the verdict, the root,
/// the groups, the ranks the exit line ended (LAST PHASE kv_cache, as TP2's), and `diff`.
#[test]
fn a_failure_before_ready_is_never_called_serving() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "--ranks", "failing"]);
    let text = common::flat(&text);
    assert!(!text.contains("while serving"), "{text}");
    for want in [
        "verdict: TP2 ran out of memory after kv_cache, before ready; 3 ranks were terminated",
        "root: TP2 ran out of memory after kv_cache, before ready (phase from last event at failing/grebe.log:36), failing/grebe.log:38",
        "3/4 ranks: terminated (signal after kv_cache, before ready), after TP2",
        "TP0 kv_cache terminated",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    let text = common::flat(&text);
    assert!(!text.contains("while serving"), "{text}");
    assert!(!text.contains("ready asked for"), "{text}");
    assert!(
        text.contains("the failed step after kv_cache asked for 4.00 GiB"),
        "{text}"
    );
}
