//! One rank's events read in order: its phase spans, the failure that stopped it and its
//! outcome.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;

use crate::base::event::{kind, Event, Rank};
use crate::grammar::Knowledge;
use crate::model::{
    outcome, Edge, FailureKind, Figure, Outcome, Phase, PhaseOrder, PhaseSpan, RankRun,
};

/// A rank's phases as its phase lines are read in order.
struct PhaseWalk {
    spans: BTreeMap<Phase, PhaseSpan>,
    /// The phase the rank is in.
    current: Phase,
    /// A phase begun again after later phases (a speculative draft model's own model
    /// runner: `Init torch distributed begin.` after `Memory pool end.`), while it is the
    /// rank's latest phase line: where the rank is, whatever phases it finished before.
    reentered: Option<Phase>,
    furthest: Phase,
    /// The last phase line read: where a failure with no phase of its own was placed from.
    last_line: Option<crate::base::event::Origin>,
    /// The phase the last phase line ended as it began `current` (`then`): a rank put in
    /// `ready` only by such a line has completed that phase and printed no ready line.
    ended_by_then: Option<Phase>,
}

impl Default for PhaseWalk {
    fn default() -> Self {
        PhaseWalk {
            spans: BTreeMap::new(),
            current: Phase::Launch,
            reentered: None,
            furthest: Phase::Launch,
            last_line: None,
            ended_by_then: None,
        }
    }
}

impl PhaseWalk {
    /// One phase line: its phase begun, ended or entered, its figures recorded.
    fn take(&mut self, e: &Event, phase: Phase, edge: Edge, know: &Knowledge) {
        let span = self
            .spans
            .entry(phase)
            .or_insert_with(|| PhaseSpan::empty(phase));
        self.reentered = (edge == Edge::Begin && phase < self.furthest).then_some(phase);
        self.last_line = Some(e.origin.clone());
        self.ended_by_then = None;
        self.furthest = self.furthest.max(phase);
        match edge {
            Edge::Begin => {
                if span.start.is_none() {
                    span.start = e.ts;
                    span.start_step_ms = e.ts_step_ms;
                }
                self.current = phase;
            }
            Edge::Inside => {
                if span.start.is_none() {
                    span.start = e.ts;
                    span.start_step_ms = e.ts_step_ms;
                }
                self.current = self.current.max(phase);
            }
            Edge::End => {
                // No begin line: the start stays unknown rather than a zero-length
                // phase; the end line's printed `elapsed` may still give a duration.
                span.end = e.ts;
                span.end_step_ms = e.ts_step_ms;
                span.complete = true;
                span.end_printed = true;
                self.current = phase;
            }
        }
        for (figure, value) in know.figures_of(e) {
            if span.figure(figure.name()).is_none() {
                span.figures.push(Figure {
                    name: figure,
                    value,
                    origin: e.origin.clone(),
                });
            }
        }
        // A line that ends its phase and begins the next (`then`): the next phase's
        // row starts here, so a failure before its own first line is placed in it.
        if let (Edge::End, Some(next)) = (edge, know.then_of(e)) {
            let next_span = self
                .spans
                .entry(next)
                .or_insert_with(|| PhaseSpan::empty(next));
            if next_span.start.is_none() {
                next_span.start = e.ts;
                next_span.start_step_ms = e.ts_step_ms;
            }
            self.furthest = self.furthest.max(next);
            self.current = next;
            self.ended_by_then = Some(phase);
        }
    }
}

/// A phase is over once a later one has begun, whether or not the server prints an end
/// line for it (vLLM has no `Memory pool end`).
fn close_by_later_starts(spans: &mut BTreeMap<Phase, PhaseSpan>) {
    let starts: Vec<(Phase, Option<NaiveDateTime>, u32)> = spans
        .values()
        .map(|s| (s.phase, s.start, s.start_step_ms))
        .collect();
    for span in spans.values_mut() {
        if span.complete {
            continue;
        }
        if let Some((_, next_start, step)) = starts.iter().find(|(p, ..)| *p > span.phase) {
            span.complete = true;
            if span.end.is_none() {
                span.end = *next_start;
                span.end_step_ms = *step;
            }
        }
    }
}

/// What reading one rank needs to know of the run as a whole.
pub(super) struct RunFacts {
    /// The run's first stamp, with its step.
    pub(super) start: Option<(NaiveDateTime, u32)>,
    /// Some rank printed the server's ready line.
    pub(super) ready: bool,
    /// The index of the run's first ready line among its events.
    pub(super) ready_at: Option<usize>,
    /// The phases the run's server goes through.
    pub(super) order: PhaseOrder,
}

pub(super) fn build_rank(
    rank: Rank,
    idx: Vec<usize>,
    events: &[Event],
    run: &RunFacts,
    know: &Knowledge,
) -> (RankRun, Option<outcome::Stop>) {
    let mut walk = PhaseWalk::default();
    let mut stops: Vec<outcome::Stop> = Vec::new();
    let mut traceback: Option<String> = None;
    let mut waited = false; // a `waits_for` line since the last phase line
    let mut ranks_at = None; // where the other ranks were, for an engine's failures
    for &i in &idx {
        let e = &events[i];
        let is_failure = kind::is_failure(&e.kind);
        // A failure line given a phase by its grammar is still a failure, in that phase
        // (after what its frames and wording say, before the phase the rank was in).
        let mut own_phase = None;
        if let Some((phase, edge)) = know.phase_of(e) {
            if !is_failure {
                walk.take(e, phase, edge, know);
                waited = false;
                continue;
            }
            own_phase = Some((phase, edge));
        }
        waited |= e.field("waits_for").is_some();
        // A failure's traceback goes to the failure lines after it that have none: the
        // exception line that closes it (TensorRT-LLM's C++ OOM, then torch's
        // `OutOfMemoryError` with its sizes) is read with the frames it closed.
        if let Some(d) = e.detail().filter(|_| is_failure) {
            traceback = Some(d.to_string());
        }
        let (in_phase, after_phase) =
            placed_phase(&walk, run.ready_at.is_some_and(|r| i > r), run.order);
        let (in_phase, from) = match own_phase {
            Some((p, _)) => (p, "event"),
            // An engine whose own lines reached no phase fails where its workers were,
            // as a launcher's line does: `Worker … died` while they captured graphs.
            None if rank.is_engine() && walk.last_line.is_none() && is_failure => {
                super::phase_at::ranks_at_line(&mut ranks_at, events, &idx, know, e)
            }
            None => (in_phase, "last_event"),
        };
        if let Some(mut stop) = outcome::stop_of(e, in_phase, from, know, traceback.as_deref()) {
            if stop.failure.phase_from == "last_event" {
                stop.failure.phase_line = walk.last_line.clone();
                // Signalled while it waited for a peer after closing a phase: between
                // phases; else at the next one's work (no KV-sizing begin line is printed).
                let between = in_phase == Phase::Ready
                    || (waited && stop.failure.kind == FailureKind::Signal);
                if let (Some(_), true) = (after_phase, between) {
                    stop.failure.phase_from = "after_last_phase";
                    stop.failure.after_phase = after_phase;
                }
            }
            stops.push(stop);
        }
        if let Some((phase, edge)) = own_phase {
            walk.take(e, phase, edge, know);
        }
    }
    let PhaseWalk {
        mut spans,
        reentered,
        ..
    } = walk;
    close_by_later_starts(&mut spans);
    if !rank.is_engine() {
        set_launch(&mut spans, &idx, events, run.start);
    }
    let last_phase = spans.keys().copied().max().unwrap_or(Phase::Launch);
    let stop = outcome::decisive(stops);
    let reached_ready = stop.is_none() && run.ready;
    if reached_ready {
        complete_at_ready(&mut spans);
    }
    // Where a log that simply ends stopped: in the open phase, or the next one once the
    // last phase closed.
    let open_phase = match (reentered, spans.get(&last_phase)) {
        (Some(p), _) => p,
        (None, Some(s)) if s.complete && last_phase != Phase::Ready => run.order.next(last_phase),
        (None, _) => last_phase,
    };
    let last_origin = idx.last().map(|&i| events[i].origin.clone());
    // Figures are pushed one at a time into room for four; a run keeps every rank's
    // spans to the end (a quarter of the model's memory at 65,536 ranks was that room).
    for span in spans.values_mut() {
        span.figures.shrink_to_fit();
    }
    let (out, last_phase) = match &stop {
        Some(s) => (
            s.failure.outcome,
            s.failure.after_phase.unwrap_or(s.failure.phase),
        ),
        None if reached_ready => (Outcome::Ready, Phase::Ready),
        None => (Outcome::Incomplete, open_phase),
    };
    (
        RankRun {
            rank,
            phases: spans.into_values().collect(),
            last_phase,
            reached_ready,
            outcome: out,
            failure: stop.as_ref().map(|s| Box::new(s.failure.clone())),
            last_origin,
            events: idx,
        },
        stop,
    )
}

/// A rank that reached ready finished every phase it began, whether or not the server
/// prints an end line for the last one (TensorRT-LLM's graph warm-up): the phase is
/// complete, its end unknown, so no duration is made up.
fn complete_at_ready(spans: &mut BTreeMap<Phase, PhaseSpan>) {
    for span in spans.values_mut() {
        span.complete = true;
    }
    spans.entry(Phase::Ready).or_insert(PhaseSpan {
        complete: true,
        ..PhaseSpan::empty(Phase::Ready)
    });
}

/// Launch runs from the first line of the run to the rank's first line of any kind —
/// also when that line is a launch line of its own (a worker printing the run's
/// configuration), which would otherwise stretch its launch to its next phase's first
/// line, past lines that show it already running. Its figures stay.
fn set_launch(
    spans: &mut BTreeMap<Phase, PhaseSpan>,
    idx: &[usize],
    events: &[Event],
    run_start: Option<(NaiveDateTime, u32)>,
) {
    let first_ts = (idx.iter())
        .filter_map(|&i| Some((events[i].ts?, events[i].ts_step_ms)))
        .min_by_key(|(t, _)| *t);
    if let (Some((s, s_step)), Some((f, f_step))) = (run_start, first_ts) {
        let launch = spans
            .entry(Phase::Launch)
            .or_insert_with(|| PhaseSpan::empty(Phase::Launch));
        launch.start = Some(s);
        launch.end = Some(f);
        launch.start_step_ms = s_step;
        launch.end_step_ms = f_step;
        launch.complete = true;
        launch.end_printed = false;
    }
}

/// The phase a failure belongs to when neither its frames nor its wording say: `ready`
/// once the run's ready line came before it (`served`), else the one in progress, or the
/// next one of the run's phases when the last line closed a phase; then the completed
/// phase comes back as well, for a failure placed after it (`after weight_load, before
/// kv_cache`). A rank in `ready` only because a line ended its phase with `then = "ready"`
/// has not served either: it is after that phase.
fn placed_phase(walk: &PhaseWalk, served: bool, order: PhaseOrder) -> (Phase, Option<Phase>) {
    match walk.spans.get(&walk.current) {
        _ if served => (Phase::Ready, None),
        _ if walk.current == Phase::Ready => (Phase::Ready, walk.ended_by_then),
        Some(s) if s.complete => (order.next(walk.current), Some(walk.current)),
        _ => (walk.current, None),
    }
}
