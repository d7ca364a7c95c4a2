//! `rankscope report`: one self-contained HTML page of a run, or of a run against a
//! baseline (`--vs`), written to a file (`-o`, default `rankscope-report.html`) or stdout.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rankscope::analysis::attribute;
use rankscope::analysis::diff::DiffOptions;
use rankscope::analysis::lanes::{lanes_of, Lane};
use rankscope::export::identity::RunIdentity;
use rankscope::render::html::{self, Page, Side, SnapView};
use rankscope::report::{DiffReport, RunReport};
use rankscope::session::{check_stdin_once, Session};
use rankscope::snapshot::inspect::{summarize, MemSummary, SiteRule};

use super::{out, shown, LogContext};

/// Where the page goes without `-o`.
pub const DEFAULT_OUTPUT: &str = "rankscope-report.html";

/// One run read and analysed for the page: the session (run, files, snapshots), its
/// report, its lanes, its identity and its snapshots' summaries.
struct Analysed {
    session: Session,
    report: RunReport,
    lanes: Vec<Lane>,
    identity: RunIdentity,
    summaries: Vec<MemSummary>,
}

fn analyse(cx: &LogContext, paths: &[PathBuf]) -> Result<Analysed> {
    let session = cx.load(paths)?;
    let mut report = session.report();
    // The breakdown's categories against the snapshots, as `summary --memory` gives them.
    report.memory = report
        .memory
        .with_snapshots(&session.run, &session.snapshots().matched);
    let lanes = lanes_of(&session.run, &report);
    let identity = session.identity();
    let rule = SiteRule::default();
    let summaries = (session.snapshots().matched.iter())
        .map(|s| summarize(&s.snapshot, &rule))
        .collect();
    Ok(Analysed {
        session,
        report,
        lanes,
        identity,
        summaries,
    })
}

fn side(a: &Analysed) -> Side<'_> {
    Side {
        run: &a.session.run,
        report: &a.report,
        lanes: &a.lanes,
        identity: &a.identity,
        snapshots: (a.session.snapshots().matched.iter().zip(&a.summaries))
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
    check_stdin_once(vs.iter().chain(run))?;
    let (c, b) = rankscope::base::pool::both(
        || analyse(cx, run),
        || (!vs.is_empty()).then(|| analyse(cx, vs)),
    );
    let c = c.with_context(|| format!("run {}", shown(run)))?;
    let b = b
        .transpose()
        .with_context(|| format!("baseline {}", shown(vs)))?;
    let diff: Option<DiffReport> = b
        .as_ref()
        .map(|b| c.session.diff_report(&b.session, options));
    let own_evidence;
    let evidence = match &diff {
        Some(d) => &d.evidence,
        None => {
            own_evidence =
                attribute::snapshot_evidence(&c.session.run, &[], &c.session.snapshots().matched);
            &own_evidence
        }
    };
    let run_notes = match &b {
        Some(b) => {
            rankscope::render::text::diff::run_notes(&b.session.run.notes, &c.session.run.notes)
        }
        None => rankscope::render::text::notes::read_notes(&c.session.run.notes)
            .into_iter()
            .chain(c.session.snapshots().errors.iter().cloned())
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
                rankscope::base::text::shown_path(path),
                page.len()
            );
        }
    }
    // Not freed piece by piece, as in `summary`.
    std::mem::forget((c, b, diff));
    Ok(0)
}
