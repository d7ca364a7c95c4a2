//! The JSON contract of `rankscope mem` and `mem diff`: output structs of their own, as
//! for the other commands, so that the snapshot analysis can change without changing
//! what scripts read. Every byte count here is exact (a snapshot's own): the one memory
//! shape with `resolution_bytes` 0.

use schemars::JsonSchema;
use serde::Serialize;

use crate::render::json::MemoryDoc;
use crate::render::SCHEMA_VERSION;
use crate::snapshot::inspect as a;

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct TotalsDoc {
    pub(crate) segments: u64,
    pub(crate) reserved_bytes: MemoryDoc,
    pub(crate) allocated_bytes: MemoryDoc,
    pub(crate) active_bytes: MemoryDoc,
    pub(crate) requested_bytes: MemoryDoc,
}

impl From<&a::Totals> for TotalsDoc {
    fn from(t: &a::Totals) -> Self {
        TotalsDoc {
            segments: t.segments,
            reserved_bytes: MemoryDoc::exact(t.reserved),
            allocated_bytes: MemoryDoc::exact(t.allocated),
            active_bytes: MemoryDoc::exact(t.active),
            requested_bytes: MemoryDoc::exact(t.requested),
        }
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct PoolDoc {
    /// PyTorch's pool id as `"a,b"`; `"0,0"` is the default pool.
    pub(crate) pool: String,
    /// A private pool, in practice a CUDA graph's.
    pub(crate) private: bool,
    pub(crate) totals: TotalsDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct StreamDoc {
    /// `default`, or `s1`, `s2`, … by first use (raw stream values are pointers).
    pub(crate) stream: String,
    pub(crate) totals: TotalsDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SegmentTypeDoc {
    pub(crate) segment_type: String,
    pub(crate) totals: TotalsDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct PeakDoc {
    pub(crate) amount_bytes: MemoryDoc,
    /// Microseconds since the Unix epoch (PyTorch's clock).
    pub(crate) time_us: i64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct OomDoc {
    pub(crate) requested_bytes: MemoryDoc,
    pub(crate) device_free_bytes: Option<MemoryDoc>,
    pub(crate) time_us: i64,
    pub(crate) device: usize,
    /// The allocation site of the request that failed.
    pub(crate) site: String,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SiteDoc {
    /// `function (file.py)`: the first frame outside PyTorch, the standard library and
    /// installed packages (see `--skip-frames`, `--by-line`).
    pub(crate) site: String,
    /// Source lines that contributed (at most 16).
    pub(crate) lines: Vec<i64>,
    pub(crate) allocated_bytes: MemoryDoc,
    pub(crate) requested_bytes: MemoryDoc,
    pub(crate) blocks: u64,
    pub(crate) reserved_bytes: MemoryDoc,
    pub(crate) segments: u64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SeriesPointDoc {
    pub(crate) time_us: i64,
    pub(crate) allocated_bytes: MemoryDoc,
    pub(crate) reserved_bytes: MemoryDoc,
}

/// What bound the failed allocation.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct LimitDoc {
    /// `device` (the device had less free memory than the segment asked for),
    /// `process_cap` (it had room; the process's cap did not) or `unknown`.
    pub(crate) kind: String,
    pub(crate) device_free_bytes: Option<MemoryDoc>,
    /// The segment `cudaMalloc` was asked for.
    pub(crate) segment_bytes: Option<MemoryDoc>,
    /// For `process_cap`: the cap lies in [`cap_at_least_bytes`, `cap_below_bytes`).
    pub(crate) cap_at_least_bytes: Option<MemoryDoc>,
    pub(crate) cap_below_bytes: Option<MemoryDoc>,
}

impl From<&crate::snapshot::oom::Limit> for LimitDoc {
    fn from(l: &crate::snapshot::oom::Limit) -> Self {
        use crate::snapshot::oom::Limit;
        let none = LimitDoc {
            kind: "unknown".into(),
            device_free_bytes: None,
            segment_bytes: None,
            cap_at_least_bytes: None,
            cap_below_bytes: None,
        };
        match *l {
            Limit::Device {
                device_free,
                segment,
            } => LimitDoc {
                kind: "device".into(),
                device_free_bytes: Some(MemoryDoc::exact(device_free)),
                segment_bytes: Some(MemoryDoc::exact(segment)),
                ..none
            },
            Limit::ProcessCap {
                device_free,
                segment,
                cap_at_least,
                cap_below,
            } => LimitDoc {
                kind: "process_cap".into(),
                device_free_bytes: Some(MemoryDoc::exact(device_free)),
                segment_bytes: Some(MemoryDoc::exact(segment)),
                cap_at_least_bytes: Some(MemoryDoc::exact(cap_at_least)),
                cap_below_bytes: Some(MemoryDoc::exact(cap_below)),
            },
            Limit::Unknown => none,
        }
    }
}

/// Free memory inside segments.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct FreeSpaceDoc {
    pub(crate) reserved_bytes: MemoryDoc,
    pub(crate) allocated_bytes: MemoryDoc,
    /// Reserved minus allocated outside private pools: PyTorch's "reserved but
    /// unallocated".
    pub(crate) unallocated_bytes: MemoryDoc,
    /// Reserved minus allocated inside private (CUDA graph) pools.
    pub(crate) private_unallocated_bytes: MemoryDoc,
    pub(crate) largest_free_block_bytes: MemoryDoc,
    pub(crate) segments_with_holes: u64,
    pub(crate) wholly_free_segments: u64,
}

impl From<&crate::snapshot::oom::FreeSpace> for FreeSpaceDoc {
    fn from(f: &crate::snapshot::oom::FreeSpace) -> Self {
        FreeSpaceDoc {
            reserved_bytes: MemoryDoc::exact(f.reserved),
            allocated_bytes: MemoryDoc::exact(f.allocated),
            unallocated_bytes: MemoryDoc::exact(f.unallocated),
            private_unallocated_bytes: MemoryDoc::exact(f.private_unallocated),
            largest_free_block_bytes: MemoryDoc::exact(f.largest_free),
            segments_with_holes: f.segments_with_holes,
            wholly_free_segments: f.wholly_free_segments,
        }
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SegmentShapeDoc {
    pub(crate) count: u64,
    pub(crate) size_bytes: MemoryDoc,
    pub(crate) allocated_bytes: MemoryDoc,
    pub(crate) free_blocks: u64,
    pub(crate) largest_free_block_bytes: MemoryDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct PinDoc {
    /// `function (file.py:line)`; an anonymous function is named with its caller,
    /// `warm_prefill/<lambda> (launch.py:76)`.
    pub(crate) site: String,
    pub(crate) segments: u64,
    pub(crate) blocks: u64,
    /// The live blocks' bytes.
    pub(crate) live_bytes: MemoryDoc,
}

/// Memory held but unusable for the failed request: holes smaller than it, in segments
/// that live blocks keep from being released.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct FragmentationDoc {
    /// Free bytes in those segments (outside private pools).
    pub(crate) free_bytes: MemoryDoc,
    pub(crate) segments: u64,
    pub(crate) holes: u64,
    /// The largest free block of any segment: smaller than the request.
    pub(crate) largest_hole_bytes: MemoryDoc,
    pub(crate) shapes: Vec<SegmentShapeDoc>,
    /// Sites owning the live blocks in those segments, most segments first.
    pub(crate) pinned_by: Vec<PinDoc>,
}

/// The first OOM of a device, against the allocator's state at that moment.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct OomAnalysisDoc {
    pub(crate) device: usize,
    pub(crate) time_us: i64,
    /// The block asked for (rounded to 512 B, as the trace records it).
    pub(crate) requested_bytes: MemoryDoc,
    /// The segment `cudaMalloc` was asked for (PyTorch's "Tried to allocate").
    pub(crate) segment_bytes: MemoryDoc,
    /// `function (file.py:line)` of the request.
    pub(crate) site: String,
    /// True when the segments were rebuilt as they stood at the OOM (by undoing the trace
    /// entries after it); false: as dumped, see `state_note`.
    pub(crate) at_oom: bool,
    pub(crate) state_note: Option<String>,
    pub(crate) free_space: FreeSpaceDoc,
    pub(crate) limit: LimitDoc,
    /// Present when the OOM was fragmentation.
    pub(crate) fragmentation: Option<FragmentationDoc>,
    /// `expandable_segments` of the snapshot's `allocator_settings`, when recorded.
    pub(crate) expandable_segments: Option<bool>,
    /// `oom` entries after this one on the device.
    pub(crate) later_ooms: u64,
}

impl From<&crate::snapshot::oom::OomAnalysis> for OomAnalysisDoc {
    fn from(x: &crate::snapshot::oom::OomAnalysis) -> Self {
        OomAnalysisDoc {
            device: x.device,
            time_us: x.time_us,
            requested_bytes: MemoryDoc::exact(x.requested),
            segment_bytes: MemoryDoc::exact(x.segment),
            site: x.site.clone(),
            at_oom: x.at_oom,
            state_note: x.state_note.clone(),
            free_space: (&x.space).into(),
            limit: (&x.limit).into(),
            fragmentation: x.fragmentation.as_ref().map(|f| FragmentationDoc {
                free_bytes: MemoryDoc::exact(f.free),
                segments: f.segments,
                holes: f.holes,
                largest_hole_bytes: MemoryDoc::exact(f.largest_hole),
                shapes: f
                    .shapes
                    .iter()
                    .map(|s| SegmentShapeDoc {
                        count: s.count,
                        size_bytes: MemoryDoc::exact(s.size),
                        allocated_bytes: MemoryDoc::exact(s.allocated),
                        free_blocks: s.free_blocks,
                        largest_free_block_bytes: MemoryDoc::exact(s.largest_free),
                    })
                    .collect(),
                pinned_by: f
                    .pinned_by
                    .iter()
                    .map(|p| PinDoc {
                        site: p.site.clone(),
                        segments: p.segments,
                        blocks: p.blocks,
                        live_bytes: MemoryDoc::exact(p.bytes),
                    })
                    .collect(),
            }),
            expandable_segments: x.expandable_segments,
            later_ooms: x.later_ooms,
        }
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct MemSummaryDoc {
    pub(crate) totals: TotalsDoc,
    pub(crate) by_pool: Vec<PoolDoc>,
    pub(crate) by_stream: Vec<StreamDoc>,
    pub(crate) by_segment_type: Vec<SegmentTypeDoc>,
    pub(crate) peak_reserved: Option<PeakDoc>,
    pub(crate) peak_allocated: Option<PeakDoc>,
    pub(crate) ooms: Vec<OomDoc>,
    /// The first OOM of each device, analysed: what bound it, fragmentation.
    pub(crate) oom_analyses: Vec<OomAnalysisDoc>,
    /// Free memory inside the segments as dumped.
    pub(crate) free_space: FreeSpaceDoc,
    /// Every site with live or reserved memory, largest allocated first.
    pub(crate) sites: Vec<SiteDoc>,
    /// At most 512 points, each the largest of its interval.
    pub(crate) series: Vec<SeriesPointDoc>,
    pub(crate) trace_entries: u64,
    /// Trace entries whose action this version does not know, by name: counted here and
    /// left out of every figure above.
    pub(crate) unknown_actions: Vec<UnknownActionDoc>,
    pub(crate) first_time_us: Option<i64>,
    pub(crate) last_time_us: Option<i64>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct UnknownActionDoc {
    pub(crate) name: String,
    pub(crate) entries: u64,
}

fn peak(p: &Option<a::Peak>) -> Option<PeakDoc> {
    p.as_ref().map(|p| PeakDoc {
        amount_bytes: MemoryDoc::exact(p.bytes),
        time_us: p.time_us,
    })
}

impl From<&a::MemSummary> for MemSummaryDoc {
    fn from(s: &a::MemSummary) -> Self {
        MemSummaryDoc {
            totals: (&s.totals).into(),
            by_pool: s
                .by_pool
                .iter()
                .map(|p| PoolDoc {
                    pool: format!("{},{}", p.pool.0, p.pool.1),
                    private: p.private,
                    totals: (&p.totals).into(),
                })
                .collect(),
            by_stream: s
                .by_stream
                .iter()
                .map(|t| StreamDoc {
                    stream: t.label.clone(),
                    totals: (&t.totals).into(),
                })
                .collect(),
            by_segment_type: s
                .by_segment_type
                .iter()
                .map(|(k, t)| SegmentTypeDoc {
                    segment_type: k.clone(),
                    totals: t.into(),
                })
                .collect(),
            peak_reserved: peak(&s.peak_reserved),
            peak_allocated: peak(&s.peak_allocated),
            ooms: s
                .ooms
                .iter()
                .map(|o| OomDoc {
                    requested_bytes: MemoryDoc::exact(o.requested),
                    device_free_bytes: o.device_free.map(MemoryDoc::exact),
                    time_us: o.time_us,
                    device: o.device,
                    site: o.site.clone(),
                })
                .collect(),
            oom_analyses: s.oom_analyses.iter().map(Into::into).collect(),
            free_space: (&s.free_space).into(),
            sites: s
                .sites
                .iter()
                .map(|x| SiteDoc {
                    site: x.site.clone(),
                    lines: x.lines.clone(),
                    allocated_bytes: MemoryDoc::exact(x.allocated),
                    requested_bytes: MemoryDoc::exact(x.requested),
                    blocks: x.blocks,
                    reserved_bytes: MemoryDoc::exact(x.reserved),
                    segments: x.segments,
                })
                .collect(),
            series: s
                .series
                .iter()
                .map(|p| SeriesPointDoc {
                    time_us: p.time_us,
                    allocated_bytes: MemoryDoc::exact(p.allocated),
                    reserved_bytes: MemoryDoc::exact(p.reserved),
                })
                .collect(),
            trace_entries: s.trace_entries,
            unknown_actions: s
                .unknown_actions
                .iter()
                .map(|(name, entries)| UnknownActionDoc {
                    name: name.clone(),
                    entries: *entries,
                })
                .collect(),
            first_time_us: s.first_time_us,
            last_time_us: s.last_time_us,
        }
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct MemSnapshotDoc {
    pub(crate) path: String,
    pub(crate) summary: MemSummaryDoc,
}

/// `rankscope mem SNAPSHOT… --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MemDoc {
    pub(crate) schema_version: u32,
    /// Always `mem`.
    pub(crate) command: String,
    pub(crate) snapshots: Vec<MemSnapshotDoc>,
}

/// The `mem --json` document of one or more snapshots' summaries, each under its path.
pub fn mem_doc(snapshots: Vec<(String, &a::MemSummary)>) -> MemDoc {
    MemDoc {
        schema_version: SCHEMA_VERSION,
        command: "mem".into(),
        snapshots: snapshots
            .into_iter()
            .map(|(path, s)| MemSnapshotDoc {
                path,
                summary: s.into(),
            })
            .collect(),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SiteChangeDoc {
    pub(crate) site: String,
    pub(crate) a_allocated_bytes: MemoryDoc,
    pub(crate) b_allocated_bytes: MemoryDoc,
    pub(crate) a_reserved_bytes: MemoryDoc,
    pub(crate) b_reserved_bytes: MemoryDoc,
    pub(crate) delta_allocated_bytes: MemoryDoc,
    pub(crate) delta_reserved_bytes: MemoryDoc,
}

fn changes(v: &[a::SiteChange]) -> Vec<SiteChangeDoc> {
    v.iter()
        .map(|c| SiteChangeDoc {
            site: c.site.clone(),
            a_allocated_bytes: MemoryDoc::exact(c.a_allocated),
            b_allocated_bytes: MemoryDoc::exact(c.b_allocated),
            a_reserved_bytes: MemoryDoc::exact(c.a_reserved),
            b_reserved_bytes: MemoryDoc::exact(c.b_reserved),
            delta_allocated_bytes: MemoryDoc::exact(c.delta_allocated),
            delta_reserved_bytes: MemoryDoc::exact(c.delta_reserved),
        })
        .collect()
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SegmentChangeDoc {
    pub(crate) size_bytes: MemoryDoc,
    pub(crate) pool: String,
    pub(crate) stream: String,
    pub(crate) site: String,
    pub(crate) count: u64,
    /// `count` × `size_bytes`.
    pub(crate) total_bytes: MemoryDoc,
}

fn segs(v: &[a::SegmentChange]) -> Vec<SegmentChangeDoc> {
    v.iter()
        .map(|s| SegmentChangeDoc {
            size_bytes: MemoryDoc::exact(s.key.size),
            pool: format!("{},{}", s.key.pool.0, s.key.pool.1),
            stream: s.key.stream.clone(),
            site: s.key.site.clone(),
            count: s.count,
            total_bytes: MemoryDoc::exact(s.bytes),
        })
        .collect()
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct TotalsDeltaDoc {
    pub(crate) segments: i64,
    pub(crate) reserved_bytes: MemoryDoc,
    pub(crate) allocated_bytes: MemoryDoc,
    pub(crate) active_bytes: MemoryDoc,
    pub(crate) requested_bytes: MemoryDoc,
    pub(crate) peak_reserved_bytes: MemoryDoc,
    pub(crate) peak_allocated_bytes: MemoryDoc,
}

/// `rankscope mem diff A B --json`: A is the baseline, B the candidate.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MemDiffDoc {
    pub(crate) schema_version: u32,
    /// Always `mem diff`.
    pub(crate) command: String,
    pub(crate) a: String,
    pub(crate) b: String,
    /// Sites with memory only in A, only in B, and in both with a change.
    pub(crate) only_a: Vec<SiteChangeDoc>,
    pub(crate) only_b: Vec<SiteChangeDoc>,
    pub(crate) changed: Vec<SiteChangeDoc>,
    /// Segments matched by size, pool, stream and site (addresses differ between runs).
    pub(crate) new_segments: Vec<SegmentChangeDoc>,
    pub(crate) gone_segments: Vec<SegmentChangeDoc>,
    pub(crate) totals_delta: TotalsDeltaDoc,
    pub(crate) a_totals: TotalsDoc,
    pub(crate) b_totals: TotalsDoc,
    pub(crate) a_ooms: usize,
    pub(crate) b_ooms: usize,
    /// Each side's first OOM, analysed.
    pub(crate) a_oom: Option<OomAnalysisDoc>,
    pub(crate) b_oom: Option<OomAnalysisDoc>,
    pub(crate) a_free_space: FreeSpaceDoc,
    pub(crate) b_free_space: FreeSpaceDoc,
}

/// The `mem diff --json` document: snapshot `b` against snapshot `a`.
pub fn mem_diff_doc(a_path: String, b_path: String, d: &a::MemDiff) -> MemDiffDoc {
    MemDiffDoc {
        schema_version: SCHEMA_VERSION,
        command: "mem diff".into(),
        a: a_path,
        b: b_path,
        only_a: changes(&d.only_a),
        only_b: changes(&d.only_b),
        changed: changes(&d.changed),
        new_segments: segs(&d.new_segments),
        gone_segments: segs(&d.gone_segments),
        totals_delta: TotalsDeltaDoc {
            segments: d.totals.segments,
            reserved_bytes: MemoryDoc::exact(d.totals.reserved),
            allocated_bytes: MemoryDoc::exact(d.totals.allocated),
            active_bytes: MemoryDoc::exact(d.totals.active),
            requested_bytes: MemoryDoc::exact(d.totals.requested),
            peak_reserved_bytes: MemoryDoc::exact(d.totals.peak_reserved),
            peak_allocated_bytes: MemoryDoc::exact(d.totals.peak_allocated),
        },
        a_totals: (&d.a_totals).into(),
        b_totals: (&d.b_totals).into(),
        a_ooms: d.a_ooms,
        b_ooms: d.b_ooms,
        a_oom: d.a_oom.as_ref().map(Into::into),
        b_oom: d.b_oom.as_ref().map(Into::into),
        a_free_space: (&d.a_free).into(),
        b_free_space: (&d.b_free).into(),
    }
}
