//! What the views show that analysis computes, computed once when the runs arrive
//! ([`analyse`]): the run's report and lanes, the aggregate phase bands, the diff against
//! the baseline with its snapshot evidence, and each rank's snapshot reduced to what the
//! Memory view draws.

use std::collections::BTreeSet;

use crate::analysis::attribute::{
    clock_offset_us, Attribution, RankSnapshot, SnapshotEvidence, SnapshotNote,
};
use crate::analysis::diff::{diff_with, RunDiff};
use crate::analysis::lanes::{lanes_of, parts_of, Lane};
use crate::model::{Phase, Run};
use crate::report::{DiffReport, RunReport};
use crate::snapshot::inspect::{summarize, SiteRule};
use crate::snapshot::site::site_label;
use crate::tui::layout::time_label;

/// One phase across every rank, for the Timeline's aggregate rows (`a`): when the first
/// rank entered it, and when the first, the median and the last rank left it, so a run of
/// a thousand ranks reads as six rows. Times in seconds since the run started.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseBand {
    /// Which phase.
    pub phase: Phase,
    /// Ranks that were in the phase.
    pub ranks: usize,
    /// When the first rank entered it.
    pub first_start: f64,
    /// When the first rank left it.
    pub first_end: f64,
    /// The lower median of the ends (of an even count, the earlier of the middle two).
    pub median_end: f64,
    /// When the last rank left it.
    pub last_end: f64,
    /// Ranks whose phase never finished (their end is where they failed or fell silent).
    pub unfinished: usize,
    /// Ranks called stragglers in this phase.
    pub stragglers: usize,
    /// Ranks whose failure ended them in this phase.
    pub failed: usize,
}

/// The row's text lives with the state, not the widget: `App::fit_scale` is sized by it,
/// so that the figures never cover a bar.
impl PhaseBand {
    /// What an aggregate row writes beside its bar: the counts and ends, the stragglers
    /// (`1!`) and the failures (`✗8`).
    pub(crate) fn texts(&self) -> (String, Option<String>, Option<String>) {
        let plural = if self.ranks == 1 { "" } else { "s" };
        let mut text = if self.phase == crate::model::Phase::Ready {
            format!(" {} rank{plural}", self.ranks)
        } else {
            format!(
                " {} rank{plural}, ends {} / {} / {}",
                self.ranks,
                time_label(self.first_end),
                time_label(self.median_end),
                time_label(self.last_end)
            )
        };
        if self.unfinished > 0 {
            text.push_str(&format!(", {} unfinished", self.unfinished));
        }
        let late = (self.stragglers > 0).then(|| format!(" {}!", self.stragglers));
        let failed = (self.failed > 0).then(|| format!(" ✗{}", self.failed));
        (text, late, failed)
    }

    /// Columns an aggregate row's figures take.
    pub(crate) fn text_len(&self) -> i64 {
        let (text, late, failed) = self.texts();
        [Some(&text), late.as_ref(), failed.as_ref()]
            .into_iter()
            .flatten()
            .map(|t| crate::base::text::columns(t) as i64)
            .sum()
    }
}

fn bands_of(lanes: &[Lane]) -> Vec<PhaseBand> {
    Phase::ALL
        .into_iter()
        .filter_map(|phase| {
            let mut ends = Vec::new();
            let mut first_start = f64::INFINITY;
            let (mut unfinished, mut stragglers, mut failed) = (0, 0, 0);
            for l in lanes {
                // A phase a rank entered twice (a restart within the attempt) counts once,
                // by its last span.
                let Some(s) = l.segments.iter().rfind(|s| s.phase == phase) else {
                    continue;
                };
                first_start = first_start.min(s.start);
                ends.push(s.end);
                if !s.complete && phase != Phase::Ready {
                    unfinished += 1;
                }
                if l.straggler_in.contains(&phase) {
                    stragglers += 1;
                }
                if l.failure.is_some() && l.segments.last().is_some_and(|last| last.phase == phase)
                {
                    failed += 1;
                }
            }
            if ends.is_empty() {
                return None;
            }
            ends.sort_by(f64::total_cmp);
            Some(PhaseBand {
                phase,
                ranks: ends.len(),
                first_start,
                first_end: ends[0],
                median_end: ends[(ends.len() - 1) / 2],
                last_end: ends[ends.len() - 1],
                unfinished,
                stragglers,
                failed,
            })
        })
        .collect()
}

/// The label column the aggregate rows need for the longest phase name (`weight_load`).
pub(super) const BAND_LABEL_W: u16 = 13;

/// One allocation site of a rank's snapshot, as the Memory view lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteRow {
    /// The function, as the diff's attribution names sites: `init_custom_ar`
    pub(crate) site: String,
    /// `init_custom_ar (model_runner.py:85-87)`
    pub(crate) label: String,
    pub(crate) allocated: u64,
    pub(crate) reserved: u64,
}

/// A rank's PyTorch snapshot reduced to what the Memory view draws, times in seconds
/// since the run started (on the log's clock).
#[derive(Clone, Debug, PartialEq)]
pub struct SnapMem {
    pub(crate) path: String,
    /// (time, allocated, reserved), in time order.
    pub(crate) series: Vec<(f64, u64, u64)>,
    pub(crate) peak: Option<(f64, u64)>,
    /// First out-of-memory: time, bytes asked for, site.
    pub(crate) oom: Option<(f64, u64, String)>,
    /// Largest live allocation first.
    pub(crate) sites: Vec<SiteRow>,
    /// False when no time-zone offset could be fitted: times are then counted from the
    /// snapshot's first entry, which is not the run's start.
    pub clock_matched: bool,
}

/// Sites kept per rank; the view shows as many as fit, at least three.
const SITES_KEPT: usize = 8;

fn snap_mem(run: &Run, rs: &RankSnapshot) -> Option<SnapMem> {
    let rr = run.rank(&rs.rank)?;
    let sum = summarize(&rs.snapshot, &SiteRule::default());
    // `clock_offset_us` subtracts the log's first stamp from the trace's first time
    // unchecked; a trace time from a damaged file could overflow it, so it is asked only
    // when that difference exists.
    let first_log = rr
        .phases
        .iter()
        .filter_map(|p| p.start)
        .min()
        .map(|t| t.and_utc().timestamp_micros());
    let fits = match (sum.first_time_us, first_log) {
        (Some(a), Some(b)) => a.checked_sub(b).is_some(),
        _ => false,
    };
    let offset = if fits {
        clock_offset_us(rr, &rs.snapshot, &run.frame_phases)
    } else {
        None
    };
    let start_us = run.start.map(|s| s.and_utc().timestamp_micros());
    // Snapshot µs → seconds since the run's first stamp. Without a fitted offset the
    // snapshot's own first entry stands in for the run start.
    let base = match (offset, start_us) {
        (Some(o), Some(s)) => s.saturating_add(o),
        _ => sum.first_time_us.unwrap_or(0),
    };
    // Trace times come from the file: no value may overflow the subtraction.
    let t = |us: i64| us.saturating_sub(base) as f64 / 1e6;
    Some(SnapMem {
        path: rs.path.clone(),
        series: sum
            .series
            .iter()
            .map(|p| (t(p.time_us), p.allocated.get(), p.reserved.get()))
            .collect(),
        peak: sum
            .peak_reserved
            .as_ref()
            .map(|p| (t(p.time_us), p.bytes.get())),
        oom: sum
            .ooms
            .first()
            .map(|o| (t(o.time_us), o.requested.get(), o.site.clone())),
        sites: sum
            .sites
            .iter()
            .take(SITES_KEPT)
            .map(|s| SiteRow {
                site: s.site.clone(),
                label: site_label(&s.site, &s.lines),
                allocated: s.allocated.get(),
                reserved: s.reserved.get(),
            })
            .collect(),
        clock_matched: offset.is_some() && start_us.is_some(),
    })
}

/// What `rankscope diff` leads with, for the head of the Diff view: the configuration
/// changes and what the snapshots attribute the divergence (or the OOM) to. Computed once,
/// when both runs and their snapshots are loaded, by the functions `diff` uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiffFacts {
    /// `enable_custom_allreduce  False -> True`, environment and allocator settings.
    pub(crate) config: Vec<String>,
    /// Under the first divergence: the allocation sites it is attributed to and the
    /// residual.
    pub(crate) attribution: Vec<String>,
    /// The snapshots' cause (fragmentation): the cause when no log figure moved.
    pub(crate) snapshot_cause: Vec<String>,
    /// The failing ranks' OOM requests as their snapshots record them.
    pub(crate) oom_sites: Vec<String>,
    /// Snapshots that could not be read or matched, and how their clocks were matched.
    pub(crate) notes: Vec<String>,
    /// Allocation sites the divergence is attributed to (function name), with the change
    /// of memory reserved there (`+40 MiB`), for the Memory view to mark.
    pub(crate) culprits: Vec<(String, String)>,
}

/// The config section of `rankscope diff`, line by line, with the snapshots' allocator
/// settings.
fn config_lines(d: &RunDiff, ev: &SnapshotEvidence) -> Vec<String> {
    let mut out = crate::render::text::diff::config_lines(d, 30);
    out.extend(crate::render::text::diff::allocator_setting_lines(ev));
    out
}

impl DiffFacts {
    pub(crate) fn new(
        d: &RunDiff,
        attribution: Option<&Attribution>,
        ev: &SnapshotEvidence,
        notes: Vec<String>,
    ) -> DiffFacts {
        use crate::render::text::diff as dt;
        let attribution_rows: Vec<String> =
            attribution.map(dt::attribution_lines).unwrap_or_default();
        let snapshot_cause = dt::fragmentation_cause_lines(ev, d.first_divergence.is_some());
        let culprits = attribution
            .map(|a| {
                a.sites
                    .iter()
                    .filter(|s| s.phase == Some(a.phase))
                    .take(3)
                    .map(|s| {
                        (
                            s.site.clone(),
                            crate::base::units::human_delta(s.delta_reserved.median as i64),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        DiffFacts {
            config: config_lines(d, ev),
            attribution: attribution_rows,
            snapshot_cause,
            oom_sites: dt::oom_site_lines(ev),
            notes,
            culprits,
        }
    }
}

/// What was read beside the runs: the ranks' snapshots (as `load::load_snapshots`
/// returns them) and those that could not be used.
#[derive(Default)]
pub struct Snapshots<'a> {
    /// The candidate run's snapshots, matched to ranks.
    pub run: &'a [RankSnapshot],
    /// Snapshots that could not be used, as `path: why`.
    pub errors: Vec<String>,
    /// The baseline's, when they were read (`tui --vs`): the diff attributes the
    /// divergence with both runs'. `None` leaves the Diff view's head to the config
    /// changes.
    pub baseline: Option<&'a [RankSnapshot]>,
    /// The baseline's snapshots that could not be used, worded for the Diff view's notes.
    pub baseline_notes: Vec<String>,
    /// How the baseline is compared (`tui --time-tolerance`).
    pub diff: crate::analysis::diff::DiffOptions,
}

/// What the TUI shows that analysis computes, computed once when the runs arrive; the
/// views read it and compute no statistics.
pub struct Analysed {
    /// What analysis says of the run: the header's counts are its outcome's.
    pub(crate) report: RunReport,
    pub(crate) lanes: Vec<Lane>,
    /// The phases across all ranks, drawn instead of the lanes while `aggregate`.
    pub bands: Vec<PhaseBand>,
    pub(crate) diff: Option<RunDiff>,
    /// The head of the Diff view; without baseline snapshots, the config changes only.
    pub(crate) diff_facts: Option<DiffFacts>,
    /// Per rank, in `run.ranks` order; empty when the run has no snapshots.
    pub snaps: Vec<Option<SnapMem>>,
    /// The most any rank's snapshot holds: the Memory chart's scale, shared by every rank
    /// so that switching ranks compares heights.
    pub(crate) snap_max: u64,
    /// Per rank, in `run.ranks` order: the figures the Memory table stacks ([`PARTS`]).
    pub(crate) mem_parts: Vec<[Option<(i64, f64)>; 5]>,
    /// The largest stack of any rank (at least 1): the bars' common scale.
    pub(crate) mem_max: i64,
    /// The kinds of failure in the run (lanes' labels), for the header.
    #[expect(dead_code, reason = "never read; `pub` hid that until #28")]
    pub(crate) failed_kinds: Vec<&'static str>,
}

/// Every analysis the TUI asks for, in one place: the run's report (stragglers), the
/// diff against the baseline with its attribution and snapshot evidence, and the
/// snapshots' summaries, as `rankscope summary`, `diff` and `mem` compute them.
pub fn analyse(run: &Run, baseline: Option<&Run>, snaps: &Snapshots) -> Analysed {
    let report = RunReport::of(run);
    let lanes = lanes_of(run, &report);
    let bands = bands_of(&lanes);
    let diff = baseline.map(|b| diff_with(b, run, snaps.diff));
    let diff_facts = match (baseline, &diff) {
        (Some(b), Some(d)) => Some(diff_facts(b, run, d, snaps)),
        _ => None,
    };
    let mut mem: Vec<Option<SnapMem>> = run
        .ranks
        .iter()
        .map(|r| {
            snaps
                .run
                .iter()
                .find(|s| s.rank == r.rank)
                .and_then(|s| snap_mem(run, s))
        })
        .collect();
    if mem.iter().all(Option::is_none) {
        mem.clear();
    }
    let snap_max = mem
        .iter()
        .flatten()
        .flat_map(|s| s.series.iter().map(|p| p.2.max(p.1)))
        .max()
        .unwrap_or(0)
        .max(1);
    let mem_parts: Vec<_> = run.ranks.iter().map(parts_of).collect();
    let mem_max = mem_parts
        .iter()
        .map(|p| p.iter().flatten().map(|v| v.0.max(0)).sum::<i64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let failed_kinds = lanes
        .iter()
        .filter_map(|l| l.failure.map(|f| f.0))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    Analysed {
        report,
        lanes,
        bands,
        diff,
        diff_facts,
        snaps: mem,
        snap_max,
        mem_parts,
        mem_max,
        failed_kinds,
    }
}

/// The head of the Diff view; with the snapshots of both runs, what they attribute the
/// divergence (or the OOM) to: `diff`'s own report (`DiffReport`), so the two agree.
fn diff_facts(base: &Run, run: &Run, d: &RunDiff, snaps: &Snapshots) -> DiffFacts {
    let Some(base_snaps) = snaps.baseline else {
        return DiffFacts::new(d, None, &SnapshotEvidence::default(), Vec::new());
    };
    let report = DiffReport::with_diff(
        d.clone(),
        base,
        run,
        base_snaps,
        snaps.run,
        snaps.baseline_notes.clone(),
    );
    // How each run's snapshots were matched to ranks and clock is left to the Memory
    // view, which shows each rank's snapshot; the rest are `diff`'s notes.
    let notes = report
        .notes
        .iter()
        .filter(|n| !matches!(n, SnapshotNote::Matched { .. }))
        .map(crate::render::text::diff::snapshot_note)
        .collect();
    DiffFacts::new(
        &report.diff,
        report.attribution.as_ref(),
        &report.evidence,
        notes,
    )
}
