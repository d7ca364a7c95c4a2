//! PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot()`): a safe pickle
//! reader, the typed model, analysis by allocation site, and text rendering.

mod error;
pub mod inspect;
pub mod oom;
mod pages;
pub mod pickle;
pub mod site;
pub mod trace;
pub mod types;

use std::path::Path;

pub use error::SnapshotError;
pub(crate) use pickle::PickleError;
pub use trace::{Action, StackId, TraceEntry};
pub use types::{Block, BlockState, Frame, Segment, Snapshot};

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

/// Whether a file opens with text, not a pickle: no PROTO byte first, and its first
/// kilobyte is UTF-8 (a character cut at the end aside) with no NUL and no control byte
/// other than tab, newline, carriage return and escape.
fn looks_like_text(mut f: &std::fs::File) -> bool {
    use std::io::{Read, Seek};
    let mut head = [0u8; 1024];
    let n = f.read(&mut head).unwrap_or(0);
    // Back to the start for the reader; a file that cannot seek is read as it is.
    if f.rewind().is_err() || n == 0 || head[0] == 0x80 {
        return false;
    }
    let head = &head[..n];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r' | 0x1b))
}

/// Reads a snapshot file. The file is streamed through a small buffer rather than mapped,
/// so peak memory is the decoded arena, not arena plus file.
///
/// Trace entries, nearly all of a snapshot, are decoded straight into the model as they
/// are read (`pickle::parse_direct`), so they never take room in the arena. A pickle that
/// shares one of those dicts in a way only the general reader can follow (rare, never
/// written by PyTorch) is read a second time with it; either way the result is the same.
pub fn read_path(path: &Path) -> Result<Snapshot, SnapshotError> {
    let meta = std::fs::metadata(path).map_err(|source| SnapshotError::Io {
        path: path.to_owned(),
        source,
    })?;
    if meta.is_dir() {
        return Err(SnapshotError::NotAFile {
            path: path.to_owned(),
            what: "a directory",
        });
    }
    // A FIFO, a device or a /proc file has no length to read by: read as a stream.
    if !meta.is_file() || meta.len() == 0 {
        return read_stream(path);
    }
    if is_gzip(path) {
        return read_gzip(path);
    }
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
    if looks_like_text(&f) {
        return Err(SnapshotError::Text {
            path: path.to_owned(),
        });
    }
    let p = pickle::parse_direct(f, len).map_err(pickle_err)?;
    if let Some(res) = types::from_direct(p) {
        return res.and_then(sizes_fit).map_err(in_file);
    }
    let (f, len) = open()?;
    let p = pickle::parse_reader(f, len).map_err(pickle_err)?;
    types::from_pickle(&p).map_err(in_file)
}

/// The most read from a stream that is not a regular file, or decompressed from a gzip
/// file: the memory bound of one process (a plain file is read by its length instead).
pub(crate) const MAX_STREAM_SNAPSHOT: u64 = 256 << 20;

fn is_gzip(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == [0x1f, 0x8b])
}

/// A snapshot compressed with gzip (`snapshot_rank1.pickle.gz`, as copied off a node):
/// decompressed into memory, at most `MAX_STREAM_SNAPSHOT` bytes.
fn read_gzip(path: &Path) -> Result<Snapshot, SnapshotError> {
    use std::io::Read;
    let io = |source| SnapshotError::Io {
        path: path.to_owned(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(f)
        .take(MAX_STREAM_SNAPSHOT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io(std::io::Error::new(e.kind(), format!("gzip: {e}"))))?;
    if bytes.len() as u64 > MAX_STREAM_SNAPSHOT {
        return Err(SnapshotError::StreamTooLarge {
            path: path.to_owned(),
            limit: MAX_STREAM_SNAPSHOT,
        });
    }
    from_memory(path, &bytes)
}

fn from_memory(path: &Path, bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
    read_bytes(bytes).map_err(|e| match e {
        SnapshotError::Pickle { path: None, source } => SnapshotError::Pickle {
            path: Some(path.to_owned()),
            source,
        },
        e => SnapshotError::InFile {
            file: path.to_owned(),
            source: Box::new(e),
        },
    })
}

fn read_stream(path: &Path) -> Result<Snapshot, SnapshotError> {
    use std::io::Read;
    let io = |source| SnapshotError::Io {
        path: path.to_owned(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    // The first byte first (a pickle opens with PROTO, 0x80): /dev/zero is refused at
    // byte 0, not after the limit.
    let mut bytes = Vec::new();
    (&mut f).take(1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.first() == Some(&0x80) {
        f.take(MAX_STREAM_SNAPSHOT)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 > MAX_STREAM_SNAPSHOT {
            return Err(SnapshotError::StreamTooLarge {
                path: path.to_owned(),
                limit: MAX_STREAM_SNAPSHOT,
            });
        }
    }
    from_memory(path, &bytes)
}

/// Reads a snapshot held in memory.
pub fn read_bytes(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
    let pickle_err = |source| SnapshotError::Pickle { path: None, source };
    let p = pickle::parse_direct_bytes(bytes).map_err(pickle_err)?;
    if let Some(res) = types::from_direct(p) {
        return res.and_then(sizes_fit);
    }
    let p = pickle::parse(bytes).map_err(pickle_err)?;
    types::from_pickle(&p)
}

/// Every sum the analysis makes of segment and block sizes fits in 64 bits: five
/// segments of 2^62 bytes summed to 4096 PiB (wrapped) where they claim 20480 PiB. No
/// device holds 16 EiB, so such a snapshot is refused, naming the first size past it.
pub(crate) fn sizes_fit(s: Snapshot) -> Result<Snapshot, SnapshotError> {
    for (key, segs) in [
        ("segments", &s.segments),
        ("host_segments", &s.host_segments),
    ] {
        let mut sums = [0u64; 6];
        for (i, seg) in segs.iter().enumerate() {
            let sizes = [
                ("total_size", seg.total_size),
                ("allocated_size", seg.allocated_size),
                ("active_size", seg.active_size),
                ("requested_size", seg.requested_size),
            ];
            let blocks =
                seg.blocks.iter().enumerate().flat_map(|(j, b)| {
                    [("size", b.size, j), ("requested_size", b.requested_size, j)]
                });
            let mut over = None;
            for (k, (field, v)) in sizes.into_iter().enumerate() {
                match sums[k].checked_add(v) {
                    Some(t) => sums[k] = t,
                    None => over = over.or(Some(format!("{key}[{i}].{field}"))),
                }
            }
            for (field, v, j) in blocks {
                let k = if field == "size" { 4 } else { 5 };
                match sums[k].checked_add(v) {
                    Some(t) => sums[k] = t,
                    None => over = over.or(Some(format!("{key}[{i}].blocks[{j}].{field}"))),
                }
            }
            if let Some(path) = over {
                return Err(SnapshotError::Shape {
                    path,
                    expected: "sizes that sum under 2^64 bytes (16 EiB, past any device)",
                    found: "a sum past it",
                });
            }
        }
    }
    Ok(s)
}
