//! Every mark in the text output is explained where it is printed.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;

fn rankscope(args: &[&str]) -> String {
    let out = Command::cargo_bin("rankscope")
        .expect("bin")
        .args(args)
        .output()
        .expect("run");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// samples/tp8-custom-ar: all 8 ranks print `Capture cuda graph begin` and none prints
/// `Capture cuda graph end` (`grep -c` gives 8 and 0): they ran out of memory inside it,
/// so none of the 8 finished `cuda_graph` — the row reads `0/8*`, and the legend for `*`
/// follows the table.
#[test]
fn a_starred_rank_count_is_explained_under_the_table() {
    let text = rankscope(&["summary", "--color", "never", "samples/tp8-custom-ar"]);
    let graph = text
        .lines()
        .find(|l| l.starts_with("cuda_graph"))
        .unwrap_or_else(|| panic!("no cuda_graph row in\n{text}"));
    assert!(graph.contains("0/8*"), "{graph}");
    let legend: Vec<&str> = text.lines().filter(|l| l.starts_with("* ")).collect();
    assert_eq!(
        legend,
        ["* ranks that finished the phase, of all: some that began it did not finish it"]
    );
}

/// docs/examples/lmserve.log: shard-1's last phase line is its `kv pool:` line, but both
/// shards reach ready, so both finished `kv_cache`: `2/2`, no star.
#[test]
fn a_rank_that_reached_ready_finished_the_phases_it_began() {
    let text = rankscope(&[
        "--grammar",
        "docs/examples/lmserve.toml",
        "summary",
        "--color",
        "never",
        "docs/examples/lmserve.log",
    ]);
    let kv = text
        .lines()
        .find(|l| l.starts_with("kv_cache"))
        .unwrap_or_else(|| panic!("no kv_cache row in\n{text}"));
    assert!(kv.contains("2/2 "), "{kv}");
    assert!(!text.contains('*'), "{text}");
}

/// samples/tp8-baseline: all 8 ranks reach ready, each phase closed by the next (no `*`), so no
/// legend is printed.
#[test]
fn no_star_no_legend() {
    let text = rankscope(&["summary", "--color", "never", "samples/tp8-baseline"]);
    assert!(text.contains("PHASE"), "{text}");
    assert!(!text.contains('*'), "{text}");
}

/// Both tp8 snapshots hold 158 segments totalling 15,021,899,776 bytes (summed with
/// Python's pickle over `segments[].total_size`), so the reserved delta is zero, printed
/// as a signed nothing, not as an absolute `0 B`.
#[test]
fn a_zero_memory_delta_is_signed() {
    let text = rankscope(&[
        "mem",
        "diff",
        "samples/tp8-baseline/snapshot_rank0.pickle",
        "samples/tp8-custom-ar/snapshot_rank0.pickle",
    ]);
    assert!(
        text.contains("reserved  13.99 GiB -> 13.99 GiB (±0 B)"),
        "{text}"
    );
    assert!(
        text.contains("segments 158 -> 158  peak reserved ±0 B"),
        "{text}"
    );
}

/// samples/tp8-custom-ar: every rank's OOM is in cuda_graph, which no rank ended, so its
/// duration and end skew are `-`; the legend for `-` follows the table, with the `*` one.
#[test]
fn an_unknown_cell_is_explained_under_the_table() {
    let text = rankscope(&["summary", "--color", "never", "samples/tp8-custom-ar"]);
    let graph = text
        .lines()
        .find(|l| l.starts_with("cuda_graph"))
        .unwrap_or_else(|| panic!("no cuda_graph row in\n{text}"));
    assert!(graph.contains("0/8*") && graph.contains(" - "), "{graph}");
    assert!(
        text.lines().any(|l| l.starts_with("- not known: ")),
        "{text}"
    );
    // tp8-baseline: every phase has durations and a skew, so no `-` legend.
    let base = rankscope(&["summary", "--color", "never", "samples/tp8-baseline"]);
    assert!(!base.lines().any(|l| l.starts_with("- ")), "{base}");
}

/// Both tp8 logs print `max_total_num_tokens=91141` and `K size: 2.98 GB, V size: 2.98 GB`
/// on every rank: those two figures did not move, their `ranks` cell is `-`, and the
/// legend says so. No figure is within noise, so there is no `noise` legend.
#[test]
fn the_diff_table_explains_its_marks() {
    let text = rankscope(&[
        "diff",
        "--color",
        "never",
        "samples/tp8-baseline",
        "samples/tp8-custom-ar",
    ]);
    let same: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.starts_with("kv_cache") && !l.contains(" time ") && l.trim_end().ends_with(" -")
        })
        .collect();
    assert_eq!(same.len(), 2, "{text}");
    assert!(
        text.lines()
            .any(|l| l == "ranks -: no rank moved beyond the resolution (time: or the tolerance)"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("noise:")), "{text}");
}
