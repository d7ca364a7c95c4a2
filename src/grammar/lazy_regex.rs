//! A grammar's regex (an event's or prefix's pattern, an outcome wording, a process name,
//! a suffix) compiled on its first use.
//!
//! A run meets the prefixes and events of one or two grammars; compiling every regex of
//! every built-in grammar up front was a tenth of a 1,024-rank `diff` (the events) and,
//! with the prefixes, most of the start-up of every command (`rankscope events` of an
//! empty file: 214 M instructions, 63 M of them the prefixes' compilation; the outcome
//! wordings, process names and suffixes were 7.5 M of the 46 M left on 2026-12-06). The
//! capture groups are known when the grammar loads, for its checks and for reading a
//! match by group index: read from a built-in pattern's text (`named_groups_of`), else
//! from its syntax tree (not its translation, which was half the cost). A user's grammar
//! is compiled at load (`compiled_at_load`), so a malformed or too large regex is an
//! error then; only the built-in ones, each compiled by a test
//! (`every_builtin_regex_compiles`), are ever lazy.
//!
//! Text that is all ASCII, nearly every log line, is searched with the pattern's ASCII
//! twin (`LazyRegex::for_text`): every class cut to its ASCII part. On such text the two
//! match the same spans with the same groups, as no character past ASCII is there to take
//! or refuse, and the twin's automaton is a fraction of the size: Unicode `\w` and `\d`
//! are hundreds of UTF-8 states each. It compiles in a fifth to a tenth of the time (the
//! regexes a run meets were a fifth of a small command's start-up) and the bounded
//! backtracker, which reads an event's captures, visits fewer states on every line.

use std::sync::OnceLock;

use regex::Regex;

use crate::base::event::FieldName;

#[derive(Clone)]
pub(crate) struct LazyRegex {
    pattern: String,
    /// Named captures, in the order of their groups (as `Regex::capture_names` gives them),
    /// each shared with every event field it names.
    names: Vec<FieldName>,
    /// The group index of each of `names`.
    indices: Vec<usize>,
    compiled: OnceLock<Option<Regex>>,
    /// The ASCII twin; `None` inside when the pattern has no class to cut (or the twin
    /// does not compile), and the pattern itself serves.
    ascii: OnceLock<Option<Regex>>,
    /// The ASCII twin held to the text's start (`\A(?:…)`), tried first by
    /// [`LazyRegex::captures`]; `None` inside when it does not compile.
    anchored: OnceLock<Option<Regex>>,
    /// Whether the pattern tells no two ASCII digits apart, decided when first asked
    /// (`event_memo::treats_digits_alike`).
    digits_alike: OnceLock<bool>,
}

/// As `Regex` shows itself: its pattern.
impl std::fmt::Debug for LazyRegex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LazyRegex").field(&self.pattern).finish()
    }
}

impl LazyRegex {
    pub(crate) fn new(pattern: &str, compile_now: bool) -> Result<LazyRegex, regex::Error> {
        // A pattern the parser rejects is compiled too: `Regex::new`'s error is the one to
        // show (it reports the same parse failure in its own words).
        // A built-in pattern's groups are read from its text where that reading is sure
        // (`named_groups_of`): parsing the built-in grammars' patterns was a sixth of every
        // command's start-up, and each compiles in a test. Else the syntax tree is enough
        // for the groups' names and indices, and a tenth of the cost of translating it
        // (Unicode classes and case folding), which `Regex::new` does at the first use.
        if let Some(named) = (!compile_now).then(|| named_groups_of(pattern)).flatten() {
            return Ok(LazyRegex::of_groups(pattern, named));
        }
        let ast = match (
            compile_now,
            regex_syntax::ast::parse::Parser::new().parse(pattern),
        ) {
            (false, Ok(ast)) => ast,
            _ => {
                let r = Regex::new(pattern)?;
                let (indices, names) = (r.capture_names().enumerate())
                    .filter_map(|(i, n)| Some((i, FieldName::from(n?))))
                    .unzip();
                return Ok(LazyRegex {
                    pattern: pattern.to_string(),
                    names,
                    indices,
                    compiled: OnceLock::from(Some(r)),
                    ascii: OnceLock::new(),
                    anchored: OnceLock::new(),
                    digits_alike: OnceLock::new(),
                });
            }
        };
        let mut named = Vec::new();
        capture_names(&ast, &mut named);
        named.sort_by_key(|(i, _)| *i);
        let named = (named.iter())
            .map(|(i, n)| (*i as usize, n.as_str()))
            .collect();
        Ok(LazyRegex::of_groups(pattern, named))
    }

    /// A pattern to compile on first use, whose named groups (group index, name) are these.
    fn of_groups(pattern: &str, named: Vec<(usize, &str)>) -> LazyRegex {
        let (indices, names) = (named.into_iter())
            .map(|(i, n)| (i, FieldName::from(n)))
            .unzip();
        LazyRegex {
            pattern: pattern.to_string(),
            names,
            indices,
            compiled: OnceLock::new(),
            ascii: OnceLock::new(),
            anchored: OnceLock::new(),
            digits_alike: OnceLock::new(),
        }
    }

    /// The compiled regex; `None` only for a built-in pattern that parses but is too large
    /// to compile, which a test rules out.
    pub(crate) fn get(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| Regex::new(&self.pattern).ok())
            .as_ref()
    }

    /// The regex to search `text` with: the ASCII twin when `text` is all ASCII (see the
    /// module's note), else the pattern itself. Matches, spans and group indices are the
    /// same either way.
    pub(crate) fn for_text(&self, text: &str) -> Option<&Regex> {
        if text.is_ascii() {
            self.for_ascii()
        } else {
            self.get()
        }
    }

    /// The regex for ASCII text: the twin, or the pattern itself where it has no class to
    /// cut.
    fn for_ascii(&self) -> Option<&Regex> {
        let twin = self.ascii.get_or_init(|| {
            let narrowed = super::pattern_facts::ascii_twin(&self.pattern)?;
            Regex::new(&narrowed).ok()
        });
        twin.as_ref().or_else(|| self.get())
    }

    /// The leftmost match in `text` with its groups, as `for_text(text)?.captures(text)`
    /// finds it, but tried at the text's start first, where an event's message begins
    /// with the words its pattern starts with. An unanchored search runs a lazy DFA
    /// forward to the match's end and one backward to its start before it reads the
    /// groups (with the one-pass DFA, or the bounded backtracker where the pattern is not
    /// one-pass), ~7,000 instructions an event line; held to the start, a one-pass
    /// pattern's groups are read in that one pass. A match at the start is the leftmost
    /// match, so it is the one the search would find.
    pub(crate) fn captures<'t>(&self, text: &'t str) -> Option<regex::Captures<'t>> {
        if !text.is_ascii() {
            return self.get()?.captures(text);
        }
        // The anchored twin is built from the pattern, not from the compiled twin: most
        // events match at the start and never need the unanchored one compiled.
        let anchored = self.anchored.get_or_init(|| {
            let pattern = (super::pattern_facts::ascii_twin(&self.pattern))
                .unwrap_or_else(|| self.pattern.clone());
            Regex::new(&format!(r"\A(?:{pattern})")).ok()
        });
        (anchored.as_ref())
            .and_then(|r| r.captures(text))
            .or_else(|| self.for_ascii()?.captures(text))
    }

    /// The leftmost match in `text` with its groups, found with one search
    /// (`for_text(text)?.captures(text)`): for a rule that most texts do not match (a
    /// process name, a suffix, an outcome wording), where the start-first try of
    /// [`LazyRegex::captures`] would be a second search, failing too, and a second
    /// regex compiled.
    pub(crate) fn captures_once<'t>(&self, text: &'t str) -> Option<regex::Captures<'t>> {
        self.for_text(text)?.captures(text)
    }

    /// The leftmost match in `text`, as `for_text(text)?.find(text)` finds it.
    pub(crate) fn find<'t>(&self, text: &'t str) -> Option<regex::Match<'t>> {
        self.for_text(text)?.find(text)
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether the pattern matches the same spans, with the same groups, in any two texts
    /// that differ only in which ASCII digits they hold (`event_memo`).
    pub(crate) fn treats_digits_alike(&self) -> bool {
        *(self.digits_alike)
            .get_or_init(|| super::pattern_facts::treats_digits_alike(&self.pattern))
    }

    pub(crate) fn capture_names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// The group index of the capture named `name`, as `Captures::get` takes it.
    pub(crate) fn group_index(&self, name: &str) -> Option<usize> {
        let at = self.names.iter().position(|n| &**n == name)?;
        self.indices.get(at).copied()
    }

    /// The capture names as the event fields hold them.
    pub(crate) fn field_names(&self) -> &[FieldName] {
        &self.names
    }

    /// Each named capture with its group index: a match's groups are read by index, not
    /// looked up by name, which hashes the name.
    pub(crate) fn named_groups(&self) -> impl Iterator<Item = (&FieldName, usize)> {
        self.names.iter().zip(self.indices.iter().copied())
    }
}

/// The named capture groups of `pattern` (group index, name), in order, read from its
/// text without parsing it: groups are numbered by their opening parentheses, left to
/// right, and an opening parenthesis opens a group unless `?` follows it, or `?P<name>` /
/// `?<name>` does, which opens a named one. Escaped characters and classes are passed
/// over. `None` where the text holds what this reading does not follow — a class inside
/// a class (`[[:alpha:]]`, `[a&&[^b]]`), the `x` flag (whose comments may hold
/// parentheses), a class or a name left open — and the parser is asked instead. Said
/// of a pattern that does not parse, it says nothing; only patterns a test compiles
/// (the built-in ones) are read this way.
fn named_groups_of(pattern: &str) -> Option<Vec<(usize, &str)>> {
    let b = pattern.as_bytes();
    let (mut at, mut group, mut named) = (0, 0, Vec::new());
    while let Some(&c) = b.get(at) {
        match c {
            // An escape is two bytes (`\(`, `\d`, `\p` of `\p{L}`): a multi-byte
            // character after it goes on in bytes that are never `(`, `[` or `\`.
            b'\\' => at += 2,
            b'[' => {
                at += 1;
                at += usize::from(b.get(at) == Some(&b'^'));
                // A `]` first in a class is one of its characters.
                at += usize::from(b.get(at) == Some(&b']'));
                loop {
                    match *b.get(at)? {
                        b'\\' => at += 2,
                        b'[' => return None,
                        b']' => break,
                        _ => at += 1,
                    }
                }
                at += 1;
            }
            b'(' if b.get(at + 1) == Some(&b'?') => {
                let rest = b.get(at + 2..)?;
                let name_at = if rest.starts_with(b"P<") {
                    at + 4
                } else if rest.starts_with(b"<") {
                    at + 3
                } else {
                    // Flags, with or without a group of their own: `(?i)`, `(?:`, `(?s:`.
                    let end = rest.iter().position(|&c| c == b')' || c == b':')?;
                    if rest.get(..end)?.contains(&b'x') {
                        return None;
                    }
                    at += 2 + end;
                    continue;
                };
                let len = b.get(name_at..)?.iter().position(|&c| c == b'>')?;
                group += 1;
                named.push((group, pattern.get(name_at..name_at + len)?));
                at = name_at + len + 1;
            }
            b'(' => {
                group += 1;
                at += 1;
            }
            _ => at += 1,
        }
    }
    Some(named)
}

/// `pattern` with every class cut to its ASCII part and every word boundary made an ASCII
/// one; `None` when that changes nothing (or the pattern does not parse or print). A
/// class with nothing in ASCII is kept as it is: it matches no ASCII text either way, and
/// an empty class does not print as a pattern.
pub(super) fn ascii_twin(pattern: &str) -> Option<String> {
    use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look};
    let hir = regex_syntax::parse(pattern).ok()?;
    let ascii = ClassUnicode::new([ClassUnicodeRange::new('\0', '\x7f')]);
    let twin = map_leaves(&hir, &|leaf| match leaf.kind() {
        HirKind::Class(Class::Unicode(c)) => {
            let mut cut = c.clone();
            cut.intersect(&ascii);
            (!cut.ranges().is_empty()).then(|| Hir::class(Class::Unicode(cut)))
        }
        HirKind::Look(look) => {
            let ascii_look = match look {
                Look::WordUnicode => Look::WordAscii,
                Look::WordUnicodeNegate => Look::WordAsciiNegate,
                Look::WordStartUnicode => Look::WordStartAscii,
                Look::WordEndUnicode => Look::WordEndAscii,
                Look::WordStartHalfUnicode => Look::WordStartHalfAscii,
                Look::WordEndHalfUnicode => Look::WordEndHalfAscii,
                _ => return None,
            };
            Some(Hir::look(ascii_look))
        }
        _ => None,
    });
    if twin == hir {
        return None;
    }
    let mut out = String::new();
    regex_syntax::hir::print::Printer::new()
        .print(&twin, &mut out)
        .ok()?;
    Some(out)
}

/// `h` with each class or look-around leaf that `leaf` rewrites replaced, the groups and
/// repetitions around them kept (so capture indices and names stay what they were).
pub(super) fn map_leaves(
    h: &regex_syntax::hir::Hir,
    leaf: &dyn Fn(&regex_syntax::hir::Hir) -> Option<regex_syntax::hir::Hir>,
) -> regex_syntax::hir::Hir {
    use regex_syntax::hir::{Capture, Hir, HirKind, Repetition};
    match h.kind() {
        HirKind::Class(_) | HirKind::Look(_) => leaf(h).unwrap_or_else(|| h.clone()),
        HirKind::Repetition(r) => Hir::repetition(Repetition {
            sub: Box::new(map_leaves(&r.sub, leaf)),
            ..r.clone()
        }),
        HirKind::Capture(c) => Hir::capture(Capture {
            sub: Box::new(map_leaves(&c.sub, leaf)),
            ..c.clone()
        }),
        HirKind::Concat(v) => Hir::concat(v.iter().map(|s| map_leaves(s, leaf)).collect()),
        HirKind::Alternation(v) => {
            Hir::alternation(v.iter().map(|s| map_leaves(s, leaf)).collect())
        }
        HirKind::Empty | HirKind::Literal(_) => h.clone(),
    }
}

fn capture_names(ast: &regex_syntax::ast::Ast, out: &mut Vec<(u32, String)>) {
    use regex_syntax::ast::{Ast, GroupKind};
    match ast {
        Ast::Group(g) => {
            if let GroupKind::CaptureName { name, .. } = &g.kind {
                out.push((name.index, name.name.clone()));
            }
            capture_names(&g.ast, out);
        }
        Ast::Repetition(r) => capture_names(&r.ast, out),
        Ast::Concat(c) => c.asts.iter().for_each(|a| capture_names(a, out)),
        Ast::Alternation(a) => a.asts.iter().for_each(|a| capture_names(a, out)),
        Ast::Empty(_)
        | Ast::Flags(_)
        | Ast::Literal(_)
        | Ast::Dot(_)
        | Ast::Assertion(_)
        | Ast::ClassUnicode(_)
        | Ast::ClassPerl(_)
        | Ast::ClassBracketed(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The named groups the compiled regex gives `pattern`: (group index, name).
    fn compiled_groups(pattern: &str) -> Vec<(usize, String)> {
        let r = Regex::new(pattern).unwrap();
        (r.capture_names().enumerate())
            .filter_map(|(i, n)| Some((i, n?.to_string())))
            .collect()
    }

    #[test]
    fn named_groups_are_read_from_the_text_as_the_compiled_regex_numbers_them() {
        for pattern in [
            r"(?P<a>\d+) \((?P<b>[^)]*)\) (\w+)(?<c>x)",
            r"[(](?P<a>\d)[]()](?P<b>.)[^]](?P<c>.)",
            r"(?i)(?:pp=(?P<pp>\d+))?(?s:.)(?P<tp>\d+)",
            r"\p{L}(?P<w>é+)\x{41}(a)(?P<z>\()",
        ] {
            let read: Vec<(usize, String)> = (named_groups_of(pattern).unwrap().into_iter())
                .map(|(i, n)| (i, n.to_string()))
                .collect();
            assert_eq!(read, compiled_groups(pattern), "{pattern}");
        }
        // By hand, the second: `[(]` and `[]()]` open nothing, so b is group 2.
        let read = named_groups_of(r"[(](?P<a>\d)[]()](?P<b>.)").unwrap();
        assert_eq!(read, [(1, "a"), (2, "b")]);
    }

    #[test]
    fn what_the_text_reading_does_not_follow_is_parsed() {
        // A nested class, the x flag (a comment could hold a parenthesis), an open class.
        for pattern in [r"[[:alpha:]](?P<a>x)", r"(?x) (?P<a>x) # (", r"[ab"] {
            assert_eq!(named_groups_of(pattern), None, "{pattern}");
        }
        // The parser numbers them instead: `(?x)`'s comment opens no group.
        let lazy = LazyRegex::new("(?x) (?P<a>x) # (\n (?P<b>y)", false).unwrap();
        assert_eq!(lazy.group_index("b"), Some(2));
    }

    #[test]
    fn every_built_in_pattern_reads_its_groups_from_its_text() {
        let gs = crate::grammar::GrammarSet::builtin().unwrap();
        let mut read = 0;
        for g in &gs.grammars {
            for (_, lazy) in g.every_regex() {
                let pattern = lazy.as_str();
                // Each is read from its text, and read as the compiled regex has it.
                let groups = named_groups_of(pattern).unwrap_or_else(|| panic!("{pattern}"));
                let groups: Vec<(usize, String)> = (groups.into_iter())
                    .map(|(i, n)| (i, n.to_string()))
                    .collect();
                assert_eq!(groups, compiled_groups(pattern), "{pattern}");
                read += 1;
            }
        }
        assert!(read > 100, "{read} built-in patterns");
    }

    #[test]
    fn ascii_text_is_searched_with_the_twin_and_other_text_with_the_pattern() {
        let lazy = LazyRegex::new(r"(?P<w>\w+)=(?P<d>\d+)\b", false).unwrap();
        // By hand: on ASCII text both read `mem=14`.
        let ascii = lazy.for_text("x mem=14 GB").unwrap();
        let caps = ascii.captures("x mem=14 GB").unwrap();
        assert_eq!((&caps["w"], &caps["d"]), ("mem", "14"));
        // The twin is another regex: cut classes, an ASCII word boundary.
        assert_eq!(ascii.as_str(), ascii_twin(lazy.as_str()).unwrap());
        assert!(ascii.as_str().contains("(?-u:\\b)"), "{}", ascii.as_str());
        // `é` and the Devanagari `३` are a word character and a digit to the pattern, not
        // to the twin (which would read `llo=3`... and no digit): text past ASCII gets
        // the pattern.
        let text = "héllo=३ x";
        let caps = lazy.for_text(text).unwrap().captures(text).unwrap();
        assert_eq!((&caps["w"], &caps["d"]), ("héllo", "३"));
        assert!(ascii.captures(text).is_none());
    }

    #[test]
    fn captures_tried_at_the_start_finds_what_an_unanchored_search_finds() {
        // Every built-in event regex on every ASCII sample line of its grammar, read from
        // the line's start and from after each space (where a message may begin): the
        // groups `captures` reads are the unanchored search's, whether the match is at
        // the start (the anchored twin) or further on (the search it falls back to).
        let gs = crate::grammar::GrammarSet::builtin().unwrap();
        let (mut at_start, mut further) = (0, 0);
        for g in &gs.grammars {
            for e in &g.events {
                let plain = e.regex.get().unwrap();
                for sample in g.spec.sample.iter().filter(|s| s.line.is_ascii()) {
                    let line = sample.line.as_str();
                    let starts =
                        std::iter::once(0).chain(line.match_indices(' ').map(|(i, _)| i + 1));
                    for from in starts {
                        let text = &line[from..];
                        let spans = |c: Option<regex::Captures<'_>>| {
                            c.map(|c| c.iter().map(|m| m.map(|m| m.range())).collect::<Vec<_>>())
                        };
                        let want = spans(plain.captures(text));
                        assert_eq!(
                            spans(e.regex.captures(text)),
                            want,
                            "{}: {:?}",
                            e.kind,
                            text
                        );
                        match want.as_ref().and_then(|w| w.first().cloned().flatten()) {
                            Some(m) if m.start == 0 => at_start += 1,
                            Some(_) => further += 1,
                            None => {}
                        }
                    }
                }
            }
        }
        assert!(at_start > 100, "{at_start} matches at the text's start");
        assert!(further > 100, "{further} matches further on");
    }

    #[test]
    fn the_start_up_lines_every_rank_prints_read_in_one_pass() {
        // A rank file of a large run is a dozen such lines: read by the one-pass DFA,
        // each costs a fifth of a bounded backtracker's reading. A built-in pattern
        // rewritten so that two branches begin alike (`(?: elapsed=…)? mem usage=`,
        // both with a space) loses that; this names the line it slowed. Lines written
        // for this test in SGLang's and NCCL's wordings, values made up.
        let lines = [
            "[2026-12-05 10:00:01 TP3] Init torch distributed begin.",
            "[2026-12-05 10:00:03 TP3] Init torch distributed ends. mem usage=0.41 GB",
            "[2026-12-05 10:00:03 TP3] Init torch distributed ends. elapsed=2.07 s, mem usage=0.41 GB",
            "[2026-12-05 10:00:03 TP3] Load weight begin. avail mem=77.20 GB",
            "[2026-12-05 10:00:09 TP3] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=62.08 GB, mem usage=15.12 GB.",
            "[2026-12-05 10:00:09 TP3] Load weight end. elapsed=5.93 s, type=Qwen3ForCausalLM, quant=fp8, avail mem=70.50 GB, mem usage=6.70 GB.",
            "[2026-12-05 10:00:10 TP3] KV Cache is allocated. #tokens: 412345, K size: 24.10 GB, V size: 24.10 GB",
            "[2026-12-05 10:00:10 TP3] KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 812345, KV size: 30.20 GB",
            "[2026-12-05 10:00:10 TP3] Memory pool end. avail mem=13.30 GB",
            "[2026-12-05 10:00:10 TP3] Capture cuda graph begin. This can take up to several minutes. avail mem=13.30 GB",
            "[2026-12-05 10:00:31 TP3] Capture cuda graph end. Time elapsed: 20.91 s. mem usage=1.22 GB. avail mem=12.08 GB.",
            "[2026-12-05 10:00:31 TP3] Capture cuda graph end. Time elapsed: 20.91 s. avail mem=12.08 GB. mem usage=1.22 GB.",
            "node-7:4242:4242 [3] NCCL INFO NCCL version 2.27.3+cuda12.9",
            "node-7:4242:4242 [3] NCCL INFO ncclCommInitRank comm 0x5581aa00 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 4d000 commId 0x1b2c3d4e5f60718 - Init COMPLETE",
            "node-7:4242:4242 [3] NCCL INFO ncclCommInitRank comm 0x5581aa00 rank 3 nranks 8 cudaDev 3 busId 4d000 - Init START",
            "node-7:4242:4242 [3] NCCL INFO ncclCommInitRankConfig comm 0x5581aa00 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 4d000 commId 0x1b2c3d4e5f60718 - Init START",
            "node-7:4242:4242 [3] NCCL INFO comm 0x5581aa00 rank 3 nranks 8 cudaDev 3 busId 4d000 - Init COMPLETE",
        ];
        let gs = crate::grammar::GrammarSet::builtin().unwrap();
        for line in lines {
            let prefix = gs.find_prefix(line, line.len()).unwrap();
            let message = &line[prefix.message_start..];
            // The event that reads it: the first, in file order, whose literal it holds
            // and whose regex matches (as `GrammarSet::match_line` tries them).
            let g = &gs.grammars[prefix.read_by.unwrap().0];
            let event = (g.events.iter().zip(&g.spec.event))
                .find(|(e, spec)| {
                    spec.literals.iter().any(|l| line.contains(l.as_str()))
                        && e.regex.get().unwrap().is_match(message)
                })
                .map(|(e, _)| e)
                .unwrap_or_else(|| panic!("no event reads {line:?}"));
            let pattern = event.regex.as_str();
            let twin = ascii_twin(pattern).unwrap_or_else(|| pattern.to_string());
            let at_start = regex_automata::dfa::onepass::DFA::new(&format!(r"\A(?:{twin})"));
            let Ok(at_start) = at_start else {
                panic!("{}: {line:?} is read by {pattern}", event.kind);
            };
            // And that pass reads the message from its first byte: a pattern that starts
            // further on (`comm 0x…` after NCCL's `ncclCommInitRank `) is searched for
            // instead, forward and back, ~15,000 instructions a line.
            let mut cache = at_start.create_cache();
            assert!(
                at_start.is_match(&mut cache, message),
                "{}: {message:?} does not begin {pattern}",
                event.kind
            );
        }
    }

    #[test]
    fn a_pattern_without_classes_has_no_twin() {
        assert_eq!(ascii_twin(r"Load weight begin\. (x|y)"), None);
        // A class with nothing in ASCII is kept (an empty class prints as no pattern).
        assert_eq!(ascii_twin("[é]"), None);
        assert_eq!(ascii_twin("[é]x[0-9]"), None);
        assert_eq!(ascii_twin(r"[é]\d").as_deref(), Some("(?:é[0-9])"));
    }

    #[test]
    fn parsed_groups_are_the_compiled_regex_groups() {
        // Unnamed groups before, between and inside named ones, an alternation and a
        // repetition: the indices the parse gives must be those `Regex` numbers.
        let pattern = r"(\d+) (?P<a>x(y)?)|(?:(?P<b>\w)(z))+ (?P<c>(?P<d>q)r)";
        let lazy = LazyRegex::new(pattern, false).unwrap();
        let eager = LazyRegex::new(pattern, true).unwrap();
        let r = Regex::new(pattern).unwrap();
        for name in ["a", "b", "c", "d"] {
            let want = r.capture_names().position(|n| n == Some(name));
            assert_eq!(lazy.group_index(name), want, "{name}");
            assert_eq!(eager.group_index(name), want, "{name}");
        }
        // By hand: (\d+) is 1, a 2, (y) 3, b 4, (z) 5, c 6, d 7.
        assert_eq!(lazy.group_index("c"), Some(6));
        assert_eq!(lazy.group_index("e"), None);
        assert_eq!(
            lazy.capture_names().collect::<Vec<_>>(),
            eager.capture_names().collect::<Vec<_>>()
        );
    }
}
