//! A grammar's regex compiled on its first use.
//!
//! A run meets the prefixes and events of one or two grammars; compiling every regex of
//! every built-in grammar up front was a tenth of a 1,024-rank `diff` (the events) and,
//! with the prefixes, most of the start-up of every command (`rankscope events` of an
//! empty file: 214 M instructions, 63 M of them the prefixes' compilation). The pattern is
//! parsed when the grammar loads, so a bad regex is an error then and the capture groups
//! are known for the grammar's checks and for reading a match by group index; a user's
//! grammar is compiled at load (`compile_now`), so only the built-in ones, each compiled
//! by a test (`every_builtin_event_and_prefix_regex_compiles`), are ever lazy.

use std::sync::OnceLock;

use regex::Regex;

use crate::base::event::FieldName;

pub(crate) struct LazyRegex {
    pattern: String,
    /// Named captures, in the order of their groups (as `Regex::capture_names` gives them),
    /// each shared with every event field it names.
    names: Vec<FieldName>,
    /// The group index of each of `names`.
    indices: Vec<usize>,
    compiled: OnceLock<Option<Regex>>,
}

impl LazyRegex {
    pub(crate) fn new(pattern: &str, compile_now: bool) -> Result<LazyRegex, regex::Error> {
        // A pattern the parser rejects is compiled too: `Regex::new`'s error is the one to
        // show (it reports the same parse failure in its own words).
        let hir = match (compile_now, regex_syntax::parse(pattern)) {
            (false, Ok(hir)) => hir,
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
                });
            }
        };
        let mut named = Vec::new();
        capture_names(&hir, &mut named);
        named.sort_by_key(|(i, _)| *i);
        let (indices, names) = named
            .into_iter()
            .map(|(i, n)| (i as usize, FieldName::from(n)))
            .unzip();
        Ok(LazyRegex {
            pattern: pattern.to_string(),
            names,
            indices,
            compiled: OnceLock::new(),
        })
    }

    /// The compiled regex; `None` only for a built-in pattern that parses but is too large
    /// to compile, which a test rules out.
    pub(crate) fn get(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| Regex::new(&self.pattern).ok())
            .as_ref()
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.pattern
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
}

fn capture_names(hir: &regex_syntax::hir::Hir, out: &mut Vec<(u32, String)>) {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Capture(c) => {
            if let Some(n) = &c.name {
                out.push((c.index, n.to_string()));
            }
            capture_names(&c.sub, out);
        }
        HirKind::Repetition(r) => capture_names(&r.sub, out),
        HirKind::Concat(v) | HirKind::Alternation(v) => {
            for h in v {
                capture_names(h, out);
            }
        }
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
