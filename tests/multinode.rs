//! Multi-node runs: nodes found, node clocks aligned on barrier exits, stragglers told
//! from clock skew. Inputs are the two-GPU fixtures copied into `samples/`:
//! `samples/node2-skew/node{0,1}/` (one rank per "node", node1's clock 2.2 s behind) and
//! `samples/tp2-straggler/` (one node, TP1 starts loading 6 s late).

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use assert_cmd::Command;
use rankscope::analysis::align::phase_stats;
use rankscope::base::event::Rank;
use rankscope::grammar::GrammarSet;
use rankscope::model::notes::ReadNote;
use rankscope::model::{Phase, Run};
use rankscope::render::text::notes::read_note;
use rankscope::session::{LoadError, LoadOptions, Session};

fn load(paths: &[&str], clock_align: bool) -> Result<Run, LoadError> {
    let gs = GrammarSet::builtin().expect("built-in grammars compile");
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let opts = LoadOptions {
        clock_align,
        ..LoadOptions::default()
    };
    Session::open(&gs, &paths, &opts, &|_, _| {}).map(|l| l.run)
}

/// The barrier exits every node shares, stamped (node0, node1), from
/// `grep -h 'distributed ends\|KV Cache is\|graph end' samples/node2-skew/node*/server.log`:
/// dist_init_end 09:20:42 / 09:20:40, kv_cache_alloc 09:20:45 / 09:20:43, cuda_graph_end
/// 09:20:46 / 09:20:43. A one-second stamp s means a local time in [s, s+1); with the
/// assumed 50 ms spread of a barrier exit, each gives node1 − node0 in
/// (s1 − s0 − 1.05, s1 − s0 + 1.05): (−3.05, −0.95), (−3.05, −0.95), (−4.05, −1.95).
/// Their intersection is (−3.05, −1.95): it holds the true −2.2 s and is 1.1 s wide.
#[test]
fn node2_skew_offset_is_an_interval_around_minus_2_2_s() {
    for paths in [
        vec!["samples/node2-skew"],
        vec!["samples/node2-skew/node0", "samples/node2-skew/node1"],
    ] {
        let run = load(&paths, true).expect("run loads");
        let names: Vec<&str> = run.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["node0", "node1"], "{paths:?}");
        assert!(run.nodes[0].reference);
        assert_eq!(run.nodes[0].ranks, [Rank::tp(0)]);
        assert_eq!(run.nodes[1].ranks, [Rank::tp(1)]);
        // node0's server_args line prints nnodes=2 and no node_rank.
        assert_eq!(run.nodes[0].nnodes, Some(2));
        assert_eq!(run.nodes[0].node_rank, None);
        assert!(run.nodes[0].offset.is_none());
        let o = run.nodes[1].offset.as_ref().expect("node1 has an offset");
        assert_eq!((o.lo_ms, o.hi_ms), (-3050, -1950));
        assert_eq!((o.barrier_events, o.rejected_events), (3, 0));
        assert!(o.lo_ms < -2200 && -2200 < o.hi_ms);
        assert!(o.width_ms() <= 2000);
        assert!(o.applied);
        // node1 holds server.log and stdout.txt (the CSV is not a log source).
        assert_eq!(run.nodes[1].sources.len(), 2);
    }
}

/// After alignment node1's stamps move by +2.5 s (the interval's middle), so the printed
/// phase ends (node0 42, 45, 45, 46; node1 40, 43, 43, 43 → 42.5, 45.5, 45.5, 45.5) are
/// within 0.5 s of each other; raw, they are 2, 2, 2 and 3 s apart. No rank is a
/// straggler either way: the raw stamps are judged against the whole offset.
#[test]
fn node2_skew_phase_ends_line_up_after_alignment_and_nobody_straggles() {
    let aligned = load(&["samples/node2-skew"], true).expect("run loads");
    let raw = load(&["samples/node2-skew"], false).expect("run loads");
    let skew = |run: &Run, p: Phase| {
        phase_stats(run)
            .into_iter()
            .find(|s| s.phase == p)
            .and_then(|s| s.end_skew_s.map(f64::from))
            .expect("phase has ends")
    };
    for (p, raw_skew) in [
        (Phase::DistInit, 2.0),
        (Phase::WeightLoad, 2.0),
        (Phase::KvCache, 2.0),
        (Phase::CudaGraph, 3.0),
    ] {
        assert_eq!(skew(&aligned, p), 0.5, "{p}");
        assert!(skew(&aligned, p) < 1.0);
        assert_eq!(skew(&raw, p), raw_skew, "{p}");
    }
    for run in [&aligned, &raw] {
        let stragglers: Vec<_> = phase_stats(run)
            .into_iter()
            .flat_map(|s| s.stragglers)
            .collect();
        assert!(stragglers.is_empty(), "{stragglers:?}");
    }
    assert!(!raw.nodes[1].offset.as_ref().expect("offset").applied);
}

/// `samples/tp2-straggler/server.log`: TP0 loads 09:20:17 → 20, TP1 09:20:23 → 26, both
/// `elapsed=3.04 s`. TP1 ends weight_load 6 s after TP0 (the only other rank), all of it
/// before its first `Load weight begin` line (23 − 17 = 6 s late), none inside. Launch
/// (first lines at 15 and 16) differs by one stamp step, which is not beyond it.
#[test]
fn tp2_straggler_is_tp1_in_weight_load_before_its_first_line() {
    let run = load(&["samples/tp2-straggler"], true).expect("run loads");
    assert!(run.nodes.is_empty(), "one path, one node");
    let stats = phase_stats(&run);
    let all: Vec<_> = stats
        .iter()
        .flat_map(|p| p.straggler_detail.iter().map(move |s| (p.phase, s)))
        .collect();
    assert_eq!(all.len(), 1, "{all:?}");
    let (phase, s) = all[0];
    assert_eq!(phase, Phase::WeightLoad);
    assert_eq!(s.rank, Rank::tp(1));
    assert_eq!(s.late_s.get(), 6.0);
    assert_eq!(s.before_first_line_s.get(), 6.0);
    assert_eq!(s.inside_s.get(), 0.0);
    assert!(s.before_first_line());
    assert_eq!(s.uncertainty_s.get(), 1.0);
}

#[test]
fn one_rank_from_two_nodes_is_an_error_not_a_merge() {
    let err = load(
        &[
            "samples/node2-skew/node0",
            "samples/node2-skew/../node2-skew/node0",
        ],
        true,
    )
    .expect_err("TP0 on two nodes is refused");
    let msg = err.to_string();
    assert!(
        matches!(err, LoadError::RankOnTwoNodes { ref rank, .. } if rank == "TP0"),
        "{msg}"
    );
    assert!(
        msg.contains("rank TP0 is in the logs of two nodes"),
        "{msg}"
    );
}

#[test]
fn builtin_barrier_exits_are_the_lines_printed_after_a_collective() {
    let gs = GrammarSet::builtin().expect("built-in grammars compile");
    // Per grammar: only SGLang's grammar marks its own lines (grammars/sglang.toml); no
    // other built-in grammar's events of these kinds are barrier exits.
    let kinds: Vec<(String, String)> = gs.barrier_exit_kinds().into_iter().collect();
    let sglang = |k: &str| ("sglang".to_string(), k.to_string());
    assert_eq!(
        kinds,
        [
            sglang("cuda_graph_end"),
            sglang("dist_init_end"),
            sglang("kv_cache_alloc")
        ]
    );
}

fn rankscope() -> Command {
    let mut c = Command::cargo_bin("rankscope").expect("binary built");
    c.env("NO_COLOR", "1");
    c
}

#[test]
fn summary_of_a_node_directory_reports_offsets_and_no_straggler() {
    let out = rankscope()
        // Wide enough for the node's offset line to stay on one line.
        .args(["summary", "samples/node2-skew", "--width", "120"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("2 nodes, clocks against node0's"), "{text}");
    // The middle of (−3.05, −1.95) and half its width, as derived above.
    assert!(
        text.contains(
            "node1 (host vm, TP1): −2.50 s ± 0.55 s, in (−3.05, −1.95) s from 3 barrier exits"
        ),
        "{text}"
    );
    // Each node named with the host its NCCL lines print (`vm:1077:1077 [1] NCCL …` in
    // node1/stdout.txt) and its rank; the reference says so.
    assert!(text.contains("node0 (host vm, TP0): reference"), "{text}");
    assert!(text.contains("no straggler"), "{text}");

    let out = rankscope()
        .args([
            "summary",
            "--json",
            "samples/node2-skew/node0",
            "samples/node2-skew/node1",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    let node1 = &doc["run"]["nodes"][1];
    assert_eq!(node1["name"], "node1");
    assert_eq!(node1["clock_offset"]["min_s"], -3.05);
    assert_eq!(node1["clock_offset"]["max_s"], -1.95);
    assert_eq!(node1["clock_offset"]["offset_s"], -2.5);
    assert_eq!(node1["clock_offset"]["applied"], true);
}

#[test]
fn summary_names_the_straggler_phase_and_where_the_time_went() {
    rankscope()
        // Wide enough for the straggler line to stay on one line.
        .args(["summary", "samples/tp2-straggler", "--width", "200"])
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "straggler: TP1 in weight_load, ended 6.0 s after the others (± 1.0 s), before its first line (began 6.0 s late)",
        ));
}

/// `diff --baseline` takes a multi-node run per side; the same run against itself is SAME.
#[test]
fn diff_accepts_several_paths_per_run() {
    rankscope()
        .args([
            "diff",
            "--baseline",
            "samples/node2-skew/node0",
            "--baseline",
            "samples/node2-skew/node1",
            "samples/node2-skew",
        ])
        .assert()
        .code(0)
        .stdout(predicates::str::starts_with("SAME"));
    rankscope()
        .args(["diff", "samples/node2-skew/node0"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("give BASELINE CANDIDATE"));
}

/// The Perfetto export is on the reference clock: TP1's dist_init bar (node1 stamps
/// 09:20:40 → 40, moved +2.5 s) ends 0.5 s after TP0's (node0 09:20:42), not 2 s before.
#[test]
fn perfetto_export_puts_node1_on_node0s_clock() {
    let run = load(&["samples/node2-skew"], true).expect("run loads");
    let trace = rankscope::export::perfetto::trace(&run);
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let lane = |name: &str| {
        events
            .iter()
            .find(|e| e["name"] == "thread_name" && e["args"]["name"] == name)
            .and_then(|e| e["tid"].as_u64())
            .expect("lane")
    };
    let (tp0, tp1) = (lane("TP0 @node0"), lane("TP1 @node1"));
    let end = |tid: u64| {
        events
            .iter()
            .find(|e| e["name"] == "dist_init" && e["ph"] == "X" && e["tid"] == tid)
            .map(|e| e["ts"].as_i64().unwrap_or(0) + e["dur"].as_i64().unwrap_or(0))
            .expect("dist_init bar")
    };
    assert_eq!(end(tp1) - end(tp0), 500_000);
}

/// 1,024 ranks on 128 nodes, written here in the fixtures' wording: node n's clock is
/// off by `offset_ms(n)` (node0 is exact), and every rank leaves the three barriers at
/// the same true instants (6.0, 43.5 and 52.25 s after 09:20:00). Every node's interval
/// must hold its true offset, and the TUI's rank lanes must scroll to the last rank.
#[test]
fn a_thousand_ranks_on_128_nodes_align_and_the_lanes_scroll() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use rankscope::tui::{input, render_text, update, App};

    fn offset_ms(n: i64) -> i64 {
        if n == 0 {
            0
        } else {
            (n * 373) % 5000 - 2500
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let t0 = chrono::NaiveDate::from_ymd_opt(2026, 11, 30)
        .and_then(|d| d.and_hms_opt(9, 20, 0))
        .expect("date");
    for n in 0..128i64 {
        let node = dir.path().join(format!("node{n:03}"));
        std::fs::create_dir(&node).expect("mkdir");
        // A one-second stamp of true time `ms` on this node's clock (truncated).
        let stamp = |ms: i64| {
            let local = t0 + chrono::Duration::milliseconds(ms + offset_ms(n));
            local.format("%Y-%m-%d %H:%M:%S").to_string()
        };
        let mut log = String::new();
        for k in 0..8 {
            let tag = format!("DP{n} TP{k}");
            for (ms, msg) in [
                (4_000, "Init torch distributed begin."),
                (6_000, "Init torch distributed ends. elapsed=2.00 s, mem usage=1.44 GB"),
                (6_100, "Load weight begin. avail mem=13.98 GB"),
                (40_000, "Load weight end. elapsed=33.90 s, type=Qwen3MoeForCausalLM, avail mem=6.95 GB, mem usage=7.03 GB."),
                (43_500, "KV Cache is allocated. #tokens: 70058, K size: 3.21 GB, V size: 3.21 GB"),
                (43_600, "Memory pool end. avail mem=0.55 GB"),
                (43_700, "Capture cuda graph begin. This can take up to several minutes. avail mem=0.55 GB"),
                (52_250, "Capture cuda graph end. Time elapsed: 8.55 s. mem usage=0.55 GB. avail mem=0.00 GB."),
            ] {
                log.push_str(&format!("[{} {tag}] {msg}\n", stamp(ms)));
            }
        }
        if n == 0 {
            log.push_str(&format!(
                "[{} DP0 TP0] The server is fired up and ready to roll!\n",
                stamp(53_000)
            ));
        }
        std::fs::write(node.join("server.log"), log).expect("write");
    }
    let run = load(&[dir.path().to_str().expect("utf-8 path")], true).expect("run loads");
    assert_eq!(run.ranks.len(), 1024);
    assert_eq!(run.nodes.len(), 128);
    for (n, node) in run.nodes.iter().enumerate().skip(1) {
        let o = node.offset.as_ref().expect("offset");
        let truth = offset_ms(n as i64);
        assert!(
            o.lo_ms < truth && truth < o.hi_ms,
            "{}: {o:?} vs {truth}",
            node.name
        );
        // One barrier exit alone gives 2 s plus twice the 50 ms spread.
        assert!(o.width_ms() <= 2100, "{}: {o:?}", node.name);
    }
    let stragglers: Vec<_> = phase_stats(&run)
        .into_iter()
        .flat_map(|s| s.stragglers)
        .collect();
    assert!(stragglers.is_empty(), "{stragglers:?}");

    let mut app = App::new(run, None, false);
    for _ in 0..110 {
        if let Some(m) = input::from_key(KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE), &app)
        {
            update(&mut app, m);
        }
    }
    let screen = render_text(&mut app, 120, 40);
    assert!(
        screen.lines().any(|l| l.starts_with("DP127 TP7")),
        "{screen}"
    );
    assert!(
        !screen.lines().any(|l| l.starts_with("DP0 TP0 ")),
        "{screen}"
    );
}

/// One host's console: node2-skew's `server.log` then its `stdout.txt`, the NCCL prefix's
/// host (`vm` in the fixture, on both nodes) replaced by `host`, plus two NCCL lines of
/// our own in FORMATS.md §5's shape, with the fixture's pid (1076 on node0, 1077 on node1).
fn console(node: &str, host: &str) -> String {
    let dir = PathBuf::from("samples/node2-skew").join(node);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect("fixture file");
    let nccl = read("stdout.txt").replace("vm:", &format!("{host}:"));
    let pid = if node == "node0" { 1076 } else { 1077 };
    format!(
        "{}{nccl}{host}:{pid}:{pid} [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth7\n\
         {host}:{pid}:{pid} [0] NCCL INFO Using network Socket\n",
        read("server.log")
    )
}

/// Two hosts' consoles side by side in one directory (no node subdirectories): the
/// NCCL prefixes name `gpu-a-01` in one and `gpu-b-02` in the other, so they are two
/// nodes, named by host, and node1's clock is aligned as when directories name them:
/// the same barrier exits give the same interval (−3.05, −1.95) s (derivation at
/// `node2_skew_offset_is_an_interval_around_minus_2_2_s`). Given as two file paths, the
/// nodes are named by host too, not by file.
#[test]
fn nccl_hosts_split_one_directory_into_nodes_and_name_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = dir.path().join("console-first.log");
    let b = dir.path().join("console-second.log");
    std::fs::write(&a, console("node0", "gpu-a-01")).expect("write");
    std::fs::write(&b, console("node1", "gpu-b-02")).expect("write");
    let whole = dir.path().to_string_lossy().to_string();
    let (a, b) = (
        a.to_string_lossy().to_string(),
        b.to_string_lossy().to_string(),
    );
    for paths in [vec![whole.as_str()], vec![a.as_str(), b.as_str()]] {
        let run = load(&paths, true).expect("run loads");
        let names: Vec<&str> = run.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["gpu-a-01", "gpu-b-02"], "{paths:?}");
        assert_eq!(run.nodes[0].hosts, ["gpu-a-01"]);
        assert_eq!(run.nodes[0].ranks, [Rank::tp(0)]);
        assert_eq!(run.nodes[1].ranks, [Rank::tp(1)]);
        let o = run.nodes[1]
            .offset
            .as_ref()
            .expect("gpu-b-02 has an offset");
        assert_eq!((o.lo_ms, o.hi_ms), (-3050, -1950), "{paths:?}");
        assert!(!run
            .notes
            .iter()
            .any(|n| matches!(n, ReadNote::RankOnTwoHosts { .. })));
    }
}

/// A console whose NCCL lines all name one host and a log naming none, given as two
/// paths from one directory: the log names no host and shares no rank with the console
/// (TP0 against TP1), so it stays a node named by its file; the console is the host's
/// node. Two node directories that both name host `vm` (node2-skew as collected) are
/// said to.
#[test]
fn a_file_without_nccl_lines_keeps_its_own_node_and_shared_hosts_are_noted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nccl = dir.path().join("nccl.txt");
    // Only the NCCL lines of node1's console: they name host gpu-b-02.
    let text: String = console("node1", "gpu-b-02")
        .lines()
        .filter(|l| l.contains(" NCCL "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&nccl, text).expect("write");
    let log = dir.path().join("server.log");
    std::fs::copy("samples/node2-skew/node0/server.log", &log).expect("copy");
    let run = load(&[&log.to_string_lossy(), &nccl.to_string_lossy()], true).expect("run loads");
    let names: Vec<&str> = run.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["server.log", "gpu-b-02"]);
    assert!(run.nodes[0].hosts.is_empty());

    let skew = load(&["samples/node2-skew"], true).expect("run loads");
    assert_eq!(skew.nodes[0].hosts, ["vm"]);
    assert_eq!(skew.nodes[1].hosts, ["vm"]);
    assert!(
        skew.notes
            .iter()
            .map(read_note)
            .any(|n| n.contains("nodes node0, node1 all name host vm")),
        "{:?}",
        skew.notes
    );
}

/// One host's server log and console given as two paths: the log names no host, the
/// console names `vm`, and both name TP0 (`grep -c 'TP0\]' samples/node2-skew/node0/*`),
/// so they are one node with one rank — not "TP0 on two nodes".
#[test]
fn a_hosts_log_and_console_given_as_files_are_one_node() {
    let run = load(
        &[
            "samples/node2-skew/node0/server.log",
            "samples/node2-skew/node0/stdout.txt",
        ],
        true,
    )
    .expect("one host's two files load as one node");
    assert_eq!(run.nodes.len(), 1, "{:?}", run.nodes);
    assert_eq!(run.nodes[0].ranks, [Rank::tp(0)]);
    assert_eq!(run.nodes[0].sources.len(), 2);
    assert_eq!(run.nodes[0].hosts, ["vm"]);
}

/// Files given one by one from two node directories are grouped by directory: the same
/// two nodes, and the same offset, as `summary samples/node2-skew` (derived above:
/// (−3.05, −1.95) s from three barrier exits).
#[test]
fn files_from_two_node_directories_are_two_nodes() {
    let run = load(
        &[
            "samples/node2-skew/node0/server.log",
            "samples/node2-skew/node0/stdout.txt",
            "samples/node2-skew/node1/server.log",
            "samples/node2-skew/node1/stdout.txt",
        ],
        true,
    )
    .expect("run loads");
    let names: Vec<&str> = run.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node0", "node1"]);
    assert_eq!(run.nodes[1].ranks, [Rank::tp(1)]);
    assert_eq!(run.nodes[1].sources.len(), 2);
    let o = run.nodes[1].offset.as_ref().expect("node1 has an offset");
    assert_eq!((o.lo_ms, o.hi_ms, o.barrier_events), (-3050, -1950, 3));
}

/// One node directory whose console mixes two hosts' NCCL lines with the same pid: pid
/// 1077 on `gpu-b-02` is TP1 (its `rank 1` communicator line), and pid 1077 on `gpu-c-03`
/// — another process, pids are per host — says `rank 1` too: two machines' processes
/// claim one rank, reported with both host:pid pairs.
#[test]
fn a_rank_whose_pid_appears_under_two_hosts_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = dir.path().join("nodeX");
    std::fs::create_dir(&node).expect("mkdir");
    let mut text = console("node1", "gpu-b-02");
    // An event line (`env`): noise lines such as `Using network` are not kept.
    text.push_str("gpu-c-03:1077:1077 [1] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n");
    // Its own communicator init line: gpu-c-03's pid 1077 is not gpu-b-02's, so it names
    // its rank itself.
    text.push_str("gpu-c-03:1077:1077 [1] NCCL INFO ncclCommInitRankConfig comm 0x5e1f0ab0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 70 commId 0x21a62e93035f047a - Init START\n");
    std::fs::write(node.join("console.log"), text).expect("write");
    let other = dir.path().join("nodeY");
    std::fs::create_dir(&other).expect("mkdir");
    std::fs::write(other.join("console.log"), console("node0", "gpu-a-01")).expect("write");
    let run = load(&[&dir.path().to_string_lossy()], true).expect("run loads");
    let hosts = run.notes.iter().find_map(|n| match n {
        ReadNote::RankOnTwoHosts { rank, hosts, .. } => Some((rank.to_string(), hosts.clone())),
        _ => None,
    });
    assert_eq!(
        hosts,
        Some((
            "TP1".to_string(),
            vec![
                ("gpu-b-02".to_string(), 1077),
                ("gpu-c-03".to_string(), 1077)
            ]
        ))
    );
    let note = run
        .notes
        .iter()
        .map(read_note)
        .find(|n| n.contains("two hosts"))
        .unwrap_or_else(|| panic!("no note in {:?}", run.notes));
    assert!(note.contains("rank TP1"), "{note}");
    assert!(note.contains("gpu-b-02:1077, gpu-c-03:1077"), "{note}");
    // The directory names the node; the hosts it printed are listed.
    let x = run.nodes.iter().find(|n| n.name == "nodeX").expect("nodeX");
    assert_eq!(x.hosts, ["gpu-b-02", "gpu-c-03"]);
}
