//! Pure analysis over a [`Snapshot`]: totals, pools, peaks, OOM, allocation sites, a
//! memory-over-time series, run-vs-run diffs and per-window site deltas.

mod compare;
pub use compare::*;

use std::collections::{BTreeMap, HashMap};

use super::site::site_line;
pub use super::site::{site_at_line, site_of, SiteGranularity, SiteRule};
use super::types::{Action, BlockState, Snapshot, StackId, TraceEntry};
use crate::base::units::{ByteDelta, Bytes};

/// Caches site names per stack (a snapshot has few distinct stacks, many references).
struct Sites<'a> {
    s: &'a Snapshot,
    rule: &'a SiteRule,
    cache: HashMap<StackId, (std::rc::Rc<str>, Option<i64>)>,
}

impl<'a> Sites<'a> {
    fn new(s: &'a Snapshot, rule: &'a SiteRule) -> Self {
        Sites {
            s,
            rule,
            cache: HashMap::new(),
        }
    }
    fn get(&mut self, st: StackId) -> (std::rc::Rc<str>, Option<i64>) {
        self.cache
            .entry(st)
            .or_insert_with(|| {
                (
                    site_of(self.s, self.rule, st).into(),
                    site_line(self.s, self.rule, st),
                )
            })
            .clone()
    }
}

/// Live memory at one site, from the segments' blocks at snapshot time.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteBytes {
    /// The site, as `SiteRule` names it.
    pub site: String,
    /// Distinct source lines that contributed (sorted; at most 16 kept).
    pub lines: Vec<i64>,
    /// Bytes of `active_allocated` blocks (rounded block sizes).
    pub allocated: Bytes,
    pub(crate) requested: Bytes,
    pub(crate) blocks: u64,
    /// Bytes of segments whose site this is (segment stack, else its first block's).
    pub reserved: Bytes,
    /// Segments whose site this is.
    pub segments: u64,
}

/// Segment totals (bytes) of a snapshot, a pool, a stream or a segment type.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Totals {
    /// Segments counted.
    pub segments: u64,
    /// Bytes the segments reserve from the device.
    pub reserved: Bytes,
    /// Bytes of allocated blocks in them.
    pub allocated: Bytes,
    pub(crate) active: Bytes,
    pub(crate) requested: Bytes,
}

impl Totals {
    fn add(&mut self, seg: &super::types::Segment) {
        self.segments += 1;
        // The reader refuses a snapshot whose sizes sum past 2^64 (D19), so these hold.
        self.reserved = self.reserved.saturating_add(Bytes(seg.total_size));
        self.allocated = self.allocated.saturating_add(Bytes(seg.allocated_size));
        self.active = self.active.saturating_add(Bytes(seg.active_size));
        self.requested = self.requested.saturating_add(Bytes(seg.requested_size));
    }
}

/// One memory pool's totals.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolTotals {
    /// The pool's id, as the snapshot gives it (`(0, 0)` is the default pool).
    pub pool: (i64, i64),
    /// Not `(0, 0)`: a private pool, in practice a CUDA graph's.
    pub private: bool,
    /// Its segments' totals.
    pub totals: Totals,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StreamTotals {
    pub(crate) stream: u64,
    /// `default` for stream 0, else `s1`, `s2`, … by first appearance: raw stream values
    /// are pointers and differ from run to run.
    pub(crate) label: String,
    pub(crate) totals: Totals,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Peak {
    pub(crate) bytes: Bytes,
    pub(crate) time_us: i64,
}

/// One OOM the snapshot's trace records.
#[derive(Debug, Clone, PartialEq)]
pub struct OomInfo {
    /// The bytes the failed request asked for.
    pub requested: Bytes,
    /// The device's free memory the entry recorded, when it did.
    pub device_free: Option<Bytes>,
    /// When, in the trace's microseconds.
    pub time_us: i64,
    pub(crate) stream: u64,
    /// The site of the failed request.
    pub site: String,
    pub(crate) device: usize,
}

/// One point of a snapshot's memory over time, from its trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesPoint {
    pub(crate) time_us: i64,
    /// Requested bytes live (the trace records requested, not rounded, sizes).
    pub(crate) allocated: Bytes,
    /// Segment bytes reserved at that moment.
    pub reserved: Bytes,
}

/// A segment described without its address, so runs can be matched.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SegmentKey {
    /// The segment's size in bytes.
    pub size: Bytes,
    pub(crate) pool: (i64, i64),
    pub(crate) stream: String,
    /// The site that reserved it.
    pub site: String,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SegmentSig {
    pub(crate) key: SegmentKey,
    pub(crate) allocated: Bytes,
}

/// What a snapshot holds: totals by pool, stream and type, sites, OOMs and the trace's
/// series.
#[derive(Debug, Clone, PartialEq)]
pub struct MemSummary {
    /// The whole snapshot's totals.
    pub totals: Totals,
    /// Totals per memory pool.
    pub by_pool: Vec<PoolTotals>,
    pub(crate) by_stream: Vec<StreamTotals>,
    pub(crate) by_segment_type: BTreeMap<String, Totals>,
    pub(crate) peak_reserved: Option<Peak>,
    pub(crate) peak_allocated: Option<Peak>,
    /// Every OOM the trace records, in trace order.
    pub ooms: Vec<OomInfo>,
    /// The first OOM of each device, against the allocator's state at that moment.
    pub(crate) oom_analyses: Vec<super::oom::OomAnalysis>,
    /// Free memory inside the segments as dumped.
    pub(crate) free_space: super::oom::FreeSpace,
    /// Every site with live or reserved memory, largest allocated first.
    pub sites: Vec<SiteBytes>,
    pub(crate) segments: Vec<SegmentSig>,
    /// Reserved and allocated bytes over the trace.
    pub series: Vec<SeriesPoint>,
    /// Trace entries read.
    pub trace_entries: u64,
    /// Entries whose action this reader does not know, by name, in order of first
    /// appearance: counted, and left out of every figure above.
    pub unknown_actions: Vec<(String, u64)>,
    pub(crate) first_time_us: Option<i64>,
    pub(crate) last_time_us: Option<i64>,
}

/// How many points `summarize` keeps in the memory-over-time series.
pub(crate) const SERIES_POINTS: usize = 512;

/// Labels for the streams in `first_use` order (see [`TraceScan`]), then for segment
/// streams the trace never used.
fn stream_labels(s: &Snapshot, first_use: &[u64]) -> HashMap<u64, String> {
    let mut labels = HashMap::new();
    labels.insert(0, "default".to_string());
    let mut next = 1;
    for &st in first_use.iter().chain(s.segments.iter().map(|g| &g.stream)) {
        labels.entry(st).or_insert_with(|| {
            let l = format!("s{next}");
            next += 1;
            l
        });
    }
    labels
}

/// What one walk over the trace in time order gathers for [`summarize`]: a large trace
/// is far bigger than the caches, so each walk costs a read of all of it from memory.
struct TraceScan {
    /// Streams that hold segments, in order of first use in the trace: only those get
    /// labels, since graph capture touches many short-lived streams that would shift the
    /// numbering.
    first_use: Vec<u64>,
    /// Net change of (allocated, reserved) over the trace.
    net: (i128, i128),
    /// Entries that change either.
    changes: usize,
    first_time_us: Option<i64>,
    last_time_us: Option<i64>,
    /// Whether any entry is an `oom`: without one the walks that look for them (the
    /// OOM list, the OOM analyses) are skipped.
    any_oom: bool,
    /// Entries per `Snapshot::unknown_actions` name.
    unknown: Vec<u64>,
}

fn scan_trace(s: &Snapshot, order: &TimeOrder<'_>) -> TraceScan {
    // Segment streams are few, so a sorted vector beats hashing each entry's stream;
    // consecutive entries mostly share a stream, and a repeat changes nothing.
    let mut used: Vec<u64> = s.segments.iter().map(|g| g.stream).collect();
    used.sort_unstable();
    used.dedup();
    let mut scan = TraceScan {
        first_use: Vec::new(),
        net: (0, 0),
        changes: 0,
        first_time_us: None,
        last_time_us: None,
        any_oom: false,
        unknown: vec![0; s.tables.action_names().count()],
    };
    let mut last_stream = None;
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for e in order.iter() {
        lo = lo.min(e.time_us);
        hi = hi.max(e.time_us);
        if last_stream != Some(e.stream) {
            last_stream = Some(e.stream);
            let stream = s.stream(e);
            if used.binary_search(&stream).is_ok() && !scan.first_use.contains(&stream) {
                scan.first_use.push(stream);
            }
        }
        match e.action {
            Action::Oom => scan.any_oom = true,
            Action::Other(u) => {
                if let Some(n) = scan.unknown.get_mut(u.0 as usize) {
                    *n += 1;
                }
            }
            _ => {}
        }
        let (a, r) = delta(e);
        if a != 0 || r != 0 {
            scan.net.0 += a;
            scan.net.1 += r;
            scan.changes += 1;
        }
    }
    // `lo > hi` only when the walk met no entry.
    if lo <= hi {
        scan.first_time_us = Some(lo);
        scan.last_time_us = Some(hi);
    }
    scan
}

/// The snapshot's memory in one structure; see [`MemSummary`].
pub fn summarize(s: &Snapshot, rule: &SiteRule) -> MemSummary {
    summarize_with(s, rule, SERIES_POINTS)
}

pub(crate) fn summarize_with(s: &Snapshot, rule: &SiteRule, series_points: usize) -> MemSummary {
    let mut sites = Sites::new(s, rule);
    let order = time_ordered(s);
    let scan = scan_trace(s, &order);
    let labels = stream_labels(s, &scan.first_use);
    let tally = tally_segments(s, &mut sites, &labels);
    let ooms = if scan.any_oom {
        oom_entries(s, &mut sites)
    } else {
        Vec::new()
    };

    // The series ends at the snapshot's own state: the trace may have started after memory
    // was already in use (or be a ring buffer), so replay deltas and anchor at the end.
    let live_requested: u64 = s
        .segments
        .iter()
        .flat_map(|g| &g.blocks)
        .filter(|b| b.state == BlockState::ActiveAllocated)
        .map(|b| b.requested_size)
        .sum();
    let (series, peak_allocated, peak_reserved) = replay(
        &order,
        &scan,
        live_requested,
        tally.totals.reserved.get(),
        series_points,
    );

    let trace_entries = s.device_traces.iter().map(|t| t.len() as u64).sum();
    let (first_time_us, last_time_us) = (scan.first_time_us, scan.last_time_us);
    let unknown_actions = scan
        .unknown
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(|(i, &n)| {
            let name = s.tables.action_name(super::trace::UnknownAction(i as u8));
            (name.unwrap_or("?").to_string(), n)
        })
        .collect();

    MemSummary {
        totals: tally.totals,
        by_pool: tally
            .pools
            .into_iter()
            .map(|(pool, totals)| PoolTotals {
                pool,
                private: pool != (0, 0),
                totals,
            })
            .collect(),
        by_stream: tally
            .streams
            .into_iter()
            .map(|(stream, totals)| StreamTotals {
                stream,
                label: labels.get(&stream).cloned().unwrap_or_default(),
                totals,
            })
            .collect(),
        by_segment_type: tally.types,
        peak_reserved,
        peak_allocated,
        ooms,
        oom_analyses: if scan.any_oom {
            super::oom::analyse(s, rule)
        } else {
            Vec::new()
        },
        free_space: super::oom::free_space_at_dump(s),
        sites: tally.sites,
        segments: tally.segments,
        series,
        trace_entries,
        unknown_actions,
        first_time_us,
        last_time_us,
    }
}

/// What the segments at snapshot time add up to: totals by pool, stream and segment
/// type, live bytes by site (largest first), and each segment's signature (sorted).
struct SegmentTally {
    totals: Totals,
    pools: BTreeMap<(i64, i64), Totals>,
    streams: BTreeMap<u64, Totals>,
    types: BTreeMap<String, Totals>,
    sites: Vec<SiteBytes>,
    segments: Vec<SegmentSig>,
}

fn tally_segments(
    s: &Snapshot,
    sites: &mut Sites<'_>,
    labels: &HashMap<u64, String>,
) -> SegmentTally {
    let mut totals = Totals::default();
    let mut pools: BTreeMap<(i64, i64), Totals> = BTreeMap::new();
    let mut streams: BTreeMap<u64, Totals> = BTreeMap::new();
    let mut types: BTreeMap<String, Totals> = BTreeMap::new();
    let mut by_site: HashMap<std::rc::Rc<str>, SiteBytes> = HashMap::new();
    let mut segments = Vec::with_capacity(s.segments.len());

    for seg in &s.segments {
        totals.add(seg);
        pools.entry(seg.segment_pool_id).or_default().add(seg);
        streams.entry(seg.stream).or_default().add(seg);
        types
            .entry(seg.segment_type.to_string())
            .or_default()
            .add(seg);

        let seg_stack = if s.stack_len(seg.stack) > 0 {
            seg.stack
        } else {
            seg.blocks
                .iter()
                .find(|b| s.stack_len(b.stack) > 0)
                .map_or(seg.stack, |b| b.stack)
        };
        let (seg_site, _) = sites.get(seg_stack);
        let sb = site_entry(&mut by_site, &seg_site);
        sb.reserved = sb.reserved.saturating_add(Bytes(seg.total_size));
        sb.segments += 1;
        segments.push(SegmentSig {
            key: SegmentKey {
                size: Bytes(seg.total_size),
                pool: seg.segment_pool_id,
                stream: labels.get(&seg.stream).cloned().unwrap_or_default(),
                site: seg_site.to_string(),
            },
            allocated: Bytes(seg.allocated_size),
        });
        add_live_blocks(seg, sites, &mut by_site);
    }

    let mut sites_v: Vec<SiteBytes> = by_site.into_values().collect();
    sites_v.sort_by(|a, b| {
        (b.allocated, b.reserved)
            .cmp(&(a.allocated, a.reserved))
            .then_with(|| a.site.cmp(&b.site))
    });
    segments.sort_by(|a, b| a.key.cmp(&b.key));
    SegmentTally {
        totals,
        pools,
        streams,
        types,
        sites: sites_v,
        segments,
    }
}

/// A segment's `active_allocated` blocks, added to their sites.
fn add_live_blocks(
    seg: &super::types::Segment,
    sites: &mut Sites<'_>,
    by_site: &mut HashMap<std::rc::Rc<str>, SiteBytes>,
) {
    for b in &seg.blocks {
        if b.state != BlockState::ActiveAllocated {
            continue;
        }
        let (name, line) = sites.get(b.stack);
        let sb = site_entry(by_site, &name);
        sb.allocated = sb.allocated.saturating_add(Bytes(b.size));
        sb.requested = sb.requested.saturating_add(Bytes(b.requested_size));
        sb.blocks += 1;
        if let Some(l) = line {
            if !sb.lines.contains(&l) && sb.lines.len() < 16 {
                sb.lines.push(l);
                sb.lines.sort_unstable();
            }
        }
    }
}

/// Every OOM entry of the trace, with the device's free memory then.
fn oom_entries(s: &Snapshot, sites: &mut Sites<'_>) -> Vec<OomInfo> {
    s.device_traces
        .iter()
        .enumerate()
        .flat_map(|(d, t)| t.iter().enumerate().map(move |(i, e)| (d, i, e)))
        .filter(|(_, _, e)| e.action == Action::Oom)
        .map(|(device, i, e)| OomInfo {
            requested: Bytes(e.size),
            device_free: s.device_free(device, i).map(Bytes),
            time_us: e.time_us,
            stream: s.stream(e),
            site: sites.get(e.stack).0.to_string(),
            device,
        })
        .collect()
}

fn site_entry<'m>(
    m: &'m mut HashMap<std::rc::Rc<str>, SiteBytes>,
    name: &std::rc::Rc<str>,
) -> &'m mut SiteBytes {
    m.entry(name.clone()).or_insert_with(|| SiteBytes {
        site: name.to_string(),
        lines: Vec::new(),
        allocated: Bytes::ZERO,
        requested: Bytes::ZERO,
        blocks: 0,
        reserved: Bytes::ZERO,
        segments: 0,
    })
}

/// Signed effect of one entry on (allocated, reserved).
fn delta(e: &TraceEntry) -> (i128, i128) {
    let n = e.size as i128;
    match e.action {
        Action::Alloc => (n, 0),
        Action::FreeCompleted => (-n, 0),
        Action::SegmentAlloc | Action::SegmentMap => (0, n),
        Action::SegmentFree | Action::SegmentUnmap => (0, -n),
        _ => (0, 0),
    }
}

/// Trace entries in time order. One device's trace is in recording order already, so
/// it is walked in place; only several devices' traces are gathered and sorted (stably,
/// so entries with equal times keep their device order).
enum TimeOrder<'a> {
    InPlace(&'a [Vec<TraceEntry>]),
    Sorted(Vec<&'a TraceEntry>),
}

impl<'a> TimeOrder<'a> {
    fn iter(&self) -> TimeOrdered<'a, '_> {
        match self {
            TimeOrder::InPlace(t) => TimeOrdered::InPlace(t.iter().flatten()),
            TimeOrder::Sorted(v) => TimeOrdered::Sorted(v.iter()),
        }
    }
}

enum TimeOrdered<'a, 'o> {
    InPlace(std::iter::Flatten<std::slice::Iter<'a, Vec<TraceEntry>>>),
    Sorted(std::slice::Iter<'o, &'a TraceEntry>),
}

impl<'a> Iterator for TimeOrdered<'a, '_> {
    type Item = &'a TraceEntry;
    #[inline]
    fn next(&mut self) -> Option<&'a TraceEntry> {
        match self {
            TimeOrdered::InPlace(it) => it.next(),
            TimeOrdered::Sorted(it) => it.next().copied(),
        }
    }
}

fn time_ordered(s: &Snapshot) -> TimeOrder<'_> {
    if s.device_traces.iter().filter(|t| !t.is_empty()).count() > 1 {
        let mut all: Vec<&TraceEntry> = s.trace_entries().collect();
        all.sort_by_key(|e| e.time_us);
        TimeOrder::Sorted(all)
    } else {
        TimeOrder::InPlace(&s.device_traces)
    }
}

/// The memory-over-time series downsampled to `points` (see [`downsample`]) and the
/// peaks of the full series, which is never held whole: a large trace would need a
/// point per entry.
fn replay(
    order: &TimeOrder<'_>,
    scan: &TraceScan,
    end_alloc: u64,
    end_res: u64,
    points: usize,
) -> (Vec<SeriesPoint>, Option<Peak>, Option<Peak>) {
    let mut alloc = end_alloc as i128 - scan.net.0;
    let mut res = end_res as i128 - scan.net.1;
    let clamp = |v: i128| v.clamp(0, u64::MAX as i128) as u64;
    let mut out = Downsampler::new(scan.changes, points);
    let (mut pa, mut pr): (Option<Peak>, Option<Peak>) = (None, None);
    for e in order.iter() {
        let (a, r) = delta(e);
        if a == 0 && r == 0 {
            continue;
        }
        alloc += a;
        res += r;
        let p = SeriesPoint {
            time_us: e.time_us,
            allocated: Bytes(clamp(alloc)),
            reserved: Bytes(clamp(res)),
        };
        if pa.as_ref().is_none_or(|x| p.allocated > x.bytes) {
            pa = Some(Peak {
                bytes: p.allocated,
                time_us: p.time_us,
            });
        }
        if pr.as_ref().is_none_or(|x| p.reserved > x.bytes) {
            pr = Some(Peak {
                bytes: p.reserved,
                time_us: p.time_us,
            });
        }
        out.push(p);
    }
    (out.out, pa, pr)
}

/// Keeps at most `n` points: the series is cut into `n` runs of equal length and each run
/// reports its maxima (at its last time), so short spikes — the ones that OOM — survive.
/// The tests' way in; the reader feeds [`Downsampler`] point by point.
#[cfg(test)]
fn downsample(full: &[SeriesPoint], n: usize) -> Vec<SeriesPoint> {
    let mut d = Downsampler::new(full.len(), n);
    for &p in full {
        d.push(p);
    }
    d.out
}

/// [`downsample`] fed one point at a time, for a series of known length `len`. With
/// `len > n` run `i` is points `i * len / n .. (i + 1) * len / n`: consecutive, never
/// empty, together the whole series.
struct Downsampler {
    len: usize,
    n: usize,
    seen: usize,
    run: usize,
    run_end: usize,
    max: (Bytes, Bytes),
    out: Vec<SeriesPoint>,
}

impl Downsampler {
    fn new(len: usize, n: usize) -> Self {
        Downsampler {
            len,
            n,
            seen: 0,
            run: 0,
            run_end: len.checked_div(n).unwrap_or(0),
            max: (Bytes::ZERO, Bytes::ZERO),
            out: Vec::with_capacity(len.min(n)),
        }
    }

    #[inline]
    fn push(&mut self, p: SeriesPoint) {
        if self.n == 0 || self.seen >= self.len {
            return;
        }
        self.seen += 1;
        if self.len <= self.n {
            self.out.push(p);
            return;
        }
        self.max = (self.max.0.max(p.allocated), self.max.1.max(p.reserved));
        if self.seen == self.run_end {
            self.out.push(SeriesPoint {
                time_us: p.time_us,
                allocated: self.max.0,
                reserved: self.max.1,
            });
            self.max = (Bytes::ZERO, Bytes::ZERO);
            self.run += 1;
            self.run_end = (self.run + 1) * self.len / self.n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition `downsample` had when it cut a materialised series into runs.
    fn by_runs(full: &[SeriesPoint], n: usize) -> Vec<SeriesPoint> {
        if n == 0 {
            return Vec::new();
        }
        if full.len() <= n {
            return full.to_vec();
        }
        (0..n)
            .filter_map(|i| {
                let lo = i * full.len() / n;
                let hi = ((i + 1) * full.len() / n).max(lo + 1);
                let run = &full[lo..hi.min(full.len())];
                run.last().map(|last| SeriesPoint {
                    time_us: last.time_us,
                    allocated: run.iter().map(|p| p.allocated).max().unwrap_or_default(),
                    reserved: run.iter().map(|p| p.reserved).max().unwrap_or_default(),
                })
            })
            .collect()
    }

    #[test]
    fn streamed_downsample_matches_runs() {
        let full: Vec<SeriesPoint> = (0..1000u64)
            .map(|i| SeriesPoint {
                time_us: i as i64,
                allocated: Bytes((i * 7919) % 1009),
                reserved: Bytes((i * 104_729) % 997),
            })
            .collect();
        for len in [0, 1, 2, 7, 63, 64, 65, 511, 512, 513, 1000] {
            for n in [0, 1, 2, 3, 64, 512, 1000, 2000] {
                assert_eq!(
                    downsample(&full[..len], n),
                    by_runs(&full[..len], n),
                    "len {len}, n {n}"
                );
            }
        }
    }
}
