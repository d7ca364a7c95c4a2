//! The page's head (the runs' identity), the verdict with its evidence and, with a baseline,
//! `diff`'s rows; the notes at the end. Every sentence is `render::text`'s.

use std::fmt::Write;

use super::{esc, heading, rows_table, Page, Side};
use crate::analysis::diff::Status;
use crate::render::text::diff::{
    comparability_note, config_lines, extra, headline, outcome_rows, verdict_rows, Tone,
};
use crate::render::text::outcome::{failure_group, failure_story, quoted_message};
use crate::render::text::summary::{lines_report, root_line};
use crate::render::Style;
use crate::report::RunState;

/// Columns a configuration value keeps in the config rows, as `diff` gives it at 100
/// columns.
const CONFIG_VALUE_ROOM: usize = 40;

/// Files named in the identity table before the rest fold away.
const FILES_LISTED: usize = 4;

/// The quoted failure line is cut past this many characters (a traceback follows whole).
const QUOTE_CHARS: usize = 2000;

fn tone_class(t: Tone) -> &'static str {
    match t {
        Tone::Bad => "bad",
        Tone::Good => "good",
        Tone::Warn => "warn",
        Tone::Plain => "",
    }
}

/// The page's title line and the runs' identity.
pub(crate) fn header(o: &mut String, p: &Page) {
    let run = p.candidate.run;
    let (label, class, text) = match p.diff {
        Some(d) => {
            let class = match d.diff.status {
                Status::Failed => "bad",
                Status::Regressed | Status::Incomplete => "warn",
                Status::Same | Status::Improved => "good",
            };
            (d.diff.status.label(), class, headline(&d.diff.headline))
        }
        None => {
            let (label, class) = match p.candidate.report.state(run) {
                RunState::Failed => ("FAILED", "bad"),
                RunState::Ready => ("READY", "good"),
                RunState::NoRanks => ("NO RANKS", "warn"),
                RunState::Incomplete => ("INCOMPLETE", "warn"),
            };
            let out = &p.candidate.report.outcome;
            let text = if out.failed() {
                failure_story(&out.story)
            } else if run.ready {
                format!("{} ranks reached ready", out.ranks)
            } else {
                format!(
                    "the log ends before ready on {}/{} ranks and nothing says why",
                    out.incomplete, out.ranks
                )
            };
            (label, class, text)
        }
    };
    let _ = writeln!(
        o,
        "<header>\n<h1>rankscope report: {}</h1>\n<p class=\"headline\" id=\"verdict\"><span class=\"status {class}\">{}</span>{}</p>",
        esc(&run.name),
        esc(label),
        esc(&text)
    );
    o.push_str("<table class=\"grid small\" id=\"identity\">\n<tr><th></th><th>run</th><th>content hash</th><th>server</th><th>version</th><th>attempt</th><th>started</th><th>ranks</th><th>files</th></tr>\n");
    identity_row(o, "candidate", &p.candidate, p.baseline.is_some());
    if let Some(b) = &p.baseline {
        identity_row(o, "baseline", b, true);
    }
    let _ = writeln!(
        o,
        "</table>\n<p class=\"muted small\">rankscope {}</p>\n</header>",
        esc(p.version)
    );
}

fn identity_row(o: &mut String, side: &str, s: &Side, named: bool) {
    let run = s.run;
    let server = if run.servers.is_empty() {
        run.grammars.join("+")
    } else {
        run.servers.join("+")
    };
    let version = run
        .config
        .as_ref()
        .and_then(|c| c.as_ref().ok())
        .and_then(|c| c.config.source.version.clone())
        .unwrap_or_else(|| "not printed".into());
    let attempt = if run.attempts.len() > 1 {
        format!("{} of {}", run.attempt, run.attempts.len())
    } else {
        "1 of 1".into()
    };
    let started = run.start.map_or("-".to_string(), |s| {
        format!(
            "{s}{}",
            crate::render::text::summary::date_inference_mark(run)
        )
    });
    let paths: Vec<&str> = run.sources.iter().map(|f| f.path.as_str()).collect();
    let files = if paths.len() <= FILES_LISTED {
        esc(&paths.join(", "))
    } else {
        format!(
            "<details><summary>{} files: {}, …</summary>{}</details>",
            paths.len(),
            esc(&paths[..FILES_LISTED].join(", ")),
            esc(&paths.join(", "))
        )
    };
    let _ = writeln!(
        o,
        "<tr><th>{}</th><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
        if named { side } else { "" },
        esc(&s.identity.name),
        esc(s.identity.hash.as_deref().unwrap_or("(not hashable: stdin or a FIFO)")),
        esc(&server),
        esc(&version),
        esc(&attempt),
        esc(&started),
        s.report.outcome.ranks,
        files
    );
}

/// The verdict: the root's evidence, the ranks grouped by how they ended, and with a
/// baseline `diff`'s rows (config, cause, effect, remedy, time, how each run ended).
pub(crate) fn section(o: &mut String, p: &Page) {
    heading(o, "cause", "Verdict and evidence");
    let run = p.candidate.run;
    let out = &p.candidate.report.outcome;
    if let Some((text, f)) = root_line(run, out) {
        let at = f
            .origin
            .as_ref()
            .map(|x| run.cite(x))
            .unwrap_or_else(|| "(no line)".into());
        let quote = crate::base::text::truncate(quoted_message(f), QUOTE_CHARS);
        let _ = writeln!(
            o,
            "<p class=\"bad\" id=\"root\">{}</p>\n<blockquote class=\"evidence\"><cite>{}</cite>{}</blockquote>",
            esc(&text),
            esc(&at),
            esc(&quote)
        );
        if let Some(tb) = &f.traceback {
            let _ = writeln!(
                o,
                "<details><summary>traceback</summary><pre>{}</pre></details>",
                esc(tb)
            );
        }
    }
    if !out.groups.is_empty() {
        o.push_str("<h3>How the ranks ended</h3>\n<ul id=\"groups\">\n");
        for g in &out.groups {
            let _ = writeln!(
                o,
                "<li class=\"bad\">{} <span class=\"muted\">{}</span></li>",
                esc(&failure_group(g)),
                esc(&super::rank_ranges(&g.ranks))
            );
        }
        o.push_str("</ul>\n");
    }
    let counts: Vec<String> = (out.counts.iter())
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    if !counts.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"muted\">ranks: {}</p>",
            esc(&counts.join(", "))
        );
    }
    for line in crate::render::text::outcome::outside_any_rank(&out.launcher_failures) {
        let _ = writeln!(o, "<p class=\"bad\">{}</p>", esc(&line));
    }
    match p.diff {
        Some(d) => diff_rows(o, d),
        None if out.failed() => {
            let rows: Vec<(&str, String, &str)> =
                crate::render::text::remedy::lines(&p.candidate.report.remedies)
                    .into_iter()
                    .enumerate()
                    .map(|(i, l)| (if i == 0 { "remedy" } else { "" }, l, ""))
                    .collect();
            rows_table(o, &rows);
        }
        None => {}
    }
}

/// `diff`'s verdict rows, from the same functions and in the same order as its text.
fn diff_rows(o: &mut String, d: &crate::report::DiffReport) {
    let x = extra(d, Vec::new());
    let mut rows: Vec<(&str, String, &str)> = Vec::new();
    let mut config = config_lines(&d.diff, CONFIG_VALUE_ROOM);
    config.extend(x.config.iter().cloned());
    for (i, c) in config.into_iter().enumerate() {
        rows.push((if i == 0 { "config" } else { "" }, c, ""));
    }
    for (label, text) in verdict_rows(&d.diff, &x.attribution, &x.snapshot_cause) {
        rows.push((label, text, ""));
    }
    for (label, text, tone) in outcome_rows(&d.diff) {
        rows.push((label, text, tone_class(tone)));
    }
    for l in &x.oom_sites {
        rows.push(("", l.clone(), ""));
    }
    o.push_str("<h3>Against the baseline</h3>\n");
    rows_table(o, &rows);
}

/// What limits the reading: the comparison's notes, the snapshots', the runs' own, and
/// how many lines were read and not understood (`summary`'s words, examples escaped).
pub(crate) fn notes_section(o: &mut String, p: &Page) {
    heading(o, "notes", "Notes and lines read");
    let mut notes: Vec<String> = Vec::new();
    if let Some(d) = p.diff {
        notes.extend(d.diff.comparability.notes.iter().map(comparability_note));
        notes.extend(d.notes.iter().map(crate::render::text::diff::snapshot_note));
    }
    notes.extend(p.run_notes.iter().cloned());
    if !notes.is_empty() {
        o.push_str("<ul id=\"run-notes\">\n");
        for n in &notes {
            let _ = writeln!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul>\n");
    }
    let style = Style {
        color: false,
        width: 100,
    };
    for side in std::iter::once(&p.candidate).chain(p.baseline.as_ref()) {
        let mut text = String::new();
        lines_report(&mut text, side.run, style);
        let _ = writeln!(
            o,
            "<h3>{}</h3>\n<pre>{}</pre>",
            esc(&side.run.name),
            esc(&text)
        );
    }
}
