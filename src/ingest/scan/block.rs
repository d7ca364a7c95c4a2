//! One block of whole lines, scanned on its own (in parallel with the other blocks of a
//! batch): its events, its line accounting and what the merge must settle with the
//! blocks around it.
//!
//! Memory: a block holds an event only while the merge could still keep it. An event
//! that the per-source limit (`SAME_EVENT_PER_SOURCE` of one kind for one rank, counted
//! within the block) or a spent run budget will drop is counted and let go here; if it
//! opens a traceback, only the context its traceback's lines take is kept, as long as
//! that traceback is open. A flood of one event (millions of `Exception in …:` lines)
//! therefore costs a block a thousand events whatever its size, and memory does not
//! grow with the number of blocks scanned at once (the thread count).

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use crate::base::event::{kind, Name};
use crate::base::text::{clean_cow, clean_line, is_blank, peel_wrapper};
use crate::grammar::{GrammarSet, LineMatch, LineMemo};

use super::hits::Hits;
use super::identity::identity_key;
use super::line_ends::LineEnds;
use super::shape::{BareShapes, Shapes};
use super::traceback::{
    continues_traceback, end_prefixed_traceback, end_traceback_at_record, resume_traceback,
    FirstRecord, Ghost, OpenTraceback, Tb,
};
use super::{
    budget, Context, EventBudget, LineCounts, PrefixMap, PrefixTrouble, SeenPrefix, UnknownLine,
    MAX_SEEN_PREFIXES,
};

mod plain;

pub(super) use plain::read_record;
use plain::{classify_plain, read_plain};

/// Whose context (rank, stamp, pid, process, host, node) an event takes in the merge.
#[derive(Clone)]
pub(super) enum Ctx {
    /// Its own: its prefix's, or (no prefix, nothing open before it) only its node.
    Own,
    /// The record open at the end of the previous block; when there is none, only the
    /// node given here (that of the event the chain of tracebacks started with).
    Carry(Option<String>),
    /// That of the held event at this index of the block.
    Of(usize),
    /// That of an event let go in the block, copied.
    Fixed(Box<Context>),
    /// That of the `k`-th traceback parked at the end of the previous block.
    Parked(usize),
}

/// What "the same event" is counted by within a block: the root of the event's context.
/// An event that takes the previous block's record cannot know its rank here; all such
/// events of a block take the same record, so they count as one rank of their own.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Root {
    /// (rank, pid) hashed.
    Exact(u64),
    Carry,
    Parked(usize),
}

pub(super) struct PendingEvent {
    pub(crate) line_in_block: u64,
    pub(crate) m: LineMatch,
    pub(crate) detail: String,
    pub(crate) ctx: Ctx,
    pub(crate) root: Root,
    /// The node a wrapper in front of the line names (`peel_wrapper`).
    pub(crate) node: Option<String>,
}

#[derive(Default)]
pub(super) struct BlockScan {
    pub(crate) events: Vec<PendingEvent>,
    /// Tracebacks another wrapped node's record interrupted: in a stream that interleaves
    /// pods or compose services line by line, the rest of a traceback comes back behind
    /// its own node's wrapper.
    pub(crate) parked: Vec<Tb>,
    /// The lines of each traceback parked before the block (`Before::parked`) that the
    /// block's lines went on with, if any.
    pub(crate) parked_growth: Vec<Option<String>>,
    /// Each wrapped node the block's lines name, and whether its first such line was a
    /// record (which ends a traceback of that node parked before the block) or a line
    /// that may go on with one: whether the block reads otherwise after such a traceback.
    pub(crate) node_first: Vec<(Vec<u8>, bool)>,
    /// More nodes than `MAX_NODES` named: `node_first` does not say of the rest.
    pub(crate) nodes_overflow: bool,
    /// A traceback was let go from `parked`, it being full (`traceback::MAX_PARKED`).
    pub(crate) parked_evicted: bool,
    pub(crate) counts: LineCounts,
    pub(crate) unknown: Vec<UnknownLine>,
    /// Lines before the block's first record start, kept apart: whether they continue a
    /// traceback depends on the previous block.
    pub(crate) lead_lines: u64,
    pub(crate) lead_text: String,
    /// `lead_text` holds lines of the traceback an earlier block left open (one may be
    /// empty: vLLM's prefix alone).
    pub(crate) lead_grows_carried: bool,
    pub(crate) lead_counts: LineCounts,
    /// A line before the block's first record starts a Python traceback: after a record
    /// in an earlier block, it starts the unprefixed traceback gathered there.
    pub(crate) lead_tb_header: bool,
    pub(crate) lead_unknown: Vec<UnknownLine>,
    pub(crate) seen_record: bool,
    /// The block's first record line (`seen_record` set by it), and the event lines
    /// before it that take the previous block's record: what tells the merge whether
    /// a traceback open before the block goes on in it (`OpenTraceback::ends_where`).
    pub(crate) first_record: Option<FirstRecord>,
    pub(crate) lead_events: u32,
    /// The traceback still open at the end of the block.
    pub(crate) open_at_end: Option<Tb>,
    pub(crate) cut_fields: Vec<String>,
    /// The block ends inside a line that the next block goes on with.
    pub(crate) ends_inside_line: bool,
    /// Events not kept, by kind: past the budgets already within the block.
    pub(crate) dropped: BTreeMap<String, u64>,
    /// Events held per (kind, root), for the per-source limit.
    same_held: HashMap<(Name, Root), u32, foldhash::fast::RandomState>,
    /// Event lines whose prefix did not read (block line numbers).
    pub(crate) bad_stamps: PrefixTrouble,
    pub(crate) bad_ranks: PrefixTrouble,
    /// Rank-naming prefixes (at most `MAX_SEEN_PREFIXES`) of record lines (key: the
    /// identity bytes), block lines.
    pub(crate) seen: PrefixMap,
    /// The first block line whose prefix was not kept, `seen` being full.
    pub(crate) prefix_overflow: Option<u64>,
    /// The key of the last record line noted in `seen`, and the last line that carried it
    /// since (0: none), written back when another key comes or the block ends: a server's
    /// traffic is one process's lines in a row, so most record lines compare a few bytes
    /// instead of hashing them and looking them up.
    last_seen: Vec<u8>,
    last_seen_line: u64,
    /// What the block's previous lines matched, for the per-line tests.
    memo: LineMemo,
    /// How earlier event lines of this thread's blocks were read, by shape
    /// (`GrammarSet::read_event_line`).
    event_memo: crate::grammar::EventMemo,
    /// An unprefixed traceback printed after a record (a child's stderr: a bare
    /// `Traceback (most recent call last):` and its frames, no event opening it): its text,
    /// until the closing line's event takes it as its traceback or a record ends it.
    pub(crate) loose_tb: String,
    /// How the open traceback's body is printed, once its first line says: `Some(true)`
    /// when that line was a record of the opener's pid (vLLM's prefix on every line: such
    /// records go on with it), `Some(false)` when it was a line that starts no record (a
    /// Python traceback, a `{:#?}` dump: the next record of any process ends it).
    pub(crate) tb_prefixed: Option<bool>,
    /// Whole dates printed on the block's lines before its last event whose stamp lacks
    /// one (block line, stamp): they date such stamps (`dated_lines`).
    pub(crate) dated: Vec<(u64, chrono::NaiveDateTime)>,
}

/// Room for a block's or a file's events, taken at its first event: by the events' vectors
/// (`take_event`, `Merger::keep`) and the per-event maps (`hold_or_drop`'s `same_held`,
/// the merge's `same_kept`). A rank file holds 7-90 events, 10-20 most often.
pub(super) const FIRST_EVENTS: usize = 16;

/// Wrapped nodes a block notes in `node_first`: a stream's pods or services are a few.
const MAX_NODES: usize = 256;

impl BlockScan {
    /// A block's scan as it starts after what the blocks before it left (`before`), and
    /// the traceback they left open.
    fn after(gs: &GrammarSet, before: Option<&Before>) -> (BlockScan, Option<Tb>) {
        let mut out = BlockScan {
            event_memo: gs.take_event_memo(),
            ..BlockScan::default()
        };
        if let Some(before) = before {
            // A traceback's event was a record: the lines after it read as after one.
            out.seen_record = before.record_seen || before.open.is_some();
            if out.seen_record {
                out.loose_tb.push_str(before.loose_tb);
            } else {
                out.lead_text.push_str(before.lead_text);
            }
            out.parked = (before.parked.iter().enumerate())
                .map(|(k, open)| Tb::Carried(Box::new(Ghost::carried(open, Some(k)))))
                .collect();
            out.parked_growth = vec![None; before.parked.len()];
        }
        let open_tb = before.and_then(|b| b.open).map(|open| {
            out.tb_prefixed = open.prefixed();
            Tb::Carried(Box::new(Ghost::carried(open, None)))
        });
        (out, open_tb)
    }

    /// Whether a line read now ends nothing: no traceback open (`open_tb`) or parked, and
    /// the block's first record seen. Where a shape may answer, of a noise record or of a
    /// bare line: `classify_plain` reads such lines by their bytes alone.
    #[inline]
    pub(super) fn ends_nothing(&self, open_tb: &Option<Tb>) -> bool {
        open_tb.is_none() && self.parked.is_empty() && self.seen_record
    }

    /// Notes a line of a wrapped node (`node_first`); `record`: the line starts one.
    pub(crate) fn note_node(&mut self, node: Option<&[u8]>, record: bool) {
        let Some(node) = node else {
            return;
        };
        // A stream's lines come in runs of one node's: the last one noted first.
        let known = |(n, _): &(Vec<u8>, bool)| n.as_slice() == node;
        if self.node_first.last().is_some_and(known) || self.node_first.iter().any(known) {
            return;
        }
        if self.node_first.len() < MAX_NODES {
            self.node_first.push((node.to_vec(), record));
        } else {
            self.nodes_overflow = true;
        }
    }

    /// Whether the block may read otherwise after these tracebacks of wrapped nodes parked
    /// before it: a line of one's node that may go on with it comes before any record of
    /// that node, or the block's own lines would let one go, or it does not say.
    pub(crate) fn reads_otherwise_after_parked(&self, nodes: &[Option<&str>]) -> bool {
        if nodes.is_empty() {
            return false;
        }
        self.nodes_overflow
            || self.parked_evicted
            || self.parked.len() + nodes.len() > super::traceback::MAX_PARKED
            || (self.node_first.iter()).any(|(n, record)| {
                !record && nodes.iter().flatten().any(|p| n.as_slice() == p.as_bytes())
            })
    }

    /// Whether the block names `node` at all.
    pub(crate) fn names_node(&self, node: &str) -> bool {
        (self.node_first.iter()).any(|(n, _)| n.as_slice() == node.as_bytes())
    }
}

fn note_prefix(out: &mut BlockScan, line: &[u8], line_no: u64) {
    note_key(out, identity_key(line), line, line_no);
}

/// Notes `line`'s identity bytes `key` (`identity_key`'s answer for it) in `seen`.
///
/// Inlined for the common case, the key of the line before: a call that saved and
/// restored six registers for a ~20-byte compare was ~35 of the ~500 instructions a
/// line of traffic cost (callgrind, a vLLM log).
#[inline(always)]
fn note_key(out: &mut BlockScan, key: Option<&[u8]>, line: &[u8], line_no: u64) {
    let Some(key) = key else {
        return;
    };
    if out.last_seen_line > 0
        && key.len() == out.last_seen.len()
        && crate::base::text::begins_with(key, &out.last_seen)
    {
        out.last_seen_line = line_no;
        return;
    }
    note_new_key(out, key, line, line_no);
}

/// `note_key` for a key other than the last line's.
#[inline(never)]
fn note_new_key(out: &mut BlockScan, key: &[u8], line: &[u8], line_no: u64) {
    flush_last_seen(out);
    let full = out.seen.len() >= MAX_SEEN_PREFIXES;
    match out.seen.get_mut(key) {
        Some(s) => s.last_line = line_no,
        None if full => {
            out.prefix_overflow.get_or_insert(line_no);
            return;
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
    out.last_seen.clear();
    out.last_seen.extend_from_slice(key);
    out.last_seen_line = line_no;
}

/// Writes the last line of the key `note_prefix` holds back into `seen`.
fn flush_last_seen(out: &mut BlockScan) {
    if out.last_seen_line > 0 {
        if let Some(s) = out.seen.get_mut(out.last_seen.as_slice()) {
            s.last_line = out.last_seen_line;
        }
        out.last_seen_line = 0;
    }
}

/// What the source's lines before a block leave open for its first lines, when a block
/// is scanned again with it (`Merger::push_block`), so that its lines read as they would
/// after those lines in one block.
pub(super) struct Before<'a> {
    /// The traceback the previous block left open, which the block's first lines may go
    /// on with.
    pub(crate) open: Option<&'a OpenTraceback>,
    /// A record came before the block: its lines read as after that record.
    pub(crate) record_seen: bool,
    /// The tracebacks parked at the end of the previous block, which a line of their
    /// node may resume.
    pub(crate) parked: Vec<&'a OpenTraceback>,
    /// The unprefixed traceback gathered since the last record (`BlockScan::loose_tb`).
    pub(crate) loose_tb: &'a str,
    /// No record yet: the source's lines so far (`BlockScan::lead_text`), the traceback of
    /// a failure line when the input starts inside it.
    pub(crate) lead_text: &'a str,
}

/// Scans one block of whole lines. `cut_tail` says the block's last line is the cut end
/// of the input (no newline). `before`: what the lines before the block left open (see
/// `Before`); `None` scans the block on its own, as if it started the source.
pub(super) fn scan_block(
    gs: &GrammarSet,
    buf: &[u8],
    cut_tail: bool,
    budget: &EventBudget,
    before: Option<&Before>,
) -> BlockScan {
    scan_block_with(gs, buf, cut_tail, budget, before, true)
}

/// `scan_block`; without `use_shapes`, every line is asked of the grammars (what the
/// shapes' answers are tested against).
fn scan_block_with(
    gs: &GrammarSet,
    buf: &[u8],
    cut_tail: bool,
    budget: &EventBudget,
    before: Option<&Before>,
    use_shapes: bool,
) -> BlockScan {
    let (mut out, mut open_tb) = BlockScan::after(gs, before);
    let mut hits = Hits::new(gs, buf);
    let mut start = 0usize;
    let mut line_no = 0u64;
    let mut shapes = LineShapes::of_thread(gs, use_shapes);
    let mut line_ends = LineEnds::new(buf);
    while start < buf.len() {
        // Where a shape may answer: as `classify_plain` reads a record that ends nothing
        // (no traceback open or parked) after the block's first record, and holds no `\r`
        // (below). A shape is fitted before the line's end is known: the bytes it compares
        // end no line (`Shapes::fit`), so the end is looked for past them — ~40 % of a
        // traffic line's bytes not searched twice.
        let mut fit = None;
        let mut from = start;
        if use_shapes && out.ends_nothing(&open_tb) {
            // A run of traffic lines (each fitted by a traffic shape, no `\r`) is taken
            // here line after line, as the general path below would take each: such a line
            // gives no event, opens no traceback and parks none, so the test above holds
            // for the whole run and is not asked again a line (5 % of the shared log's
            // instructions). The line that ends the run goes on below with its fit.
            while let Some(f) = buf.get(start..).and_then(|rest| shapes.records.fit(rest)) {
                from = start + f.len;
                if !f.traffic {
                    fit = Some(f);
                    break;
                }
                let (end, has_cr) = line_ends.line_end(from);
                if has_cr {
                    // Read in full below, as a line with a `\r` is (no fit).
                    break;
                }
                line_no += 1;
                hits.skipped();
                out.loose_tb.clear();
                out.counts.noise += 1;
                note_key(&mut out, f.key, &buf[start..end], line_no);
                start = end + 1;
                from = start;
            }
            if start >= buf.len() {
                break;
            }
        }
        let (end, has_cr) = line_ends.line_end(from);
        if has_cr {
            fit = None;
        }
        line_no += 1;
        let raw = &buf[start..end];
        // A traffic shape's line never comes here (the run above took it, or it holds a
        // `\r` and is read in full): a fitted line here may hold an event.
        if hits.in_line(start, end) {
            let line = ScanLine {
                raw,
                has_cr,
                line_no,
                is_cut: cut_tail && end == buf.len(),
            };
            scan_hit_line(gs, &line, budget, &mut out, &mut open_tb);
        } else if let Some(fit) = fit {
            // A noise record like one of the last: what `classify_plain` would do with it.
            out.loose_tb.clear();
            out.counts.noise += 1;
            note_key(&mut out, fit.key, raw, line_no);
        } else {
            let line = ScanLine {
                raw,
                has_cr,
                line_no,
                is_cut: false,
            };
            read_plain(
                gs,
                &buf[start..],
                &line,
                &mut shapes,
                &mut out,
                &mut open_tb,
            );
        }
        start = end + 1;
    }
    flush_last_seen(&mut out);
    shapes.leave_to_thread(gs);
    gs.give_back_event_memo(std::mem::take(&mut out.event_memo));
    out.open_at_end = open_tb;
    out.counts.lines = line_no;
    out.dated = super::printed_dates::dated_lines(gs, buf, &out.events);
    out
}

/// The shapes a block keeps of its lines: of noise records, fitted in the scan's loop,
/// and of bare lines, this thread's since its last block under the same set.
pub(super) struct LineShapes {
    pub(super) records: Shapes,
    pub(super) bare: BareShapes,
    /// `GrammarSet::bare_shape_exact_len`; `None` also where no shape is used.
    pub(super) bare_exact: Option<usize>,
    /// Shapes answer (`scan_block_with`'s `use_shapes`).
    used: bool,
}

impl LineShapes {
    /// None yet of noise records; of bare lines, those this thread learned under `gs`
    /// (`LEARNED`). `used`: shapes answer at all.
    fn of_thread(gs: &GrammarSet, used: bool) -> LineShapes {
        let learned = if used { LEARNED.take() } else { None };
        let bare = match learned {
            Some((id, bare)) if id == gs.id() => bare,
            _ => BareShapes::default(),
        };
        LineShapes {
            records: Shapes::default(),
            bare,
            bare_exact: gs.bare_shape_exact_len().filter(|_| used),
            used,
        }
    }

    /// Leaves the bare lines' shapes to the thread's next block under `gs`.
    fn leave_to_thread(self, gs: &GrammarSet) {
        if self.used {
            LEARNED.set(Some((gs.id(), self.bare)));
        }
    }
}

thread_local! {
    /// The bare lines' shapes this thread's last block learned, and the grammar set they
    /// answer for (`GrammarSet::id`). A shape's answers rest on its line and the set
    /// alone, so the next block under the same set starts with them: in the many-file
    /// path a rank file is a block, and its progress bars and NCCL lines fit the shapes
    /// learned from the files before (~9 a file learned anew, each line read in full
    /// first). Not the noise records' shapes: every line is tried against those, and a
    /// run of rank files leaves shapes of each rank tag's width (`TP7`, `TP77`, `TP777`).
    static LEARNED: std::cell::Cell<Option<(u64, BareShapes)>> =
        const { std::cell::Cell::new(None) };
}

/// Flattened logs replace newlines by ` ⏎ ` (U+23CE): those are record breaks too.
const RETURN_SYMBOL: &[u8] = "\u{23ce}".as_bytes();
/// Built once: a searcher built per line cost more than the search.
static RETURN_FINDER: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(RETURN_SYMBOL));

/// A line of the block, as the scan's loop found it.
struct ScanLine<'a> {
    raw: &'a [u8],
    /// `raw` holds a `\r`.
    has_cr: bool,
    line_no: u64,
    /// The line is the cut end of the input (asked of a line the prefilter hit).
    is_cut: bool,
}

/// A physical line may hold several records separated by `\r` (progress bars glued to the
/// next record); each segment is handled as a line of its own.
fn scan_hit_line(
    gs: &GrammarSet,
    line: &ScanLine,
    budget: &EventBudget,
    out: &mut BlockScan,
    open_tb: &mut Option<Tb>,
) {
    // Nearly every line is one segment: it is taken as it is, without a vector.
    let whole = [line.raw];
    let split: Vec<&[u8]>;
    let segments: &[&[u8]] = if line.has_cr || RETURN_FINDER.find(line.raw).is_some() {
        split = segments_of(line.raw);
        &split
    } else if is_blank(line.raw) {
        &[]
    } else {
        &whole
    };
    let n = segments.len();
    let mut any_event = false;
    for (si, &seg) in segments.iter().enumerate() {
        let text = clean_cow(seg);
        let cut = line.is_cut && si + 1 == n;
        if let Some(m) = gs.read_event_line(&text, cut, &mut out.event_memo) {
            any_event = true;
            take_event(m, seg, &text, line.line_no, budget, out, open_tb);
        }
    }
    if any_event {
        out.counts.events += 1;
    } else {
        classify_plain(gs, line.raw, line.has_cr, line.line_no, out, open_tb);
    }
}

/// The records a physical line holds: its pieces between `\r`s and ` ⏎ `s, blank ones
/// left out.
fn segments_of(raw: &[u8]) -> Vec<&[u8]> {
    let mut segments: Vec<&[u8]> = Vec::new();
    for s in raw.split(|&b| b == b'\r') {
        let mut start = 0;
        for p in RETURN_FINDER.find_iter(s) {
            segments.push(&s[start..p]);
            start = p + RETURN_SYMBOL.len();
        }
        segments.push(&s[start..]);
    }
    segments.retain(|s| !is_blank(s));
    segments
}

/// Places one matched event of segment `seg` (cleaned: `text`): the traceback it goes on
/// with or opens, the record it belongs to, and whether the block holds it.
fn take_event(
    m: LineMatch,
    seg: &[u8],
    text: &str,
    line_no: u64,
    budget: &EventBudget,
    out: &mut BlockScan,
    open_tb: &mut Option<Tb>,
) {
    for f in &m.cut_fields {
        out.cut_fields.push(format!("{}.{}", m.kind, f));
    }
    let message = (m.prefix.as_ref())
        .and_then(|p| text.get(p.message_start..))
        .unwrap_or(text);
    let mut ctx = Ctx::Own;
    let mut root = None;
    // Inside an open traceback: the event is part of it.
    let mut owned = false;
    let node_bytes = peel_wrapper(seg).1;
    let node = node_bytes.map(|n| String::from_utf8_lossy(n).into_owned());
    if m.prefix.is_none() {
        resume_traceback(out, open_tb, node_bytes);
        end_prefixed_traceback(out, open_tb);
        if let Some(tb) = open_tb.as_ref() {
            out.tb_prefixed.get_or_insert(false);
            let (c, r) = tb.context_for_owned(&out.events);
            ctx = c;
            owned = true;
            root = Some(r);
            tb.grow(out, text);
        } else if !out.seen_record {
            out.lead_events += 1;
            ctx = Ctx::Carry(node.clone());
            root = Some(Root::Carry);
        }
    } else if continues_traceback(out, open_tb.as_ref(), m.prefix.as_ref(), message, false) {
        // vLLM prints every line of a traceback with the process prefix: the exception
        // line inside it is both an event and part of the record.
        if let Some(tb) = open_tb.as_ref() {
            tb.grow(out, message);
        }
    } else {
        if !out.seen_record {
            out.first_record = Some(FirstRecord::of(m.prefix.as_ref(), message));
        }
        out.seen_record = true;
        end_traceback_at_record(out, open_tb, node_bytes);
        out.loose_tb.clear();
    }
    let root = root.unwrap_or_else(|| own_root(&m));
    // An input that starts mid-traceback: the frames before its closing line (the
    // block's lead lines) are that failure's traceback, and its phase; after a record,
    // the unprefixed traceback gathered since.
    let failure = kind::is_failure(&m.kind);
    let detail = if !failure || m.prefix.is_some() || owned {
        String::new()
    } else if matches!(ctx, Ctx::Carry(_)) {
        out.lead_text.clone()
    } else {
        std::mem::take(&mut out.loose_tb)
    };
    note_trouble(out, &m, line_no);
    let opens = m.traceback;
    if let Some(held_root) = hold_or_drop(&m, root, budget, out) {
        if out.events.capacity() == 0 {
            // A rank file's start-up holds 7-90 events, 10-20 most often (the fixtures);
            // a vector grown from 4 moved each ~400-byte event twice on the way there,
            // ~3 % of a `diff` of 8,192 rank files with its `malloc`s.
            out.events.reserve(FIRST_EVENTS);
        }
        out.events.push(PendingEvent {
            line_in_block: line_no,
            m,
            detail,
            ctx,
            root: held_root,
            node,
        });
        if opens {
            *open_tb = Some(Tb::Held(out.events.len() - 1));
            out.tb_prefixed = None;
        }
    } else if opens {
        *open_tb = Some(Tb::Ghost(Box::new(Ghost::of(&m, ctx, root, node))));
        out.tb_prefixed = None;
    }
}

/// The root of an event that takes its own context: its prefix's rank and pid.
fn own_root(m: &LineMatch) -> Root {
    // The same fixed hasher in every block (a root is compared across blocks).
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    let p = m.prefix.as_ref();
    p.and_then(|p| p.rank.as_ref()).hash(&mut h);
    p.and_then(|p| p.pid).hash(&mut h);
    Root::Exact(h.finish())
}

/// Counts an event line whose prefix did not read: a stamp that is no date or time, a
/// rank number too large to be one.
fn note_trouble(out: &mut BlockScan, m: &LineMatch, line_no: u64) {
    if let Some(p) = &m.prefix {
        if let Some(e) = &p.stamp_error {
            out.bad_stamps.add(line_no, e);
        }
        if let Some(e) = &p.rank_error {
            out.bad_ranks.add(line_no, e);
        }
    }
}

/// Whether the block holds an event (`Some(root)`) or lets it go because the merge would
/// drop it: its kind was held `SAME_EVENT_PER_SOURCE` times already for its root since
/// the block's last configuration line (the merge counts at least as many, over the
/// whole source), or the run's budget is spent and it is not the first of its kind for
/// its root, or the reserve past the budget is spent too. An event whose rank did not
/// read is never kept (nor counted as dropped: a note says why).
fn hold_or_drop(
    m: &LineMatch,
    root: Root,
    budget: &EventBudget,
    out: &mut BlockScan,
) -> Option<Root> {
    if m.prefix.as_ref().is_some_and(|p| p.rank_error.is_some()) {
        return None;
    }
    if m.kind == kind::SERVER_ARGS {
        // A configuration line starts a start-up: the limit is per start-up (see
        // `Merger::keep`), whatever the budget.
        out.same_held.clear();
        if !budget.is_spent() || !budget.reserve_is_spent() {
            return Some(root);
        }
    }
    if out.same_held.capacity() == 0 {
        // Grown from nothing, the map was rehashed three times a rank file (with the
        // merge's `same_kept` and the breakdown's grouping map, 0.8 % of `diff` of two
        // runs of 1,024 rank files).
        out.same_held.reserve(FIRST_EVENTS);
    }
    let held = out.same_held.entry((m.kind.clone(), root)).or_insert(0);
    // Past the run's budget only the first of its kind for its root may still be kept
    // (`budget::FIRST_OF_KIND_PAST_BUDGET`; the merge decides over the whole file).
    let past_budget = budget.is_spent() && (*held > 0 || budget.reserve_is_spent());
    if *held >= budget::SAME_EVENT_PER_SOURCE || past_budget {
        *out.dropped.entry(m.kind.to_string()).or_insert(0) += 1;
        return None;
    }
    *held += 1;
    Some(root)
}

#[cfg(test)]
mod tests {
    use super::scan_block_with;
    use crate::grammar::GrammarSet;
    use crate::ingest::scan::EventBudget;

    #[test]
    fn a_block_that_ends_inside_a_traffic_line_reads_as_the_grammars_read_it() {
        // 50 decode lines of 154 bytes, the last without its newline (an input cut there):
        // the run of traffic lines ends at the block's end, the last line whole or cut
        // past the 128 bytes a shape may compare.
        let gs = GrammarSet::builtin().expect("built-in grammars");
        let line: &[u8] = b"[2026-03-04 10:11:12 TP0] Decode batch. #running-req: 4, #token: 812, \
            token usage: 0.10, cuda graph: True, gen throughput (token/s): 266.00, #queue-req: 9";
        assert_eq!(line.len(), 154);
        let budget = EventBudget::default();
        for cut in [154, 140, 129] {
            let mut buf = Vec::new();
            for _ in 0..49 {
                buf.extend_from_slice(line);
                buf.push(b'\n');
            }
            buf.extend_from_slice(&line[..cut]);
            for cut_tail in [true, false] {
                let by_shape = scan_block_with(&gs, &buf, cut_tail, &budget, None, true);
                let asked = scan_block_with(&gs, &buf, cut_tail, &budget, None, false);
                assert_eq!(by_shape.counts, asked.counts, "cut at {cut}");
                assert_eq!(
                    (asked.counts.lines, asked.counts.noise),
                    (50, 50),
                    "cut at {cut}"
                );
            }
        }
    }

    /// Traffic lines of SGLang and vLLM, and event lines among them, some with a byte
    /// changed, put in, or taken out near where the shapes compare, or an event's or a
    /// traffic wording put in: the lines that fit a shape must read as the grammars read
    /// them, and a traffic shape's lines, not searched for events, must give none. The
    /// changes are drawn from the bytes that move the answers (brackets, `:`, spaces,
    /// digits) by a fixed xorshift, so the test is the same every run.
    #[test]
    fn lines_read_by_their_shape_read_as_the_grammars_read_them() {
        let gs = GrammarSet::builtin().expect("built-in grammars");
        let templates: [&[u8]; 8] = [
            b"[2026-03-04 10:11:12 TP0] Decode batch. #running-req: 4, #token: 812, token usage: 0.10",
            b"[2026-03-04 10:11:12 TP0] Prefill batch. #new-seq: 1, #new-token: 8, #cached-token: 0",
            b"[2026-03-04 10:11:12 DP1 TP3] Decode batch. #running-req: 40, #token: 1",
            b"(APIServer pid=4100) INFO 03-14 10:20:43 [loggers.py:127] Engine 000: Avg prompt throughput: 6405.9 tokens/s",
            b"(APIServer pid=4100) INFO:     10.142.18.77:61277 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
            b"(APIServer pid=4100) INFO 03-14 10:20:43 [logger.py:43] Received request chatcmpl-1: prompt: 'CUDA out of memory. Tried to allocate 2.00 GiB', params: SamplingParams(n=1)",
            b"[2026-03-04 10:11:12 TP0] Decode batch. #running-req: 4, KV Cache is allocated. #tokens: 5, K size: 1.00 GB, V size: 1.00 GB",
            b"[2026-03-04 10:11:12 TP0] KV Cache is allocated. #tokens: 5, K size: 1.00 GB, V size: 1.00 GB",
        ];
        // A `\r` past a shape's compared bytes (a bar glued to a record) takes the line
        // from the shape: it is read by its last segment, which may hold an event.
        let words: [&[u8]; 4] = [
            b"KV Cache is allocated. #tokens: 5, K size: 1.00 GB, V size: 1.00 GB. ",
            b"Decode batch",
            b"Received request ",
            b"\r[2026-03-04 10:11:12 TP0] KV Cache is allocated. #tokens: 5, K size: 1.00 GB",
        ];
        let alphabet = b"0123456789 :][()x-.\t\r";
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut buf = Vec::new();
        for _ in 0..4000 {
            let mut line = templates[next(templates.len())].to_vec();
            // Half the lines as printed, so shapes are kept and fitted.
            if next(2) == 0 {
                let at = next(line.len().min(110));
                let b = alphabet[next(alphabet.len())];
                match next(4) {
                    0 => line[at] = b,
                    1 => line.insert(at, b),
                    2 => {
                        line.remove(at);
                    }
                    _ => {
                        let word = words[next(words.len())];
                        line.splice(at..at, word.iter().copied());
                    }
                }
            }
            buf.extend_from_slice(&line);
            buf.push(b'\n');
        }
        let budget = EventBudget::default();
        let by_shape = scan_block_with(&gs, &buf, false, &budget, None, true);
        let asked = scan_block_with(&gs, &buf, false, &budget, None, false);
        // Counts, unknown lines, events (kind and detail) and the loose traceback.
        assert_eq!(report(&by_shape), report(&asked));
        assert!(asked.counts.noise > 2000, "{:?}", asked.counts);
        let seen = |b: &super::BlockScan| {
            let mut v: Vec<(Vec<u8>, u64, u64, String)> = (b.seen.iter())
                .map(|(k, s)| (k.clone(), s.first_line, s.last_line, s.text.clone()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(seen(&by_shape), seen(&asked));
        // ~500 event lines (one template in eight), half as printed, and an event's
        // wording put in other lines: events the shapes must not hide.
        assert!(asked.events.len() > 250, "{}", asked.events.len());
    }

    /// A fixed xorshift from `seed`: `next(n)` draws below `n`, the same every run.
    fn xorshift(seed: u64) -> impl FnMut(usize) -> usize {
        let mut state = seed;
        move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        }
    }

    /// What a block's scan reports that lines read by a shape could change.
    fn report(b: &super::BlockScan) -> impl PartialEq + std::fmt::Debug {
        let unknown: Vec<(u64, String)> = (b.unknown.iter())
            .map(|u| (u.line, u.text.clone()))
            .collect();
        let events: Vec<(u64, String, String)> = (b.events.iter())
            .map(|pe| (pe.line_in_block, pe.m.kind.to_string(), pe.detail.clone()))
            .collect();
        (b.counts.clone(), unknown, events, b.loose_tb.clone())
    }

    /// Lines that start no record (progress bars, NCCL lines, uvicorn's access lines, a
    /// loose traceback, lines not understood) among records, some with a digit put for
    /// another or a byte changed or put in: those a bare shape reads must read as the
    /// grammars read them. Among them `[3] worker 12 up`, whose `[2]` twin starts a
    /// record (SGLang's `[2`), and `INFO:     10.…`, noise by a literal with a digit.
    /// Read twice with shapes: the second time the thread's learned shapes answer from
    /// the first line on.
    #[test]
    fn bare_lines_read_by_their_shape_read_as_the_grammars_read_them() {
        let gs = GrammarSet::builtin().expect("built-in grammars");
        let templates: [&[u8]; 10] = [
            b"Loading safetensors checkpoint shards:  14% Completed | 24/163 [00:04<00:23, 7.01it/s]",
            b"Capturing batches (bs=128 avail_mem=0.64 GB):  13% Completed | 2/15 [00:00<00:02, 2.75it/s]",
            b"gpu-node-000:40000:40007 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
            b"INFO:     10.142.18.77:61277 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
            b"[3] worker 12 up",
            b"Traceback (most recent call last):",
            b"  File \"/srv/worker.py\", line 77, in run",
            b"ValueError: shape 12 does not match 13",
            b"worker-1  | Loading 5 shards",
            b"[2026-03-04 10:11:12 TP0] Decode batch. #running-req: 4, #token: 812",
        ];
        let alphabet = b"0123456789 |-[]:\t";
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut buf = templates[9].to_vec();
        buf.push(b'\n');
        for _ in 0..4000 {
            let mut line = templates[next(templates.len())].to_vec();
            let at = next(line.len());
            match next(6) {
                // Half the lines as printed, a third with a digit for a digit.
                0..=2 => {}
                3 | 4 => {
                    if let Some(d) = line[at..].iter_mut().find(|b| b.is_ascii_digit()) {
                        *d = b'0' + (next(10) as u8);
                    }
                }
                _ => {
                    let b = alphabet[next(alphabet.len())];
                    if next(2) == 0 {
                        line[at] = b;
                    } else {
                        line.insert(at, b);
                    }
                }
            }
            buf.extend_from_slice(&line);
            buf.push(b'\n');
        }
        let budget = EventBudget::default();
        let asked = scan_block_with(&gs, &buf, false, &budget, None, false);
        let first = scan_block_with(&gs, &buf, false, &budget, None, true);
        let again = scan_block_with(&gs, &buf, false, &budget, None, true);
        assert_eq!(report(&first), report(&asked));
        assert_eq!(report(&again), report(&asked));
        // By the templates: ~1,600 noise lines (bars, NCCL, access), unknown lines and
        // continuations by the hundred.
        let c = &asked.counts;
        assert!(
            c.noise > 1200 && c.unknown > 200 && c.continuation > 200,
            "{c:?}"
        );
    }

    /// What a thread learned under one grammar set does not answer for another: a line
    /// that is noise to one and not understood by the other reads as each reads it, on
    /// the same thread, in either order.
    #[test]
    fn shapes_learned_under_one_grammar_set_do_not_answer_for_another() {
        let builtin = GrammarSet::builtin().expect("built-in grammars");
        let toml = "id = \"drillbit\"\nname = \"drillbit\"\n\
                    [[noise]]\nid = \"steps\"\nliterals = [\"warmup step \"]\n";
        // The built-in grammars and one more, `drillbit` as `toml` gives it.
        let with_drillbit = |toml: &str| {
            let mut grammars = GrammarSet::builtin_grammars().expect("built-in grammars");
            let extra = crate::grammar::Grammar::from_toml(toml, "drillbit.toml");
            grammars.push(extra.expect("grammar"));
            GrammarSet::new(grammars).expect("set")
        };
        let with_steps = with_drillbit(toml);
        // `warmup step 1` alone, without its nine twins: a digit tells noise from not, so
        // no bare shape may answer under this set.
        let step_one = with_drillbit(&toml.replace("warmup step ", "warmup step 1"));
        assert_eq!(step_one.bare_shape_exact_len(), None);
        let mut buf = b"[2026-03-04 10:11:12 TP0] Decode batch. #running-req: 4\n".to_vec();
        // The digits past the first 14 bytes, which a bare shape compares byte for byte.
        for n in 0..50 {
            buf.extend_from_slice(
                format!("warmup steps of 50, warmup step {n:02} done\n").as_bytes(),
            );
        }
        let budget = EventBudget::default();
        for gs in [&builtin, &with_steps, &builtin, &step_one] {
            let by_shape = scan_block_with(gs, &buf, false, &budget, None, true);
            let asked = scan_block_with(gs, &buf, false, &budget, None, false);
            assert_eq!(by_shape.counts, asked.counts);
        }
        let noise = |gs| {
            scan_block_with(gs, &buf, false, &budget, None, true)
                .counts
                .noise
        };
        // The decode line, and the 50 steps where they are noise, or the ten of them that
        // begin with `1` (10 to 19).
        assert_eq!(
            (noise(&builtin), noise(&with_steps), noise(&step_one)),
            (1, 51, 11)
        );
    }
}
