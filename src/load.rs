//! From a path to a run: discover the files, scan every log, build the model.

use std::io::{Cursor, Read};
use std::path::Path;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime};
use rayon::prelude::*;

use crate::event::Event;

use crate::grammar::GrammarSet;
use crate::model::{self, Run, SourceInfo};
use crate::scan::{self, SourceScan};
use crate::source::{self, SourceError, SourceFile, SourceKind};

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
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
}

#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub block_size: usize,
    /// The start-up attempt to show (1-based); the last one when `None`.
    pub attempt: Option<usize>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            block_size: scan::DEFAULT_BLOCK,
            attempt: None,
        }
    }
}

/// A loaded run and the files it came from (snapshots and CSVs are listed for the
/// readers that attach them).
pub struct Loaded {
    pub run: Run,
    pub files: Vec<SourceFile>,
}

fn scan_file(
    gs: &GrammarSet,
    index: usize,
    sf: &SourceFile,
    opts: &LoadOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<SourceScan, LoadError> {
    let mut reader = source::open(sf)?;
    // Look at the first bytes before scanning: a binary file is refused, not scanned
    // into thousands of unknown lines.
    let mut head = vec![0u8; 8192];
    let mut filled = 0;
    while filled < head.len() {
        match reader.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(LoadError::Read {
                    path: sf.display(),
                    offset: filled as u64,
                    source: e,
                })
            }
        }
    }
    head.truncate(filled);
    if let Some(offset) = source::binary_offset(&head) {
        return Err(SourceError::Binary {
            path: sf.display(),
            offset,
        }
        .into());
    }
    let chained = Cursor::new(head).chain(reader);
    scan::scan_reader(gs, index, chained, opts.block_size, |n| progress(index, n)).map_err(|e| {
        LoadError::Read {
            path: sf.display(),
            offset: 0,
            source: e,
        }
    })
}

/// Loads one run from a path (file, directory or `-`).
pub fn load_run(
    gs: &GrammarSet,
    path: &Path,
    opts: &LoadOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<Loaded, LoadError> {
    if let Some(found) = snapshot_not_log(path) {
        return Err(LoadError::NotAStartupLog {
            path: path.display().to_string(),
            found,
        });
    }
    let files = source::discover(path)?;
    let logs: Vec<&SourceFile> = files.iter().filter(|f| f.kind == SourceKind::Log).collect();
    // A binary file inside a run directory is skipped with a note; named alone it is an error.
    let single = logs.len() == 1;
    let scans: Vec<Result<SourceScan, LoadError>> = logs
        .par_iter()
        .enumerate()
        .map(|(i, sf)| scan_file(gs, i, sf, opts, progress))
        .collect();
    let mut sources = Vec::new();
    let mut events = Vec::new();
    let mut notes = Vec::new();
    for (sf, scan) in logs.iter().zip(scans) {
        let scan = match scan {
            Ok(s) => s,
            Err(LoadError::Source(SourceError::Binary { path, offset })) if !single => {
                notes.push(format!(
                    "{path}: skipped, binary data (NUL byte at offset {offset})"
                ));
                SourceScan::default()
            }
            Err(e) => return Err(e),
        };
        events.extend(scan.events);
        sources.push(SourceInfo {
            path: sf.display(),
            bytes: scan.bytes,
            counts: scan.counts,
            unknown_samples: scan.unknown_samples,
            cut_last_line: scan.cut_last_line,
            cut_fields: scan.cut_fields,
            duplicate_events: 0,
            detected: scan.detected,
        });
    }
    let refs: Vec<Option<NaiveDate>> = logs.iter().map(|sf| modified_date(sf)).collect();
    notes.extend(time_regressions(&events, &logs));
    let how = infer_dates(&mut events, &refs);
    if let Some(how) = how {
        notes.push(how);
    }
    let events = model::dedup_across_sources(events, &mut sources);
    let name = path.display().to_string();
    let mut run = model::build(name, events, sources, &gs.knowledge(), opts.attempt);
    for sf in files.iter().filter(|f| f.kind == SourceKind::NvidiaSmi) {
        match std::fs::read(&sf.path) {
            Ok(bytes) => {
                let t = crate::nvsmi::parse(&String::from_utf8_lossy(&bytes));
                if t.lines_not_understood > 0 {
                    notes.push(format!(
                        "{}: {} lines not understood as nvidia-smi CSV",
                        sf.display(),
                        t.lines_not_understood
                    ));
                }
                run.gpus
                    .extend(model::GpuMemory::from_nvsmi(&sf.display(), &t, run.start));
                let procs =
                    model::GpuProcess::from_nvsmi(&sf.display(), &t, run.start, &run.events);
                run.gpu_processes.extend(procs);
            }
            Err(e) => notes.push(format!("{}: cannot read: {e}", sf.display())),
        }
    }
    run.notes.extend(notes);
    if !run.has_startup_events() {
        return Err(LoadError::NotAStartupLog {
            path: path.display().to_string(),
            found: what_was_found(&run),
        });
    }
    Ok(Loaded { run, files })
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
            path.display()
        )
    })
}

/// What a file with no start-up event held instead, for the error that refuses it.
fn what_was_found(run: &Run) -> String {
    let c = run.counts();
    let mut families: Vec<&str> = run
        .sources
        .iter()
        .flat_map(|s| s.detected.iter().map(String::as_str))
        .collect();
    families.sort();
    families.dedup();
    let example = run.sources.iter().find_map(|s| {
        let u = s.unknown_samples.first()?;
        Some(format!(
            ", the first at {}:{}: {}",
            s.path,
            u.line,
            crate::text::truncate(&u.text, 60)
        ))
    });
    format!(
        "{} lines, no start-up event (no phase line, no failure); {} not understood{}{}; `rankscope grammars list` shows what is read, docs/grammars.md how to add a server",
        c.lines,
        c.unknown,
        example.unwrap_or_default(),
        if families.is_empty() {
            String::new()
        } else {
            format!("; line prefixes look like {}", families.join("+"))
        }
    )
}

/// Reads the run's `snapshot_rank{N}.pickle` files in parallel and attaches each to its
/// rank. A snapshot that cannot be read is reported, not fatal: the logs still stand.
pub fn load_snapshots(
    run: &Run,
    files: &[SourceFile],
) -> (Vec<crate::analysis::attribute::RankSnapshot>, Vec<String>) {
    use crate::analysis::attribute::{match_rank, RankSnapshot};
    let snaps: Vec<&SourceFile> = files
        .iter()
        .filter(|f| f.kind == SourceKind::Snapshot)
        .collect();
    let read: Vec<Result<RankSnapshot, String>> = snaps
        .par_iter()
        .map(|sf| {
            let snapshot = crate::snapshot::read_path(&sf.path).map_err(|e| e.to_string())?;
            // Matched on what the files say (OOM GPU, device index), the name's number
            // being one piece of evidence among them.
            let (rank, matched_by) = match_rank(run, sf.rank_hint, &snapshot)
                .map_err(|why| format!("{}: {why}", sf.display()))?;
            Ok(RankSnapshot {
                rank,
                path: sf.display(),
                snapshot,
                matched_by,
            })
        })
        .collect();
    let mut ok = Vec::new();
    let mut errors = Vec::new();
    for r in read {
        match r {
            Ok(s) => ok.push(s),
            Err(e) => errors.push(e),
        }
    }
    (ok, errors)
}

/// Events are ordered by time in the model; a file whose stamps go backwards (a
/// newest-first web UI copy, two clocks in one stream) is said so rather than re-sorted
/// silently. Stamps with a printed date only: inferred dates are ordered by construction.
fn time_regressions(events: &[Event], logs: &[&SourceFile]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, sf) in logs.iter().enumerate() {
        let mut prev: Option<NaiveDateTime> = None;
        let mut back = 0usize;
        for e in events
            .iter()
            .filter(|e| e.origin.source == i && !e.year_inferred)
        {
            let Some(t) = e.ts else { continue };
            if prev.is_some_and(|p| t < p - Duration::seconds(60)) {
                back += 1;
            }
            prev = Some(t);
        }
        if back > 0 {
            out.push(format!(
                "{}: time stamps go backwards by more than a minute {back} time(s) (newest-first copy, or clocks that disagree); events are shown in time order",
                sf.display()
            ));
        }
    }
    out
}

fn modified_date(sf: &SourceFile) -> Option<NaiveDate> {
    if sf.is_stdin() {
        return Some(chrono::Local::now().date_naive());
    }
    let t = std::fs::metadata(&sf.path).ok()?.modified().ok()?;
    Some(chrono::DateTime::<chrono::Local>::from(t).date_naive())
}

/// Dates the stamps that printed no year (vLLM's `MM-DD`) or no date at all (SGLang
/// 0.3's `[HH:MM:SS TP0]`): from the nearest fully dated line before it in the same file,
/// else the first fully dated line of the run, else the file's modification date. A
/// month-day that falls more than half a year before the previous line is a new year
/// (Dec → Jan); a time of day more than half a day before it is a new day. Returns how
/// the dates were inferred, for the run's notes.
fn infer_dates(events: &mut [Event], refs: &[Option<NaiveDate>]) -> Option<String> {
    if !events.iter().any(|e| e.year_inferred) {
        return None;
    }
    let run_anchor = events
        .iter()
        .find(|e| !e.year_inferred && e.ts.is_some())
        .and_then(|e| e.ts.map(|t| t.date()));
    let mut from_file_dates = false;
    let mut by_source: std::collections::BTreeMap<usize, Vec<&mut Event>> = Default::default();
    for e in events.iter_mut() {
        by_source.entry(e.origin.source).or_default().push(e);
    }
    for (src, mut evs) in by_source {
        evs.sort_by_key(|e| e.origin.line);
        let mut current = run_anchor.or_else(|| {
            from_file_dates = true;
            refs.get(src).copied().flatten()
        });
        let mut prev: Option<NaiveDateTime> = None;
        for e in evs {
            let Some(ts) = e.ts else { continue };
            if !e.year_inferred {
                current = Some(ts.date());
                prev = Some(ts);
                continue;
            }
            let Some(anchor) = current else { continue };
            let mut guess = if e.time_only {
                anchor.and_time(ts.time())
            } else {
                match ts.date().with_year(anchor.year()) {
                    Some(d) => d.and_time(ts.time()),
                    None => continue,
                }
            };
            if let Some(p) = prev {
                if e.time_only && guess < p - Duration::hours(12) {
                    guess += Duration::days(1);
                } else if !e.time_only && guess < p - Duration::days(183) {
                    if let Some(d) = guess.date().with_year(guess.year() + 1) {
                        guess = d.and_time(guess.time());
                    }
                }
            }
            current = Some(guess.date());
            prev = Some(guess);
            e.ts = Some(guess);
        }
    }
    Some(if run_anchor.is_some() && !from_file_dates {
        "some stamps print no year or date: inferred from the fully dated lines of the run".into()
    } else {
        "some stamps print no year or date: inferred from the files' modification dates".into()
    })
}
