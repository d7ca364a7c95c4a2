//! How a run is read, and why it could not be.

use crate::ingest::scan;
use crate::ingest::source::SourceError;

/// Why a run could not be read at all (a run that reads badly is still a run, with notes).
#[derive(Debug, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "the #[error] texts say what each variant and field is"
)]
pub enum LoadError {
    /// A path that could not be opened or listed.
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("{path}: not a start-up log: {found}")]
    NotAStartupLog { path: String, found: String },
    #[error("{path}: read failed after {offset} bytes: {source}")]
    Read {
        path: String,
        offset: u64,
        source: std::io::Error,
    },
    #[error("rank {rank} is in the logs of two nodes, {first} and {second}: one rank cannot run on two hosts (the same node given twice, or two runs given as one?)")]
    RankOnTwoNodes {
        rank: String,
        first: String,
        second: String,
    },
    #[error("{path}: no log in this run could be read ({notes})")]
    NothingRead { path: String, notes: String },
    #[error("{path}: --attempt {asked}: {}", attempt_range(*count))]
    NoSuchAttempt {
        path: String,
        asked: usize,
        count: usize,
    },
    #[error("`-` (standard input) is given {times} times: it can be read once")]
    StdinTwice { times: usize },
}

/// The start-ups there are, as the values `--attempt` takes: `the log holds 1 start-up
/// (--attempt 1)`, `the log holds 3 start-ups (--attempt 1 to 3)`.
fn attempt_range(count: usize) -> String {
    match count {
        1 => "the log holds 1 start-up (--attempt 1)".to_string(),
        n => format!("the log holds {n} start-ups (--attempt 1 to {n})"),
    }
}

/// `--attempt` past the last start-up is an error, not the last one shown in its place.
pub(super) fn check_attempt(
    path: &str,
    asked: Option<usize>,
    count: usize,
) -> Result<(), LoadError> {
    match asked {
        Some(asked) if asked > count => Err(LoadError::NoSuchAttempt {
            path: path.to_string(),
            asked,
            count,
        }),
        _ => Ok(()),
    }
}

/// How to read a run: block size, which start-up, clock alignment, scans made elsewhere.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Bytes read per block when a log is scanned in parallel.
    pub block_size: usize,
    /// The start-up attempt to show (1-based); the last one when `None`.
    pub attempt: Option<usize>,
    /// Move each node's stamps onto the reference node's clock (multi-node runs); off
    /// under `--no-clock-align`, which still reports the offsets.
    pub clock_align: bool,
    /// The logs' scans, made by the caller instead of read here (by path; a log without
    /// one reads as empty): `watch` follows files as they are written and loads what it
    /// has read so far, its inputs listed by its follower.
    pub given: Option<std::sync::Arc<GivenScans>>,
    /// Hash each file's bytes as it is read, for the run's identity (`summary --json`,
    /// `report`); without it the identity reads the files again. Off for the commands
    /// that show no identity: the hash was 6 % of the instructions of scanning a log.
    pub digest: bool,
    /// The pool the events' equal messages and fields are shared through, with the other
    /// runs read with it (`diff`'s baseline and candidate print mostly the same lines);
    /// `None`: a pool of the run's own, let go once it is read.
    pub texts: Option<std::sync::Arc<SharedTexts>>,
}

/// Equal messages and fields of the events of the runs read with it, one allocation each
/// (`base::interned`). Locked once a file, as each file's events join its run.
#[derive(Default)]
pub struct SharedTexts(std::sync::Mutex<crate::base::interned::Interner>);

impl SharedTexts {
    pub(crate) fn intern_all(&self, events: &mut [crate::base::event::Event]) {
        let mut pool = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pool.intern_all(events);
    }
}

impl std::fmt::Debug for SharedTexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedTexts")
    }
}

/// Scans of a run's logs by path, made outside the loader (`ingest::follow`).
pub type GivenScans = std::collections::HashMap<std::path::PathBuf, scan::SourceScan>;

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            block_size: scan::DEFAULT_BLOCK,
            attempt: None,
            clock_align: true,
            given: None,
            digest: true,
            texts: None,
        }
    }
}
