//! PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot()`): a safe pickle
//! reader, the typed model, analysis by allocation site, and text rendering.

pub mod analysis;
mod error;
pub mod model;
pub mod oom;
mod pages;
pub mod pickle;
pub mod site;
pub mod trace;

use std::path::Path;

pub use error::SnapshotError;
pub use model::{Block, BlockState, Frame, Segment, Snapshot};
pub use pickle::PickleError;
pub use trace::{Action, StackId, TraceEntry};

impl PickleError {
    /// The byte offset the error refers to.
    pub fn offset(&self) -> Option<u64> {
        use PickleError::*;
        match self {
            Empty | BadMagic { .. } => Some(0),
            BadProtocol { offset, .. }
            | Truncated { offset, .. }
            | NoStop { offset }
            | Forbidden { offset, .. }
            | Unsupported { offset, .. }
            | UnknownOpcode { offset, .. }
            | LengthTooLarge { offset, .. }
            | Malformed { offset, .. }
            | MemoMissing { offset, .. }
            | Utf8 { offset }
            | TooLarge { offset }
            | Io { offset, .. } => Some(*offset),
        }
    }
}

/// Reads a snapshot file. The file is streamed through a small buffer rather than mapped,
/// so peak memory is the decoded arena, not arena plus file.
///
/// Trace entries, nearly all of a snapshot, are decoded straight into the model as they
/// are read (`pickle::parse_direct`), so they never take room in the arena. A pickle that
/// shares one of those dicts in a way only the general reader can follow (rare, never
/// written by PyTorch) is read a second time with it; either way the result is the same.
pub fn read_path(path: &Path) -> Result<Snapshot, SnapshotError> {
    let open = || -> Result<(std::fs::File, u64), SnapshotError> {
        let io = |source| SnapshotError::Io {
            path: path.to_owned(),
            source,
        };
        let f = std::fs::File::open(path).map_err(io)?;
        let len = f.metadata().map_err(io)?.len();
        Ok((f, len))
    };
    let pickle_err = |source| SnapshotError::Pickle {
        path: Some(path.to_owned()),
        source,
    };
    let in_file = |e| SnapshotError::InFile {
        file: path.to_owned(),
        source: Box::new(e),
    };
    let (f, len) = open()?;
    let p = pickle::parse_direct(f, len).map_err(pickle_err)?;
    if let Some(res) = model::from_direct(p) {
        return res.map_err(in_file);
    }
    let (f, len) = open()?;
    let p = pickle::parse_reader(f, len).map_err(pickle_err)?;
    model::from_pickle(&p).map_err(in_file)
}

/// Reads a snapshot held in memory.
pub fn read_bytes(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
    let pickle_err = |source| SnapshotError::Pickle { path: None, source };
    let p = pickle::parse_direct_bytes(bytes).map_err(pickle_err)?;
    if let Some(res) = model::from_direct(p) {
        return res;
    }
    let p = pickle::parse(bytes).map_err(pickle_err)?;
    model::from_pickle(&p)
}
