//! The one pipeline every command and the TUI's worker use: the inputs discovered once →
//! the logs read into a run (`load`: ingest and model, no analysis) → the node clocks put
//! on one and the snapshots matched to ranks (`analysis`) → the reports the renderers read
//! (`report`).
//!
//! ```no_run
//! # use rankscope::{grammar::{self, GrammarSet}, session::{Session, LoadOptions}};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let grammars = GrammarSet::new(grammar::load_all(&[])?)?;
//! let opts = LoadOptions::default();
//! let baseline = Session::open(&grammars, &["runs/good".into()], &opts, &|_, _| {})?;
//! let candidate = Session::open(&grammars, &["runs/oom".into()], &opts, &|_, _| {})?;
//! let report = candidate.diff_report(&baseline, Default::default());
//! println!("{:?}", report.diff.status);
//! # Ok(()) }
//! ```

mod by_source;
mod dates;
mod inputs;
pub(crate) mod load;
mod nodes;
mod options;
mod read;
mod snapshots;

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::analysis::attribute::{match_rank, RankSnapshot};
use crate::analysis::diff::DiffOptions;
use crate::grammar::GrammarSet;
use crate::ingest::source::SourceFile;
use crate::model::Run;
use crate::report::{DiffReport, RunReport};

pub use inputs::{check_stdin_once, Inputs};
pub(crate) use load::Gathered;
pub use options::{GivenScans, LoadError, LoadOptions, SharedTexts};

/// Progress of the reading: `(source index, bytes of it read so far)`.
pub(crate) type Progress<'a> = &'a (dyn Fn(usize, u64) + Sync);

/// One run, read: its model, the files it came from, and its snapshots once asked for.
pub struct Session {
    /// The run as read: ranks, phases, failures and events (no analysis yet).
    pub run: Run,
    pub(crate) files: Vec<SourceFile>,
    snapshots: OnceLock<Snapshots>,
}

/// The run's snapshots matched to ranks, and those that could not be used (`path: why`).
#[derive(Default)]
pub struct Snapshots {
    /// Each snapshot that could be put on a rank, with its rank.
    pub matched: Vec<RankSnapshot>,
    /// The snapshots that could not be used, as `path: why`.
    pub errors: Vec<String>,
}

impl Session {
    /// Discovers the files under `paths` and reads them ([`Inputs::discover`] then
    /// [`Session::load`]).
    pub fn open(
        gs: &GrammarSet,
        paths: &[PathBuf],
        opts: &LoadOptions,
        progress: Progress,
    ) -> Result<Session, LoadError> {
        Self::load(gs, &Inputs::discover(paths)?, opts, progress)
    }

    /// Reads a run from its discovered inputs. A multi-node run's clocks are estimated
    /// against the reference node's from the barrier exits and, unless
    /// `opts.clock_align` is off, applied to its stamps before the run is built.
    pub fn load(
        gs: &GrammarSet,
        inputs: &Inputs,
        opts: &LoadOptions,
        progress: Progress,
    ) -> Result<Session, LoadError> {
        let loaded = match load::gather(gs, inputs, opts, progress)? {
            Gathered::Single(read) => load::finish_single(gs, *read, opts)?,
            Gathered::Nodes(mut read) => {
                let alignment = read.align_clocks(&gs.barrier_exit_kinds(), opts.clock_align);
                load::assemble(gs, read, &alignment)?
            }
        };
        Ok(Session::from_run(loaded.run, loaded.files))
    }

    /// Every start-up the run holds, in order, each as `load` with its number gives it
    /// (`--attempt all`; `opts.attempt` is not read). A one-node run is read once and
    /// each start-up built from that reading, one at a time; a multi-node run is read
    /// once per start-up (its start-ups are chosen node by node as the nodes are read).
    pub fn load_every_attempt<E: From<LoadError>>(
        gs: &GrammarSet,
        inputs: &Inputs,
        opts: &LoadOptions,
        progress: Progress,
        mut each: impl FnMut(&Session) -> Result<(), E>,
    ) -> Result<(), E> {
        let last_opts = LoadOptions {
            attempt: None,
            ..opts.clone()
        };
        match load::gather(gs, inputs, &last_opts, progress)? {
            Gathered::Single(read) => load::finish_single_every(gs, *read, |loaded| {
                each(&Session::from_run(loaded.run, loaded.files))
            }),
            Gathered::Nodes(mut read) => {
                let alignment = read.align_clocks(&gs.barrier_exit_kinds(), opts.clock_align);
                let last = load::assemble(gs, read, &alignment)?;
                let last = Session::from_run(last.run, last.files);
                for n in 1..last.run.attempts.len().max(1) {
                    let opts = LoadOptions {
                        attempt: Some(n),
                        ..opts.clone()
                    };
                    each(&Session::load(gs, inputs, &opts, progress)?)?;
                }
                each(&last)
            }
        }
    }

    /// A run made of one log held in memory, read the way a file is (the fuzz target of
    /// the scan, model and renderers uses it).
    pub fn from_bytes(gs: &GrammarSet, name: &str, bytes: &[u8], block_size: usize) -> Session {
        Session::from_run(
            load::run_from_bytes(gs, name, bytes, block_size),
            Vec::new(),
        )
    }

    pub(crate) fn from_run(run: Run, files: Vec<SourceFile>) -> Session {
        Session {
            run,
            files,
            snapshots: OnceLock::new(),
        }
    }

    /// The run's snapshots, read on first use (they cost seconds on large runs, and only
    /// a failed rank or a diff needs them) and matched to ranks on what the files say
    /// (OOM GPU, device index), the name's number being one piece of evidence among them.
    pub fn snapshots(&self) -> &Snapshots {
        self.snapshots.get_or_init(|| {
            let mut out = Snapshots::default();
            for read in snapshots::read_snapshots(&self.files) {
                let matched = read.and_then(|r| {
                    let (rank, matched_by) =
                        match_rank(&self.run, r.file.rank_hint, &r.snapshot)
                            .map_err(|why| format!("{}: {why}", r.file.display()))?;
                    Ok(RankSnapshot {
                        rank,
                        path: r.file.display(),
                        snapshot: r.snapshot,
                        matched_by,
                    })
                });
                match matched {
                    Ok(s) => out.matched.push(s),
                    Err(e) => out.errors.push(e),
                }
            }
            out
        })
    }

    /// The run and its snapshots (read now if they were not), for a caller that keeps
    /// them apart (the TUI's app owns the run and borrows the snapshots).
    pub fn into_parts(self) -> (Run, Snapshots) {
        self.snapshots();
        let snaps = self.snapshots.into_inner().unwrap_or_default();
        (self.run, snaps)
    }

    /// What analysis says of the run alone.
    pub fn report(&self) -> RunReport {
        RunReport::of(&self.run)
    }

    /// What analysis says of this run against `baseline`, with both runs' snapshots
    /// (read in parallel when neither has been read yet).
    pub fn diff_report(&self, baseline: &Session, options: DiffOptions) -> DiffReport {
        let (b, c) = rayon::join(|| baseline.snapshots(), || self.snapshots());
        DiffReport::of(
            &baseline.run,
            &self.run,
            &b.matched,
            &c.matched,
            b.errors.iter().chain(&c.errors).cloned().collect(),
            options,
        )
    }

    /// The run's identity (name, content hash, server, version, attempt) for the JSON
    /// documents and exports.
    pub fn identity(&self) -> crate::export::identity::RunIdentity {
        crate::export::identity::identity(&self.run, &self.files)
    }
}
