//! The made-up server of trial 11 (`rookline`, `tests/fixtures/made-up-server-13/`:
//! grammar.toml, the runs, EXPECTED.md written before running the tool, QUESTIONS.md):
//! 8 workers (TP4 x PP2) run as actors of a made-up framework that forwards every worker
//! line into ONE driver log, prefixed `(ShardActor pid=N, ip=A.B.C.D) `. The two hosts'
//! pids overlap on purpose (48209 and 48210 run on both 10.3.0.11 and 10.3.0.12 in the
//! baseline, 51872 and 51873 in the failing run): a process is its pid on its host, and
//! the one file is read as one node per host (trial 11's M1). Every expected value is
//! read off the logs by hand (line numbers are `grep -n`'s).

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-13";

/// baseline/driver.log: 33 lines name ip=10.3.0.11 and 33 name 10.3.0.12 (`grep -c`);
/// each host's four workers say `assigned global rank g (pp p, tp t)` once (lines 6-15),
/// so 8 ranks, PP0 on .11 and PP1 on .12. Every `collective group ready` (lines 22-29)
/// is stamped 1796116355.900 on both hosts: the second node's offset is 0, within the
/// stamps' ms and the barrier's spread (± 0.05 s).
#[test]
fn one_file_of_two_hosts_reads_as_two_nodes_of_four_ranks() {
    let (code, out) = common::fixture_run(DIR, "grammar.toml", &["summary", "baseline"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with("READY  baseline  8 ranks, 1 source, read as rookline"),
        "{out}"
    );
    assert!(out.contains("2 nodes, clocks against 10.3.0.11's"), "{out}");
    assert!(
        out.contains("10.3.0.11 (4 ranks PP0 TP0…PP0 TP3): reference"),
        "{out}"
    );
    assert!(
        out.contains("10.3.0.12 (4 ranks PP1 TP0…PP1 TP3): +0.00 s ± 0.05 s"),
        "{out}"
    );
    // Equal pids on two hosts are two processes: no rank is said to run on two hosts.
    assert!(!out.contains("name two hosts"), "{out}");
}

/// Stage 0 loads 6342 MiB in 21.3-21.6 s (lines 40-43), stage 1 6598 MiB in 22.4-22.7 s
/// (lines 44-47): median of 8 = (21.6 + 22.4) / 2 = 22.0 s, and (6342 + 6598) / 2 = 6470
/// MiB; in GiB 6342/1024 = 6.193, 6470/1024 = 6.318, 6598/1024 = 6.443. The KV pool:
/// 40000 pages / 640000 tokens on .11 (lines 56-59), 39840 / 637440 on .12 (60-63),
/// medians 39920 and 638720. No rank agrees with a median of two halves: no `off median`.
/// PP1 TP0 is pid 48209 on .12 (line 10): its row has stage 1's 6.443 GiB and 637,440
/// tokens (lines 44, 60), not PP0 TP2's (48209 on .11).
#[test]
fn stage_figures_count_all_eight_ranks() {
    let (code, out) = common::fixture_run(DIR, "grammar.toml", &["summary", "baseline", "--ranks"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("weight_load  8/8    21.3 / 22.0 / 22.7 s"),
        "{out}"
    );
    assert!(
        out.contains("mem usage        6.193 GiB / 6.318 GiB / 6.443 GiB\n"),
        "{out}"
    );
    assert!(
        out.contains("kv pages         39,840 / 39,920 / 40,000 pages\n"),
        "{out}"
    );
    assert!(
        out.contains("tokens           637,440 / 638,720 / 640,000\n"),
        "{out}"
    );
    assert!(!out.contains("off median"), "{out}");
    let row = |r: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{r} ")))
            .unwrap_or_else(|| panic!("no row {r}: {out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        row("PP1 TP0"),
        "PP1 TP0 ready ready 612 MiB 6.443 GiB 637,440 846 MiB"
    );
    assert_eq!(
        row("PP0 TP2"),
        "PP0 TP2 ready ready 612 MiB 6.193 GiB 640,000 846 MiB"
    );
}

/// failing/driver.log: PP1 TP3 (pid 51875 on .12, line 15) fails at line 22; its
/// traceback, lines 23-30, carries the same prefix and no stamp: 8 continuation lines.
/// The 7 others (51872 and 51873 on both hosts among them) are cancelled, lines 33-39.
#[test]
fn the_failing_run_keeps_eight_ranks_and_the_traceback() {
    let (code, out) = common::fixture_run(DIR, "grammar.toml", &["summary", "failing"]);
    assert!(matches!(code, Some(0 | 1)), "{out}");
    assert!(out.starts_with("FAILED  failing  8 ranks"), "{out}");
    assert!(
        out.contains("7/8 ranks: terminated (signal in dist_init)"),
        "{out}"
    );
    assert!(
        out.contains("40 lines: 26 events, 4 other records, 8 continuation, 1 noise, 0 blank"),
        "{out}"
    );
    assert!(out.contains("10.3.0.12 (4 ranks PP1 TP0…PP1 TP3)"), "{out}");
}
