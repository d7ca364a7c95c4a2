//! Two readings of a built-in regex's syntax, kept in a table rather than made at every
//! start-up: its ASCII twin (`lazy_regex::ascii_twin`) and whether it tells ASCII digits
//! apart (`event_memo::treats_digits_alike`). Each parses its pattern with Unicode classes:
//! for the prefix set and the events a short log shows, the two were 16.6 of the 44.2 M
//! instructions `rankscope events --json` took on a 100 KB log (callgrind, 2026-12-07),
//! and all of it sits before the first line is read, on one thread.
//!
//! The table (`pattern_facts_builtin.rs`) is written by a test from the built-in grammars
//! (`RANKSCOPE_WRITE_PATTERN_FACTS=1 cargo test --lib pattern_facts`), which fails when it
//! no longer holds what the readings give each built-in pattern. It is looked up by a
//! pattern's text, so an entry answers only for that text; any other pattern (a user's
//! grammar's, or a built-in one changed since the table was written) is read as before.

use super::pattern_facts_builtin::FACTS;

/// What the table holds for `pattern`: (its ASCII twin, whether it treats digits alike).
fn kept(pattern: &str) -> Option<(Option<&'static str>, bool)> {
    let at = FACTS.binary_search_by(|(p, ..)| (*p).cmp(pattern)).ok()?;
    FACTS.get(at).map(|&(_, twin, alike)| (twin, alike))
}

/// `pattern` with every class cut to its ASCII part and every word boundary made an ASCII
/// one; `None` when that changes nothing (`lazy_regex::ascii_twin`).
pub(super) fn ascii_twin(pattern: &str) -> Option<String> {
    match kept(pattern) {
        Some((twin, _)) => twin.map(str::to_string),
        None => super::lazy_regex::ascii_twin(pattern),
    }
}

/// Whether `pattern` matches the same spans with the same groups in any two texts that
/// differ only in which ASCII digits they hold (`event_memo::treats_digits_alike`).
pub(super) fn treats_digits_alike(pattern: &str) -> bool {
    match kept(pattern) {
        Some((_, alike)) => alike,
        None => super::event_memo::treats_digits_alike(pattern),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pattern of the built-in grammars, once each, in byte order (the table's).
    fn builtin_patterns() -> Vec<String> {
        let grammars = crate::grammar::GrammarSet::builtin_grammars().unwrap();
        let mut patterns: Vec<String> = (grammars.iter())
            .flat_map(|g| g.every_regex())
            .map(|(_, r)| r.as_str().to_string())
            .collect();
        patterns.sort();
        patterns.dedup();
        patterns
    }

    /// The table's text for these patterns, as the readings give them now.
    fn table_source(patterns: &[String]) -> String {
        let mut out = String::from(
            "//! Written by `RANKSCOPE_WRITE_PATTERN_FACTS=1 cargo test --lib pattern_facts`:\n\
             //! each built-in pattern's ASCII twin and whether it treats ASCII digits alike\n\
             //! (`pattern_facts`). Not edited by hand.\n\n\
             /// (pattern, its ASCII twin where it has a class to cut, whether it treats\n\
             /// digits alike), in the patterns' byte order.\n\
             pub(super) const FACTS: &[(&str, Option<&str>, bool)] = &[\n",
        );
        for p in patterns {
            let twin = crate::grammar::lazy_regex::ascii_twin(p);
            let alike = crate::grammar::event_memo::treats_digits_alike(p);
            out.push_str(&format!("    ({p:?}, {twin:?}, {alike}),\n"));
        }
        out.push_str("];\n");
        out
    }

    #[test]
    fn the_table_holds_what_the_readings_give_each_built_in_pattern() {
        let patterns = builtin_patterns();
        // 119 events and 14 prefixes, with the outcomes, process names and suffixes.
        assert!(patterns.len() > 133, "{}", patterns.len());
        let source = table_source(&patterns);
        crate::grammar::check_written_table(
            "pattern_facts_builtin.rs",
            &source,
            "RANKSCOPE_WRITE_PATTERN_FACTS",
            "reading of their patterns",
            "pattern_facts",
        );
        // Each built-in pattern is answered from the table, as the readings answer it.
        for p in &patterns {
            let (twin, alike) = kept(p).unwrap_or_else(|| panic!("not in the table: {p}"));
            assert_eq!(
                twin.map(str::to_string),
                crate::grammar::lazy_regex::ascii_twin(p)
            );
            assert_eq!(
                alike,
                crate::grammar::event_memo::treats_digits_alike(p),
                "{p}"
            );
        }
    }

    #[test]
    fn a_pattern_not_in_the_table_is_read_as_before() {
        // A user's pattern: a Unicode class cut to ASCII, digits told apart.
        let pattern = r"(?P<w>\w+) rank 1\d";
        assert!(kept(pattern).is_none());
        // As regex-syntax prints it: `\w` and `\d` cut to ASCII, each sequence a group.
        let twin = "(?:(?P<w>[0-9A-Z_a-z]+)(?: rank 1)[0-9])";
        assert_eq!(ascii_twin(pattern).as_deref(), Some(twin));
        assert!(!treats_digits_alike(pattern));
        assert!(treats_digits_alike(r"rank \d+"));
    }
}
