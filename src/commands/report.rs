//! `rankscope report`: one self-contained HTML page of a run, or of a run against a
//! baseline (`--vs`), written to a file (`-o`, default `rankscope-report.html`) or stdout.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rankscope::analysis::attribute::{self, RankSnapshot};
use rankscope::analysis::diff::DiffOptions;
use rankscope::analysis::lanes::lanes_of;
use rankscope::export::identity::identity;
use rankscope::ingest::load;
use rankscope::render::html::{self, Page, Side, SnapView};
use rankscope::report::{DiffReport, RunReport};
use rankscope::snapshot::inspect::{summarize, MemSummary, SiteRule};

use super::{out, shown, LogContext};

/// Where the page goes without `-o`.
pub const DEFAULT_OUTPUT: &str = "rankscope-report.html";

/// What is read of one run before the page is drawn: the run, its analysis, its lanes,
/// its identity and its snapshots with their summaries.
struct Analysed {
    loaded: load::Loaded,
    report: RunReport,
    lanes: Vec<rankscope::analysis::lanes::Lane>,
    identity: rankscope::export::identity::RunIdentity,
    snaps: Vec<RankSnapshot>,
    snap_errors: Vec<String>,
    summaries: Vec<MemSummary>,
}

fn analyse(cx: &LogContext, paths: &[PathBuf]) -> Result<Analysed> {
    let loaded = cx.load(paths)?;
    let report = RunReport::of(&loaded.run);
    let lanes = lanes_of(&loaded.run, &report);
    let identity = identity(&loaded.run.name, &loaded.files);
    let (snaps, snap_errors) = load::load_snapshots(&loaded.run, &loaded.files);
    let rule = SiteRule::default();
    let summaries = snaps
        .iter()
        .map(|s| summarize(&s.snapshot, &rule))
        .collect();
    Ok(Analysed {
        loaded,
        report,
        lanes,
        identity,
        snaps,
        snap_errors,
        summaries,
    })
}

fn side(a: &Analysed) -> Side<'_> {
    Side {
        run: &a.loaded.run,
        report: &a.report,
        lanes: &a.lanes,
        identity: &a.identity,
        snapshots: (a.snaps.iter().zip(&a.summaries))
            .map(|(s, summary)| SnapView {
                rank: &s.rank,
                path: &s.path,
                summary,
            })
            .collect(),
    }
}

pub fn run(
    cx: &LogContext,
    run: &[PathBuf],
    vs: &[PathBuf],
    output: Option<&Path>,
    options: DiffOptions,
) -> Result<u8> {
    load::check_stdin_once(vs.iter().chain(run))?;
    let (c, b) = rayon::join(
        || analyse(cx, run),
        || (!vs.is_empty()).then(|| analyse(cx, vs)),
    );
    let c = c.with_context(|| format!("run {}", shown(run)))?;
    let b = b
        .transpose()
        .with_context(|| format!("baseline {}", shown(vs)))?;
    let diff = b.as_ref().map(|b| {
        DiffReport::of(
            &b.loaded.run,
            &c.loaded.run,
            &b.snaps,
            &c.snaps,
            (b.snap_errors.iter())
                .chain(&c.snap_errors)
                .cloned()
                .collect(),
            options,
        )
    });
    let own_evidence;
    let evidence = match &diff {
        Some(d) => &d.evidence,
        None => {
            own_evidence = attribute::snapshot_evidence(&c.loaded.run, &[], &c.snaps);
            &own_evidence
        }
    };
    let run_notes = match &b {
        Some(b) => {
            rankscope::render::text::diff::run_notes(&b.loaded.run.notes, &c.loaded.run.notes)
        }
        None => (c.loaded.run.notes.iter())
            .chain(&c.snap_errors)
            .cloned()
            .collect(),
    };
    let page = html::page(&Page {
        candidate: side(&c),
        baseline: b.as_ref().map(side),
        diff: diff.as_ref(),
        evidence,
        run_notes,
        version: env!("CARGO_PKG_VERSION"),
    });
    match output {
        Some(p) if p == Path::new("-") => out(&page)?,
        _ => {
            let path = output.unwrap_or(Path::new(DEFAULT_OUTPUT));
            std::fs::write(path, &page).with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "rankscope: wrote {} ({} bytes)",
                rankscope::ingest::text::shown_path(path),
                page.len()
            );
        }
    }
    // Not freed piece by piece, as in `summary`.
    std::mem::forget((c, b, diff));
    Ok(0)
}
