//! Block results merged in order into one source's scan: line numbers, what crosses a
//! block boundary (a traceback, the record an unprefixed line belongs to), the budgets.

use std::collections::HashMap;

use crate::base::event::{Event, Origin, Rank};
use crate::grammar::{GrammarSet, LineMatch, PrefixInfo};

use super::block::{scan_block, BlockScan, PendingEvent};
use super::traceback::{OpenTraceback, Tb};
use super::{
    budget, push_detail, EventBudget, PrefixMap, PrefixTrouble, SeenPrefix, SourceScan,
    UnknownLine, MAX_SEEN_PREFIXES, MAX_UNKNOWN_SAMPLES,
};

/// What an unprefixed line takes from the record it continues.
#[derive(Clone)]
pub(super) struct Context {
    rank: Option<Rank>,
    ts: Option<chrono::NaiveDateTime>,
    ts_step_ms: u32,
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
            ts_step_ms: e.ts_step_ms,
            pid: e.pid,
            process: e.process.clone(),
            host: e.host.clone(),
            node: e.node.clone(),
            year_inferred: e.year_inferred,
            time_only: e.time_only,
        }
    }

    /// The context an event of this prefix (or none) and wrapper node has of its own: what
    /// `Context::of` gives for the event the merge would build from it.
    pub(crate) fn from_prefix(p: Option<&PrefixInfo>, node: Option<String>) -> Context {
        Context {
            rank: p.and_then(|p| p.rank.clone()),
            ts: p.and_then(|p| p.ts),
            ts_step_ms: p.map_or(1000, |p| p.ts_step_ms),
            pid: p.and_then(|p| p.pid),
            process: p.and_then(|p| p.process.clone()),
            host: p.and_then(|p| p.host.clone()),
            node,
            year_inferred: p.is_some_and(|p| p.date_inferred),
            time_only: p.is_some_and(|p| p.time_only),
        }
    }
}

/// The event whose traceback is open across a block boundary: its place in
/// `out.events` if it was kept, its context either way, and what the next block's lines
/// need to go on with its traceback.
struct Carry {
    kept: Option<usize>,
    context: Context,
    open: OpenTraceback,
}

/// A block event as merged: where it was kept (if it was) and its context.
struct Merged {
    kept: Option<usize>,
    context: Context,
}

/// Merges block results in order into one source's scan.
pub(super) struct Merger<'a> {
    gs: &'a GrammarSet,
    source: usize,
    pub(crate) out: SourceScan,
    pub(crate) line_base: u64,
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
fn same_key(kind: &str, rank: Option<&Rank>, pid: (Option<&str>, Option<u32>)) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    kind.hash(&mut h);
    rank.hash(&mut h);
    pid.hash(&mut h);
    h.finish()
}

impl PrefixTrouble {
    /// Adds a later block's count, its line numbers offset by `base`.
    fn absorb(&mut self, later: PrefixTrouble, base: u64) {
        self.lines += later.lines;
        if self.first.is_none() {
            self.first = later.first.map(|(line, what)| (line + base, what));
        }
    }
}

impl<'a> Merger<'a> {
    pub(crate) fn new(gs: &'a GrammarSet, source: usize, budget: &'a EventBudget) -> Self {
        Merger {
            gs,
            source,
            out: SourceScan::default(),
            line_base: 0,
            carry: None,
            budget,
            same_kept: HashMap::new(),
            seen: PrefixMap::default(),
        }
    }

    /// Merges a block scanned on its own (`scan_block` without a carried traceback). A
    /// block that starts inside a traceback the previous block left open is scanned again
    /// here with that traceback open: whether its first lines go on with it depends on who
    /// wrote it and how its body was printed so far (vLLM prefixes every line of it), and
    /// its lines, up to the line that ends it, are its event's text, as within one block.
    /// Only a block whose first lines the traceback reaches past what the block's own scan
    /// assumed (`OpenTraceback::ends_where`) is scanned twice.
    pub(crate) fn push_block(&mut self, mut b: BlockScan, bytes: &[u8], cut_tail: bool) {
        if let Some(carry) = self.carry.as_ref().filter(|c| !c.open.ends_where(&b)) {
            let ends_inside_line = b.ends_inside_line;
            b = scan_block(self.gs, bytes, cut_tail, self.budget, Some(&carry.open));
            b.ends_inside_line = ends_inside_line;
        }
        super::block::date_from_head(self.gs, &mut b, bytes, self.line_base);
        self.push(b);
    }

    /// Merges a block as scanned: a source's only block (`scan_whole`), which no earlier
    /// block's traceback reaches into and no later block's events take dates from.
    pub(crate) fn push(&mut self, mut b: BlockScan) {
        self.push_lead(&mut b);
        self.out.counts.add(&b.counts);
        for u in std::mem::take(&mut b.unknown) {
            self.add_unknown(u);
        }
        self.out.cut_fields.append(&mut b.cut_fields);
        for (kind, n) in std::mem::take(&mut b.dropped) {
            *self.out.dropped_events.entry(kind).or_insert(0) += n;
        }
        let base = self.line_base;
        self.out
            .bad_stamps
            .absorb(std::mem::take(&mut b.bad_stamps), base);
        self.out
            .bad_ranks
            .absorb(std::mem::take(&mut b.bad_ranks), base);
        (self.out.dated_lines).extend(b.dated.drain(..).map(|(line, t)| (line + base, t)));
        let open = (b.open_at_end.as_ref()).map(|tb| tb.open_traceback(&b.events, b.tb_prefixed));
        // This block's events as merged, for the unprefixed events inside its traceback.
        let mut merged: Vec<Merged> = Vec::with_capacity(b.events.len());
        for pe in std::mem::take(&mut b.events) {
            let carry = self.carry.as_ref().map(|c| &c.context);
            let context = pe
                .ctx
                .resolve(|i| merged.get(i).map(|c| c.context.clone()), carry);
            let ev = self.place(pe, context);
            let context = Context::of(&ev);
            let kept = self.keep(ev);
            merged.push(Merged { kept, context });
        }
        let carry = self.carry.as_ref().map(|c| &c.context);
        self.carry = match (b.open_at_end.take(), open) {
            // The earlier block's traceback goes on past this one too.
            (Some(Tb::Carried(_)), Some(open)) => self.carry.take().map(|c| Carry { open, ..c }),
            (Some(Tb::Held(local)), Some(open)) => merged.get(local).map(|m| Carry {
                kept: m.kept,
                context: m.context.clone(),
                open,
            }),
            (Some(tb), Some(open)) => tb
                .merged_context(|i| merged.get(i).map(|c| c.context.clone()), carry)
                .map(|context| Carry {
                    kept: None,
                    context,
                    open,
                }),
            _ if b.seen_record => None,
            _ => self.carry.take(),
        };
        self.push_seen(&mut b);
        if let Some(l) = b.prefix_overflow {
            self.overflow_at(l + self.line_base);
        }
        // A block cut inside a line (one longer than a block) ends with a piece of that
        // line, and the next block starts with the rest: one line, numbered once.
        self.line_base += b.counts.lines.saturating_sub(u64::from(b.ends_inside_line));
    }

    /// The block's lines before its first record: a traceback of the previous block
    /// going on, or lines of their own.
    fn push_lead(&mut self, b: &mut BlockScan) {
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
                for u in std::mem::take(&mut b.lead_unknown) {
                    self.add_unknown(u);
                }
            }
        }
    }

    /// The event a held block event becomes, in the context it takes.
    fn place(&self, pe: PendingEvent, context: Option<Context>) -> Event {
        let mut ev = self.to_event(pe.m, pe.line_in_block, pe.detail);
        ev.node = pe.node;
        if let Some(c) = context {
            ev.rank = c.rank;
            ev.ts = c.ts;
            ev.ts_step_ms = c.ts_step_ms;
            ev.pid = c.pid;
            ev.process = c.process;
            ev.host = c.host;
            ev.node = c.node;
            ev.year_inferred = c.year_inferred;
            ev.time_only = c.time_only;
        }
        ev
    }

    /// The block's rank-naming prefixes, in the source's line numbers.
    fn push_seen(&mut self, b: &mut BlockScan) {
        let mut block_seen: Vec<(Vec<u8>, SeenPrefix)> =
            std::mem::take(&mut b.seen).into_iter().collect();
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
        let key = same_key(&ev.kind, ev.rank.as_ref(), (ev.host.as_deref(), ev.pid));
        let same = self.same_kept.get(&key).copied().unwrap_or(0);
        let text = (ev.message.len()
            + ev.detail.as_ref().map_or(0, |d| d.len())
            + ev.trailer.as_ref().map_or(0, |t| t.len())) as u64;
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
        let (ts, ts_step_ms) = m
            .prefix
            .as_ref()
            .map_or((None, 1000), |p| (p.ts, p.ts_step_ms));
        let (year_inferred, time_only, rank, pid, process, host) = match &m.prefix {
            Some(p) => (
                p.date_inferred,
                p.time_only,
                p.rank.clone(),
                p.pid,
                p.process.clone(),
                p.host.clone(),
            ),
            None => (false, false, None, None, None, None),
        };
        Event {
            origin: Origin {
                source: self.source,
                line: self.line_base + line_in_block,
            },
            ts,
            ts_step_ms,
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
            trailer: m.trailer,
        }
    }

    /// The scan so far, without ending it (`LineFeed`, which goes on after).
    pub(crate) fn snapshot(&self) -> SourceScan {
        let mut out = self.out.clone();
        let mut seen: Vec<SeenPrefix> = self.seen.values().cloned().collect();
        seen.sort_by_key(|s| s.first_line);
        out.prefixes_seen = seen;
        out
    }

    pub(crate) fn grammars(&self) -> &'a GrammarSet {
        self.gs
    }

    pub(crate) fn budget(&self) -> &'a EventBudget {
        self.budget
    }

    /// The source's scan, its prefixes in the order they first appeared.
    pub(crate) fn finish(mut self, bytes: u64) -> SourceScan {
        self.out.bytes = bytes;
        let mut seen: Vec<SeenPrefix> = self.seen.into_values().collect();
        seen.sort_by_key(|s| s.first_line);
        self.out.prefixes_seen = seen;
        self.out
    }
}
