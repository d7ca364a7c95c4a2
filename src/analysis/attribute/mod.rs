//! Who moved the memory: a phase's log-level delta attributed to allocation sites from the
//! ranks' PyTorch snapshots, and the residual that PyTorch cannot see.
//!
//! Clocks: snapshot trace times are microseconds since the Unix epoch; SGLang stamps are
//! local wall-clock seconds with no zone. The two are matched by the whole number of
//! quarter hours (a time-zone offset) that puts the snapshot's first trace entry closest
//! to the rank's first log line; the offset used is reported. Phase windows are widened by
//! the log's one-second resolution.

mod matching;
pub use matching::*;

use std::collections::BTreeMap;

use chrono::NaiveDateTime;

use super::align::Spread;
use super::diff::{RunDiff, Side};
use crate::base::event::Rank;
use crate::base::units::{ByteDelta, Bytes};
use crate::grammar::FrameRule;
use crate::model::{Phase, RankRun, Run};
use crate::snapshot::inspect::{self as snap, SiteRule};
use crate::snapshot::site::site_label;
use crate::snapshot::Snapshot;

/// One allocation site's share of the change between the runs' snapshots.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteShare {
    /// The site (file and function, or line), as `SiteRule` names it.
    pub site: String,
    /// `init_custom_ar (model_runner.py:85-87)`
    pub(crate) label: String,
    /// Where the site first allocated, on the log's clock.
    pub phase: Option<Phase>,
    /// Ranks on which this site changed.
    pub ranks: usize,
    /// The change in reserved bytes across the ranks: min, median, max.
    pub delta_reserved: Spread,
    /// The change in allocated bytes across the ranks: min, median, max.
    pub delta_allocated: Spread,
    /// Live blocks at this site in the candidate's snapshot (median over ranks).
    pub blocks: u64,
}

/// The first divergence placed on allocation sites, from both runs' snapshots.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribution {
    /// The phase of the divergence.
    pub phase: Phase,
    /// Ranks with a snapshot in both runs.
    pub ranks_compared: usize,
    /// The sites that changed: those of the divergence's phase first, largest change first.
    pub sites: Vec<SiteShare>,
    /// Median over ranks of the allocator-level change in reserved bytes in the phase.
    pub allocator_delta_reserved: ByteDelta,
    /// Median over ranks of the log-level (driver) delta of the diverging figure.
    pub driver_delta: Option<ByteDelta>,
    /// driver − allocator: memory PyTorch's allocator did not see (NCCL, cudaMalloc, IPC).
    pub residual: Option<ByteDelta>,
    /// One print step of the log figure; a residual within it is indistinguishable from 0.
    pub log_resolution: Option<u64>,
    /// New segments in the candidate's snapshots (whole snapshot, matched by size, pool,
    /// stream and site): count and bytes, median over ranks.
    pub new_segments: Vec<(String, u64, Bytes)>,
    /// How the candidate's snapshot clocks were matched to its log clock.
    pub(crate) clock: Option<ClockNote>,
}

/// How a snapshot's clock was put on the log's.
#[derive(Clone, Debug, PartialEq)]
pub struct ClockMatch {
    /// Snapshot clock − log clock, microseconds.
    pub offset_us: i64,
    /// The interval the anchors allow for the offset; `None` for the first-lines guess.
    pub interval_us: Option<(i64, i64)>,
    /// What the anchors were: `OOM`, phases by name.
    pub anchors: Vec<String>,
    /// The offset is a whole number of quarter hours inside the interval (a time zone).
    pub zone: bool,
}

const QUARTER_HOUR_US: i64 = 15 * 60 * 1_000_000;
const SECOND_US: i64 = 1_000_000;

fn micros(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp_micros()
}

/// The interval of offsets (snapshot − log) the data allow, from anchors:
/// - the snapshot's `oom` entry and the rank's OOM line: the same moment, the line's stamp
///   cut to the second, so the offset is in (t − T − 1 s, t − T];
/// - trace entries whose stack names a function that belongs to a phase
///   (the grammars' `frame_phase` tables: `capture_graphs` → `cuda_graph`, …): the first
///   and last of them lie inside that phase's log window [start, end + 1 s), widened by a
///   second on each side because a phase's lines are printed near its allocations, not
///   exactly before and after them.
fn anchored_interval(
    rr: &RankRun,
    s: &Snapshot,
    frames: &[FrameRule],
) -> Option<((i64, i64), Vec<String>)> {
    use crate::model::FailureKind;
    use crate::snapshot::Action;
    let mut lo = i64::MIN;
    let mut hi = i64::MAX;
    let mut anchors = Vec::new();
    if let Some(f) = rr.failure.as_ref().filter(|f| f.kind == FailureKind::Oom) {
        let oom = s.trace_entries().find(|e| e.action == Action::Oom);
        if let (Some(e), Some(ts)) = (oom, f.ts) {
            let d = e.time_us.checked_sub(micros(ts))?;
            lo = lo.max(d.saturating_sub(SECOND_US));
            hi = hi.min(d);
            anchors.push("OOM".to_string());
        }
    }
    // Per phase, the first and last trace time of a stack naming one of its functions.
    let mut seen: BTreeMap<Phase, (i64, i64)> = BTreeMap::new();
    let mut phase_of_stack: std::collections::HashMap<crate::snapshot::StackId, Option<Phase>> =
        std::collections::HashMap::new();
    for e in s.trace_entries() {
        if !matches!(e.action, Action::Alloc | Action::SegmentAlloc) {
            continue;
        }
        let phase = *phase_of_stack.entry(e.stack).or_insert_with(|| {
            // Snapshot stacks are innermost first; the outermost named frame decides, as
            // in a traceback (`execute_model` inside `capture_model` is capture).
            let stack: Vec<(&str, &str)> =
                s.stack(e.stack).map(|f| (&*f.name, &*f.filename)).collect();
            crate::grammar::phase_of_stack(frames, stack.into_iter())
        });
        if let Some(p) = phase {
            let w = seen.entry(p).or_insert((e.time_us, e.time_us));
            w.0 = w.0.min(e.time_us);
            w.1 = w.1.max(e.time_us);
        }
    }
    for (p, (first, last)) in seen {
        let Some(span) = rr.phase(p) else { continue };
        let Some(start) = span.start else { continue };
        // A failed phase ends at the failure line; one that never ended bounds nothing.
        let end = span.end.or(rr.failure.as_ref().and_then(|f| f.ts));
        // A phase's lines are printed near, not exactly at, its first and last
        // allocation (the begin line can follow the first one): a second of slack more.
        hi = hi.min(first.checked_sub(micros(start))?.saturating_add(SECOND_US));
        if let Some(end) = end {
            lo = lo.max(last.checked_sub(micros(end))?.saturating_sub(2 * SECOND_US));
        }
        anchors.push(p.name().to_string());
    }
    (!anchors.is_empty() && lo <= hi && lo > i64::MIN && hi < i64::MAX)
        .then_some(((lo, hi), anchors))
}

/// Puts a snapshot's clock on the rank's log clock. Anchors (the OOM, phase functions in
/// the trace) give an interval; a whole number of quarter hours inside it is taken as the
/// time-zone offset (log stamps are zone-less local time), else its middle. Without
/// anchors, the whole number of quarter hours that puts the first trace entry nearest the
/// rank's first log line. `None` when a clock is missing or a damaged time overflows.
pub fn clock_match(rr: &RankRun, s: &Snapshot, frames: &[FrameRule]) -> Option<ClockMatch> {
    if let Some(((lo, hi), anchors)) = anchored_interval(rr, s, frames) {
        let mid = ((i128::from(lo) + i128::from(hi)) / 2) as i64;
        let q =
            ((mid as f64 / QUARTER_HOUR_US as f64).round() as i64).checked_mul(QUARTER_HOUR_US)?;
        let zone = (lo..=hi).contains(&q);
        return Some(ClockMatch {
            offset_us: if zone { q } else { mid },
            interval_us: Some((lo, hi)),
            anchors,
            zone,
        });
    }
    let first_log = rr.phases.iter().filter_map(|p| p.start).min()?;
    let first_trace = s.device_traces.iter().flatten().map(|e| e.time_us).min()?;
    let diff = first_trace.checked_sub(micros(first_log))?;
    let offset_us =
        ((diff as f64 / QUARTER_HOUR_US as f64).round() as i64).checked_mul(QUARTER_HOUR_US)?;
    Some(ClockMatch {
        offset_us,
        interval_us: None,
        anchors: Vec::new(),
        zone: true,
    })
}

/// The offset (snapshot clock − log clock) of [`clock_match`].
pub(crate) fn clock_offset_us(rr: &RankRun, s: &Snapshot, frames: &[FrameRule]) -> Option<i64> {
    clock_match(rr, s, frames).map(|m| m.offset_us)
}

/// How one snapshot's clock was put on its rank's log clock.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SnapshotClock {
    pub(crate) rank: Rank,
    /// Snapshot clock − log clock, microseconds.
    pub(crate) offset_us: i64,
    /// The offset is a whole number of quarter hours (a time zone).
    pub(crate) zone: bool,
    /// What anchored it (`OOM`, phases by name); `None`: the first lines only, whole
    /// quarter hours.
    pub(crate) anchors: Option<Vec<String>>,
    /// Half the interval the anchors allow (the uncertainty), microseconds.
    pub(crate) half_us: i64,
}

/// How a run's snapshot clocks were put on its log clock.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ClockNote {
    /// The run's snapshots (matched or not): a group of all of them is said `all N`.
    pub(crate) snapshots: usize,
    pub(crate) clocks: Vec<SnapshotClock>,
}

/// How a run's snapshot clocks were put on its log clock (`None` when none was).
pub(crate) fn clock_note(run: &Run, snaps: &[RankSnapshot]) -> Option<ClockNote> {
    let clocks: Vec<SnapshotClock> = snaps
        .iter()
        .filter_map(|s| {
            let m = clock_match(run.rank(&s.rank)?, &s.snapshot, &run.frame_phases)?;
            let (anchors, half_us) = match m.interval_us {
                Some((lo, hi)) => (Some(m.anchors), hi.saturating_sub(lo) / 2),
                None => (None, QUARTER_HOUR_US / 2),
            };
            Some(SnapshotClock {
                rank: s.rank.clone(),
                offset_us: m.offset_us,
                zone: m.zone,
                anchors,
                half_us,
            })
        })
        .collect();
    (!clocks.is_empty()).then_some(ClockNote {
        snapshots: snaps.len(),
        clocks,
    })
}

/// The phase a moment of the rank's process belongs to. Stamps are whole seconds, and a
/// phase usually ends in the same second the next begins: within such a second the
/// earlier phase wins, so a phase whose end line was printed covers [start, end + 1 s).
/// A phase closed only by the next one's start (`launch`, vLLM's KV phase) covers
/// [start, end).
pub(crate) fn phase_at(rr: &RankRun, t_log_us: i64) -> Option<Phase> {
    let secs = |t: NaiveDateTime| t.and_utc().timestamp_micros();
    let mut best = None;
    for p in &rr.phases {
        let Some(start) = p.start else { continue };
        if covers(p, t_log_us) {
            return Some(p.phase);
        }
        if t_log_us >= secs(start) {
            best = Some(p.phase);
        }
    }
    best
}

/// Whether a phase's window holds a moment of the rank's log clock (µs): a phase whose
/// end line was printed covers [start, end + 1 s) (whole-second stamps), one closed only
/// by the next one's start [start, end).
pub(crate) fn covers(p: &crate::model::PhaseSpan, t_log_us: i64) -> bool {
    let us = |t: NaiveDateTime| t.and_utc().timestamp_micros();
    let Some(start) = p.start else { return false };
    let end = p.end.unwrap_or(start);
    let slack = if p.end_printed { 1_000_000 } else { 0 };
    t_log_us >= us(start) && t_log_us < us(end).saturating_add(slack)
}

/// Every site's first allocation in a snapshot (the earliest `alloc`/`segment_alloc` of
/// the device traces): its time is on the snapshot's clock, its stack the one that
/// allocated first.
pub(crate) fn first_alloc_by_site<'s>(
    s: &'s Snapshot,
    rule: &SiteRule,
) -> BTreeMap<String, &'s crate::snapshot::TraceEntry> {
    use crate::snapshot::Action;
    let mut out: BTreeMap<String, &crate::snapshot::TraceEntry> = BTreeMap::new();
    for e in s.device_traces.iter().flatten() {
        if !matches!(e.action, Action::Alloc | Action::SegmentAlloc) {
            continue;
        }
        let site = snap::site_of(s, rule, e.stack);
        let first = out.entry(site).or_insert(e);
        if e.time_us < first.time_us {
            *first = e;
        }
    }
    out
}

/// First allocation time (snapshot clock) of every site in a snapshot.
fn first_alloc_time_by_site(s: &Snapshot, rule: &SiteRule) -> BTreeMap<String, i64> {
    (first_alloc_by_site(s, rule).into_iter())
        .map(|(site, e)| (site, e.time_us))
        .collect()
}

/// One rank's change at one site: (phase placed in, Δreserved, Δallocated, live blocks
/// in the candidate).
type RankSiteChange = (Option<Phase>, i64, i64, u64);

/// Attributes the first divergence of `d` to allocation sites. Sites are compared over
/// the whole snapshot (what each site holds at the end, as PyTorch's own viewer shows),
/// then placed in the phase where the site first allocated, on the log's clock.
pub fn attribute(
    baseline: &Run,
    candidate: &Run,
    d: &RunDiff,
    base_snaps: &[RankSnapshot],
    cand_snaps: &[RankSnapshot],
) -> Option<Attribution> {
    let div = d.first_divergence.as_ref()?;
    let SiteChanges {
        by_site,
        ranks_compared,
        seg_counts,
        lines_by_site,
    } = changes_per_site(baseline, candidate, base_snaps, cand_snaps);
    if ranks_compared == 0 {
        return None;
    }
    let clock = clock_note(candidate, cand_snaps);
    let mut sites = site_shares(by_site, &lines_by_site);
    sites.sort_by_key(|s| {
        (
            s.phase != Some(div.phase),
            std::cmp::Reverse(
                (s.delta_reserved.median.abs() + s.delta_allocated.median.abs()) as i64,
            ),
        )
    });
    let allocator_delta_reserved = sites
        .iter()
        .filter(|s| s.phase == Some(div.phase))
        .map(|s| ByteDelta(s.delta_reserved.median as i64))
        .fold(ByteDelta::ZERO, |sum, d| sum + d);
    let fig = d
        .figures
        .iter()
        .find(|f| f.phase == div.phase && f.figure == div.figure);
    // The log figure's sign: a usage figure grows with memory taken, a free figure shrinks.
    let driver_delta = fig.filter(|f| f.is_bytes).map(|f| {
        let v = ByteDelta(f.delta.median.round() as i64);
        if f.figure.name().starts_with("avail") {
            -v
        } else {
            v
        }
    });
    let residual = driver_delta.map(|dd| dd - allocator_delta_reserved);
    // Segments that are new because of something in another phase (a KV pool of another
    // size) are not this phase's story.
    let in_phase = |site: &str| {
        sites
            .iter()
            .find(|s| s.site == site)
            .is_none_or(|s| s.phase == Some(div.phase))
    };
    let new_segments = seg_counts
        .into_iter()
        .filter(|(site, v)| v.len() == ranks_compared && in_phase(site))
        .map(|(site, v)| {
            let (n, b) = v[v.len() / 2];
            (site, n, Bytes(b))
        })
        .collect();
    Some(Attribution {
        phase: div.phase,
        ranks_compared,
        sites,
        allocator_delta_reserved,
        driver_delta,
        residual,
        log_resolution: fig.map(|f| f.resolution as u64),
        new_segments,
        clock,
    })
}

/// What the snapshots of the ranks both runs have, clock-matched in the candidate, say
/// changed: per site, each rank's change; per site, the new segments' count and bytes;
/// each site's source lines.
struct SiteChanges {
    by_site: BTreeMap<String, Vec<RankSiteChange>>,
    ranks_compared: usize,
    seg_counts: BTreeMap<String, Vec<(u64, u64)>>,
    lines_by_site: BTreeMap<String, Vec<i64>>,
}

/// Compares each candidate snapshot with the baseline's of the same rank, site by site,
/// and places each changed site in the phase where it first allocated.
fn changes_per_site(
    baseline: &Run,
    candidate: &Run,
    base_snaps: &[RankSnapshot],
    cand_snaps: &[RankSnapshot],
) -> SiteChanges {
    let rule = SiteRule::default();
    let mut by_site: BTreeMap<String, Vec<RankSiteChange>> = BTreeMap::new();
    let mut ranks_compared = 0;
    let mut seg_counts: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    // Source lines per site, from the first candidate summary that has the site.
    let mut lines_by_site: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for c in cand_snaps {
        let Some(b) = base_snaps.iter().find(|b| b.rank == c.rank) else {
            continue;
        };
        let Some(rr) = candidate.rank(&c.rank) else {
            continue;
        };
        let Some(offset) = clock_offset_us(rr, &c.snapshot, &candidate.frame_phases) else {
            continue;
        };
        ranks_compared += 1;
        let (sb, sc) = (
            snap::summarize(&b.snapshot, &rule),
            snap::summarize(&c.snapshot, &rule),
        );
        let md = snap::diff(&sb, &sc);
        for site in &sc.sites {
            lines_by_site
                .entry(site.site.clone())
                .or_insert_with(|| site.lines.clone());
        }
        let first_c = first_alloc_time_by_site(&c.snapshot, &rule);
        let first_b = first_alloc_time_by_site(&b.snapshot, &rule);
        let base_rr = baseline.rank(&b.rank);
        let base_offset =
            base_rr.and_then(|r| clock_offset_us(r, &b.snapshot, &baseline.frame_phases));
        for ch in md.only_a.iter().chain(&md.only_b).chain(&md.changed) {
            if ch.delta_reserved == ByteDelta::ZERO && ch.delta_allocated == ByteDelta::ZERO {
                continue;
            }
            let phase = match first_c.get(&ch.site) {
                Some(t) => t.checked_sub(offset).and_then(|t| phase_at(rr, t)),
                None => match (first_b.get(&ch.site), base_rr, base_offset) {
                    (Some(t), Some(br), Some(o)) => t.checked_sub(o).and_then(|t| phase_at(br, t)),
                    _ => None,
                },
            };
            let blocks = sc
                .sites
                .iter()
                .find(|s| s.site == ch.site)
                .map_or(0, |s| s.blocks);
            by_site.entry(ch.site.clone()).or_default().push((
                phase,
                ch.delta_reserved.get(),
                ch.delta_allocated.get(),
                blocks,
            ));
        }
        let mut per: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for sg in &md.new_segments {
            let e = per.entry(sg.key.site.clone()).or_default();
            e.0 += sg.count;
            e.1 += sg.bytes.get();
        }
        for (k, v) in per {
            seg_counts.entry(k).or_default().push(v);
        }
    }
    SiteChanges {
        by_site,
        ranks_compared,
        seg_counts,
        lines_by_site,
    }
}

/// Each site's changes across ranks, summarised: the phase most ranks place it in and the
/// spread of its deltas, labelled with its source lines.
fn site_shares(
    by_site: BTreeMap<String, Vec<RankSiteChange>>,
    lines_by_site: &BTreeMap<String, Vec<i64>>,
) -> Vec<SiteShare> {
    by_site
        .into_iter()
        .filter_map(|(site, v)| {
            // The phase most ranks agree on.
            let mut votes: BTreeMap<Option<Phase>, usize> = BTreeMap::new();
            for x in &v {
                *votes.entry(x.0).or_default() += 1;
            }
            let phase = votes
                .into_iter()
                .max_by_key(|(_, n)| *n)
                .and_then(|(p, _)| p);
            let mut res: Vec<f64> = v.iter().map(|x| x.1 as f64).collect();
            let mut all: Vec<f64> = v.iter().map(|x| x.2 as f64).collect();
            let mut blocks: Vec<f64> = v.iter().map(|x| x.3 as f64).collect();
            let lines = lines_by_site.get(&site).cloned().unwrap_or_default();
            Some(SiteShare {
                label: site_label(&site, &lines),
                site,
                phase,
                ranks: v.len(),
                delta_reserved: Spread::of(&mut res)?,
                delta_allocated: Spread::of(&mut all)?,
                blocks: Spread::of(&mut blocks).map_or(0, |s| s.median as u64),
            })
        })
        .collect()
}

/// One failing rank's OOM as its snapshot records it: the request, the code that made it,
/// and who else allocates there.
#[derive(Clone, Debug, PartialEq)]
pub struct OomSite {
    pub(crate) rank: Rank,
    /// The OOM as the snapshot records it.
    pub analysis: crate::snapshot::oom::OomAnalysis,
    /// The other candidate ranks with a snapshot, and those of them that allocate at the
    /// site (an OOM entry of their own does not count).
    pub(crate) other_ranks: Vec<Rank>,
    /// Those of `other_ranks` that allocate at the site.
    pub others_allocating: Vec<Rank>,
    /// Whether a baseline snapshot allocates at the site; `None` without baseline snapshots.
    pub baseline_allocates: Option<bool>,
    /// The cap the rank's OOM message printed (`14.00 GiB allowed`), when it did.
    pub(crate) allowed: Option<u64>,
}

impl OomSite {
    /// No other rank and not the baseline allocate here: a stray allocation of this rank.
    pub fn only_here(&self) -> bool {
        !self.other_ranks.is_empty()
            && self.others_allocating.is_empty()
            && self.baseline_allocates != Some(true)
    }
}

/// What the snapshots say when a run failed, whether or not a log figure moved.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SnapshotEvidence {
    /// Candidate ranks whose snapshot holds an `oom` entry, in rank order.
    pub oom_sites: Vec<OomSite>,
    /// `allocator_settings` that differ between the runs (first snapshot of each).
    pub(crate) allocator_settings: Vec<crate::model::config::AllocatorSettingChange>,
    /// Whether both runs had a snapshot to compare settings from.
    pub(crate) allocator_settings_compared: bool,
    /// The first fragmented rank's baseline counterpart: free space at its dump.
    pub(crate) baseline_free: Option<(Rank, crate::snapshot::oom::FreeSpace)>,
}

impl SnapshotEvidence {
    /// The ranks whose OOM the snapshot shows as fragmentation.
    pub(crate) fn fragmented(&self) -> impl Iterator<Item = &OomSite> {
        self.oom_sites
            .iter()
            .filter(|o| o.analysis.fragmentation.is_some())
    }
}

/// The OOM evidence of every candidate snapshot that recorded one, and the allocator
/// settings of the two runs compared.
pub fn snapshot_evidence(
    candidate: &Run,
    base_snaps: &[RankSnapshot],
    cand_snaps: &[RankSnapshot],
) -> SnapshotEvidence {
    use crate::snapshot::oom;
    let rule = SiteRule::default();
    let mut ev = SnapshotEvidence::default();
    let mut cands: Vec<&RankSnapshot> = cand_snaps.iter().collect();
    cands.sort_by(|a, b| a.rank.cmp(&b.rank));
    let mut bases: Vec<&RankSnapshot> = base_snaps.iter().collect();
    bases.sort_by(|a, b| a.rank.cmp(&b.rank));
    let analyses: Vec<Option<oom::OomAnalysis>> = cands
        .iter()
        .map(|c| oom::analyse(&c.snapshot, &rule).into_iter().next())
        .collect();
    // Sites are gathered only when some rank failed: they cost a pass over each trace.
    let any_oom = analyses.iter().any(Option::is_some);
    let sites_of = |v: &[&RankSnapshot]| -> Vec<std::collections::HashSet<String>> {
        if any_oom {
            v.iter()
                .map(|s| oom::allocation_sites(&s.snapshot, &rule))
                .collect()
        } else {
            Vec::new()
        }
    };
    let cand_sites = sites_of(&cands);
    let base_sites = sites_of(&bases);
    for ((c, analysis), _) in cands.iter().zip(analyses).zip(&cand_sites) {
        let Some(analysis) = analysis else {
            continue;
        };
        let others: Vec<(&&RankSnapshot, &std::collections::HashSet<String>)> = cands
            .iter()
            .zip(&cand_sites)
            .filter(|(o, _)| o.rank != c.rank)
            .collect();
        let others_allocating = others
            .iter()
            .filter(|(_, sites)| sites.contains(&analysis.site))
            .map(|(o, _)| o.rank.clone())
            .collect();
        let baseline_allocates = (!bases.is_empty()).then(|| {
            base_sites
                .iter()
                .any(|sites| sites.contains(&analysis.site))
        });
        let others: Vec<&&RankSnapshot> = others.into_iter().map(|(o, _)| o).collect();
        let allowed = candidate
            .rank(&c.rank)
            .and_then(|rr| rr.failure.as_ref())
            .and_then(|f| f.fields.get("allowed_bytes"))
            .and_then(|v| v.as_bytes())
            .and_then(|b| u64::try_from(b).ok());
        ev.oom_sites.push(OomSite {
            rank: c.rank.clone(),
            analysis,
            other_ranks: others.iter().map(|o| o.rank.clone()).collect(),
            others_allocating,
            baseline_allocates,
            allowed,
        });
    }
    let first_fragmented = ev.fragmented().next().map(|f| f.rank.clone());
    if let Some(rank) = first_fragmented {
        ev.baseline_free = bases
            .iter()
            .find(|b| b.rank == rank)
            .map(|b| (rank, oom::free_space_at_dump(&b.snapshot)));
    }
    if let (Some(b), Some(c)) = (bases.first(), cands.first()) {
        ev.allocator_settings_compared = true;
        ev.allocator_settings = crate::model::config::diff_allocator_settings(
            &b.snapshot.allocator_settings,
            &c.snapshot.allocator_settings,
        );
    }
    ev
}

/// What the reader of a diff should know about the snapshots.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SnapshotNote {
    /// A snapshot that could not be read or matched, in the loader's words.
    Unusable(String),
    /// How one run's snapshots were matched to its ranks and its log clock.
    Matched {
        side: Side,
        ranks: Option<RankMatchNote>,
        clock: Option<ClockNote>,
    },
    /// A log figure diverged but one run has no snapshots: no allocation site is named.
    NotAttributed,
}

/// The snapshot notes of a diff: the loader's errors, how each run's snapshots were
/// matched, and whether the divergence went unattributed for want of snapshots.
pub(crate) fn snapshot_notes(
    baseline: &Run,
    candidate: &Run,
    d: &RunDiff,
    attribution: Option<&Attribution>,
    base_snaps: &[RankSnapshot],
    cand_snaps: &[RankSnapshot],
    errors: Vec<String>,
) -> Vec<SnapshotNote> {
    let mut notes: Vec<SnapshotNote> = errors.into_iter().map(SnapshotNote::Unusable).collect();
    for (side, run, snaps) in [
        (Side::Baseline, baseline, base_snaps),
        (Side::Candidate, candidate, cand_snaps),
    ] {
        let ranks = rank_match_note(snaps);
        // The attribution matched the candidate's clocks already (each match walks the
        // snapshot's whole trace).
        let clock = match (side, attribution) {
            (Side::Candidate, Some(a)) => a.clock.clone(),
            _ => clock_note(run, snaps),
        };
        if ranks.is_some() || clock.is_some() {
            notes.push(SnapshotNote::Matched { side, ranks, clock });
        }
    }
    if attribution.is_none()
        && d.first_divergence.is_some()
        && (base_snaps.is_empty() || cand_snaps.is_empty())
    {
        notes.push(SnapshotNote::NotAttributed);
    }
    notes
}
