//! The run's PyTorch memory snapshots, read in parallel; matching each to its rank is
//! analysis (`analysis::attribute::match_rank`), done by the session.

use rayon::prelude::*;

use crate::ingest::source::{SourceFile, SourceKind};
use crate::snapshot::Snapshot;

/// One snapshot file as read, before it is matched to a rank.
pub(crate) struct ReadSnapshot<'a> {
    pub(crate) file: &'a SourceFile,
    pub(crate) snapshot: Snapshot,
}

/// Reads every snapshot among `files` in parallel. One that cannot be read is reported
/// (`path: why`), not fatal: the logs still stand.
pub(crate) fn read_snapshots(files: &[SourceFile]) -> Vec<Result<ReadSnapshot<'_>, String>> {
    let snaps: Vec<&SourceFile> = files
        .iter()
        .filter(|f| f.kind == SourceKind::Snapshot)
        .collect();
    snaps
        .par_iter()
        .map(|sf| {
            let snapshot = crate::snapshot::read_path(&sf.path).map_err(|e| e.to_string())?;
            Ok(ReadSnapshot { file: sf, snapshot })
        })
        .collect()
}
