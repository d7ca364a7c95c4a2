//! Snapshot reading and analysis against the real H200 fixtures. Every expected value
//! here was checked by hand with python3 `pickle.load` on the same files.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::path::{Path, PathBuf};

use rankscope::render::text::mem as render;
use rankscope::snapshot::inspect::{diff, sites_between, summarize, SiteRule};
use rankscope::snapshot::{read_path, Action};

const MIB: u64 = 1 << 20;

fn sample(run: &str, rank: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(run)
        .join(format!("snapshot_rank{rank}.pickle"))
}

#[test]
fn custom_ar_has_the_oom_entry() {
    for rank in 0..8 {
        let s = read_path(&sample("tp8-custom-ar", rank)).unwrap();
        let ooms: Vec<_> = s
            .trace_entries()
            .filter(|e| e.action == Action::Oom)
            .collect();
        assert_eq!(ooms.len(), 1, "rank {rank}");
        assert_eq!(ooms[0].size, 20_971_520);
        let sum = summarize(&s, &SiteRule::default());
        assert_eq!(sum.ooms[0].requested.get(), 20 * MIB);
        assert!(sum.ooms[0].site.starts_with("capture_graphs"));
    }
    // python: device_free 33342685184, time_us 1795943921329961, 717 entries (rank 0).
    let s = read_path(&sample("tp8-custom-ar", 0)).unwrap();
    let sum = summarize(&s, &SiteRule::default());
    assert_eq!(sum.ooms[0].device_free.map(u64::from), Some(33_342_685_184));
    assert_eq!(sum.ooms[0].time_us, 1_795_943_921_329_961);
    assert_eq!(sum.trace_entries, 717);
}

#[test]
fn custom_ar_totals_match_python() {
    // python: sum(total_size)=15021899776, sum(allocated_size)=14841591296, 158 segments.
    let s = read_path(&sample("tp8-custom-ar", 0)).unwrap();
    let sum = summarize(&s, &SiteRule::default());
    assert_eq!(sum.totals.segments, 158);
    assert_eq!(sum.totals.reserved.get(), 15_021_899_776);
    assert_eq!(sum.totals.allocated.get(), 14_841_591_296);
    // The private (graph) pool (0, 2): 15 segments of 20 MiB on the capture stream.
    let graph = sum.by_pool.iter().find(|p| p.pool == (0, 2)).unwrap();
    assert!(graph.private);
    assert_eq!(graph.totals.segments, 15);
    assert_eq!(graph.totals.reserved.get(), 300 * MIB);
    // The trace starts from nothing reserved, so the replay ends at the segments' total.
    assert_eq!(sum.series.last().unwrap().reserved.get(), 15_021_899_776);
    assert!(sum.series.len() <= 512);
}

#[test]
fn init_custom_ar_site_and_segments() {
    let rule = SiteRule::default();
    let s = read_path(&sample("tp8-custom-ar", 0)).unwrap();
    let sum = summarize(&s, &rule);
    let site = sum
        .sites
        .iter()
        .find(|x| x.site == "init_custom_ar (model_runner.py)")
        .expect("init_custom_ar site");
    // python: blocks at lines 85, 86, 87 of 8421376 + 8388608 + 8388608 bytes.
    assert_eq!(site.allocated.get(), 25_198_592);
    assert_eq!(render::fmt_bytes(site.allocated), "24.03 MiB");
    assert_eq!(site.lines, vec![85, 86, 87]);
    assert_eq!(site.reserved.get(), 40 * MIB);
    assert_eq!(site.segments, 2);

    for rank in 0..8 {
        let b = summarize(&read_path(&sample("tp8-baseline", rank)).unwrap(), &rule);
        assert!(
            !b.sites.iter().any(|x| x.site.starts_with("init_custom_ar")),
            "baseline rank {rank}"
        );
        let c = summarize(&read_path(&sample("tp8-custom-ar", rank)).unwrap(), &rule);
        let d = diff(&b, &c);
        let only_b = &d.only_b;
        assert_eq!(only_b.len(), 1, "rank {rank}: {only_b:?}");
        assert_eq!(only_b[0].site, "init_custom_ar (model_runner.py)");
        assert_eq!(only_b[0].b_allocated.get(), 25_198_592);
        assert_eq!(only_b[0].delta_reserved.get(), 40 * MIB as i64);
        let new_ar: Vec<_> = d
            .new_segments
            .iter()
            .filter(|c| c.key.site.starts_with("init_custom_ar"))
            .collect();
        assert_eq!(new_ar.len(), 1);
        assert_eq!((new_ar[0].count, new_ar[0].key.size.get()), (2, 20 * MIB));
        let text = render::diff_text(&d, 10, 80);
        assert!(text.contains("24.03 MiB"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }
}

#[test]
fn sites_between_sees_the_ipc_buffers_in_their_window() {
    // python: segment_alloc at 1795943917141032 (line 85) and ..141850 (line 87); allocs
    // at ..141035, ..141160, ..141851.
    let s = read_path(&sample("tp8-custom-ar", 0)).unwrap();
    let v = sites_between(
        &s,
        &SiteRule::default(),
        1_795_943_917_141_000,
        1_795_943_917_142_000,
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].site, "init_custom_ar (model_runner.py)");
    assert_eq!(v[0].net_allocated, 25_198_592);
    assert_eq!(v[0].net_reserved, 40 * MIB as i64);
    assert_eq!(v[0].allocs, 3);
}

#[test]
fn summary_text_fits_80_columns() {
    let s = read_path(&sample("tp8-custom-ar", 3)).unwrap();
    let text = render::summary_text(&summarize(&s, &SiteRule::default()), 20, 80);
    assert!(
        text.contains("init_custom_ar (model_runner.py:85-87)"),
        "{text}"
    );
    assert!(text.contains("OOM"));
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
}

#[test]
fn allstacks_cpp_frames_are_read() {
    // A copy of fixtures/gpu/tp2_allstacks/snapshot_rank0.pickle (130 KB).
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tp2-allstacks/snapshot_rank0.pickle");
    let s = read_path(&p).unwrap();
    // python: entry 5's first frame is torch::unwind::unwind() in '??', line 0.
    let e = &s.device_traces[0][5];
    let first = s.stack(e.stack).next().unwrap();
    assert_eq!(&*first.name, "torch::unwind::unwind()");
    assert_eq!(&*first.filename, "??");
    assert_eq!(first.line, 0);
    assert!(s.frames.iter().any(|f| f.filename.ends_with(".cpp")));
    // C++ frames are skipped: the site is the Python caller.
    let site = rankscope::snapshot::inspect::site_of(&s, &SiteRule::default(), e.stack);
    assert_eq!(site, "load_weights (model_runner.py)");
    assert_eq!(s.trace_entries().count(), 718);
}

/// The 23 MB snapshot is too large to copy into the repository: run this with
/// `cargo test --test snapshot_fixtures -- --ignored` where ../shared is checked out.
#[test]
#[ignore = "needs ../shared/fixtures/gpu/decode_heavy/snapshot.pickle (23 MB)"]
fn decode_heavy_entry_count() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/gpu/decode_heavy/snapshot.pickle");
    let s = read_path(&p).unwrap();
    assert_eq!(s.device_traces.len(), 1);
    assert_eq!(s.device_traces[0].len(), 212_637);
    assert_eq!(s.segments.len(), 80);
    let allocs = s
        .trace_entries()
        .filter(|e| e.action == Action::Alloc)
        .count();
    assert_eq!(allocs, 70_953);
}

#[test]
fn read_bytes_equals_read_path() {
    let p = sample("tp8-baseline", 0);
    let a = read_path(&p).unwrap();
    let b = rankscope::snapshot::read_bytes(&std::fs::read(&p).unwrap()).unwrap();
    assert_eq!(a.segments.len(), b.segments.len());
    assert_eq!(a.trace_entries().count(), b.trace_entries().count());
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}
