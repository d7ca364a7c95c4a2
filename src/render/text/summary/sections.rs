//! The summary's sections around the phase table: start-up attempts, node clocks and stragglers (timing), nvidia-smi, line accounting.

use super::*;
use crate::base::units::{human_size, Seconds};
use crate::render::text::outcome::in_phase_after;

/// Lines listed before "and N more".
pub(super) const TIMING_LINES: usize = 8;

/// Groups of start-ups listed at the head and at the tail of a long restart loop.
pub(super) const ATTEMPT_GROUPS_HEAD: usize = 4;
pub(super) const ATTEMPT_GROUPS_TAIL: usize = 4;

/// The start-ups of a log, consecutive ones that ended alike (outcome, root rank, kind,
/// phase) on one line, `#1–#40 failed: TP2 oom in cuda_graph, 40 start-ups, …`, and the
/// one shown on a line of its own; a loop of many groups keeps its head and tail.
pub(super) fn attempt_lines(o: &mut String, run: &Run, style: Style) {
    let ended_alike = |a: &crate::model::AttemptInfo, b: &crate::model::AttemptInfo| {
        a.outcome == b.outcome
            && a.root == b.root
            && a.root_kind == b.root_kind
            && a.root_phase == b.root_phase
            && a.root_after == b.root_after
    };
    let mut groups: Vec<&[crate::model::AttemptInfo]> = Vec::new();
    let mut from = 0;
    for i in 1..=run.attempts.len() {
        let cut = i == run.attempts.len()
            || !ended_alike(&run.attempts[i - 1], &run.attempts[i])
            || run.attempts[i].index == run.attempt
            || run.attempts[i - 1].index == run.attempt;
        if cut {
            groups.push(&run.attempts[from..i]);
            from = i;
        }
    }
    let line = |g: &[crate::model::AttemptInfo]| -> String {
        let (first, last) = (&g[0], &g[g.len() - 1]);
        let root = match (&first.root, first.root_kind, first.root_phase) {
            (Some(r), Some(k), Some(p)) => {
                format!(": {r} {} {}", k.name(), in_phase_after(p, first.root_after))
            }
            _ => String::new(),
        };
        if g.len() == 1 {
            format!(
                "#{} {}{root}, {} events{}{}",
                first.index,
                first.outcome,
                first.events,
                first.start.map(|t| format!(", {t}")).unwrap_or_default(),
                if first.index == run.attempt {
                    "  (shown)"
                } else {
                    ""
                }
            )
        } else {
            let when = match (first.start, last.start) {
                (Some(a), Some(b)) if a == b => format!(", each starting {a}"),
                (Some(a), Some(b)) => format!(", starting {a} to {b}"),
                _ => String::new(),
            };
            format!(
                "#{}–#{} {}{root}, {} start-ups{when}",
                first.index,
                last.index,
                first.outcome,
                g.len()
            )
        }
    };
    let long = groups.len() > ATTEMPT_GROUPS_HEAD + ATTEMPT_GROUPS_TAIL + 1;
    let listed = |i: usize, g: &[crate::model::AttemptInfo]| {
        !long
            || i < ATTEMPT_GROUPS_HEAD
            || i >= groups.len() - ATTEMPT_GROUPS_TAIL
            || g.iter().any(|a| a.index == run.attempt)
    };
    // Groups not listed, as (first index, last index, start-ups, groups).
    let mut hidden: Option<(usize, usize, usize, usize)> = None;
    let flush = |o: &mut String, hidden: &mut Option<(usize, usize, usize, usize)>| {
        if let Some((a, b, n, g)) = hidden.take() {
            let text = format!(
                "… #{a}–#{b}: {n} start-ups in {g} group{} (--json lists all)",
                if g == 1 { "" } else { "s" }
            );
            put(o, style.width, 2, &text);
        }
    };
    for (i, g) in groups.iter().enumerate() {
        if listed(i, g) {
            flush(o, &mut hidden);
            put(o, style.width, 2, &line(g));
        } else {
            let (a, b) = (g[0].index, g[g.len() - 1].index);
            hidden = Some(match hidden {
                Some((first, _, n, k)) => (first, b, n + g.len(), k + 1),
                None => (a, b, g.len(), 1),
            });
        }
    }
    flush(o, &mut hidden);
}

pub(super) fn signed_s(s: Seconds) -> String {
    format!("{:+.2}", s.get()).replace('-', "−")
}

/// The nodes and their clocks, then each straggler: which rank, which phase, how late and
/// whether the time went before the phase's first line or inside it.
pub(crate) fn timing_report(o: &mut String, run: &Run, stats: &[PhaseStats], style: Style) {
    if !run.nodes.is_empty() {
        let reference = run.nodes.iter().find(|n| n.reference);
        let ref_name = reference.map_or("?", |n| n.name.as_str());
        let head = format!(
            "{} nodes, clocks against {ref_name}'s (barrier exits; stamps {}):",
            run.nodes.len(),
            {
                let offsets: Vec<_> = run.nodes.iter().filter_map(|n| n.offset.as_ref()).collect();
                if offsets.iter().any(|x| x.applied) {
                    "moved onto its clock"
                } else if !offsets.is_empty() {
                    // Estimated and not applied: only `--no-clock-align` does that.
                    "as printed, --no-clock-align"
                } else {
                    "as printed: no other node's offset is known"
                }
            }
        );
        o.push('\n');
        put(o, style.width, 0, &head);
        if let Some(r) = reference {
            let _ = writeln!(o, "  {}: reference", node_label(r));
        }
        let mut others: Vec<&crate::model::node::Node> =
            run.nodes.iter().filter(|n| !n.reference).collect();
        others
            .sort_by_key(|n| std::cmp::Reverse(n.offset.as_ref().map_or(0, |x| x.mid_ms().abs())));
        for n in others.iter().take(TIMING_LINES) {
            let line = match &n.offset {
                Some(x) => format!(
                    "  {}: {} s ± {:.2} s, in ({}, {}) s from {} barrier exit{}{}",
                    node_label(n),
                    signed_s(x.mid()),
                    x.half_width().get(),
                    signed_s(x.lo()),
                    signed_s(x.hi()),
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
            for l in wrap_indented(line.trim_start(), style.width, "  ", "    ") {
                let _ = writeln!(o, "{l}");
            }
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
            put(
                o,
                style.width,
                0,
                "no straggler: no rank ends a phase more than 1 s after the others, nor past the stamps' step and the clocks' uncertainty",
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
        let text = format!(
            "straggler: {} in {}, ended {} s after the others (± {} s), {at}",
            s.rank,
            p.phase,
            secs(s.late_s),
            secs(s.uncertainty_s)
        );
        for line in wrap_indented(&text, style.width, "", "  ") {
            let _ = writeln!(o, "{}", style.warn(&line));
        }
    }
    if all.len() > TIMING_LINES {
        let _ = writeln!(
            o,
            "and {} more stragglers (--json lists all)",
            all.len() - TIMING_LINES
        );
    }
}
pub(super) fn gpu_report(o: &mut String, run: &Run, width: usize) {
    for g in &run.gpus {
        let text = format!(
            "nvidia-smi GPU{}: peak {} used{}{}, {} samples",
            g.gpu,
            human_size(g.peak_used_bytes),
            g.total_bytes
                .map(|t| format!(" of {}", human_size(t)))
                .unwrap_or_default(),
            g.peak_at_s
                .map(|s| format!(" at {}", crate::base::units::since_start(s)))
                .unwrap_or_default(),
            g.samples,
        );
        put(o, width, 0, &text);
        let _ = writeln!(o, "  {}", g.source);
    }
    for p in &run.gpu_processes {
        let text = format!(
            "nvidia-smi pid {}{}{}: peak {}{}",
            p.pid,
            p.rank
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
            p.gpu.map(|g| format!(" on GPU{g}")).unwrap_or_default(),
            human_size(p.peak_used_bytes),
            p.peak_at_s
                .map(|s| format!(" at {}", crate::base::units::since_start(s)))
                .unwrap_or_default(),
        );
        put(o, width, 0, &text);
    }
}

pub(crate) fn lines_report(o: &mut String, run: &Run, style: Style) {
    let c = run.counts();
    let dup: u64 = run.sources.iter().map(|s| s.duplicate_events).sum();
    let counts = format!(
        "{} lines: {} events, {} other records, {} continuation, {} noise, {} blank",
        c.lines, c.events, c.records, c.continuation, c.noise, c.blank,
    );
    put(o, style.width, 0, &counts);
    if dup > 0 {
        put(
            o,
            style.width,
            0,
            &format!("{dup} events seen in more than one file of the run were counted once"),
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
            // Samples of what was not understood, not evidence: cut to one line.
            let _ = writeln!(
                o,
                "  {}:{}\n    {}",
                s.path,
                u.line,
                crate::render::cut(&u.text, style.width.saturating_sub(6))
            );
        }
        if let Some(cut) = &s.cut_last_line {
            let _ = writeln!(o, "  {} ends without a newline (cut?):", s.path);
            let _ = writeln!(
                o,
                "    {}",
                crate::render::cut(cut, style.width.saturating_sub(6))
            );
            if !s.cut_fields.is_empty() {
                let _ = writeln!(o, "    not read as values: {}", s.cut_fields.join(", "));
            }
        }
    }
    for n in &run.notes {
        for line in wrap_indented(
            &crate::base::text::sanitize(&crate::render::text::notes::read_note(n)),
            style.width,
            "note: ",
            "      ",
        ) {
            let _ = writeln!(o, "{line}");
        }
    }
}

/// A node as the reader finds it in their files: its name, the hosts its lines name
/// (when they are not the name) and its ranks.
pub(super) fn node_label(n: &crate::model::node::Node) -> String {
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
