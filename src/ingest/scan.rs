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

use rayon::prelude::*;

use crate::base::event::{Event, Origin, Rank};
use crate::base::text::peel_wrapper;
use crate::base::text::{clean_line, is_blank};
use crate::grammar::{GrammarSet, LineMatch};

/// Bytes per block. Memory held at once is about `threads × 2 × BLOCK` plus the events.
pub const DEFAULT_BLOCK: usize = 4 << 20;
/// Cap on the continuation text kept with one event (a traceback).
const MAX_DETAIL: usize = 64 << 10;
/// Unknown lines kept as examples for the report.
const MAX_UNKNOWN_SAMPLES: usize = 8;
/// The first read of a source asks for this much; each further read doubles it up to
/// the block size, so a small file costs a small buffer, not a block.
const FIRST_READ: usize = 64 << 10;

/// What a run keeps at most (docs/reliability.md). A start-up is a few hundred events;
/// these limits are far above that and only bind on floods (request traffic that
/// matches an event, a file of one repeated line). Past a limit the scan still reads and
/// counts every line; events it does not keep are counted by kind and said in the notes.
pub mod budget {
    /// Events kept in one run, over all its files.
    pub const EVENTS_PER_RUN: u64 = 131_072;
    /// Bytes of event text (messages and tracebacks) kept in one run.
    pub const EVENT_TEXT_PER_RUN: u64 = 32 << 20;
    /// Times one file keeps the same event kind for the same rank.
    pub const SAME_EVENT_PER_SOURCE: u32 = 1_024;
}

/// The run-wide event budget, shared by the parallel scans of a run's files (which of
/// them meets a spent budget first depends on timing; the notes say what was dropped).
#[derive(Debug)]
pub struct EventBudget {
    events_left: AtomicU64,
    text_left: AtomicU64,
}

impl EventBudget {
    pub fn new(events: u64, text_bytes: u64) -> Self {
        EventBudget {
            events_left: AtomicU64::new(events),
            text_left: AtomicU64::new(text_bytes),
        }
    }

    /// True once no further event can be kept.
    fn is_spent(&self) -> bool {
        self.events_left.load(Ordering::Relaxed) == 0
    }

    /// Takes room for more text of an event already kept.
    fn take_text(&self, n: u64) -> bool {
        self.text_left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(n))
            .is_ok()
    }

    /// Takes room for one event of `text` bytes; false when the run's budget is spent.
    fn take(&self, text: u64) -> bool {
        let dec = |left: &AtomicU64, n: u64| {
            left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(n))
                .is_ok()
        };
        if !dec(&self.events_left, 1) {
            return false;
        }
        if !dec(&self.text_left, text) {
            self.events_left.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }
}

impl Default for EventBudget {
    fn default() -> Self {
        EventBudget::new(budget::EVENTS_PER_RUN, budget::EVENT_TEXT_PER_RUN)
    }
}

/// Why reading a source stopped before its end: a read or decompression error, or a
/// limit. Everything decoded before it was scanned and is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadStop {
    /// Bytes of (decompressed) text read before the stop.
    pub offset: u64,
    pub reason: String,
}

/// How the lines of a source were understood. `unknown` is the count the user is shown:
/// lines that no grammar recognised as a record, noise or a continuation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineCounts {
    pub lines: u64,
    pub events: u64,
    pub records: u64,
    pub continuation: u64,
    pub noise: u64,
    pub blank: u64,
    pub unknown: u64,
    /// Physical lines longer than a block, split to keep memory bounded.
    pub split_long_lines: u64,
}

impl LineCounts {
    pub fn add(&mut self, o: &LineCounts) {
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

#[derive(Clone, Debug, PartialEq)]
pub struct UnknownLine {
    pub line: u64,
    pub text: String,
}

/// Everything one source gave.
#[derive(Debug, Default)]
pub struct SourceScan {
    pub events: Vec<Event>,
    pub counts: LineCounts,
    pub unknown_samples: Vec<UnknownLine>,
    /// The last line had no newline: the text of that cut line (shortened).
    pub cut_last_line: Option<String>,
    /// Captures dropped from the cut last line, as `kind.field`.
    pub cut_fields: Vec<String>,
    pub bytes: u64,
    /// Grammar families whose prefixes the first lines show.
    pub detected: Vec<String>,
    /// Events recognised but not kept, past a budget: how many of each kind. They are
    /// counted in `counts.events` like the kept ones.
    pub dropped_events: BTreeMap<String, u64>,
    /// Set when reading stopped before the end of the input.
    pub read_stop: Option<ReadStop>,
    /// Events whose prefix did not read: a stamp that is no date or time (kept, untimed)
    /// and a rank number too large to be one (not kept).
    pub bad_stamps: PrefixTrouble,
    pub bad_ranks: PrefixTrouble,
    /// More distinct rank-naming prefixes than `MAX_SEEN_PREFIXES`: the first line whose
    /// prefix was not kept (a rank named only past it is not counted).
    pub prefixes_not_kept: Option<u64>,
    /// Every distinct rank-naming prefix seen on a record line (`[… DP1 TP3]`,
    /// `(Worker_TP3 pid=…)`), with its first line's text and its last line: a rank whose
    /// lines give no event still exists.
    pub prefixes_seen: Vec<SeenPrefix>,
}

/// How many event lines had one kind of unreadable prefix, and the first of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrefixTrouble {
    pub lines: u64,
    /// The first line's number and what did not read in it.
    pub first: Option<(u64, String)>,
}

impl PrefixTrouble {
    fn add(&mut self, line: u64, what: &str) {
        self.lines += 1;
        if self.first.is_none() {
            self.first = Some((line, what.to_string()));
        }
    }
}

/// A prefix identity of record lines: where it first and last appeared.
#[derive(Clone, Debug)]
pub struct SeenPrefix {
    /// The first line that carried it, cleaned (its prefix is parsed once, by the loader).
    pub text: String,
    pub first_line: u64,
    pub last_line: u64,
}

impl SourceScan {
    pub fn dropped_event_count(&self) -> u64 {
        self.dropped_events.values().sum()
    }
}

struct PendingEvent {
    line_in_block: u64,
    m: LineMatch,
    detail: String,
    /// No prefix and no record before it in the block: its rank comes from the record
    /// open at the end of the previous block, if any.
    inherit: bool,
    /// No prefix, inside the traceback of this event of the block: its rank comes from it.
    owner: Option<usize>,
    /// The node a wrapper in front of the line names (`peel_wrapper`).
    node: Option<String>,
}

#[derive(Default)]
struct BlockScan {
    events: Vec<PendingEvent>,
    /// Tracebacks another wrapped node's record interrupted (events' indices): in a stream
    /// that interleaves pods or compose services line by line, the rest of a traceback
    /// comes back behind its own node's wrapper.
    parked: Vec<usize>,
    counts: LineCounts,
    unknown: Vec<UnknownLine>,
    /// Lines before the block's first record start, kept apart: whether they continue a
    /// traceback depends on the previous block.
    lead_lines: u64,
    lead_text: String,
    lead_counts: LineCounts,
    lead_unknown: Vec<UnknownLine>,
    seen_record: bool,
    /// Index of the event whose traceback is still open at the end of the block.
    open_at_end: Option<usize>,
    cut_fields: Vec<String>,
    /// The block ends inside a line that the next block goes on with.
    ends_inside_line: bool,
    /// Events not kept, by kind: past the budgets already within the block (see
    /// `drop_early`), so that a flood never holds a block's worth of events.
    dropped: BTreeMap<String, u64>,
    /// Events held per (kind, rank, pid), for `drop_early`.
    same_held: HashMap<u64, u32>,
    /// Rank-naming prefixes (at most `MAX_SEEN_PREFIXES`) of record lines (key: the identity bytes), block lines.
    seen: PrefixMap,
    /// The first block line whose prefix was not kept, `seen` being full.
    prefix_overflow: Option<u64>,
    /// An unprefixed traceback printed after a record (a child's stderr: a bare
    /// `Traceback (most recent call last):` and its frames, no event opening it): its text,
    /// until the closing line's event takes it as its traceback or a record ends it.
    loose_tb: String,
}

/// The bytes of a record line's prefix that name its rank or process, found without a
/// regex: the tags after the time in `[YYYY-MM-DD HH:MM:SS DP1 TP3]`, or the name and pid
/// in `(Worker_TP3 pid=412)`. One `memchr` and a hash of a few bytes per record line, so
/// traffic lines cost almost nothing; the grammar's prefix regex runs once per new key.
fn identity_key(line: &[u8]) -> Option<&[u8]> {
    let head = &line[..line.len().min(96)];
    match head.first()? {
        b'[' => {
            let close = memchr::memchr(b']', head)?;
            let inner = &head[1..close];
            let colon = memchr::memrchr(b':', inner)?;
            let space = memchr::memchr(b' ', &inner[colon..])? + colon;
            let tags = &inner[space..];
            tags.iter().any(u8::is_ascii_digit).then_some(tags)
        }
        b'(' => {
            let close = memchr::memchr(b')', head)?;
            Some(&head[1..close])
        }
        _ => None,
    }
}

/// Identity bytes → where they were seen. Looked up on every record line, so hashed
/// with foldhash instead of SipHash, which was a few percent of a scan. foldhash's
/// `RandomState` seeds per process, so input cannot be made of keys that collide
/// everywhere; a flood of distinct keys is bounded by `MAX_SEEN_PREFIXES` anyway.
type PrefixMap = HashMap<Vec<u8>, SeenPrefix, foldhash::fast::RandomState>;

/// Distinct prefix identities kept per source: far more ranks and processes than any
/// server has (100,000 ranks are counted whole), and a bound for input made of ever-new
/// `(…)` lines; past it, a note says from which line ranks were not counted.
pub const MAX_SEEN_PREFIXES: usize = 131_072;

fn note_prefix(out: &mut BlockScan, line: &[u8], line_no: u64) {
    let Some(key) = identity_key(line) else {
        return;
    };
    let full = out.seen.len() >= MAX_SEEN_PREFIXES;
    match out.seen.get_mut(key) {
        Some(s) => s.last_line = line_no,
        None if full => {
            out.prefix_overflow.get_or_insert(line_no);
        }
        None => {
            out.seen.insert(
                key.to_vec(),
                SeenPrefix {
                    text: clean_line(&line[..line.len().min(512)]),
                    first_line: line_no,
                    last_line: line_no,
                },
            );
        }
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

/// Scans one block of whole lines. `cut_tail` says the block's last line is the cut end
/// of the input (no newline).
fn scan_block(gs: &GrammarSet, buf: &[u8], cut_tail: bool, budget: &EventBudget) -> BlockScan {
    let mut out = BlockScan::default();
    let hits = gs.literal_hits(buf);
    let mut hit_i = 0;
    let mut open_tb: Option<usize> = None;
    let mut start = 0usize;
    let mut line_no = 0u64;
    while start < buf.len() {
        let end = memchr::memchr(b'\n', &buf[start..]).map_or(buf.len(), |p| start + p);
        line_no += 1;
        let raw = &buf[start..end];
        let mut has_hit = false;
        while hit_i < hits.len() && hits[hit_i] < end {
            if hits[hit_i] >= start {
                has_hit = true;
            }
            hit_i += 1;
        }
        let is_cut = cut_tail && end == buf.len();
        if has_hit {
            scan_hit_line(gs, raw, line_no, is_cut, budget, &mut out, &mut open_tb);
        } else {
            classify_plain(gs, raw, line_no, &mut out, &mut open_tb);
        }
        start = end + 1;
    }
    out.open_at_end = open_tb;
    out.counts.lines = line_no;
    out
}

/// A physical line may hold several records separated by `\r` (progress bars glued to the
/// next record); each segment is handled as a line of its own.
fn scan_hit_line(
    gs: &GrammarSet,
    raw: &[u8],
    line_no: u64,
    is_cut: bool,
    budget: &EventBudget,
    out: &mut BlockScan,
    open_tb: &mut Option<usize>,
) {
    // Flattened logs replace newlines by ` ⏎ ` (U+23CE): those are record breaks too.
    const RETURN_SYMBOL: &[u8] = "\u{23ce}".as_bytes();
    let segments: Vec<&[u8]> = raw
        .split(|&b| b == b'\r')
        .flat_map(|s| split_on(s, RETURN_SYMBOL))
        .filter(|s| !is_blank(s))
        .collect();
    let n = segments.len();
    let mut any_event = false;
    for (si, seg) in segments.into_iter().enumerate() {
        let text = clean_line(seg);
        let candidates = gs.candidates(&text);
        let cut = is_cut && si + 1 == n;
        match gs.match_line(&text, &candidates, cut) {
            Some(m) => {
                any_event = true;
                for f in &m.cut_fields {
                    out.cut_fields.push(format!("{}.{}", m.kind, f));
                }
                let mut inherit = false;
                let mut owner = None;
                if m.prefix.is_none() {
                    resume_traceback(out, open_tb, seg);
                    if let Some(tb) = *open_tb {
                        owner = Some(tb);
                        if let Some(o) = out.events.get_mut(tb) {
                            push_detail(&mut o.detail, &text);
                        }
                    } else if !out.seen_record {
                        inherit = true;
                    }
                } else if continues_traceback(out, *open_tb, m.prefix.as_ref()) {
                    // vLLM prints every line of a traceback with the process prefix: the
                    // exception line inside it is both an event and part of the record.
                    if let Some(o) = open_tb.and_then(|tb| out.events.get_mut(tb)) {
                        let msg_start = m.prefix.as_ref().map_or(0, |p| p.message_start);
                        push_detail(&mut o.detail, text.get(msg_start..).unwrap_or(""));
                    }
                } else {
                    out.seen_record = true;
                    park_if_other_node(out, open_tb, seg);
                    *open_tb = None;
                    out.loose_tb.clear();
                }
                let opens = m.traceback;
                if drop_early(&m, budget, out) {
                    continue;
                }
                let node = peel_wrapper(seg)
                    .1
                    .map(|n| String::from_utf8_lossy(n).into_owned());
                // An input that starts mid-traceback: the frames before its closing line
                // (the block's lead lines) are that failure's traceback, and its phase;
                // after a record, the unprefixed traceback gathered since.
                let failure = matches!(
                    m.kind.as_str(),
                    crate::base::event::kind::ERROR | crate::base::event::kind::OOM
                );
                let detail = if !failure || m.prefix.is_some() || owner.is_some() {
                    String::new()
                } else if inherit {
                    out.lead_text.clone()
                } else {
                    std::mem::take(&mut out.loose_tb)
                };
                let pe = PendingEvent {
                    line_in_block: line_no,
                    m,
                    detail,
                    inherit,
                    owner,
                    node,
                };
                out.events.push(pe);
                if opens {
                    *open_tb = Some(out.events.len() - 1);
                }
            }
            None => {
                // Counted below as a plain line if no segment gave an event.
            }
        }
    }
    if any_event {
        out.counts.events += 1;
    } else {
        classify_plain(gs, raw, line_no, out, open_tb);
    }
}

/// Drops an event within its block when the merge would drop it anyway: a prefixed
/// event (its rank and pid are its own, not inherited) seen `SAME_EVENT_PER_SOURCE`
/// times already in this block, or any event once the run's budget is spent. An event
/// that opens a traceback is always held: later lines of the block refer to it.
fn drop_early(m: &LineMatch, budget: &EventBudget, out: &mut BlockScan) -> bool {
    if m.traceback {
        return false;
    }
    let Some(p) = &m.prefix else {
        return false;
    };
    if m.kind == crate::base::event::kind::SERVER_ARGS && !budget.is_spent() {
        // A configuration line starts a start-up: the cap is per start-up (see `keep`).
        out.same_held.clear();
        return false;
    }
    let key = same_key(&m.kind, p.rank.as_ref(), p.pid);
    let held = out.same_held.entry(key).or_insert(0);
    if *held >= budget::SAME_EVENT_PER_SOURCE || budget.is_spent() {
        *out.dropped.entry(m.kind.clone()).or_insert(0) += 1;
        return true;
    }
    *held += 1;
    false
}

fn classify_plain(
    gs: &GrammarSet,
    raw: &[u8],
    line_no: u64,
    out: &mut BlockScan,
    open_tb: &mut Option<usize>,
) {
    // A `\r`-separated bar glued to a record: classify by the last segment, as a terminal
    // would show it.
    let last = last_segment(raw);
    if is_blank(last) {
        if out.seen_record {
            out.counts.blank += 1;
        } else {
            out.lead_lines += 1;
            out.lead_counts.blank += 1;
        }
        return;
    }
    // Most lines start like a record: peel wrappers only when the cheap test fails.
    let plain_record = gs.starts_record(last);
    let inner = if plain_record {
        last
    } else {
        trim_wrapper(last)
    };
    let record = plain_record || gs.starts_record(inner);
    if record {
        if open_tb.is_some() {
            // Only while a traceback is open (rare) is a record's prefix parsed here: a
            // line from the same process continues it.
            let text = clean_line(last);
            let prefix = gs.find_prefix(&text, text.len());
            if continues_traceback(out, *open_tb, prefix.as_ref()) {
                out.counts.continuation += 1;
                if let Some(o) = open_tb.and_then(|tb| out.events.get_mut(tb)) {
                    let msg_start = prefix.as_ref().map_or(0, |p| p.message_start);
                    push_detail(&mut o.detail, text.get(msg_start..).unwrap_or(""));
                }
                return;
            }
        }
        park_if_other_node(out, open_tb, last);
        *open_tb = None;
        out.seen_record = true;
        out.loose_tb.clear();
        out.counts.records += 1;
        note_prefix(out, inner, line_no);
        return;
    }
    // Inside a traceback everything up to the next record belongs to it, including lines
    // that would be noise on their own (`Traceback (most recent call last):`).
    resume_traceback(out, open_tb, last);
    if let Some(tb) = *open_tb {
        out.counts.continuation += 1;
        if let Some(owner) = out.events.get_mut(tb) {
            push_detail(&mut owner.detail, &clean_line(last));
        }
        return;
    }
    if out.seen_record {
        gather_loose_traceback(out, last);
    }
    if gs.is_noise(last) {
        if out.seen_record {
            out.counts.noise += 1;
        } else {
            // Before the block's first record it may still continue a traceback of the
            // previous block (the merge decides), so its text is kept like any lead line.
            out.lead_lines += 1;
            out.lead_counts.noise += 1;
            let text = clean_line(last);
            if out.lead_text.len() + text.len() < MAX_DETAIL {
                push_detail(&mut out.lead_text, &text);
            }
        }
        return;
    }
    if !out.seen_record {
        out.lead_lines += 1;
        let text = clean_line(last);
        if out.lead_text.len() + text.len() < MAX_DETAIL {
            push_detail(&mut out.lead_text, &text);
        }
        if last.first().is_some_and(|b| b.is_ascii_whitespace()) {
            out.lead_counts.continuation += 1;
        } else {
            out.lead_counts.unknown += 1;
            if out.lead_unknown.len() < MAX_UNKNOWN_SAMPLES {
                out.lead_unknown.push(UnknownLine {
                    line: line_no,
                    text: text.chars().take(512).collect(),
                });
            }
        }
        return;
    }
    if last.first().is_some_and(|b| b.is_ascii_whitespace()) {
        out.counts.continuation += 1;
        return;
    }
    out.counts.unknown += 1;
    if out.unknown.len() < MAX_UNKNOWN_SAMPLES {
        out.unknown.push(UnknownLine {
            line: line_no,
            // An example, not the record: a few hundred bytes are enough to recognise it.
            text: clean_line(&last[..last.len().min(512)]),
        });
    }
}

/// Keeps the lines of an unprefixed traceback printed after a record: its header starts
/// it, and indented lines (frames, source lines) go on with it. Anything else is left
/// alone (a record clears it).
fn gather_loose_traceback(out: &mut BlockScan, line: &[u8]) {
    const HEADER: &[u8] = b"Traceback (most recent call last):";
    if line.starts_with(HEADER) {
        out.loose_tb.clear();
        out.loose_tb.push_str("Traceback (most recent call last):");
    } else if !out.loose_tb.is_empty() && line.first().is_some_and(|b| b.is_ascii_whitespace()) {
        push_detail(&mut out.loose_tb, &clean_line(line));
    }
}

/// The last non-blank `\r`-separated segment of a line (the whole line when it has no
/// `\r`, as nearly every line has not). `memrchr` finds the separators with SIMD: a
/// byte-at-a-time split of every traffic line was a third of scanning a large log.
fn last_segment(raw: &[u8]) -> &[u8] {
    let mut end = raw.len();
    while let Some(p) = memchr::memrchr(b'\r', &raw[..end]) {
        let seg = &raw[p + 1..end];
        if !is_blank(seg) {
            return seg;
        }
        end = p;
    }
    // The first segment, or (all segments blank) the line itself, as before.
    let first = &raw[..end];
    if is_blank(first) {
        raw
    } else {
        first
    }
}

/// A record from another wrapped node than the open traceback's does not end it: the
/// traceback is parked until a line of its own node comes back (`resume_traceback`).
fn park_if_other_node(out: &mut BlockScan, open_tb: &mut Option<usize>, line: &[u8]) {
    let Some(tb) = *open_tb else {
        return;
    };
    let Some(owner) = out.events.get(tb).and_then(|e| e.node.as_deref()) else {
        return;
    };
    if peel_wrapper(line).1.is_some_and(|n| n != owner.as_bytes()) {
        out.parked.push(tb);
    }
}

/// Before a line that continues a traceback: if its wrapper names the node of a parked
/// traceback rather than the open one's, that traceback is the open one again.
fn resume_traceback(out: &mut BlockScan, open_tb: &mut Option<usize>, line: &[u8]) {
    if out.parked.is_empty() {
        return;
    }
    let Some(node) = peel_wrapper(line).1 else {
        return;
    };
    let open_node = open_tb
        .and_then(|tb| out.events.get(tb))
        .and_then(|e| e.node.as_deref());
    if open_node.is_some_and(|n| n.as_bytes() == node) {
        return;
    }
    let Some(at) = out.parked.iter().rposition(|&i| {
        out.events
            .get(i)
            .and_then(|e| e.node.as_deref())
            .is_some_and(|n| n.as_bytes() == node)
    }) else {
        return;
    };
    let resumed = out.parked.remove(at);
    if let Some(tb) = open_tb.take() {
        out.parked.push(tb);
    }
    *open_tb = Some(resumed);
}

/// A line with a process prefix continues the open traceback when the same process wrote
/// it (vLLM repeats `(Worker_TP3 pid=7781) ERROR … [file.py:N] ` on every line).
fn continues_traceback(
    out: &BlockScan,
    open_tb: Option<usize>,
    prefix: Option<&crate::grammar::PrefixInfo>,
) -> bool {
    let Some(opener) = open_tb.and_then(|tb| out.events.get(tb)) else {
        return false;
    };
    let opener_pid = opener.m.prefix.as_ref().and_then(|p| p.pid);
    opener_pid.is_some() && prefix.and_then(|p| p.pid) == opener_pid
}

fn split_on<'a>(s: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for p in memchr::memmem::find_iter(s, sep) {
        out.push(&s[start..p]);
        start = p + sep.len();
    }
    out.push(&s[start..]);
    out
}

/// Peels what wrappers put in front of a record, for the per-line classification:
/// kubectl's `[pod/NAME/CONTAINER] ` (`logs --prefix`), docker-compose `svc-1  | `,
/// journald's `Mon DD HH:MM:SS host unit[pid]: `, a `> ` quote, a `│ ` box, an RFC 3339
/// stamp (a container runtime's, `kubectl --timestamps`, `journalctl -o short-iso`), a
/// Python-logging `… - INFO - ` wrapper. (Event lines need none of this for their prefix,
/// which is searched anywhere in the line; they take the node a wrapper names.)
fn trim_wrapper(line: &[u8]) -> &[u8] {
    peel_wrapper(line).0
}

/// What an unprefixed line takes from the record it continues.
#[derive(Clone)]
struct Context {
    rank: Option<Rank>,
    ts: Option<chrono::NaiveDateTime>,
    pid: Option<u32>,
    process: Option<String>,
    host: Option<String>,
    node: Option<String>,
    year_inferred: bool,
    time_only: bool,
}

impl Context {
    fn of(e: &Event) -> Context {
        Context {
            rank: e.rank.clone(),
            ts: e.ts,
            pid: e.pid,
            process: e.process.clone(),
            host: e.host.clone(),
            node: e.node.clone(),
            year_inferred: e.year_inferred,
            time_only: e.time_only,
        }
    }
}

/// The event whose traceback is open across a block boundary: its place in
/// `out.events` if it was kept, and its context either way.
#[derive(Clone)]
struct Carry {
    kept: Option<usize>,
    context: Context,
}

/// Merges block results in order into one source's scan.
struct Merger<'a> {
    gs: &'a GrammarSet,
    source: usize,
    out: SourceScan,
    line_base: u64,
    carry: Option<Carry>,
    budget: &'a EventBudget,
    /// Events kept per (kind, rank) in this source; only kept events enter it, so it
    /// is never larger than what the source keeps.
    same_kept: HashMap<u64, u32>,
    /// Rank-naming prefixes of the source's record lines, by identity bytes.
    seen: PrefixMap,
}

/// An event's kind, rank and pid, hashed: what "the same event" means for the per-file
/// limit (vLLM workers name no rank in their lines, so the pid tells them apart). A
/// 64-bit hash rather than the owned values: no clone per event, and a collision would
/// only let one event more or less through a limit of a thousand.
fn same_key(kind: &str, rank: Option<&Rank>, pid: Option<u32>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    kind.hash(&mut h);
    rank.hash(&mut h);
    pid.hash(&mut h);
    h.finish()
}

impl<'a> Merger<'a> {
    fn push(&mut self, b: BlockScan) {
        match &self.carry {
            Some(carry) => {
                // Inside a traceback, noise-looking lines are part of it, as within a block.
                self.out.counts.continuation += b.lead_lines - b.lead_counts.blank;
                self.out.counts.blank += b.lead_counts.blank;
                if let Some(ev) = carry.kept.and_then(|i| self.out.events.get_mut(i)) {
                    // A traceback that goes on past a block grows an event already kept:
                    // its text is charged to the run's budget as it comes.
                    if !b.lead_text.is_empty() && self.budget.take_text(b.lead_text.len() as u64) {
                        push_detail(ev.detail.get_or_insert_with(String::new), &b.lead_text);
                    }
                }
            }
            None => {
                self.out.counts.add(&b.lead_counts);
                for u in b.lead_unknown {
                    self.add_unknown(u);
                }
            }
        }
        self.out.counts.add(&b.counts);
        for u in b.unknown {
            self.add_unknown(u);
        }
        self.out.cut_fields.extend(b.cut_fields);
        for (kind, n) in b.dropped {
            *self.out.dropped_events.entry(kind).or_insert(0) += n;
        }
        // This block's events as merged: where each was kept (if it was) and its context,
        // for the unprefixed events inside its traceback.
        let mut merged: Vec<Carry> = Vec::with_capacity(b.events.len());
        for pe in b.events {
            let context = match (pe.owner, pe.inherit) {
                (Some(local), _) => merged.get(local).map(|c| c.context.clone()),
                (None, true) => self.carry.as_ref().map(|c| c.context.clone()),
                (None, false) => None,
            };
            let line = self.line_base + pe.line_in_block;
            let mut bad_rank = false;
            if let Some(p) = &pe.m.prefix {
                if let Some(e) = &p.stamp_error {
                    self.out.bad_stamps.add(line, e);
                }
                if let Some(e) = &p.rank_error {
                    self.out.bad_ranks.add(line, e);
                    bad_rank = true;
                }
            }
            let mut ev = self.to_event(pe.m, pe.line_in_block, pe.detail);
            ev.node = pe.node;
            if let Some(c) = context {
                ev.rank = c.rank;
                ev.ts = c.ts;
                ev.pid = c.pid;
                ev.process = c.process;
                ev.host = c.host;
                ev.node = c.node;
                ev.year_inferred = c.year_inferred;
                ev.time_only = c.time_only;
            }
            let context = Context::of(&ev);
            // A rank-less event would be read as the run's only rank (TP0).
            let kept = if bad_rank { None } else { self.keep(ev) };
            merged.push(Carry { kept, context });
        }
        self.carry = match b.open_at_end {
            Some(local) => merged.get(local).cloned(),
            None if b.seen_record => None,
            None => self.carry.take(),
        };
        // A block cut inside a line (one longer than a block) ends with a piece of that
        // line, and the next block starts with the rest: one line, numbered once.
        let mut block_seen: Vec<(Vec<u8>, SeenPrefix)> = b.seen.into_iter().collect();
        if self.seen.len() + block_seen.len() > MAX_SEEN_PREFIXES {
            // The bound keeps the prefixes seen first, whatever the map's order.
            block_seen.sort_unstable_by_key(|(_, s)| s.first_line);
        }
        for (key, seen) in block_seen {
            let (first, last) = (
                seen.first_line + self.line_base,
                seen.last_line + self.line_base,
            );
            let full = self.seen.len() >= MAX_SEEN_PREFIXES;
            match self.seen.get_mut(&key) {
                Some(s) => s.last_line = last,
                None if full => self.overflow_at(first),
                None => {
                    self.seen.insert(
                        key,
                        SeenPrefix {
                            text: seen.text,
                            first_line: first,
                            last_line: last,
                        },
                    );
                }
            }
        }
        if let Some(l) = b.prefix_overflow {
            self.overflow_at(l + self.line_base);
        }
        self.line_base += b.counts.lines.saturating_sub(u64::from(b.ends_inside_line));
    }

    fn overflow_at(&mut self, line: u64) {
        let first = self.out.prefixes_not_kept.get_or_insert(line);
        *first = (*first).min(line);
    }

    /// Keeps an event if the budgets allow; returns its index in `out.events`.
    fn keep(&mut self, ev: Event) -> Option<usize> {
        // A configuration line starts a start-up, and a crash loop appends thousands of
        // start-ups to one file: the same-event cap counts within a start-up, so the last
        // start-ups keep their events (a cap per file kept the first 1,024 and paired the
        // last one's end with an earlier one's begin). Configuration lines themselves
        // are bounded by the run's budgets.
        let config = ev.kind == crate::base::event::kind::SERVER_ARGS;
        if config {
            self.same_kept.clear();
        }
        let key = same_key(&ev.kind, ev.rank.as_ref(), ev.pid);
        let same = self.same_kept.get(&key).copied().unwrap_or(0);
        let text = (ev.message.len() + ev.detail.as_ref().map_or(0, |d| d.len())) as u64;
        if (!config && same >= budget::SAME_EVENT_PER_SOURCE) || !self.budget.take(text) {
            *self.out.dropped_events.entry(ev.kind).or_insert(0) += 1;
            return None;
        }
        self.same_kept.insert(key, same + 1);
        self.out.events.push(ev);
        Some(self.out.events.len() - 1)
    }

    fn add_unknown(&mut self, mut u: UnknownLine) {
        if self.out.unknown_samples.len() < MAX_UNKNOWN_SAMPLES {
            u.line += self.line_base;
            self.out.unknown_samples.push(u);
        }
    }

    fn to_event(&self, m: LineMatch, line_in_block: u64, detail: String) -> Event {
        let grammar = self
            .gs
            .grammars
            .get(m.grammar)
            .map(|g| g.spec.id.clone())
            .unwrap_or_default();
        let (ts, year_inferred, time_only, rank, pid, process, host) = match &m.prefix {
            Some(p) => (
                p.ts,
                p.date_inferred,
                p.time_only,
                p.rank.clone(),
                p.pid,
                p.process.clone(),
                p.host.clone(),
            ),
            None => (None, false, false, None, None, None, None),
        };
        Event {
            origin: Origin {
                source: self.source,
                line: self.line_base + line_in_block,
            },
            ts,
            year_inferred,
            time_only,
            rank,
            pid,
            process,
            host,
            node: None,
            kind: m.kind,
            grammar,
            fields: m.fields,
            message: m.message,
            detail: if detail.is_empty() {
                None
            } else {
                Some(detail)
            },
        }
    }
}

/// Scans a byte stream with bounded memory: blocks of whole lines are read in batches,
/// each batch scanned in parallel and merged in order. A read error ends the scan like
/// the end of the input would, and is returned with what was read before it.
pub fn scan_reader<R: Read>(
    gs: &GrammarSet,
    source: usize,
    reader: R,
    block_size: usize,
    progress: impl FnMut(u64),
) -> io::Result<SourceScan> {
    let mut s = scan_stream(
        gs,
        source,
        reader,
        block_size,
        &EventBudget::default(),
        progress,
    );
    match s.read_stop.take() {
        Some(stop) => Err(io::Error::other(stop.reason)),
        None => Ok(s),
    }
}

/// [`scan_reader`] within a run's event budget, keeping what was read before a read
/// error (in `read_stop`).
pub fn scan_stream<R: Read>(
    gs: &GrammarSet,
    source: usize,
    mut reader: R,
    block_size: usize,
    budget: &EventBudget,
    mut progress: impl FnMut(u64),
) -> SourceScan {
    let block_size = block_size.max(4096);
    let batch = rayon::current_num_threads().max(1) * 2;
    let mut merger = Merger {
        gs,
        source,
        out: SourceScan::default(),
        line_base: 0,
        carry: None,
        budget,
        same_kept: HashMap::new(),
        seen: PrefixMap::default(),
    };
    // Blocks are filled in buffers that are used again for the next batch: a fresh
    // buffer per block was zero-filled by the allocator and the kernel every time. A
    // buffer's bytes up to its `len()` are initialised once and then only overwritten;
    // `Chunk::len` says how many of them hold input.
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut pending = Chunk::default();
    let mut eof = false;
    let mut total = 0u64;
    let mut read_size = FIRST_READ.min(block_size);
    while !eof || pending.len > 0 {
        let mut blocks: Vec<(Chunk, bool, bool)> = Vec::with_capacity(batch);
        while blocks.len() < batch && !(eof && pending.len == 0) {
            while !eof && pending.len < block_size {
                let old = pending.len;
                let want = read_size.min(block_size - old);
                read_size = (read_size * 2).min(block_size);
                if pending.buf.len() < old + want {
                    pending.buf.resize(old + want, 0);
                }
                let (n, err) = read_full(&mut reader, &mut pending.buf[old..old + want]);
                pending.len = old + n;
                total += n as u64;
                if let Some(e) = err {
                    merger.out.read_stop = Some(ReadStop {
                        offset: total,
                        reason: e.to_string(),
                    });
                    eof = true;
                } else if n < want {
                    eof = true;
                }
            }
            let mut inside_line = false;
            let filled = pending.bytes();
            let cut_at = if eof {
                filled.len()
            } else {
                match memchr::memrchr(b'\n', filled) {
                    Some(p) => p + 1,
                    None => {
                        // One line longer than a block: split it at its last `\r` if any
                        // (flattened progress output), else where the block ends.
                        merger.out.counts.split_long_lines += 1;
                        inside_line = true;
                        memchr::memrchr(b'\r', filled).map_or(filled.len(), |p| p + 1)
                    }
                }
            };
            // What follows the cut starts the next block, in a buffer from the pool.
            let mut next = Chunk {
                buf: pool.pop().unwrap_or_default(),
                len: 0,
            };
            let rest = filled.get(cut_at..).unwrap_or(&[]);
            if next.buf.len() < rest.len() {
                next.buf.resize(rest.len(), 0);
            }
            next.buf[..rest.len()].copy_from_slice(rest);
            next.len = rest.len();
            let mut block = std::mem::replace(&mut pending, next);
            block.len = cut_at;
            let cut_tail =
                eof && pending.len == 0 && block.bytes().last().is_some_and(|&b| b != b'\n');
            if block.len > 0 {
                blocks.push((block, cut_tail, inside_line));
            } else {
                pool.push(block.buf);
            }
        }
        if merger.line_base == 0 && merger.out.detected.is_empty() {
            if let Some((first, _, _)) = blocks.first() {
                let first = first.bytes();
                merger.out.detected = gs.detect(&first[..first.len().min(64 << 10)]);
            }
        }
        let results: Vec<BlockScan> = blocks
            .par_iter()
            .map(|(b, cut, inside)| {
                let mut r = scan_block(gs, b.bytes(), *cut, budget);
                r.ends_inside_line = *inside;
                r
            })
            .collect();
        for (r, (b, cut, _)) in results.into_iter().zip(blocks.iter()) {
            if *cut {
                let b = b.bytes();
                let tail_start = memchr::memrchr(b'\n', b).map_or(0, |p| p + 1);
                let tail = clean_line(&b[tail_start..]);
                merger.out.cut_last_line = Some(tail.chars().take(120).collect());
            }
            merger.push(r);
        }
        pool.extend(blocks.into_iter().map(|(b, _, _)| b.buf));
        progress(total);
    }
    merger.out.bytes = total;
    let mut seen: Vec<SeenPrefix> = merger.seen.into_values().collect();
    seen.sort_by_key(|s| s.first_line);
    merger.out.prefixes_seen = seen;
    merger.out
}

/// A read buffer and how many of its bytes hold input.
#[derive(Default)]
struct Chunk {
    buf: Vec<u8>,
    len: usize,
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&self.buf)
    }
}

/// Fills `buf` as far as the reader goes; returns the bytes read and the error that
/// stopped it early, if one did (what was read before it counts).
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return (filled, Some(e)),
        }
    }
    (filled, None)
}

/// Scans an in-memory text (tests, samples).
pub fn scan_bytes(gs: &GrammarSet, bytes: &[u8]) -> SourceScan {
    // Reading from a slice cannot fail.
    scan_reader(gs, 0, bytes, DEFAULT_BLOCK, |_| {}).unwrap_or_default()
}
