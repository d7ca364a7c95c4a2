//! Tracebacks within a block: which event a continuation line belongs to, across the
//! interleaved output of several wrapped nodes.

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
    /// The host its prefix names and its pid: pids are per host.
    pid: Option<(Option<String>, u32)>,
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
            pid: m.prefix.as_ref().and_then(process_of),
        }
    }
}

/// A prefix's process: its pid on the host it names (two hosts' lines forwarded into one
/// file may share a pid).
fn process_of(p: &PrefixInfo) -> Option<(Option<String>, u32)> {
    p.pid.map(|pid| (p.host.clone(), pid))
}

impl Tb {
    fn node<'a>(&'a self, events: &'a [PendingEvent]) -> Option<&'a str> {
        match self {
            Tb::Held(i) => events.get(*i).and_then(|e| e.node.as_deref()),
            Tb::Ghost(g) => g.node.as_deref(),
        }
    }

    fn pid(&self, events: &[PendingEvent]) -> Option<(Option<String>, u32)> {
        match self {
            Tb::Held(i) => events
                .get(*i)
                .and_then(|e| e.m.prefix.as_ref())
                .and_then(process_of),
            Tb::Ghost(g) => g.pid.clone(),
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
/// it (vLLM repeats `(Worker_TP3 pid=7781) ERROR … [file.py:N] ` on every line) — unless
/// the traceback's body began with lines that start no record (a `{:#?}` dump, a bare
/// Python traceback): then its pid's next record ends it, as any record does. `plain`:
/// the line gives no event (an event line decides nothing about the body's shape).
pub(super) fn continues_traceback(
    out: &mut BlockScan,
    open_tb: Option<&Tb>,
    prefix: Option<&PrefixInfo>,
    plain: bool,
) -> bool {
    let Some(opener_pid) = open_tb.and_then(|tb| tb.pid(&out.events)) else {
        return false;
    };
    // The host counts only when both lines' prefixes name one (the light prefix parse of a
    // line inside a traceback may not).
    let same = prefix.and_then(process_of).is_some_and(|(host, pid)| {
        pid == opener_pid.1 && (host.is_none() || opener_pid.0.is_none() || host == opener_pid.0)
    });
    if out.tb_prefixed == Some(false) || !same {
        return false;
    }
    if plain {
        out.tb_prefixed = Some(true);
    }
    true
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
