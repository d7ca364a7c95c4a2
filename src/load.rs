//! From a path to a run: discover the files, scan every log, build the model.

use std::io::{Cursor, Read};
use std::path::Path;

use rayon::prelude::*;

use crate::grammar::GrammarSet;
use crate::model::{self, Run, SourceInfo};
use crate::scan::{self, SourceScan};
use crate::source::{self, SourceError, SourceFile, SourceKind};

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("{path}: read failed after {offset} bytes: {source}")]
    Read {
        path: String,
        offset: u64,
        source: std::io::Error,
    },
}

#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub block_size: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            block_size: scan::DEFAULT_BLOCK,
        }
    }
}

/// A loaded run and the files it came from (snapshots and CSVs are listed for the
/// readers that attach them).
pub struct Loaded {
    pub run: Run,
    pub files: Vec<SourceFile>,
}

fn scan_file(
    gs: &GrammarSet,
    index: usize,
    sf: &SourceFile,
    opts: &LoadOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SourceScan, LoadError> {
    let mut reader = source::open(sf)?;
    // Look at the first bytes before scanning: a binary file is refused, not scanned
    // into thousands of unknown lines.
    let mut head = vec![0u8; 8192];
    let mut filled = 0;
    while filled < head.len() {
        match reader.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(LoadError::Read {
                    path: sf.display(),
                    offset: filled as u64,
                    source: e,
                })
            }
        }
    }
    head.truncate(filled);
    if let Some(offset) = source::binary_offset(&head) {
        return Err(SourceError::Binary {
            path: sf.display(),
            offset,
        }
        .into());
    }
    let chained = Cursor::new(head).chain(reader);
    scan::scan_reader(gs, index, chained, opts.block_size, progress).map_err(|e| LoadError::Read {
        path: sf.display(),
        offset: 0,
        source: e,
    })
}

/// Loads one run from a path (file, directory or `-`).
pub fn load_run(
    gs: &GrammarSet,
    path: &Path,
    opts: &LoadOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Loaded, LoadError> {
    let files = source::discover(path)?;
    let logs: Vec<&SourceFile> = files.iter().filter(|f| f.kind == SourceKind::Log).collect();
    // A binary file inside a run directory is skipped with a note; named alone it is an error.
    let single = logs.len() == 1;
    let scans: Vec<Result<SourceScan, LoadError>> = logs
        .par_iter()
        .enumerate()
        .map(|(i, sf)| scan_file(gs, i, sf, opts, progress))
        .collect();
    let mut sources = Vec::new();
    let mut events = Vec::new();
    let mut notes = Vec::new();
    for (sf, scan) in logs.iter().zip(scans) {
        let scan = match scan {
            Ok(s) => s,
            Err(LoadError::Source(SourceError::Binary { path, offset })) if !single => {
                notes.push(format!(
                    "{path}: skipped, binary data (NUL byte at offset {offset})"
                ));
                SourceScan::default()
            }
            Err(e) => return Err(e),
        };
        events.extend(scan.events);
        sources.push(SourceInfo {
            path: sf.display(),
            bytes: scan.bytes,
            counts: scan.counts,
            unknown_samples: scan.unknown_samples,
            cut_last_line: scan.cut_last_line,
            cut_fields: scan.cut_fields,
            duplicate_events: 0,
        });
    }
    let events = model::dedup_across_sources(events, &mut sources);
    let name = path.display().to_string();
    let mut run = model::build(name, events, sources);
    run.notes.extend(notes);
    Ok(Loaded { run, files })
}

/// Reads the run's `snapshot_rank{N}.pickle` files in parallel and attaches each to its
/// rank. A snapshot that cannot be read is reported, not fatal: the logs still stand.
pub fn load_snapshots(
    run: &Run,
    files: &[SourceFile],
) -> (Vec<crate::analysis::attribute::RankSnapshot>, Vec<String>) {
    use crate::analysis::attribute::{rank_for_hint, RankSnapshot};
    let snaps: Vec<&SourceFile> = files
        .iter()
        .filter(|f| f.kind == SourceKind::Snapshot)
        .collect();
    let read: Vec<Result<RankSnapshot, String>> = snaps
        .par_iter()
        .map(|sf| {
            let n = sf
                .rank_hint
                .ok_or_else(|| format!("{}: no rank number in the file name", sf.display()))?;
            let rank = rank_for_hint(run, n).ok_or_else(|| {
                format!(
                    "{}: rank {n} is not among the run's {} ranks",
                    sf.display(),
                    run.ranks.len()
                )
            })?;
            let snapshot = crate::snapshot::read_path(&sf.path).map_err(|e| e.to_string())?;
            Ok(RankSnapshot {
                rank,
                path: sf.display(),
                snapshot,
            })
        })
        .collect();
    let mut ok = Vec::new();
    let mut errors = Vec::new();
    for r in read {
        match r {
            Ok(s) => ok.push(s),
            Err(e) => errors.push(e),
        }
    }
    (ok, errors)
}
