//! One pass over a line for every grammar's prefixes: which of them could match it.
//!
//! A filter, not the answer: each prefix the set names is then searched with its own
//! regex (`GrammarSet::find_prefix`, `GrammarSet::detect`). So the set may name more
//! prefixes than match, never fewer, and its patterns are the prefixes with each Unicode
//! class cut to its ASCII part plus every non-ASCII character (`filter_pattern`): the same
//! language on ASCII text, a larger one elsewhere, compiled without the UTF-8 automata of
//! Unicode `\d` and `\w`. The set of the 14 built-in prefixes as written cost 52 M
//! instructions to compile, half of a small command's start-up. ASCII lines get a set of
//! the prefixes' ASCII twins instead, exact on such text and cheaper still (10.3 M
//! instructions where the widened set takes 13.7 M).

use rayon::prelude::*;
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind};

use std::sync::OnceLock;

use super::pattern_facts::ascii_twin;
use super::Grammar;

/// Pattern `i` is the `i`-th prefix in grammar then file order. Two sets, each compiled on
/// first use: ASCII lines (nearly all) are read with the prefixes' ASCII twins
/// (`LazyRegex::for_text`), which on such text name exactly the prefixes that match, and
/// compile in three quarters of the time of the widened patterns other lines need.
pub(crate) struct PrefixSet {
    patterns: Vec<String>,
    ascii: OnceLock<Option<regex::RegexSet>>,
    wide: OnceLock<Option<regex::RegexSet>>,
}

impl PrefixSet {
    pub(crate) fn new(grammars: &[Grammar]) -> PrefixSet {
        let patterns = (grammars.iter())
            .flat_map(|g| &g.prefixes)
            .map(|p| p.regex.as_str().to_string())
            .collect();
        PrefixSet {
            patterns,
            ascii: OnceLock::new(),
            wide: OnceLock::new(),
        }
    }

    /// The prefixes that may match somewhere in `line`, as indices in grammar then file
    /// order; `None` if the set does not compile (then each prefix is tried in turn).
    pub(crate) fn matches(&self, line: &str) -> Option<regex::SetMatches> {
        self.set(line.is_ascii()).map(|s| s.matches(line))
    }

    /// Compiles the set ASCII lines are read with now rather than at its first use (a
    /// command about to read logs builds it beside its other automata), its twins made
    /// on the pool: each parses its pattern with Unicode classes (~300 K instructions).
    pub(crate) fn warm(&self) {
        self.ascii.get_or_init(|| {
            let twins: Vec<String> = self.patterns.par_iter().map(twin_or_itself).collect();
            regex::RegexSet::new(twins).ok()
        });
    }

    /// The set of the prefixes' ASCII twins (exact on ASCII text) or of their widened
    /// patterns (a filter for any text), compiled at its first use. Not on the pool here:
    /// a first use is on a scanning thread, which, waiting for a twin another thread
    /// took, could run another file's scan that asks for this same set while it is made.
    fn set(&self, ascii: bool) -> Option<&regex::RegexSet> {
        let patterns = self.patterns.iter();
        if ascii {
            (self.ascii).get_or_init(|| regex::RegexSet::new(patterns.map(twin_or_itself)).ok())
        } else {
            (self.wide)
                .get_or_init(|| regex::RegexSet::new(patterns.map(|p| filter_pattern(p))).ok())
        }
        .as_ref()
    }
}

/// `pattern`'s ASCII twin, or the pattern where it has no class to cut.
fn twin_or_itself(pattern: impl AsRef<str>) -> String {
    let pattern = pattern.as_ref();
    ascii_twin(pattern).unwrap_or_else(|| pattern.to_string())
}

/// `pattern` as the set's filter: every Unicode class that reaches past ASCII becomes its
/// ASCII part plus all of U+0080..=U+10FFFF. The pattern itself when it does not parse
/// (then the set fails to compile, as it did before).
pub(crate) fn filter_pattern(pattern: &str) -> String {
    let Ok(hir) = regex_syntax::parse(pattern) else {
        return pattern.to_string();
    };
    let mut out = String::new();
    match regex_syntax::hir::print::Printer::new().print(&widen(&hir), &mut out) {
        Ok(()) => out,
        Err(_) => pattern.to_string(),
    }
}

fn widen(h: &Hir) -> Hir {
    super::lazy_regex::map_leaves(h, &|leaf| match leaf.kind() {
        HirKind::Class(Class::Unicode(c)) => Some(Hir::class(Class::Unicode(ascii_or_beyond(c)))),
        _ => None,
    })
}

/// The ASCII part of `c` and every character past ASCII: unchanged when `c` is ASCII only.
fn ascii_or_beyond(c: &ClassUnicode) -> ClassUnicode {
    if c.ranges().last().is_none_or(|r| r.end() <= '\x7f') {
        return c.clone();
    }
    let mut out = c.clone();
    out.intersect(&ClassUnicode::new([ClassUnicodeRange::new('\0', '\x7f')]));
    out.union(&ClassUnicode::new([ClassUnicodeRange::new(
        '\u{80}',
        '\u{10FFFF}',
    )]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_keeps_ascii_precision_and_takes_every_non_ascii_character() {
        let original = regex::Regex::new(r"\[(?P<d>\d{4}) (?P<w>[\w.-]+)\] ").unwrap();
        let filter = regex::Regex::new(&filter_pattern(original.as_str())).unwrap();
        // ASCII text: the same answer both ways.
        for line in [
            "[2026 worker-1.py] x",
            "[202 worker] x",
            "[2026 work er] x",
            "[abcd w] x",
            "x [2026 a_b] y",
        ] {
            assert_eq!(filter.is_match(line), original.is_match(line), "{line}");
        }
        // A non-ASCII digit or letter the original takes, the filter takes; a character
        // the original refuses (`é` is a letter: it takes it; `€` is not), the filter
        // takes too: a superset.
        for line in ["[२०२६ wörker] x", "[2026 w€] x"] {
            assert!(filter.is_match(line), "{line}");
        }
        assert!(original.is_match("[२०२६ wörker] x"));
        assert!(!original.is_match("[2026 w€] x"));
    }

    #[test]
    fn every_builtin_prefix_filter_takes_what_the_prefix_takes() {
        // Every built-in grammar's samples (the lines `grammars check` reads), against
        // every prefix: the wide set names each prefix that matches the line (perhaps
        // more); the set of ASCII twins, on an ASCII line, names exactly those.
        let gs = crate::grammar::GrammarSet::builtin().unwrap();
        let set = PrefixSet::new(&gs.grammars);
        let (wide, ascii) = (set.set(false).unwrap(), set.set(true).unwrap());
        let prefixes: Vec<_> = gs.grammars.iter().flat_map(|g| &g.prefixes).collect();
        // And lines whose prefix holds letters past ASCII, which Unicode `\w` takes and
        // an ASCII twin would not: a process and a host named so.
        let unicode = [
            "(Wörker_TP1 pid=12) INFO 12-01 10:00:00 [gpu_model_runner.py:1] Loading",
            "nœud-1:412:412 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        ];
        let samples = gs.grammars.iter().flat_map(|g| &g.spec.sample);
        let (mut matched, mut exact) = (0, 0);
        for line in samples.map(|s| s.line.as_str()).chain(unicode) {
            let (wide_hits, ascii_hits) = (wide.matches(line), ascii.matches(line));
            for (i, p) in prefixes.iter().enumerate() {
                let takes = p.regex.get().is_some_and(|r| r.is_match(line));
                assert!(!takes || wide_hits.matched(i), "{}: {line:?}", p.id);
                if line.is_ascii() {
                    assert_eq!(ascii_hits.matched(i), takes, "{}: {line:?}", p.id);
                    exact += 1;
                }
                matched += usize::from(takes);
            }
        }
        assert!(matched > 50, "{matched} sample lines read by a prefix");
        assert!(exact > 1000, "{exact} (line, prefix) pairs compared");
        for line in unicode {
            let takes = prefixes
                .iter()
                .filter(|p| p.regex.get().is_some_and(|r| r.is_match(line)));
            assert!(takes.count() > 0, "no prefix takes {line:?}");
        }
    }
}
