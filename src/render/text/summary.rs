//! `rankscope summary`: one run, phases × ranks, at the output's width.

use std::fmt::Write;

use super::outcome::{failure_group, failure_story, failure_verb, in_phase, quoted_message};
use crate::analysis::align::PhaseStats;
use crate::analysis::outcome::RunOutcome;
use crate::model::{Failure, Outcome, Phase, RankRun, Run};
use crate::render::{figure_text, fit, put, rank_span, wrap, wrap_indented, Style};
use crate::report::{RunReport, RunState};

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

pub fn summary(run: &Run, report: &RunReport, per_rank: bool, style: Style) -> String {
    let mut o = String::new();
    let (stats, out) = (&report.phases, &report.outcome);
    let (status, paint): (&str, fn(&Style, &str) -> String) = match report.state(run) {
        RunState::Failed => ("FAILED", Style::bad),
        RunState::Ready => ("READY", Style::good),
        RunState::NoRanks => ("NO RANKS", Style::warn),
        RunState::Incomplete => ("INCOMPLETE", Style::warn),
    };
    let counts = format!(
        "{} rank{}, {} source{}{}",
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
    let head = format!("{status}  {}  {counts}", run.name);
    if crate::base::text::columns(&head) <= style.width {
        let name = style.bold(&run.name);
        let _ = writeln!(o, "{}  {name}  {counts}", paint(&style, status));
    } else {
        // Narrower than the line: wrapped, the status painted where it starts.
        for (i, line) in wrap_indented(&head, style.width, "", "  ")
            .iter()
            .enumerate()
        {
            match line.strip_prefix(status).filter(|_| i == 0) {
                Some(rest) => {
                    let _ = writeln!(o, "{}{rest}", paint(&style, status));
                }
                None => {
                    let _ = writeln!(o, "{line}");
                }
            }
        }
    }
    if let Some(start) = run.start {
        let end = run.events.iter().filter_map(|e| e.ts).max();
        let line = format!(
            "started {start}{}{}",
            end.map(|e| format!(", last line {} s later", (e - start).num_seconds()))
                .unwrap_or_default(),
            if run.year_inferred {
                " (date inferred)"
            } else {
                ""
            }
        );
        put(&mut o, style.width, 0, &line);
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
        let story = format!("verdict: {}", failure_story(&out.story));
        for line in wrap_indented(&story, style.width, "", "  ") {
            let _ = writeln!(o, "{}", style.bad(&line));
        }
        if let Some((text, f)) = root_line(run, out) {
            for line in wrap_indented(&text, style.width, "", "  ") {
                let _ = writeln!(o, "{line}");
            }
            // A memory failure's figures are in its group's line below; any other is
            // known by its words.
            if !crate::analysis::cause::is_memory(f.kind) {
                let quote = crate::base::text::truncate(quoted_message(f), ROOT_QUOTE_COLUMNS);
                for line in wrap_indented(&quote, style.width, "  ", "    ") {
                    let _ = writeln!(o, "{line}");
                }
            }
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
        for line in wrap_indented(&failure_group(g), style.width, "", "  ") {
            let _ = writeln!(o, "{}", style.bad(&line));
        }
    }
    // A memory failure's remedies, as far as the run's own figures support them (`diff`
    // against a run that started measures the deficit better).
    if out.failed() {
        for (i, l) in super::remedy::lines(&report.remedies).iter().enumerate() {
            let text = if i == 0 {
                format!("remedy: {l}")
            } else {
                format!("  {l}")
            };
            for line in wrap_indented(&text, style.width, "", "    ") {
                let _ = writeln!(o, "{line}");
            }
        }
    }
    // Launcher lines that only echo a rank's failure or shut down are not news here.
    for f in run
        .launcher_failures
        .iter()
        .filter(|f| f.outcome == Outcome::Failed)
    {
        let text = format!("outside any rank: {}", f.message);
        for line in wrap_indented(&text, style.width, "", "  ") {
            let _ = writeln!(o, "{}", style.bad(&line));
        }
    }
    if run.attempts.len() > 1 {
        let _ = writeln!(
            o,
            "attempt {} of {} start-ups in this log (--attempt N shows another):",
            run.attempt,
            run.attempts.len()
        );
        attempt_lines(&mut o, run, style);
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
        let mut marks = Marks::default();
        for s in stats {
            phase_block(&mut o, s, out.ranks, style, &mut marks);
        }
        for (used, legend) in [(marks.star, STAR_LEGEND), (marks.unknown, UNKNOWN_LEGEND)] {
            if used {
                for line in wrap_indented(legend, style.width, "", "  ") {
                    let _ = writeln!(o, "{line}");
                }
            }
        }
        timing_report(&mut o, run, stats, style);
    }
    if per_rank {
        o.push('\n');
        rank_table(&mut o, run, style);
    }
    o.push('\n');
    if !run.gpus.is_empty() || !run.gpu_processes.is_empty() {
        gpu_report(&mut o, run, style.width);
    }
    lines_report(&mut o, run, style);
    o
}

/// The root of a failed run as `summary` names it, with its evidence (`first to fail on
/// its own: TP2 ran out of memory in cuda_graph (phase from frames), server.log:82`), and
/// the failure (the HTML report quotes its line).
pub fn root_line<'r>(run: &'r Run, out: &RunOutcome) -> Option<(String, &'r Failure)> {
    let (r, f) = run.root_failure()?;
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
    let text = format!(
        "{label}: {} {} {} (phase from {}), {at}",
        r.rank,
        match f.outcome {
            Outcome::Stalled => "stalled",
            _ => failure_verb(f.kind),
        },
        in_phase(f.phase),
        f.phase_from.replace('_', " ")
    );
    Some((text, f))
}

/// Lines listed before "and N more".
const TIMING_LINES: usize = 8;

/// Groups of start-ups listed at the head and at the tail of a long restart loop.
const ATTEMPT_GROUPS_HEAD: usize = 4;
const ATTEMPT_GROUPS_TAIL: usize = 4;

/// The start-ups of a log, consecutive ones that ended alike (outcome, root rank, kind,
/// phase) on one line, `#1–#40 failed TP2 oom in cuda_graph, 40 start-ups, …`, and the
/// one shown on a line of its own; a loop of many groups keeps its head and tail.
fn attempt_lines(o: &mut String, run: &Run, style: Style) {
    let ended_alike = |a: &crate::model::AttemptInfo, b: &crate::model::AttemptInfo| {
        a.outcome == b.outcome
            && a.root == b.root
            && a.root_kind == b.root_kind
            && a.root_phase == b.root_phase
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
            (Some(r), Some(k), Some(p)) => format!(" {r} {} {}", k.name(), in_phase(p)),
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

fn signed_s(ms: i64) -> String {
    format!("{:+.2}", ms as f64 / 1000.0).replace('-', "−")
}

/// The nodes and their clocks, then each straggler: which rank, which phase, how late and
/// whether the time went before the phase's first line or inside it (the HTML report
/// prints them under its timeline).
pub fn timing_report(o: &mut String, run: &Run, stats: &[PhaseStats], style: Style) {
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
                "no straggler: every phase ends within the stamps' and clocks' uncertainty",
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

/// Under the phase table when a `RANKS` figure carries a `*`.
pub const STAR_LEGEND: &str =
    "* ranks that finished the phase, of all: some that began it did not finish it";
/// Under the phase table when a duration or skew cell is `-`.
pub const UNKNOWN_LEGEND: &str =
    "- not known: no rank has both ends nor a printed duration, or < 2 ranks ended";

/// The marks a table used, each explained under it.
#[derive(Default)]
struct Marks {
    star: bool,
    unknown: bool,
}

/// Columns before the phase table's NOTES: PHASE 12, RANKS 6, DURATION 21, END SKEW 9,
/// each with its space.
const NOTES_COLUMN: usize = 52;

/// Writes one phase's rows, noting the marks it used (`STAR_LEGEND`, `UNKNOWN_LEGEND`).
fn phase_block(o: &mut String, s: &PhaseStats, total: usize, style: Style, marks: &mut Marks) {
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
    if let Some(note) = end_before_start_note(&s.end_before_start) {
        known.push(note);
    }
    let skew = s
        .end_skew_s
        .map(|v| format!("{} s", secs(v)))
        .unwrap_or_else(|| "-".into());
    // `ready` is a moment (SGLang prints it once): nothing to measure, nothing to mark.
    let (dur, skew) = if s.phase == Phase::Ready && s.duration_s.is_none() && s.end_skew_s.is_none()
    {
        (String::new(), String::new())
    } else {
        (dur, skew)
    };
    let starred = s.phase != Phase::Ready && s.completed != s.ranks;
    marks.star |= starred;
    marks.unknown |= dur == "-" || skew == "-";
    let ranks = if starred {
        format!("{}/{}*", s.completed, total)
    } else {
        format!("{}/{}", s.ranks, total)
    };
    let plain_notes = known.len();
    if !s.stragglers.is_empty() {
        known.push(format!(
            "straggler{}: {}",
            if s.stragglers.len() > 1 { "s" } else { "" },
            rank_span(&s.stragglers)
        ));
    }
    // NOTES wraps inside its column; the straggler note (last) is coloured from the line
    // it starts on.
    let notes = known.join("; ");
    let before_straggler = known[..plain_notes].join("; ");
    let note_lines = wrap(&notes, style.width.saturating_sub(NOTES_COLUMN).max(20));
    let mut covered = 0;
    for (i, line) in note_lines.iter().enumerate() {
        let lead = if i == 0 {
            format!(
                "{} {} {} {} ",
                fit(s.phase.name(), 12),
                fit(&ranks, 6),
                fit(&dur, 21),
                fit(&skew, 9)
            )
        } else {
            " ".repeat(NOTES_COLUMN)
        };
        let warn = plain_notes < known.len() && covered + line.len() > before_straggler.len();
        covered += line.len() + 1;
        let cell = if warn { style.warn(line) } else { line.clone() };
        let _ = writeln!(o, "{}", format!("{lead}{cell}").trim_end());
    }
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
            style.warn(&format!("  off median: {}", rank_span(&f.outliers)))
        };
        let _ = writeln!(o, "  {} {}{}", fit(&figure_label(f.name), 16), val, outl);
    }
}

/// Ranks whose end of a phase is stamped before its start: said, instead of a negative
/// duration.
pub fn end_before_start_note(ranks: &[(crate::base::event::Rank, f64)]) -> Option<String> {
    let most = ranks
        .iter()
        .map(|r| r.1)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))?;
    let names: Vec<crate::base::event::Rank> = ranks.iter().map(|r| r.0.clone()).collect();
    Some(format!(
        "{}: end stamped {}{} s before start (stamps out of order), no duration",
        rank_span(&names),
        if names.len() > 1 { "up to " } else { "" },
        secs(most),
    ))
}

/// The rank table's header; its rows are as wide when their figures fit their columns.
const RANK_TABLE_HEAD: &str =
    "RANK         LAST PHASE  OUTCOME      INIT MEM   WEIGHTS    KV TOKENS  GRAPH MEM";

fn rank_table(o: &mut String, run: &Run, style: Style) {
    let narrow = RANK_TABLE_HEAD.len() > style.width;
    if !narrow {
        let _ = writeln!(o, "{}", style.bold(RANK_TABLE_HEAD));
    }
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
        if narrow {
            // One wrapped line per rank, the cells named.
            let text = format!(
                "{}: {}, {}; init mem {}, weights {}, KV tokens {}, graph mem {}",
                r.rank,
                r.last_phase.name(),
                outcome_text(r),
                fig(Phase::DistInit, "mem_usage"),
                fig(Phase::WeightLoad, "mem_usage"),
                fig(Phase::KvCache, "tokens"),
                fig(Phase::CudaGraph, "mem_usage"),
            );
            put(o, style.width, 0, &text);
            continue;
        }
        let outcome = outcome_cell(r, style);
        // Figures are padded, never cut: a wider one shifts the row instead.
        let _ = writeln!(
            o,
            "{} {} {} {:<10} {:<10} {:<10} {}",
            fit(&r.rank.to_string(), 12),
            fit(r.last_phase.name(), 11),
            outcome,
            fig(Phase::DistInit, "mem_usage"),
            fig(Phase::WeightLoad, "mem_usage"),
            fig(Phase::KvCache, "tokens"),
            fig(Phase::CudaGraph, "mem_usage"),
        );
    }
    failure_groups(o, run, style);
}

/// A failure message past this many characters is cut in the text (`--json` has it
/// whole): a hostile log can put megabytes on one line.
const MESSAGE_CHARS: usize = 4000;
/// The root failure's words under the verdict: a few lines at most (`--ranks` and `--json`
/// have them whole).
const ROOT_QUOTE_COLUMNS: usize = 300;

/// A message with every figure masked and its sentences sorted, so that eight OOM
/// messages that differ only in their per-process figures, and in the order PyTorch
/// listed the processes, read as one.
fn masked(message: &str) -> String {
    let mut sentences: Vec<String> = message.split(". ").map(masked_figures).collect();
    sentences.sort();
    sentences.join(". ")
}

fn masked_figures(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut in_number = false;
    for c in message.chars() {
        if c.is_ascii_digit() || (in_number && (c == '.' || c == ',')) {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// Each rank's failure, or its incomplete log, under the rank table; ranks whose failure
/// reads the same (outcome, kind, phase, whose consequence, message up to its figures)
/// share one entry that names them all (`TP0–TP7 (8 ranks)`), the evidence line and the
/// message (whole, wrapped) of the first, and whether the others' figures differ.
fn failure_groups(o: &mut String, run: &Run, style: Style) {
    type Key = (String, Option<String>);
    let mut groups: Vec<(Key, Vec<&RankRun>)> = Vec::new();
    for r in &run.ranks {
        let key: Key = match &r.failure {
            Some(f) => (
                format!(
                    "{}{}: {} {}",
                    f.outcome,
                    f.consequence_of
                        .as_ref()
                        .map(|c| format!(" of {c}"))
                        .unwrap_or_default(),
                    f.kind.name(),
                    in_phase(f.phase)
                ),
                Some(masked(&f.message)),
            ),
            None if r.outcome == Outcome::Incomplete => (
                format!(
                    "incomplete: its log ends in {}, nothing says why",
                    r.last_phase
                ),
                None,
            ),
            None => continue,
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    let at = |r: &RankRun| {
        let origin = match &r.failure {
            Some(f) => f.origin.as_ref(),
            None => r.last_origin.as_ref(),
        };
        origin
            .map(|x| format!("{}:{}", run.source_name(x), x.line))
            .unwrap_or_default()
    };
    for ((what, _), members) in &groups {
        let who = if members.len() == 1 {
            members[0].rank.to_string()
        } else {
            let span = rank_span(members.iter().map(|r| &r.rank));
            if span.contains(" ranks)") {
                span
            } else {
                format!("{span} ({} ranks)", members.len())
            }
        };
        let first = at(members[0]);
        let evidence = match members.len() {
            1 => first,
            n => format!("{first} ({}, and {} more lines)", members[0].rank, n - 1),
        };
        let head = format!("{who} {what}  {evidence}");
        for line in wrap_indented(&head, style.width, "  ", "      ") {
            let _ = writeln!(o, "{line}");
        }
        if let Some(f) = &members[0].failure {
            let message = quoted_message(f);
            let chars = message.chars().count();
            let mut m: String = message.chars().take(MESSAGE_CHARS).collect();
            if chars > MESSAGE_CHARS {
                m.push_str(&format!(
                    " … ({} more characters: --json has the message whole)",
                    chars - MESSAGE_CHARS
                ));
            }
            let same = members
                .iter()
                .all(|r| r.failure.as_ref().is_some_and(|g| g.message == f.message));
            if members.len() > 1 {
                m.push_str(if same {
                    " (the same message on every rank listed)"
                } else {
                    " (the others' messages differ only in figures and the order of their sentences; --json lists each)"
                });
            }
            for line in wrap_indented(&m, style.width, "    ", "      ") {
                let _ = writeln!(o, "{line}");
            }
        }
    }
}

/// `ready`, `failed oom`, `consequence`, `incomplete`, 12 columns.
fn outcome_text(r: &RankRun) -> String {
    match (&r.failure, r.outcome) {
        (Some(f), Outcome::Failed) => format!("failed {}", f.kind.name()),
        (_, o) => o.name().to_string(),
    }
}

fn outcome_cell(r: &RankRun, style: Style) -> String {
    let cell = fit(&outcome_text(r), 12);
    match r.outcome {
        Outcome::Ready => style.good(&cell),
        Outcome::Incomplete => style.warn(&cell),
        _ => style.bad(&cell),
    }
}

fn gpu_report(o: &mut String, run: &Run, width: usize) {
    use crate::base::units::human_bytes;
    for g in &run.gpus {
        let text = format!(
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
            human_bytes(p.peak_used_bytes as i64),
            p.peak_at_s
                .map(|s| format!(" at t+{s:.1} s"))
                .unwrap_or_default(),
        );
        put(o, width, 0, &text);
    }
}

pub fn lines_report(o: &mut String, run: &Run, style: Style) {
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
            &crate::base::text::sanitize(n),
            style.width,
            "note: ",
            "      ",
        ) {
            let _ = writeln!(o, "{line}");
        }
    }
}

/// A node as the reader finds it in their files: its name, the hosts its NCCL lines name
/// (when they are not the name) and its ranks.
fn node_label(n: &crate::model::node::Node) -> String {
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
