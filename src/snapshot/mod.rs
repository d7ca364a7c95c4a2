//! PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot()`): a safe pickle
//! reader, the typed model, analysis by allocation site, and text rendering.

pub mod analysis;
pub mod model;
pub mod oom;
pub mod pickle;
pub mod site;

use std::path::{Path, PathBuf};

pub use model::{Action, Block, BlockState, Frame, Segment, Snapshot, StackId, TraceEntry};
pub use pickle::PickleError;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}pickle: {source}", path_prefix(path))]
    Pickle {
        path: Option<PathBuf>,
        source: PickleError,
    },
    #[error("snapshot key `{path}`: expected {expected}, found {found}")]
    Shape {
        path: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("snapshot key `{path}` is missing")]
    MissingKey { path: String },
    /// A shape error found in a named file: in a run directory the file says which
    /// rank's snapshot is bad.
    #[error("{}: {source}", file.display())]
    InFile {
        file: PathBuf,
        #[source]
        source: Box<SnapshotError>,
    },
}

fn path_prefix(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| format!("{}: ", p.display()))
        .unwrap_or_default()
}

impl SnapshotError {
    /// The byte offset in the file, for pickle-level errors.
    pub fn offset(&self) -> Option<u64> {
        match self {
            SnapshotError::Pickle { source, .. } => source.offset(),
            SnapshotError::InFile { source, .. } => source.offset(),
            _ => None,
        }
    }
}

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
