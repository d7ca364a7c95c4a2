//! `rankscope summary`: one run's phases × ranks, as text, JSON or NDJSON.

use std::path::PathBuf;

use anyhow::Result;
use rankscope::analysis::attribute;
use rankscope::render::{self, json};
use rankscope::report::MemoryReport;
use rankscope::session::Session;

use super::{out, out_json, out_ndjson, LogContext};

pub fn run(
    cx: &LogContext,
    paths: &[PathBuf],
    ranks: bool,
    as_json: bool,
    ndjson: bool,
    exit_code: bool,
    memory: &crate::cli::MemoryArgs,
) -> Result<u8> {
    let shape = super::model_shape(memory)?;
    if ndjson {
        // With `--attempt all`, the exit code is the last start-up's, as without it.
        let mut code = 0;
        cx.load_each_attempt(paths, |loaded| {
            if exit_code {
                code = loaded.report().state(&loaded.run).exit_code();
            }
            let id = run_id(loaded);
            let r = &loaded.run;
            // As `summary --json`'s `memory`: `--tokens` and `--model-config` apply.
            let report = MemoryReport::of(r, &memory.tokens, shape.as_ref())
                .with_snapshots(r, &loaded.snapshots().matched);
            let records = json::phase_records(r, &id);
            out_ndjson(
                records
                    .into_iter()
                    .chain([json::memory_record(r, &report, &id)]),
            )
        })?;
        return Ok(code);
    }
    let loaded = cx.load(paths)?;
    let r = &loaded.run;
    let mut report = loaded.report();
    if !memory.tokens.is_empty() || shape.is_some() {
        report.memory = MemoryReport::of(r, &memory.tokens, shape.as_ref());
    }
    // The snapshots split the breakdown's categories where the user asked for it, and
    // always in the JSON (`memory.allocator_split`).
    if memory.shown() || as_json {
        report.memory = report.memory.with_snapshots(r, &loaded.snapshots().matched);
    }
    if as_json {
        out_json(&json::summary_doc(r, &report, &loaded.identity()))?;
    } else {
        let mut text = render::text::summary::summary(r, &report, ranks, cx.style);
        // Snapshots are read only when a rank failed: they are what names the OOM's
        // site, and reading them costs seconds on large runs.
        if r.ranks.iter().any(|x| x.failure.is_some()) {
            let ev = attribute::snapshot_evidence(r, &[], &loaded.snapshots().matched);
            text.push_str(&render::text::diff::summary_snapshot_section(&ev, cx.style));
        }
        if memory.shown() {
            text.push_str(&render::text::capacity::memory_section(
                r,
                &report.memory,
                cx.style,
            ));
        }
        out(&text)?;
    }
    // The process ends here and the OS takes its memory back at once: freeing a run of
    // thousands of ranks piece by piece (glibc coalescing its small blocks) was a fifth
    // of `summary` and a third of `diff` at 8,192 ranks.
    let code = if exit_code {
        report.state(r).exit_code()
    } else {
        0
    };
    std::mem::forget(loaded);
    Ok(code)
}

/// Which run an NDJSON line belongs to.
pub fn run_id(loaded: &Session) -> json::IdentityDoc {
    json::IdentityDoc::from(&loaded.identity())
}
