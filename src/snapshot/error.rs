//! What reading a snapshot can fail with: in `error` (not `mod.rs`) so that the model,
//! which reports shape errors, does not import the module that re-exports it.

use std::path::PathBuf;

use super::pickle::PickleError;

/// Why a memory snapshot could not be read.
#[derive(Debug, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "the #[error] texts say what each variant and field is"
)]
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
    #[error("{}: {what}, not a snapshot file", path.display())]
    NotAFile { path: PathBuf, what: &'static str },
    /// Text where a pickle belongs: most often a server log given to `mem`.
    #[error("{}: text, not a PyTorch memory snapshot (a pickle); a server log is read by `rankscope summary {}`", path.display(), path.display())]
    Text { path: PathBuf },
    #[error("{}: more than {limit} bytes read from a stream (a FIFO or a device): give the file itself", path.display())]
    StreamTooLarge { path: PathBuf, limit: u64 },
    #[error("snapshot key `{path}`: expected {expected}, found {found}")]
    Shape {
        path: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("snapshot key `{path}` is missing")]
    MissingKey { path: String },
    /// More blocks and trace entries than the file has room for: one value shared by
    /// reference many times (a pickle "bomb"); building them would take memory far past
    /// the file's size.
    #[error("snapshot key `{path}`: more than {limit} blocks and trace entries in a pickle of {bytes} bytes; a real snapshot spends at least {per} bytes on each, so values shared by reference are expanded here past what the file holds (a pickle bomb), and it is not read")]
    TooManyElements {
        path: String,
        limit: u64,
        bytes: u64,
        per: u64,
    },
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
