//! Tracebacks within a block: which event a continuation line belongs to, across the
//! interleaved output of several wrapped nodes.

use crate::base::event::Rank;
use crate::base::text::{clean_line, peel_wrapper};
use crate::grammar::{LineMatch, PrefixInfo};

use super::block::{BlockScan, Ctx, PendingEvent, Root};
use super::{push_detail, Context};

/// An event whose traceback is open: one the block holds (its index), or one it let go
/// (the merge would drop it), of which only what its traceback's lines need is kept.
pub(super) enum Tb {
    Held(usize),
    Ghost(Box<Ghost>),
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
    Pid(Option<String>, u32),
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
            Tb::Ghost(g) => g.node.as_deref(),
        }
    }

    fn writer(&self, events: &[PendingEvent]) -> Option<Writer> {
        match self {
            Tb::Held(i) => events
                .get(*i)
                .and_then(|e| e.m.prefix.as_ref())
                .and_then(writer_of),
            Tb::Ghost(g) => g.writer.clone(),
        }
    }

    /// The context and root an event inside this traceback takes.
    pub(crate) fn context_for_owned(&self, events: &[PendingEvent]) -> (Ctx, Root) {
        match self {
            Tb::Held(i) => (Ctx::Of(*i), events.get(*i).map_or(Root::Carry, |e| e.root)),
            Tb::Ghost(g) => (g.ctx.clone(), g.root),
        }
    }

    /// The context of this traceback's event for the merge: `held` gives the merged
    /// contexts of the block's held events, `carry` the previous block's open record.
    pub(crate) fn merged_context(
        &self,
        held: impl Fn(usize) -> Option<Context>,
        carry: Option<&Context>,
    ) -> Option<Context> {
        match self {
            Tb::Held(i) => held(*i),
            Tb::Ghost(g) => g.ctx.resolve(held, carry),
        }
    }
}

impl Ctx {
    /// The context this stands for, in the merge (`None` for `Own`: the event's own).
    pub(crate) fn resolve(
        &self,
        held: impl Fn(usize) -> Option<Context>,
        carry: Option<&Context>,
    ) -> Option<Context> {
        match self {
            Ctx::Own => None,
            Ctx::Carry(node) => Some(
                carry
                    .cloned()
                    .unwrap_or_else(|| Context::from_prefix(None, node.clone())),
            ),
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
    let same = match (prefix.and_then(writer_of), opener) {
        // The host counts only when both lines' prefixes name one (the light prefix parse
        // of a line inside a traceback may not).
        (Some(Writer::Pid(host, pid)), Writer::Pid(opener_host, opener_pid)) => {
            pid == opener_pid && (host.is_none() || opener_host.is_none() || host == opener_host)
        }
        (Some(Writer::Rank(rank)), Writer::Rank(opener_rank)) => {
            rank == opener_rank && reads_as_traceback(message)
        }
        _ => false,
    };
    if out.tb_prefixed == Some(false) || !same {
        return false;
    }
    if plain {
        out.tb_prefixed = Some(true);
    }
    true
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

/// A record from another wrapped node than the open traceback's does not end it: the
/// traceback is parked until a line of its own node comes back (`resume_traceback`).
pub(super) fn park_if_other_node(out: &mut BlockScan, open_tb: &mut Option<Tb>, line: &[u8]) {
    let Some(owner) = open_tb.as_ref().and_then(|tb| tb.node(&out.events)) else {
        return;
    };
    if peel_wrapper(line).1.is_some_and(|n| n != owner.as_bytes()) {
        if let Some(tb) = open_tb.take() {
            out.parked.push(tb);
        }
    }
}

/// Before a line that continues a traceback: if its wrapper names the node of a parked
/// traceback rather than the open one's, that traceback is the open one again.
pub(super) fn resume_traceback(out: &mut BlockScan, open_tb: &mut Option<Tb>, line: &[u8]) {
    if out.parked.is_empty() {
        return;
    }
    let Some(node) = peel_wrapper(line).1 else {
        return;
    };
    let open_node = open_tb.as_ref().and_then(|tb| tb.node(&out.events));
    if open_node.is_some_and(|n| n.as_bytes() == node) {
        return;
    }
    let Some(at) = out
        .parked
        .iter()
        .rposition(|tb| tb.node(&out.events).is_some_and(|n| n.as_bytes() == node))
    else {
        return;
    };
    let resumed = out.parked.remove(at);
    out.tb_prefixed = None;
    if let Some(tb) = open_tb.take() {
        out.parked.push(tb);
    }
    *open_tb = Some(resumed);
}

/// Keeps the lines of an unprefixed traceback printed after a record: its header starts
/// it, and indented lines (frames, source lines) go on with it. Anything else is left
/// alone (a record clears it).
pub(super) fn gather_loose_traceback(out: &mut BlockScan, line: &[u8]) {
    const HEADER: &[u8] = b"Traceback (most recent call last):";
    if line.starts_with(HEADER) {
        out.loose_tb.clear();
        out.loose_tb.push_str("Traceback (most recent call last):");
    } else if !out.loose_tb.is_empty() && line.first().is_some_and(|b| b.is_ascii_whitespace()) {
        push_detail(&mut out.loose_tb, &clean_line(line));
    }
}
