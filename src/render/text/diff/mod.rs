//! `rankscope diff`: the verdict first, then the tables that support it.

mod snapshots;
pub use snapshots::*;

use std::collections::BTreeMap;
use std::fmt::Write;

use super::outcome::{failure_group, failure_story, failure_verb, in_phase_after};
use super::summary::figure_label;
pub(crate) use super::verdict::verdict_rows;
use crate::analysis::attribute::{
    Attribution, ClockNote, MatchEvidence, RankMatchNote, SnapshotNote,
};
use crate::analysis::diff::{
    BaselineEnd, CapacityLoss, ComparabilityNote, ConfigNote, DeltaClass, FigureDiff, FigureLine,
    Headline, RunDiff, Side, Status,
};
use crate::base::text::sanitize;
use crate::base::units::{group_thousands, human_bytes, human_delta};
use crate::model::notes::ReadNote;
use crate::render::text::notes::read_note;
use crate::render::{
    cut, figure_shown, fit, rank_span, with_unit_word, wrap, wrap_indented, Style,
};
use crate::report::DiffReport;

/// A figure's delta as tables show it: MiB/GiB for memory, signed counts otherwise, a
/// seconds figure to the tenth (`+0.2`); the unit word, if any, is the caller's.
pub(crate) fn delta_text(f: &FigureDiff, v: f64) -> String {
    if f.is_bytes {
        human_delta(v.round() as i64)
    } else if v == 0.0 {
        "0".into()
    } else if *f.figure.unit() == crate::base::event::FigureUnit::Seconds {
        let sign = if v > 0.0 { "+" } else { "-" };
        format!("{sign}{}", crate::base::units::seconds_number(v.abs()))
    } else {
        format!(
            "{}{}",
            if v > 0.0 { "+" } else { "" },
            group_thousands(v.round() as i64)
        )
    }
}

pub(crate) fn spread_text(f: &FigureDiff) -> String {
    let d = &f.delta;
    if d.min == d.max {
        delta_text(f, d.median)
    } else {
        format!("{}..{}", delta_text(f, d.min), delta_text(f, d.max))
    }
}

/// [`delta_text`] with the figure's unit word, if it has one (`+2,836 pages`, `+0.2 s`).
pub(crate) fn delta_shown(f: &FigureDiff, v: f64) -> String {
    with_unit_word(&f.figure, delta_text(f, v))
}

/// [`spread_text`] with the figure's unit word, if it has one.
pub(crate) fn spread_shown(f: &FigureDiff) -> String {
    with_unit_word(&f.figure, spread_text(f))
}

/// Extra lines the caller adds under `cause` (config changes, snapshot attribution).
#[derive(Default)]
pub struct Extra {
    pub(crate) config: Vec<String>,
    pub(crate) attribution: Vec<String>,
    /// Things the reader should know (snapshots that could not be read, …).
    pub(crate) notes: Vec<String>,
    /// The cause as the snapshots show it when no log figure names one (fragmentation).
    pub(crate) snapshot_cause: Vec<String>,
    /// The failing ranks' OOM requests from their snapshots, under the candidate's outcome.
    pub(crate) oom_sites: Vec<String>,
}

/// `TP0, TP1`, listed whatever their order (`rank_span` makes ranges).
fn rank_list<'r>(ranks: impl IntoIterator<Item = &'r crate::base::event::Rank>) -> String {
    ranks
        .into_iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The config section of `diff`: changed, added and removed server arguments (each
/// value cut to `value_room` columns, ten more for a lone value), the note on what could
/// not be compared, and environment toggles. The TUI's Diff view leads with the same.
pub fn config_lines(d: &RunDiff, value_room: usize) -> Vec<String> {
    let value = super::values::config_value;
    let mut out: Vec<String> = Vec::new();
    if let Some(cd) = &d.config {
        let (was, now) = cd.spelling;
        for ch in &cd.changed {
            let (old, new) = super::values::config_change(&ch.old, was, &ch.new, now, value_room);
            out.push(format!("{}  {old} -> {new}", ch.key));
        }
        for (k, v) in &cd.added {
            out.push(format!("{k}  (added) {}", value(v, now, value_room + 10)));
        }
        for (k, v) in &cd.removed {
            out.push(format!(
                "{k}  (removed, was {})",
                value(v, was, value_room + 10)
            ));
        }
        if cd.is_empty() {
            out.push("no change in server_args".into());
        }
    }
    if let Some(n) = &d.config_note {
        out.push(sanitize(&config_note(n)));
    }
    for e in &d.env {
        out.push(format!(
            "env {}  {} -> {}",
            e.name,
            super::values::env_value(e.baseline.as_deref(), e.baseline_logged),
            super::values::env_value(e.candidate.as_deref(), e.candidate_logged)
        ));
    }
    out
}

/// The notes `summary` gives about each run as it was read, labelled with its side.
pub fn run_notes(baseline: &[ReadNote], candidate: &[ReadNote]) -> Vec<String> {
    let baseline = baseline
        .iter()
        .map(|n| format!("baseline: {}", read_note(n)));
    let candidate = candidate
        .iter()
        .map(|n| format!("candidate: {}", read_note(n)));
    baseline.chain(candidate).collect()
}

/// `diff`'s text for a whole report: the verdict with the snapshots' config lines,
/// attribution, OOM sites and notes, then `run_notes` (the runs' read notes).
pub fn report(r: &DiffReport, run_notes: Vec<String>, style: Style) -> String {
    diff(&r.diff, &extra(r, run_notes), style)
}

/// The lines a report adds to the verdict from its snapshots and notes; `diff`'s text and
/// the HTML report both take them from here.
pub(crate) fn extra(r: &DiffReport, run_notes: Vec<String>) -> Extra {
    Extra {
        config: allocator_setting_lines(&r.evidence),
        snapshot_cause: fragmentation_cause_lines(&r.evidence, r.diff.first_divergence.is_some()),
        oom_sites: oom_site_lines(&r.evidence),
        attribution: r
            .attribution
            .as_ref()
            .map(attribution_lines)
            .unwrap_or_default(),
        notes: r.notes.iter().map(snapshot_note).chain(run_notes).collect(),
    }
}

/// The `diff` text: the verdict, the divergence and the evidence, in `style`'s width and
/// colour.
pub fn diff(d: &RunDiff, extra: &Extra, style: Style) -> String {
    let mut o = String::new();
    let label = match d.status {
        Status::Failed => style.bad(d.status.label()),
        Status::Regressed => style.warn(d.status.label()),
        _ => style.good(d.status.label()),
    };
    let indent = d.status.label().len() + 2;
    for (i, line) in wrap(
        &headline(&d.headline),
        style.width.saturating_sub(indent + 2).max(20),
    )
    .into_iter()
    .enumerate()
    {
        if i == 0 {
            let _ = writeln!(o, "{label}  {line}");
        } else {
            let _ = writeln!(o, "{}{line}", " ".repeat(indent));
        }
    }
    o.push('\n');
    // A configuration value (a dict, a path) gets a share of the line, not all of it.
    let value_room = (label_room(style) / 2).saturating_sub(6).max(30);
    let mut config_lines = config_lines(d, value_room);
    config_lines.extend(extra.config.iter().cloned());
    for (i, c) in config_lines.iter().enumerate() {
        row(&mut o, style, if i == 0 { "config" } else { "" }, c);
    }
    for (label, text) in verdict_rows(d, &extra.attribution, &extra.snapshot_cause) {
        row(&mut o, style, label, &text);
    }
    for (label, text, tone) in outcome_rows(d) {
        match tone {
            // A failure group wraps, each line painted, so a colour never spans a break.
            Tone::Bad => {
                for (j, line) in wrap(&text, label_room(style)).into_iter().enumerate() {
                    let label = if j == 0 { label } else { "" };
                    let _ = writeln!(o, "{} {}", fit(label, 9), style.bad(&line));
                }
            }
            _ if label.is_empty() => row(&mut o, style, label, &text),
            // A run's one-line ending stays on its line.
            tone => {
                let _ = writeln!(o, "{} {}", fit(label, 9), paint(style, tone, &text));
            }
        }
    }
    for l in &extra.oom_sites {
        row(&mut o, style, "", l);
    }
    let notes = d.comparability.notes.iter().map(comparability_note);
    for n in notes.chain(extra.notes.iter().cloned()) {
        row(&mut o, style, "note", &sanitize(&n));
    }
    if !d.figures.is_empty() || !d.time.phases.is_empty() {
        figure_table(&mut o, d, style);
    }
    o
}

/// How a verdict row is painted on a terminal (the HTML report gives it a class).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tone {
    Bad,
    Good,
    Warn,
    Plain,
}

fn paint(style: Style, tone: Tone, text: &str) -> String {
    match tone {
        Tone::Bad => style.bad(text),
        Tone::Good => style.good(text),
        Tone::Warn => style.warn(text),
        Tone::Plain => text.to_string(),
    }
}

/// How each run ended, as the verdict's `baseline` and `candidate` rows say it: the
/// failure groups, else ready or where the log ends, then the root.
pub(crate) fn outcome_rows(d: &RunDiff) -> Vec<(&'static str, String, Tone)> {
    let mut rows = Vec::new();
    for (name, out) in [("baseline", &d.baseline), ("candidate", &d.candidate)] {
        for (i, g) in out.groups.iter().enumerate() {
            rows.push((if i == 0 { name } else { "" }, failure_group(g), Tone::Bad));
        }
        if out.groups.is_empty() {
            let (text, tone) = if out.ready {
                let t = match out.ranks {
                    1 => "its only rank reached ready".to_string(),
                    n => format!("{n} ranks reached ready"),
                };
                (t, Tone::Good)
            } else if out.incomplete > 0 {
                (
                    format!(
                        "{}/{} ranks: the log ends before ready, nothing says why",
                        out.incomplete, out.ranks
                    ),
                    Tone::Warn,
                )
            } else {
                let t = format!(
                    "{} rank{}, no ready line",
                    out.ranks,
                    if out.ranks == 1 { "" } else { "s" }
                );
                (t, Tone::Plain)
            };
            rows.push((name, text, tone));
        } else if out.incomplete > 0 {
            rows.push((
                "",
                format!(
                    "{}/{} ranks: the log ends, nothing says why (incomplete)",
                    out.incomplete, out.ranks
                ),
                Tone::Plain,
            ));
        }
        if let Some(text) = root_row(out) {
            rows.push(("", text, Tone::Plain));
        }
        for text in crate::render::text::outcome::outside_any_rank(&out.launcher_failures) {
            rows.push(("", text, Tone::Bad));
        }
    }
    rows
}

/// The row naming a failed run's root (`root: TP3 (oom in kv_cache)`), or the first rank
/// to fail on its own when more did: in `diff`'s text and the TUI's Diff view.
pub(crate) fn root_row(out: &crate::analysis::outcome::RunOutcome) -> Option<String> {
    let (r, k, p) = out.first_failure.as_ref()?;
    let label = if out.failed_ranks > 1 {
        "first to fail on its own"
    } else {
        "root"
    };
    Some(format!(
        "{label}: {r} ({} {})",
        k.name(),
        in_phase_after(*p, out.root_after)
    ))
}

/// The widths of the table's value columns: baseline, candidate (10) and delta (12), each
/// widened to its longest cell, so that a value with its unit word (`70,956 blocks`) is
/// never cut.
#[derive(Clone, Copy)]
struct Cols {
    baseline: usize,
    candidate: usize,
    delta: usize,
}

impl Cols {
    fn of(d: &RunDiff) -> Cols {
        let mut c = Cols {
            baseline: 10,
            candidate: 10,
            delta: 12,
        };
        let w = crate::base::text::columns;
        for f in &d.figures {
            let (b, n, delta) = figure_cells(f, 10);
            c.baseline = c.baseline.max(w(&b));
            c.candidate = c.candidate.max(w(&n));
            c.delta = c.delta.max(w(&delta));
        }
        for p in &d.time.phases {
            let (b, n, delta, _) = super::time::phase_cells(p);
            c.baseline = c.baseline.max(w(&b));
            c.candidate = c.candidate.max(w(&n));
            c.delta = c.delta.max(w(&delta));
        }
        c
    }

    /// Columns before `ranks`: phase 12, figure 15, the three values, each with a space.
    fn before_ranks(&self) -> usize {
        12 + 1 + 15 + 1 + self.baseline + 1 + self.candidate + 1 + self.delta + 1
    }
}

/// A figure's baseline, candidate and delta cells: memory as the log printed it (within
/// `width` when it has more decimals), a count in a unit a grammar declared with its unit
/// word, as in `summary` (`3,486 blocks`, `+861 blocks`).
fn figure_cells(f: &FigureDiff, width: usize) -> (String, String, String) {
    let shown = |v: f64| figure_shown(&f.figure, v, f.is_bytes, f.resolution, width);
    (
        shown(f.baseline_median),
        shown(f.candidate_median),
        spread_shown(f),
    )
}

/// The compared figures: a table, or below its width (63 columns, more when a value needs
/// it, and the widest `ranks` cell) one wrapped line per figure with its cells named.
fn figure_table(o: &mut String, d: &RunDiff, style: Style) {
    let widest = (d.figures.iter().map(|f| ranks_cell(f).len()))
        .chain(
            d.time
                .phases
                .iter()
                .map(|p| super::time::phase_cells(p).3.len()),
        )
        .max();
    let cols = Cols::of(d);
    let stacked = cols.before_ranks() + widest.unwrap_or(0) > style.width;
    o.push('\n');
    if !stacked {
        let head = format!(
            "{} {} {} {} {} ranks",
            fit("phase", 12),
            fit("figure", 15),
            fit("baseline", cols.baseline),
            fit("candidate", cols.candidate),
            fit("delta", cols.delta)
        );
        let _ = writeln!(o, "{}", style.bold(&head));
    }
    for f in &d.figures {
        figure_rows(o, f, stacked, cols, style);
    }
    // Each phase's window (previous phase's end to this one's, median over the ranks
    // both runs have), after the memory figures.
    time_rows(o, d, stacked, cols, style);
    table_legends(o, d, stacked, style);
}

/// A figure's `ranks` cell: how many ranks moved, and how.
fn ranks_cell(f: &FigureDiff) -> String {
    match f.class {
        DeltaClass::Same => "-".to_string(),
        DeltaClass::Noise => "noise".to_string(),
        c => format!("{}/{} {}", f.ranks_moved, f.ranks_compared, c.name()),
    }
}

/// One compared figure: its table row (or stacked line), and the ranks that moved when
/// only some did.
fn figure_rows(o: &mut String, f: &FigureDiff, stacked: bool, cols: Cols, style: Style) {
    // Stacked lines have room for the printed resolution; memory cells are 10 wide.
    let cell_width = if stacked { usize::MAX } else { 10 };
    let (baseline, candidate, delta) = figure_cells(f, cell_width);
    let lines = if stacked {
        let moved = match f.class {
            DeltaClass::Same => " (no rank moved)".to_string(),
            // `8/8 systematic` kept on one line (a non-breaking space, which `wrap`
            // turns back into a space).
            _ => format!(
                ", {} ({})",
                delta.trim_end(),
                ranks_cell(f).replace(' ', "\u{a0}")
            ),
        };
        let text = format!(
            "{} {}: {} -> {}{moved}",
            f.phase.name(),
            figure_label(f.figure.name()),
            baseline,
            candidate,
        );
        wrap_indented(&text, style.width, "", "  ")
    } else {
        vec![format!(
            "{} {} {} {} {} {}",
            fit(f.phase.name(), 12),
            fit(&figure_label(f.figure.name()), 15),
            fit(&baseline, cols.baseline),
            fit(&candidate, cols.candidate),
            fit(&delta, cols.delta),
            ranks_cell(f)
        )]
    };
    for line in lines {
        let line = if f.class.is_signal() && f.worse {
            style.warn(&line)
        } else {
            line
        };
        let _ = writeln!(o, "{line}");
    }
    if f.class == DeltaClass::Local {
        let moved: Vec<String> = (f.per_rank.iter())
            .filter(|r| r.beyond_noise)
            .map(|r| format!("{} {}", r.rank, delta_shown(f, r.delta)))
            .collect();
        if stacked {
            let text = format!("moved: {}", moved.join(", "));
            for line in wrap_indented(&text, style.width, "  ", "    ") {
                let _ = writeln!(o, "{line}");
            }
        } else {
            let _ = writeln!(o, "{} {}", fit("", 28), moved.join(", "));
        }
    }
}

/// Each phase's window, as rows under the figures.
fn time_rows(o: &mut String, d: &RunDiff, stacked: bool, cols: Cols, style: Style) {
    for p in &d.time.phases {
        let (baseline, candidate, delta, ranks) = super::time::phase_cells(p);
        let lines = if stacked {
            let moved = if p.ranks_moved == 0 {
                " (no rank moved)".to_string()
            } else {
                format!(", {delta} ({})", ranks.replace(' ', "\u{a0}"))
            };
            let text = format!("{} time: {baseline} -> {candidate}{moved}", p.phase.name());
            wrap_indented(&text, style.width, "", "  ")
        } else {
            vec![format!(
                "{} {} {} {} {} {}",
                fit(p.phase.name(), 12),
                fit("time", 15),
                fit(&baseline, cols.baseline),
                fit(&candidate, cols.candidate),
                fit(&delta, cols.delta),
                ranks
            )]
        };
        for line in lines {
            let line = if p.ranks_moved > 0 && p.slower {
                style.warn(&line)
            } else {
                line
            };
            let _ = writeln!(o, "{line}");
        }
    }
}

/// The legends under the table: what `-`, `noise` and `time` mean.
fn table_legends(o: &mut String, d: &RunDiff, stacked: bool, style: Style) {
    // The `-` cell's legend; the stacked lines say it in words.
    let time_same = d.time.phases.iter().any(|p| p.ranks_moved == 0);
    if !stacked && (time_same || d.figures.iter().any(|f| f.class == DeltaClass::Same)) {
        let _ = writeln!(o, "{DIFF_SAME_LEGEND}");
    }
    if d.figures.iter().any(|f| f.class == DeltaClass::Noise) {
        let _ = writeln!(o, "{DIFF_NOISE_LEGEND}");
    }
    // `summary`'s duration of a phase is another span (from its first line, or as the
    // server printed it): said here, so that the two figures are not read as one.
    if !d.time.phases.is_empty() {
        for line in wrap_indented(DIFF_TIME_LEGEND, style.width, "", "  ") {
            let _ = writeln!(o, "{line}");
        }
    }
}

/// Under the figure table when it has `time` rows.
pub const DIFF_TIME_LEGEND: &str = "time: from the previous phase's end to this phase's end (summary's duration runs from the phase's first line, or is the one the server printed)";

/// Under the figure table when a `ranks` cell is `-`.
pub(crate) const DIFF_SAME_LEGEND: &str =
    "ranks -: no rank moved beyond the resolution (time: or the tolerance)";
/// Under the figure table when a `ranks` cell is `noise`.
pub(crate) const DIFF_NOISE_LEGEND: &str =
    "noise: moved within the log's print resolution, not all ranks the same way";

/// Columns right of the verdict's labels (9 and a space).
fn label_room(style: Style) -> usize {
    style.width.saturating_sub(10).max(20)
}

/// A labelled row of the verdict, wrapped to the output's width under its label.
fn row(o: &mut String, style: Style, label: &str, text: &str) {
    for (i, line) in wrap(text, label_room(style)).into_iter().enumerate() {
        let _ = writeln!(o, "{} {}", fit(if i == 0 { label } else { "" }, 9), line);
    }
}

/// `--explain`: the baseline and candidate line behind every compared figure. Evidence is
/// never cut: a line longer than the output wraps, its continuation indented.
pub fn explain(d: &RunDiff, style: Style) -> String {
    let mut o = String::from("\n");
    let head = "where each figure comes from (first rank shown; - baseline, + candidate):";
    for line in wrap_indented(head, style.width, "", "  ") {
        let _ = writeln!(o, "{line}");
    }
    for f in &d.figures {
        let _ = writeln!(o, "{} {}", f.phase, figure_label(f.figure.name()));
        for (mark, line) in [("  - ", &f.baseline_line), ("  + ", &f.candidate_line)] {
            if let Some(l) = line {
                for line in wrap_indented(&figure_line(l.as_ref()), style.width, mark, "      ") {
                    let _ = writeln!(o, "{line}");
                }
            }
        }
    }
    o
}

/// A comparability note in words (text, JSON and the TUI's Diff view).
pub fn comparability_note(n: &ComparabilityNote) -> String {
    match n {
        ComparabilityNote::NoEvents { side, run } => {
            let side = match side {
                Side::Baseline => "baseline",
                Side::Candidate => "candidate",
            };
            format!("{side} {run}: no start-up events found")
        }
        ComparabilityNote::NotUnderstood {
            baseline_lines,
            candidate_lines,
        } => format!(
            "{baseline_lines} baseline and {candidate_lines} candidate lines were not understood (`rankscope summary` shows examples)"
        ),
        ComparabilityNote::RankSetsDiffer {
            baseline_ranks,
            candidate_ranks,
        } => format!(
            "rank sets differ ({baseline_ranks} vs {candidate_ranks} ranks): per-rank memory is not comparable across different parallel layouts; only outcomes are compared"
        ),
        ComparabilityNote::NoCommonRanks => {
            "the runs share no rank names: only outcomes are compared".into()
        }
        ComparabilityNote::DifferentServers {
            baseline,
            candidate,
        } => format!(
            "the runs come from different servers ({} vs {}): figures are compared by canonical phase, wording differs",
            baseline.join("+"),
            candidate.join("+")
        ),
    }
}

/// `file:line: message` of the line a figure was read from (empty when the line is not
/// among the run's events), for `--explain` and the JSON's `baseline_text`.
pub(crate) fn figure_line(l: Option<&FigureLine>) -> String {
    l.map(|l| format!("{}:{}: {}", l.source, l.line, l.message))
        .unwrap_or_default()
}

/// Why the configurations were not compared in full, in words.
pub fn config_note(n: &ConfigNote) -> String {
    match n {
        // `server_args` is SGLang's word; other servers print their settings otherwise.
        ConfigNote::Missing { run } => format!("{run}: no configuration line"),
        ConfigNote::Unreadable { run, error } => {
            format!("{run}: configuration line not readable: {error}")
        }
        ConfigNote::Both {
            baseline,
            candidate,
        } => format!("{}; {}", config_note(baseline), config_note(candidate)),
        ConfigNote::CutShort {
            baseline,
            candidate,
        } => format!(
            "configuration line of the {} is cut short: keys after the cut are not compared",
            match (baseline, candidate) {
                (true, true) => "baseline and the candidate",
                (true, false) => "baseline",
                _ => "candidate",
            }
        ),
    }
}

/// The verdict's headline in words (text, JSON's `verdict` and the TUI's Diff view).
pub fn headline(h: &Headline) -> String {
    let base = |b: &BaselineEnd| match b {
        BaselineEnd::Ready => "baseline reached ready".to_string(),
        BaselineEnd::FailedToo {
            rank,
            kind,
            phase,
            after,
        } => format!(
            "baseline failed too ({rank} {} {})",
            failure_verb(*kind),
            in_phase_after(*phase, *after)
        ),
        BaselineEnd::EndsBeforeReady => "the baseline's log ends before ready".to_string(),
        BaselineEnd::NotReady => "baseline did not reach ready".to_string(),
    };
    match h {
        Headline::Failed { story, baseline } => {
            format!("candidate: {}; {}", failure_story(story), base(baseline))
        }
        Headline::Incomplete {
            incomplete,
            ranks,
            baseline,
        } => format!(
            "candidate: the log ends before ready on {incomplete}/{ranks} ranks, with no failure seen; {}",
            base(baseline)
        ),
        Headline::Regressed(r) => {
            let capacity = r.capacity.as_ref().map(|c| match c {
                CapacityLoss::KvTokens { tokens, bytes } => format!(
                    "but with {} fewer KV tokens per rank{}",
                    group_thousands(*tokens),
                    bytes
                        .map(|b| format!(" ({})", human_bytes(b)))
                        .unwrap_or_default()
                ),
                CapacityLoss::FreeAfterPool { bytes } => format!(
                    "with {} less free after the KV pool",
                    human_bytes(*bytes)
                ),
                CapacityLoss::Unnamed => "with less capacity".to_string(),
            });
            let slower = r.slower.as_ref().map(super::time::slower);
            match (capacity, slower) {
                (Some(c), Some(s)) => format!("candidate started, {c}; {s}"),
                (Some(c), None) => format!("candidate started, {c}"),
                (None, Some(s)) => format!("candidate started; {s}"),
                (None, None) => "candidate started, with less capacity".to_string(),
            }
        }
        Headline::Improved => "candidate differs from the baseline, for the better".into(),
        Headline::Same => "no difference beyond the print resolution".into(),
    }
}
