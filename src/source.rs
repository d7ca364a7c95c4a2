//! Inputs: which files make a run, and how to read their bytes.
//!
//! A path is a log file (all ranks interleaved, as SGLang writes), a per-rank file, or a run
//! directory (every log-like file in it, plus snapshots and nvidia-smi CSVs); `-` is stdin.
//! Compression is recognised by magic bytes, not by name, so a renamed `.gz` still reads.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{path}: no such file or directory")]
    Missing { path: String },
    #[error("{path}: cannot read: {source}")]
    Unreadable { path: String, source: io::Error },
    #[error("{path}: no log files in this directory (looked for *.log, *.txt, *.out, *.err, also .gz/.zst)")]
    EmptyDir { path: String },
    #[error("{path}: binary data (NUL byte at offset {offset}), not a log")]
    Binary { path: String, offset: usize },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    Log,
    Snapshot,
    NvidiaSmi,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct SourceFile {
    /// As given or found; `-` for stdin.
    pub path: PathBuf,
    pub kind: SourceKind,
    pub compression: Compression,
    pub size: Option<u64>,
    /// Rank number from the file name (`rank3.log`, `snapshot_rank3.pickle`, `_tp3`).
    pub rank_hint: Option<u32>,
}

impl SourceFile {
    pub fn display(&self) -> String {
        self.path.display().to_string()
    }
    pub fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
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
pub fn rank_from_name(name: &str) -> Option<u32> {
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

fn sniff(path: &Path) -> Result<(Compression, Option<u64>), SourceError> {
    let unreadable = |source| SourceError::Unreadable {
        path: path.display().to_string(),
        source,
    };
    let mut f = File::open(path).map_err(unreadable)?;
    let size = f.metadata().ok().map(|m| m.len());
    let mut head = [0u8; 4];
    let n = f.read(&mut head).map_err(unreadable)?;
    let c = if n >= 2 && head[..2] == [0x1f, 0x8b] {
        Compression::Gzip
    } else if n >= 4 && head == [0x28, 0xb5, 0x2f, 0xfd] {
        Compression::Zstd
    } else {
        Compression::None
    };
    Ok((c, size))
}

/// The files a path stands for. A directory is one run; files inside it are sorted by
/// name so every run reads the same way.
pub fn discover(path: &Path) -> Result<Vec<SourceFile>, SourceError> {
    if path.as_os_str() == "-" {
        return Ok(vec![SourceFile {
            path: path.to_path_buf(),
            kind: SourceKind::Log,
            compression: Compression::None,
            size: None,
            rank_hint: None,
        }]);
    }
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => SourceError::Missing {
            path: path.display().to_string(),
        },
        _ => SourceError::Unreadable {
            path: path.display().to_string(),
            source: e,
        },
    })?;
    if meta.is_file() {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let kind = classify_name(&name).unwrap_or(SourceKind::Log);
        let (compression, size) = sniff(path)?;
        return Ok(vec![SourceFile {
            path: path.to_path_buf(),
            kind,
            compression,
            size,
            rank_hint: rank_from_name(&name),
        }]);
    }
    let entries = std::fs::read_dir(path).map_err(|source| SourceError::Unreadable {
        path: path.display().to_string(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let Some(kind) = classify_name(&name) else {
            continue;
        };
        let (compression, size) = sniff(&f)?;
        out.push(SourceFile {
            rank_hint: rank_from_name(&name),
            path: f,
            kind,
            compression,
            size,
        });
    }
    if !out.iter().any(|s| s.kind == SourceKind::Log) {
        return Err(SourceError::EmptyDir {
            path: path.display().to_string(),
        });
    }
    Ok(out)
}

/// The files one node of a run wrote: a directory of its own (`run/node1/`,
/// `run/<hostname>/`), or one path of several given for one run.
#[derive(Clone, Debug)]
pub struct NodeFiles {
    /// The directory's name (or the file's, for a path that is a file); `None` for a run
    /// given as one path that is not split into nodes.
    pub node: Option<String>,
    pub files: Vec<SourceFile>,
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

/// The nodes of one run given as several paths, or as one directory whose
/// subdirectories hold the nodes' files (`run/node0/`, `run/node1/`): one entry per node,
/// in the order given (subdirectories sorted by name). A run that is one path with its
/// logs at the top is one entry without a node name.
pub fn discover_nodes(paths: &[PathBuf]) -> Result<Vec<NodeFiles>, SourceError> {
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| p.display().to_string())
    };
    let mut out = Vec::new();
    for path in paths {
        let subdirs = if path.is_dir() && !has_logs(path) {
            let entries = std::fs::read_dir(path).map_err(|source| SourceError::Unreadable {
                path: path.display().to_string(),
                source,
            })?;
            let mut dirs: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir() && has_logs(p))
                .collect();
            dirs.sort();
            dirs
        } else {
            Vec::new()
        };
        if subdirs.is_empty() {
            // One path of several is a node named after it; a lone path is the whole run.
            let node = (paths.len() > 1).then(|| name_of(path));
            out.push(NodeFiles {
                node,
                files: discover(path)?,
            });
        } else {
            for d in subdirs {
                out.push(NodeFiles {
                    node: Some(name_of(&d)),
                    files: discover(&d)?,
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
                n.node = Some(dir.display().to_string());
            }
        }
    }
    Ok(out)
}

/// Opens a log source as a byte stream, decompressing as needed.
pub fn open(sf: &SourceFile) -> Result<Box<dyn Read + Send>, SourceError> {
    if sf.is_stdin() {
        return Ok(Box::new(io::stdin()));
    }
    let file = File::open(&sf.path).map_err(|source| SourceError::Unreadable {
        path: sf.display(),
        source,
    })?;
    let buffered = BufReader::with_capacity(1 << 16, file);
    Ok(match sf.compression {
        Compression::None => Box::new(buffered),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(buffered)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(buffered).map_err(
            |source| SourceError::Unreadable {
                path: sf.display(),
                source,
            },
        )?),
    })
}

/// A NUL byte in the first 8 KiB marks a binary file (logs never hold one).
pub fn binary_offset(head: &[u8]) -> Option<usize> {
    memchr::memchr(0, &head[..head.len().min(8192)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_hints() {
        assert_eq!(rank_from_name("rank3.log"), Some(3));
        assert_eq!(rank_from_name("snapshot_rank12.pickle"), Some(12));
        assert_eq!(rank_from_name("server_tp5.log"), Some(5));
        assert_eq!(rank_from_name("server.log"), None);
        assert_eq!(rank_from_name("stdout.txt"), None);
    }
}
