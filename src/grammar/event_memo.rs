//! The event memo: how an event line was read, kept by its shape, so that the next line
//! of that shape is read from the kept spans instead of by the regexes.
//!
//! The ranks of a run print the same start-up lines, differing in their numbers: the
//! stamp, the rank in the prefix, the memory each measured. Reading one such line is
//! most of the cost of a rank file (the prefix set, the governing prefix's captures,
//! the event's: ~17,000 instructions of the ~21,000 an event line cost on 1,024 rank
//! files). A line's *shape* is its text with every ASCII digit written `0`: two lines of
//! one shape differ only in which digits they hold. (Whether a line is the cut end of its
//! file changes only which fields are read, which is done again for every line.)
//!
//! Why a kept reading is the reading: a regex looks at its text only through its literals,
//! its classes and its look-arounds. One whose literals hold no ASCII digit and whose every
//! class holds all ten digits or none ([`treats_digits_alike`]; word boundaries see every
//! digit as a word character, `^`/`$` see none) takes each step the same way on both lines,
//! so it matches the same spans with the same groups, or fails on both. So, for a line that
//! holds no event literal with a digit (`Signal 15 (SIGTERM)` is read in full wherever it
//! occurs), the literals' candidates are the same on both lines and are kept (a traffic
//! literal, which may empty them, holds a digit only among all ten variants of it,
//! uvicorn's `INFO:     0` … `INFO:     9`, else a line holding one is read in full too);
//! when every prefix regex (each may govern) is such a regex, so is the prefix that governs
//! each candidate; and when the regex of every candidate event is too, so are the event
//! that matches and where its message starts. Everything read from the groups' text
//! (stamps, ranks, fields, the shown message and its suffix) is read again from the new
//! line. A line no prefix governs starts its message after its wrappers (`peel_transport`,
//! hand-written): that length is taken again and compared, and the line is read in full
//! where it differs. For a line whose candidate events' regexes tell digits apart (vLLM's
//! `V[01]`; NCCL's `0x` communicator ids are written `[0-9]x` for this) only the
//! candidates and the governing prefixes are kept, and the events' regexes run.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Mutex, OnceLock};

use regex_syntax::hir::{Class, Hir, HirKind};

use super::prefix::{Found, Groups};
use super::{GrammarSet, LineMatch, PrefixInfo};

/// Lines longer than this are read in full, not kept: a configuration dump is one line
/// per start-up, and its text, tens of KiB, would be the key.
const MAX_LINE: usize = 1024;

/// Shapes a memo keeps before it starts again: a run's start-up lines are a few dozen
/// shapes per digit count of the rank; the bound holds a memo to ~1.3 MiB (shapes up to
/// [`MAX_LINE`] and their spans) whatever a hostile input varies.
const MAX_KEPT: usize = 1024;

/// Whether `pattern` matches the same spans with the same groups in any two texts that
/// differ only in which ASCII digits they hold: no literal holds a digit, and every class
/// holds all ten or none. `false` for a pattern that does not parse.
pub(super) fn treats_digits_alike(pattern: &str) -> bool {
    fn alike(h: &Hir) -> bool {
        let all_or_none = |holds: &dyn Fn(u8) -> bool| {
            let n = (b'0'..=b'9').filter(|&d| holds(d)).count();
            n == 0 || n == 10
        };
        match h.kind() {
            HirKind::Literal(l) => !l.0.iter().any(u8::is_ascii_digit),
            HirKind::Class(Class::Unicode(c)) => all_or_none(&|d| {
                let d = char::from(d);
                c.ranges().iter().any(|r| r.start() <= d && d <= r.end())
            }),
            HirKind::Class(Class::Bytes(c)) => {
                all_or_none(&|d| c.ranges().iter().any(|r| r.start() <= d && d <= r.end()))
            }
            HirKind::Repetition(r) => alike(&r.sub),
            HirKind::Capture(c) => alike(&c.sub),
            HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().all(alike),
            HirKind::Empty | HirKind::Look(_) => true,
        }
    }
    regex_syntax::parse(pattern).is_ok_and(|h| alike(&h))
}

/// The spans of a match's groups, by group index, in the text searched. Kept only of
/// lines up to [`MAX_LINE`] bytes, whose offsets always fit a `u32`.
pub(crate) struct Spans(Box<[Option<(u32, u32)>]>);

impl Spans {
    pub(super) fn of(caps: &regex::Captures<'_>) -> Spans {
        let span = |m: regex::Match<'_>| {
            Some((u32::try_from(m.start()).ok()?, u32::try_from(m.end()).ok()?))
        };
        Spans(caps.iter().map(|m| m.and_then(span)).collect())
    }
}

/// Kept spans read as groups of another text of the same shape.
struct SpanGroups<'a, 'h> {
    text: &'h str,
    spans: &'a Spans,
}

impl<'h> Groups<'h> for SpanGroups<'_, 'h> {
    fn group(&self, index: usize) -> Option<Found<'h>> {
        let (start, end) = (*self.spans.0.get(index)?)?;
        let (start, end) = (start as usize, end as usize);
        Some(Found {
            start,
            end,
            text: self.text.get(start..end)?,
        })
    }
}

/// The governing prefix of a kept reading.
pub(crate) struct PrefixRecipe {
    /// (grammar, prefix) indices.
    pub(super) read_by: (usize, usize),
    pub(super) start: usize,
    /// In the line.
    pub(super) groups: Spans,
    /// The event's literal begins inside the prefix.
    pub(super) straddles: bool,
}

/// How a line was read: what a line of the same shape needs to be read the same way.
pub(crate) struct Recipe {
    /// (grammar, event, literal offset): the candidate that matched.
    pub(super) event: (usize, usize, usize),
    pub(super) prefix: Option<PrefixRecipe>,
    /// Where the message starts (the prefix's end, the literal, or after the wrappers).
    pub(super) msg_start: usize,
    /// Where the event's regex matched from.
    pub(super) message_at: usize,
    /// The event's groups, in the text from `message_at`.
    pub(super) groups: Spans,
}

/// How a line of a shape was read.
enum Reading {
    /// No candidate's event matched.
    NoEvent,
    Event(Recipe),
    /// An event regex that could read it tells digits apart: each such line is read by
    /// the events' regexes, from the kept candidates and the prefix that governs each
    /// (the prefixes' regexes treat digits alike, so these hold for it).
    InFull(Box<[Option<PrefixRecipe>]>),
}

/// What the memo keeps of one shape.
struct Kept {
    /// The line's text with its digits written `0`.
    shape: Box<[u8]>,
    /// The (grammar, event, literal offset) candidates its literals gave.
    candidates: Box<[(usize, usize, usize)]>,
    reading: Reading,
}

/// What the memo keeps of a record line read for its prefix alone
/// ([`GrammarSet::read_prefix_line`]).
struct KeptPrefix {
    shape: Box<[u8]>,
    /// The governing prefix's match, if any prefix matched.
    prefix: Option<PrefixRecipe>,
}

/// One scanning thread's kept readings (taken from [`MemoPool`] for a block).
#[derive(Default)]
pub(crate) struct EventMemo {
    /// The current line's shape, built here so a line read from the memo allocates none.
    shape: Vec<u8>,
    /// By the shape's hash (two shapes of one hash: the later replaces the earlier).
    /// The table's own hasher is seeded per process, so no input chooses its buckets.
    kept: HashMap<u64, Kept, foldhash::fast::RandomState>,
    /// Record lines read for their prefix alone (a file's first line of each process:
    /// which rank it names), by shape, as `kept` holds event lines.
    prefix_lines: HashMap<u64, KeptPrefix, foldhash::fast::RandomState>,
    /// Lines read from the memo (for tests).
    pub(crate) hits: u64,
}

impl EventMemo {
    /// Writes the line's shape into `self.shape`; its hash.
    fn shape_of(&mut self, line: &str) -> u64 {
        let shape = &mut self.shape;
        shape.clear();
        shape.extend(
            line.bytes()
                .map(|b| if b.is_ascii_digit() { b'0' } else { b }),
        );
        foldhash::fast::FixedState::default().hash_one(shape.as_slice())
    }
}

/// The memos the scanning threads take a block at a time, and what decides whether a
/// line may be read from one.
pub(crate) struct MemoPool {
    idle: Mutex<Vec<EventMemo>>,
    prefixes_alike: OnceLock<bool>,
    digit_literals: DigitLiterals,
}

/// The event literals that hold a digit (`Signal 15 (SIGTERM)`): where one is found
/// differs between lines of one shape, so a line holding one is read in full.
enum DigitLiterals {
    None,
    Searched(aho_corasick::AhoCorasick),
    /// Their searcher did not build: every line is read in full.
    Unsearchable,
}

impl DigitLiterals {
    fn held_by(&self, line: &str) -> bool {
        match self {
            DigitLiterals::None => false,
            DigitLiterals::Searched(ac) => ac.is_match(line),
            DigitLiterals::Unsearchable => true,
        }
    }
}

impl MemoPool {
    /// `traffic`: the traffic literals, which need no full reading where every digit
    /// variant of each is one too (`INFO:     0` … `INFO:     9`): a line and another
    /// that differs only in its digits then hold traffic literals at the same places.
    pub(super) fn new(literals: &[String], traffic: &[String]) -> MemoPool {
        let digit_closed = traffic.iter().all(|t| {
            let t = t.as_bytes();
            (0..t.len()).filter(|&i| t[i].is_ascii_digit()).all(|i| {
                (b'0'..=b'9').all(|d| {
                    let mut v = t.to_vec();
                    v[i] = d;
                    traffic.iter().any(|o| o.as_bytes() == v.as_slice())
                })
            })
        });
        let traffic_with_digits = if digit_closed { &[][..] } else { traffic };
        let with_digits: Vec<&String> = (literals.iter().chain(traffic_with_digits))
            .filter(|l| l.bytes().any(|b| b.is_ascii_digit()))
            .collect();
        let digit_literals = match aho_corasick::AhoCorasick::new(&with_digits) {
            _ if with_digits.is_empty() => DigitLiterals::None,
            Ok(ac) => DigitLiterals::Searched(ac),
            Err(_) => DigitLiterals::Unsearchable,
        };
        MemoPool {
            idle: Mutex::new(Vec::new()),
            prefixes_alike: OnceLock::new(),
            digit_literals,
        }
    }
}

impl GrammarSet {
    /// A memo for a block's event lines: one a finished block gave back, with what it
    /// kept, else a new one.
    pub(crate) fn take_event_memo(&self) -> EventMemo {
        let idle = self.memos.idle.lock();
        idle.ok().and_then(|mut v| v.pop()).unwrap_or_default()
    }

    pub(crate) fn give_back_event_memo(&self, memo: EventMemo) {
        if let Ok(mut idle) = self.memos.idle.lock() {
            idle.push(memo);
        }
    }

    /// The event a line the prefilter hit gives, as [`GrammarSet::match_line`] reads it
    /// with the line's [`GrammarSet::candidates`]: from `memo` where a line of the same
    /// shape was read before (see the module's note), and kept there when not.
    pub(crate) fn read_event_line(
        &self,
        line: &str,
        cut: bool,
        memo: &mut EventMemo,
    ) -> Option<LineMatch> {
        if line.len() > MAX_LINE || self.memos.digit_literals.held_by(line) {
            return self.match_line(line, &self.candidates(line), cut);
        }
        let hash = memo.shape_of(line);
        if let Some(kept) = (memo.kept.get(&hash)).filter(|k| *k.shape == *memo.shape) {
            let read = match &kept.reading {
                Reading::NoEvent => Some(None),
                Reading::Event(recipe) => self.replay(line, recipe, cut).map(Some),
                Reading::InFull(prefixes) => {
                    Some(self.read_in_full(line, &kept.candidates, prefixes, cut))
                }
            };
            return match read {
                Some(read) => {
                    memo.hits += 1;
                    read
                }
                None => self.match_line(line, &kept.candidates, cut),
            };
        }
        let candidates = self.candidates(line);
        let (read, reading) = if self.reads_digits_alike(&candidates) {
            match self.match_line_kept(line, &candidates, cut, true) {
                (read, Some(recipe)) => (read, Reading::Event(recipe)),
                (read, None) => (read, Reading::NoEvent),
            }
        } else {
            let governing = |&(_, _, at): &(usize, usize, usize)| {
                let found = self.governing_prefix(line, at);
                found.map(|(found, straddles)| super::set::kept_prefix(&found, straddles))
            };
            let prefixes: Box<[Option<PrefixRecipe>]> = candidates.iter().map(governing).collect();
            let read = self.read_in_full(line, &candidates, &prefixes, cut);
            (read, Reading::InFull(prefixes))
        };
        if memo.kept.len() >= MAX_KEPT {
            memo.kept.clear();
        }
        let kept = Kept {
            shape: memo.shape.as_slice().into(),
            candidates: candidates.into(),
            reading,
        };
        memo.kept.insert(hash, kept);
        read
    }

    /// [`GrammarSet::find_prefix`] of `line` at its end (the prefix a record line of no
    /// event opens with, for the rank it names): from `memo` where a line of the same
    /// shape was read before, and kept there when not. Exact for the reason event lines
    /// are (the module's note): every prefix regex treats digits alike, or no line is kept.
    pub(crate) fn read_prefix_line(&self, line: &str, memo: &mut EventMemo) -> Option<PrefixInfo> {
        let end = line.len();
        if end > MAX_LINE || !self.prefixes_alike() {
            return self.find_prefix(line, end);
        }
        let hash = memo.shape_of(line);
        if let Some(kept) = (memo.prefix_lines.get(&hash)).filter(|k| *k.shape == *memo.shape) {
            let read = match &kept.prefix {
                None => Some(None),
                Some(p) => self.read_kept_prefix(line, p, end).map(Some),
            };
            return match read {
                Some(read) => {
                    memo.hits += 1;
                    read
                }
                None => self.find_prefix(line, end),
            };
        }
        let governing = self.governing_prefix(line, end);
        let read = (governing.as_ref()).map(|g| self.read_governing(g, end));
        let prefix = (governing.as_ref()).map(|(f, s)| super::set::kept_prefix(f, *s));
        if memo.prefix_lines.len() >= MAX_KEPT {
            memo.prefix_lines.clear();
        }
        let kept = KeptPrefix {
            shape: memo.shape.as_slice().into(),
            prefix,
        };
        memo.prefix_lines.insert(hash, kept);
        read
    }

    /// Every prefix regex treats digits alike (asked once).
    fn prefixes_alike(&self) -> bool {
        *self.memos.prefixes_alike.get_or_init(|| {
            (self.grammars.iter().flat_map(|g| &g.prefixes)).all(|p| p.regex.treats_digits_alike())
        })
    }

    /// Whether every regex that could read a line with these candidates treats digits
    /// alike: every prefix's, and each candidate event's.
    fn reads_digits_alike(&self, candidates: &[(usize, usize, usize)]) -> bool {
        self.prefixes_alike()
            && candidates.iter().all(|&(gi, ei, _)| {
                (self.grammars.get(gi).and_then(|g| g.events.get(ei)))
                    .is_some_and(|ev| ev.regex.treats_digits_alike())
            })
    }

    /// The line's event read by the events' regexes, after the governing prefixes kept
    /// for its candidates (`prefixes[i]` for `candidates[i]`).
    fn read_in_full(
        &self,
        line: &str,
        candidates: &[(usize, usize, usize)],
        prefixes: &[Option<PrefixRecipe>],
        cut: bool,
    ) -> Option<LineMatch> {
        let read = |i: usize, candidate: (usize, usize, usize)| {
            let prefix = match prefixes.get(i)? {
                Some(p) => Some(self.read_kept_prefix(line, p, candidate.2)?),
                None => None,
            };
            Some((self.read_event(line, candidate, cut, prefix, None)?, ()))
        };
        super::set::first_event(candidates, read).map(|(m, ())| m)
    }

    /// A governing prefix read from the spans kept of it; `at`: where the event's literal
    /// begins.
    fn read_kept_prefix(&self, line: &str, p: &PrefixRecipe, at: usize) -> Option<PrefixInfo> {
        let (pg, pi) = p.read_by;
        let compiled = self.grammars.get(pg).and_then(|g| g.prefixes.get(pi))?;
        let groups = SpanGroups {
            text: line,
            spans: &p.groups,
        };
        Some(self.prefix_read(&groups, compiled, p.start, p.read_by, p.straddles, at))
    }

    /// The line read as `recipe` says; `None` where its wrappers end elsewhere than the
    /// kept line's (then it is read in full).
    fn replay(&self, line: &str, recipe: &Recipe, cut: bool) -> Option<LineMatch> {
        let (gi, ei, at) = recipe.event;
        let ev = self.grammars.get(gi).and_then(|g| g.events.get(ei))?;
        let prefix = match &recipe.prefix {
            Some(p) => Some(self.read_kept_prefix(line, p, at)?),
            None => {
                let peeled = crate::base::text::peel_transport(line.as_bytes()).len();
                if line.len() - peeled != recipe.msg_start {
                    return None;
                }
                None
            }
        };
        let message = line.get(recipe.message_at..)?;
        let groups = SpanGroups {
            text: message,
            spans: &recipe.groups,
        };
        Some(self.finish_event(
            line,
            (gi, ev),
            prefix,
            (recipe.msg_start, message),
            &groups,
            cut,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traffic_literal_with_a_digit_is_read_alike_only_among_all_its_variants() {
        // `rq 1: ` alone marks traffic: `rq 2: …`, the same shape, is no traffic and its
        // event must be read, not taken from the memo of the line before.
        let grammar = |traffic: &str| {
            let toml = format!(
                "id = \"emberline\"\nname = \"emberline\"\n\
                 [[event]]\nkind = \"kv_cache_alloc\"\nphase = \"kv_cache\"\n\
                 literals = [\"KV pool ready\"]\nregex = '''KV pool ready: (?P<tokens>\\d+) tokens'''\n\
                 [[noise]]\nid = \"requests\"\ntraffic = true\nliterals = [{traffic}]\n"
            );
            let g = crate::grammar::Grammar::from_toml(&toml, "emberline.toml").unwrap();
            GrammarSet::new(vec![g]).unwrap()
        };
        let (first, second) = (
            "rq 1: KV pool ready: 5 tokens",
            "rq 2: KV pool ready: 5 tokens",
        );
        let one = grammar("\"rq 1: \"");
        let mut memo = EventMemo::default();
        assert!(one.read_event_line(first, false, &mut memo).is_none());
        let read = one.read_event_line(second, false, &mut memo);
        assert_eq!(
            read.map(|m| m.kind.to_string()),
            Some("kv_cache_alloc".into())
        );
        // With all ten variants the two lines are both traffic.
        let all: Vec<String> = (0..10).map(|d| format!("\"rq {d}: \"")).collect();
        let ten = grammar(&all.join(", "));
        let mut memo = EventMemo::default();
        assert!(ten.read_event_line(first, false, &mut memo).is_none());
        assert!(ten.read_event_line(second, false, &mut memo).is_none());
    }

    #[test]
    fn a_pattern_treats_digits_alike_only_without_a_digit_it_singles_out() {
        for alike in [
            r"\d+ GB",
            r"[\w.-]+:\d+",
            r"[^0-9]+",
            r"(?i)tp(\d+)",
            r"\bx.y",
            r"[[:alnum:]]",
        ] {
            assert!(treats_digits_alike(alike), "{alike}");
        }
        for apart in [
            r"0x[0-9a-f]+",
            r"V[01]",
            r"[1-9]\d*",
            r"Signal 15",
            r"[^5]",
            r"(?:a|7)",
        ] {
            assert!(!treats_digits_alike(apart), "{apart}");
        }
        // The built-in grammars: every prefix treats digits alike (else the memo never
        // serves them), and the wordings named in the module's note do not.
        let gs = GrammarSet::builtin().unwrap();
        let prefixes = gs.grammars.iter().flat_map(|g| &g.prefixes);
        assert!(prefixes.clone().count() > 10);
        for p in prefixes {
            assert!(p.regex.treats_digits_alike(), "{}", p.regex.as_str());
        }
        let apart: Vec<&str> = (gs.grammars.iter().flat_map(|g| &g.events))
            .filter(|e| !e.regex.treats_digits_alike())
            .map(|e| e.regex.as_str())
            .collect();
        // These two and no more: NCCL's communicator ids are written `[0-9]x`, so its
        // `Init START` line, one in every rank file, is read like the rank's before it.
        assert_eq!(apart.len(), 2, "{apart:?}");
        assert!(apart.iter().any(|p| p.contains("Signal 15")), "{apart:?}");
        assert!(apart.iter().any(|p| p.contains("V[01]")), "{apart:?}");
    }

    /// `line` with each ASCII digit moved on by `shift` plus its place, mod 10: the same
    /// shape, other numbers (some of them no valid stamp or rank).
    fn other_digits(line: &str, shift: u8) -> String {
        (line.bytes().enumerate())
            .map(|(i, b)| match b {
                b'0'..=b'9' => char::from(b'0' + (b - b'0' + shift + (i % 7) as u8) % 10),
                _ => char::from(b),
            })
            .collect::<String>()
            .chars()
            .zip(line.chars())
            .map(|(c, orig)| if orig.is_ascii() { c } else { orig })
            .collect()
    }

    /// Every sample line of the built-in grammars, then `own`.
    fn samples_and(gs: &GrammarSet, own: &[&str]) -> Vec<String> {
        (gs.grammars.iter().flat_map(|g| &g.spec.sample))
            .map(|s| s.line.clone())
            .chain(own.iter().map(|s| s.to_string()))
            .collect()
    }

    #[test]
    fn a_line_read_from_the_memo_reads_as_it_reads_from_scratch() {
        // Every sample line of the built-in grammars, and lines of the shapes a rank file
        // repeats, each read once into the memo and then in five variants of other
        // digits: each variant must read (kind, fields, prefix, message, cut fields) as
        // the regexes read it from scratch.
        let gs = GrammarSet::builtin().unwrap();
        let own = [
            "[2026-11-29 09:18:14 TP7] Load weight end. elapsed=4.06 s, type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=6.60 GB, mem usage=7.29 GB.",
            "[2026-11-29 09:18:18 DP1 TP12] KV Cache is allocated. #tokens: 91141, K size: 2.98 GB, V size: 2.98 GB",
            "(Worker_TP3 pid=4121) INFO 11-29 09:18:14 [gpu_model_runner.py:2007] Model loading took 14.2541 GiB and 6.129371 seconds",
            "(EngineCore_DP0 pid=812) ERROR 11-29 09:18:20 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 139.81 GiB of which 1.06 GiB is free.",
            "[2026-11-29 09:18:14 TP99999999999] Load weight begin. avail mem=14.00 GB",
            "[2026-13-45 29:18:14 TP1] Init torch distributed ends. elapsed=1.38 s, mem usage=0.60 GB",
        ];
        let lines = samples_and(&gs, &own);
        let mut memo = EventMemo::default();
        let (mut compared, mut events) = (0, 0);
        for line in &lines {
            for cut in [false, true] {
                let candidates = gs.candidates(line);
                let first = gs.read_event_line(line, cut, &mut memo);
                assert_eq!(first, gs.match_line(line, &candidates, cut), "{line}");
                for shift in 1..=5 {
                    let variant = other_digits(line, shift);
                    let candidates = gs.candidates(&variant);
                    let from_memo = gs.read_event_line(&variant, cut, &mut memo);
                    let from_scratch = gs.match_line(&variant, &candidates, cut);
                    events += usize::from(from_scratch.is_some());
                    assert_eq!(from_memo, from_scratch, "{variant} (cut: {cut})");
                    compared += 1;
                }
            }
        }
        assert!(compared > 1000, "{compared} variants compared");
        assert!(events > 500, "{events} variants gave an event");
        // Most variants were read from the memo: the comparison above tested it.
        assert!(
            memo.hits * 2 > compared as u64,
            "{} of {compared} from the memo",
            memo.hits
        );
    }

    #[test]
    fn a_record_line_read_for_its_prefix_from_the_memo_reads_as_from_scratch() {
        // The record lines a rank names itself in (traffic, no event), every sample line
        // and variants of other digits (some no valid stamp, a rank past 2^32): the
        // prefix each gives from the memo is the one `find_prefix` gives at its end.
        let gs = GrammarSet::builtin().unwrap();
        let own = [
            "[2026-11-29 09:18:30 TP3] Decode batch. #running-req: 12, #token: 3456, token usage: 0.05, gen throughput (token/s): 123.45, #queue-req: 0",
            "[2026-11-29 09:18:30 DP1 TP12] Prefill batch. #new-seq: 1, #new-token: 512",
            "(Worker_TP3 pid=4121) INFO 11-29 09:18:14 [gpu_model_runner.py:2007] Starting to load model",
            "[2026-11-29 09:18:14 TP99999999999] Decode batch. #running-req: 1",
            "no prefix at all 12",
        ];
        let lines = samples_and(&gs, &own);
        let mut memo = EventMemo::default();
        let (mut compared, mut ranked) = (0, 0);
        for line in &lines {
            let first = gs.read_prefix_line(line, &mut memo);
            assert_eq!(first, gs.find_prefix(line, line.len()), "{line}");
            for shift in 1..=5 {
                let variant = other_digits(line, shift);
                let from_memo = gs.read_prefix_line(&variant, &mut memo);
                let from_scratch = gs.find_prefix(&variant, variant.len());
                ranked += usize::from(from_scratch.as_ref().is_some_and(|p| p.rank.is_some()));
                assert_eq!(from_memo, from_scratch, "{variant}");
                compared += 1;
            }
        }
        assert!(ranked > 100, "{ranked} variants named a rank");
        assert_eq!(memo.hits, compared as u64, "every variant from the memo");
        // By hand: the first own line names TP3, the second DP1 TP12.
        let mut rank = |line: &str| gs.read_prefix_line(line, &mut memo).and_then(|p| p.rank);
        assert_eq!(rank(own[0]).map(|r| r.to_string()), Some("TP3".into()));
        assert_eq!(rank(own[1]).map(|r| r.to_string()), Some("DP1 TP12".into()));
    }

    #[test]
    fn a_literal_with_a_digit_keeps_apart_lines_it_is_in_and_lines_it_is_not() {
        // A user's event found by a literal that holds a digit, though its regex treats
        // digits alike: `GPU0 ready` and `GPU1 ready` have one masked text but not the
        // same candidates, so neither may be read as the other was. A line holding the
        // literal is read in full; the two without it share their reading.
        let toml = r#"
id = "rig"
name = "rig"
[[prefix]]
id = "bracket"
regex = '''\[(?P<time>\d{2}:\d{2}:\d{2})\] '''
[[event]]
kind = "gpu_zero_ready"
literals = ['GPU0 ready']
regex = '''GPU\d ready'''
[[event]]
kind = "ready"
literals = [' ready']
regex = '''GPU\d ready'''
"#;
        let g = crate::grammar::Grammar::from_toml(toml, "rig.toml").unwrap();
        let gs = GrammarSet::new(vec![g]).unwrap();
        let mut memo = EventMemo::default();
        let mut read = |line: &str| {
            let m = gs.read_event_line(line, false, &mut memo);
            m.map(|m| m.kind.to_string())
        };
        assert_eq!(
            read("[10:00:00] GPU0 ready").as_deref(),
            Some("gpu_zero_ready")
        );
        assert_eq!(read("[10:00:01] GPU1 ready").as_deref(), Some("ready"));
        assert_eq!(
            read("[10:00:02] GPU0 ready").as_deref(),
            Some("gpu_zero_ready")
        );
        assert_eq!(read("[10:00:03] GPU2 ready").as_deref(), Some("ready"));
        assert_eq!(memo.hits, 1);
    }

    #[test]
    fn a_memo_keeps_a_bounded_number_of_shapes() {
        // Lines of ever new shapes (a word of letters after the event's text): the memo
        // starts again at its bound instead of growing with them.
        let gs = GrammarSet::builtin().unwrap();
        let mut memo = EventMemo::default();
        let word = |mut i: usize| {
            let mut w = String::new();
            loop {
                w.push(char::from(b'a' + (i % 26) as u8));
                i /= 26;
                if i == 0 {
                    return w;
                }
            }
        };
        for i in 0..3 * MAX_KEPT {
            let line = format!(
                "[2026-11-29 09:18:14 TP0] Load weight begin. avail mem=14.00 GB {}",
                word(i)
            );
            let m = gs.read_event_line(&line, false, &mut memo);
            assert_eq!(
                m.map(|m| m.kind.to_string()).as_deref(),
                Some("weight_load_begin")
            );
            assert!(
                memo.kept.len() <= MAX_KEPT,
                "{} shapes kept",
                memo.kept.len()
            );
        }
        assert!(
            memo.kept.len() > MAX_KEPT / 2,
            "{} shapes kept",
            memo.kept.len()
        );
    }
}
