//! `rankscope summary`: one run, phases × ranks, in 80 columns.

use std::fmt::Write;

use super::{figure_text, fit, Style};
use crate::analysis::align::{phase_stats, PhaseStats};
use crate::analysis::diff::{failure_story, failure_verb, outcome};
use crate::model::{Outcome, Phase, RankRun, Run};

pub fn figure_label(name: &str) -> String {
    name.replace('_', " ")
}

fn secs(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

pub fn summary(run: &Run, per_rank: bool, style: Style) -> String {
    let mut o = String::new();
    let stats = phase_stats(run);
    let out = outcome(run);
    let status = if out.failed() {
        style.bad("FAILED")
    } else if run.ready {
        style.good("READY")
    } else if run.ranks.is_empty() {
        style.warn("NO RANKS")
    } else {
        style.warn("INCOMPLETE")
    };
    let _ = writeln!(
        o,
        "{}  {}  {} rank{}, {} source{}{}",
        status,
        style.bold(&run.name),
        out.ranks,
        if out.ranks == 1 { "" } else { "s" },
        run.sources.len(),
        if run.sources.len() == 1 { "" } else { "s" },
        if run.grammars.is_empty() {
            String::new()
        } else {
            format!(", read as {}", run.grammars.join("+"))
        }
    );
    if let Some(start) = run.start {
        let end = run.events.iter().filter_map(|e| e.ts).max();
        let _ = writeln!(
            o,
            "started {start}{}{}",
            end.map(|e| format!(", last line {} s later", (e - start).num_seconds()))
                .unwrap_or_default(),
            if run.year_inferred {
                " (date inferred)"
            } else {
                ""
            }
        );
    }
    let processes = run.ranks.len() - out.ranks;
    if processes > 0 {
        let _ = writeln!(
            o,
            "{processes} engine process{} beside the ranks (not counted as ranks)",
            if processes == 1 { "" } else { "es" }
        );
    }
    if out.failed() {
        let story = format!("verdict: {}", failure_story(&out));
        for (i, line) in super::wrap(&story, 76).into_iter().enumerate() {
            let indent = if i == 0 { "" } else { "  " };
            let _ = writeln!(o, "{indent}{}", style.bad(&line));
        }
        if let Some((r, f)) = run.root_failure() {
            let at = f
                .origin
                .as_ref()
                .map(|o| format!("{}:{}", run.source_name(o), o.line))
                .unwrap_or_default();
            let label = if out.failed_ranks > 1 {
                "first to fail on its own"
            } else {
                "root"
            };
            let _ = writeln!(
                o,
                "{label}: {} {} in {} (phase from {}), {at}",
                r.rank,
                match f.outcome {
                    Outcome::Stalled => "stalled",
                    _ => failure_verb(f.kind),
                },
                f.phase,
                f.phase_from.replace('_', " ")
            );
        }
    } else if !run.ready && out.incomplete > 0 {
        let _ = writeln!(
            o,
            "{}",
            style.warn(&format!(
                "the log ends before ready on {}/{} ranks and nothing says why: incomplete, not a hang",
                out.incomplete, out.ranks
            ))
        );
    }
    for g in &out.groups {
        for (i, line) in super::wrap(&g.describe(), 76).into_iter().enumerate() {
            let indent = if i == 0 { "" } else { "  " };
            let _ = writeln!(o, "{indent}{}", style.bad(&line));
        }
    }
    // Launcher lines that only echo a rank's failure or shut down are not news here.
    for f in run
        .launcher_failures
        .iter()
        .filter(|f| f.outcome == Outcome::Failed)
    {
        let _ = writeln!(
            o,
            "{}",
            style.bad(&format!("outside any rank: {}", fit(&f.message, 60)))
        );
    }
    if run.attempts.len() > 1 {
        let _ = writeln!(
            o,
            "attempt {} of {} start-ups in this log (--attempt N shows another):",
            run.attempt,
            run.attempts.len()
        );
        for a in &run.attempts {
            let root = match (&a.root, a.root_kind, a.root_phase) {
                (Some(r), Some(k), Some(p)) => format!(" {r} {} in {p}", k.name()),
                _ => String::new(),
            };
            let _ = writeln!(
                o,
                "  #{} {}{root}, {} events{}{}",
                a.index,
                a.outcome,
                a.events,
                a.start.map(|t| format!(", {t}")).unwrap_or_default(),
                if a.index == run.attempt {
                    "  (shown)"
                } else {
                    ""
                }
            );
        }
    }
    o.push('\n');
    if run.events.is_empty() {
        let mut detected: Vec<&str> = run
            .sources
            .iter()
            .flat_map(|s| s.detected.iter().map(String::as_str))
            .collect();
        detected.sort();
        detected.dedup();
        let _ = writeln!(
            o,
            "no start-up events found{}; `rankscope grammars list` shows what is read,",
            if detected.is_empty() {
                String::new()
            } else {
                format!(" (line prefixes look like {})", detected.join("+"))
            }
        );
        let _ = writeln!(o, "docs/grammars.md how to add a server");
    } else {
        let _ = writeln!(
            o,
            "{}",
            style.bold("PHASE        RANKS  DURATION min/med/max  END SKEW  NOTES")
        );
        let mut starred = false;
        for s in &stats {
            starred |= phase_block(&mut o, s, out.ranks, style);
        }
        if starred {
            let _ = writeln!(o, "{STAR_LEGEND}");
        }
        timing_report(&mut o, run, &stats, style);
    }
    if per_rank {
        o.push('\n');
        rank_table(&mut o, run, style);
    }
    o.push('\n');
    if !run.gpus.is_empty() || !run.gpu_processes.is_empty() {
        gpu_report(&mut o, run);
    }
    lines_report(&mut o, run, style);
    o
}

/// Lines listed before "and N more".
const TIMING_LINES: usize = 8;

fn signed_s(ms: i64) -> String {
    format!("{:+.2}", ms as f64 / 1000.0).replace('-', "−")
}

/// The nodes and their clocks, then each straggler: which rank, which phase, how late and
/// whether the time went before the phase's first line or inside it.
fn timing_report(o: &mut String, run: &Run, stats: &[PhaseStats], style: Style) {
    if !run.nodes.is_empty() {
        let reference = run.nodes.iter().find(|n| n.reference);
        let ref_name = reference.map_or("?", |n| n.name.as_str());
        let _ = writeln!(
            o,
            "\n{} nodes, clocks against {ref_name}'s (barrier exits; stamps {}):",
            run.nodes.len(),
            if run
                .nodes
                .iter()
                .any(|n| n.offset.as_ref().is_some_and(|x| x.applied))
            {
                "moved onto its clock"
            } else {
                "as printed, --no-clock-align"
            }
        );
        if let Some(r) = reference {
            let _ = writeln!(o, "  {}: reference", node_label(r));
        }
        let mut others: Vec<&crate::node::Node> =
            run.nodes.iter().filter(|n| !n.reference).collect();
        others
            .sort_by_key(|n| std::cmp::Reverse(n.offset.as_ref().map_or(0, |x| x.mid_ms().abs())));
        for n in others.iter().take(TIMING_LINES) {
            let line = match &n.offset {
                Some(x) => format!(
                    "  {}: {} s ± {:.2} s, in ({}, {}) s from {} barrier exit{}{}",
                    node_label(n),
                    signed_s(x.mid_ms()),
                    x.half_width_ms() as f64 / 1000.0,
                    signed_s(x.lo_ms),
                    signed_s(x.hi_ms),
                    x.barrier_events,
                    if x.barrier_events == 1 { "" } else { "s" },
                    if x.rejected_events > 0 {
                        format!(", {} disagreeing left out", x.rejected_events)
                    } else {
                        String::new()
                    }
                ),
                None => format!(
                    "  {}: no barrier exit in common, clock taken as is",
                    node_label(n)
                ),
            };
            let _ = writeln!(o, "{line}");
        }
        if others.len() > TIMING_LINES {
            let _ = writeln!(
                o,
                "  and {} more nodes (--json lists all)",
                others.len() - TIMING_LINES
            );
        }
    }
    let all: Vec<(&PhaseStats, &crate::analysis::align::Straggler)> = stats
        .iter()
        .flat_map(|p| p.straggler_detail.iter().map(move |s| (p, s)))
        .collect();
    if all.is_empty() {
        if !run.nodes.is_empty() {
            let _ = writeln!(
                o,
                "no straggler: every phase ends within the stamps' and clocks' uncertainty"
            );
        }
        return;
    }
    o.push('\n');
    for (p, s) in all.iter().take(TIMING_LINES) {
        let at = if s.before_first_line() {
            format!(
                "before its first line (began {} s late)",
                secs(s.before_first_line_s)
            )
        } else {
            format!("inside the phase (ran {} s longer)", secs(s.inside_s))
        };
        let _ = writeln!(
            o,
            "{}",
            style.warn(&format!(
                "straggler: {} in {}, ended {} s after the others (± {} s), {at}",
                s.rank,
                p.phase,
                secs(s.late_s),
                secs(s.uncertainty_s)
            ))
        );
    }
    if all.len() > TIMING_LINES {
        let _ = writeln!(
            o,
            "and {} more stragglers (--json lists all)",
            all.len() - TIMING_LINES
        );
    }
}

/// Under the phase table when a `RANKS` figure carries a `*`.
pub const STAR_LEGEND: &str =
    "* ranks that finished the phase, of all ranks: some that began it did not finish it";

/// Writes one phase's rows; true when its `RANKS` figure is starred (`STAR_LEGEND`).
fn phase_block(o: &mut String, s: &PhaseStats, total: usize, style: Style) -> bool {
    let spread = |d: &crate::analysis::align::Spread| {
        format!("{} / {} / {} s", secs(d.min), secs(d.median), secs(d.max))
    };
    // A phase with no begin line has no measured duration: the server's printed figure
    // stands in for it, said as such, or else only when it ended is known.
    let mut known = Vec::new();
    let dur = match (&s.duration_s, &s.printed_duration_s) {
        (Some(d), printed) => {
            if let Some(p) = printed {
                known.push(format!("printed where no begin line: {}", spread(p)));
            }
            spread(d)
        }
        (None, Some(p)) => {
            known.push("duration as printed (no begin line)".into());
            spread(p)
        }
        (None, None) => "-".into(),
    };
    if let Some(end) = s.unknown_start_last_end {
        known.push(format!(
            "{} rank{} with no begin line nor duration, ended {}{}",
            s.unknown_start,
            if s.unknown_start > 1 { "s" } else { "" },
            if s.unknown_start > 1 { "by " } else { "" },
            end.format("%H:%M:%S%.f")
        ));
    }
    let skew = s
        .end_skew_s
        .map(|v| format!("{} s", secs(v)))
        .unwrap_or_else(|| "-".into());
    let starred = s.phase != Phase::Ready && s.completed != s.ranks;
    let ranks = if starred {
        format!("{}/{}*", s.completed, total)
    } else {
        format!("{}/{}", s.ranks, total)
    };
    if !s.stragglers.is_empty() {
        known.push(style.warn(&format!(
            "straggler{}: {}",
            if s.stragglers.len() > 1 { "s" } else { "" },
            s.stragglers
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let notes = known.join("; ");
    let row = format!(
        "{} {} {} {} {}",
        fit(s.phase.name(), 12),
        fit(&ranks, 6),
        fit(&dur, 21),
        fit(&skew, 9),
        notes
    );
    let _ = writeln!(o, "{}", row.trim_end());
    for f in &s.figures {
        if f.name == "elapsed" {
            continue;
        }
        let sp = &f.spread;
        let val = if sp.min == sp.max {
            figure_text(sp.median, f.is_bytes, f.resolution)
        } else {
            format!(
                "{} / {} / {}",
                figure_text(sp.min, f.is_bytes, f.resolution),
                figure_text(sp.median, f.is_bytes, f.resolution),
                figure_text(sp.max, f.is_bytes, f.resolution)
            )
        };
        let outl = if f.outliers.is_empty() {
            String::new()
        } else {
            style.warn(&format!(
                "  off median: {}",
                f.outliers
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        };
        let _ = writeln!(o, "  {} {}{}", fit(&figure_label(f.name), 16), val, outl);
    }
    starred
}

fn rank_table(o: &mut String, run: &Run, style: Style) {
    let _ = writeln!(
        o,
        "{}",
        style.bold(
            "RANK         LAST PHASE   OUTCOME       INIT MEM  WEIGHTS   KV TOKENS  GRAPH MEM"
        )
    );
    for r in &run.ranks {
        let fig = |p: Phase, n: &str| {
            r.figure(p, n)
                .and_then(|f| {
                    f.value
                        .as_f64()
                        .map(|v| (v, f.value.as_bytes().is_some(), f.value.resolution() as f64))
                })
                .map(|(v, b, res)| figure_text(v, b, res))
                .unwrap_or_else(|| "-".into())
        };
        let outcome = outcome_cell(r, style);
        let _ = writeln!(
            o,
            "{} {} {} {} {} {} {}",
            fit(&r.rank.to_string(), 12),
            fit(r.last_phase.name(), 12),
            outcome,
            fit(&fig(Phase::DistInit, "mem_usage"), 9),
            fit(&fig(Phase::WeightLoad, "mem_usage"), 9),
            fit(&fig(Phase::KvCache, "tokens"), 10),
            fig(Phase::CudaGraph, "mem_usage"),
        );
    }
    for r in &run.ranks {
        let at = |o: &crate::event::Origin| format!("{}:{}", run.source_name(o), o.line);
        match &r.failure {
            Some(f) => {
                let of = f
                    .consequence_of
                    .as_ref()
                    .map(|c| format!(" of {c}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    o,
                    "  {} {}{of}: {} in {}  {}",
                    r.rank,
                    f.outcome,
                    f.kind.name(),
                    f.phase,
                    style.dim(&f.origin.as_ref().map(at).unwrap_or_default())
                );
                let _ = writeln!(o, "    {}", super::cut(&f.message, 74));
            }
            None if r.outcome == Outcome::Incomplete => {
                let _ = writeln!(
                    o,
                    "  {} incomplete: its log ends in {}, nothing says why  {}",
                    r.rank,
                    r.last_phase,
                    style.dim(&r.last_origin.as_ref().map(at).unwrap_or_default())
                );
            }
            None => {}
        }
    }
}

/// `ready`, `failed oom`, `consequence`, `incomplete`, 13 columns.
fn outcome_cell(r: &RankRun, style: Style) -> String {
    let text = match (&r.failure, r.outcome) {
        (Some(f), Outcome::Failed) => format!("failed {}", f.kind.name()),
        (_, o) => o.name().to_string(),
    };
    let cell = fit(&text, 13);
    match r.outcome {
        Outcome::Ready => style.good(&cell),
        Outcome::Incomplete => style.warn(&cell),
        _ => style.bad(&cell),
    }
}

fn gpu_report(o: &mut String, run: &Run) {
    use crate::units::human_bytes;
    for g in &run.gpus {
        let _ = writeln!(
            o,
            "nvidia-smi GPU{}: peak {} used{}{}, {} samples",
            g.gpu,
            human_bytes(g.peak_used_bytes as i64),
            g.total_bytes
                .map(|t| format!(" of {}", human_bytes(t as i64)))
                .unwrap_or_default(),
            g.peak_at_s
                .map(|s| format!(" at t+{s:.1} s"))
                .unwrap_or_default(),
            g.samples,
        );
        let _ = writeln!(o, "  {}", g.source);
    }
    for p in &run.gpu_processes {
        let _ = writeln!(
            o,
            "nvidia-smi pid {}{}{}: peak {}{}",
            p.pid,
            p.rank
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
            p.gpu.map(|g| format!(" on GPU{g}")).unwrap_or_default(),
            human_bytes(p.peak_used_bytes as i64),
            p.peak_at_s
                .map(|s| format!(" at t+{s:.1} s"))
                .unwrap_or_default(),
        );
    }
}

pub fn lines_report(o: &mut String, run: &Run, style: Style) {
    let c = run.counts();
    let dup: u64 = run.sources.iter().map(|s| s.duplicate_events).sum();
    let _ = writeln!(
        o,
        "{} lines: {} events, {} other records, {} continuation, {} noise, {} blank",
        c.lines, c.events, c.records, c.continuation, c.noise, c.blank,
    );
    if dup > 0 {
        let _ = writeln!(
            o,
            "{dup} events seen in more than one file of the run were counted once"
        );
    }
    if c.split_long_lines > 0 {
        let _ = writeln!(
            o,
            "{} over-long line(s) were split to keep memory bounded",
            c.split_long_lines
        );
    }
    let _ = writeln!(
        o,
        "{} lines not understood{}",
        if c.unknown > 0 {
            style.warn(&c.unknown.to_string())
        } else {
            "0".into()
        },
        if c.unknown > 0 { ", for example:" } else { "" }
    );
    for s in &run.sources {
        for u in s.unknown_samples.iter().take(3) {
            let _ = writeln!(
                o,
                "  {}:{}\n    {}",
                s.path,
                u.line,
                super::cut(&u.text, 74)
            );
        }
        if let Some(cut) = &s.cut_last_line {
            let _ = writeln!(o, "  {} ends without a newline (cut?):", s.path);
            let _ = writeln!(o, "    {}", super::cut(cut, 74));
            if !s.cut_fields.is_empty() {
                let _ = writeln!(o, "    not read as values: {}", s.cut_fields.join(", "));
            }
        }
    }
    for n in &run.notes {
        for (i, line) in super::wrap(&crate::text::sanitize(n), 74)
            .into_iter()
            .enumerate()
        {
            let _ = writeln!(o, "{}{line}", if i == 0 { "note: " } else { "      " });
        }
    }
}

/// A node as the reader finds it in their files: its name, the hosts its NCCL lines name
/// (when they are not the name) and its ranks.
fn node_label(n: &crate::node::Node) -> String {
    let mut parts: Vec<String> = Vec::new();
    let hosts: Vec<&str> = n
        .hosts
        .iter()
        .map(String::as_str)
        .filter(|h| *h != n.name)
        .collect();
    match hosts.as_slice() {
        [] => {}
        [h] => parts.push(format!("host {h}")),
        hs => parts.push(format!("hosts {}", hs.join(", "))),
    }
    match n.ranks.as_slice() {
        [] => {}
        [r] => parts.push(r.to_string()),
        [first, .., last] => parts.push(format!("{} ranks {first}…{last}", n.ranks.len())),
    }
    if parts.is_empty() {
        n.name.clone()
    } else {
        format!("{} ({})", n.name, parts.join(", "))
    }
}
