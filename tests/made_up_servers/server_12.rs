//! The eleventh made-up server of issue 28 (`tarnserve`), written by trial 10 from
//! docs/grammars.md alone (`tests/fixtures/made-up-server-12/`: grammar.toml, the runs,
//! EXPECTED.md written before running the tool, QUESTIONS.md): TP8 ranks behind an MPI
//! launcher's `[1,R]<stream>:` tags in one `mpirun.out`, a server with no CUDA-graph step
//! (its grammar declares dist_init, weight_load and kv_cache only), and a failing run
//! whose TP3 cannot allocate its KV pool after `kv_mem_fraction 0.9 -> 0.99`; the launcher
//! aborts the job and the 7 others print `got SIGTERM from launcher`. Every expected value
//! is read off the logs by hand (line numbers are `grep -n`'s).

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-12";

/// The killed ranks' SIGTERM lines of the failing run (mpirun.out:65-71, TP0 first).
const KILLED: [&str; 7] = ["TP0", "TP1", "TP2", "TP4", "TP5", "TP6", "TP7"];

/// M2: TP0-2 and TP4-7 end kv_cache (`kv pool allocated`, mpirun.out:53-59), print
/// nothing more and are killed (65-71); the run prints no ready line (`grep -c "rank
/// ready"` is 0) and tarnserve has no cuda_graph phase, so they were after kv_cache and
/// before ready — not "in cuda_graph", a phase with no line and no row.
#[test]
fn killed_ranks_are_after_kv_cache_before_ready_when_the_server_has_no_cuda_graph() {
    let (code, out) = common::fixture_run(DIR, "grammar.toml", &["summary", "failing", "--ranks"]);
    assert_eq!(code, Some(0), "{out}");
    let rows = out.replace("\n      ", " ").replace("\n  ", " ");
    assert!(
        rows.contains("root: TP3 ran out of memory in kv_cache (phase from last event at failing/mpirun.out:48), failing/mpirun.out:60"),
        "{out}"
    );
    assert!(
        rows.contains("7/8 ranks: terminated (signal after kv_cache, before ready), after TP3"),
        "{out}"
    );
    assert!(!out.contains("cuda_graph"), "{out}");
    for r in KILLED {
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("{r} ")))
            .unwrap_or_else(|| panic!("no row {r}: {out}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1..3], ["kv_cache", "terminated"], "{row}");
    }
    let (_, diff) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    let diff = diff.replace("\n          ", " ");
    assert!(
        diff.contains("7/8 ranks: terminated (signal after kv_cache, before ready), after TP3"),
        "{diff}"
    );
}

/// M2 in JSON: phase `ready` placed after the completed kv_cache (`after_last_phase`),
/// last phase kv_cache; TP3's own failure stays in kv_cache from its `kv sizing` line
/// (mpirun.out:48).
#[test]
fn killed_ranks_in_json_are_placed_after_kv_cache() {
    let doc = common::fixture_json(DIR, "grammar.toml", &["summary", "failing", "--json"]);
    for r in KILLED {
        let rank = common::rank_entry(&doc, r);
        assert_eq!(rank["last_phase"], "kv_cache", "{r}");
        assert_eq!(rank["outcome"], "terminated", "{r}");
        let f = &rank["failure"];
        assert_eq!(f["phase"], "ready", "{r}");
        assert_eq!(f["phase_from"], "after_last_phase", "{r}");
        assert_eq!(f["consequence_of"], "TP3", "{r}");
    }
    assert_eq!(common::rank_entry(&doc, "TP0")["failure"]["line"], 65);
    assert_eq!(common::rank_entry(&doc, "TP7")["failure"]["line"], 71);
    let tp3 = common::rank_entry(&doc, "TP3");
    assert_eq!(tp3["last_phase"], "kv_cache");
    assert_eq!(tp3["failure"]["phase"], "kv_cache");
    assert_eq!(tp3["failure"]["phase_from"], "last_event");
    assert_eq!(tp3["failure"]["line"], 60);
}

/// M2 with experiments/then-ready.toml (`then = "ready"` on the `kv pool allocated` line):
/// the line begins ready, but the run printed no ready line, so the killed ranks never
/// served — still "after kv_cache, before ready", not "while serving".
#[test]
fn then_ready_without_a_ready_line_is_not_serving() {
    let (_temp, name) = common::temp_in(DIR);
    let grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    let anchor = "literals = [\"kv pool allocated: \"]";
    assert!(grammar.contains(anchor));
    let grammar = grammar.replace(anchor, &format!("{anchor}\nthen = \"ready\""));
    std::fs::write(format!("{DIR}/{name}/then-ready.toml"), grammar).unwrap();
    let (code, out) = common::fixture_run(
        DIR,
        &format!("{name}/then-ready.toml"),
        &["summary", "failing", "--ranks"],
    );
    assert_eq!(code, Some(0), "{out}");
    let rows = out.replace("\n      ", " ").replace("\n  ", " ");
    assert!(
        rows.contains("7/8 ranks: terminated (signal after kv_cache, before ready), after TP3"),
        "{out}"
    );
    assert!(!out.contains("while serving"), "{out}");
    let tp0 = out.lines().find(|l| l.starts_with("TP0 ")).unwrap();
    assert!(
        tp0.contains(" kv_cache ") && tp0.contains("terminated"),
        "{tp0}"
    );
}

/// M3: mpirun's `rank 3 exited with status 1; aborting job 1` (mpirun.out:62) has no rank
/// rule: it is the launcher's, listed in `run.launcher_failures`, not the root (TP3's own
/// OOM, line 60, is). The launcher printed no phase line; the ranks' latest phase lines
/// before line 62 are kv_cache's (`kv sizing` 45-52, `kv pool allocated` 53-59), so the
/// run was in kv_cache, read from the ranks at that line — not `launch` from a last event.
#[test]
fn the_launcher_failure_is_in_the_phase_the_ranks_had_reached() {
    let doc = common::fixture_json(DIR, "grammar.toml", &["summary", "failing", "--json"]);
    let lf = doc["run"]["launcher_failures"].as_array().unwrap();
    assert_eq!(lf.len(), 1, "{lf:?}");
    assert_eq!(
        lf[0]["message"],
        "rank 3 exited with status 1; aborting job 1"
    );
    assert_eq!(lf[0]["line"], 62);
    assert_eq!(lf[0]["phase"], "kv_cache");
    assert_eq!(lf[0]["phase_from"], "ranks_at_line");
    assert_eq!(lf[0]["fields"]["exited_rank"], 3);
    let (_, out) = common::fixture_run(DIR, "grammar.toml", &["summary", "failing"]);
    assert!(
        out.contains("outside any rank: rank 3 exited with status 1; aborting job 1"),
        "{out}"
    );
    assert!(
        out.contains("root: TP3 ran out of memory in kv_cache"),
        "{out}"
    );
}

/// The baseline: every rank prints `rank ready` (mpirun.out has 8), so every rank is
/// ready and no phase is made up after kv_cache.
#[test]
fn the_baseline_is_ready_on_every_rank() {
    let doc = common::fixture_json(DIR, "grammar.toml", &["summary", "baseline", "--json"]);
    for r in 0..8 {
        let rank = common::rank_entry(&doc, &format!("TP{r}"));
        assert_eq!(rank["outcome"], "ready", "TP{r}");
        assert_eq!(rank["last_phase"], "ready", "TP{r}");
    }
}
