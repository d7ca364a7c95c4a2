//! The grammars in use together: which one a file speaks, matching a line to an event,
//! and the knowledge they carry.

use super::block_prefilter::ScanInputs;
use super::event_memo::{MemoPool, PrefixRecipe, Recipe, Spans};
use super::per_line::{line_automaton, line_scanners, LineScanners};
use super::prefix::Groups;
use super::*;
use rayon::prelude::*;

/// A prefix's match in a line, while `find_prefix` looks for the one that governs.
pub(super) struct PrefixMatch<'g, 'h> {
    span: std::ops::Range<usize>,
    prefix: &'g CompiledPrefix,
    builtin: bool,
    /// (grammar, prefix) indices, for `PrefixInfo::read_by`.
    read_by: (usize, usize),
    caps: regex::Captures<'h>,
}

impl PrefixMatch<'_, '_> {
    /// Ends nearer the event; else, ending at the same place, is longer; else, reading
    /// the same span, is a user grammar's where the other is a built-in one's.
    fn governs_over(&self, other: &PrefixMatch<'_, '_>) -> bool {
        self.span.end > other.span.end
            || (self.span.end == other.span.end && self.span.start < other.span.start)
            || (self.span == other.span && other.builtin && !self.builtin)
    }
}

/// The event the first candidate that `read` reads (with its index) gives, as
/// [`GrammarSet::match_line`] chooses it; `T` rides along.
pub(super) fn first_event<T>(
    candidates: &[(usize, usize, usize)],
    mut read: impl FnMut(usize, (usize, usize, usize)) -> Option<(LineMatch, T)>,
) -> Option<(LineMatch, T)> {
    let mut found = (candidates.iter().enumerate()).filter_map(|(i, &c)| read(i, c));
    let first = found.next()?;
    // An OOM message inside another failure's wording (`Capture cuda graph failed:
    // CUDA out of memory …`, `Worker failed with error 'CUDA out of memory …'`) is
    // read as the OOM: it says more.
    if first.0.kind == crate::base::event::kind::ERROR {
        if let Some(oom) = found.find(|(m, _)| m.kind == crate::base::event::kind::OOM) {
            return Some(oom);
        }
    }
    Some(first)
}

/// What the event memo keeps of a governing prefix's match.
pub(super) fn kept_prefix(found: &PrefixMatch<'_, '_>, straddles: bool) -> PrefixRecipe {
    PrefixRecipe {
        read_by: found.read_by,
        start: found.span.start,
        groups: Spans::of(&found.caps),
        straddles,
    }
}

/// A matched event, before it is placed in a run.
#[derive(Clone, Debug, PartialEq)]
pub struct LineMatch {
    pub(crate) grammar: usize,
    pub(crate) kind: Name,
    pub(crate) fields: Fields,
    /// The record prefix, when a grammar's prefix matched the line.
    pub prefix: Option<PrefixInfo>,
    /// The line's message: the text after its prefix, sanitised.
    pub message: String,
    pub(crate) traceback: bool,
    /// Captures dropped because they ran to the end of a cut line.
    pub(crate) cut_fields: Vec<String>,
    /// The text a rank-less `[[suffix]]` cut off the message (a record's trailing
    /// fields, `" err="…" bs=512`), kept so a failure's words are found there too;
    /// `None` when no suffix cut, so a line without one allocates nothing more.
    pub(crate) trailer: Option<String>,
}

/// All grammars of a run, compiled into the scanners the hot loop uses.
pub struct GrammarSet {
    /// The grammars, in the order given to [`GrammarSet::new`].
    pub grammars: Vec<Grammar>,
    /// Every event literal, by its index in `literal_owner`, then the traffic literals
    /// (`spec::NoiseSpec::traffic`; a line in which one begins no later than every event
    /// literal gives no event): asked only of the lines the
    /// buffer prefilter hit, for every literal they hold (overlapping), so one walk of an
    /// automaton over the line (`line_automaton`: a contiguous NFA, ~4,500 instructions a
    /// hit line of a rank file with the candidates' sort; several SIMD-prefiltered
    /// automata of 32 literals each, one search per group per line, cost ~4,700).
    pub(super) line_literals: AhoCorasick,
    /// A traffic shape answers the lines it fits without the block prefilter
    /// (`block_prefilter::traffic_shapes_are_exact`).
    pub(super) traffic_shapes: bool,
    /// `GrammarSet::bare_shape_exact_len`.
    pub(super) bare_exact: Option<usize>,
    /// What the buffer scan looks for first: short fragments, every event literal
    /// containing one (`prefilter_fragments`), in as few SIMD-prefiltered automata as
    /// fit them. A line with a hit is then checked against `line_literals`.
    pub(super) prefilter: Vec<AhoCorasick>,
    /// `literal_owner[i]` lists the (grammar, event) pairs literal `i` serves.
    pub(super) literal_owner: Vec<Vec<(usize, usize)>>,
    /// Anchored: does a line begin like a record of some family?
    pub(super) start_ac: AhoCorasick,
    /// `start_ac`'s patterns, by pattern index.
    pub(super) record_starts: Vec<Box<[u8]>>,
    /// Unanchored: does a line hold a known noise marker (tqdm, NCCL INFO, uvicorn …)?
    pub(super) noise: super::any_literal::AnyLiteral,
    /// Reference date for stamps that print no date (file mtime or today).
    pub(crate) reference_date: Option<NaiveDate>,
    /// The grammars' frame tables and outcome wordings, gathered once.
    pub(super) knowledge: Knowledge,
    /// Every grammar's prefixes as one filter set (`grammar::prefix_set`): `detect` runs it on the first lines of every file and `find_prefix` on every event
    /// line, one pass where there was one per prefix (a tenth of loading 1,024 small
    /// files). Compiled with the set for a command that reads logs
    /// ([`GrammarSet::for_reading_logs`]), else on first use.
    pub(super) prefix_set: PrefixSet,
    /// `builtin[g]`: grammar `g` is compiled into the binary. A user's grammar (the user
    /// directory, `--grammar`) is tried before every built-in one, so its own wording wins
    /// a line a built-in grammar also reads (a pytorch `teardown` wording).
    pub(super) builtin: Vec<bool>,
    /// The prefixes whose lines date the time-only stamps after them (`printed_date`).
    /// Built on first use.
    pub(super) dating: std::sync::OnceLock<stamp::DatingPrefixes>,
    /// The scanning threads' event memos (`event_memo`).
    pub(super) memos: MemoPool,
    /// This set among those the process built (`GrammarSet::id`).
    id: u64,
}

/// The next set's `id`.
static NEXT_SET_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl GrammarSet {
    /// The built-in grammars (grammars/*.toml compiled into the binary), as a set.
    pub fn builtin() -> Result<GrammarSet, GrammarError> {
        GrammarSet::new(Self::builtin_grammars()?)
    }

    /// The (grammar id, event kind) pairs a grammar marks `barrier_exit`: printed by every
    /// rank as it leaves a collective, the events node clocks are aligned on. Per grammar:
    /// an event is a barrier exit only when the grammar that read it marks its kind, so a
    /// grammar that declares `dist_init_end` unmarked (or `barrier_exit = false`) does not
    /// borrow the mark SGLang's grammar gives its own `dist_init_end`.
    pub fn barrier_exit_kinds(&self) -> std::collections::BTreeSet<(String, String)> {
        self.grammars
            .iter()
            .flat_map(|g| {
                (g.spec.event.iter())
                    .filter(|e| e.barrier_exit)
                    .map(|e| (g.spec.id.clone(), e.kind.clone()))
            })
            .collect()
    }

    /// The built-in grammars in load order: by `priority`, then file name.
    pub fn builtin_grammars() -> Result<Vec<Grammar>, GrammarError> {
        // Each grammar compiles on its own (its JSON, regexes, frame tables), shared among
        // the pool's threads. `collect` keeps the order.
        let mut list = (BUILTIN.par_iter())
            .map(|(stem, toml, json)| Grammar::from_builtin(stem, toml, json))
            .collect::<Result<Vec<_>, _>>()?;
        list.sort_by_key(|g| g.spec.priority);
        Ok(list)
    }

    /// Compiles grammars, in load order, into one set.
    pub fn new(grammars: Vec<Grammar>) -> Result<GrammarSet, GrammarError> {
        Self::build(grammars, false)
    }

    /// [`GrammarSet::new`] for a command that reads logs: the prefix set every file's
    /// detection runs first is compiled now, beside the automata, not on the first
    /// file's critical path.
    pub fn for_reading_logs(grammars: Vec<Grammar>) -> Result<GrammarSet, GrammarError> {
        Self::build(grammars, true)
    }

    fn build(grammars: Vec<Grammar>, warm_prefix_set: bool) -> Result<GrammarSet, GrammarError> {
        let inputs = ScanInputs::of(&grammars);
        let prefix_set = PrefixSet::new(&grammars);
        // Built side by side: the per-line scanners with the line automaton (~5 M and
        // ~2.4 M instructions for the built-in grammars), and, for a command that reads
        // logs, the prefix set (~10 M: the prefixes' ASCII twins and their set).
        let (scanners, line_literals) = rayon::join(
            || {
                let patterns: Vec<&String> =
                    inputs.literals.iter().chain(&inputs.traffic).collect();
                (line_scanners(&inputs), line_automaton(&patterns))
            },
            || {
                if warm_prefix_set {
                    prefix_set.warm();
                }
            },
        )
        .0;
        let line_literals = line_literals?;
        let LineScanners {
            prefilter,
            start_ac,
            noise,
            traffic_shapes,
            bare_exact,
        } = scanners?;
        let mut knowledge = Knowledge::empty();
        for g in &grammars {
            knowledge.add(&g.spec.id, &g.frames, &g.outcomes, &g.know);
            knowledge
                .remedy
                .suspects
                .extend(g.remedy.suspects.iter().cloned());
            (knowledge.remedy.memory_models).extend(g.remedy.memory_models.iter().cloned());
        }
        Ok(GrammarSet {
            line_literals,
            traffic_shapes,
            bare_exact,
            prefilter,
            literal_owner: inputs.literal_owner,
            start_ac,
            record_starts: (inputs.starts.iter())
                .map(|s| s.as_bytes().into())
                .collect(),
            noise,
            reference_date: None,
            knowledge,
            prefix_set,
            dating: std::sync::OnceLock::new(),
            memos: MemoPool::new(&inputs.literals, &inputs.traffic),
            id: NEXT_SET_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            builtin: (grammars.iter())
                .map(|g| g.origin.starts_with("builtin:"))
                .collect(),
            grammars,
        })
    }

    /// Tells this set from every other the process built: what a thread learned of lines
    /// under one set (the scan's line shapes) is not taken for another's.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The frame tables and outcome wordings of all grammars, in load order.
    pub fn knowledge(&self) -> &Knowledge {
        &self.knowledge
    }

    /// Whether grammar `g` is a built-in one: those are tried after the user's grammars.
    pub(crate) fn is_builtin(&self, g: usize) -> bool {
        self.builtin.get(g).copied().unwrap_or(true)
    }

    /// Which grammars' prefixes the first lines of a source show: its family (or families,
    /// for a mixed stream), as detection reports it.
    pub(crate) fn detect(&self, head: &[u8]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for line in head.split(|&b| b == b'\n').take(64) {
            let text = crate::base::text::clean_cow(line);
            // The set is a filter (`prefix_set`): a prefix it names is tried with its own
            // regex, as `find_prefix` tries it; without a set, every prefix is.
            let named = self.prefix_set.matches(&text);
            let mut index = 0;
            for g in &self.grammars {
                let first = index;
                index += g.prefixes.len();
                let hit = |(pi, p): (usize, &CompiledPrefix)| {
                    named.as_ref().is_none_or(|m| m.matched(first + pi))
                        && p.regex.for_text(&text).is_some_and(|r| r.is_match(&text))
                };
                if !out.contains(&g.spec.id) && g.prefixes.iter().enumerate().any(hit) {
                    out.push(g.spec.id.clone());
                }
            }
            if out.len() == self.grammars.len() {
                break;
            }
        }
        out
    }

    /// Finds the record prefix that governs the text at `before` in `line`: the last
    /// prefix match of any grammar that ends at or before it.
    pub fn find_prefix(&self, line: &str, before: usize) -> Option<PrefixInfo> {
        let governing = self.governing_prefix(line, before)?;
        Some(self.read_governing(&governing, before))
    }

    /// What the governing prefix match `governing_prefix` found says of the text at
    /// `before`.
    pub(super) fn read_governing(
        &self,
        (found, straddles): &(PrefixMatch<'_, '_>, bool),
        before: usize,
    ) -> PrefixInfo {
        let (p, read_by) = (found.prefix, found.read_by);
        self.prefix_read(
            &found.caps,
            p,
            found.span.start,
            read_by,
            *straddles,
            before,
        )
    }

    /// The prefix match that governs the text at `before` (see [`GrammarSet::find_prefix`]),
    /// and whether the text begins inside it.
    pub(super) fn governing_prefix<'h>(
        &self,
        line: &'h str,
        before: usize,
    ) -> Option<(PrefixMatch<'_, 'h>, bool)> {
        // The governing prefix is the one that ends nearest the event (a record glued to a
        // progress bar, a wrapper in front); of those ending at the same place, the longest
        // (a vLLM process prefix plus its logger prefix beats the logger prefix alone).
        // A literal may also begin inside the prefix (`NCCL WARN`): then the prefix that
        // starts last before it governs (below), and the message starts at the literal.
        // Of two prefixes reading the same span, a user's grammar's beats a built-in one's,
        // as its events are tried first: a fork of vLLM that renames its workers reads
        // their rank with its own prefix, not with vLLM's, which names none there.
        let mut best: Option<PrefixMatch> = None;
        let mut straddling: Option<PrefixMatch> = None;
        // One pass of the set says which prefixes occur in the line at all; only those
        // are searched one by one (each prefix's own pass over every event line was a
        // tenth of loading 8,192 files).
        let present = self.prefix_set.matches(line);
        let mut index = 0;
        for (gi, g) in self.grammars.iter().enumerate() {
            let builtin = self.is_builtin(gi);
            for (pi, p) in g.prefixes.iter().enumerate() {
                let i = index;
                index += 1;
                if present.as_ref().is_some_and(|m| !m.matched(i)) {
                    continue;
                }
                // With its captures: the one that governs is read from them, without a
                // second search.
                let Some(regex) = p.regex.for_text(line) else {
                    continue;
                };
                for caps in regex.captures_iter(line) {
                    let Some(m) = caps.get(0) else { continue };
                    if m.start() > before {
                        break;
                    }
                    let found = PrefixMatch {
                        span: m.range(),
                        prefix: p,
                        builtin,
                        read_by: (gi, pi),
                        caps,
                    };
                    if m.end() <= before {
                        if best.as_ref().is_none_or(|b| found.governs_over(b)) {
                            best = Some(found);
                        }
                    } else if m.start() < before
                        && straddling.as_ref().is_none_or(|s| m.start() > s.span.start)
                    {
                        straddling = Some(found);
                    }
                }
            }
        }
        // A prefix the literal begins in governs over one that ends before the literal,
        // unless it starts inside that one: it reads the same record start further (c10's
        // `[rank4]:[E1202 09:24:03.5 ProcessGroupNCCL.cpp:616] ` over its `[rank4]:`, for
        // the `.cpp:` literal), or a record that starts after it (NCCL's `… NCCL WARN`
        // after a launcher's tag).
        let (found, straddles) = match (best, straddling) {
            (Some(b), Some(s)) if s.span.start <= b.span.start || s.span.start >= b.span.end => {
                (s, true)
            }
            (Some(b), _) => (b, false),
            (None, s) => (s?, true),
        };
        Some((found, straddles))
    }

    /// What prefix `p` (read by `read_by`), matched at `start` with these groups, says of
    /// the text at `before`; `straddles`: that text begins inside the prefix.
    pub(super) fn prefix_read<'h>(
        &self,
        caps: &impl Groups<'h>,
        p: &CompiledPrefix,
        start: usize,
        read_by: (usize, usize),
        straddles: bool,
        before: usize,
    ) -> PrefixInfo {
        let mut info = self.prefix_info(p, caps, start);
        if straddles {
            info.message_start = before;
        }
        info.read_by = Some(read_by);
        info
    }

    pub(super) fn prefix_info<'h>(
        &self,
        p: &CompiledPrefix,
        caps: &impl Groups<'h>,
        start: usize,
    ) -> PrefixInfo {
        let cx = ReadContext {
            reference_date: self.reference_date,
            knowledge: &self.knowledge,
        };
        p.read(caps, start, &cx)
    }

    /// Matches one clean line against the candidate events whose literals it hit.
    /// `cut` says the line is the truncated end of a file: captures that run to its end
    /// may be missing digits and are dropped, never read as a shorter number.
    pub(crate) fn match_line(
        &self,
        line: &str,
        candidates: &[(usize, usize, usize)],
        cut: bool,
    ) -> Option<LineMatch> {
        self.match_line_kept(line, candidates, cut, false).0
    }

    /// [`GrammarSet::match_line`], and, when `keep`, how the event found was read
    /// (`event_memo::Recipe`).
    pub(super) fn match_line_kept(
        &self,
        line: &str,
        candidates: &[(usize, usize, usize)],
        cut: bool,
        keep: bool,
    ) -> (Option<LineMatch>, Option<Recipe>) {
        let found = first_event(candidates, |_, candidate| {
            let mut recipe = None;
            let m = self.try_event_kept(line, candidate, cut, keep.then_some(&mut recipe))?;
            Some((m, recipe))
        });
        match found {
            Some((m, recipe)) => (Some(m), recipe),
            None => (None, None),
        }
    }

    pub(super) fn try_event(
        &self,
        line: &str,
        gi: usize,
        ei: usize,
        at: usize,
        cut: bool,
    ) -> Option<LineMatch> {
        self.try_event_kept(line, (gi, ei, at), cut, None)
    }

    /// [`GrammarSet::try_event`], and, given `keep`, what a line of the same shape needs
    /// to be read without a regex (`event_memo::Recipe`).
    pub(super) fn try_event_kept(
        &self,
        line: &str,
        candidate: (usize, usize, usize),
        cut: bool,
        keep: Option<&mut Option<Recipe>>,
    ) -> Option<LineMatch> {
        let at = candidate.2;
        let governing = self.governing_prefix(line, at);
        let prefix = (governing.as_ref()).map(|g| self.read_governing(g, at));
        let keep = keep.map(|slot| {
            let kept = governing.as_ref().map(|(f, s)| kept_prefix(f, *s));
            (slot, kept)
        });
        self.read_event(line, candidate, cut, prefix, keep)
    }

    /// The candidate's event, its governing prefix read (`prefix`); given `keep`, the
    /// recipe of the reading goes to its slot, with the prefix's part given.
    pub(super) fn read_event(
        &self,
        line: &str,
        (gi, ei, at): (usize, usize, usize),
        cut: bool,
        prefix: Option<PrefixInfo>,
        keep: Option<(&mut Option<Recipe>, Option<PrefixRecipe>)>,
    ) -> Option<LineMatch> {
        let ev = self.grammars.get(gi).and_then(|g| g.events.get(ei))?;
        // A line no prefix governs is read after its wrappers (`web-1  | ValueError: …`,
        // `[pod/x/c] E1124 …`), so anchored wordings hold behind them too.
        let msg_start = prefix.as_ref().map_or_else(
            || line.len() - crate::base::text::peel_transport(line.as_bytes()).len(),
            |p| p.message_start,
        );
        // A literal that begins inside the prefix (`NCCL WARN`, c10's `]:[W`, or a logfmt
        // `msg="ready"` written with the prefix's `msg="`) makes the regex start at the
        // literal; a regex that does not match there runs from the prefix's end, the
        // ordinary start, so either way of writing the literal works.
        let mut message_at = msg_start;
        let mut message = line.get(msg_start..).unwrap_or("");
        let caps = match ev.regex.captures(message) {
            Some(c) => c,
            None => {
                let end = prefix.as_ref().map(|p| p.prefix_end)?;
                if end <= msg_start {
                    return None;
                }
                message_at = end;
                message = line.get(end..)?;
                ev.regex.captures(message)?
            }
        };
        if let Some((slot, prefix)) = keep {
            *slot = Some(Recipe {
                event: (gi, ei, at),
                prefix,
                msg_start,
                message_at,
                groups: Spans::of(&caps),
            });
        }
        Some(self.finish_event(line, (gi, ev), prefix, (msg_start, message), &caps, cut))
    }

    /// The event `ev` of grammar `gi` read from its regex's groups in `message` (the text
    /// its regex searched, in `line`, where the message starts at `msg_start`), after the
    /// prefix read.
    pub(super) fn finish_event<'h>(
        &self,
        line: &'h str,
        (gi, ev): (usize, &CompiledEvent),
        prefix: Option<PrefixInfo>,
        (msg_start, message): (usize, &'h str),
        caps: &impl Groups<'h>,
        cut: bool,
    ) -> LineMatch {
        // A literal inside the prefix made the regex start there; the reader is shown the
        // text after the prefix, not a remnant of it (`]:[W1130 09:24:29.99… file.cpp:1] …`).
        let shown = prefix
            .as_ref()
            .filter(|p| p.prefix_end > msg_start)
            .and_then(|p| line.get(p.prefix_end..))
            .unwrap_or(message);
        // Room for every capture, the slack of those that did not take part given back
        // below: one pass over the captures, one allocation kept (see base::fields).
        let mut fields = ev.preset.builder_with_room(ev.regex.field_names().len());
        let mut cut_fields = Vec::new();
        for ((name, group), &unit) in ev.regex.named_groups().zip(&ev.capture_units) {
            let Some(m) = caps.group(group) else { continue };
            if cut && m.end == message.len() {
                cut_fields.push(name.to_string());
                continue;
            }
            if let Some(v) = convert(m.as_str(), unit) {
                fields.insert(name.clone(), v);
            }
        }
        let fields = fields.build();
        // A rank-less `[[suffix]]` of the event's grammar ends the quoted message where it
        // matches (a configuration line keeps all of it: it is read from its message).
        // What it cut is kept beside the message.
        let shown = shown.trim_end();
        let (shown, trailer) = match self.grammars.get(gi) {
            Some(g) if ev.kind != crate::base::event::kind::SERVER_ARGS => (g.know.field_suffixes)
                .iter()
                .find_map(|r| r.find(shown).map(|m| shown.split_at(m.start())))
                .map_or((shown, None), |(kept, cut)| (kept, Some(cut.trim()))),
            _ => (shown, None),
        };
        // Only fields are worth keeping: a suffix that cut a closing `"` or `"}` alone
        // (most lines of a JSON or logfmt server) costs no allocation.
        let trailer = trailer
            .filter(|t| t.chars().any(char::is_alphanumeric))
            .map(|t| bounded(t, MAX_MESSAGE));
        LineMatch {
            grammar: gi,
            kind: ev.kind.clone(),
            fields,
            prefix,
            message: bounded(
                shown.trim_end(),
                if ev.kind == crate::base::event::kind::SERVER_ARGS {
                    MAX_CONFIG_MESSAGE
                } else {
                    MAX_MESSAGE
                },
            ),
            traceback: ev.traceback,
            cut_fields,
            trailer,
        }
    }

    /// Matches a line the way the scanner does, from scratch (for samples and tests).
    pub fn match_text(&self, line: &str) -> Option<LineMatch> {
        self.match_line(line, &self.candidates(line), false)
    }
}

/// The most of a record's message an event keeps (configuration dumps run to a few KB;
/// a hostile or flattened line can be megabytes, and every event holds its message).
pub(crate) const MAX_MESSAGE: usize = 16 << 10;

/// The most of a configuration line (`server_args`) an event keeps: the configuration is
/// read from it, and a cut there loses the settings a diff compares. Real dumps run to
/// about 20 KiB (SGLang with every option printed); the run's text budget bounds the sum.
pub(crate) const MAX_CONFIG_MESSAGE: usize = 1 << 20;

/// What `bounded` appends to a message it cut: `… [N more bytes]`.
pub(super) const CUT_MARK_OPEN: &str = "… [";
pub(super) const CUT_MARK_CLOSE: &str = " more bytes]";

/// `message` cut to `limit` bytes (at a character's end) with the mark that says how
/// many more there were (`strip_cut_mark` reads it back).
pub(crate) fn bounded(message: &str, limit: usize) -> String {
    if message.len() <= limit {
        return message.to_string();
    }
    let mut end = limit;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}{CUT_MARK_OPEN}{}{CUT_MARK_CLOSE}",
        &message[..end],
        message.len() - end
    )
}

/// A message without the mark `bounded` put at its end, and whether it had one: the
/// text before the mark is what the line said, read as a line cut short.
pub(crate) fn strip_cut_mark(message: &str) -> (&str, bool) {
    if let Some(head) = message.strip_suffix(CUT_MARK_CLOSE) {
        if let Some(at) = head.rfind(CUT_MARK_OPEN) {
            let count = &head[at + CUT_MARK_OPEN.len()..];
            if !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit()) {
                return (&message[..at], true);
            }
        }
    }
    (message, false)
}

/// Converts a captured text into the field's canonical unit.
pub(crate) fn convert(text: &str, unit: Unit) -> Option<FieldValue> {
    let t = text.trim();
    match unit {
        Unit::Text => Some(FieldValue::Text(t.into())),
        // Thousands commas out (`1,024`), copying only a number that has them.
        Unit::Int if t.contains(',') => t.replace(',', "").parse().ok().map(FieldValue::Int),
        Unit::Int => t.parse().ok().map(FieldValue::Int),
        Unit::Float | Unit::Seconds => units::parse_decimal(t).map(|(v, _)| FieldValue::Float(v)),
        Unit::Milliseconds => units::parse_decimal(t).map(|(v, _)| FieldValue::Float(v / 1000.0)),
        Unit::DecimalMb | Unit::DecimalGb => {
            let mult = if unit == Unit::DecimalGb { 1e9 } else { 1e6 };
            let (value, step) = units::parse_decimal(t)?;
            let bytes = (value * mult).round();
            (bytes.abs() <= 9.0e18).then(|| FieldValue::Bytes {
                bytes: bytes as i64,
                resolution: (step * mult).round().max(1.0) as u64,
            })
        }
        Unit::Size => {
            units::parse_size(t).map(|(bytes, resolution)| FieldValue::Bytes { bytes, resolution })
        }
        Unit::Bytes
        | Unit::KiB
        | Unit::MiB
        | Unit::GiB
        | Unit::MbMeaningMiB
        | Unit::GbMeaningGiB => {
            // The printed unit is declared by the grammar; `GB` and `MB` are read as the
            // binary units the servers compute them in.
            let name = match unit {
                Unit::Bytes => "B",
                Unit::KiB => "KiB",
                Unit::MiB | Unit::MbMeaningMiB => "MiB",
                _ => "GiB",
            };
            units::to_bytes(t, name)
                .map(|(bytes, resolution)| FieldValue::Bytes { bytes, resolution })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{convert, FieldValue, Unit};

    /// The set of one grammar written in `toml`.
    fn set_of(toml: &str, file: &str) -> crate::grammar::GrammarSet {
        let g = crate::grammar::Grammar::from_toml(toml, file).unwrap();
        crate::grammar::GrammarSet::new(vec![g]).unwrap()
    }

    #[test]
    fn a_rankless_suffix_keeps_what_it_cut_beside_the_message() {
        let toml = r#"
id = "emberline"
name = "emberline"
[[prefix]]
id = "logfmt"
regex = '''ts=(?P<stamp>\S+) level=\w+ rank=(?P<tp>\d+) msg="'''
stamp_format = "%Y-%m-%dT%H:%M:%S%.3fZ"
[[suffix]]
id = "fields"
regex = '''"(?: \w+=(?:"[^"]*"|\S*))*$'''
[[event]]
kind = "error"
literals = ['msg="engine failed']
regex = '''^engine failed'''
[[event]]
kind = "server_args"
literals = ['msg="options"']
regex = '''^options'''
"#;
        let gs = set_of(toml, "emberline.toml");
        let stamp = "ts=2026-12-02T09:00:03.000Z level=error rank=0 ";
        let m = gs
            .match_text(&format!(
                r#"{stamp}msg="engine failed" err="kv layout hnd unsupported" code=7"#
            ))
            .unwrap();
        assert_eq!(m.message, "engine failed");
        assert_eq!(
            m.trailer.as_deref(),
            Some(r#"" err="kv layout hnd unsupported" code=7"#)
        );
        // A suffix that cut only the closing quote cut no field: nothing is kept.
        let bare = gs
            .match_text(&format!(r#"{stamp}msg="engine failed""#))
            .unwrap();
        assert_eq!(bare.message, "engine failed");
        assert_eq!(bare.trailer, None);
        // A configuration line is not cut, so it has none.
        let cfg = gs
            .match_text(&format!(r#"{stamp}msg="options" opts={{'a': 1}}"#))
            .unwrap();
        assert_eq!(cfg.trailer, None);
    }

    #[test]
    fn literals_that_overlap_on_a_line_are_each_tried() {
        // `pool ready` and `ready to serve` share `ready` on the line below. A search that
        // resumes after each literal found (as the literal groups did) never saw the
        // second, so its event was not tried when the first one's regex failed.
        let toml = r#"
id = "overlap"
name = "overlap"
[[event]]
kind = "error"
literals = ["pool ready"]
regex = '''^pool ready$'''
[[event]]
kind = "ready"
literals = ["ready to serve"]
regex = '''ready to serve on (?P<port>\d+)'''
"#;
        let gs = set_of(toml, "overlap.toml");
        let line = "KV pool ready to serve on 30000";
        let tried: Vec<(usize, usize)> = (gs.candidates(line).iter())
            .map(|&(_, e, at)| (e, at))
            .collect();
        // By hand: `pool ready` starts at byte 3, `ready to serve` at byte 8.
        assert_eq!(tried, vec![(0, 3), (1, 8)]);
        let m = gs.match_text(line).expect("the second event matches");
        assert_eq!(m.kind, "ready");
        // An event whose literal occurs twice is tried once, at the first.
        let twice = gs.candidates("ready to serve, ready to serve on 1");
        assert_eq!(twice.iter().map(|c| c.2).collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn decimal_units_and_milliseconds_convert() {
        // NVML's `85.52 GB`: 85.52 × 10^9 bytes, to 0.01 GB (10^7 bytes).
        assert_eq!(
            convert("85.52", Unit::DecimalGb),
            Some(FieldValue::Bytes {
                bytes: 85_520_000_000,
                resolution: 10_000_000
            })
        );
        assert_eq!(
            convert("512", Unit::DecimalMb),
            Some(FieldValue::Bytes {
                bytes: 512_000_000,
                resolution: 1_000_000
            })
        );
        // The binary `GB` stays 2^30.
        assert_eq!(
            convert("1", Unit::GbMeaningGiB),
            Some(FieldValue::Bytes {
                bytes: 1 << 30,
                resolution: 1 << 30
            })
        );
        assert_eq!(
            convert("828", Unit::Milliseconds),
            Some(FieldValue::Float(0.828))
        );
    }
}
