//! The run's inputs, discovered once: the progress total, the node split and the scan all
//! read the same listing.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::ingest::source::{self, Compression, NodeFiles, SourceKind};

use super::options::LoadError;

/// The paths a run was given as, and the files found under them, grouped by node.
#[derive(Clone, Debug)]
pub struct Inputs {
    /// The paths as the user gave them (files, folders or `-`).
    pub paths: Vec<PathBuf>,
    /// The files found under them, one group per node.
    pub groups: Vec<NodeFiles>,
}

impl Inputs {
    /// Lists the files under `paths`. Standard input named twice, and a PyTorch snapshot
    /// given where a log belongs, are refused here, before anything is read.
    pub fn discover(paths: &[PathBuf]) -> Result<Inputs, LoadError> {
        check_stdin_once(paths)?;
        if let [path] = paths {
            if let Some(found) = snapshot_not_log(path) {
                return Err(LoadError::NotAStartupLog {
                    path: crate::base::text::shown_path(path),
                    found,
                });
            }
        }
        Ok(Inputs {
            paths: paths.to_vec(),
            groups: source::discover_nodes(paths)?,
        })
    }

    /// One path that is not split into node directories.
    pub(crate) fn undivided(&self) -> bool {
        matches!((self.paths.as_slice(), self.groups.as_slice()), ([_], [g]) if g.node.is_none())
    }

    /// The log files found.
    pub fn logs(&self) -> impl Iterator<Item = &source::SourceFile> {
        self.groups
            .iter()
            .flat_map(|g| g.files.iter())
            .filter(|f| f.kind == SourceKind::Log)
    }

    /// Log bytes to read, when every log is a plain file of known size (not compressed,
    /// not standard input).
    pub(crate) fn log_bytes(&self) -> Option<u64> {
        self.logs()
            // A listed file not yet opened counts as plain: the total is for progress.
            .map(|f| match f.compression {
                None | Some(Compression::None) if !f.is_stdin() => f.size,
                _ => None,
            })
            .sum()
    }

    /// Log bytes of the files whose size is known (the progress bar's total).
    pub fn known_log_bytes(&self) -> u64 {
        self.logs().filter_map(|f| f.size).sum()
    }
}

/// Standard input named more than once (`summary - -`, `diff - -`) would be read by two
/// readers at once, each getting part of it.
pub fn check_stdin_once<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) -> Result<(), LoadError> {
    let times = paths.into_iter().filter(|p| p.as_os_str() == "-").count();
    if times > 1 {
        return Err(LoadError::StdinTwice { times });
    }
    Ok(())
}

/// A PyTorch snapshot given where a log belongs (a pickle starts with PROTO 2–5).
fn snapshot_not_log(path: &Path) -> Option<String> {
    if !path.is_file() {
        return None;
    }
    let mut head = [0u8; 2];
    let mut f = std::fs::File::open(path).ok()?;
    f.read_exact(&mut head).ok()?;
    (head[0] == 0x80 && (2..=5).contains(&head[1])).then(|| {
        format!(
            "a Python pickle, such as a PyTorch memory snapshot — try `rankscope mem {}`",
            crate::base::text::shown_path(path)
        )
    })
}
