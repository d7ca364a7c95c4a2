//! Reading a run on a worker thread while the terminal shows how far it got.
//!
//! The worker reports through [`Progress`], which the UI thread only reads; the finished
//! `App`, or the error, comes back once over a channel.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::grammar::GrammarSet;
use crate::ingest::source::SourceKind;
use crate::session::{Inputs, LoadOptions, Session};

use super::app::{App, Loading, Snapshots};

/// What the worker has done so far, shared with the UI thread.
#[derive(Default)]
pub struct Progress {
    bytes: AtomicU64,
    /// Log bytes to read; 0 while unknown (compressed input, stdin).
    total: AtomicU64,
    stage: Mutex<String>,
    /// Last running total seen per source: `load_run` reports each file's bytes so far.
    last: Mutex<HashMap<usize, u64>>,
}

impl Progress {
    pub(crate) fn set_stage(&self, s: impl Into<String>) {
        if let Ok(mut g) = self.stage.lock() {
            *g = s.into();
        }
    }

    /// Takes one source's running total from `load_run`'s callback.
    pub(crate) fn report(&self, source: usize, running: u64) {
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let prev = last.entry(source).or_insert(0);
        self.bytes
            .fetch_add(running.saturating_sub(*prev), Ordering::Relaxed);
        *prev = running;
    }

    /// The loading screen's progress: the stage, the bytes read so far and the total when
    /// it is known.
    pub fn snapshot(&self) -> (String, u64, Option<u64>) {
        let stage = self.stage.lock().map(|g| g.clone()).unwrap_or_default();
        let total = self.total.load(Ordering::Relaxed);
        (
            stage,
            self.bytes.load(Ordering::Relaxed),
            (total > 0).then_some(total),
        )
    }
}

// The screen's state is `app`'s; how it follows the worker is told here, beside `Progress`.
impl Loading {
    pub(crate) fn refresh(&mut self, p: &Progress) {
        let (stage, bytes, total) = p.snapshot();
        self.stage = stage;
        self.bytes = total.map_or(bytes, |t| bytes.min(t));
        self.total = total;
    }
}

/// Reads the run, its snapshots and the baseline, and builds the app: the work the
/// terminal waits for.
pub fn load_app(
    gs: &GrammarSet,
    run_path: &Path,
    vs: Option<&PathBuf>,
    color: bool,
    p: &Progress,
) -> Result<App, String> {
    let vs: Vec<PathBuf> = vs.cloned().into_iter().collect();
    load_app_paths(
        gs,
        &[run_path.to_path_buf()],
        &vs,
        &LoadOptions::default(),
        Default::default(),
        color,
        p,
    )
}

fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" + ")
}

/// `load_app` for a run (and a baseline, when `vs` is not empty) given as several paths.
pub fn load_app_paths(
    gs: &GrammarSet,
    run_paths: &[PathBuf],
    vs: &[PathBuf],
    opts: &LoadOptions,
    diff: crate::analysis::diff::DiffOptions,
    color: bool,
    p: &Progress,
) -> Result<App, String> {
    p.set_stage(format!("reading the logs of {}", shown(run_paths)));
    let inputs = Inputs::discover(run_paths).map_err(|e| e.to_string())?;
    p.total
        .store(inputs.log_bytes().unwrap_or(0), Ordering::Relaxed);
    let session =
        Session::load(gs, &inputs, opts, &|src, n| p.report(src, n)).map_err(|e| e.to_string())?;
    let n = session
        .files
        .iter()
        .filter(|f| f.kind == SourceKind::Snapshot)
        .count();
    if n > 0 {
        p.set_stage(format!("reading {n} memory snapshots"));
    }
    let (run, snaps) = session.into_parts();
    if vs.is_empty() {
        p.set_stage("lining up the ranks");
        let read = Snapshots {
            run: &snaps.matched,
            errors: snaps.errors,
            diff,
            ..Snapshots::default()
        };
        return Ok(App::from_loaded(
            run,
            None,
            read,
            gs.knowledge().clone(),
            color,
        ));
    }
    p.set_stage(format!("reading the baseline {}", shown(vs)));
    let base = Session::open(gs, vs, opts, &|_, _| {})
        .map_err(|e| format!("baseline {}: {e}", shown(vs)))?;
    // The baseline's snapshots are what the diff attributes the divergence with.
    let (base_run, base_snaps) = base.into_parts();
    p.set_stage("lining up the ranks");
    let read = Snapshots {
        run: &snaps.matched,
        errors: snaps.errors,
        baseline: Some(&base_snaps.matched),
        baseline_notes: base_snaps
            .errors
            .into_iter()
            .map(|e| format!("baseline: {e}"))
            .collect(),
        diff,
    };
    Ok(App::from_loaded(
        run,
        Some(base_run),
        read,
        gs.knowledge().clone(),
        color,
    ))
}
