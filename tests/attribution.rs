//! The diff's cause named by allocation site, from the real snapshots in `samples/`.
//! Hand-checked with python's pickle on samples/tp8-custom-ar/snapshot_rank0.pickle: the
//! `init_custom_ar` blocks are 8,421,376 + 8,388,608 + 8,388,608 = 25,198,592 bytes
//! (24.03 MiB) in two 20 MiB segments (41,943,040 bytes); the baseline has no such site.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::path::Path;

use rankscope::analysis::{attribute, diff};
use rankscope::grammar::GrammarSet;
use rankscope::model::Phase;
use rankscope::session::{LoadOptions, Session};

#[test]
fn custom_ar_divergence_is_init_custom_ar_with_no_residual() {
    let gs = GrammarSet::builtin().expect("grammars");
    let opts = LoadOptions::default();
    let b = Session::open(
        &gs,
        &[Path::new("samples/tp8-baseline").to_path_buf()],
        &opts,
        &|_, _| {},
    )
    .expect("baseline");
    let c = Session::open(
        &gs,
        &[Path::new("samples/tp8-custom-ar").to_path_buf()],
        &opts,
        &|_, _| {},
    )
    .expect("candidate");
    let (bs, be) = (&b.snapshots().matched, &b.snapshots().errors);
    let (cs, ce) = (&c.snapshots().matched, &c.snapshots().errors);
    assert!(be.is_empty() && ce.is_empty(), "{be:?} {ce:?}");
    assert_eq!((bs.len(), cs.len()), (8, 8));
    let d = diff::diff(&b.run, &c.run);
    let a = attribute::attribute(&b.run, &c.run, &d, bs, cs).expect("attribution");
    assert_eq!(a.phase, Phase::DistInit);
    assert_eq!(a.ranks_compared, 8);
    let top = &a.sites[0];
    assert_eq!(top.site, "init_custom_ar (model_runner.py)");
    assert_eq!(top.phase, Some(Phase::DistInit));
    assert_eq!(top.ranks, 8);
    assert_eq!(top.delta_reserved.median, 41_943_040.0);
    assert_eq!(top.delta_allocated.median, 25_198_592.0);
    assert_eq!(top.blocks, 3);
    assert_eq!(a.allocator_delta_reserved.get(), 41_943_040);
    // Log: 0.64 − 0.60 GB = 42,949,673 bytes; the allocator saw 41,943,040 of it.
    assert_eq!(a.driver_delta.map(i64::from), Some(42_949_673));
    assert_eq!(a.residual.map(i64::from), Some(1_006_633));
    assert!(a.residual.map_or(u64::MAX, |r| r.magnitude().get()) <= a.log_resolution.unwrap_or(0));
    assert_eq!(
        a.new_segments,
        vec![(
            "init_custom_ar (model_runner.py)".to_string(),
            2,
            rankscope::base::units::Bytes(41_943_040)
        )]
    );
}

#[test]
fn single_rank_nccl_run_is_attributed_in_dist_init() {
    // samples/tp1-nccl-* (copies of fixtures/gpu/tp1_nccl_*): one rank; its `Init torch
    // distributed begin` and `ends` lines share the second 09:19:36 with the run's launch
    // ending, and the custom allreduce buffers are allocated in that second. They belong
    // to dist_init, not launch.
    let base = Path::new("samples/tp1-nccl-baseline");
    let cand = Path::new("samples/tp1-nccl-custom-ar");
    let gs = GrammarSet::builtin().expect("grammars");
    let opts = LoadOptions::default();
    let b = Session::open(&gs, &[base.to_path_buf()], &opts, &|_, _| {}).expect("baseline");
    let c = Session::open(&gs, &[cand.to_path_buf()], &opts, &|_, _| {}).expect("candidate");
    let bs = &b.snapshots().matched;
    let cs = &c.snapshots().matched;
    let d = diff::diff(&b.run, &c.run);
    assert!(rankscope::render::text::diff::headline(&d.headline)
        .starts_with("candidate: its only rank TP0 ran out of memory in cuda_graph"));
    let a = attribute::attribute(&b.run, &c.run, &d, bs, cs).expect("attribution");
    assert_eq!(a.phase, Phase::DistInit);
    let site = a
        .sites
        .iter()
        .find(|s| s.site == "init_custom_ar (model_runner.py)")
        .expect("init_custom_ar");
    assert_eq!(site.phase, Some(Phase::DistInit));
    assert_eq!(site.delta_reserved.median, 41_943_040.0);
}
