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
pub struct TotalsDoc {
    pub segments: u64,
    pub reserved_bytes: MemoryDoc,
    pub allocated_bytes: MemoryDoc,
    pub active_bytes: MemoryDoc,
    pub requested_bytes: MemoryDoc,
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
pub struct PoolDoc {
    /// PyTorch's pool id as `"a,b"`; `"0,0"` is the default pool.
    pub pool: String,
    /// A private pool, in practice a CUDA graph's.
    pub private: bool,
    pub totals: TotalsDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StreamDoc {
    /// `default`, or `s1`, `s2`, … by first use (raw stream values are pointers).
    pub stream: String,
    pub totals: TotalsDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SegmentTypeDoc {
    pub segment_type: String,
    pub totals: TotalsDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PeakDoc {
    pub amount_bytes: MemoryDoc,
    /// Microseconds since the Unix epoch (PyTorch's clock).
    pub time_us: i64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct OomDoc {
    pub requested_bytes: MemoryDoc,
    pub device_free_bytes: Option<MemoryDoc>,
    pub time_us: i64,
    pub device: usize,
    /// The allocation site of the request that failed.
    pub site: String,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SiteDoc {
    /// `function (file.py)`: the first frame outside PyTorch, the standard library and
    /// installed packages (see `--skip-frames`, `--by-line`).
    pub site: String,
    /// Source lines that contributed (at most 16).
    pub lines: Vec<i64>,
    pub allocated_bytes: MemoryDoc,
    pub requested_bytes: MemoryDoc,
    pub blocks: u64,
    pub reserved_bytes: MemoryDoc,
    pub segments: u64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SeriesPointDoc {
    pub time_us: i64,
    pub allocated_bytes: MemoryDoc,
    pub reserved_bytes: MemoryDoc,
}

/// What bound the failed allocation.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct LimitDoc {
    /// `device` (the device had less free memory than the segment asked for),
    /// `process_cap` (it had room; the process's cap did not) or `unknown`.
    pub kind: String,
    pub device_free_bytes: Option<MemoryDoc>,
    /// The segment `cudaMalloc` was asked for.
    pub segment_bytes: Option<MemoryDoc>,
    /// For `process_cap`: the cap lies in [`cap_at_least_bytes`, `cap_below_bytes`).
    pub cap_at_least_bytes: Option<MemoryDoc>,
    pub cap_below_bytes: Option<MemoryDoc>,
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
pub struct FreeSpaceDoc {
    pub reserved_bytes: MemoryDoc,
    pub allocated_bytes: MemoryDoc,
    /// Reserved minus allocated outside private pools: PyTorch's "reserved but
    /// unallocated".
    pub unallocated_bytes: MemoryDoc,
    /// Reserved minus allocated inside private (CUDA graph) pools.
    pub private_unallocated_bytes: MemoryDoc,
    pub largest_free_block_bytes: MemoryDoc,
    pub segments_with_holes: u64,
    pub wholly_free_segments: u64,
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
pub struct SegmentShapeDoc {
    pub count: u64,
    pub size_bytes: MemoryDoc,
    pub allocated_bytes: MemoryDoc,
    pub free_blocks: u64,
    pub largest_free_block_bytes: MemoryDoc,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PinDoc {
    /// `function (file.py:line)`; an anonymous function is named with its caller,
    /// `warm_prefill/<lambda> (launch.py:76)`.
    pub site: String,
    pub segments: u64,
    pub blocks: u64,
    /// The live blocks' bytes.
    pub live_bytes: MemoryDoc,
}

/// Memory held but unusable for the failed request: holes smaller than it, in segments
/// that live blocks keep from being released.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FragmentationDoc {
    /// Free bytes in those segments (outside private pools).
    pub free_bytes: MemoryDoc,
    pub segments: u64,
    pub holes: u64,
    /// The largest free block of any segment: smaller than the request.
    pub largest_hole_bytes: MemoryDoc,
    pub shapes: Vec<SegmentShapeDoc>,
    /// Sites owning the live blocks in those segments, most segments first.
    pub pinned_by: Vec<PinDoc>,
}

/// The first OOM of a device, against the allocator's state at that moment.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct OomAnalysisDoc {
    pub device: usize,
    pub time_us: i64,
    /// The block asked for (rounded to 512 B, as the trace records it).
    pub requested_bytes: MemoryDoc,
    /// The segment `cudaMalloc` was asked for (PyTorch's "Tried to allocate").
    pub segment_bytes: MemoryDoc,
    /// `function (file.py:line)` of the request.
    pub site: String,
    /// True when the segments were rebuilt as they stood at the OOM (by undoing the trace
    /// entries after it); false: as dumped, see `state_note`.
    pub at_oom: bool,
    pub state_note: Option<String>,
    pub free_space: FreeSpaceDoc,
    pub limit: LimitDoc,
    /// Present when the OOM was fragmentation.
    pub fragmentation: Option<FragmentationDoc>,
    /// `expandable_segments` of the snapshot's `allocator_settings`, when recorded.
    pub expandable_segments: Option<bool>,
    /// `oom` entries after this one on the device.
    pub later_ooms: u64,
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
pub struct MemSummaryDoc {
    pub totals: TotalsDoc,
    pub by_pool: Vec<PoolDoc>,
    pub by_stream: Vec<StreamDoc>,
    pub by_segment_type: Vec<SegmentTypeDoc>,
    pub peak_reserved: Option<PeakDoc>,
    pub peak_allocated: Option<PeakDoc>,
    pub ooms: Vec<OomDoc>,
    /// The first OOM of each device, analysed: what bound it, fragmentation.
    pub oom_analyses: Vec<OomAnalysisDoc>,
    /// Free memory inside the segments as dumped.
    pub free_space: FreeSpaceDoc,
    /// Every site with live or reserved memory, largest allocated first.
    pub sites: Vec<SiteDoc>,
    /// At most 512 points, each the largest of its interval.
    pub series: Vec<SeriesPointDoc>,
    pub trace_entries: u64,
    /// Trace entries whose action this version does not know, by name: counted here and
    /// left out of every figure above.
    pub unknown_actions: Vec<UnknownActionDoc>,
    pub first_time_us: Option<i64>,
    pub last_time_us: Option<i64>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct UnknownActionDoc {
    pub name: String,
    pub entries: u64,
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
pub struct MemSnapshotDoc {
    pub path: String,
    pub summary: MemSummaryDoc,
}

/// `rankscope mem SNAPSHOT… --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MemDoc {
    pub schema_version: u32,
    /// Always `mem`.
    pub command: String,
    pub snapshots: Vec<MemSnapshotDoc>,
}

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
pub struct SiteChangeDoc {
    pub site: String,
    pub a_allocated_bytes: MemoryDoc,
    pub b_allocated_bytes: MemoryDoc,
    pub a_reserved_bytes: MemoryDoc,
    pub b_reserved_bytes: MemoryDoc,
    pub delta_allocated_bytes: MemoryDoc,
    pub delta_reserved_bytes: MemoryDoc,
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
pub struct SegmentChangeDoc {
    pub size_bytes: MemoryDoc,
    pub pool: String,
    pub stream: String,
    pub site: String,
    pub count: u64,
    /// `count` × `size_bytes`.
    pub total_bytes: MemoryDoc,
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
pub struct TotalsDeltaDoc {
    pub segments: i64,
    pub reserved_bytes: MemoryDoc,
    pub allocated_bytes: MemoryDoc,
    pub active_bytes: MemoryDoc,
    pub requested_bytes: MemoryDoc,
    pub peak_reserved_bytes: MemoryDoc,
    pub peak_allocated_bytes: MemoryDoc,
}

/// `rankscope mem diff A B --json`: A is the baseline, B the candidate.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MemDiffDoc {
    pub schema_version: u32,
    /// Always `mem diff`.
    pub command: String,
    pub a: String,
    pub b: String,
    /// Sites with memory only in A, only in B, and in both with a change.
    pub only_a: Vec<SiteChangeDoc>,
    pub only_b: Vec<SiteChangeDoc>,
    pub changed: Vec<SiteChangeDoc>,
    /// Segments matched by size, pool, stream and site (addresses differ between runs).
    pub new_segments: Vec<SegmentChangeDoc>,
    pub gone_segments: Vec<SegmentChangeDoc>,
    pub totals_delta: TotalsDeltaDoc,
    pub a_totals: TotalsDoc,
    pub b_totals: TotalsDoc,
    pub a_ooms: usize,
    pub b_ooms: usize,
    /// Each side's first OOM, analysed.
    pub a_oom: Option<OomAnalysisDoc>,
    pub b_oom: Option<OomAnalysisDoc>,
    pub a_free_space: FreeSpaceDoc,
    pub b_free_space: FreeSpaceDoc,
}

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
