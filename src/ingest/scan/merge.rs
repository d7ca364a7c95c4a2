//! Block results merged in order into one source's scan: line numbers, what crosses a
//! block boundary (a traceback, the record an unprefixed line belongs to), the budgets.

use std::collections::HashMap;
use std::sync::Arc;

use crate::base::event::{Event, EventExtra, Name, Origin, Rank, Writer};
use crate::grammar::{GrammarSet, LineMatch, PrefixInfo};

use super::block::{scan_block, Before, BlockScan, PendingEvent};
use super::traceback::{Earlier, OpenTraceback, Tb};
use super::{
    budget, push_detail_lines, EventBudget, PrefixMap, PrefixTrouble, SeenPrefix, SourceScan,
    UnknownLine, MAX_SEEN_PREFIXES, MAX_UNKNOWN_SAMPLES,
};

/// What an unprefixed line takes from the record it continues.
#[derive(Clone)]
pub(super) struct Context {
    rank: Option<Rank>,
    ts: Option<chrono::NaiveDateTime>,
    ts_step_ms: u32,
    writer: Option<Arc<Writer>>,
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
            writer: e.writer.clone(),
            node: e.node().map(str::to_string),
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
            writer: p.and_then(|p| Writer::of(p.pid, p.process.clone(), p.host.clone())),
            node,
            year_inferred: p.is_some_and(|p| p.date_inferred),
            time_only: p.is_some_and(|p| p.time_only),
        }
    }
}

/// An event whose traceback is open (or parked) across a block boundary: its place in
/// `out.events` if it was kept, its context either way, and what the next block's lines
/// need to go on with its traceback.
#[derive(Clone)]
struct Carry {
    kept: Option<usize>,
    context: Context,
    open: OpenTraceback,
}

/// The tracebacks open or parked at a block's start, as the merge of its events and of
/// the tracebacks it leaves open takes them.
struct CarriedIn {
    carry: Option<Carry>,
    parked: Vec<Carry>,
    parked_contexts: Vec<Context>,
}

impl CarriedIn {
    fn earlier(&self) -> Earlier<'_> {
        Earlier {
            open: self.carry.as_ref().map(|c| &c.context),
            parked: &self.parked_contexts,
        }
    }

    /// What a traceback open or parked at the block's end (`tb`) carries into the next
    /// block: its event's place and context, from this block's `merged` events or from
    /// before the block.
    fn carry_of(&self, tb: Tb, open: OpenTraceback, merged: &[Merged]) -> Option<Carry> {
        let earlier = match tb.carried_from() {
            Some(None) => self.carry.as_ref(),
            Some(Some(k)) => self.parked.get(k),
            None => None,
        };
        if let Some(c) = earlier {
            // An earlier block's traceback goes on past this one too.
            return Some(Carry {
                kept: c.kept,
                context: c.context.clone(),
                open,
            });
        }
        if let Tb::Held(local) = tb {
            return merged.get(local).map(|m| Carry {
                kept: m.kept,
                context: m.context.clone(),
                open,
            });
        }
        let held = |i: usize| merged.get(i).map(|c| c.context.clone());
        (tb.merged_context(held, &self.earlier())).map(|context| Carry {
            kept: None,
            context,
            open,
        })
    }
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
    /// Tracebacks of wrapped nodes that another node's record interrupted, parked at the
    /// end of the last block (`BlockScan::parked`): a later line of their node resumes them.
    parked: Vec<Carry>,
    budget: &'a EventBudget,
    /// Events kept per (kind, rank) in this source; only kept events enter it, so it
    /// is never larger than what the source keeps.
    same_kept: HashMap<u64, u32, foldhash::fast::RandomState>,
    /// The rank and writer of the source's last event made, which its next events share
    /// ([`Shared`]).
    shared: Shared,
    /// Rank-naming prefixes of the source's record lines, by identity bytes.
    seen: PrefixMap,
    /// A block before held a record, and the unprefixed traceback gathered since the last
    /// one (`BlockScan::loose_tb`), which a later block's failure line may take.
    record_seen: bool,
    loose_tb: String,
    /// Before the source's first record (and outside a traceback): its lines so far
    /// (`BlockScan::lead_text`), the traceback of a failure line when the input starts
    /// inside it.
    lead_text: String,
}

/// The rank and writer of the last event a source's merge made that named them. A file's
/// events name the same few: an event naming what the one before named takes that one's
/// (a reference count) as it is made, rather than an allocation of its own. At 65,536 rank
/// files the ranks' tag lists alone were 21 MB of the run's heap (heaptrack), and every
/// NCCL line held its host name.
#[derive(Default)]
struct Shared {
    rank: Option<Rank>,
    writer: Option<Arc<Writer>>,
}

impl Shared {
    /// The rank read from a line's prefix, or the last one's equal to it.
    fn rank(&mut self, rank: Option<Rank>) -> Option<Rank> {
        let rank = rank?;
        match &self.rank {
            Some(last) if *last == rank => Some(last.clone()),
            _ => {
                self.rank = Some(rank.clone());
                Some(rank)
            }
        }
    }
    /// The writer a prefix names: the last one when it names the same (no allocation),
    /// `None` when it names none of pid, process and host.
    fn writer(
        &mut self,
        pid: Option<u32>,
        process: Option<Name>,
        host: Option<Name>,
    ) -> Option<Arc<Writer>> {
        if let Some(last) = &self.writer {
            if last.pid == pid && last.process == process && last.host == host {
                return Some(last.clone());
            }
        }
        let writer = Writer::of(pid, process, host)?;
        self.writer = Some(writer.clone());
        Some(writer)
    }
}

/// An event kept past the run's budget: its message cut to
/// `budget::FIRST_OF_KIND_MESSAGE_MAX` bytes as any over-long message is
/// (`grammar::bounded`), its traceback and trailer let go. Its kind, rank, time and
/// fields, what the phases and the verdict read, are whole.
fn shorten_past_budget(ev: &mut Event) {
    if ev.message.len() > budget::FIRST_OF_KIND_MESSAGE_MAX {
        ev.message = crate::grammar::bounded(&ev.message, budget::FIRST_OF_KIND_MESSAGE_MAX).into();
    }
    if let Some(extra) = ev.extra.as_mut() {
        extra.detail = None;
        extra.trailer = None;
    }
}

/// An event's kind, rank and pid, hashed: what "the same event" means for the per-file
/// limit (vLLM workers name no rank in their lines, so the pid tells them apart). A
/// 64-bit hash rather than the owned values: no clone per event, and a collision would
/// only let one event more or less through a limit of a thousand. foldhash, not SipHash:
/// nothing here is chosen by an adversary that a collision would serve.
fn same_key(kind: &str, rank: Option<&Rank>, pid: (Option<&str>, Option<u32>)) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = foldhash::fast::FixedState::default().build_hasher();
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
            parked: Vec::new(),
            budget,
            same_kept: HashMap::default(),
            shared: Shared::default(),
            seen: PrefixMap::default(),
            record_seen: false,
            loose_tb: String::new(),
            lead_text: String::new(),
        }
    }

    /// Merges a block scanned on its own (`scan_block` with nothing before it). A block
    /// whose first lines read otherwise after the blocks before it is scanned again here
    /// with what they left open (`Before`):
    /// - a traceback the previous block left open: whether its first lines go on with it
    ///   depends on who wrote it and how its body was printed so far (vLLM prefixes every
    ///   line of it), and its lines, up to the line that ends it, are its event's text,
    ///   as within one block. Only when the traceback reaches past what the block's own
    ///   scan assumed (`OpenTraceback::ends_where`).
    /// - an unprefixed failure line before the block's first record: its traceback is the
    ///   unprefixed one gathered since the last record (a child's stderr), or with no record
    ///   yet every line before it (an input that starts inside it), from earlier blocks
    ///   too; and after a record, a block with no record of its own goes on gathering it.
    /// - a traceback parked at the end of the previous block (a wrapped node's, which
    ///   another node's record interrupted), when a line of its node that may go on with
    ///   it comes before any record of that node; and a wrapped node's traceback open
    ///   there, which another node's record parks rather than ends.
    pub(crate) fn push_block(&mut self, mut b: BlockScan, bytes: &[u8], cut_tail: bool) {
        let parked: Vec<Option<&str>> = self.parked.iter().map(|p| p.open.node()).collect();
        let rescan = b.reads_otherwise_after_parked(&parked)
            || match &self.carry {
                Some(carry) => carry.open.node().is_some() || !carry.open.ends_where(&b, self.gs),
                // A block of no record leaves the gathered traceback as it was, unless
                // it goes on with one or starts one.
                None if self.record_seen => {
                    b.lead_events > 0
                        || (!b.seen_record && (!self.loose_tb.is_empty() || b.lead_tb_header))
                }
                None => b.lead_events > 0 && !self.lead_text.is_empty(),
            };
        if rescan {
            let before = Before {
                open: self.carry.as_ref().map(|c| &c.open),
                parked: self.parked.iter().map(|c| &c.open).collect(),
                record_seen: self.record_seen,
                loose_tb: &self.loose_tb,
                lead_text: &self.lead_text,
            };
            let ends_inside_line = b.ends_inside_line;
            b = scan_block(self.gs, bytes, cut_tail, self.budget, Some(&before));
            b.ends_inside_line = ends_inside_line;
        }
        super::printed_dates::date_from_head(self.gs, &mut b, bytes, self.line_base);
        self.keep_what_goes_on(&mut b, rescan);
        if !rescan {
            // A record of a parked traceback's node ended it; the others stay parked.
            self.parked
                .retain(|p| !p.open.node().is_some_and(|n| b.names_node(n)));
        }
        self.merge(b, rescan);
    }

    /// What the next block's lines may take from this one's (`Before`).
    fn keep_what_goes_on(&mut self, b: &mut BlockScan, rescanned: bool) {
        if b.seen_record {
            self.record_seen = true;
            self.loose_tb = std::mem::take(&mut b.loose_tb);
            self.lead_text = String::new();
        } else if !self.record_seen && self.carry.is_none() {
            if rescanned {
                // Scanned with the text before it: its own holds it all.
                self.lead_text = std::mem::take(&mut b.lead_text);
            } else {
                push_detail_lines(&mut self.lead_text, &b.lead_text);
            }
        }
    }

    /// Merges a block as scanned: a source's only block (`scan_whole`), which no earlier
    /// block's traceback reaches into and no later block's events take dates from.
    pub(crate) fn push(&mut self, b: BlockScan) {
        self.merge(b, false);
    }

    /// Merges a block; `rescanned`: scanned with what the blocks before it left open, so
    /// that the tracebacks parked before it are among its own.
    fn merge(&mut self, mut b: BlockScan, rescanned: bool) {
        self.push_lead(&mut b);
        self.grow_parked(&mut b);
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
        // A parked traceback's body is printed as its first lines said; resumed, that is
        // read again (`resume_traceback`).
        let parked: Vec<(Tb, OpenTraceback)> = (std::mem::take(&mut b.parked).into_iter())
            .map(|tb| {
                let open = tb.open_traceback(&b.events, None);
                (tb, open)
            })
            .collect();
        let before = CarriedIn {
            carry: self.carry.take(),
            parked_contexts: self.parked.iter().map(|c| c.context.clone()).collect(),
            parked: std::mem::take(&mut self.parked),
        };
        // This block's events as merged, for the unprefixed events inside its traceback.
        let mut merged: Vec<Merged> = Vec::with_capacity(b.events.len());
        for pe in std::mem::take(&mut b.events) {
            let held = |i: usize| merged.get(i).map(|c| c.context.clone());
            let context = (pe.ctx).resolve(held, &before.earlier());
            let ev = self.place(pe, context);
            let context = Context::of(&ev);
            let kept = self.keep(ev);
            merged.push(Merged { kept, context });
        }
        let open_at_end = match (b.open_at_end.take(), open) {
            (Some(tb), Some(open)) => Some(before.carry_of(tb, open, &merged)),
            _ => None,
        };
        let parked_here: Vec<Carry> = (parked.into_iter())
            .filter_map(|(tb, open)| before.carry_of(tb, open, &merged))
            .collect();
        self.carry = match open_at_end {
            Some(carry) => carry,
            None if b.seen_record => None,
            None => before.carry,
        };
        // Parked before the block, and its lines did not name their node: still parked.
        self.parked = if rescanned { Vec::new() } else { before.parked };
        self.parked.extend(parked_here);
        self.push_seen(&mut b);
        if let Some(l) = b.prefix_overflow {
            self.overflow_at(l + self.line_base);
        }
        // A block cut inside a line (one longer than a block) ends with a piece of that
        // line, and the next block starts with the rest: one line, numbered once.
        self.line_base += b.counts.lines.saturating_sub(u64::from(b.ends_inside_line));
    }

    /// The lines a block's lines added to tracebacks parked before it.
    fn grow_parked(&mut self, b: &mut BlockScan) {
        for (k, text) in std::mem::take(&mut b.parked_growth).into_iter().enumerate() {
            let Some(text) = text else {
                continue;
            };
            let kept = self.parked.get(k).and_then(|c| c.kept);
            self.grow_kept(kept, &text);
        }
    }

    /// A traceback that goes on past a block grows an event already kept (if it was): its
    /// text is charged to the run's budget as it comes, and added line by line, as within
    /// a block.
    fn grow_kept(&mut self, kept: Option<usize>, text: &str) {
        if let Some(ev) = kept.and_then(|i| self.out.events.get_mut(i)) {
            if self.budget.take_text(text.len() as u64) {
                push_detail_lines(ev.extra_mut().detail.get_or_insert_with(String::new), text);
            }
        }
    }

    /// The block's lines before its first record: a traceback of the previous block
    /// going on, or lines of their own.
    fn push_lead(&mut self, b: &mut BlockScan) {
        match &self.carry {
            Some(carry) => {
                // Inside a traceback, noise-looking lines are part of it, as within a block.
                self.out.counts.continuation += b.lead_lines - b.lead_counts.blank;
                self.out.counts.blank += b.lead_counts.blank;
                if b.lead_grows_carried || !b.lead_text.is_empty() {
                    let kept = carry.kept;
                    self.grow_kept(kept, &b.lead_text);
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
    fn place(&mut self, pe: PendingEvent, mut context: Option<Context>) -> Event {
        let node = match context.as_mut() {
            Some(c) => c.node.take(),
            None => pe.node,
        };
        let mut ev = self.make_event(pe.m, pe.line_in_block, pe.detail, node);
        if let Some(c) = context {
            ev.rank = c.rank;
            ev.ts = c.ts;
            ev.ts_step_ms = c.ts_step_ms;
            ev.writer = c.writer;
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
    fn keep(&mut self, mut ev: Event) -> Option<usize> {
        // A configuration line starts a start-up, and a crash loop appends thousands of
        // start-ups to one file: the same-event cap counts within a start-up, so the last
        // start-ups keep their events (a cap per file kept the first 1,024 and paired the
        // last one's end with an earlier one's begin). Configuration lines themselves
        // are bounded by the run's budgets.
        let config = ev.kind == crate::base::event::kind::SERVER_ARGS;
        if config {
            self.same_kept.clear();
        }
        let key = same_key(&ev.kind, ev.rank.as_ref(), (ev.host(), ev.pid()));
        if self.same_kept.capacity() == 0 {
            // As `BlockScan::same_held` (`hold_or_drop`).
            self.same_kept.reserve(super::block::FIRST_EVENTS);
        }
        let same = self.same_kept.get(&key).copied().unwrap_or(0);
        let text = (ev.message.len()
            + ev.detail().map_or(0, str::len)
            + ev.trailer().map_or(0, str::len)) as u64;
        let over_same = !config && same >= budget::SAME_EVENT_PER_SOURCE;
        if over_same || !self.budget.take(text) {
            // Past the budget, the first of its kind for its rank in this start-up.
            let first_of_kind = same == 0
                && self.out.kept_past_budget < budget::FIRST_OF_KIND_PER_FILE
                && self.budget.take_first_of_kind();
            if over_same || !first_of_kind {
                *self.out.dropped_events.entry(ev.kind.into()).or_insert(0) += 1;
                return None;
            }
            shorten_past_budget(&mut ev);
            self.out.kept_past_budget += 1;
        }
        self.same_kept.insert(key, same + 1);
        if self.out.events.capacity() == 0 {
            self.out.events.reserve(super::block::FIRST_EVENTS);
        }
        self.out.events.push(ev);
        Some(self.out.events.len() - 1)
    }

    fn add_unknown(&mut self, mut u: UnknownLine) {
        if self.out.unknown_samples.len() < MAX_UNKNOWN_SAMPLES {
            u.line += self.line_base;
            self.out.unknown_samples.push(u);
        }
    }

    fn make_event(
        &mut self,
        m: LineMatch,
        line_in_block: u64,
        detail: String,
        node: Option<String>,
    ) -> Event {
        let grammar = self
            .gs
            .grammars
            .get(m.grammar)
            .map(|g| g.name.clone())
            .unwrap_or_default();
        let (ts, ts_step_ms) = m
            .prefix
            .as_ref()
            .map_or((None, 1000), |p| (p.ts, p.ts_step_ms));
        // Moved out of the match, not cloned; shared with the event before where equal.
        let (year_inferred, time_only, rank, pid, process, host) = match m.prefix {
            Some(p) => (
                p.date_inferred,
                p.time_only,
                p.rank,
                p.pid,
                p.process,
                p.host,
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
            rank: self.shared.rank(rank),
            writer: self.shared.writer(pid, process, host),
            kind: m.kind,
            grammar,
            fields: m.fields,
            message: m.message.into(),
            extra: (node.is_some() || !detail.is_empty() || m.trailer.is_some()).then(|| {
                Box::new(EventExtra {
                    node,
                    detail: (!detail.is_empty()).then_some(detail),
                    trailer: m.trailer,
                })
            }),
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
