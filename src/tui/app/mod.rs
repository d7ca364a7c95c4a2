//! TUI state and the one function that changes it. No I/O and no drawing here, so every
//! screen can be reached in tests by feeding messages.
//!
//! This file holds the state ([`App`]) and what the views ask of it; `analysed` computes
//! once, when the runs arrive, everything the views show; `update` turns a message (a
//! key, a resize) into a change of the state.

mod analysed;
mod update;

pub use analysed::{analyse, Analysed, DiffFacts, PhaseBand, SiteRow, SnapMem, Snapshots};
pub use update::{settle, update, Msg};

use crate::base::event::{kind, Event, Rank};
use crate::grammar::Knowledge;
use crate::model::{Edge, Run};

pub(crate) use crate::analysis::lanes::{seconds, Lane, PARTS};

/// The TUI's views, in Tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Each rank's phases on one time axis.
    Timeline,
    /// Where each rank's memory went, and its snapshots.
    Memory,
    /// The diff against the baseline (`--vs`).
    Diff,
    /// The run's events, with a detail pane.
    Events,
}

impl View {
    pub(crate) fn name(self) -> &'static str {
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
pub(crate) enum KindFilter {
    All,
    /// Events that open or close a phase (begin and end lines, not the lines inside one),
    /// and failures, which end the phase a rank was in.
    Phases,
    /// Out-of-memory, errors and warnings only.
    Problems,
}

impl KindFilter {
    pub(crate) fn name(self) -> &'static str {
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
    pub(crate) fn keeps(self, e: &Event, know: &Knowledge) -> bool {
        let failure = kind::is_failure(&e.kind);
        match self {
            KindFilter::All => true,
            KindFilter::Phases => {
                failure || matches!(know.phase_of(e), Some((_, Edge::Begin | Edge::End)))
            }
            KindFilter::Problems => failure || e.kind == kind::WARNING,
        }
    }
}

/// How far a scrolled pane can move: the rows it shows at once and the furthest first
/// line. Only the drawing code knows how its text wraps, so it measures (`ui::scroll_rooms`)
/// and the terminal loop hands the figures over with [`settle`] after every message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScrollRoom {
    pub(crate) page: u16,
    pub(crate) max: u16,
}

/// The scroll room of the Events view's detail pane and of the Diff view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScrollRooms {
    pub(crate) detail: ScrollRoom,
    pub(crate) diff: ScrollRoom,
}

/// The TUI's whole state: the run, what was computed from it, and where the user is.
pub struct App {
    /// The run shown.
    pub run: Run,
    #[expect(dead_code, reason = "never read; `pub` hid that until #28")]
    pub(crate) baseline: Option<Run>,
    /// Everything computed from the runs and snapshots, once (`analyse`).
    pub analysed: Analysed,
    /// First line of the Diff view shown (PgUp/PgDn); kept within the text by `settle`.
    pub diff_scroll: u16,
    /// The Timeline shows one row per phase across all ranks, not one per rank.
    pub aggregate: bool,
    pub(crate) color: bool,
    /// The view shown.
    pub view: View,
    pub(crate) width: u16,
    pub(crate) height: u16,
    /// Width of the rank-name column, shared by drawing and cursor arithmetic.
    pub(crate) label_w: u16,
    /// `label_w` for the rank lanes; the aggregate rows widen it to fit phase names.
    pub(crate) rank_label_w: u16,
    /// Seconds from the first to the last time stamp of the run (at least 1).
    pub(crate) span_s: f64,
    /// The time cursor, in seconds since the run started.
    pub cursor_s: f64,
    /// Seconds per column.
    pub scale: f64,
    /// Time at the left edge of the plot.
    pub offset_s: f64,
    /// The selected rank, an index into the lanes.
    pub rank_sel: usize,
    /// The help overlay is open.
    pub help: bool,
    /// The Events view's detail pane is open.
    pub detail: bool,
    /// First line of the detail pane shown; kept within the text by `settle`.
    pub detail_scroll: u16,
    /// As measured for the current state; see [`ScrollRooms`].
    pub(crate) rooms: ScrollRooms,
    /// Snapshots that could not be read or placed.
    pub(crate) snap_errors: Vec<String>,
    pub(crate) rank_filter: bool,
    pub(crate) kind_filter: KindFilter,
    /// What the run's grammars say its events mean (the phase-edge filter reads it).
    pub(crate) knowledge: Knowledge,
    /// Index into `visible_events()`.
    pub event_sel: usize,
    /// `Some` while the user types a search.
    pub search_input: Option<String>,
    pub(crate) search: String,
    /// The status line's message, answering the last key.
    pub status: String,
    /// The user asked to leave.
    pub quit: bool,
    /// Set by Ctrl-L: the terminal loop clears the screen before the next draw.
    pub redraw: bool,
    /// The Events view was shown (it opens on the root failure the first time only).
    pub(crate) events_seen: bool,
    /// A rank was selected by hand (↑↓ outside the Events view).
    pub(crate) rank_chosen: bool,
}

/// The loading screen's state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loading {
    pub(crate) what: String,
    /// The stage of the loading, as the screen names it.
    pub stage: String,
    /// Bytes read so far.
    pub bytes: u64,
    /// Bytes to read, when known.
    pub total: Option<u64>,
    /// Frames drawn, for the spinner.
    pub tick: usize,
    /// Set when loading failed; the screen then says why and waits for q.
    pub error: Option<String>,
}

impl Loading {
    /// The loading screen for reading `what`.
    pub fn new(what: &str) -> Loading {
        Loading {
            what: what.to_string(),
            stage: "starting".into(),
            ..Loading::default()
        }
    }
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
    pub(crate) fn culprit(&self, site: &str) -> Option<&str> {
        self.analysed
            .diff_facts
            .as_ref()?
            .culprits
            .iter()
            .find(|(s, _)| s == site)
            .map(|(_, what)| what.as_str())
    }

    /// Some rank has a snapshot.
    pub fn has_snapshots(&self) -> bool {
        !self.analysed.snaps.is_empty()
    }

    pub(crate) fn selected_snap(&self) -> Option<&SnapMem> {
        self.analysed
            .snaps
            .get(self.rank_sel)
            .and_then(Option::as_ref)
    }

    pub(crate) fn views(&self) -> Vec<View> {
        let mut v = vec![View::Timeline, View::Memory];
        if self.analysed.diff.is_some() {
            v.push(View::Diff);
        }
        v.push(View::Events);
        v
    }

    pub(crate) fn plot_width(&self) -> u16 {
        self.width.saturating_sub(self.label_w).max(1)
    }

    /// The selected rank, if there are ranks.
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

    /// The selected event of the Events view, if it lists any.
    pub fn selected_event(&self) -> Option<&Event> {
        let v = self.visible_events();
        v.get(self.event_sel).and_then(|&i| self.run.events.get(i))
    }

    pub(crate) fn matches(&self, e: &Event) -> bool {
        if self.search.is_empty() {
            return false;
        }
        let q = self.search.to_lowercase();
        e.message.to_lowercase().contains(&q)
            || e.kind.to_lowercase().contains(&q)
            || e.detail().is_some_and(|d| d.to_lowercase().contains(&q))
    }

    /// Events of the selected rank nearest the cursor, in time order.
    pub(crate) fn events_near_cursor(&self, n: usize) -> Vec<(f64, &Event)> {
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
    pub(crate) fn footer_events(&self, n: usize) -> Vec<(f64, &Event)> {
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
    pub(crate) fn extend_span(&mut self, to_s: f64) {
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
    pub(crate) fn fit_scale(&self) -> f64 {
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
    pub(crate) fn go_root(&mut self) -> bool {
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
    pub(crate) fn root_rank(&self) -> Option<&Rank> {
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
