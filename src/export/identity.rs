//! What names a run across a fleet: the name it was given and a hash of its content, so
//! that records from many runs (NDJSON lines loaded into one table) can be told apart and
//! the same run collected twice recognised.

use std::io::Read;
use std::path::{Component, Path};

use chrono::NaiveDateTime;

use crate::ingest::source::{SourceFile, SourceKind};
use crate::model::Run;

/// What names a run in every JSON document and on every NDJSON line.
#[derive(Clone, Debug, PartialEq)]
pub struct RunIdentity {
    /// `normalised_name` of the paths given: the same for `samples/x`, `samples/x/`,
    /// `./samples/x` and `/abs/…/samples/x`.
    pub(crate) name: String,
    /// The paths as given on the command line, joined with ` + `.
    pub(crate) paths: String,
    /// `content_hash` of the run's files; `None` when one of them cannot be read again
    /// (stdin, a FIFO).
    pub(crate) hash: Option<String>,
    /// The grammar of the run's server (`sglang`, `vllm`, `tgi`, `trtllm`, `lmdeploy`).
    pub(crate) server: Option<String>,
    /// The version the server printed, where it printed one.
    pub(crate) version: Option<String>,
    /// The start-up shown (1-based) of `attempts`.
    pub(crate) attempt: usize,
    pub(crate) attempts: usize,
    /// The stamp of the run's (the attempt's) first line.
    pub(crate) first_line: Option<NaiveDateTime>,
    /// The step of `first_line` from its line's format, milliseconds.
    pub(crate) first_line_step_ms: u32,
    /// The stamp of its last ready line, when it reached ready.
    pub(crate) ready_at: Option<NaiveDateTime>,
    /// The step of `ready_at` from its line's format, milliseconds.
    pub(crate) ready_at_step_ms: u32,
    /// `ready_at - first_line` in seconds, with the stamps' resolution.
    pub(crate) to_ready_s: Option<(crate::base::units::Seconds, crate::base::units::Seconds)>,
}

/// A run's name across a fleet: the last component of each path given (after `.` and
/// `..` are resolved against the working directory), joined with ` + `. A run directory
/// is named by itself wherever it lies (`samples/x`, `samples/x/` and its absolute path
/// are all `x`); the content hash tells apart two runs of the same name.
pub(crate) fn normalised_name(paths: &str) -> String {
    paths
        .split(" + ")
        .map(|p| {
            let path = Path::new(p);
            let absolute = std::fs::canonicalize(path).ok();
            let path = absolute.as_deref().unwrap_or(path);
            path.components()
                .rev()
                .find_map(|c| match c {
                    Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                    _ => None,
                })
                .unwrap_or_else(|| p.trim_end_matches('/').to_string())
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Errors while hashing are not failures of the command: the hash is then unknown.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HashError {
    #[error("{0} cannot be read twice (stdin, FIFO or device)")]
    NotAFile(String),
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// XXH3-64 of one file's bytes as stored (compressed files are hashed compressed): the
/// scan's, when it read the file to its end, else read again here.
fn file_hash(f: &SourceFile) -> Result<u64, HashError> {
    if let Some(&d) = f.digest.get() {
        return Ok(d);
    }
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
    let mut hasher = crate::ingest::stream::content_hasher();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|source| HashError::Io {
            path: path.clone(),
            source,
        })?;
        if n == 0 {
            return Ok(std::hash::Hasher::finish(&hasher));
        }
        std::hash::Hasher::write(&mut hasher, &buf[..n]);
    }
}

/// The content hash of a run: XXH3-64 over the sorted XXH3-64 digests (8 bytes each,
/// little-endian) of its log and nvidia-smi files, as 16 lower-case hex digits. It depends
/// on the files' bytes only, not on their names, paths or order, so a run copied to
/// another machine hashes the same. Snapshots are not part of it: the run model is not
/// read from them.
pub(crate) fn content_hash(files: &[SourceFile]) -> Result<String, HashError> {
    let mut digests = files
        .iter()
        .filter(|f| matches!(f.kind, SourceKind::Log | SourceKind::NvidiaSmi))
        .map(file_hash)
        .collect::<Result<Vec<u64>, HashError>>()?;
    digests.sort_unstable();
    let bytes: Vec<u8> = digests.iter().flat_map(|d| d.to_le_bytes()).collect();
    Ok(format!(
        "{:016x}",
        crate::ingest::stream::content_digest(&bytes)
    ))
}

pub(crate) fn identity(run: &Run, files: &[SourceFile]) -> RunIdentity {
    let server = run.servers.first().cloned();
    let version = match &run.config {
        Some(Ok(c)) if c.config.source.version.is_some() => c.config.source.version.clone(),
        _ => server
            .as_deref()
            .and_then(|g| crate::model::config::server_version(&run.events, g)),
    };
    let to_ready_s = crate::analysis::timing::to_ready_s(run);
    let ready_at = to_ready_s.and_then(|_| crate::analysis::timing::ready_at(run));
    RunIdentity {
        name: normalised_name(&run.name),
        paths: run.name.clone(),
        hash: content_hash(files).ok(),
        server,
        version,
        attempt: run.attempt.max(1),
        attempts: run.attempts.len().max(1),
        first_line: run.start,
        first_line_step_ms: run.start.map_or(1000, |t| run.stamp_step_ms(t)),
        ready_at,
        ready_at_step_ms: ready_at.map_or(1000, |t| run.stamp_step_ms(t)),
        to_ready_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::GrammarSet;
    use crate::session::{Inputs, LoadOptions, Session};
    use std::path::PathBuf;

    /// The hash the scan computed as it read each file against a second read of the same
    /// files (the digests cleared): a small plain file read whole, a compressed file read
    /// as a stream, and a plain file read in blocks smaller than itself.
    #[test]
    fn the_scans_digest_is_the_files_hash() {
        let gs = GrammarSet::builtin().unwrap();
        let cases = [
            ("samples/tp8-custom-ar", LoadOptions::default()),
            (
                "tests/hostile/turn3/pzstd_made.log.zst",
                LoadOptions::default(),
            ),
            (
                "tests/hostile/turn3/crashloop_1100_then_ready.log.gz",
                LoadOptions::default(),
            ),
            (
                "samples/tp8-baseline/server.log",
                LoadOptions {
                    block_size: 4096,
                    ..LoadOptions::default()
                },
            ),
        ];
        // On two threads a plain file longer than a block is read at its blocks' offsets
        // and hashed as they are merged; on one, as a stream.
        for (threads, (path, opts)) in [1, 2]
            .into_iter()
            .flat_map(|t| cases.clone().map(|c| (t, c)))
        {
            let inputs = Inputs::discover(&[PathBuf::from(path)]).unwrap();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let s = pool.install(|| Session::load(&gs, &inputs, &opts, &|_, _| {}).unwrap());
            let logs = s.files.iter().filter(|f| f.kind == SourceKind::Log);
            assert!(
                logs.clone().all(|f| f.digest.get().is_some()),
                "{path} on {threads}"
            );
            let from_scan = content_hash(&s.files).unwrap();
            let again: Vec<SourceFile> = (s.files.iter())
                .map(|f| SourceFile {
                    digest: Default::default(),
                    ..f.clone()
                })
                .collect();
            assert_eq!(
                from_scan,
                content_hash(&again).unwrap(),
                "{path} on {threads}"
            );
        }
        // A file loaded with no digest from the scan is hashed again when asked, whole as
        // stored: the run's hash is that of its one file's hash.
        let hashed_again = |path: &str, opts: &LoadOptions| {
            let inputs = Inputs::discover(&[PathBuf::from(path)]).unwrap();
            let s = Session::load(&gs, &inputs, opts, &|_, _| {}).unwrap();
            assert!(s.files.iter().all(|f| f.digest.get().is_none()), "{path}");
            let whole = std::fs::read(path).unwrap();
            let digest = crate::ingest::stream::content_digest;
            let expected = digest(&digest(&whole).to_le_bytes());
            assert_eq!(content_hash(&s.files).unwrap(), format!("{expected:016x}"));
        };
        // A file whose read stopped early (a gzip stream cut short).
        hashed_again("tests/hostile/rank9.log.gz", &LoadOptions::default());
        // Loaded for a command that shows no identity: a small and a large (block-read)
        // file are not hashed as read.
        for block_size in [4096, crate::ingest::scan::DEFAULT_BLOCK] {
            let opts = LoadOptions {
                block_size,
                digest: false,
                ..LoadOptions::default()
            };
            hashed_again("samples/tp8-baseline/server.log", &opts);
        }
    }
}
