//! `rankscope diff`: a candidate run against a baseline; the exit code is the status.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rankscope::model::notes::ReadNote;
use rankscope::render::{self, json};
use rankscope::report::MemoryDiff;
use rankscope::session::check_stdin_once;

use super::{out, out_json, shown, LogContext};

pub fn run(
    cx: &LogContext,
    paths: &[PathBuf],
    baseline: &[PathBuf],
    as_json: bool,
    explain: bool,
    memory: &crate::cli::MemoryArgs,
    options: rankscope::analysis::diff::DiffOptions,
) -> Result<u8> {
    let shape = super::model_shape(memory)?;
    let (baseline, candidate): (&[PathBuf], &[PathBuf]) = match (baseline.is_empty(), paths) {
        (false, _) => (baseline, paths),
        (true, [b, c]) => (std::slice::from_ref(b), std::slice::from_ref(c)),
        (true, _) => anyhow::bail!(
            "diff: give BASELINE CANDIDATE, or --baseline PATH (repeatable) and the candidate's paths"
        ),
    };
    check_stdin_once(baseline.iter().chain(candidate))?;
    // Both runs' equal messages and fields once: the candidate mostly prints the
    // baseline's lines.
    let texts = std::sync::Arc::new(rankscope::session::SharedTexts::default());
    let (b, c) = rankscope::base::pool::both(
        || cx.load_sharing(baseline, &texts),
        || cx.load_sharing(candidate, &texts),
    );
    // The pool's maps, not the texts the runs hold: not needed past the reading.
    drop(texts);
    let b = b.with_context(|| format!("baseline {}", shown(baseline)))?;
    let c = c.with_context(|| format!("candidate {}", shown(candidate)))?;
    // `summary` reads server output without a start-up event as incomplete; a diff of it
    // would compare nothing and could print SAME: refused, saying why.
    for (side, paths, run) in [
        ("baseline", baseline, &b.run),
        ("candidate", candidate, &c.run),
    ] {
        if !run.has_startup_events() {
            anyhow::bail!(
                "{side} {}: nothing to compare: {}",
                shown(paths),
                run.notes
                    .iter()
                    .rev()
                    .find(|n| matches!(n, ReadNote::NoStartup { .. }))
                    .map_or(
                        "no start-up event".to_string(),
                        render::text::notes::read_note
                    )
            );
        }
    }
    let mut report = c.diff_report(&b, options);
    if !memory.tokens.is_empty() || shape.is_some() {
        report.memory = MemoryDiff::of(
            &b.run,
            &c.run,
            &report.diff,
            report.attribution.as_ref(),
            &memory.tokens,
            shape.as_ref(),
        );
    }
    let code = report.diff.status.exit_code() as u8;
    if as_json {
        // Each run's breakdown split by its snapshots, as `summary --json` gives it.
        use rankscope::analysis::held::held;
        report.memory.baseline.held = held(&b.run, &b.snapshots().matched);
        report.memory.candidate.held = held(&c.run, &c.snapshots().matched);
        out_json(&json::diff_doc(
            (&b.run, super::summary::run_id(&b)),
            (&c.run, super::summary::run_id(&c)),
            &report,
        ))?;
    } else {
        let notes = render::text::diff::run_notes(&b.run.notes, &c.run.notes);
        let mut text = render::text::diff::report(&report, notes, cx.style);
        if memory.shown() {
            text.push_str(&render::text::capacity::memory_diff_section(
                &b.run,
                &c.run,
                &report.memory,
                cx.style,
            ));
        }
        if explain {
            text.push_str(&render::text::diff::explain(&report.diff, cx.style));
            if let Some(c) = report
                .attribution
                .as_ref()
                .and_then(render::text::diff::attribution_clock)
            {
                for line in render::wrap_indented(&format!("clock: {c}"), cx.style.width, "", "  ")
                {
                    text.push_str(&line);
                    text.push('\n');
                }
            }
        }
        out(&text)?;
    }
    // Not freed piece by piece, as in `summary`.
    std::mem::forget((b, c, report));
    Ok(code)
}
