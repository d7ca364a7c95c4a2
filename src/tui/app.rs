//! TUI state and the one function that changes it. No I/O and no drawing here, so every
//! screen can be reached in tests by feeding messages.

use std::collections::BTreeSet;

use crate::analysis::attribute::{
    clock_offset_us, Attribution, RankSnapshot, SnapshotEvidence, SnapshotNote,
};
use crate::analysis::diff::{diff_with, RunDiff};
pub use crate::analysis::lanes::{lanes_of, parts_of, seconds, Lane, Segment, PARTS};
use crate::base::event::{kind, Event, Rank};
use crate::grammar::Knowledge;
use crate::model::{Edge, Phase, Run};
use crate::report::{DiffReport, RunReport};
use crate::snapshot::inspect::{summarize, SiteRule};
use crate::snapshot::site::site_label;

use super::layout::time_label;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Timeline,
    Memory,
    Diff,
    Events,
}

impl View {
    pub fn name(self) -> &'static str {
        match self {
            View::Timeline => "Timeline",
            View::Memory => "Memory",
            View::Diff => "Diff",
            View::Events => "Events",
        }
    }
}

/// Which events the Events view lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindFilter {
    All,
    /// Events that open or close a phase (begin and end lines, not the lines inside one),
    /// and failures, which end the phase a rank was in.
    Phases,
    /// Out-of-memory, errors and warnings only.
    Problems,
}

impl KindFilter {
    pub fn name(self) -> &'static str {
        match self {
            KindFilter::All => "all kinds",
            KindFilter::Phases => "phase edges",
            KindFilter::Problems => "problems",
        }
    }
    fn next(self) -> KindFilter {
        match self {
            KindFilter::All => KindFilter::Phases,
            KindFilter::Phases => KindFilter::Problems,
            KindFilter::Problems => KindFilter::All,
        }
    }
    /// `know` says which events begin or end a phase: the grammars the run was read
    /// with, user grammars included.
    pub fn keeps(self, e: &Event, know: &Knowledge) -> bool {
        let failure = matches!(e.kind.as_str(), kind::OOM | kind::ERROR);
        match self {
            KindFilter::All => true,
            KindFilter::Phases => {
                failure || matches!(know.phase_of(e), Some((_, Edge::Begin | Edge::End)))
            }
            KindFilter::Problems => failure || e.kind == kind::WARNING,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Msg {
    Resize(u16, u16),
    Quit,
    /// Esc: closes the innermost overlay (help, search, detail); never quits, as q does.
    Back,
    /// `!`: the Events view on the root failure's line, its rank selected.
    GoRoot,
    NextView,
    PrevView,
    /// Columns to move the time cursor (negative: left).
    MoveTime(i32),
    TimeHome,
    TimeEnd,
    ZoomIn,
    ZoomOut,
    FitWidth,
    /// Ctrl-L: clear the terminal and draw everything again (after another program wrote
    /// over the screen).
    Redraw,
    /// Rows to move (negative: up): ranks in most views, events in the event list.
    Move(i32),
    /// Pages to scroll the event detail pane (negative: up).
    ScrollDetail(i32),
    /// Lines to scroll the event detail pane (negative: up).
    ScrollDetailLines(i32),
    /// Pages to scroll the Diff view (negative: up).
    ScrollDiff(i32),
    ToggleHelp,
    /// Timeline: one row per rank, or one row per phase across all ranks.
    ToggleAggregate,
    ToggleDetail,
    ToggleRankFilter,
    CycleKindFilter,
    SearchStart,
    SearchChar(char),
    SearchBackspace,
    SearchSubmit,
    NextMatch,
    PrevMatch,
}

/// One phase across every rank, for the Timeline's aggregate rows (`a`): when the first
/// rank entered it, and when the first, the median and the last rank left it, so a run of
/// a thousand ranks reads as six rows. Times in seconds since the run started.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseBand {
    pub phase: Phase,
    /// Ranks that were in the phase.
    pub ranks: usize,
    pub first_start: f64,
    pub first_end: f64,
    /// The lower median of the ends (of an even count, the earlier of the middle two).
    pub median_end: f64,
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
    pub fn texts(&self) -> (String, Option<String>, Option<String>) {
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
    pub fn text_len(&self) -> i64 {
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
const BAND_LABEL_W: u16 = 13;

/// One allocation site of a rank's snapshot, as the Memory view lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteRow {
    /// The function, as the diff's attribution names sites: `init_custom_ar`
    pub site: String,
    /// `init_custom_ar (model_runner.py:85-87)`
    pub label: String,
    pub allocated: u64,
    pub reserved: u64,
}

/// A rank's PyTorch snapshot reduced to what the Memory view draws, times in seconds
/// since the run started (on the log's clock).
#[derive(Clone, Debug, PartialEq)]
pub struct SnapMem {
    pub path: String,
    /// (time, allocated, reserved), in time order.
    pub series: Vec<(f64, u64, u64)>,
    pub peak: Option<(f64, u64)>,
    /// First out-of-memory: time, bytes asked for, site.
    pub oom: Option<(f64, u64, String)>,
    /// Largest live allocation first.
    pub sites: Vec<SiteRow>,
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
            .map(|p| (t(p.time_us), p.allocated, p.reserved))
            .collect(),
        peak: sum.peak_reserved.as_ref().map(|p| (t(p.time_us), p.bytes)),
        oom: sum
            .ooms
            .first()
            .map(|o| (t(o.time_us), o.requested, o.site.clone())),
        sites: sum
            .sites
            .iter()
            .take(SITES_KEPT)
            .map(|s| SiteRow {
                site: s.site.clone(),
                label: site_label(&s.site, &s.lines),
                allocated: s.allocated,
                reserved: s.reserved,
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
    pub config: Vec<String>,
    /// Under the first divergence: the allocation sites it is attributed to and the
    /// residual.
    pub attribution: Vec<String>,
    /// The snapshots' cause (fragmentation): the cause when no log figure moved.
    pub snapshot_cause: Vec<String>,
    /// The failing ranks' OOM requests as their snapshots record them.
    pub oom_sites: Vec<String>,
    /// Snapshots that could not be read or matched, and how their clocks were matched.
    pub notes: Vec<String>,
    /// Allocation sites the divergence is attributed to (function name), with the change
    /// of memory reserved there (`+40 MiB`), for the Memory view to mark.
    pub culprits: Vec<(String, String)>,
}

/// The config section of `rankscope diff`, line by line, with the snapshots' allocator
/// settings.
fn config_lines(d: &RunDiff, ev: &SnapshotEvidence) -> Vec<String> {
    let mut out = crate::render::text::diff::config_lines(d, 30);
    out.extend(crate::render::text::diff::allocator_setting_lines(ev));
    out
}

impl DiffFacts {
    pub fn new(
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

/// How far a scrolled pane can move: the rows it shows at once and the furthest first
/// line. Only the drawing code knows how its text wraps, so it measures (`ui::scroll_rooms`)
/// and the terminal loop hands the figures over with [`settle`] after every message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScrollRoom {
    pub page: u16,
    pub max: u16,
}

/// The scroll room of the Events view's detail pane and of the Diff view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScrollRooms {
    pub detail: ScrollRoom,
    pub diff: ScrollRoom,
}

pub struct App {
    pub run: Run,
    pub baseline: Option<Run>,
    /// Everything computed from the runs and snapshots, once (`analyse`).
    pub analysed: Analysed,
    /// First line of the Diff view shown (PgUp/PgDn); kept within the text by `settle`.
    pub diff_scroll: u16,
    pub aggregate: bool,
    pub color: bool,
    pub view: View,
    pub width: u16,
    pub height: u16,
    /// Width of the rank-name column, shared by drawing and cursor arithmetic.
    pub label_w: u16,
    /// `label_w` for the rank lanes; the aggregate rows widen it to fit phase names.
    pub rank_label_w: u16,
    /// Seconds from the first to the last time stamp of the run (at least 1).
    pub span_s: f64,
    pub cursor_s: f64,
    /// Seconds per column.
    pub scale: f64,
    /// Time at the left edge of the plot.
    pub offset_s: f64,
    pub rank_sel: usize,
    pub help: bool,
    pub detail: bool,
    /// First line of the detail pane shown; kept within the text by `settle`.
    pub detail_scroll: u16,
    /// As measured for the current state; see [`ScrollRooms`].
    pub rooms: ScrollRooms,
    /// Snapshots that could not be read or placed.
    pub snap_errors: Vec<String>,
    pub rank_filter: bool,
    pub kind_filter: KindFilter,
    /// What the run's grammars say its events mean (the phase-edge filter reads it).
    pub knowledge: Knowledge,
    /// Index into `visible_events()`.
    pub event_sel: usize,
    /// `Some` while the user types a search.
    pub search_input: Option<String>,
    pub search: String,
    pub status: String,
    pub quit: bool,
    /// Set by Ctrl-L: the terminal loop clears the screen before the next draw.
    pub redraw: bool,
    /// The Events view was shown (it opens on the root failure the first time only).
    pub events_seen: bool,
    /// A rank was selected by hand (↑↓ outside the Events view).
    pub rank_chosen: bool,
}

/// The loading screen's state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loading {
    pub what: String,
    pub stage: String,
    pub bytes: u64,
    pub total: Option<u64>,
    /// Frames drawn, for the spinner.
    pub tick: usize,
    /// Set when loading failed; the screen then says why and waits for q.
    pub error: Option<String>,
}

impl Loading {
    pub fn new(what: &str) -> Loading {
        Loading {
            what: what.to_string(),
            stage: "starting".into(),
            ..Loading::default()
        }
    }
}

/// What was read beside the runs: the ranks' snapshots (as `load::load_snapshots`
/// returns them) and those that could not be used.
#[derive(Default)]
pub struct Snapshots<'a> {
    pub run: &'a [RankSnapshot],
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
    pub report: RunReport,
    pub lanes: Vec<Lane>,
    /// The phases across all ranks, drawn instead of the lanes while `aggregate`.
    pub bands: Vec<PhaseBand>,
    pub diff: Option<RunDiff>,
    /// The head of the Diff view; without baseline snapshots, the config changes only.
    pub diff_facts: Option<DiffFacts>,
    /// Per rank, in `run.ranks` order; empty when the run has no snapshots.
    pub snaps: Vec<Option<SnapMem>>,
    /// The most any rank's snapshot holds: the Memory chart's scale, shared by every rank
    /// so that switching ranks compares heights.
    pub snap_max: u64,
    /// Per rank, in `run.ranks` order: the figures the Memory table stacks ([`PARTS`]).
    pub mem_parts: Vec<[Option<(i64, f64)>; 5]>,
    /// The largest stack of any rank (at least 1): the bars' common scale.
    pub mem_max: i64,
    /// The kinds of failure in the run (lanes' labels), for the header.
    pub failed_kinds: Vec<&'static str>,
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

impl App {
    /// The app for a run (and a baseline) read with the built-in grammars, without
    /// snapshots.
    pub fn new(run: Run, baseline: Option<Run>, color: bool) -> App {
        let know = crate::grammar::builtin_knowledge().clone();
        App::from_loaded(run, baseline, Snapshots::default(), know, color)
    }

    /// The app for the runs and snapshots as the loading worker read them; `knowledge`
    /// is what the grammars they were read with say their events mean.
    pub fn from_loaded(
        run: Run,
        baseline: Option<Run>,
        snaps: Snapshots,
        knowledge: Knowledge,
        color: bool,
    ) -> App {
        let analysed = analyse(&run, baseline.as_ref(), &snaps);
        let span_s = run
            .events
            .iter()
            .filter_map(|e| seconds(run.start, e.ts))
            .fold(0.0, f64::max)
            .max(1.0);
        let longest = (analysed.lanes.iter())
            .map(|l| l.rank.to_string().chars().count())
            .max()
            .unwrap_or(4);
        let label_w = (longest + 3).clamp(6, 20) as u16;
        let mut app = App {
            run,
            baseline,
            analysed,
            diff_scroll: 0,
            aggregate: false,
            color,
            view: View::Timeline,
            width: 80,
            height: 24,
            label_w,
            rank_label_w: label_w,
            span_s,
            cursor_s: 0.0,
            scale: 1.0,
            offset_s: 0.0,
            rank_sel: 0,
            help: false,
            detail: false,
            detail_scroll: 0,
            rooms: ScrollRooms::default(),
            snap_errors: snaps.errors,
            rank_filter: true,
            kind_filter: KindFilter::All,
            knowledge,
            event_sel: 0,
            search_input: None,
            search: String::new(),
            status: String::new(),
            quit: false,
            redraw: false,
            events_seen: false,
            rank_chosen: false,
        };
        app.fit();
        app.open_on_root();
        app
    }

    /// A failed run opens on its story's first line: the root rank selected and the cursor
    /// on its failure, so the timeline's footer shows the failing line from the first
    /// screen (the Events view, when first shown, opens on it too).
    fn open_on_root(&mut self) {
        let Some(rank) = self.root_rank().cloned() else {
            return;
        };
        let Some(lane) = self.analysed.lanes.iter().position(|l| l.rank == rank) else {
            return;
        };
        self.rank_sel = lane;
        if let Some((_, t)) = self.analysed.lanes[lane].failure {
            self.cursor_s = t.clamp(0.0, self.span_s);
            self.clamp_offset();
        }
    }

    /// What the diff attributes to this allocation site (by function name), if anything.
    pub fn culprit(&self, site: &str) -> Option<&str> {
        self.analysed
            .diff_facts
            .as_ref()?
            .culprits
            .iter()
            .find(|(s, _)| s == site)
            .map(|(_, what)| what.as_str())
    }

    pub fn has_snapshots(&self) -> bool {
        !self.analysed.snaps.is_empty()
    }

    pub fn selected_snap(&self) -> Option<&SnapMem> {
        self.analysed
            .snaps
            .get(self.rank_sel)
            .and_then(Option::as_ref)
    }

    pub fn views(&self) -> Vec<View> {
        let mut v = vec![View::Timeline, View::Memory];
        if self.analysed.diff.is_some() {
            v.push(View::Diff);
        }
        v.push(View::Events);
        v
    }

    pub fn plot_width(&self) -> u16 {
        self.width.saturating_sub(self.label_w).max(1)
    }

    pub fn selected_rank(&self) -> Option<&Rank> {
        self.analysed.lanes.get(self.rank_sel).map(|l| &l.rank)
    }

    /// Indices into `run.events` that the Events view lists, in time order.
    pub fn visible_events(&self) -> Vec<usize> {
        let want = if self.rank_filter {
            self.selected_rank()
        } else {
            None
        };
        self.run
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| want.is_none_or(|w| e.rank.as_ref() == Some(w)))
            .filter(|(_, e)| self.kind_filter.keeps(e, &self.knowledge))
            .map(|(i, _)| i)
            .collect()
    }

    pub fn selected_event(&self) -> Option<&Event> {
        let v = self.visible_events();
        v.get(self.event_sel).and_then(|&i| self.run.events.get(i))
    }

    pub fn matches(&self, e: &Event) -> bool {
        if self.search.is_empty() {
            return false;
        }
        let q = self.search.to_lowercase();
        e.message.to_lowercase().contains(&q)
            || e.kind.to_lowercase().contains(&q)
            || e.detail
                .as_ref()
                .is_some_and(|d| d.to_lowercase().contains(&q))
    }

    /// Events of the selected rank nearest the cursor, in time order.
    pub fn events_near_cursor(&self, n: usize) -> Vec<(f64, &Event)> {
        let Some(rank) = self.selected_rank() else {
            return Vec::new();
        };
        let mut near: Vec<(f64, &Event)> = self
            .run
            .events
            .iter()
            .filter(|e| e.rank.as_ref() == Some(rank))
            .filter_map(|e| seconds(self.run.start, e.ts).map(|t| (t, e)))
            .collect();
        near.sort_by(|a, b| {
            (a.0 - self.cursor_s)
                .abs()
                .total_cmp(&(b.0 - self.cursor_s).abs())
        });
        near.truncate(n);
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        near
    }

    /// The Timeline footer's events: the `n` nearest the cursor, but never without the
    /// selected rank's failure line, which replaces the farthest of them when it is not
    /// among them.
    pub fn footer_events(&self, n: usize) -> Vec<(f64, &Event)> {
        let mut near = self.events_near_cursor(n);
        let failure = self
            .run
            .ranks
            .get(self.rank_sel)
            .and_then(|r| r.failure.as_ref())
            .and_then(|f| f.origin.as_ref());
        let Some(origin) = failure else {
            return near;
        };
        if n == 0 || near.iter().any(|(_, e)| &e.origin == origin) {
            return near;
        }
        let Some(failed) = self.run.events.iter().find(|e| &e.origin == origin) else {
            return near;
        };
        let Some(t) = seconds(self.run.start, failed.ts) else {
            return near;
        };
        if near.len() >= n {
            // The farthest from the cursor is at one end of the time-ordered list.
            let first = near.first().map_or(0.0, |x| (x.0 - self.cursor_s).abs());
            let last = near.last().map_or(0.0, |x| (x.0 - self.cursor_s).abs());
            if first > last {
                near.remove(0);
            } else {
                near.pop();
            }
        }
        near.push((t, failed));
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        near
    }

    /// Widens the time axis to `to_s` (watch's board as "now" moves on); a fitted view
    /// stays fitted.
    pub fn extend_span(&mut self, to_s: f64) {
        self.relayout(|app| app.span_s = app.span_s.max(to_s));
    }

    fn fit(&mut self) {
        self.scale = self.fit_scale();
        self.offset_s = 0.0;
        self.cursor_s = self.cursor_s.clamp(0.0, self.span_s);
    }

    /// Seconds per column when the whole run fits the width: the widest zoom, since
    /// zooming out further would only add empty columns after the end.
    ///
    /// The aggregate rows (`a`) write their figures beside the bar, never over it: a row
    /// whose figures fit neither before its bar nor after it at that scale widens the fit
    /// until they fit after it, so that the fitted view shows every figure whole.
    pub fn fit_scale(&self) -> f64 {
        let mut scale = (self.span_s / fit_cols(self.plot_width())).max(MIN_SCALE);
        if self.aggregate {
            let cols = f64::from(self.plot_width());
            for b in &self.analysed.bands {
                let len = b.text_len() as f64;
                if (b.first_start / scale).floor() - len < 0.0 && cols > len + 1.0 {
                    scale = scale.max(b.last_end / (cols - len - 1.0));
                }
            }
        }
        scale
    }

    fn is_fit(&self) -> bool {
        self.offset_s == 0.0 && (self.scale - self.fit_scale()).abs() < 1e-9
    }

    /// Changes what the plot's width depends on, keeping a fitted view fitted and no
    /// zoom wider than the fitted one.
    fn relayout(&mut self, change: impl FnOnce(&mut App)) {
        let was_fit = self.is_fit();
        change(self);
        if was_fit || self.scale > self.fit_scale() {
            self.fit();
        } else {
            self.clamp_offset();
        }
    }

    fn clamp_offset(&mut self) {
        let visible = f64::from(self.plot_width()) * self.scale;
        let max_off = (self.span_s - visible).max(0.0);
        self.offset_s = self.offset_s.clamp(0.0, max_off);
        // Keep the cursor on screen.
        if self.cursor_s < self.offset_s {
            self.offset_s = self.cursor_s;
        }
        let last_col = f64::from(self.plot_width().saturating_sub(1)) * self.scale;
        if self.cursor_s > self.offset_s + last_col + self.scale * 0.5 {
            self.offset_s = self.cursor_s - last_col;
        }
    }

    fn zoom(&mut self, factor: f64) {
        let fit = self.fit_scale();
        let to = (self.scale * factor).clamp(MIN_SCALE, fit);
        if (to - self.scale).abs() < 1e-12 {
            self.status = if factor > 1.0 {
                "zoomed out to the whole run".into()
            } else {
                format!("finest zoom: {MIN_SCALE} s per column")
            };
            return;
        }
        if to == fit {
            // Back at the widest zoom: exactly the fitted view, so that `=` and `-` agree.
            self.fit();
            return;
        }
        let col = (self.cursor_s - self.offset_s) / self.scale;
        self.scale = to;
        self.offset_s = self.cursor_s - col * self.scale;
        self.clamp_offset();
    }

    /// The Events view on the root failure's event, its rank selected (all ranks listed
    /// when the event names none); false when the run has no root failure.
    pub fn go_root(&mut self) -> bool {
        let Some((r, f)) = self.run.root_failure() else {
            return false;
        };
        let (rank, origin) = (r.rank.clone(), f.origin.clone());
        if let Some(lane) = self.analysed.lanes.iter().position(|l| l.rank == rank) {
            self.rank_sel = lane;
        }
        self.view = View::Events;
        self.kind_filter = KindFilter::All;
        self.detail_scroll = 0;
        let find = |app: &App| {
            let v = app.visible_events();
            origin
                .as_ref()
                .and_then(|o| v.iter().position(|&i| app.run.events[i].origin == *o))
        };
        self.rank_filter = true;
        let mut at = find(self);
        if at.is_none() {
            self.rank_filter = false;
            at = find(self);
        }
        if at.is_none() {
            self.rank_filter = true;
        }
        self.event_sel = at.unwrap_or(0);
        true
    }

    /// The rank whose own failure came first, if any.
    pub fn root_rank(&self) -> Option<&Rank> {
        self.run.root_failure().map(|(r, _)| &r.rank)
    }

    fn move_rows(&mut self, by: i32) {
        if self.view == View::Events {
            let n = self.visible_events().len();
            self.event_sel = step(self.event_sel, by, n);
            self.detail_scroll = 0;
        } else {
            self.rank_sel = step(self.rank_sel, by, self.analysed.lanes.len());
            self.event_sel = 0;
            self.rank_chosen = true;
        }
    }

    /// Moves to the next (or previous) matching event; `include_current` lets a fresh
    /// search stop on the line the user is already on.
    fn jump_match(&mut self, forward: bool, include_current: bool) {
        let v = self.visible_events();
        if v.is_empty() || self.search.is_empty() {
            return;
        }
        let n = v.len();
        let cur = self.event_sel.min(n - 1);
        let first = if include_current { 0 } else { 1 };
        for k in first..=n {
            let i = if forward {
                (cur + k) % n
            } else {
                (cur + n - k % n) % n
            };
            if let Some(e) = v.get(i).and_then(|&j| self.run.events.get(j)) {
                if self.matches(e) {
                    self.event_sel = i;
                    self.detail_scroll = 0;
                    self.status.clear();
                    return;
                }
            }
        }
        self.status = format!("no match for \u{201c}{}\u{201d}", self.search);
    }
}

/// Columns the whole run spreads over when fitted: room is left after the end for the
/// last failure marker and for phases pushed right by shared columns.
fn fit_cols(plot_width: u16) -> f64 {
    f64::from(plot_width.saturating_sub(8).max(1))
}

/// Below this, columns are finer than any log prints time.
const MIN_SCALE: f64 = 0.01;

fn step(cur: usize, by: i32, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let next = cur as i64 + i64::from(by);
    next.clamp(0, len as i64 - 1) as usize
}

fn scroll_detail(app: &mut App, by: i64) {
    let to = i64::from(app.detail_scroll) + by;
    app.detail_scroll = to.clamp(0, i64::from(app.rooms.detail.max)) as u16;
}

/// Takes the scroll room measured for the state `update` left, and keeps both panes
/// within their text: a taller pane may show the whole text, and a long PgDn run then
/// needs no long PgUp run back.
pub fn settle(app: &mut App, rooms: ScrollRooms) {
    app.rooms = rooms;
    app.detail_scroll = app.detail_scroll.min(rooms.detail.max);
    app.diff_scroll = app.diff_scroll.min(rooms.diff.max);
}

pub fn update(app: &mut App, msg: Msg) {
    // A status message answers the key before it; the next key replaces it.
    if !matches!(msg, Msg::Resize(..) | Msg::Redraw) {
        app.status.clear();
    }
    match msg {
        Msg::Resize(w, h) => {
            app.relayout(|app| {
                app.width = w;
                app.height = h;
            });
        }
        Msg::Quit => app.quit = true,
        Msg::Back => {
            if app.help {
                app.help = false;
            } else if app.search_input.is_some() {
                app.search_input = None;
            } else if app.detail {
                app.detail = false;
            } else {
                // A second Esc used to quit; Esc is "back", and nothing is open.
                app.status = "nothing to close: q quits".into();
            }
        }
        Msg::GoRoot => {
            if !app.go_root() {
                app.status = "no rank failed on its own in this run".into();
            }
        }
        Msg::NextView | Msg::PrevView => {
            let views = app.views();
            let i = views.iter().position(|v| *v == app.view).unwrap_or(0);
            let n = views.len();
            let j = if msg == Msg::NextView {
                (i + 1) % n
            } else {
                (i + n - 1) % n
            };
            app.view = views[j];
            // The Events view opens on the root failure, the line the run's story starts
            // from, the first time it is shown.
            if app.view == View::Events && !app.events_seen {
                app.events_seen = true;
                // Unless the user chose a rank already: its events are what was asked for.
                if !app.rank_chosen {
                    app.go_root();
                }
            }
        }
        Msg::MoveTime(cols) => {
            app.cursor_s = (app.cursor_s + f64::from(cols) * app.scale).clamp(0.0, app.span_s);
            app.clamp_offset();
        }
        Msg::TimeHome => {
            app.cursor_s = 0.0;
            app.clamp_offset();
        }
        Msg::TimeEnd => {
            app.cursor_s = app.span_s;
            app.clamp_offset();
        }
        Msg::ZoomIn => app.zoom(0.5),
        Msg::ZoomOut => app.zoom(2.0),
        Msg::FitWidth => app.fit(),
        Msg::Redraw => app.redraw = true,
        Msg::Move(by) => app.move_rows(by),
        Msg::ScrollDetail(pages) => {
            let page = app.rooms.detail.page;
            scroll_detail(app, i64::from(pages) * i64::from(page.max(1)));
        }
        Msg::ScrollDetailLines(lines) => scroll_detail(app, i64::from(lines)),
        Msg::ScrollDiff(pages) => {
            let ScrollRoom { page, max } = app.rooms.diff;
            let to = i64::from(app.diff_scroll) + i64::from(pages) * i64::from(page.max(1));
            app.diff_scroll = to.clamp(0, i64::from(max)) as u16;
        }
        Msg::ToggleHelp => app.help = !app.help,
        Msg::ToggleAggregate => app.relayout(|app| {
            app.aggregate = !app.aggregate;
            app.label_w = if app.aggregate {
                app.rank_label_w.max(BAND_LABEL_W)
            } else {
                app.rank_label_w
            };
        }),
        Msg::ToggleDetail => {
            app.detail = !app.detail;
            app.detail_scroll = 0;
        }
        Msg::ToggleRankFilter => {
            app.rank_filter = !app.rank_filter;
            app.event_sel = 0;
            app.detail_scroll = 0;
        }
        Msg::CycleKindFilter => {
            app.kind_filter = app.kind_filter.next();
            app.event_sel = 0;
            app.detail_scroll = 0;
        }
        Msg::SearchStart => {
            app.view = View::Events;
            app.events_seen = true;
            app.search_input = Some(String::new());
        }
        Msg::SearchChar(c) => {
            if let Some(s) = app.search_input.as_mut() {
                s.push(c);
            }
        }
        Msg::SearchBackspace => {
            if let Some(s) = app.search_input.as_mut() {
                s.pop();
            }
        }
        Msg::SearchSubmit => {
            if let Some(s) = app.search_input.take() {
                app.search = s;
                app.jump_match(true, true);
            }
        }
        Msg::NextMatch => app.jump_match(true, false),
        Msg::PrevMatch => app.jump_match(false, false),
    }
}
