//! The OOM's own evidence from the snapshots: fragmentation, what bound the allocation,
//! the requesting site and who else allocates there, allocator settings.
//!
//! Samples: `samples/tp2-frag-grouped` (ready) and `samples/tp2-frag-interleaved` (OOM in
//! `cuda_graph` on both ranks), real runs on two H200s copied from the project's shared
//! fixtures (gpu2/). Every expected figure below was derived by hand from the pickles with
//! python3's stdlib `pickle` module, not read off rankscope's output:
//!
//! - interleaved, rank 0: `device_traces[0]` has 1,524 entries; the `oom` entry is index
//!   1,513 (size 19,358,720, device_free 133,549,916,160, frame capture_graphs
//!   worker_main.py:192). The 10 entries after it are free_requested/free_completed pairs
//!   of 19,358,324 B at three addresses (worker_main.py:192 once, launch.py:104 twice) and
//!   of 8 B twice (launch.py:104). Undoing them (each 19,358,324 B free becomes a live
//!   block of 19,358,720 B at the start of its 20 MiB segment, the rest 1,612,800 B stays a
//!   hole since it exceeds 1 MiB; each 8 B free becomes a 512 B block) gives the state at
//!   the OOM: 153 segments, 15,028,191,232 B reserved, none wholly free. Outside the private
//!   pool (0,2): 50 segments of 20 MiB with 5 live 2 MiB blocks (launch.py:76 `<lambda>`
//!   called from warm_prefill) and 5 free 2 MiB holes = 524,288,000 B; 2 segments of 20 MiB
//!   with a 1,612,800 B hole each = 3,225,600 B; two 2 MiB small segments with 512 B and
//!   1,024 B live = 2,096,640 + 2,096,128 B. Sum 531,706,368 B = 507.07 MiB, the figure
//!   the log's OOM message prints ("507.07 MiB is reserved by PyTorch but unallocated");
//!   255 holes in 54 segments; the largest hole anywhere is 2 MiB. The private pool holds
//!   one 1,612,800 B hole (the message's "1.54 MiB … in private pools").
//! - The request rounds to a 20 MiB segment (PyTorch rounds requests above 10 MiB up to
//!   2 MiB): 15,028,191,232 + 20,971,520 = 15,049,162,752 B, the cap's upper bound; the
//!   log says "14.00 GiB allowed" = 15,032,385,536 B, inside [15,028,191,232,
//!   15,049,162,752).
//! - grouped, rank 0 (no OOM), as dumped: free outside private pools 13 × 1,612,800 +
//!   2,096,640 + 2,096,128 + 20,971,520 (one wholly free segment) = 46,130,688 B
//!   (43.99 MiB); largest free block 20,971,520 B; 2 segments wholly free.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use assert_cmd::Command;
use rankscope::analysis::attribute::{self, RankMatch, RankSnapshot};
use rankscope::base::units::Bytes;
use rankscope::render::text::diff as diff_text;
use rankscope::snapshot::inspect::SiteRule;
use rankscope::snapshot::oom::{self, Limit};
use rankscope::snapshot::{self, Frame, StackId};

const INTERLEAVED: &str = "samples/tp2-frag-interleaved";
const GROUPED: &str = "samples/tp2-frag-grouped";
const MIB: u64 = 1 << 20;

fn snap(dir: &str, rank: u32) -> snapshot::Snapshot {
    snapshot::read_path(&Path::new(dir).join(format!("snapshot_rank{rank}.pickle")))
        .expect("sample snapshot reads")
}

fn rankscope(args: &[&str]) -> (String, Option<i32>) {
    let out = Command::cargo_bin("rankscope")
        .expect("binary built")
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code(),
    )
}

#[test]
fn interleaved_oom_is_fragmentation_with_hand_derived_figures() {
    let s = snap(INTERLEAVED, 0);
    let v = oom::analyse(&s, &SiteRule::default());
    assert_eq!(v.len(), 1);
    let a = &v[0];
    assert!(a.at_oom, "{:?}", a.state_note);
    assert_eq!(a.device, 0);
    assert_eq!(a.requested.get(), 19_358_720);
    assert_eq!(a.segment.get(), 20 * MIB);
    assert_eq!(a.site, "capture_graphs (worker_main.py:192)");
    assert_eq!(a.space.reserved.get(), 15_028_191_232);
    assert_eq!(a.space.unallocated.get(), 531_706_368);
    assert_eq!(a.space.private_unallocated.get(), 1_612_800);
    assert_eq!(a.space.wholly_free_segments, 0);
    assert_eq!(
        a.limit,
        Limit::ProcessCap {
            device_free: Bytes(133_549_916_160),
            segment: Bytes(20 * MIB),
            cap_at_least: Bytes(15_028_191_232),
            cap_below: Bytes(15_049_162_752),
        }
    );
    assert_eq!(a.expandable_segments, Some(false));
    let f = a.fragmentation.as_ref().expect("fragmentation");
    assert_eq!(f.free.get(), 531_706_368);
    assert_eq!((f.segments, f.holes), (54, 255));
    assert_eq!(f.largest_hole.get(), 2 * MIB);
    let top = &f.shapes[0];
    assert_eq!(
        (
            top.count,
            top.size.get(),
            top.allocated.get(),
            top.free_blocks,
            top.largest_free.get()
        ),
        (50, 20 * MIB, 10 * MIB, 5, 2 * MIB)
    );
    let pin = &f.pinned_by[0];
    assert_eq!(pin.site, "warm_prefill/<lambda> (launch.py:76)");
    assert_eq!(
        (pin.segments, pin.blocks, pin.bytes.get()),
        (50, 250, 500 * MIB)
    );
}

#[test]
fn grouped_baseline_has_no_oom_and_whole_free_segments() {
    let f = oom::free_space_at_dump(&snap(GROUPED, 0));
    assert_eq!(f.unallocated.get(), 46_130_688);
    assert_eq!(f.largest_free.get(), 20 * MIB);
    assert_eq!(f.wholly_free_segments, 2);
    assert!(oom::analyse(&snap(GROUPED, 0), &SiteRule::default()).is_empty());
}

#[test]
fn diff_names_fragmentation_the_pinning_site_and_the_remedy() {
    let (out, code) = rankscope(&["diff", GROUPED, INTERLEAVED]);
    assert_eq!(code, Some(1), "{out}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "cause fragmentation at the OOM on 2/2 failing ranks with a snapshot (TP0 shown): \
         507.07 MiB reserved but unallocated in 255 holes across 54 segments holding live \
         blocks; largest hole 2.00 MiB < 18.46 MiB asked; no log figure moved",
        "holes pinned by warm_prefill/<lambda> (launch.py:76): 250 blocks (500.00 MiB) in \
         50 of the 54 segments",
        "limit: the process's memory cap, not the device (124.38 GiB free on it): 14.00 GiB \
         held + the 20.00 MiB segment asked for > 14.00 GiB allowed",
        "baseline TP0 at its dump: 43.99 MiB free inside segments, largest block 20.00 MiB",
        "remedy: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (off in the snapshot's \
         allocator_settings)",
        "OOM request (snapshots): TP0, TP1 asked 18.46 MiB at capture_graphs \
         (worker_main.py:192); the baseline allocates here too",
        "allocator_settings no change between the snapshots",
    ] {
        let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&want), "missing {want:?} in\n{out}");
    }
}

#[test]
fn mem_and_mem_diff_print_the_limit_and_the_fragmentation_section() {
    let one = format!("{INTERLEAVED}/snapshot_rank0.pickle");
    let base = format!("{GROUPED}/snapshot_rank0.pickle");
    let (mem, code) = rankscope(&["mem", &one]);
    assert_eq!(code, Some(0));
    let (mdiff, _) = rankscope(&["mem", "diff", &base, &one]);
    for out in [&mem, &mdiff] {
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        for want in [
            "limit: the process's memory cap, not the device (124.38 GiB free on it): \
             14.00 GiB held + the 20.00 MiB segment asked for passes the cap, which lies in \
             [14.00 GiB, 14.02 GiB)",
            "fragmentation at the OOM: 507.07 MiB reserved but unallocated in 255 holes",
            "50 20.00 MiB 10.00 MiB 5 2.00 MiB",
            "holes pinned by warm_prefill/<lambda> (launch.py:76)",
        ] {
            let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(&want), "missing {want:?} in\n{out}");
        }
        // The old line read as a contradiction: a failure with 124 GiB free.
        assert!(!out.contains("free on the device, at"), "{out}");
    }
    assert!(
        mdiff.contains("A free inside segments 43.99 MiB"),
        "{mdiff}"
    );
}

/// The tests build their rank ↔ snapshot pairs themselves.
fn by_name() -> RankMatch {
    RankMatch::FileName {
        device: None,
        device_agrees: false,
        gpu_confirms: false,
    }
}

/// Ranks of the interleaved run, in rank order (TP0, TP1).
fn ranks() -> Vec<rankscope::base::event::Rank> {
    common::load(INTERLEAVED)
        .ranks
        .iter()
        .map(|r| r.rank.clone())
        .collect()
}

#[test]
fn a_site_on_one_rank_only_is_named_as_such() {
    // A stray allocation built from the real snapshots: TP0's OOM entry is re-pointed at a
    // frame no other snapshot has (a forgotten LoRA buffer); TP1 is the grouped run's
    // rank 1, which never fails. The baseline is the grouped run.
    let mut stray = snap(INTERLEAVED, 0);
    stray.frames.push(Frame {
        filename: "/opt/sim/engine/lora.py".into(),
        line: 41,
        name: "alloc_lora_buffer".into(),
    });
    stray.stacks.push(vec![(stray.frames.len() - 1) as u32]);
    let stack = StackId((stray.stacks.len() - 1) as u32);
    for e in stray.device_traces.iter_mut().flatten() {
        if e.action == snapshot::Action::Oom {
            e.stack = stack;
        }
    }
    let r = ranks();
    let cand = vec![
        RankSnapshot {
            rank: r[0].clone(),
            path: "stray".into(),
            snapshot: stray,
            matched_by: by_name(),
        },
        RankSnapshot {
            rank: r[1].clone(),
            path: "ok".into(),
            snapshot: snap(GROUPED, 1),
            matched_by: by_name(),
        },
    ];
    let base: Vec<RankSnapshot> = (0..2)
        .map(|i| RankSnapshot {
            rank: r[i].clone(),
            path: format!("base{i}"),
            snapshot: snap(GROUPED, i as u32),
            matched_by: by_name(),
        })
        .collect();
    let run = common::load(INTERLEAVED);
    let ev = attribute::snapshot_evidence(&run, &base, &cand);
    assert_eq!(ev.oom_sites.len(), 1);
    let o = &ev.oom_sites[0];
    assert_eq!(o.analysis.site, "alloc_lora_buffer (lora.py:41)");
    assert!(o.only_here());
    assert_eq!(o.baseline_allocates, Some(false));
    assert_eq!(
        diff_text::oom_site_lines(&ev),
        [
            "OOM request (snapshot): TP0 asked 18.46 MiB at alloc_lora_buffer (lora.py:41); \
          only TP0 allocates here, not TP1 nor the baseline"
        ]
    );

    // The same pair unmodified: every rank and the baseline allocate at the site.
    let cand: Vec<RankSnapshot> = (0..2)
        .map(|i| RankSnapshot {
            rank: r[i].clone(),
            path: format!("c{i}"),
            snapshot: snap(INTERLEAVED, i as u32),
            matched_by: by_name(),
        })
        .collect();
    let ev = attribute::snapshot_evidence(&run, &base, &cand);
    assert!(ev.oom_sites.iter().all(|o| !o.only_here()));
    assert_eq!(ev.oom_sites[0].others_allocating, [r[1].clone()]);
}

#[test]
fn allocator_settings_are_compared_and_the_remedy_follows_them() {
    let r = ranks();
    let run = common::load(INTERLEAVED);
    let base = vec![RankSnapshot {
        rank: r[0].clone(),
        path: "b".into(),
        snapshot: snap(GROUPED, 0),
        matched_by: by_name(),
    }];
    let mut on = snap(INTERLEAVED, 0);
    on.allocator_settings["expandable_segments"] = serde_json::Value::Bool(true);
    let cand = vec![RankSnapshot {
        rank: r[0].clone(),
        path: "c".into(),
        snapshot: on,
        matched_by: by_name(),
    }];
    let ev = attribute::snapshot_evidence(&run, &base, &cand);
    assert_eq!(
        diff_text::allocator_setting_lines(&ev),
        ["allocator expandable_segments  false -> true"]
    );
    // Expandable segments already on: PyTorch's advice is not repeated.
    let lines = diff_text::fragmentation_cause_lines(&ev, false);
    assert!(lines[0].contains("507.07 MiB"), "{lines:?}");
    assert!(!lines.iter().any(|l| l.starts_with("remedy:")), "{lines:?}");
}

#[test]
fn summary_of_a_failed_run_shows_the_oom_site_and_fragmentation() {
    let (out, code) = rankscope(&["summary", INTERLEAVED]);
    assert_eq!(code, Some(0));
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "snapshots OOM request (snapshots): TP0, TP1 asked 18.46 MiB at capture_graphs \
         (worker_main.py:192); every rank with a snapshot (2) fails here",
        "fragmentation at the OOM on 2/2 failing ranks with a snapshot (TP0 shown): \
         507.07 MiB reserved but unallocated",
        "holes pinned by warm_prefill/<lambda> (launch.py:76)",
    ] {
        let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&want), "missing {want:?} in\n{out}");
    }
    // A run that reached ready reads no snapshot and prints no such section.
    let (ok, _) = rankscope(&["summary", GROUPED]);
    assert!(!ok.contains("OOM request"), "{ok}");
}

#[test]
fn snapshots_are_matched_to_ranks_by_what_they_hold() {
    // Each interleaved snapshot holds one device (rank 0's segments and trace are all on
    // device 0, rank 1's on 1: checked with pickle), and each rank's OOM message names
    // its GPU ("GPU 0 has a total capacity" on TP0's, "GPU 1" on TP1's).
    let run = common::load(INTERLEAVED);
    let r = ranks();
    let one = snap(INTERLEAVED, 1);
    assert_eq!(attribute::snapshot_device(&one), Some(1));
    assert_eq!(
        attribute::match_rank(&run, Some(1), &one),
        Ok((
            r[1].clone(),
            RankMatch::FileName {
                device: Some(1),
                device_agrees: true,
                gpu_confirms: true
            }
        ))
    );
    // No rank in the name, or a wrong one: the OOM's GPU decides.
    assert_eq!(
        attribute::match_rank(&run, None, &one),
        Ok((
            r[1].clone(),
            RankMatch::OomGpu {
                device: 1,
                file_said: None
            }
        ))
    );
    assert_eq!(
        attribute::match_rank(&run, Some(0), &one),
        Ok((
            r[1].clone(),
            RankMatch::OomGpu {
                device: 1,
                file_said: Some(r[0].clone())
            }
        ))
    );
    // A snapshot without an OOM and without a rank in its name: its device index.
    let ok_run = common::load(GROUPED);
    assert_eq!(
        attribute::match_rank(&ok_run, None, &snap(GROUPED, 1)),
        Ok((r[1].clone(), RankMatch::Device { device: 1 }))
    );
}

#[test]
fn snapshot_clocks_are_anchored_on_the_oom_and_the_phase_functions() {
    // By hand (pickle + the server log), TP1 of the interleaved run: the `oom` entry is at
    // 1,796,030,664,006,737 µs = 09:24:24.006737 UTC and TP1's OOM line is stamped
    // 09:24:24, so the offset is in (−0.993263 s, +0.006737 s]. Its `capture_graphs`
    // allocations run from 09:24:23.950853 to 09:24:24.006172 against a cuda_graph phase
    // stamped 09:24:24 to 09:24:24 (its failure): with a second of slack each side,
    // (−1.993828 s, +0.950853 s], which does not narrow the OOM's. Zero lies inside: the
    // clocks share a zone, offset 0. The frame tables also name its process-group set-up
    // (dist_init) and `load_model` (weight_load) allocations: they anchor the clock too,
    // and leave the interval the OOM gives (asserted first).
    let run = common::load(INTERLEAVED);
    let r = ranks();
    let rr = run.rank(&r[1]).expect("TP1");
    let m = attribute::clock_match(rr, &snap(INTERLEAVED, 1), &run.frame_phases).expect("clock");
    assert_eq!(m.interval_us, Some((-993_263, 6_737)));
    assert_eq!(m.anchors, ["OOM", "dist_init", "weight_load", "cuda_graph"]);
    assert!(m.zone);
    assert_eq!(m.offset_us, 0);
}

#[test]
fn snapshot_clocks_use_the_frame_tables_of_the_grammars_the_run_was_read_with() {
    // The run carries its grammars' frame → phase rules (a user grammar's `frame_phase`
    // included); without them only the OOM anchors TP1's clock, with a rule naming
    // `capture_graphs` alone the cuda_graph window anchors it too (as in the test above).
    let run = common::load(INTERLEAVED);
    let r = ranks();
    let rr = run.rank(&r[1]).expect("TP1");
    let s = snap(INTERLEAVED, 1);
    assert!(run
        .frame_phases
        .iter()
        .any(|f| f.function.as_deref() == Some("capture_graphs")));
    let none = attribute::clock_match(rr, &s, &[]).expect("clock");
    assert_eq!(none.anchors, ["OOM"]);
    let only = [rankscope::grammar::FrameRule {
        function: Some("capture_graphs".into()),
        file: None,
        phase: rankscope::model::Phase::CudaGraph,
        fallback: false,
        sample: None,
    }];
    let one = attribute::clock_match(rr, &s, &only).expect("clock");
    assert_eq!(one.anchors, ["OOM", "cuda_graph"]);
}

#[test]
fn the_state_rebuilt_at_the_oom_agrees_with_pytorchs_own_message() {
    // samples/tp8-custom-ar/server.log, TP0's OOM message: "131.96 MiB is reserved by
    // PyTorch but unallocated". The rebuilt state must print the same to two decimals;
    // it is not fragmentation (the log's cause there is the custom allreduce's buffers).
    let s = snapshot::read_path(Path::new("samples/tp8-custom-ar/snapshot_rank0.pickle"))
        .expect("sample snapshot reads");
    let v = oom::analyse(&s, &SiteRule::default());
    assert_eq!(v.len(), 1);
    assert!(v[0].at_oom);
    assert_eq!(
        rankscope::base::units::human_size(v[0].space.unallocated),
        "131.96 MiB"
    );
    assert!(v[0].fragmentation.is_none());
}

#[test]
fn a_device_short_of_memory_is_named_as_the_limit_and_an_unundoable_trace_is_said() {
    // The interleaved OOM entry with the device's free memory set below the 20 MiB
    // segment: the device, not the cap, bound the allocation.
    let mut s = snap(INTERLEAVED, 0);
    let oom_at = s.device_traces[0]
        .iter()
        .position(|e| e.action == snapshot::Action::Oom)
        .expect("oom entry");
    s.device_free.insert((0, oom_at), 8 * MIB);
    let a = &oom::analyse(&s, &SiteRule::default())[0];
    assert_eq!(
        a.limit,
        Limit::Device {
            device_free: Bytes(8 * MIB),
            segment: Bytes(20 * MIB)
        }
    );
    assert_eq!(
        rankscope::render::text::mem::limit_line(&a.limit, None).as_deref(),
        Some("limit: the device, 8.00 MiB free < the 20.00 MiB segment asked for")
    );

    // An expandable-segment mapping after the OOM cannot be undone: the dump state is
    // used, and said. As dumped, two 20 MiB segments are wholly free (the 19,358,324 B
    // temporaries were freed after the OOM), so the largest hole is 20 MiB and the OOM no
    // longer reads as fragmentation: the note is what tells the reader why.
    let mut s = snap(INTERLEAVED, 0);
    let mut mapped = s.device_traces[0][oom_at].clone();
    mapped.action = snapshot::Action::SegmentMap;
    s.device_traces[0].push(mapped);
    let a = &oom::analyse(&s, &SiteRule::default())[0];
    assert!(!a.at_oom);
    assert_eq!(
        a.state_note.as_deref(),
        Some("segments as dumped, not at the OOM: expandable segments map pages after the OOM")
    );
    assert_eq!(a.space.largest_free.get(), 20 * MIB);
}
