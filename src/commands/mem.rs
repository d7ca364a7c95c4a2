//! `rankscope mem`: snapshot summaries, and `mem diff A B`. Snapshots need no log
//! grammar: this command neither reads nor compiles them.

use std::path::{Path, PathBuf};

use crate::cli::{MemOutput, SiteArgs};
use anyhow::Result;
use rankscope::render::json::mem as mem_json;
use rankscope::render::text::mem as mem_text;
use rankscope::render::Style;
use rankscope::snapshot;

use super::{out, out_json};

pub fn summaries(
    paths: &[PathBuf],
    sites: &SiteArgs,
    output: &MemOutput,
    style: Style,
) -> Result<u8> {
    let MemOutput { top, json } = *output;
    if paths.is_empty() {
        anyhow::bail!("mem: give at least one snapshot file (or `mem diff A B`)");
    }
    let paths = snapshot_files(paths)?;
    let rule = sites.rule();
    let mut docs = Vec::new();
    let mut text = String::new();
    for (i, path) in paths.iter().enumerate() {
        let s = snapshot::read_path(path)?;
        let summary = snapshot::inspect::summarize(&s, &rule);
        // The last model is freed by the process's exit: dropping it page by page (a
        // large trace is hundreds of thousands of entries) only costs time. Earlier ones
        // are dropped, so memory stays one snapshot's however many are given.
        if i + 1 == paths.len() {
            std::mem::forget(s);
        }
        if json {
            docs.push((rankscope::base::text::shown_path(path), summary));
        } else {
            text.push_str(&format!(
                "{}\n{}\n",
                rankscope::base::text::shown_path(path),
                mem_text::summary_text(&summary, top, style.width)
            ));
        }
    }
    if json {
        out_json(&mem_json::mem_doc(
            docs.iter().map(|(p, s)| (p.clone(), s)).collect(),
        ))?;
    } else {
        out(&text)?;
    }
    Ok(0)
}

/// The snapshot files the paths stand for: a directory (a run directory) stands for the
/// snapshots in it, in rank order, as `summary` reads a directory's logs.
fn snapshot_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let found = rankscope::ingest::source::snapshots_in(path).map_err(|e| {
            anyhow::anyhow!(
                "{}: cannot list: {e}",
                rankscope::base::text::shown_path(path)
            )
        })?;
        if found.is_empty() {
            anyhow::bail!(
                "{}: no PyTorch memory snapshots in this directory (looked for *.pickle, *.pkl){}",
                rankscope::base::text::shown_path(path),
                logs_hint(path)
            );
        }
        out.extend(found);
    }
    Ok(out)
}

/// Where a directory given to `mem` holds logs, the command that reads them.
fn logs_hint(dir: &Path) -> String {
    match rankscope::ingest::source::discover(dir) {
        Ok(files)
            if files
                .iter()
                .any(|f| f.kind == rankscope::ingest::source::SourceKind::Log) =>
        {
            format!(
                "; it holds logs: read them with `rankscope summary {}`",
                rankscope::base::text::shown_path(dir)
            )
        }
        _ => String::new(),
    }
}

/// `mem diff` compares two files: a directory is refused with the files it holds to pick
/// from.
fn one_snapshot(path: &Path) -> Result<()> {
    if !path.is_dir() {
        return Ok(());
    }
    let shown = rankscope::base::text::shown_path(path);
    let found = rankscope::ingest::source::snapshots_in(path).unwrap_or_default();
    match found.first() {
        Some(first) => anyhow::bail!(
            "{shown}: a directory; `mem diff` compares two snapshot files: give {} ({})",
            if found.len() == 1 {
                "the one it holds".to_string()
            } else {
                format!("one of the {} it holds", found.len())
            },
            if found.len() == 1 {
                rankscope::base::text::shown_path(first)
            } else {
                format!("e.g. {}", rankscope::base::text::shown_path(first))
            }
        ),
        None => anyhow::bail!(
            "{shown}: a directory with no PyTorch memory snapshots (looked for *.pickle, *.pkl){}",
            logs_hint(path)
        ),
    }
}

pub fn diff(a: &Path, b: &Path, sites: &SiteArgs, output: &MemOutput, style: Style) -> Result<u8> {
    let MemOutput { top, json } = *output;
    one_snapshot(a)?;
    one_snapshot(b)?;
    let rule = sites.rule();
    let (sa, sb) =
        rankscope::base::pool::both(|| snapshot::read_path(a), || snapshot::read_path(b));
    let (sa, sb) = (sa?, sb?);
    let d = snapshot::inspect::diff(
        &snapshot::inspect::summarize(&sa, &rule),
        &snapshot::inspect::summarize(&sb, &rule),
    );
    if json {
        out_json(&mem_json::mem_diff_doc(
            rankscope::base::text::shown_path(a),
            rankscope::base::text::shown_path(b),
            &d,
        ))?;
    } else {
        out(&format!(
            "A {}\nB {}\n\n{}",
            rankscope::base::text::shown_path(a),
            rankscope::base::text::shown_path(b),
            mem_text::diff_text(&d, top, style.width)
        ))?;
    }
    Ok(0)
}
