//! Scanning the logs: each file opened once, sniffed (binary, UTF-16), scanned by the
//! grammars in parallel, and what was not read said in notes; nvidia-smi CSVs attached.

use std::io::{Cursor, Read};

use crate::base::event::{Event, Rank};
use crate::grammar::GrammarSet;
use crate::ingest::scan::{self, SeenPrefix, SourceScan};
use crate::ingest::source::{self, SourceError, SourceFile};
use crate::model::notes::{EventBudgetLimits, ReadNote};
use crate::model::{self, Run, SourceInfo};
use crate::render::text::notes as words;
use chrono::Duration;

use super::by_source::BySource;
use super::options::{GivenScans, LoadError, LoadOptions};

/// What reading one log gave: the scan (possibly of a part of the file) and how many
/// bytes were taken from the file itself.
struct FileScan {
    scan: SourceScan,
    raw_bytes: u64,
    compression: source::Compression,
}

/// One log to scan, as source `index` of the run, and what its scan needs.
struct FileRead<'a> {
    gs: &'a GrammarSet,
    index: usize,
    sf: &'a SourceFile,
    opts: &'a LoadOptions,
    budget: &'a scan::EventBudget,
    progress: &'a (dyn Fn(usize, u64) + Sync),
}

fn scan_file(
    gs: &GrammarSet,
    index: usize,
    sf: &SourceFile,
    opts: &LoadOptions,
    budget: &scan::EventBudget,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<FileScan, LoadError> {
    let read = FileRead {
        gs,
        index,
        sf,
        opts,
        budget,
        progress,
    };
    if let Some(f) = read.small_file()? {
        return Ok(f);
    }
    #[cfg(unix)]
    if let Some(f) = read.large_file()? {
        return Ok(f);
    }
    read.stream()
}

impl FileRead<'_> {
    /// The file read as a stream: the way for one compressed, in UTF-16 or on stdin (and,
    /// off unix, for a plain file longer than a block).
    fn stream(&self) -> Result<FileScan, LoadError> {
        let (gs, index, sf, opts) = (self.gs, self.index, self.sf, self.opts);
        let (budget, progress) = (self.budget, self.progress);
        let opts = &block_for(opts, sf);
        let stream = source::open_stream(sf, opts.digest)?;
        let raw = stream.raw_counter();
        let digest = stream.raw_digest();
        let compression = stream.compression;
        let mut reader = stream.reader;
        // Look at the first bytes before scanning: a binary file is refused, not scanned
        // into thousands of unknown lines.
        let mut head = vec![0u8; 8192];
        let (filled, error) = scan::read_full(&mut reader, &mut head, None);
        // A file cut within its first bytes: what was decoded is still read.
        let head_stop = error.map(|e| scan::ReadStop::after(filled as u64, &e));
        head.truncate(filled);
        if head_stop.is_some() {
            reader = Box::new(std::io::empty());
        }
        // UTF-16 with a byte-order mark is text (NUL in every other byte), read as UTF-8.
        let text: Box<dyn Read + Send> = match utf16_big_endian(&head) {
            Some(big_endian) => {
                let body = Cursor::new(head.split_off(2)).chain(reader);
                Box::new(crate::base::text::Utf16Reader::new(body, big_endian))
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
        if let (None, Some(&d)) = (&scan.read_stop, digest.get()) {
            let _ = sf.digest.set(d);
        }
        Ok(FileScan {
            scan,
            raw_bytes: raw.load(std::sync::atomic::Ordering::Relaxed),
            compression,
        })
    }

    /// A plain file smaller than a block (a rank's log of a run of thousands), read with one
    /// open and one read into one buffer and scanned in place; `None` for any other file
    /// (compressed, UTF-16, grown past a block since it was listed), which the stream path
    /// reads as before. Binary files are refused as there.
    fn small_file(&self) -> Result<Option<FileScan>, LoadError> {
        let (gs, index, sf, opts) = (self.gs, self.index, self.sf, self.opts);
        let (budget, progress) = (self.budget, self.progress);
        let Some(size) = listed_plain(sf).filter(|&size| size < opts.block_size as u64) else {
            return Ok(None);
        };
        let file = open_listed(sf)?;
        // One byte more than a block tells a file that grew past it.
        let limit = opts.block_size as u64 + 1;
        with_read_buffer(|bytes| {
            let stop = read_listed(file, size, limit, bytes);
            if bytes.len() as u64 >= limit || !plain_text_head(sf, bytes)? {
                return Ok(None);
            }
            let mut scan = scan::scan_whole(gs, index, bytes, budget, |n| progress(index, n));
            if stop.is_none() && opts.digest {
                let _ = sf.digest.set(crate::ingest::stream::content_digest(bytes));
            }
            scan.read_stop = stop;
            Ok(Some(FileScan {
                raw_bytes: bytes.len() as u64,
                scan,
                compression: source::Compression::None,
            }))
        })
    }

    /// A plain file longer than a block, scanned in place (`scan::scan_file_at`): mapped
    /// into memory, or where it cannot be, its blocks read at their offsets by the scanning
    /// threads; `None` for any other file (compressed, UTF-16, stdin), which the stream path
    /// reads. Binary files are refused as there.
    #[cfg(unix)]
    fn large_file(&self) -> Result<Option<FileScan>, LoadError> {
        let (gs, index, sf, opts) = (self.gs, self.index, self.sf, self.opts);
        let (budget, progress) = (self.budget, self.progress);
        let long = |size: &u64| *size >= opts.block_size as u64;
        if listed_plain(sf).filter(long).is_none() {
            return Ok(None);
        }
        let file = open_listed(sf)?;
        let mut head = [0u8; 8192];
        let (filled, error) = scan::read_full(&mut &file, &mut head, None);
        // A file that cannot be read from its start is left to the stream path's notes.
        if error.is_some() || !plain_text_head(sf, &head[..filled])? {
            return Ok(None);
        }
        let mut hasher = opts.digest.then(crate::ingest::stream::content_hasher);
        let scan = scan::scan_file_at(
            gs,
            index,
            &file,
            opts.block_size,
            budget,
            hasher.as_mut(),
            |n| progress(index, n),
        );
        if let (None, Some(h)) = (&scan.read_stop, hasher) {
            let _ = sf.digest.set(std::hash::Hasher::finish(&h));
        }
        Ok(Some(FileScan {
            raw_bytes: scan.bytes,
            scan,
            compression: source::Compression::None,
        }))
    }
}

/// A regular file's size as listed, when the listing saw no compression; `None` for a
/// compressed file or stdin.
fn listed_plain(sf: &SourceFile) -> Option<u64> {
    match (sf.compression, sf.size, sf.is_stdin()) {
        (None | Some(source::Compression::None), Some(size), false) => Some(size),
        _ => None,
    }
}

fn open_listed(sf: &SourceFile) -> Result<std::fs::File, SourceError> {
    std::fs::File::open(&sf.path).map_err(|source| SourceError::Unreadable {
        path: sf.display(),
        source,
    })
}

/// Whether a file that begins with `bytes` is plain text, to be read in place: false for
/// one compressed or in UTF-16 (the stream path reads it), an error for a binary one.
fn plain_text_head(sf: &SourceFile, bytes: &[u8]) -> Result<bool, LoadError> {
    let head = &bytes[..bytes.len().min(8192)];
    let plain = source::Compression::None == source::compression_of(head);
    if !plain || utf16_big_endian(head).is_some() {
        return Ok(false);
    }
    match source::binary_offset(head) {
        Some(offset) => Err(SourceError::Binary {
            path: sf.display(),
            offset,
        }
        .into()),
        None => Ok(true),
    }
}

/// Whether a file that begins with `head` is UTF-16 by its byte-order mark, and then
/// whether big-endian.
fn utf16_big_endian(head: &[u8]) -> Option<bool> {
    match head.get(..2) {
        Some([0xff, 0xfe]) => Some(false),
        Some([0xfe, 0xff]) => Some(true),
        _ => None,
    }
}

/// Runs `f` with this thread's reading buffer: a run of thousands of rank files read each
/// into a new zero-filled buffer, a `malloc` and a `memset` of the file's size a file.
/// The buffer is taken out while `f` runs, so a use nested in it (a file scanned by a job
/// this thread picks up meanwhile) gets a new one; one grown past a block is not kept.
fn with_read_buffer<T>(f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    thread_local!(static BUFFER: std::cell::RefCell<Vec<u8>> = const {
        std::cell::RefCell::new(Vec::new())
    });
    let mut buffer = BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let out = f(&mut buffer);
    if buffer.capacity() <= scan::DEFAULT_BLOCK + 1 {
        BUFFER.with(|b| *b.borrow_mut() = buffer);
    }
    out
}

/// A file listed at `size` bytes read into `bytes` (its earlier content replaced) up to
/// `limit`, and the error that stopped the reading early, if one did (what was read before
/// it is kept and scanned, as the stream path does). One byte more than the listed size
/// is asked for: a file that did not change since it was listed gives its bytes and no
/// more in one `read` (a regular file's read stops short only at its end), and that is
/// all it is asked; one that grew fills the byte more and is read on, to its end or the
/// limit. Reading to the end by
/// `read_to_end`'s growing steps (8 KiB, then 16 …) took four reads of a 36 KB file, and
/// a second read only to be told of the end was one system call in six of a run of
/// thousands of rank files.
fn read_listed(
    mut file: std::fs::File,
    size: u64,
    limit: u64,
    bytes: &mut Vec<u8>,
) -> Option<scan::ReadStop> {
    let want = usize::try_from(size.saturating_add(1).min(limit)).unwrap_or(0);
    let listed = usize::try_from(size).unwrap_or(usize::MAX);
    // Only bytes past the buffer's earlier length are zeroed; the read overwrites the rest.
    bytes.resize(want, 0);
    let (filled, error) = scan::read_full(&mut file, bytes, Some(listed));
    bytes.truncate(filled);
    if let Some(e) = error {
        return Some(scan::ReadStop::after(filled as u64, &e));
    }
    if filled < want {
        return None;
    }
    // The file grew since it was listed: what it holds beyond, up to the limit.
    let rest = limit.saturating_sub(bytes.len() as u64);
    (file.take(rest).read_to_end(bytes).err())
        .map(|e| scan::ReadStop::after(bytes.len() as u64, &e))
}

/// The caller's scan of `sf` (`LoadOptions::given`), its events numbered as source
/// `index` of the run.
fn given_scan(given: &GivenScans, index: usize, sf: &SourceFile) -> FileScan {
    let mut scan = given.get(&sf.path).cloned().unwrap_or_default();
    for e in &mut scan.events {
        e.origin.source = index;
    }
    FileScan {
        raw_bytes: scan.bytes,
        scan,
        compression: source::Compression::None,
    }
}

/// What the notes say about a file that was read only in part, or expanded suspiciously.
fn read_notes(sf: &SourceFile, f: &FileScan) -> Vec<ReadNote> {
    let mut notes = Vec::new();
    let compressed = f.compression != source::Compression::None;
    if let Some(stop) = &f.scan.read_stop {
        notes.push(ReadNote::ReadStopped {
            path: sf.display(),
            offset: stop.offset,
            compressed_read: compressed.then_some(f.raw_bytes),
            reason: stop.reason.clone(),
        });
    }
    // A file cut while it was read (log rotation with copytruncate, a user's
    // `truncate`) ends early with no error: only its size tells.
    if let (None, Some(listed), false) = (&f.scan.read_stop, sf.size, sf.is_stdin()) {
        // Stat again only for a file read short of its listed size.
        let now =
            (f.raw_bytes < listed).then(|| std::fs::metadata(&sf.path).map_or(0, |m| m.len()));
        if let Some(now) = now.filter(|&now| now < listed) {
            notes.push(ReadNote::Shrank {
                path: sf.display(),
                listed,
                now,
                read: f.raw_bytes,
            });
        }
    }
    if let Some(line) = f.scan.prefixes_not_kept {
        notes.push(ReadNote::PrefixesNotKept {
            path: sf.display(),
            limit: scan::MAX_SEEN_PREFIXES,
            line,
        });
    }
    if let Some((line, what)) = &f.scan.bad_stamps.first {
        notes.push(ReadNote::BadStamps {
            path: sf.display(),
            lines: f.scan.bad_stamps.lines,
            line: *line,
            text: what.clone(),
        });
    }
    if let Some((line, what)) = &f.scan.bad_ranks.first {
        notes.push(ReadNote::BadRanks {
            path: sf.display(),
            lines: f.scan.bad_ranks.lines,
            line: *line,
            text: what.clone(),
            limit: u32::MAX,
        });
    }
    if compressed && f.raw_bytes > 0 && f.scan.bytes / f.raw_bytes > source::limits::WARN_RATIO {
        notes.push(ReadNote::Expanded {
            path: sf.display(),
            compressed: f.raw_bytes,
            decompressed: f.scan.bytes,
        });
    }
    notes
}

/// Events not kept past a budget, over the run's files: one note for all of them (a
/// spent run budget touches every file read after it).
#[derive(Default)]
struct Dropped {
    by_kind: std::collections::BTreeMap<String, u64>,
    kept_past_budget: u64,
    files: Vec<String>,
    file_count: usize,
}

impl Dropped {
    fn add(&mut self, sf: &SourceFile, scan: &SourceScan) {
        if scan.dropped_events.is_empty() && scan.kept_past_budget == 0 {
            return;
        }
        for (k, n) in &scan.dropped_events {
            *self.by_kind.entry(k.clone()).or_insert(0) += n;
        }
        self.kept_past_budget += scan.kept_past_budget;
        self.file_count += 1;
        if self.files.len() < 3 {
            self.files.push(sf.display());
        }
    }

    fn note(self, budget: EventBudgetLimits) -> Option<ReadNote> {
        if self.by_kind.values().sum::<u64>() == 0 && self.kept_past_budget == 0 {
            return None;
        }
        Some(ReadNote::EventsDropped {
            more_files: self.file_count - self.files.len(),
            files: self.files,
            by_kind: self.by_kind.into_iter().collect(),
            kept_past_budget: self.kept_past_budget,
            budget,
        })
    }
}

/// A source's line accounting for the model, and its events.
pub(super) fn source_info(
    gs: &GrammarSet,
    path: String,
    scan: SourceScan,
) -> (SourceInfo, Vec<Event>) {
    let ranks = ranks_seen(gs, &scan.prefixes_seen);
    source_info_with(path, scan, ranks)
}

/// Each rank a source's record lines name, with the first and last line naming it.
type RanksSeen = Vec<(Rank, u64, u64)>;

/// The ranks a source's record lines name, each prefix parsed once (the scan kept one
/// line per distinct prefix): a rank whose lines give no event still exists. Read with an
/// event memo (a rank file's line `[… TP3]` is shaped like the file before's `[… TP2]`):
/// a search of every prefix regex per line was 3 % of loading 8,192 rank files.
pub(super) fn ranks_seen(gs: &GrammarSet, seen: &[SeenPrefix]) -> RanksSeen {
    if seen.is_empty() {
        return Vec::new();
    }
    let mut memo = gs.take_event_memo();
    let ranks = (seen.iter())
        .filter_map(|p| {
            let rank = gs.read_prefix_line(&p.text, &mut memo)?.rank?;
            (!rank.is_empty()).then_some((rank, p.first_line, p.last_line))
        })
        .collect();
    gs.give_back_event_memo(memo);
    ranks
}

/// [`source_info`] with the ranks its record lines name read already (`ranks_seen`).
fn source_info_with(
    path: String,
    scan: SourceScan,
    ranks_seen: RanksSeen,
) -> (SourceInfo, Vec<Event>) {
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
        dated_lines: scan.dated_lines,
    };
    (info, scan.events)
}

/// Files scanned in one parallel batch, per thread: enough that a batch's last file
/// leaves a thread idle for a small part of the batch, few enough that the batch's
/// per-file results are a small part of the run's memory.
const SCAN_BATCH_PER_THREAD: usize = 64;

pub(super) type Scanned = (Vec<SourceInfo>, BySource, Vec<ReadNote>);

/// A plain file smaller than a block is read into a buffer of its own size: the scan
/// zero-fills each block it reads into, and for a run of hundreds of small files (one
/// directory per node) 4 MiB per file was most of the time.
fn block_for(opts: &LoadOptions, sf: &SourceFile) -> LoadOptions {
    let mut o = opts.clone();
    if let (Some(source::Compression::None), Some(size)) = (sf.compression, sf.size) {
        let fits = usize::try_from(size.saturating_add(1)).unwrap_or(usize::MAX);
        o.block_size = o.block_size.min(fits.max(4096));
    }
    o
}

/// Scans the logs in parallel, source `i` being `logs[i]`: their line accounting, their
/// events, and notes on files skipped.
pub(super) fn scan_logs(
    gs: &GrammarSet,
    logs: &[&SourceFile],
    opts: &LoadOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<Scanned, LoadError> {
    // In a run directory a file that cannot be opened or is binary is skipped with a
    // note, and the other files still make the run; named alone it is an error.
    let single = logs.len() == 1;
    let limits = EventBudgetLimits::for_files(logs.len());
    let budget = scan::EventBudget::of(&limits);
    let mut sources = Vec::with_capacity(logs.len());
    let mut events = BySource::default();
    let mut skipped = 0;
    let mut dropped = Dropped::default();
    let mut notes: Vec<ReadNote> = Vec::new();
    // The run's own pool unless the caller shares one with other runs (`diff`).
    let own_texts = super::SharedTexts::default();
    let texts = opts.texts.as_deref().unwrap_or(&own_texts);
    // Files are scanned a batch at a time and each batch's events appended to the run's
    // one vector as it finishes: the batch's per-file vectors are freed before the next
    // batch's are made, so their memory is used again rather than held until the end.
    let batch = (rayon::current_num_threads() * SCAN_BATCH_PER_THREAD).max(1);
    for (first, chunk) in (0..).step_by(batch).zip(logs.chunks(batch)) {
        // Read here, on the scanning threads, not after the batch on one.
        let scans: Vec<Result<(FileScan, RanksSeen), LoadError>> =
            crate::base::pool::map_indexed(chunk, |j, sf| {
                let i = first + j;
                let scan = match &opts.given {
                    Some(given) => Ok(given_scan(given, i, sf)),
                    None => scan_file(gs, i, sf, opts, &budget, progress),
                };
                scan.map(|f| {
                    let ranks = ranks_seen(gs, &f.scan.prefixes_seen);
                    (f, ranks)
                })
            });
        for (sf, scan) in chunk.iter().zip(scans) {
            let (scan, ranks) = match scan {
                Ok((f, ranks)) => {
                    notes.extend(read_notes(sf, &f));
                    dropped.add(sf, &f.scan);
                    (f.scan, ranks)
                }
                Err(e) if !single => {
                    notes.push(ReadNote::Skipped {
                        error: e.to_string(),
                    });
                    skipped += 1;
                    (SourceScan::default(), Vec::new())
                }
                Err(e) => return Err(e),
            };
            let (info, mut evs) = source_info_with(sf.display(), scan, ranks);
            texts.intern_all(&mut evs);
            if events.0.is_empty() {
                // One file's vector is taken as it is (a single log: no copy at all).
                std::mem::swap(&mut events.0, &mut evs);
            } else {
                events.0.append(&mut evs);
            }
            sources.push(info);
        }
    }
    notes.extend(dropped.note(limits));
    if skipped > 0 && skipped == logs.len() {
        return Err(LoadError::NothingRead {
            path: logs
                .first()
                .and_then(|f| f.path.parent())
                .map(crate::base::text::shown_path)
                .unwrap_or_default(),
            notes: words::read_notes_joined(&notes),
        });
    }
    Ok((sources, events, notes))
}

/// An nvidia-smi CSV up to [`source::limits::MAX_CSV`] bytes, and whether it was cut.
pub(super) fn read_csv(sf: &SourceFile) -> std::io::Result<(Vec<u8>, bool)> {
    let f = std::fs::File::open(&sf.path)?;
    let mut bytes = Vec::new();
    f.take(source::limits::MAX_CSV + 1)
        .read_to_end(&mut bytes)?;
    let cut = bytes.len() as u64 > source::limits::MAX_CSV;
    bytes.truncate(source::limits::MAX_CSV as usize);
    Ok((bytes, cut))
}

/// Reads the nvidia-smi CSVs and attaches their timelines to the run, each moved by its
/// node's clock correction (milliseconds to add to its stamps).
pub(super) fn attach_nvsmi(run: &mut Run, smi: &[(&SourceFile, i64)], notes: &mut Vec<ReadNote>) {
    for &(sf, shift_ms) in smi {
        match read_csv(sf) {
            Ok((bytes, cut)) => {
                if cut {
                    notes.push(ReadNote::CsvCut {
                        path: sf.display(),
                        limit: source::limits::MAX_CSV,
                    });
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
                    notes.push(ReadNote::CsvNotUnderstood {
                        path: sf.display(),
                        lines: t.lines_not_understood,
                    });
                }
                run.gpus
                    .extend(model::GpuMemory::from_nvsmi(&sf.display(), &t, run.start));
                let procs =
                    model::GpuProcess::from_nvsmi(&sf.display(), &t, run.start, &run.events);
                run.gpu_processes.extend(procs);
            }
            Err(e) => notes.push(ReadNote::CsvUnreadable {
                path: sf.display(),
                error: e.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn two_runs_read_with_one_pool_share_their_equal_lines() {
        let gs = GrammarSet::builtin().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let line = "[2026-12-08 10:00:09 TP0] Load weight end. type=LlamaForCausalLM, \
                    dtype=torch.bfloat16, avail mem=63.52 GB, mem usage=15.52 GB.\n";
        std::fs::write(dir.path().join("rank0.log"), line).unwrap();
        let paths = [dir.path().to_path_buf()];
        let load = |opts: &crate::session::LoadOptions| {
            let s = crate::session::Session::open(&gs, &paths, opts, &|_, _| {}).unwrap();
            let e = (s.run.events.iter())
                .find(|e| &*e.kind == "weight_load_end")
                .cloned()
                .unwrap();
            (e.message, e.fields)
        };
        let shared = crate::session::LoadOptions {
            texts: Some(std::sync::Arc::new(crate::session::SharedTexts::default())),
            ..Default::default()
        };
        let (a, b) = (load(&shared), load(&shared));
        assert!(a.0.ptr_eq(&b.0) && a.1.ptr_eq(&b.1));
        // Each with a pool of its own, as every command but `diff` reads.
        let own = crate::session::LoadOptions::default();
        let (c, d) = (load(&own), load(&own));
        assert!(!c.0.ptr_eq(&d.0) && !c.1.ptr_eq(&d.1));
        assert_eq!((c.0.as_str(), &c.1), (a.0.as_str(), &a.1));
    }

    #[test]
    fn the_same_line_in_two_rank_files_is_one_message_and_one_set_of_fields() {
        let gs = GrammarSet::builtin().unwrap();
        let dir = tempfile::tempdir().unwrap();
        // TP0 and TP1 print the same weight-load end; TP1's distributed init ends at
        // another figure.
        for (rank, init) in [(0, "0.60"), (1, "0.61")] {
            let text = format!(
                "[2026-12-08 10:00:01 TP{rank}] Init torch distributed ends. mem usage={init} GB\n\
                 [2026-12-08 10:00:09 TP{rank}] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.52 GB, mem usage=15.52 GB.\n"
            );
            std::fs::write(dir.path().join(format!("rank{rank}.log")), text).unwrap();
        }
        let opts = crate::session::LoadOptions::default();
        let session =
            crate::session::Session::open(&gs, &[dir.path().to_path_buf()], &opts, &|_, _| {})
                .unwrap();
        let of = |kind: &str| -> Vec<&Event> {
            let evs: Vec<&Event> = (session.run.events.iter())
                .filter(|e| &*e.kind == kind)
                .collect();
            assert_eq!(evs.len(), 2, "{kind}: one event a rank");
            evs
        };
        let load = of("weight_load_end");
        assert!(load[0].message.ptr_eq(&load[1].message));
        assert!(load[0].fields.ptr_eq(&load[1].fields));
        // 15.52 GB, GB being GiB: 15 × 1,073,741,824 + 0.52 × 1,073,741,824
        // = 16,106,127,360 + 558,345,748.48.
        assert_eq!(
            load[1]
                .fields
                .get("mem_usage_bytes")
                .and_then(crate::base::fields::FieldValue::as_bytes),
            Some(16_664_473_108)
        );
        let init = of("dist_init_end");
        assert!(!init[0].message.ptr_eq(&init[1].message));
        assert!(!init[0].fields.ptr_eq(&init[1].fields));
        assert!(init[1].message.ends_with("mem usage=0.61 GB"));
    }

    /// `read_listed` of a file holding `held` bytes, listed at `listed`, read up to `limit`.
    fn read_file(held: &[u8], listed: u64, limit: u64) -> (Vec<u8>, bool) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(held).unwrap();
        let file = std::fs::File::open(f.path()).unwrap();
        // A buffer that held more before: only what this file holds is left in it.
        let mut bytes = vec![b'#'; 70_000];
        let stop = read_listed(file, listed, limit, &mut bytes);
        (bytes, stop.is_some())
    }

    #[test]
    fn a_listed_file_is_read_whole_whether_it_kept_grew_or_shrank_since() {
        let text: Vec<u8> = (0..40_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        // As listed, then grown by 1 and by 30,000 bytes since: all of it, to the limit.
        assert_eq!(read_file(&text, 40_000, 1 << 20), (text.clone(), false));
        assert_eq!(read_file(&text, 39_999, 1 << 20), (text.clone(), false));
        assert_eq!(read_file(&text, 10_000, 1 << 20), (text.clone(), false));
        // Shrunk since it was listed: what it holds.
        assert_eq!(read_file(&text, 50_000, 1 << 20), (text.clone(), false));
        // The limit binds: that many bytes (the caller tells a file grown past it so).
        assert_eq!(read_file(&text, 10_000, 20_001).0, text[..20_001].to_vec());
        assert_eq!(read_file(&text, 40_000, 30_000).0, text[..30_000].to_vec());
        // Empty, listed so or not.
        assert_eq!(read_file(b"", 0, 1 << 20), (Vec::new(), false));
        assert_eq!(read_file(b"x", 0, 1 << 20), (b"x".to_vec(), false));
    }
}
