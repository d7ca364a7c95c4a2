//! From a path to a run: discover the files, scan every log, build the model.

use std::collections::BTreeSet;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime};
use rayon::prelude::*;

use crate::analysis::clock;
use crate::ingest::event::Event;
use crate::model::node::Node;

use crate::grammar::GrammarSet;
use crate::ingest::scan::{self, SourceScan};
use crate::ingest::source::{self, SourceError, SourceFile, SourceKind};
use crate::model::{self, Run, SourceInfo};

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
    #[error("rank {rank} is in the logs of two nodes, {first} and {second}: one rank cannot run on two hosts (the same node given twice, or two runs given as one?)")]
    RankOnTwoNodes {
        rank: String,
        first: String,
        second: String,
    },
    #[error("{path}: no log in this run could be read ({notes})")]
    NothingRead { path: String, notes: String },
    #[error(
        "{path}: --attempt {asked}: the log holds {count} start-up(s) (--attempt 1 to {count})"
    )]
    NoSuchAttempt {
        path: String,
        asked: usize,
        count: usize,
    },
    #[error("`-` (standard input) is given {times} times: it can be read once")]
    StdinTwice { times: usize },
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

/// `--attempt` past the last start-up is an error, not the last one shown in its place.
fn check_attempt(path: &str, asked: Option<usize>, count: usize) -> Result<(), LoadError> {
    match asked {
        Some(asked) if asked > count => Err(LoadError::NoSuchAttempt {
            path: path.to_string(),
            asked,
            count,
        }),
        _ => Ok(()),
    }
}

#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub block_size: usize,
    /// The start-up attempt to show (1-based); the last one when `None`.
    pub attempt: Option<usize>,
    /// Move each node's stamps onto the reference node's clock (multi-node runs); off
    /// under `--no-clock-align`, which still reports the offsets.
    pub clock_align: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            block_size: scan::DEFAULT_BLOCK,
            attempt: None,
            clock_align: true,
        }
    }
}

/// A loaded run and the files it came from (snapshots and CSVs are listed for the
/// readers that attach them).
pub struct Loaded {
    pub run: Run,
    pub files: Vec<SourceFile>,
}

/// What reading one log gave: the scan (possibly of a part of the file) and how many
/// bytes were taken from the file itself.
struct FileScan {
    scan: SourceScan,
    raw_bytes: u64,
    compression: source::Compression,
}

fn scan_file(
    gs: &GrammarSet,
    index: usize,
    sf: &SourceFile,
    opts: &LoadOptions,
    budget: &scan::EventBudget,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<FileScan, LoadError> {
    let stream = source::open_stream(sf)?;
    let raw = stream.raw_counter();
    let compression = stream.compression;
    let mut reader = stream.reader;
    // Look at the first bytes before scanning: a binary file is refused, not scanned
    // into thousands of unknown lines.
    let mut head = vec![0u8; 8192];
    let mut filled = 0;
    let mut head_stop = None;
    while filled < head.len() {
        match reader.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                // A file cut within its first bytes: what was decoded is still read.
                head_stop = Some(scan::ReadStop {
                    offset: filled as u64,
                    reason: e.to_string(),
                });
                break;
            }
        }
    }
    head.truncate(filled);
    if head_stop.is_some() {
        reader = Box::new(std::io::empty());
    }
    // UTF-16 with a byte-order mark is text (NUL in every other byte), read as UTF-8.
    let utf16 = match head.get(..2) {
        Some([0xff, 0xfe]) => Some(false),
        Some([0xfe, 0xff]) => Some(true),
        _ => None,
    };
    let text: Box<dyn Read + Send> = match utf16 {
        Some(big_endian) => {
            let body = Cursor::new(head.split_off(2)).chain(reader);
            Box::new(crate::ingest::text::Utf16Reader::new(body, big_endian))
        }
        None => {
            if let Some(offset) = source::binary_offset(&head) {
                return Err(SourceError::Binary {
                    path: sf.display(),
                    offset,
                }
                .into());
            }
            Box::new(Cursor::new(head).chain(reader))
        }
    };
    let mut scan = scan::scan_stream(gs, index, text, opts.block_size, budget, |n| {
        progress(index, n)
    });
    if head_stop.is_some() {
        scan.read_stop = head_stop;
    }
    Ok(FileScan {
        scan,
        raw_bytes: raw.load(std::sync::atomic::Ordering::Relaxed),
        compression,
    })
}

/// What the notes say about a file that was read only in part, or expanded suspiciously.
fn read_notes(sf: &SourceFile, f: &FileScan) -> Vec<String> {
    let mut notes = Vec::new();
    let compressed = f.compression != source::Compression::None;
    if let Some(stop) = &f.scan.read_stop {
        let at = if compressed {
            format!(
                "after {} decompressed bytes (byte {} of the compressed file)",
                stop.offset, f.raw_bytes
            )
        } else {
            format!("at byte {}", stop.offset)
        };
        notes.push(format!(
            "{}: read stopped {at}: {}; the part before it is read",
            sf.display(),
            stop.reason
        ));
    }
    // A file cut while it was read (log rotation with copytruncate, a user's
    // `truncate`) ends early with no error: only its size tells.
    if let (None, Some(listed), false) = (&f.scan.read_stop, sf.size, sf.is_stdin()) {
        let now = std::fs::metadata(&sf.path).map_or(0, |m| m.len());
        if f.raw_bytes < listed && now < listed {
            notes.push(format!(
                "{}: the file shrank while it was read ({listed} bytes when listed, {now} now; {} read): the part read is scanned, the rest is lost",
                sf.display(),
                f.raw_bytes
            ));
        }
    }
    if let Some(line) = f.scan.prefixes_not_kept {
        notes.push(format!(
            "{}: more than {} distinct rank prefixes; those first seen from line {line} on are not counted, so the ranks shown are a part of the run's",
            sf.display(),
            scan::MAX_SEEN_PREFIXES
        ));
    }
    if let Some((line, what)) = &f.scan.bad_stamps.first {
        notes.push(format!(
            "{}: {} event line(s) with a stamp that is no date or time, first at line {line} ({what}); those events have no time",
            sf.display(),
            f.scan.bad_stamps.lines
        ));
    }
    if let Some((line, what)) = &f.scan.bad_ranks.first {
        notes.push(format!(
            "{}: {} event line(s) naming a rank number past {} (first at line {line}: `{what}`) are not read",
            sf.display(),
            f.scan.bad_ranks.lines,
            u32::MAX
        ));
    }
    if compressed && f.raw_bytes > 0 && f.scan.bytes / f.raw_bytes > source::limits::WARN_RATIO {
        notes.push(format!(
            "{}: {} compressed bytes expanded to {} ({}:1; real logs give 5–50:1)",
            sf.display(),
            f.raw_bytes,
            f.scan.bytes,
            f.scan.bytes / f.raw_bytes
        ));
    }
    notes
}

/// Events not kept past a budget, over the run's files: one note for all of them (a
/// spent run budget touches every file read after it).
#[derive(Default)]
struct Dropped {
    by_kind: std::collections::BTreeMap<String, u64>,
    files: Vec<String>,
    file_count: usize,
}

impl Dropped {
    fn add(&mut self, sf: &SourceFile, scan: &SourceScan) {
        if scan.dropped_events.is_empty() {
            return;
        }
        for (k, n) in &scan.dropped_events {
            *self.by_kind.entry(k.clone()).or_insert(0) += n;
        }
        self.file_count += 1;
        if self.files.len() < 3 {
            self.files.push(sf.display());
        }
    }

    fn note(&self) -> Option<String> {
        let total: u64 = self.by_kind.values().sum();
        if total == 0 {
            return None;
        }
        let kinds: Vec<String> = self
            .by_kind
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect();
        let more = self.file_count - self.files.len();
        let files = if more > 0 {
            format!("{} and {more} more files", self.files.join(", "))
        } else {
            self.files.join(", ")
        };
        Some(format!(
            "{files}: {total} events not kept, past the event budget (a run keeps {} events and {} MiB of their text, a file the same event of one rank {} times per start-up); they are counted in the lines, and a rank named only in them is not shown: {}",
            scan::budget::EVENTS_PER_RUN,
            scan::budget::EVENT_TEXT_PER_RUN >> 20,
            scan::budget::SAME_EVENT_PER_SOURCE,
            kinds.join(", ")
        ))
    }
}

/// A source's line accounting for the model, and its events.
fn source_info(gs: &GrammarSet, path: String, scan: SourceScan) -> (SourceInfo, Vec<Event>) {
    // The ranks its record lines name, each prefix parsed once (the scan kept one line per
    // distinct prefix): a rank whose lines give no event still exists.
    let ranks_seen = scan
        .prefixes_seen
        .iter()
        .filter_map(|p| {
            let rank = gs.find_prefix(&p.text, p.text.len())?.rank?;
            (!rank.is_empty()).then_some((rank, p.first_line, p.last_line))
        })
        .collect();
    let info = SourceInfo {
        path,
        bytes: scan.bytes,
        counts: scan.counts,
        unknown_samples: scan.unknown_samples,
        cut_last_line: scan.cut_last_line,
        cut_fields: scan.cut_fields,
        duplicate_events: 0,
        detected: scan.detected,
        ranks_seen,
    };
    (info, scan.events)
}

/// A run made of one log held in memory, read the way a file is (the fuzz target of the
/// scan, model and renderers uses it; `block_size` small makes blocks and their merge
/// part of every input).
pub fn run_from_bytes(gs: &GrammarSet, name: &str, bytes: &[u8], block_size: usize) -> Run {
    let scan = scan::scan_stream(
        gs,
        0,
        bytes,
        block_size,
        &scan::EventBudget::default(),
        |_| {},
    );
    let (info, mut events) = source_info(gs, name.to_string(), scan);
    infer_dates(&mut events, &[None]);
    let mut sources = vec![info];
    let events = model::dedup_across_sources(events, &mut sources);
    model::build(name.to_string(), events, sources, gs.knowledge(), None)
}

/// Loads one run from a path (file, directory or `-`).
pub fn load_run(
    gs: &GrammarSet,
    path: &Path,
    opts: &LoadOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<Loaded, LoadError> {
    let (files, scanned) = scan_path(gs, path, opts, progress)?;
    finish_single(
        gs,
        crate::ingest::text::shown_path(path),
        files,
        scanned,
        opts,
    )
}

/// Discovers and scans the logs under one path.
fn scan_path(
    gs: &GrammarSet,
    path: &Path,
    opts: &LoadOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<(Vec<SourceFile>, Scanned), LoadError> {
    if let Some(found) = snapshot_not_log(path) {
        return Err(LoadError::NotAStartupLog {
            path: crate::ingest::text::shown_path(path),
            found,
        });
    }
    let (files, dir_notes) = source::discover_noted(path)?;
    scan_found(gs, files, dir_notes, opts, progress)
}

/// Scans the logs among files already discovered (`dir_notes`: what their listing
/// skipped).
fn scan_found(
    gs: &GrammarSet,
    files: Vec<SourceFile>,
    dir_notes: Vec<String>,
    opts: &LoadOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<(Vec<SourceFile>, Scanned), LoadError> {
    let logs: Vec<&SourceFile> = files.iter().filter(|f| f.kind == SourceKind::Log).collect();
    let (sources, events, scan_notes) = scan_logs(gs, &logs, opts, progress)?;
    let mut notes = dir_notes;
    notes.extend(scan_notes);
    Ok((files, (sources, events, notes)))
}

/// Builds a one-node run from its scanned logs (`files` in discovery order, the logs among
/// them being the scanned sources in order).
fn finish_single(
    gs: &GrammarSet,
    name: String,
    files: Vec<SourceFile>,
    (mut sources, mut events, mut notes): Scanned,
    opts: &LoadOptions,
) -> Result<Loaded, LoadError> {
    let logs: Vec<&SourceFile> = files.iter().filter(|f| f.kind == SourceKind::Log).collect();
    let refs: Vec<Option<NaiveDate>> = logs.iter().map(|sf| modified_date(sf)).collect();
    notes.extend(time_regressions(&events, &logs));
    let how = infer_dates(&mut events, &refs);
    if let Some(how) = how {
        notes.push(how);
    }
    // Duplicates are looked for across files; one file has none to find (its repeats
    // are real), and a 100,000-event log need not pay for the lookup.
    let events = if sources.len() > 1 {
        model::dedup_across_sources(events, &mut sources)
    } else {
        events
    };
    let mut run = model::build(name.clone(), events, sources, gs.knowledge(), opts.attempt);
    check_attempt(&name, opts.attempt, run.attempts.len().max(1))?;
    let smi: Vec<(&SourceFile, i64)> = files
        .iter()
        .filter(|f| f.kind == SourceKind::NvidiaSmi)
        .map(|f| (f, 0))
        .collect();
    attach_nvsmi(&mut run, &smi, &mut notes);
    finish(run, files, notes, name)
}

/// The last steps of every load: the notes joined to the run, and a run with no start-up
/// event refused with what it held instead.
fn finish(
    mut run: Run,
    files: Vec<SourceFile>,
    notes: Vec<String>,
    name: String,
) -> Result<Loaded, LoadError> {
    run.notes.extend(notes);
    if !run.has_startup_events() {
        // Server output that shows no start-up (a log that starts after it, or stops
        // before its first phase line) is read, `incomplete`; only input in which nothing
        // is recognised is refused.
        if !recognised(&run) {
            return Err(LoadError::NotAStartupLog {
                path: name,
                found: with_read_problems(what_was_found(&run), &run.notes),
            });
        }
        let note = no_startup_note(&run);
        run.notes.push(note);
    }
    Ok(Loaded { run, files })
}

/// Some line is one a grammar or a generic reader knows: an event (a Python traceback's
/// closing line, a c10 or Python-logging record), a record of a known family, or a known
/// noise line (progress bars, NCCL INFO). Prose and unrelated traffic are none of these.
fn recognised(run: &Run) -> bool {
    let c = run.counts();
    !run.events.is_empty() || c.events > 0 || c.records > 0 || c.noise > 0
}

/// The grammar families the run's files were detected as, each once.
fn detected_families(run: &Run) -> Vec<&str> {
    let mut families: Vec<&str> = run
        .sources
        .iter()
        .flat_map(|s| s.detected.iter().map(String::as_str))
        .collect();
    families.sort();
    families.dedup();
    families
}

/// What a run read without any start-up event says about itself.
fn no_startup_note(run: &Run) -> String {
    let c = run.counts();
    let families = detected_families(run);
    let of = if families.is_empty() {
        String::new()
    } else {
        format!(" of {} output", families.join("+"))
    };
    format!(
        "no start-up event (no phase line, no failure) in {} lines{of}: the log starts after the start-up or stops before its first phase line",
        c.lines
    )
}

type Scanned = (Vec<SourceInfo>, Vec<Event>, Vec<String>);

/// A plain file smaller than a block is read into a buffer of its own size: the scan
/// zero-fills each block it reads into, and for a run of hundreds of small files (one
/// directory per node) 4 MiB per file was most of the time.
fn block_for(opts: &LoadOptions, sf: &SourceFile) -> LoadOptions {
    let mut o = opts.clone();
    if let (source::Compression::None, Some(size)) = (sf.compression, sf.size) {
        let fits = usize::try_from(size.saturating_add(1)).unwrap_or(usize::MAX);
        o.block_size = o.block_size.min(fits.max(4096));
    }
    o
}

/// Scans the logs in parallel, source `i` being `logs[i]`: their line accounting, their
/// events, and notes on files skipped.
fn scan_logs(
    gs: &GrammarSet,
    logs: &[&SourceFile],
    opts: &LoadOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<Scanned, LoadError> {
    // In a run directory a file that cannot be opened or is binary is skipped with a
    // note, and the other files still make the run; named alone it is an error.
    let single = logs.len() == 1;
    let budget = scan::EventBudget::default();
    let scans: Vec<Result<FileScan, LoadError>> = logs
        .par_iter()
        .enumerate()
        .map(|(i, sf)| scan_file(gs, i, sf, &block_for(opts, sf), &budget, progress))
        .collect();
    let mut sources = Vec::new();
    let mut events = Vec::new();
    let mut skipped = 0;
    let mut dropped = Dropped::default();
    let mut notes: Vec<String> = Vec::new();
    for (sf, scan) in logs.iter().zip(scans) {
        let scan = match scan {
            Ok(f) => {
                notes.extend(read_notes(sf, &f));
                dropped.add(sf, &f.scan);
                f.scan
            }
            Err(e) if !single => {
                notes.push(format!("skipped {e}"));
                skipped += 1;
                SourceScan::default()
            }
            Err(e) => return Err(e),
        };
        let (info, evs) = source_info(gs, sf.display(), scan);
        events.extend(evs);
        sources.push(info);
    }
    notes.extend(dropped.note());
    if skipped > 0 && skipped == logs.len() {
        return Err(LoadError::NothingRead {
            path: logs
                .first()
                .and_then(|f| f.path.parent())
                .map(crate::ingest::text::shown_path)
                .unwrap_or_default(),
            notes: notes.join("; "),
        });
    }
    Ok((sources, events, notes))
}

/// Reads the nvidia-smi CSVs and attaches their timelines to the run, each moved by its
/// node's clock correction (milliseconds to add to its stamps).
fn attach_nvsmi(run: &mut Run, smi: &[(&SourceFile, i64)], notes: &mut Vec<String>) {
    for &(sf, shift_ms) in smi {
        match read_csv(sf) {
            Ok((bytes, cut)) => {
                if cut {
                    notes.push(format!(
                        "{}: only the first {} bytes are read (the limit for an nvidia-smi CSV)",
                        sf.display(),
                        source::limits::MAX_CSV
                    ));
                }
                let mut t = crate::ingest::nvsmi::parse(&String::from_utf8_lossy(&bytes));
                if shift_ms != 0 {
                    let d = Duration::milliseconds(shift_ms);
                    for s in t.gpus.values_mut().flatten() {
                        s.timestamp = s.timestamp.map(|x| x + d);
                    }
                    for a in &mut t.apps {
                        a.timestamp = a.timestamp.map(|x| x + d);
                    }
                }
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
}

/// Loads one run from several paths, or from one directory whose subdirectories are the
/// nodes' (`run/node0/`, `run/node1/`). Ranks are resolved per node (pids repeat across
/// hosts), a rank found on two nodes is an error, and each node's clock is estimated
/// against the reference node's from the barrier exits and, unless told not to, applied
/// to its stamps, so every timeline downstream is on one clock. One path that is not
/// split into nodes loads as `load_run` does.
pub fn load_paths(
    gs: &GrammarSet,
    paths: &[PathBuf],
    opts: &LoadOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<Loaded, LoadError> {
    check_stdin_once(paths)?;
    let groups = source::discover_nodes(paths)?;
    let undivided = matches!((paths, groups.as_slice()), ([_], [g]) if g.node.is_none());
    let mut files: Vec<SourceFile> = Vec::new();
    let mut group_of_file: Vec<usize> = Vec::new();
    for (n, g) in groups.iter().enumerate() {
        for f in &g.files {
            files.push(f.clone());
            group_of_file.push(n);
        }
    }
    let scanned = if undivided {
        // One path: a single node unless its files' NCCL lines name several hosts. Its
        // files were listed (and sniffed) by `discover_nodes` already: not again.
        if let Some(found) = snapshot_not_log(&paths[0]) {
            return Err(LoadError::NotAStartupLog {
                path: crate::ingest::text::shown_path(&paths[0]),
                found,
            });
        }
        let (found, notes) = groups
            .first()
            .map(|g| (g.files.clone(), g.notes.clone()))
            .unwrap_or_default();
        let (found, scanned) = scan_found(gs, found, notes, opts, progress)?;
        if distinct_hosts(&scanned.1) < 2 && wrapped_nodes_by_source(&scanned.1, 1)[0].len() < 2 {
            return finish_single(
                gs,
                crate::ingest::text::shown_path(&paths[0]),
                found,
                scanned,
                opts,
            );
        }
        files = found;
        group_of_file = vec![0; files.len()];
        scanned
    } else {
        let logs: Vec<&SourceFile> = files.iter().filter(|f| f.kind == SourceKind::Log).collect();
        scan_logs(gs, &logs, opts, progress)?
    };
    let (mut sources, mut events, mut notes) = scanned;
    if !undivided {
        // (One undivided path listed its own directory, with its notes, in `scan_path`.)
        notes.extend(groups.iter().flat_map(|g| g.notes.iter().cloned()));
    }
    let log_idx: Vec<usize> = (0..files.len())
        .filter(|&i| files[i].kind == SourceKind::Log)
        .collect();
    let logs: Vec<&SourceFile> = log_idx.iter().map(|&i| &files[i]).collect();
    let group_of_source: Vec<usize> = log_idx.iter().map(|&i| group_of_file[i]).collect();
    let hosts = hosts_by_source(&events, logs.len());
    let ranks = ranks_by_source(&events, logs.len());
    let assigned = assign_nodes(paths, &groups, &group_of_source, &hosts, &ranks);
    let mut names = assigned.names;
    let node_of_source = assigned.node_of_source;
    // A log goes with its own node; another file (nvidia-smi CSV) with its group's.
    let mut node_of_file: Vec<usize> = group_of_file
        .iter()
        .map(|&g| assigned.home_of_group.get(g).copied().unwrap_or(0))
        .collect();
    for (s, &i) in log_idx.iter().enumerate() {
        node_of_file[i] = node_of_source[s];
    }
    let refs: Vec<Option<NaiveDate>> = logs.iter().map(|sf| modified_date(sf)).collect();
    notes.extend(time_regressions(&events, &logs));
    if let Some(how) = infer_dates(&mut events, &refs) {
        notes.push(how);
    }

    // Per node: duplicates dropped and ranks resolved among that host's processes only.
    // A stream that interleaves several wrapped nodes (kubectl --prefix over the pods of a
    // LeaderWorkerSet, compose services) is split line by line: the wrapper names the
    // node; a line with no wrapper goes with the line before it.
    let wrapped = wrapped_nodes_by_source(&events, logs.len());
    let mut per_node: Vec<Vec<Event>> = vec![Vec::new(); names.len()];
    let mut sources_of_node: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); names.len()];
    let mut split_node_of: Vec<Option<usize>> = vec![None; logs.len()];
    for e in events {
        let s = e.origin.source;
        let split = wrapped.get(s).is_some_and(|w| w.len() >= 2);
        let n = match (split, e.node.as_deref()) {
            (true, Some(w)) => {
                let n = match names.iter().position(|x| x == w) {
                    Some(n) => n,
                    None => {
                        names.push(w.to_string());
                        per_node.push(Vec::new());
                        sources_of_node.push(BTreeSet::new());
                        names.len() - 1
                    }
                };
                split_node_of[s] = Some(n);
                n
            }
            (true, None) => split_node_of[s].unwrap_or_else(|| {
                // Before the stream's first wrapped line: its first wrapper's node.
                let first = &wrapped[s][0];
                names.iter().position(|x| x == first).unwrap_or_else(|| {
                    names.push(first.clone());
                    per_node.push(Vec::new());
                    sources_of_node.push(BTreeSet::new());
                    names.len() - 1
                })
            }),
            (false, _) => node_of_source.get(s).copied().unwrap_or(0),
        };
        sources_of_node[n].insert(s);
        per_node[n].push(e);
    }
    for (s, &n) in node_of_source.iter().enumerate() {
        if wrapped.get(s).is_none_or(|w| w.len() < 2) {
            sources_of_node[n].insert(s);
        }
    }
    // A split stream's own node (named by its path) holds nothing: dropped (unless another
    // file, an nvidia-smi CSV, lives there), and the
    // indices after it moved down.
    let keep: Vec<bool> = (0..names.len())
        .map(|n| {
            !per_node[n].is_empty()
                || !sources_of_node[n].is_empty()
                || node_of_file
                    .iter()
                    .zip(&files)
                    .any(|(&m, f)| m == n && f.kind != SourceKind::Log)
        })
        .collect();
    let mut new_index = vec![0usize; names.len()];
    let mut next = 0;
    for (n, k) in keep.iter().enumerate() {
        new_index[n] = next;
        if *k {
            next += 1;
        }
    }
    for i in node_of_file.iter_mut() {
        *i = new_index[*i];
    }
    let mut names_kept = Vec::new();
    let mut per_node_kept = Vec::new();
    let mut sources_kept = Vec::new();
    for (n, ((name, evs), srcs)) in names
        .into_iter()
        .zip(per_node)
        .zip(sources_of_node)
        .enumerate()
    {
        if keep[n] {
            names_kept.push(name);
            per_node_kept.push(evs);
            sources_kept.push(srcs);
        }
    }
    let names = names_kept;
    let per_node = per_node_kept;
    let sources_of_node = sources_kept;
    let built: Vec<model::NodeEvents> = per_node
        .into_iter()
        .map(|evs| {
            let evs = model::dedup_across_sources(evs, &mut sources);
            model::prepare_node(evs, gs.knowledge(), opts.attempt)
        })
        .collect();
    let most = built.iter().map(|n| n.attempts).max().unwrap_or(1);
    check_attempt(&shown_paths(paths), opts.attempt, most)?;
    let mut nodes: Vec<Node> = Vec::new();
    let mut owner: std::collections::HashMap<&crate::ingest::event::Rank, usize> =
        Default::default();
    for (n, r) in built.iter().enumerate() {
        for rank in &r.ranks {
            if let Some(&first) = owner.get(rank) {
                return Err(LoadError::RankOnTwoNodes {
                    rank: rank.to_string(),
                    first: names[first].clone(),
                    second: names[n].clone(),
                });
            }
            owner.insert(rank, n);
        }
        let args = r.config.as_ref().and_then(|c| c.as_ref().ok());
        let int = |key: &str| match args.as_ref()?.config.get(key)? {
            crate::model::config::pyrepr::PyValue::Int(v) => u32::try_from(*v).ok(),
            _ => None,
        };
        nodes.push(Node {
            name: names[n].clone(),
            sources: sources_of_node[n].iter().copied().collect(),
            ranks: r.ranks.clone(),
            node_rank: int("node_rank"),
            nnodes: int("nnodes"),
            hosts: r
                .events
                .iter()
                .filter_map(|e| e.host.clone())
                .collect::<BTreeSet<String>>()
                .into_iter()
                .collect(),
            reference: false,
            offset: None,
        });
        notes.extend(ranks_on_two_hosts(&names[n], &r.events));
    }

    notes.extend(nodes_sharing_a_host(&nodes));

    // Node clocks against the reference: the node that says it is node_rank 0, else the
    // first given.
    let reference = nodes
        .iter()
        .position(|n| n.node_rank == Some(0))
        .unwrap_or(0);
    let by_node: Vec<Vec<&Event>> = built.iter().map(|r| r.events.iter().collect()).collect();
    let offsets = clock::estimate_offsets(&by_node, reference, &gs.barrier_exit_kinds());
    if let Some(r) = nodes.get_mut(reference) {
        r.reference = true;
    }
    let mut shift_ms = vec![0i64; nodes.len()];
    for (n, o) in offsets.into_iter().enumerate() {
        nodes[n].offset = o.map(|mut o| {
            o.applied = opts.clock_align;
            if o.applied {
                shift_ms[n] = -o.mid_ms();
            }
            o
        });
    }
    let mut all: Vec<Event> = Vec::new();
    for (n, r) in built.into_iter().enumerate() {
        let d = Duration::milliseconds(shift_ms[n]);
        all.extend(r.events.into_iter().map(|mut e| {
            if shift_ms[n] != 0 {
                e.ts = e.ts.map(|t| t + d);
            }
            e
        }));
    }
    for (n, node) in nodes.iter().enumerate() {
        if n != reference && node.offset.is_none() && nodes.len() > 1 {
            notes.push(format!(
                "node {}: no barrier exit in common with {}: its clock is taken as is",
                node.name, nodes[reference].name
            ));
        }
    }

    let name = if paths.len() == 1 {
        crate::ingest::text::shown_path(&paths[0])
    } else {
        shown_paths(paths)
    };
    let mut run = model::build(name.clone(), all, sources, gs.knowledge(), None);
    run.nodes = nodes;
    let smi: Vec<(&SourceFile, i64)> = files
        .iter()
        .zip(&node_of_file)
        .filter(|(f, _)| f.kind == SourceKind::NvidiaSmi)
        .map(|(f, &n)| (f, shift_ms[n]))
        .collect();
    attach_nvsmi(&mut run, &smi, &mut notes);
    finish(run, files, notes, name)
}

fn shown_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| crate::ingest::text::shown_path(p))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// A rank whose NCCL lines name two hosts: its pid was taken for another host's process
/// (a file collected from two machines, or directories mixed up).
fn ranks_on_two_hosts(node: &str, events: &[Event]) -> Vec<String> {
    let mut seen: std::collections::BTreeMap<&crate::ingest::event::Rank, BTreeSet<(&str, u32)>> =
        Default::default();
    for e in events {
        if let (Some(r), Some(h)) = (e.rank.as_ref(), e.host.as_deref()) {
            seen.entry(r).or_default().insert((h, e.pid.unwrap_or(0)));
        }
    }
    seen.into_iter()
        .filter(|(_, hp)| hp.iter().map(|(h, _)| h).collect::<BTreeSet<_>>().len() > 1)
        .map(|(r, hp)| {
            let named: Vec<String> = hp.iter().map(|(h, p)| format!("{h}:{p}")).collect();
            format!(
                "node {}: rank {r}'s NCCL lines name two hosts ({}): one rank runs on one host, so its pid was matched to another machine's process",
                node,
                named.join(", ")
            )
        })
        .collect()
}

/// Node directories whose NCCL lines all name one and the same host: one machine's logs
/// split into directories, whose clocks are then one clock (their offsets are estimated all
/// the same; a non-zero one is the stamps' own spread).
fn nodes_sharing_a_host(nodes: &[Node]) -> Vec<String> {
    let mut by_host: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for n in nodes {
        if let [h] = n.hosts.as_slice() {
            by_host.entry(h).or_default().push(&n.name);
        }
    }
    by_host
        .into_iter()
        .filter(|(_, ns)| ns.len() > 1)
        .map(|(h, ns)| {
            format!(
                "nodes {} all name host {h} in their NCCL lines: one machine split into directories, or hosts that share a name",
                ns.join(", ")
            )
        })
        .collect()
}

/// The hosts NCCL's prefixes name in each source: the one a source names, or `None` for
/// a source naming none (no NCCL line) or several (a console several hosts wrote to).
fn hosts_by_source(events: &[Event], sources: usize) -> Vec<Option<String>> {
    let mut named: Vec<BTreeSet<&str>> = vec![BTreeSet::new(); sources];
    for e in events {
        if let (Some(h), Some(set)) = (e.host.as_deref(), named.get_mut(e.origin.source)) {
            set.insert(h);
        }
    }
    named
        .into_iter()
        .map(|set| match (set.len(), set.first()) {
            (1, Some(h)) => Some((*h).to_string()),
            _ => None,
        })
        .collect()
}

/// The ranks each log source names in its record prefixes (before pids are resolved).
fn ranks_by_source(events: &[Event], sources: usize) -> Vec<BTreeSet<String>> {
    let mut named: Vec<BTreeSet<String>> = vec![BTreeSet::new(); sources];
    for e in events {
        if let (Some(r), Some(set)) = (e.rank.as_ref(), named.get_mut(e.origin.source)) {
            if !r.is_engine() {
                set.insert(r.to_string());
            }
        }
    }
    named
}

/// The nodes wrappers name in each source (kubectl pods, compose services, journald
/// hosts), in the order they first appear.
fn wrapped_nodes_by_source(events: &[Event], sources: usize) -> Vec<Vec<String>> {
    let mut named: Vec<Vec<String>> = vec![Vec::new(); sources.max(1)];
    for e in events {
        if let (Some(n), Some(list)) = (e.node.as_deref(), named.get_mut(e.origin.source)) {
            if !list.iter().any(|x| x == n) {
                list.push(n.to_string());
            }
        }
    }
    named
}

fn distinct_hosts(events: &[Event]) -> usize {
    events
        .iter()
        .filter_map(|e| e.host.as_deref())
        .collect::<BTreeSet<&str>>()
        .len()
}

/// The nodes of a run, and which node each log source and each discovered group of files
/// belongs to.
struct NodeAssignment {
    names: Vec<String>,
    node_of_source: Vec<usize>,
    /// Where a group's files other than logs go (nvidia-smi CSVs).
    home_of_group: Vec<usize>,
}

/// A directory names its node (`run/node1/`, `node1/`). Where no directory does — one
/// path, or files given one by one from one directory — the host NCCL's prefixes name is
/// the node: files of one host are one node whatever their names, files of two hosts are
/// two. A file that names no host stays with the one host of its group; otherwise it
/// joins the one node whose files name the same ranks (a server log beside its console:
/// one rank does not run on two hosts), or forms a node of its own (named as its group
/// is) when no node, or several, share its ranks.
fn assign_nodes(
    paths: &[PathBuf],
    groups: &[source::NodeFiles],
    group_of_source: &[usize],
    hosts: &[Option<String>],
    ranks: &[BTreeSet<String>],
) -> NodeAssignment {
    #[derive(PartialEq, Eq, Hash)]
    enum Key {
        Dir(usize),
        Host(String),
        Plain(usize),
    }
    let mut names: Vec<String> = Vec::new();
    let mut index: std::collections::HashMap<Key, usize> = Default::default();
    let mut node_for = |key: Key, name: String| -> usize {
        *index.entry(key).or_insert_with(|| {
            names.push(name);
            names.len() - 1
        })
    };
    let group_name = |g: usize| {
        groups
            .get(g)
            .and_then(|x| x.node.clone())
            .unwrap_or_else(|| {
                paths
                    .first()
                    .map_or(format!("node{g}"), |p| crate::ingest::text::shown_path(p))
            })
    };
    let named_by_dir = |g: usize| groups.get(g).is_some_and(|x| x.by_dir && x.node.is_some());
    let mut node_of_source: Vec<Option<usize>> = vec![None; group_of_source.len()];
    let mut members_of: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
    for (s, &g) in group_of_source.iter().enumerate() {
        if let Some(m) = members_of.get_mut(g) {
            m.push(s);
        }
    }
    let host_of = |s: usize| hosts.get(s).and_then(|h| h.clone());
    // First the files whose node is certain: by directory, by host.
    let mut home_of_group: Vec<Option<usize>> = vec![None; groups.len()];
    for (g, members) in members_of.iter().enumerate() {
        if named_by_dir(g) {
            let n = node_for(Key::Dir(g), group_name(g));
            for &s in members {
                node_of_source[s] = Some(n);
            }
            home_of_group[g] = Some(n);
            continue;
        }
        let group_hosts: BTreeSet<String> = members.iter().filter_map(|&s| host_of(s)).collect();
        let only_host = match (group_hosts.len(), group_hosts.first()) {
            (1, Some(h)) => Some(node_for(Key::Host(h.clone()), h.clone())),
            _ => None,
        };
        for &s in members {
            node_of_source[s] = match host_of(s) {
                Some(h) => Some(node_for(Key::Host(h.clone()), h)),
                None => only_host,
            };
        }
        home_of_group[g] = only_host;
    }
    // Then the files that name no host, in a group that names none or several: each
    // joins the one node already holding its ranks, if there is one.
    let mut nodes_of_rank: std::collections::HashMap<&str, BTreeSet<usize>> = Default::default();
    for (s, n) in node_of_source.iter().enumerate() {
        if let (Some(n), Some(rs)) = (n, ranks.get(s)) {
            for r in rs {
                nodes_of_rank.entry(r.as_str()).or_default().insert(*n);
            }
        }
    }
    for (g, members) in members_of.iter().enumerate() {
        for &s in members {
            if node_of_source[s].is_some() {
                continue;
            }
            let mine = ranks.get(s).into_iter().flatten();
            let sharing: BTreeSet<usize> = mine
                .clone()
                .filter_map(|r| nodes_of_rank.get(r.as_str()))
                .flatten()
                .copied()
                .collect();
            let n = match (sharing.len(), sharing.first()) {
                (1, Some(&n)) => n,
                _ => node_for(Key::Plain(g), group_name(g)),
            };
            node_of_source[s] = Some(n);
            for r in mine {
                nodes_of_rank.entry(r.as_str()).or_default().insert(n);
            }
        }
        if home_of_group[g].is_none() {
            home_of_group[g] = members.first().and_then(|&s| node_of_source[s]);
        }
    }
    let home_of_group: Vec<usize> = (0..groups.len())
        .map(|g| home_of_group[g].unwrap_or_else(|| node_for(Key::Plain(g), group_name(g))))
        .collect();
    let node_of_source: Vec<usize> = node_of_source.into_iter().map(|n| n.unwrap_or(0)).collect();
    // Nodes in the order their files were given (the first given is the reference
    // unless one says it is node_rank 0), not in the order the passes above made them.
    let mut first_seen = vec![(usize::MAX, usize::MAX); names.len()];
    for (s, (&n, &g)) in node_of_source.iter().zip(group_of_source).enumerate() {
        first_seen[n] = first_seen[n].min((g, s));
    }
    for (g, &n) in home_of_group.iter().enumerate() {
        first_seen[n] = first_seen[n].min((g, usize::MAX));
    }
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&n| first_seen[n]);
    let mut renumbered = vec![0; names.len()];
    for (new, &old) in order.iter().enumerate() {
        renumbered[old] = new;
    }
    NodeAssignment {
        names: order.iter().map(|&n| names[n].clone()).collect(),
        node_of_source: node_of_source.iter().map(|&n| renumbered[n]).collect(),
        home_of_group: home_of_group.iter().map(|&n| renumbered[n]).collect(),
    }
}

/// The refusal of a run with no start-up event also says what could not be read: a cut
/// stream or a skipped file may be why nothing was found.
fn with_read_problems(mut found: String, notes: &[String]) -> String {
    for n in notes
        .iter()
        .filter(|n| n.starts_with("skipped ") || n.contains(": read stopped "))
    {
        found.push_str("; ");
        found.push_str(n);
    }
    found
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
            crate::ingest::text::shown_path(path)
        )
    })
}

/// What a file with no start-up event held instead, for the error that refuses it.
fn what_was_found(run: &Run) -> String {
    let c = run.counts();
    let families = detected_families(run);
    let example = run.sources.iter().find_map(|s| {
        let u = s.unknown_samples.first()?;
        Some(format!(
            ", the first at {}:{}: {}",
            s.path,
            u.line,
            crate::ingest::text::truncate(&u.text, 60)
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

/// An nvidia-smi CSV up to [`source::limits::MAX_CSV`] bytes, and whether it was cut.
fn read_csv(sf: &SourceFile) -> std::io::Result<(Vec<u8>, bool)> {
    let f = std::fs::File::open(&sf.path)?;
    let mut bytes = Vec::new();
    f.take(source::limits::MAX_CSV + 1)
        .read_to_end(&mut bytes)?;
    let cut = bytes.len() as u64 > source::limits::MAX_CSV;
    bytes.truncate(source::limits::MAX_CSV as usize);
    Ok((bytes, cut))
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
    // One pass to bucket by file: a run of hundreds of files would otherwise read every
    // event once per file.
    let mut by_source: Vec<Vec<&Event>> = vec![Vec::new(); logs.len()];
    for e in events.iter().filter(|e| !e.year_inferred) {
        if let Some(b) = by_source.get_mut(e.origin.source) {
            b.push(e);
        }
    }
    for (sf, evs) in logs.iter().zip(&by_source) {
        let mut prev: Option<NaiveDateTime> = None;
        let mut back = 0usize;
        for e in evs {
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
