//! What names a run across a fleet: the name it was given and a hash of its content, so
//! that records from many runs (NDJSON lines loaded into one table) can be told apart and
//! the same run collected twice recognised.

use std::io::Read;

use crate::ingest::source::{SourceFile, SourceKind};

/// `{"name": …, "hash": …}` on every NDJSON line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunIdentity {
    /// The run's paths as given on the command line, joined with ` + `.
    pub name: String,
    /// `content_hash` of the run's files; `None` when one of them cannot be read again
    /// (stdin, a FIFO).
    pub hash: Option<String>,
}

/// Errors while hashing are not failures of the command: the hash is then unknown.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("{0} cannot be read twice (stdin, FIFO or device)")]
    NotAFile(String),
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// XXH3-64 of one file's bytes as stored (compressed files are hashed compressed).
fn file_hash(f: &SourceFile) -> Result<u64, HashError> {
    let path = f.display();
    let meta = std::fs::metadata(&f.path).map_err(|source| HashError::Io {
        path: path.clone(),
        source,
    })?;
    if f.is_stdin() || !meta.is_file() {
        return Err(HashError::NotAFile(path));
    }
    let mut file = std::fs::File::open(&f.path).map_err(|source| HashError::Io {
        path: path.clone(),
        source,
    })?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|source| HashError::Io {
            path: path.clone(),
            source,
        })?;
        if n == 0 {
            return Ok(hasher.digest());
        }
        hasher.update(&buf[..n]);
    }
}

/// The content hash of a run: XXH3-64 over the sorted XXH3-64 digests (8 bytes each,
/// little-endian) of its log and nvidia-smi files, as 16 lower-case hex digits. It depends
/// on the files' bytes only, not on their names, paths or order, so a run copied to
/// another machine hashes the same. Snapshots are not part of it: the run model is not
/// read from them.
pub fn content_hash(files: &[SourceFile]) -> Result<String, HashError> {
    let mut digests = files
        .iter()
        .filter(|f| matches!(f.kind, SourceKind::Log | SourceKind::NvidiaSmi))
        .map(file_hash)
        .collect::<Result<Vec<u64>, HashError>>()?;
    digests.sort_unstable();
    let bytes: Vec<u8> = digests.iter().flat_map(|d| d.to_le_bytes()).collect();
    Ok(format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes)))
}

pub fn identity(name: &str, files: &[SourceFile]) -> RunIdentity {
    RunIdentity {
        name: name.to_string(),
        hash: content_hash(files).ok(),
    }
}
