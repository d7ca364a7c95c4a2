//! Tracebacks within a block: which event a continuation line belongs to, across the
//! interleaved output of several wrapped nodes.

use crate::base::event::{Name, Rank};
use crate::base::text::clean_line;
use crate::grammar::{GrammarSet, LineMatch, PrefixInfo};

use super::block::{BlockScan, Ctx, PendingEvent, Root};
use super::{push_detail, Context};

/// An event whose traceback is open: one the block holds (its index), one it let go
/// (the merge would drop it), of which only what its traceback's lines need is kept, or
/// one of an earlier block whose traceback this block's first lines go on with.
pub(super) enum Tb {
    Held(usize),
    Ghost(Box<Ghost>),
    Carried(Box<Ghost>),
}

/// A traceback open at the end of a block, as the next block's lines need it: who wrote
/// its event, on which wrapped node, and whether its body so far carried its process's
/// prefix (`BlockScan::tb_prefixed`).
#[derive(Clone)]
pub(super) struct OpenTraceback {
    writer: Option<Writer>,
    node: Option<String>,
    prefixed: Option<bool>,
}

impl OpenTraceback {
    pub(crate) fn prefixed(&self) -> Option<bool> {
        self.prefixed
    }

    pub(crate) fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// Whether a block scanned on its own read its first lines as this traceback would:
    /// its lines before its first record as the traceback's body (as the merge counts
    /// them), and that record as ending it. Then the block need not be scanned again
    /// with it (`Merger::push_block`).
    pub(crate) fn ends_where(&self, b: &BlockScan, gs: &GrammarSet) -> bool {
        if b.lead_events > 0 {
            // An event line inside the traceback is part of its text.
            return false;
        }
        let mut prefixed = self.prefixed;
        if b.lead_lines > b.lead_counts.blank {
            if prefixed == Some(true) {
                // A line that starts no record ends a traceback printed with prefixes.
                return false;
            }
            // Its body is printed without them: a record ends it (`continues_traceback`).
            prefixed = Some(false);
        }
        let continued = (b.first_record.as_ref()).is_some_and(|first| {
            prefixed != Some(false)
                && (self.writer.as_ref()).is_some_and(|opener| first.continues(opener, gs))
        });
        !continued
    }
}

/// A block's first record line, as a traceback open before it would test it.
pub(super) struct FirstRecord(FirstRecordForm);

enum FirstRecordForm {
    /// Its prefix read by the scan: an event line, or a line a traceback open in the block
    /// tested.
    Read {
        writer: Option<Writer>,
        reads_as_traceback: bool,
    },
    /// The line as it stands, its prefix read only if a traceback an earlier block left
    /// open asks (`OpenTraceback::ends_where`): read by the scan, it was ~14 k
    /// instructions a block (0.6 % of the shared GiB log's), and the merge of a log
    /// asks it of few blocks.
    Unread(Box<[u8]>),
}

impl FirstRecord {
    pub(crate) fn of(prefix: Option<&PrefixInfo>, message: &str) -> FirstRecord {
        FirstRecord(FirstRecordForm::Read {
            writer: prefix.and_then(writer_of),
            reads_as_traceback: reads_as_traceback(message),
        })
    }

    pub(crate) fn unread(line: &[u8]) -> FirstRecord {
        FirstRecord(FirstRecordForm::Unread(line.into()))
    }

    fn continues(&self, opener: &Writer, gs: &GrammarSet) -> bool {
        match &self.0 {
            FirstRecordForm::Read {
                writer,
                reads_as_traceback,
            } => same_writer(writer.as_ref(), opener, *reads_as_traceback),
            FirstRecordForm::Unread(line) => {
                let (prefix, message) = super::block::read_record(gs, line);
                FirstRecord::of(prefix.as_ref(), &message).continues(opener, gs)
            }
        }
    }
}

/// What the lines inside a let-go event's traceback take from it.
pub(super) struct Ghost {
    /// Never `Ctx::Own`: its own context is copied (`Ctx::Fixed`).
    ctx: Ctx,
    root: Root,
    node: Option<String>,
    writer: Option<Writer>,
}

impl Ghost {
    /// A traceback an earlier block left open (`Ctx::Carry`) or parked
    /// (`Ctx::Parked`): its lines take that traceback's event's context in the merge.
    pub(crate) fn carried(open: &OpenTraceback, parked: Option<usize>) -> Ghost {
        let (ctx, root) = match parked {
            None => (Ctx::Carry(open.node.clone()), Root::Carry),
            Some(k) => (Ctx::Parked(k), Root::Parked(k)),
        };
        Ghost {
            ctx,
            root,
            node: open.node.clone(),
            writer: open.writer.clone(),
        }
    }

    pub(crate) fn of(m: &LineMatch, ctx: Ctx, root: Root, node: Option<String>) -> Ghost {
        let ctx = match ctx {
            Ctx::Own => Ctx::Fixed(Box::new(Context::from_prefix(
                m.prefix.as_ref(),
                node.clone(),
            ))),
            other => other,
        };
        Ghost {
            ctx,
            root,
            node,
            writer: m.prefix.as_ref().and_then(writer_of),
        }
    }
}

/// Who wrote a record, as far as its prefix says.
#[derive(Clone, Debug, PartialEq)]
enum Writer {
    /// Its pid on the host it names (two hosts' lines forwarded into one file may share a
    /// pid): vLLM's `(Worker_TP3 pid=7781)`.
    Pid(Option<Name>, u32),
    /// The rank of a prefix that names no pid: a launcher's tag on every line a process
    /// wrote (mpirun's `[1,2]<stderr>:`, torchrun's `[rank2]:`).
    Rank(Rank),
}

fn writer_of(p: &PrefixInfo) -> Option<Writer> {
    match (p.pid, &p.rank) {
        (Some(pid), _) => Some(Writer::Pid(p.host.clone(), pid)),
        (None, Some(rank)) => Some(Writer::Rank(rank.clone())),
        (None, None) => None,
    }
}

/// A message that only a traceback holds: a frame or source line (indented), its header,
/// Python's chaining sentences, or the exception line that closes it. A rank's tag names
/// its process less surely than a pid (a server may print that rank's next record right
/// after a failure line), so a tagged line continues a traceback only when it reads as one.
fn reads_as_traceback(message: &str) -> bool {
    let exception_name = message
        .split([':', ' ', '('])
        .next()
        .filter(|name| !name.is_empty() && name.split('.').all(is_identifier))
        .is_some_and(|name| {
            ["Error", "Exception", "Exit", "Interrupt"]
                .iter()
                .any(|end| name.ends_with(end))
        });
    message.starts_with([' ', '\t'])
        || message.starts_with("Traceback (most recent call last)")
        || message.starts_with("During handling of the above exception")
        || message.starts_with("The above exception was the direct cause")
        || exception_name
}

fn is_identifier(part: &str) -> bool {
    let mut chars = part.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Tb {
    fn node<'a>(&'a self, events: &'a [PendingEvent]) -> Option<&'a str> {
        match self {
            Tb::Held(i) => events.get(*i).and_then(|e| e.node.as_deref()),
            Tb::Ghost(g) | Tb::Carried(g) => g.node.as_deref(),
        }
    }

    fn writer(&self, events: &[PendingEvent]) -> Option<Writer> {
        match self {
            Tb::Held(i) => events
                .get(*i)
                .and_then(|e| e.m.prefix.as_ref())
                .and_then(writer_of),
            Tb::Ghost(g) | Tb::Carried(g) => g.writer.clone(),
        }
    }

    /// What the next block needs of this traceback to go on with it.
    pub(crate) fn open_traceback(
        &self,
        events: &[PendingEvent],
        prefixed: Option<bool>,
    ) -> OpenTraceback {
        OpenTraceback {
            writer: self.writer(events),
            node: self.node(events).map(str::to_owned),
            prefixed,
        }
    }

    /// Adds a line to the traceback's text: its held event's, or (an earlier block's
    /// traceback) the block's `lead_text`, which the merge adds to that block's event.
    pub(crate) fn grow(&self, out: &mut BlockScan, line: &str) {
        match self {
            Tb::Held(i) => {
                if let Some(owner) = out.events.get_mut(*i) {
                    push_detail(&mut owner.detail, line);
                }
            }
            Tb::Carried(g) => match g.ctx {
                Ctx::Parked(k) => {
                    if let Some(text) = out.parked_growth.get_mut(k) {
                        push_detail(text.get_or_insert_with(String::new), line);
                    }
                }
                _ => {
                    push_detail(&mut out.lead_text, line);
                    out.lead_grows_carried = true;
                }
            },
            Tb::Ghost(_) => {}
        }
    }

    /// The context and root an event inside this traceback takes.
    pub(crate) fn context_for_owned(&self, events: &[PendingEvent]) -> (Ctx, Root) {
        match self {
            Tb::Held(i) => (Ctx::Of(*i), events.get(*i).map_or(Root::Carry, |e| e.root)),
            Tb::Ghost(g) | Tb::Carried(g) => (g.ctx.clone(), g.root),
        }
    }

    /// The context of this traceback's event for the merge: `held` gives the merged
    /// contexts of the block's held events, `earlier` those from before the block.
    pub(crate) fn merged_context(
        &self,
        held: impl Fn(usize) -> Option<Context>,
        earlier: &Earlier,
    ) -> Option<Context> {
        match self {
            Tb::Held(i) => held(*i),
            Tb::Ghost(g) | Tb::Carried(g) => g.ctx.resolve(held, earlier),
        }
    }

    /// Which earlier traceback a carried one goes on with: `None` for the one open at the
    /// block's start, `Some(k)` for the one parked `k`-th then.
    pub(crate) fn carried_from(&self) -> Option<Option<usize>> {
        match self {
            Tb::Carried(g) => Some(match g.ctx {
                Ctx::Parked(k) => Some(k),
                _ => None,
            }),
            _ => None,
        }
    }
}

/// The contexts a block's events may take from before it (`Ctx::Carry`, `Ctx::Parked`):
/// that of the record whose traceback was open at the block's start, and those of the
/// tracebacks parked then.
pub(super) struct Earlier<'a> {
    pub(crate) open: Option<&'a Context>,
    pub(crate) parked: &'a [Context],
}

impl Ctx {
    /// The context this stands for, in the merge (`None` for `Own`: the event's own).
    pub(crate) fn resolve(
        &self,
        held: impl Fn(usize) -> Option<Context>,
        earlier: &Earlier,
    ) -> Option<Context> {
        match self {
            Ctx::Own => None,
            Ctx::Carry(node) => Some(
                (earlier.open.cloned()).unwrap_or_else(|| Context::from_prefix(None, node.clone())),
            ),
            Ctx::Parked(k) => earlier.parked.get(*k).cloned(),
            Ctx::Of(i) => held(*i),
            Ctx::Fixed(c) => Some((**c).clone()),
        }
    }
}

/// A line with a process prefix continues the open traceback when the same process wrote
/// it (vLLM repeats `(Worker_TP3 pid=7781) ERROR … [file.py:N] ` on every line; mpirun
/// tags every line `[1,2]<stderr>:`, and such a line continues it when `message`, the
/// text after the prefix, reads as a traceback's) — unless the traceback's body began
/// with lines that start no record (a `{:#?}` dump, a bare Python traceback): then its
/// process's next record ends it, as any record does. `plain`: the line gives no event (an
/// event line decides nothing about the body's shape).
pub(super) fn continues_traceback(
    out: &mut BlockScan,
    open_tb: Option<&Tb>,
    prefix: Option<&PrefixInfo>,
    message: &str,
    plain: bool,
) -> bool {
    let Some(opener) = open_tb.and_then(|tb| tb.writer(&out.events)) else {
        return false;
    };
    let writer = prefix.and_then(writer_of);
    let same = same_writer(writer.as_ref(), &opener, reads_as_traceback(message));
    if out.tb_prefixed == Some(false) || !same {
        return false;
    }
    if plain {
        out.tb_prefixed = Some(true);
    }
    true
}

/// Whether a record line's writer is the traceback opener's, so that the line may go on
/// with it; a rank's tag only when the line `reads_as_traceback`.
fn same_writer(writer: Option<&Writer>, opener: &Writer, reads_as_traceback: bool) -> bool {
    match (writer, opener) {
        // The host counts only when both lines' prefixes name one (the light prefix parse
        // of a line inside a traceback may not).
        (Some(Writer::Pid(host, pid)), Writer::Pid(opener_host, opener_pid)) => {
            pid == opener_pid && (host.is_none() || opener_host.is_none() || host == opener_host)
        }
        (Some(Writer::Rank(rank)), Writer::Rank(opener_rank)) => {
            rank == opener_rank && reads_as_traceback
        }
        _ => false,
    }
}

/// A line that starts no record after a traceback whose lines carried their process's
/// prefix ends it: that process prefixes every line it writes, so the bare line is
/// another's (mpirun's `MPI_ABORT was invoked on rank 2` banner after a rank's traceback).
pub(super) fn end_prefixed_traceback(out: &mut BlockScan, open_tb: &mut Option<Tb>) {
    if out.tb_prefixed == Some(true) {
        *open_tb = None;
        out.tb_prefixed = None;
    }
}

/// A record ends the open traceback, unless it comes from another wrapped node than the
/// traceback's: then the traceback is parked until a line of its own node comes back
/// (`resume_traceback`). A record of a parked traceback's node ends that one: its node's
/// later lines are no longer its text.
///
/// Inlined for its first test: nearly every record line has no wrapper, no traceback open
/// and none parked, and the call alone cost more than that test (4 % of scanning a
/// serving log).
#[inline]
pub(super) fn end_traceback_at_record(
    out: &mut BlockScan,
    open_tb: &mut Option<Tb>,
    node: Option<&[u8]>,
) {
    if node.is_none() && open_tb.is_none() && out.parked.is_empty() {
        return;
    }
    end_traceback_at_record_slow(out, open_tb, node);
}

#[inline(never)]
fn end_traceback_at_record_slow(
    out: &mut BlockScan,
    open_tb: &mut Option<Tb>,
    node: Option<&[u8]>,
) {
    out.note_node(node, true);
    if open_tb.is_none() && out.parked.is_empty() {
        return;
    }
    if let Some(node) = node.filter(|_| !out.parked.is_empty()) {
        let events = &out.events;
        (out.parked).retain(|tb| tb.node(events).is_none_or(|n| n.as_bytes() != node));
    }
    if let Some(tb) = open_tb.take() {
        let owner = tb.node(&out.events).map(str::as_bytes);
        if owner.is_some_and(|o| node.is_some_and(|n| n != o)) {
            park(out, tb);
        }
    }
}

/// Most tracebacks parked at once: a stream of a few pods or services parks a few. Past
/// it the longest parked is let go (its later lines read as lines of their own): a stream
/// of a new node per line, each opening a traceback, made every line search them all.
pub(super) const MAX_PARKED: usize = 64;

fn park(out: &mut BlockScan, tb: Tb) {
    if out.parked.len() >= MAX_PARKED {
        out.parked.remove(0);
        out.parked_evicted = true;
    }
    out.parked.push(tb);
}

/// Before a line that continues a traceback: if its wrapper names the node of a parked
/// traceback rather than the open one's, that traceback is the open one again; if it
/// names another node than the open one's, that one is parked.
pub(super) fn resume_traceback(out: &mut BlockScan, open_tb: &mut Option<Tb>, node: Option<&[u8]>) {
    out.note_node(node, false);
    let Some(node) = node else {
        return;
    };
    let open_node = open_tb.as_ref().and_then(|tb| tb.node(&out.events));
    if open_node.is_some_and(|n| n.as_bytes() == node) {
        return;
    }
    let open_is_wrapped = open_node.is_some();
    let Some(at) = out
        .parked
        .iter()
        .rposition(|tb| tb.node(&out.events).is_some_and(|n| n.as_bytes() == node))
    else {
        // Another node's line is no part of the open traceback, whose node's lines may
        // still come back to it.
        if let Some(tb) = open_tb.take_if(|_| open_is_wrapped) {
            park(out, tb);
        }
        return;
    };
    let resumed = out.parked.remove(at);
    out.tb_prefixed = None;
    if let Some(tb) = open_tb.take() {
        park(out, tb);
    }
    *open_tb = Some(resumed);
}

/// The line a Python traceback starts with.
pub(super) const TRACEBACK_HEADER: &str = "Traceback (most recent call last):";

/// Keeps the lines of an unprefixed traceback printed after a record: its header starts
/// it, and indented lines (frames, source lines) go on with it. Anything else is left
/// alone (a record clears it).
pub(super) fn gather_loose_traceback(out: &mut BlockScan, line: &[u8]) {
    if line.starts_with(TRACEBACK_HEADER.as_bytes()) {
        out.loose_tb.clear();
        out.loose_tb.push_str(TRACEBACK_HEADER);
    } else if !out.loose_tb.is_empty() && line.first().is_some_and(|b| b.is_ascii_whitespace()) {
        push_detail(&mut out.loose_tb, &clean_line(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::scan::block::read_record;

    fn writer(gs: &GrammarSet, line: &str) -> Writer {
        let (prefix, _) = read_record(gs, line.as_bytes());
        let prefix = prefix.unwrap_or_else(|| panic!("no prefix read in {line}"));
        writer_of(&prefix).unwrap_or_else(|| panic!("no writer in {line}"))
    }

    /// A block's first record read only when the merge asks (`FirstRecord::unread`) says
    /// what it says read by the scan: a vLLM worker's next line (same pid) goes on with its
    /// traceback and another worker's does not; a torchrun rank's tagged line goes on only
    /// when it reads as part of a traceback.
    #[test]
    fn a_first_record_read_when_asked_continues_a_traceback_as_one_read_at_once() {
        let gs = GrammarSet::builtin().unwrap();
        let vllm = writer(
            &gs,
            "(VllmWorker TP1 pid=4242) ERROR 05-02 08:14:09 [multiproc_executor.py:611] boom",
        );
        let torchrun = writer(&gs, "[rank3]: Traceback (most recent call last):");
        let cases = [
            (&vllm, "(VllmWorker TP1 pid=4242) ERROR 05-02 08:14:09 [x.py:1]   File \"a.py\", line 9, in f", true),
            (&vllm, "(VllmWorker TP0 pid=4241) INFO 05-02 08:14:09 [x.py:1] Loading weights", false),
            (&torchrun, "[rank3]:   File \"/srv/worker.py\", line 77, in run", true),
            (&torchrun, "[rank3]: Capturing batches for the graph", false),
            (&torchrun, "[rank2]:   File \"/srv/worker.py\", line 77, in run", false),
        ];
        for (opener, line, continues) in cases {
            let (prefix, message) = read_record(&gs, line.as_bytes());
            let read = FirstRecord::of(prefix.as_ref(), &message);
            assert_eq!(
                read.continues(opener, &gs),
                continues,
                "read at once: {line}"
            );
            let unread = FirstRecord::unread(line.as_bytes());
            assert_eq!(
                unread.continues(opener, &gs),
                continues,
                "read when asked: {line}"
            );
        }
    }
}
