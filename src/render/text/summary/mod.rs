//! `rankscope summary`: one run, phases × ranks, at the output's width.

mod sections;
pub(crate) use sections::*;

use std::fmt::Write;

use super::outcome::{failure_group, failure_story, failure_verb, in_phase_after, quoted_message};
use crate::analysis::align::PhaseStats;
use crate::analysis::outcome::RunOutcome;
use crate::model::{Failure, Outcome, Phase, RankRun, Run};
use crate::render::{figure_text, fit, put, rank_span, wrap, wrap_indented, Style};
use crate::report::{RunReport, RunState};

pub(crate) fn figure_label(name: &str) -> String {
    name.replace('_', " ")
}

/// Seconds without their unit, for the table's `min / med / max s` (`units::seconds`'s
/// rule).
use crate::base::units::{round_s, seconds_number as secs};

/// The `summary` text of a run: the verdict, then the phase table (one row per rank with
/// `per_rank`, as `--ranks` asks).
pub fn summary(run: &Run, report: &RunReport, per_rank: bool, style: Style) -> String {
    let mut o = String::new();
    let (stats, out) = (&report.phases, &report.outcome);
    head_lines(&mut o, run, report, style);
    verdict_lines(&mut o, run, report, style);
    o.push('\n');
    phase_table(&mut o, run, stats, out.ranks, style);
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

/// The run's head: its state (FAILED, READY, …), name and counts; when it started and
/// how long its log runs; processes beside the ranks.
fn head_lines(o: &mut String, run: &Run, report: &RunReport, style: Style) {
    let out = &report.outcome;
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
        // At the resolution of the first line's format: `.000` of a millisecond stamp
        // is shown, a whole-second stamp has no fraction.
        let shown = if run.stamp_step_ms(start) < 1000
            && chrono::Timelike::nanosecond(&start) % 1_000_000 == 0
        {
            start.format("%Y-%m-%d %H:%M:%S%.3f").to_string()
        } else {
            start.to_string()
        };
        let line = format!(
            "started {shown}{}{}",
            // Rounded, not truncated: 351.997 s is `352 s`.
            end.map(|e| format!(", last event {} s later", round_s(e - start)))
                .unwrap_or_default(),
            date_inference_mark(run)
        );
        put(o, style.width, 0, &line);
    }
    let processes = run.ranks.len() - out.ranks;
    if processes > 0 {
        let _ = writeln!(
            o,
            "{processes} engine process{} beside the ranks (not counted as ranks)",
            if processes == 1 { "" } else { "es" }
        );
    }
}

/// What happened: the verdict and the root failure quoted (or why the run is
/// incomplete), the failure groups, remedies, failures outside any rank, and the other
/// start-ups in the log.
fn verdict_lines(o: &mut String, run: &Run, report: &RunReport, style: Style) {
    let out = &report.outcome;
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
    for text in super::outcome::outside_any_rank(&out.launcher_failures) {
        for line in wrap_indented(&text, style.width, "", "  ") {
            let _ = writeln!(o, "{}", style.bad(&line));
        }
    }
    if run.attempts.len() > 1 {
        let head = format!(
            "attempt {} of {} start-ups in this log (--attempt N shows another):",
            run.attempt,
            run.attempts.len()
        );
        for line in wrap_indented(&head, style.width, "", "  ") {
            let _ = writeln!(o, "{line}");
        }
        attempt_lines(o, run, style);
    }
}

/// The phases × ranks table with its legends and the timing findings, or, when no
/// start-up event was read, what the lines looked like and where to go next.
fn phase_table(o: &mut String, run: &Run, stats: &[PhaseStats], ranks: usize, style: Style) {
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
        // As wide as the widest count (`10083/16384*` on a fleet), never cut: a count
        // cut to `8192/…` hid how many ranks the run has.
        let ranks_width = (stats.iter())
            .map(|s| ranks_cell(s, ranks).0.chars().count())
            .fold(RANKS_MIN_WIDTH, usize::max);
        let header = format!(
            "{:<13}{:<width$}DURATION min/med/max  END SKEW  NOTES",
            "PHASE",
            "RANKS",
            width = ranks_width + 1
        );
        let _ = writeln!(o, "{}", style.bold(&header));
        let mut marks = Marks::default();
        for s in stats {
            phase_block(o, s, ranks, ranks_width, style, &mut marks);
        }
        for (used, legend) in [(marks.star, STAR_LEGEND), (marks.unknown, UNKNOWN_LEGEND)] {
            if used {
                for line in wrap_indented(legend, style.width, "", "  ") {
                    let _ = writeln!(o, "{line}");
                }
            }
        }
        timing_report(o, run, stats, style);
    }
}

/// The root of a failed run as `summary` names it, with its evidence (`first to fail on
/// its own: TP2 ran out of memory in cuda_graph (phase from frames), server.log:82`), and
/// the failure (the HTML report quotes its line).
pub(crate) fn root_line<'r>(run: &'r Run, out: &RunOutcome) -> Option<(String, &'r Failure)> {
    let (r, f) = run.root_failure()?;
    let at = f.origin.as_ref().map(|o| run.cite(o)).unwrap_or_default();
    let label = if out.failed_ranks > 1 {
        "first to fail on its own"
    } else {
        "root"
    };
    // A rank reported dead by another process: the line is the reporter's, and the
    // rank's own log, ending at its phase line, says nothing of its end.
    let at = match &f.reported_by {
        Some(who) => format!("reported by {who} at {at}; its own log says nothing of its end"),
        None => at,
    };
    let text = format!(
        "{label}: {} {} {} (phase from {}), {at}",
        r.rank,
        match f.outcome {
            Outcome::Stalled => "stalled",
            _ => failure_verb(f.kind),
        },
        in_phase_after(f.phase, f.after_phase),
        phase_from_text(run, f)
    );
    Some((text, f))
}

/// Where a failure's phase was read: `frames`, `wording`, `event` (its own line's phase),
/// or `last event at server.log:23` (the phase line it was placed after).
fn phase_from_text(run: &Run, f: &Failure) -> String {
    // Placed after its last phase line (`after_last_phase`, the phase words say `after
    // kv_cache, before ready`): read from that line, as `last_event` is.
    let from = match f.phase_from {
        "after_last_phase" => "last event".to_string(),
        other => other.replace('_', " "),
    };
    match &f.phase_line {
        Some(o) => format!("{from} at {}", run.cite(o)),
        None => from,
    }
}

/// Under the phase table when a `RANKS` figure carries a `*`.
pub(crate) const STAR_LEGEND: &str =
    "* ranks that finished the phase, of all: some that began it did not finish it";
/// Under the phase table when a duration or skew cell is `-`.
pub(crate) const UNKNOWN_LEGEND: &str =
    "- not known: no rank has both ends nor a printed duration, or < 2 ranks ended";

/// The marks a table used, each explained under it.
#[derive(Default)]
struct Marks {
    star: bool,
    unknown: bool,
}

/// Columns before the phase table's NOTES with the narrowest RANKS column: PHASE 12,
/// RANKS 6, DURATION 21, END SKEW 9, each with its space.
const NOTES_COLUMN: usize = 52;

/// The RANKS column's width when every count fits in it (`8/8`, `128/128`).
const RANKS_MIN_WIDTH: usize = 6;

/// A phase's RANKS cell (`8/8`, or `6/8*` when some that began it did not finish it) and
/// whether it carries the star.
fn ranks_cell(s: &PhaseStats, total: usize) -> (String, bool) {
    let starred = s.phase != Phase::Ready && s.completed != s.ranks;
    let cell = if starred {
        format!("{}/{}*", s.completed, total)
    } else {
        format!("{}/{}", s.ranks, total)
    };
    (cell, starred)
}

/// Writes one phase's rows, noting the marks it used (`STAR_LEGEND`, `UNKNOWN_LEGEND`).
fn phase_block(
    o: &mut String,
    s: &PhaseStats,
    total: usize,
    ranks_width: usize,
    style: Style,
    marks: &mut Marks,
) {
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
    let (ranks, starred) = ranks_cell(s, total);
    marks.star |= starred;
    marks.unknown |= dur == "-" || skew == "-";
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
    // Narrower than the columns and 20 for NOTES (`--width 60`, COLUMNS=60): the notes go
    // on lines of their own under the row, wrapped at the width, rather than past it.
    let notes_column = NOTES_COLUMN + ranks_width - RANKS_MIN_WIDTH;
    let beside = style.width >= notes_column + 20;
    let row = format!(
        "{} {} {} {} ",
        fit(s.phase.name(), 12),
        fit(&ranks, ranks_width),
        fit(&dur, 21),
        fit(&skew, 9)
    );
    let (note_lines, indent) = if beside {
        (wrap(&notes, style.width - notes_column), notes_column)
    } else {
        let _ = writeln!(o, "{}", row.trim_end());
        let lines = if notes.is_empty() {
            Vec::new()
        } else {
            wrap(&notes, style.width.saturating_sub(4).max(20))
        };
        (lines, 4)
    };
    let mut covered = 0;
    for (i, line) in note_lines.iter().enumerate() {
        let lead = if i == 0 && beside {
            row.clone()
        } else {
            " ".repeat(indent)
        };
        let warn = plain_notes < known.len() && covered + line.len() > before_straggler.len();
        covered += line.len() + 1;
        let cell = if warn { style.warn(line) } else { line.clone() };
        let _ = writeln!(o, "{}", format!("{lead}{cell}").trim_end());
    }
    figure_rows(o, s, style);
}

/// The phase's figures under its row: one value when every rank printed the same, else
/// min / median / max, with the ranks off the median.
fn figure_rows(o: &mut String, s: &PhaseStats, style: Style) {
    for f in &s.figures {
        if f.name == "elapsed" {
            continue;
        }
        let sp = &f.spread;
        let number =
            |v: f64| crate::render::figure_number(&f.name, v, f.is_bytes, f.resolution, usize::MAX);
        let val = if sp.min == sp.max {
            number(sp.median)
        } else {
            format!(
                "{} / {} / {}",
                number(sp.min),
                number(sp.median),
                number(sp.max)
            )
        };
        // A count in a unit a grammar declared says what it counts (`2,048 pages`).
        let val = crate::render::with_unit_word(&f.name, val);
        let outl = if f.outliers.is_empty() {
            String::new()
        } else {
            style.warn(&format!("  off median: {}", rank_span(&f.outliers)))
        };
        let _ = writeln!(
            o,
            "  {} {}{}",
            fit(&figure_label(f.name.name()), 16),
            val,
            outl
        );
    }
}

/// Ranks whose end of a phase is stamped before its start: said, instead of a negative
/// duration.
pub(crate) fn end_before_start_note(
    ranks: &[(crate::base::event::Rank, crate::base::units::Seconds)],
) -> Option<String> {
    let most = ranks.iter().map(|r| r.1).reduce(|m, v| m.max(v))?;
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
                .map(|(v, b, res)| {
                    if narrow {
                        figure_text(v, b, res)
                    } else {
                        crate::render::figure_cell(v, b, res, 10)
                    }
                })
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
                    // `consequence of TP2`, but `terminated after TP2`.
                    f.consequence_of
                        .as_ref()
                        .map(|c| match f.outcome {
                            Outcome::Consequence => format!(" of {c}"),
                            _ => format!(" after {c}"),
                        })
                        .unwrap_or_default(),
                    f.kind.name(),
                    in_phase_after(f.phase, f.after_phase)
                ) + &(f.reported_by.as_ref())
                    .map(|w| format!(", reported by {w}"))
                    .unwrap_or_default(),
                Some(masked(&f.message)),
            ),
            // An engine row with no phase line (a coordinator that printed only its
            // own notices) ends nowhere in start-up: its end says nothing.
            None if r.is_process() && r.phases.is_empty() => continue,
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
        origin.map(|x| run.cite(x)).unwrap_or_default()
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
        // One launcher line that ended them all is one line, not one per rank.
        let lines: std::collections::BTreeSet<String> = members.iter().map(|r| at(r)).collect();
        let evidence = match (members.len(), lines.len()) {
            (1, _) => first,
            (n, 1) => format!("{first} (one line for all {n})"),
            (_, l) => format!("{first} ({}, and {} more lines)", members[0].rank, l - 1),
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
    // Never cut inside a word (`failed exce…`): a failure kind too long for the cell
    // beside `failed` stands alone (`exception`), else `failed` does; the groups under the
    // table give both.
    let text = outcome_text(r);
    let text = match &r.failure {
        Some(f) if text.chars().count() > 12 && r.outcome == Outcome::Failed => {
            let kind = f.kind.name();
            if kind.chars().count() <= 12 {
                kind.to_string()
            } else {
                "failed".to_string()
            }
        }
        _ => text,
    };
    let cell = fit(&text, 12);
    match r.outcome {
        Outcome::Ready => style.good(&cell),
        Outcome::Incomplete => style.warn(&cell),
        _ => style.bad(&cell),
    }
}

/// What the header says of inferred dates: the start's own date, or only later time-only
/// lines' (a start printed with its date is not a guess, though lines after it may be).
pub(crate) fn date_inference_mark(run: &crate::model::Run) -> &'static str {
    if run.start_date_inferred {
        " (date inferred)"
    } else if run.year_inferred {
        " (later lines' dates inferred)"
    } else {
        ""
    }
}
