//! The buffer scan: bytes in, typed events and line accounting out.
//!
//! Start-up events are a few hundred lines in files that may hold gigabytes of request
//! traffic, so the scan never runs a regex per line. Each block of whole lines is searched
//! once for every grammar literal (one Aho-Corasick pass); only lines that hit are cleaned,
//! split and matched. Every other line costs a newline search and an anchored look at its
//! first bytes, which is enough to count it as a record, noise, a continuation or unknown.
//! Blocks are scanned in parallel and merged in order; what crosses a block boundary (a
//! traceback, the record an unprefixed line belongs to) is settled in the merge.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::base::event::Event;
use crate::base::text::clean_line;
use crate::grammar::GrammarSet;

mod block;
mod feed;
mod hits;
mod identity;
mod line_ends;
#[cfg(target_os = "linux")]
mod mapped;
mod merge;
mod parallel;
#[cfg(unix)]
mod positional;
mod printed_dates;
mod reader;
mod shape;
mod traceback;

use block::{scan_block, BlockScan};
use merge::{Context, Merger};
use reader::{Block, BlockReader};

pub(crate) use feed::LineFeed;
pub(crate) use reader::read_full;

/// Bytes per block. Memory held at once is about `threads × 2 + 2` blocks (those being
/// scanned or merged and the one read ahead of them: `scan_stream`) plus the events
/// each block holds (bounded per block: see `block`). A block is searched in passes (the
/// prefilter over all of it, then its lines walked, each line's noise search), so a
/// block that stays in the processor's cache between passes is the fast size: 1 MiB
/// blocks took 5 % less CPU than 4 MiB ones on the shared 256 MiB log at one thread,
/// 7 % less and 9 % less wall time at two, with 25 MiB resident instead of 42
/// (docs/performance.md). Smaller ones gained no more.
pub(crate) const DEFAULT_BLOCK: usize = 1 << 20;
/// Cap on the continuation text kept with one event (a traceback).
const MAX_DETAIL: usize = 64 << 10;
/// Unknown lines kept as examples for the report.
const MAX_UNKNOWN_SAMPLES: usize = 8;

/// What a run keeps at most (docs/reliability.md). A start-up is a few hundred events;
/// these limits are far above that and only bind on floods (request traffic that
/// matches an event, a file of one repeated line). Past a limit the scan still reads and
/// counts every line; events it does not keep are counted by kind and said in the notes.
pub mod budget {
    /// Events kept in one run, over all its files, when it has fewer than 2,048 files.
    pub(crate) const EVENTS_PER_RUN: u64 = 131_072;
    /// Bytes of event text (messages and tracebacks) kept in one run of fewer than 2,048
    /// files.
    pub(crate) const EVENT_TEXT_PER_RUN: u64 = 32 << 20;
    /// Events and bytes of their text a run of more files keeps per file: a fleet's rank
    /// files, each a start-up of tens of events, are kept whole. With the run's limit
    /// alone, 10,083 of 16,384 `mkranks.py` rank files (13 events each) were kept and the
    /// other 6,301 ranks were left out of every phase and of the straggler test.
    pub(crate) const EVENTS_PER_FILE: u64 = 64;
    pub(crate) const EVENT_TEXT_PER_FILE: u64 = 16 << 10;
    /// Times one file keeps the same event kind for the same rank.
    pub const SAME_EVENT_PER_SOURCE: u32 = 1_024;
    /// Past the run's budget a file still keeps the first event of each kind for each
    /// rank (and process) in each start-up, up to `FIRST_OF_KIND_PER_FILE` a file and
    /// `FIRST_OF_KIND_PAST_BUDGET` a run: a flood is one kind repeated (NCCL's `env`
    /// lines at INFO level, `Exception in …` lines, traffic that matches an event),
    /// while a rank's phases and its failure are one event of each kind. With the budget
    /// alone, 600 rank files of 254 events (250 of them `env` lines) kept the first 516
    /// ranks' events, and the last rank's OOM was dropped: the run read INCOMPLETE. Each
    /// such event keeps its message cut to `FIRST_OF_KIND_MESSAGE_MAX` bytes and its
    /// traceback only within the text budget. The per-file limit is a fleet's rank file
    /// (a few dozen kinds for a few processes), not a single stream of 100,000 workers,
    /// whose ranks past the budget stay out as before (docs/reliability.md, D11).
    pub(crate) const FIRST_OF_KIND_PAST_BUDGET: u64 = 65_536;
    pub(crate) const FIRST_OF_KIND_PER_FILE: u64 = 256;
    pub(crate) const FIRST_OF_KIND_MESSAGE_MAX: usize = 1_024;
}

/// The run-wide event budget, shared by the parallel scans of a run's files (which of
/// them meets a spent budget first depends on timing; the notes say what was dropped).
#[derive(Debug)]
pub struct EventBudget {
    events_left: AtomicU64,
    text_left: AtomicU64,
    /// Events still to keep past the budget, each the first of its kind for its rank in
    /// its file (`budget::FIRST_OF_KIND_PAST_BUDGET`).
    first_of_kind_left: AtomicU64,
}

impl EventBudget {
    pub(crate) fn new(events: u64, text_bytes: u64) -> Self {
        EventBudget {
            events_left: AtomicU64::new(events),
            text_left: AtomicU64::new(text_bytes),
            first_of_kind_left: AtomicU64::new(budget::FIRST_OF_KIND_PAST_BUDGET),
        }
    }

    /// True once the run's budget of events is spent: past it only the first event of a
    /// kind for a rank may still be kept, from the reserve (`reserve_is_spent`).
    pub(crate) fn is_spent(&self) -> bool {
        self.events_left.load(Ordering::Relaxed) == 0
    }

    /// True once no event can be kept, not even the first of its kind.
    pub(crate) fn reserve_is_spent(&self) -> bool {
        self.first_of_kind_left.load(Ordering::Relaxed) == 0
    }

    /// Takes room past the run's budget for the first event of its kind for its rank.
    pub(crate) fn take_first_of_kind(&self) -> bool {
        take_from(&self.first_of_kind_left, 1)
    }

    /// Takes room for more text of an event already kept.
    pub(crate) fn take_text(&self, n: u64) -> bool {
        take_from(&self.text_left, n)
    }

    /// Takes room for one event of `text` bytes; false when the run's budget is spent.
    pub(crate) fn take(&self, text: u64) -> bool {
        if !take_from(&self.events_left, 1) {
            return false;
        }
        if !take_from(&self.text_left, text) {
            self.events_left.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }
}

/// Takes `n` from what is `left`, if that much is; the parallel scans of a run's files
/// take from the same counters.
fn take_from(left: &AtomicU64, n: u64) -> bool {
    left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(n))
        .is_ok()
}

impl Default for EventBudget {
    fn default() -> Self {
        EventBudget::of(&crate::model::notes::EventBudgetLimits::default())
    }
}

impl EventBudget {
    /// A budget of these limits.
    pub(crate) fn of(limits: &crate::model::notes::EventBudgetLimits) -> Self {
        EventBudget::new(limits.events_per_run, limits.text_bytes_per_run)
    }
}

/// Why reading a source stopped before its end: a read or decompression error, or a
/// limit. Everything decoded before it was scanned and is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReadStop {
    /// Bytes of (decompressed) text read before the stop.
    pub(crate) offset: u64,
    pub(crate) reason: crate::ingest::source::StopReason,
}

impl ReadStop {
    /// The stop a read error made after `offset` bytes.
    pub(crate) fn after(offset: u64, e: &io::Error) -> ReadStop {
        ReadStop {
            offset,
            reason: crate::ingest::source::StopReason::of(e),
        }
    }
}

/// How the lines of a source were understood. `unknown` is the count the user is shown:
/// lines that no grammar recognised as a record, noise or a continuation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineCounts {
    /// Physical lines read.
    pub lines: u64,
    /// Lines that became events (a grammar's event matched).
    pub events: u64,
    /// Lines recognised as records by a grammar's prefix.
    pub records: u64,
    /// Lines read as part of the record before them (a traceback, a wrapped message).
    pub continuation: u64,
    /// Lines a grammar declares noise.
    pub noise: u64,
    /// Empty lines.
    pub blank: u64,
    /// Lines no grammar recognised: the count the user is shown.
    pub unknown: u64,
    /// Physical lines longer than a block, split to keep memory bounded.
    pub split_long_lines: u64,
}

impl LineCounts {
    pub(crate) fn add(&mut self, o: &LineCounts) {
        self.lines += o.lines;
        self.events += o.events;
        self.records += o.records;
        self.continuation += o.continuation;
        self.noise += o.noise;
        self.blank += o.blank;
        self.unknown += o.unknown;
        self.split_long_lines += o.split_long_lines;
    }
}

/// A line no grammar recognised, kept as a sample for the notes.
#[derive(Clone, Debug, PartialEq)]
pub struct UnknownLine {
    /// 1-based line number in its source.
    pub line: u64,
    /// The line's text, sanitised.
    pub text: String,
}

/// Everything one source gave.
#[derive(Clone, Debug, Default)]
pub struct SourceScan {
    /// The events the source's lines gave, in line order.
    pub events: Vec<Event>,
    /// How its lines were understood.
    pub counts: LineCounts,
    /// The first lines no grammar recognised (a few, not all).
    pub unknown_samples: Vec<UnknownLine>,
    /// The last line had no newline: the text of that cut line (shortened).
    pub cut_last_line: Option<String>,
    /// Captures dropped from the cut last line, as `kind.field`.
    pub cut_fields: Vec<String>,
    pub(crate) bytes: u64,
    /// Grammar families whose prefixes the first lines show.
    pub(crate) detected: Vec<String>,
    /// Events recognised but not kept, past a budget: how many of each kind. They are
    /// counted in `counts.events` like the kept ones.
    pub dropped_events: BTreeMap<String, u64>,
    /// Events kept past the budget, each the first of its kind for its rank, shortened
    /// (`budget::FIRST_OF_KIND_PAST_BUDGET`).
    pub(crate) kept_past_budget: u64,
    /// Set when reading stopped before the end of the input.
    pub(crate) read_stop: Option<ReadStop>,
    /// Events whose prefix did not read: a stamp that is no date or time (kept, untimed)
    /// and a rank number too large to be one (not kept).
    pub(crate) bad_stamps: PrefixTrouble,
    pub(crate) bad_ranks: PrefixTrouble,
    /// More distinct rank-naming prefixes than `MAX_SEEN_PREFIXES`: the first line whose
    /// prefix was not kept (a rank named only past it is not counted).
    pub(crate) prefixes_not_kept: Option<u64>,
    /// Every distinct rank-naming prefix seen on a record line (`[… DP1 TP3]`,
    /// `(Worker_TP3 pid=…)`), with its first line's text and its last line: a rank whose
    /// lines give no event still exists.
    pub(crate) prefixes_seen: Vec<SeenPrefix>,
    /// Whole dates the source printed before its stamps that print none (line, stamp),
    /// in line order: what dates those stamps first (`session::dates`).
    pub(crate) dated_lines: Vec<(u64, chrono::NaiveDateTime)>,
}

/// How many event lines had one kind of unreadable prefix, and the first of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PrefixTrouble {
    pub(crate) lines: u64,
    /// The first line's number and what did not read in it.
    pub(crate) first: Option<(u64, String)>,
}

impl PrefixTrouble {
    pub(crate) fn add(&mut self, line: u64, what: &str) {
        self.lines += 1;
        if self.first.is_none() {
            self.first = Some((line, what.to_string()));
        }
    }
}

/// A prefix identity of record lines: where it first and last appeared.
#[derive(Clone, Debug)]
pub(crate) struct SeenPrefix {
    /// The first line that carried it, cleaned (its prefix is parsed once, by the loader).
    pub(crate) text: String,
    pub(crate) first_line: u64,
    pub(crate) last_line: u64,
}

impl SourceScan {}

/// Identity bytes → where they were seen. Looked up on every record line, so hashed
/// with foldhash instead of SipHash, which was a few percent of a scan. foldhash's
/// `RandomState` seeds per process, so input cannot be made of keys that collide
/// everywhere; a flood of distinct keys is bounded by `MAX_SEEN_PREFIXES` anyway.
type PrefixMap = HashMap<Vec<u8>, SeenPrefix, foldhash::fast::RandomState>;

/// Distinct prefix identities kept per source: far more ranks and processes than any
/// server has (100,000 ranks are counted whole), and a bound for input made of ever-new
/// `(…)` lines; past it, a note says from which line ranks were not counted.
pub const MAX_SEEN_PREFIXES: usize = 131_072;

/// Adds lines joined by `\n` (a block's text of a traceback) one by one, as the block
/// added them: the cap applies per line, and an empty line (vLLM's prefix alone) counts.
fn push_detail_lines(detail: &mut String, lines: &str) {
    for line in lines.split('\n') {
        push_detail(detail, line);
    }
}

fn push_detail(detail: &mut String, line: &str) {
    if detail.len() + line.len() < MAX_DETAIL {
        if !detail.is_empty() {
            detail.push('\n');
        }
        detail.push_str(line);
    }
}

/// Scans a byte stream with bounded memory: blocks of whole lines, scanned in parallel
/// and merged in order (`scan_stream`). A read error ends the scan like
/// the end of the input would, and is returned with what was read before it.
pub fn scan_reader<R: Read + Send>(
    gs: &GrammarSet,
    source: usize,
    reader: R,
    block_size: usize,
    progress: impl FnMut(u64) + Send,
) -> io::Result<SourceScan> {
    let budget = EventBudget::default();
    without_stop(scan_stream(
        gs, source, reader, block_size, &budget, progress,
    ))
}

/// [`scan_reader`] of a regular file, scanned in place (`scan_file_at`: its blocks are
/// ranges of the file mapped into memory, or read at their offsets where it cannot be
/// mapped): the same events, counts and notes. A read error ends the scan as the file's
/// end would, and is returned with what was read before it.
#[cfg(unix)]
pub fn scan_file(
    gs: &GrammarSet,
    source: usize,
    file: &std::fs::File,
    block_size: usize,
    progress: impl FnMut(u64) + Send,
) -> io::Result<SourceScan> {
    let budget = EventBudget::default();
    let s = scan_file_at(gs, source, file, block_size, &budget, None, progress);
    without_stop(s)
}

/// [`scan_file`] with the blocks read at their offsets, never mapped: what it falls back
/// to for a file that cannot be mapped or was cut while mapped.
#[cfg(unix)]
pub fn scan_file_read_at_offsets(
    gs: &GrammarSet,
    source: usize,
    file: &std::fs::File,
    block_size: usize,
    mut progress: impl FnMut(u64) + Send,
) -> io::Result<SourceScan> {
    let budget = EventBudget::default();
    let blocks = positional::FileBlocks::new(file, block_size);
    let s = scan_claimed(gs, source, &budget, blocks, None, &mut progress);
    without_stop(s)
}

/// A scan whose read stopped at an error as that error, else the scan.
fn without_stop(mut s: SourceScan) -> io::Result<SourceScan> {
    match s.read_stop.take() {
        Some(stop) => Err(stop.reason.into_io_error()),
        None => Ok(s),
    }
}

/// [`scan_reader`] within a run's event budget, keeping what was read before a read
/// error (in `read_stop`).
///
/// An input longer than one block is scanned as it is read (`parallel::blocks_as_read`);
/// at one thread, or an input of one block, each block is scanned and merged in turn on
/// this thread.
pub(crate) fn scan_stream<R: Read + Send>(
    gs: &GrammarSet,
    source: usize,
    reader: R,
    block_size: usize,
    budget: &EventBudget,
    mut progress: impl FnMut(u64) + Send,
) -> SourceScan {
    let mut merger = Merger::new(gs, source, budget);
    let mut blocks = BlockReader::new(reader, block_size);
    // One block first: whether there is more decides how the rest is scanned, and the
    // pool's threads wait for no more than one block's read to start.
    let first = blocks.next_batch(1);
    if let Some(head) = first.first() {
        merger.out.detected = detect_head(gs, head.bytes());
    }
    let threads = rayon::current_num_threads();
    if blocks.at_end() || threads < 2 {
        let mut next = first;
        while !next.is_empty() {
            for b in &next {
                merge_block(&mut merger, scan_one(gs, budget, b), b);
            }
            blocks.recycle(next);
            progress(blocks.total());
            next = blocks.next_batch(1);
        }
    } else {
        let read = blocks.total();
        let first = (first.into_iter().next()).map(|block| parallel::Filled {
            block,
            read,
            last: None,
        });
        (blocks, _) =
            parallel::blocks_as_read(gs, budget, &mut merger, blocks, first, &mut progress, None);
    }
    merger.out.counts.split_long_lines += blocks.split_long_lines();
    if let Some(stop) = blocks.take_stop() {
        merger.out.read_stop = Some(stop);
    }
    let total = blocks.total();
    merger.finish(total)
}

fn scan_one(gs: &GrammarSet, budget: &EventBudget, b: &Block) -> BlockScan {
    let mut r = scan_block(gs, b.bytes(), b.cut_tail, budget, None);
    r.ends_inside_line = b.inside_line;
    r
}

fn merge_block(merger: &mut Merger, r: BlockScan, b: &Block) {
    if b.cut_tail {
        merger.out.cut_last_line = Some(cut_last_line(b.bytes()));
    }
    merger.push_block(r, b.bytes(), b.cut_tail);
}

/// Scans a plain regular file longer than a block on the pool's threads: its blocks are
/// ranges of the file mapped into memory (`mapped`), or, where it cannot be mapped, read at
/// their offsets (`positional`) as they are claimed, by every scanning thread at once:
/// what [`scan_stream`] gives of its bytes. `hasher` is fed the file's bytes in order, as
/// far as they were read: a read error is in `read_stop`, and a file cut shorter while read
/// ends where it was cut (`bytes`). A mapped file cut while scanned (a page of it read as
/// zeros: `ingest::mapped_file`) is scanned again by reading it, and only that scan counts.
#[cfg(unix)]
pub(crate) fn scan_file_at(
    gs: &GrammarSet,
    source: usize,
    file: &std::fs::File,
    block_size: usize,
    budget: &EventBudget,
    mut hasher: Option<&mut twox_hash::XxHash3_64>,
    mut progress: impl FnMut(u64) + Send,
) -> SourceScan {
    #[cfg(target_os = "linux")]
    if let Some(map) = crate::ingest::mapped_file::MappedFile::new(file) {
        let map = std::sync::Arc::new(map);
        let blocks = mapped::MappedBlocks::new(std::sync::Arc::clone(&map), block_size);
        let hash = hasher.as_deref_mut();
        let scan = scan_claimed(gs, source, budget, blocks, hash, &mut progress);
        if !map.faulted() {
            return scan;
        }
        if let Some(h) = hasher.as_deref_mut() {
            *h = crate::ingest::stream::content_hasher();
        }
    }
    let blocks = positional::FileBlocks::new(file, block_size);
    scan_claimed(gs, source, budget, blocks, hasher, &mut progress)
}

/// Scans the blocks of `blocks` from the first on, as [`scan_file_at`] describes.
#[cfg(unix)]
fn scan_claimed<S: parallel::BlockSource>(
    gs: &GrammarSet,
    source: usize,
    budget: &EventBudget,
    mut blocks: S,
    hasher: Option<&mut twox_hash::XxHash3_64>,
    progress: &mut (impl FnMut(u64) + Send),
) -> SourceScan {
    let mut merger = Merger::new(gs, source, budget);
    let first = blocks.claim().map(S::fill);
    if let Some(head) = &first {
        merger.out.detected = detect_head(gs, head.block.bytes());
    }
    let (blocks, read) =
        parallel::blocks_as_read(gs, budget, &mut merger, blocks, first, progress, hasher);
    merger.out.counts.split_long_lines += blocks.split_long_lines();
    merger.finish(read)
}

/// Scans a source held whole in memory as one block, as [`scan_stream`] scans an input
/// that fits in one block (the same events, counts and notes), without copying it into
/// block buffers: a run of thousands of small rank files reads each into one buffer.
pub(crate) fn scan_whole(
    gs: &GrammarSet,
    source: usize,
    bytes: &[u8],
    budget: &EventBudget,
    mut progress: impl FnMut(u64),
) -> SourceScan {
    let mut merger = Merger::new(gs, source, budget);
    if bytes.is_empty() {
        return merger.finish(0);
    }
    let cut_tail = bytes.last() != Some(&b'\n');
    let r = scan_block(gs, bytes, cut_tail, budget, None);
    if cut_tail {
        merger.out.cut_last_line = Some(cut_last_line(bytes));
    }
    merger.push(r);
    progress(bytes.len() as u64);
    let mut out = merger.finish(bytes.len() as u64);
    // The families a file's lines look like are said only of a run with no start-up
    // event (`session::load`), so a file that holds one is not sniffed: in a run of
    // thousands of rank files, sniffing each was a tenth of the time.
    if !out
        .events
        .iter()
        .any(|e| gs.knowledge().is_startup_event(e))
    {
        out.detected = detect_head(gs, bytes);
    }
    out
}

/// The grammars a source's first 64 KiB look like.
fn detect_head(gs: &GrammarSet, bytes: &[u8]) -> Vec<String> {
    gs.detect(&bytes[..bytes.len().min(64 << 10)])
}

/// The start of the last line of a source that ends without a newline, for its note.
fn cut_last_line(bytes: &[u8]) -> String {
    let tail_start = memchr::memrchr(b'\n', bytes).map_or(0, |p| p + 1);
    clean_line(&bytes[tail_start..]).chars().take(120).collect()
}

/// Scans an in-memory text (tests, samples).
pub fn scan_bytes(gs: &GrammarSet, bytes: &[u8]) -> SourceScan {
    // Reading from a slice cannot fail.
    scan_reader(gs, 0, bytes, DEFAULT_BLOCK, |_| {}).unwrap_or_default()
}
