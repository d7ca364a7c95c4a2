//! Inputs: which files make a run, and what each is. Their bytes are read by `stream`
//! (re-exported here, where the readers have always found them).
//!
//! A path is a log file (all ranks interleaved, as SGLang writes), a per-rank file, or a run
//! directory (every log-like file in it, plus snapshots and nvidia-smi CSVs); `-` is stdin.
//! Compression is recognised by magic bytes, not by name, so a renamed `.gz` still reads,
//! and so does gzip or zstd piped to stdin or written to a FIFO.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

pub(crate) use super::stream::{binary_offset, open, open_stream};
pub use super::stream::{DecompressionStop, StopReason};

/// Limits on reading one file (docs/reliability.md).
pub(crate) mod limits {
    /// Decompressed bytes read from one compressed file; the rest is not read.
    pub(crate) const MAX_DECOMPRESSED: u64 = 4 << 30;
    /// Past this much output a compressed file that expands more than [`BOMB_RATIO`]:1
    /// is stopped: no real log compresses that well (gzip cannot pass about 1,030:1;
    /// real logs give 5–50:1), a decompression bomb or one repeated line does.
    pub(crate) const BOMB_CHECK_AFTER: u64 = 256 << 20;
    pub(crate) const BOMB_RATIO: u64 = 500;
    /// A file that expanded more than this is said in the notes.
    pub(crate) const WARN_RATIO: u64 = 100;
    /// The largest zstd window accepted (2^27 = 128 MiB, zstd's default limit): a frame
    /// that needs more is refused with zstd's error, in a note.
    pub(crate) const ZSTD_WINDOW_LOG_MAX: u32 = 27;
    /// Bytes of an nvidia-smi CSV read: 1 s samples of 8 GPUs make about 70 MiB a day,
    /// and a start-up is in the first minutes.
    pub(crate) const MAX_CSV: u64 = 32 << 20;
}

/// Why an input path could not be read as a run's files.
#[derive(Debug, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "the #[error] texts say what each variant and field is"
)]
pub enum SourceError {
    #[error("{path}: no such file or directory")]
    Missing { path: String },
    #[error("{path}: cannot read: {source}")]
    Unreadable { path: String, source: io::Error },
    #[error("{path}: no log files in this directory (looked for *.log, *.txt, *.out, *.err, also .gz/.zst){}", snapshot_hint(path, *.snapshots))]
    EmptyDir {
        path: String,
        /// The PyTorch snapshots it holds (`mem` reads them).
        snapshots: usize,
    },
    #[error("{path}: binary data (NUL byte at offset {offset}), not a log")]
    Binary { path: String, offset: usize },
}

/// Where a directory holds snapshots but no log, the command that reads them.
fn snapshot_hint(path: &str, snapshots: usize) -> String {
    match snapshots {
        0 => String::new(),
        n => format!(
            "; it holds {n} PyTorch memory snapshot{}: read {} with `rankscope mem {path}`",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" }
        ),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Gzip,
    Zstd,
}

/// What a file is, by its name and first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A text log (plain, gzip or zstd).
    Log,
    /// A PyTorch memory snapshot (pickle).
    Snapshot,
    /// `nvidia-smi` CSV samples.
    NvidiaSmi,
}

/// One input file of a run, found under the paths given.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// As given or found; `-` for stdin.
    pub(crate) path: PathBuf,
    /// What the file is.
    pub kind: SourceKind,
    /// `None` until the file's first bytes are read: a directory's listing does not open
    /// its files, so each is opened once, when it is scanned (for a run of thousands of
    /// rank files, a second open per file was a tenth of the system time).
    pub(crate) compression: Option<Compression>,
    pub(crate) size: Option<u64>,
    /// Rank number from the file name (`rank3.log`, `snapshot_rank3.pickle`, `_tp3`).
    pub(crate) rank_hint: Option<u32>,
    /// XXH3-64 of the file's bytes as stored, set by the scan that read them all (the
    /// run's content hash then needs no second read of each file).
    pub(crate) digest: std::sync::OnceLock<u64>,
}

impl SourceFile {
    pub(crate) fn display(&self) -> String {
        crate::base::text::shown_path(&self.path)
    }
    pub(crate) fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
    }
    /// [`Self::compression_now`], or `None` while the file's first bytes cannot yet say
    /// ([`compression_decided`]: a compressed log created and not yet written). A file
    /// that cannot be read is plain, as there.
    pub(crate) fn compression_if_known(&self) -> Option<Compression> {
        if self.compression.is_some() || self.is_stdin() {
            return Some(self.compression_now());
        }
        match File::open(&self.path).and_then(|mut f| first_bytes(&mut f)) {
            Ok((head, got)) => compression_decided(&head[..got]),
            Err(_) => Some(Compression::None),
        }
    }

    /// The compression, reading the file's first bytes if the listing did not (plain for
    /// standard input, a special file or a file that cannot be read: the read that
    /// follows reports what it finds).
    pub(crate) fn compression_now(&self) -> Compression {
        match self.compression {
            Some(c) => c,
            None if self.is_stdin() => Compression::None,
            None => sniff(&self.path).map_or(Compression::None, |(c, _)| c),
        }
    }
}

fn classify_name(name: &str) -> Option<SourceKind> {
    let lower = name.to_ascii_lowercase();
    let base = lower
        .strip_suffix(".gz")
        .or_else(|| lower.strip_suffix(".zst"))
        .unwrap_or(&lower);
    if base.ends_with(".pickle") || base.ends_with(".pkl") {
        return Some(SourceKind::Snapshot);
    }
    if base.ends_with(".csv") && base.contains("smi") {
        return Some(SourceKind::NvidiaSmi);
    }
    if [".log", ".txt", ".out", ".err"]
        .iter()
        .any(|e| base.ends_with(e))
    {
        return Some(SourceKind::Log);
    }
    None
}

/// `rank3`, `rank_3`, `_tp3`, `-tp3` in a file name.
pub(crate) fn rank_from_name(name: &str) -> Option<u32> {
    let lower = name.to_ascii_lowercase();
    for key in ["rank", "tp"] {
        let mut from = 0;
        while let Some(p) = lower[from..].find(key) {
            let at = from + p;
            let before_ok = at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphabetic();
            let digits: String = lower[at + key.len()..]
                .trim_start_matches(['_', '-'])
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            if before_ok && !digits.is_empty() {
                return digits.parse().ok();
            }
            from = at + key.len();
        }
    }
    None
}

/// The compression a stream's first bytes name. A zstd stream may open with a skippable
/// frame (magic 0x184D2A50–5F: pzstd writes one first, with the sizes of the frames
/// after it); the decoder skips it.
pub(crate) fn compression_of(head: &[u8]) -> Compression {
    match head {
        [0x1f, 0x8b, ..] => Compression::Gzip,
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
        [m, 0x2a, 0x4d, 0x18, ..] if m & 0xf0 == 0x50 => Compression::Zstd,
        _ => Compression::None,
    }
}

/// The compression `head` shows, or `None` while it is too short to say: an empty file,
/// or fewer bytes than a magic number that they begin (a compressor that has created its
/// output file but not yet written the header — `… | gzip > server.log.gz` holds its
/// first block back).
pub(crate) fn compression_decided(head: &[u8]) -> Option<Compression> {
    const MAGICS: [&[u8]; 2] = [&[0x1f, 0x8b], &[0x28, 0xb5, 0x2f, 0xfd]];
    let skippable = |h: &[u8]| {
        h.first().is_some_and(|m| m & 0xf0 == 0x50) && [0x2a, 0x4d, 0x18].starts_with(&h[1..])
    };
    let begins_magic = MAGICS
        .iter()
        .any(|m| head.len() < m.len() && m.starts_with(head));
    if head.is_empty() || begins_magic || (head.len() < 4 && skippable(head)) {
        return None;
    }
    Some(compression_of(head))
}

fn sniff(path: &Path) -> Result<(Compression, Option<u64>), SourceError> {
    let unreadable = |source| SourceError::Unreadable {
        path: crate::base::text::shown_path(path),
        source,
    };
    let mut f = File::open(path).map_err(unreadable)?;
    let size = f.metadata().ok().map(|m| m.len());
    let (head, got) = first_bytes(&mut f).map_err(unreadable)?;
    Ok((compression_of(&head[..got]), size))
}

/// A file's first four bytes (fewer when it is shorter) and how many there are: enough
/// for every magic number [`compression_of`] knows.
fn first_bytes(f: &mut File) -> io::Result<([u8; 4], usize)> {
    let mut head = [0u8; 4];
    match crate::ingest::scan::read_full(f, &mut head, None) {
        (got, None) => Ok((head, got)),
        (_, Some(e)) => Err(e),
    }
}

/// The files a path stands for. A directory is one run; files inside it are in the natural
/// order of their names (`rank2.log` before `rank10.log`: [`natural_key`]) so every run
/// reads the same way.
pub fn discover(path: &Path) -> Result<Vec<SourceFile>, SourceError> {
    discover_noted(path).map(|(files, _)| files)
}

/// [`discover`], with notes on the directory entries it skipped and why (a symlink
/// loop, a dangling link, an entry that cannot be read).
pub(crate) fn discover_noted(
    path: &Path,
) -> Result<(Vec<SourceFile>, Vec<ListingNote>), SourceError> {
    if path.as_os_str() == "-" {
        return Ok((
            vec![SourceFile {
                path: path.to_path_buf(),
                kind: SourceKind::Log,
                compression: Some(Compression::None),
                size: None,
                rank_hint: None,
                digest: Default::default(),
            }],
            Vec::new(),
        ));
    }
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => SourceError::Missing {
            path: crate::base::text::shown_path(path),
        },
        _ => SourceError::Unreadable {
            path: crate::base::text::shown_path(path),
            source: e,
        },
    })?;
    if !meta.is_dir() {
        return Ok((vec![named_file(path, &meta)?], Vec::new()));
    }
    run_directory(path)
}

/// A path that is not a directory, as the one file of its run.
fn named_file(path: &Path, meta: &std::fs::Metadata) -> Result<SourceFile, SourceError> {
    // A regular file, or a FIFO or device named on purpose: read as a stream (its
    // compression is found from its first bytes when it is read; a FIFO's bytes
    // can be read once only, so it is not sniffed here).
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let kind = classify_name(&name).unwrap_or(SourceKind::Log);
    let (compression, size) = if meta.is_file() {
        sniff(path)?
    } else {
        (Compression::None, None)
    };
    let compression = Some(compression);
    Ok(SourceFile {
        path: path.to_path_buf(),
        kind,
        compression,
        size,
        rank_hint: rank_from_name(&name),
        digest: Default::default(),
    })
}

/// A run directory's files in the natural order of their names, with notes on the
/// entries skipped.
fn run_directory(path: &Path) -> Result<(Vec<SourceFile>, Vec<ListingNote>), SourceError> {
    let entries = std::fs::read_dir(path).map_err(|source| SourceError::Unreadable {
        path: crate::base::text::shown_path(path),
        source,
    })?;
    let mut notes = Vec::new();
    // (natural key, name, path, size): sorted by the key made once per name, then by the
    // name's bytes, the order `Path`'s comparison gives paths of one directory, for names
    // the key does not tell apart (`rank01`, `rank1`); not by parsing both paths into
    // components at every comparison (that was 2 % of `summary` over 8,192 rank files, and
    // grows as n log n).
    let mut files: Vec<(Vec<u8>, std::ffi::OsString, PathBuf, u64)> = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                notes.push(ListingNote::EntryNotListed {
                    dir: crate::base::text::shown_path(path),
                    error: e.to_string(),
                });
                continue;
            }
        };
        let p = entry.path();
        let file_name = entry.file_name();
        let named = classify_name(&file_name.to_string_lossy()).is_some();
        // The entry's own metadata (`fstatat` in the open directory, not a walk of the
        // whole path: 8,192 of those were 3 % of `summary` over as many rank files), and
        // a link's target's where the entry is a link, as `fs::metadata` would follow it.
        let followed = match entry.file_type() {
            Ok(t) if !t.is_symlink() => entry.metadata(),
            _ => std::fs::metadata(&p),
        };
        match followed {
            Ok(m) if m.is_file() => files.push((natural_key(&file_name), file_name, p, m.len())),
            // A FIFO could block the run and a device could be endless: a run directory
            // reads regular files only (a special file is read when named alone).
            Ok(m) if named => notes.push(ListingNote::NotRegular {
                path: crate::base::text::shown_path(&p),
                what: SpecialFile::of(&m.file_type()),
            }),
            Ok(_) => {}
            // Only names that would have been read are worth a note.
            Err(e) if named => notes.push(ListingNote::Unreadable {
                path: crate::base::text::shown_path(&p),
                error: e.to_string(),
            }),
            Err(_) => {}
        }
    }
    files.sort_unstable_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    notes.sort_by_cached_key(ListingNote::order);
    let mut out = Vec::new();
    for (_, name, f, size) in files {
        let name = name.to_string_lossy();
        let Some(kind) = classify_name(&name) else {
            continue;
        };
        // Not opened here (its compression is read with its first bytes when it is
        // scanned); a file that cannot be opened is still listed: reading it fails with a
        // note naming it, and the other files still make the run.
        out.push(SourceFile {
            rank_hint: rank_from_name(&name),
            path: f,
            kind,
            compression: None,
            size: Some(size),
            digest: Default::default(),
        });
    }
    if !out.iter().any(|s| s.kind == SourceKind::Log) {
        return Err(SourceError::EmptyDir {
            path: crate::base::text::shown_path(path),
            snapshots: out
                .iter()
                .filter(|s| s.kind == SourceKind::Snapshot)
                .count(),
        });
    }
    Ok((out, notes))
}

/// A file name as a key whose byte order is the names' natural order: each run of ASCII
/// digits compares as the number it writes (`rank2` before `rank10`), every other byte as
/// itself. A run becomes `0`, the count of its digits after any leading zeros (at most
/// 255: longer numbers still sort, by their digits), then those digits; a key's `0` only
/// ever starts a number, so a number sorts against any other byte as a digit would.
///
/// In the order of their bytes, a run's `rank10.log` came before its `rank2.log`: nodes'
/// files were scanned interleaved (`rank0`–`rank7` on the first node were the 1st, 2nd,
/// 11,113th, 22,224th, … of 65,536), and putting the events in node order
/// (`session::nodes::split_by_node`) moved most of them.
fn natural_key(name: &std::ffi::OsStr) -> Vec<u8> {
    let bytes = name.as_encoded_bytes();
    let mut key = Vec::with_capacity(bytes.len() + 4);
    let mut rest = bytes;
    while let Some((&first, tail)) = rest.split_first() {
        if !first.is_ascii_digit() {
            key.push(first);
            rest = tail;
            continue;
        }
        let run = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let (digits, after) = rest.split_at(run);
        let zeros = digits.iter().take_while(|&&b| b == b'0').count();
        let significant = &digits[zeros..];
        key.push(b'0');
        key.push(u8::try_from(significant.len()).unwrap_or(u8::MAX));
        key.extend_from_slice(significant);
        rest = after;
    }
    key
}

/// The files one node of a run wrote: a directory of its own (`run/node1/`,
/// `run/<hostname>/`), or one path of several given for one run.
#[derive(Clone, Debug)]
pub struct NodeFiles {
    /// The directory's name (or the file's, for a path that is a file); `None` for a run
    /// given as one path that is not split into nodes.
    pub(crate) node: Option<String>,
    /// The name is a directory's that holds this node's files (`node1/`, or the common
    /// parent of files given from two or more directories), not a file's.
    pub(crate) by_dir: bool,
    pub(crate) files: Vec<SourceFile>,
    /// What was skipped while listing it (see [`discover_noted`]), and the run
    /// directory's subdirectories that could not be read (they may be nodes).
    pub(crate) notes: Vec<ListingNote>,
}

/// The PyTorch snapshot files (`*.pickle`, `*.pkl`, also compressed) directly in a
/// directory, in rank order where their names give one (`snapshot_rank2` before
/// `snapshot_rank10`), then by name.
pub fn snapshots_in(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found: Vec<(Option<u32>, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| {
            classify_name(&e.file_name().to_string_lossy()) == Some(SourceKind::Snapshot)
                && e.path().is_file()
        })
        .map(|e| (rank_from_name(&e.file_name().to_string_lossy()), e.path()))
        .collect();
    found.sort_by(|a, b| (a.0.is_none(), a.0, &a.1).cmp(&(b.0.is_none(), b.0, &b.1)));
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

/// Whether a directory holds log files directly (not in subdirectories).
fn has_logs(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(|e| e.ok()).any(|e| {
            let p = e.path();
            p.is_file() && classify_name(&e.file_name().to_string_lossy()) == Some(SourceKind::Log)
        })
    })
}

/// A directory entry the listing did not read, and why (worded in
/// `render::text::notes`). Paths are shown paths (sanitised).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListingNote {
    /// The directory `dir` gave an entry that could not be listed.
    EntryNotListed {
        /// The directory listed.
        dir: String,
        /// The error, in its own words.
        error: String,
    },
    /// An entry under a name that would be read is not a regular file.
    NotRegular {
        /// The file, as shown.
        path: String,
        /// What the entry is.
        what: SpecialFile,
    },
    /// An entry under a name that would be read (or a subdirectory that may be a node)
    /// could not be read: a symlink loop, a dangling link, no permission.
    Unreadable {
        /// The file, as shown.
        path: String,
        /// The error, in its own words.
        error: String,
    },
}

impl ListingNote {
    /// The order the notes of one directory are listed in: by the path they name (as
    /// their sentences begin with it, followed by `:`), then by what they say.
    fn order(&self) -> (String, String) {
        match self {
            ListingNote::EntryNotListed { dir, error } => (format!("{dir}:"), error.clone()),
            ListingNote::NotRegular { path, what } => (format!("{path}:"), format!("{what:?}")),
            ListingNote::Unreadable { path, error } => (format!("{path}:"), error.clone()),
        }
    }
}

/// What a file that is not a regular one is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialFile {
    /// A directory.
    Directory,
    /// A FIFO (named pipe).
    Fifo,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A socket.
    Socket,
    /// Another kind of special file.
    Other,
}

impl SpecialFile {
    fn of(t: &std::fs::FileType) -> SpecialFile {
        use std::os::unix::fs::FileTypeExt;
        if t.is_dir() {
            SpecialFile::Directory
        } else if t.is_fifo() {
            SpecialFile::Fifo
        } else if t.is_char_device() {
            SpecialFile::CharDevice
        } else if t.is_block_device() {
            SpecialFile::BlockDevice
        } else if t.is_socket() {
            SpecialFile::Socket
        } else {
            SpecialFile::Other
        }
    }
}

fn skipped_dir((dir, e): &(PathBuf, io::Error)) -> ListingNote {
    ListingNote::Unreadable {
        path: crate::base::text::shown_path(dir),
        error: e.to_string(),
    }
}

/// The nodes of one run given as several paths, or as one directory whose
/// subdirectories hold the nodes' files (`run/node0/`, `run/node1/`): one entry per node,
/// in the order given (subdirectories sorted by name). A run that is one path with its
/// logs at the top is one entry without a node name.
pub(crate) fn discover_nodes(paths: &[PathBuf]) -> Result<Vec<NodeFiles>, SourceError> {
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| crate::base::text::sanitize(&n.to_string_lossy()))
            .unwrap_or_else(|| crate::base::text::shown_path(p))
    };
    // Files given one by one from two or more directories (`node0/server.log
    // node0/stdout.txt node1/server.log …`) are grouped by their directory, which names
    // the node; files all from one directory stay one candidate node each, for the hosts
    // and ranks they name to sort out (`load::assign_nodes`).
    let parent_of = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
    let dirs: std::collections::BTreeSet<PathBuf> = paths
        .iter()
        .map(|p| if p.is_dir() { p.clone() } else { parent_of(p) })
        .collect();
    let group_files_by_dir = paths.len() > 1 && dirs.len() > 1;
    let mut group_of_dir = std::collections::BTreeMap::<PathBuf, usize>::new();
    let mut out: Vec<NodeFiles> = Vec::new();
    for path in paths {
        if group_files_by_dir && !path.is_dir() {
            let dir = parent_of(path);
            let (files, notes) = discover_noted(path)?;
            if let Some(&i) = group_of_dir.get(&dir) {
                out[i].files.extend(files);
                out[i].notes.extend(notes);
            } else {
                group_of_dir.insert(dir.clone(), out.len());
                let name = dir
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_else(|| {
                        std::env::current_dir()
                            .ok()
                            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().to_string()))
                            .unwrap_or_else(|| ".".to_string())
                    });
                out.push(NodeFiles {
                    node: Some(name),
                    by_dir: true,
                    files,
                    notes,
                });
            }
            continue;
        }
        let mut unreadable: Vec<(PathBuf, io::Error)> = Vec::new();
        let subdirs = if path.is_dir() && !has_logs(path) {
            let entries = std::fs::read_dir(path).map_err(|source| SourceError::Unreadable {
                path: crate::base::text::shown_path(path),
                source,
            })?;
            let mut dirs: Vec<PathBuf> = Vec::new();
            for p in entries.filter_map(|e| e.ok()).map(|e| e.path()) {
                if !p.is_dir() {
                    continue;
                }
                // A subdirectory that cannot be listed may be a node: said, not dropped.
                match std::fs::read_dir(&p) {
                    Err(e) => unreadable.push((p, e)),
                    Ok(_) if has_logs(&p) => dirs.push(p),
                    Ok(_) => {}
                }
            }
            dirs.sort();
            unreadable.sort_by(|a, b| a.0.cmp(&b.0));
            dirs
        } else {
            Vec::new()
        };
        if subdirs.is_empty() {
            // One path of several is a node named after it; a lone path is the whole run.
            let node = (paths.len() > 1).then(|| name_of(path));
            let (files, mut notes) = match discover_noted(path) {
                // No log anywhere but in a subdirectory that cannot be read: that is why.
                Err(SourceError::EmptyDir { .. }) if !unreadable.is_empty() => {
                    let (dir, source) = unreadable.swap_remove(0);
                    return Err(SourceError::Unreadable {
                        path: crate::base::text::shown_path(&dir),
                        source,
                    });
                }
                r => r?,
            };
            notes.extend(unreadable.iter().map(skipped_dir));
            out.push(NodeFiles {
                by_dir: node.is_some() && path.is_dir(),
                node,
                files,
                notes,
            });
        } else {
            for (i, d) in subdirs.into_iter().enumerate() {
                let (files, mut notes) = discover_noted(&d)?;
                if i == 0 {
                    notes.extend(unreadable.iter().map(skipped_dir));
                }
                out.push(NodeFiles {
                    node: Some(name_of(&d)),
                    by_dir: true,
                    files,
                    notes,
                });
            }
        }
    }
    // Two nodes with one name (`a/node0`, `b/node0`) are told apart by their whole path.
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for n in out.iter().filter_map(|n| n.node.clone()) {
        *seen.entry(n).or_default() += 1;
    }
    for n in &mut out {
        if n.node.as_ref().is_some_and(|name| seen[name] > 1) {
            if let Some(dir) = n.files.first().and_then(|f| f.path.parent()) {
                n.node = Some(crate::base::text::shown_path(dir));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bytes_say_the_compression_once_there_are_enough_of_them() {
        use Compression::{Gzip, None as Plain, Zstd};
        let cases: [(&[u8], Option<Compression>); 12] = [
            (b"", None),
            (&[0x1f], None),
            (&[0x1f, 0x8b], Some(Gzip)),
            (&[0x1f, b'a'], Some(Plain)),
            (&[0x28], None),
            (&[0x28, 0xb5, 0x2f], None),
            (&[0x28, 0xb5, 0x2f, 0xfd], Some(Zstd)),
            (b"(W", Some(Plain)),
            (&[0x5a, 0x2a, 0x4d], None),
            (&[0x5a, 0x2a, 0x4d, 0x18], Some(Zstd)),
            (b"Pr", Some(Plain)),
            (b"[20", Some(Plain)),
        ];
        for (head, expected) in cases {
            assert_eq!(compression_decided(head), expected, "{head:?}");
        }
    }

    #[test]
    fn a_run_directory_lists_its_files_with_numbers_in_their_order() {
        // Removed when dropped, a failed assertion included.
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path();
        // 200 digits: a name longer than 255 bytes cannot be made.
        let long = format!("rank{}.log", "9".repeat(200));
        let names = [
            "rank10.log",
            "rank2.log",
            "rank1.log",
            "rank01.log",
            "rank-1.log",
            "rank1a.log",
            "node2_rank10.log",
            "node10_rank2.log",
            "node2_rank9.log",
            long.as_str(),
        ];
        for n in names {
            std::fs::write(dir.join(n), "x\n").unwrap();
        }
        let listed: Vec<String> = (discover(dir).unwrap().iter())
            .map(|f| f.path.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        // `rank01` and `rank1` are one number, in their bytes' order; `-` (0x2d) sorts
        // before a number as before a digit; the 200-digit number after every short one.
        let expected = [
            "node2_rank9.log",
            "node2_rank10.log",
            "node10_rank2.log",
            "rank-1.log",
            "rank01.log",
            "rank1.log",
            "rank1a.log",
            "rank2.log",
            "rank10.log",
            long.as_str(),
        ];
        assert_eq!(listed, expected);
        // Past 255 digits the count saturates: such numbers compare by their digits.
        let key = |n: String| natural_key(std::ffi::OsStr::new(&n));
        assert!(key("9".repeat(300)) > key(format!("1{}", "0".repeat(300))));
        assert!(key("7".repeat(30)) < key("1".repeat(300)));
    }

    #[test]
    fn rank_hints() {
        assert_eq!(rank_from_name("rank3.log"), Some(3));
        assert_eq!(rank_from_name("snapshot_rank12.pickle"), Some(12));
        assert_eq!(rank_from_name("server_tp5.log"), Some(5));
        assert_eq!(rank_from_name("server.log"), None);
        assert_eq!(rank_from_name("stdout.txt"), None);
    }
}
