//! The per-rank timeline as SVG: one lane per rank, its phases as bars on the run's clock
//! (the loader has already moved each node's stamps by its clock offset), stragglers
//! outlined, the failing phase and the failure marked, the root's lane framed; each bar's
//! `<title>` (the browser's hover) holds the event lines stamped within it.

use crate::base::units::since_start;
use std::fmt::Write;

use super::{esc, heading, Page, Side, LARGE_RUN};
use crate::analysis::lanes::{seconds, Lane};
use crate::model::{Outcome, Phase, Run};

/// The SVG's width in user units, the rank label column, the right margin.
const WIDTH: f64 = 1100.0;
const LABEL_W: f64 = 120.0;
const RIGHT: f64 = 20.0;
/// Above the lanes: the time axis.
const TOP: f64 = 22.0;

/// Event lines in a bar's hover text, and how many characters of each.
const HOVER_LINES: (usize, usize) = (6, 200);
const HOVER_LINES_LARGE: (usize, usize) = (2, 110);

pub(crate) fn section(o: &mut String, p: &Page) {
    heading(o, "timeline", "Timeline");
    legend(o);
    draw(o, &p.candidate, "tl-cand", "candidate");
    clocks(o, &p.candidate);
    if let Some(b) = &p.baseline {
        let _ = writeln!(
            o,
            "<details class=\"base-timeline\"><summary>baseline timeline: {}</summary>",
            esc(&b.run.name)
        );
        draw(o, b, "tl-base", "baseline");
        clocks(o, b);
        o.push_str("</details>\n");
    }
}

/// The nodes' clock offsets (applied to the stamps before anything is drawn) and the
/// stragglers, in `summary`'s words.
fn clocks(o: &mut String, side: &Side) {
    let mut text = String::new();
    let style = crate::render::Style {
        color: false,
        width: 100,
    };
    crate::render::text::summary::timing_report(&mut text, side.run, &side.report.phases, style);
    let text = text.trim();
    if !text.is_empty() {
        let _ = writeln!(o, "<pre class=\"clocks\">{}</pre>", esc(text));
    }
}

fn legend(o: &mut String) {
    o.push_str("<p class=\"legend\">");
    for ph in Phase::ALL {
        let _ = write!(o, "<span><i class=\"p-{ph}\"></i>{ph}</span>");
    }
    o.push_str("<span><i class=\"late\"></i>straggler (outlined)</span><span><i class=\"fail\"></i>failure, root rank framed</span></p>\n");
}

/// Seconds between ticks: about eight ticks across `span`.
fn tick_step(span: f64) -> f64 {
    const STEPS: [f64; 16] = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
        7200.0,
    ];
    STEPS
        .into_iter()
        .find(|s| span / s <= 10.0)
        .unwrap_or(span / 8.0)
}

fn tick_label(t: f64, step: f64) -> String {
    if step >= 60.0 {
        format!("{}m", (t / 60.0).round() as i64)
    } else if step < 1.0 {
        format!("{t:.1}s")
    } else {
        format!("{}s", t.round() as i64)
    }
}

/// The end of the drawn clock: the last bar or failure of any lane, at least a second.
fn time_span(lanes: &[Lane]) -> f64 {
    lanes
        .iter()
        .flat_map(|l| {
            l.segments
                .iter()
                .map(|s| s.end)
                .chain(l.failure.map(|f| f.1))
        })
        .fold(1.0, f64::max)
}

fn draw(o: &mut String, side: &Side, id: &str, what: &str) {
    let run = side.run;
    let lanes = side.lanes;
    let large = lanes.len() > LARGE_RUN;
    let lane_h: f64 = if large { 10.0 } else { 20.0 };
    let span = time_span(lanes);
    let x_of = |t: f64| LABEL_W + (t.max(0.0) / span) * (WIDTH - LABEL_W - RIGHT);
    let height = TOP + lane_h * lanes.len() as f64 + 8.0;
    let nodes = run.nodes.len() > 1;
    let _ = writeln!(
        o,
        "<div class=\"controls\"><label>filter <input id=\"{id}-filter\" type=\"search\" placeholder=\"rank, node, outcome, phase\"></label> \
         <label>group by <select id=\"{id}-group\"><option value=\"rank\"{}>rank</option><option value=\"outcome\"{}>outcome</option>{}</select></label> \
         <span class=\"muted\" id=\"{id}-count\">{} lanes</span></div>",
        if large { "" } else { " selected" },
        if large { " selected" } else { "" },
        if nodes { "<option value=\"node\">node</option>" } else { "" },
        lanes.len()
    );
    let _ = writeln!(
        o,
        "<svg class=\"timeline\" id=\"{id}\" role=\"img\" aria-label=\"{what} timeline: {} lanes\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" data-w=\"{WIDTH}\" data-lane=\"{lane_h}\" data-top=\"{TOP}\">",
        lanes.len()
    );
    let step = tick_step(span);
    let mut t = 0.0;
    while t <= span + 1e-9 {
        let x = x_of(t);
        let _ = writeln!(
            o,
            "<line class=\"gl\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{:.0}\"/><text class=\"ax\" x=\"{x:.1}\" y=\"12\" text-anchor=\"middle\">{}</text>",
            TOP - 4.0,
            height - 8.0,
            tick_label(t, step)
        );
        t += step;
    }
    for (i, lane) in lanes.iter().enumerate() {
        let y = TOP + lane_h * i as f64;
        lane_group(o, run, lane, i, y, lane_h, &x_of, large);
    }
    o.push_str("</svg>\n");
}

/// One rank's lane: a `<g>` whose `data-` attributes the script filters and groups by.
#[allow(clippy::too_many_arguments)]
fn lane_group(
    o: &mut String,
    run: &Run,
    lane: &Lane,
    i: usize,
    y: f64,
    lane_h: f64,
    x_of: &dyn Fn(f64) -> f64,
    large: bool,
) {
    let rr = run.rank(&lane.rank);
    let outcome = rr.map_or(Outcome::Incomplete, |r| r.outcome);
    let node = run.node_of(&lane.rank).map_or("", |n| n.name.as_str());
    let root = run.root.as_ref() == Some(&lane.rank);
    let rank = lane.rank.to_string();
    let phases: Vec<String> = lane.segments.iter().map(|s| s.phase.to_string()).collect();
    let key = format!(
        "{rank} {node} {outcome}{} {}",
        if root { " root" } else { "" },
        phases.join(" ")
    );
    let _ = writeln!(
        o,
        "<g class=\"lane{}\" data-i=\"{i}\" data-rank=\"{}\" data-node=\"{}\" data-outcome=\"{outcome}\" data-key=\"{}\" transform=\"translate(0,{y})\">",
        if root { " root" } else { "" },
        esc(&rank),
        esc(if node.is_empty() { "-" } else { node }),
        esc(&key)
    );
    let bar_h = lane_h - if large { 2.0 } else { 5.0 };
    if outcome == Outcome::Failed {
        let _ = writeln!(
            o,
            "<rect class=\"failbg\" x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{lane_h}\"/>"
        );
    }
    let label = if root { format!("{rank} root") } else { rank };
    let _ = writeln!(
        o,
        "<text{} x=\"4\" y=\"{:.1}\"{}>{}</text>",
        if outcome == Outcome::Failed || root {
            " class=\"fail\""
        } else {
            ""
        },
        bar_h - 1.0,
        if large { " font-size=\"8\"" } else { "" },
        esc(&label)
    );
    let (max_lines, max_chars) = if large {
        HOVER_LINES_LARGE
    } else {
        HOVER_LINES
    };
    let failed = (outcome == Outcome::Failed)
        .then(|| rr.and_then(|r| r.failure.as_ref()).map(|f| f.phase))
        .flatten();
    bars(o, run, lane, failed, bar_h, x_of, (max_lines, max_chars));
    if let (Some((kind, t)), Some(f)) = (lane.failure, rr.and_then(|r| r.failure.as_ref())) {
        let x = x_of(t);
        let at = f
            .origin
            .as_ref()
            .map(|x| format!("{}:{}", base_name(run.source_name(x)), x.line))
            .unwrap_or_default();
        let hover = format!(
            "{} {kind} in {} at {}, {at}\n{}",
            lane.rank,
            f.phase,
            since_start(t),
            crate::base::text::truncate(&f.message, max_chars * 2)
        );
        let r = (bar_h / 2.0).min(6.0);
        let _ = writeln!(
            o,
            "<path class=\"fail\" d=\"M{x:.1},{:.1}l{r},{r}l-{r},{r}l-{r},-{r}z\"><title>{}</title></path>",
            bar_h / 2.0 - r,
            esc(&hover)
        );
    }
    if root {
        let _ = writeln!(
            o,
            "<rect class=\"rootbg\" x=\"1\" y=\"0\" width=\"{}\" height=\"{}\"/>",
            WIDTH - 2.0,
            lane_h - 1.0
        );
    }
    o.push_str("</g>\n");
}

/// A lane's bars, each with its hover text; `failed` is the phase the rank's own failure
/// happened in.
fn bars(
    o: &mut String,
    run: &Run,
    lane: &Lane,
    failed: Option<Phase>,
    bar_h: f64,
    x_of: &dyn Fn(f64) -> f64,
    (max_lines, max_chars): (usize, usize),
) {
    for (k, s) in lane.segments.iter().enumerate() {
        let x0 = x_of(s.start);
        let late = lane.straggler_in.contains(&s.phase);
        // The phase the rank failed in: its last bar, when the failure is the rank's own.
        let failing = failed == Some(s.phase) && k + 1 == lane.segments.len();
        // A phase within one stamp is drawn as a sliver; the failing one wide enough to see.
        let w = (x_of(s.end) - x0).max(if failing { 6.0 } else { 2.0 });
        let mut class = format!("p-{}", s.phase);
        if !s.complete && s.phase != Phase::Ready {
            class.push_str(" open");
        }
        if late {
            class.push_str(" late");
        }
        if failing {
            class.push_str(" failph");
        }
        let mut hover = format!(
            "{} {} {} to {}{}{}{}",
            lane.rank,
            s.phase,
            since_start(s.start),
            since_start(s.end),
            if s.complete || s.phase == Phase::Ready {
                ""
            } else {
                " (not finished)"
            },
            if late {
                "; straggler: ended later than the others"
            } else {
                ""
            },
            if failing { "; failed here" } else { "" }
        );
        event_lines(&mut hover, run, lane, s.start, s.end, max_lines, max_chars);
        let _ = writeln!(
            o,
            "<rect class=\"{class}\" x=\"{x0:.1}\" y=\"0\" width=\"{w:.1}\" height=\"{bar_h}\"><title>{}</title></rect>",
            esc(&hover)
        );
    }
}

fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// The rank's event lines stamped within `[from, to]` seconds, as `file:line message`.
fn event_lines(
    out: &mut String,
    run: &Run,
    lane: &Lane,
    from: f64,
    to: f64,
    max_lines: usize,
    max_chars: usize,
) {
    let Some(rr) = run.rank(&lane.rank) else {
        return;
    };
    let within = rr
        .events
        .iter()
        .filter_map(|&i| run.events.get(i))
        .filter(|e| seconds(run.start, e.ts).is_some_and(|t| t >= from && t <= to));
    let mut n = 0;
    // Stamped within: a line of the phase before or after, stamped in the same second as
    // the bar's end or start, is listed too.
    for e in within {
        if n < max_lines {
            let _ = write!(
                out,
                "\n{}:{} {}",
                base_name(run.source_name(&e.origin)),
                e.origin.line,
                crate::base::text::truncate(&e.message, max_chars)
            );
        }
        n += 1;
    }
    if n > max_lines {
        let _ = write!(out, "\n… {} more line(s)", n - max_lines);
    }
}
