//! The block prefilter's automata: the literals' fragments (`prefilter_fragments`), in
//! groups one packed searcher each takes, each group in the order that chooses Teddy's
//! buckets (`teddy_order`).
//!
//! Choosing the fragments and their order is a search over thousands of windows of the
//! literals, the same for the same grammars: for the built-in ones, 15.3 M instructions,
//! a fifth of every command's start-up (71.3 M, `events` of a three-line SGLang log) and
//! the longest step of its critical path on two threads. The built-in grammars' choice is
//! therefore kept in `block_prefilter_builtin.rs`, with a hash of what it was chosen
//! from; a set whose literals, record starts and noise literals hash the same (the
//! built-in grammars alone) takes it from there, any other set (a user's grammar added)
//! chooses its own as before. The test `the_built_in_table_is_what_the_grammars_choose`
//! chooses it again and compares it with the file, and writes the file when
//! `RANKSCOPE_WRITE_PREFILTER=1` is set: a change to the built-in grammars fails that
//! test until the table is written again. What the scanners are built from
//! (`ScanInputs`) is gathered here, as the table's hash is taken over it.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::block_prefilter_builtin as builtin;
use super::prefilter::{balanced_groups, prefilter_fragments, FRAGMENTS_PER_GROUP};
use super::teddy::teddy_order;
use super::{Grammar, GrammarError};

/// What the line scanners are built from: every event literal once, with the (grammar,
/// event) pairs it serves, and the record starts and noise literals, in load order.
pub(super) struct ScanInputs {
    pub(super) literals: Vec<String>,
    pub(super) literal_owner: Vec<Vec<(usize, usize)>>,
    pub(super) starts: Vec<String>,
    pub(super) noise: Vec<String>,
    /// The literals of the `traffic` noise entries (also in `noise`).
    pub(super) traffic: Vec<String>,
}

impl ScanInputs {
    pub(super) fn of(grammars: &[Grammar]) -> ScanInputs {
        let mut literals: Vec<String> = Vec::new();
        let mut literal_owner: Vec<Vec<(usize, usize)>> = Vec::new();
        let mut starts: Vec<String> = Vec::new();
        let mut noise: Vec<String> = Vec::new();
        let mut traffic: Vec<String> = Vec::new();
        for (gi, g) in grammars.iter().enumerate() {
            for (ei, ev) in g.spec.event.iter().enumerate() {
                for lit in &ev.literals {
                    match literals.iter().position(|l| l == lit) {
                        Some(p) => literal_owner[p].push((gi, ei)),
                        None => {
                            literals.push(lit.clone());
                            literal_owner.push(vec![(gi, ei)]);
                        }
                    }
                }
            }
            for p in &g.spec.prefix {
                starts.extend(p.starts_with.iter().cloned());
            }
            for n in &g.spec.noise {
                noise.extend(n.literals.iter().cloned());
                if n.traffic {
                    traffic.extend(n.literals.iter().cloned());
                }
            }
        }
        starts.retain(|s| !s.is_empty());
        noise.retain(|s| !s.is_empty());
        traffic.retain(|s| !s.is_empty());
        ScanInputs {
            literals,
            literal_owner,
            starts,
            noise,
            traffic,
        }
    }

    /// The text on every line that the prefilter's fragments avoid.
    pub(super) fn ordinary(&self) -> Vec<&str> {
        (self.starts.iter().chain(&self.noise))
            .map(String::as_str)
            .collect()
    }
}

/// The groups chosen for these literals and this ordinary text (the record starts and
/// noise literals), each group's fragments in the order to build its searcher with.
pub(super) fn choose_groups(literals: &[String], ordinary: &[&str]) -> Vec<Vec<Vec<u8>>> {
    let fragments = prefilter_fragments(literals, ordinary);
    balanced_groups(&fragments, FRAGMENTS_PER_GROUP)
        .map(|group| {
            (teddy_order(group).into_iter())
                .filter_map(|i| group.get(i).cloned())
                .collect()
        })
        .collect()
}

/// What a choice is made from, hashed: XXH3-64 of each literal, then each ordinary text,
/// every string preceded by its length and the two lists told apart, so that no two
/// different inputs run together into the same bytes.
pub(super) fn inputs_hash(literals: &[String], ordinary: &[&str]) -> u64 {
    let mut h = twox_hash::XxHash3_64::with_seed(0);
    let lists: [&mut dyn Iterator<Item = &str>; 2] = [
        &mut literals.iter().map(String::as_str),
        &mut ordinary.iter().copied(),
    ];
    for (list, strings) in lists.into_iter().enumerate() {
        std::hash::Hasher::write(&mut h, &(list as u64).to_le_bytes());
        for s in strings {
            std::hash::Hasher::write(&mut h, &(s.len() as u64).to_le_bytes());
            std::hash::Hasher::write(&mut h, s.as_bytes());
        }
    }
    std::hash::Hasher::finish(&h)
}

/// The block prefilter's fragment groups for these literals: the built-in table's when
/// they were chosen from these very inputs, else groups chosen now.
pub(super) fn fragment_groups(literals: &[String], ordinary: &[&str]) -> Vec<Vec<Vec<u8>>> {
    if inputs_hash(literals, ordinary) == builtin::INPUTS_HASH {
        return (builtin::GROUPS.iter())
            .map(|group| group.iter().map(|f| f.to_vec()).collect())
            .collect();
    }
    choose_groups(literals, ordinary)
}

/// The block prefilter's searchers, one a group.
pub(super) fn prefilter_automata(
    groups: &[Vec<Vec<u8>>],
) -> Result<Vec<AhoCorasick>, GrammarError> {
    groups.iter().map(|group| searcher(group)).collect()
}

/// Whether a line a traffic shape fits may be read as traffic without the block
/// prefilter (`ingest::scan::shape`). The shape compares the line's head through its
/// traffic literal with a line that held no fragment, byte for byte but for digits. An
/// event literal in that head would hold a fragment the kept line held too — if some
/// fragment it holds has no digit — and an event literal that begins before the traffic
/// literal and ends past the head holds the traffic literal after its first byte. Neither
/// may happen: then every event literal of a line that fits begins no earlier than its
/// traffic literal, and `GrammarSet::candidates` reads it as traffic too.
pub(super) fn traffic_shapes_are_exact(
    literals: &[String],
    traffic: &[String],
    groups: &[Vec<Vec<u8>>],
) -> bool {
    // One searcher a fragment, each asked of every literal: a window comparison of every
    // pair was 2.2 M instructions of the start-up for the built-in grammars.
    let finders: Vec<memchr::memmem::Finder> = (groups.iter().flatten())
        .filter(|f| !f.is_empty() && !f.iter().any(u8::is_ascii_digit))
        .map(memchr::memmem::Finder::new)
        .collect();
    let traffic: Vec<memchr::memmem::Finder> = (traffic.iter())
        .filter(|t| !t.is_empty())
        .map(memchr::memmem::Finder::new)
        .collect();
    literals.iter().all(|lit| {
        let lit = lit.as_bytes();
        let covered = finders.iter().any(|f| f.find(lit).is_some());
        let after_first = lit.get(1..).unwrap_or(&[]);
        let straddles = traffic.iter().any(|t| t.find(after_first).is_some());
        covered && !straddles
    })
}

/// One group's searcher, its fragments given to the builder in the group's order. A
/// contiguous NFA, not the DFA the builder picks for so few patterns: the search is the
/// packed prefilter's (Teddy) either way, and only its candidates walk the automaton,
/// while building the DFAs was 2.9 of the 32 M instructions of `events` on a 100 KB log.
fn searcher<P: AsRef<[u8]>>(group: &[P]) -> Result<AhoCorasick, GrammarError> {
    AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostLongest)
        .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
        .build(group)
        .map_err(|e| GrammarError::Matcher(e.to_string()))
}

/// The text of `block_prefilter_builtin.rs` for a choice made from inputs of this hash.
#[cfg(test)]
fn table_source(hash: u64, groups: &[Vec<Vec<u8>>]) -> String {
    let mut out = String::from(
        "//! Written by `RANKSCOPE_WRITE_PREFILTER=1 cargo test --lib block_prefilter`: the\n\
         //! block prefilter the built-in grammars choose (`block_prefilter`). Not edited by\n\
         //! hand.\n\n\
         /// XXH3-64 of what the groups were chosen from (`block_prefilter::inputs_hash`).\n",
    );
    out.push_str(&format!(
        "pub(super) const INPUTS_HASH: u64 = {hash:#018x};\n\n"
    ));
    out.push_str("/// Each group's fragments, in the order its searcher is built with.\n");
    out.push_str("pub(super) const GROUPS: &[&[&[u8]]] = &[\n");
    for group in groups {
        out.push_str("    &[\n");
        for fragment in group {
            let escaped: String = (fragment.iter())
                .flat_map(|&b| std::ascii::escape_default(b))
                .map(char::from)
                .collect();
            out.push_str(&format!("        b\"{escaped}\",\n"));
        }
        out.push_str("    ],\n");
    }
    out.push_str("];\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::GrammarSet;

    /// The built-in grammars' literals and ordinary text, as `GrammarSet::build` gathers
    /// them.
    fn builtin_inputs() -> (Vec<String>, Vec<String>) {
        let grammars = GrammarSet::builtin_grammars().expect("built-in grammars compile");
        let inputs = ScanInputs::of(&grammars);
        let ordinary = inputs.ordinary().iter().map(|s| s.to_string()).collect();
        (inputs.literals, ordinary)
    }

    #[test]
    fn the_built_in_table_is_what_the_grammars_choose() {
        let (literals, ordinary) = builtin_inputs();
        let ordinary: Vec<&str> = ordinary.iter().map(String::as_str).collect();
        let source = table_source(
            inputs_hash(&literals, &ordinary),
            &choose_groups(&literals, &ordinary),
        );
        crate::grammar::check_written_table(
            "block_prefilter_builtin.rs",
            &source,
            "RANKSCOPE_WRITE_PREFILTER",
            "block prefilter",
            "block_prefilter",
        );
    }

    #[test]
    fn the_built_in_grammars_take_the_table_and_another_set_does_not() {
        let (mut literals, ordinary) = builtin_inputs();
        let ordinary: Vec<&str> = ordinary.iter().map(String::as_str).collect();
        assert_eq!(inputs_hash(&literals, &ordinary), builtin::INPUTS_HASH);
        // One more literal, one literal fewer, or a literal moved into the ordinary text:
        // each is another choice.
        let mut more = literals.clone();
        more.push("Zanzibar engine stalled".to_string());
        assert_ne!(inputs_hash(&more, &ordinary), builtin::INPUTS_HASH);
        let moved = literals.pop().expect("the grammars have literals");
        assert_ne!(inputs_hash(&literals, &ordinary), builtin::INPUTS_HASH);
        let mut ordinary_more = ordinary.clone();
        ordinary_more.insert(0, &moved);
        assert_ne!(inputs_hash(&literals, &ordinary_more), builtin::INPUTS_HASH);
    }

    #[test]
    fn a_set_with_a_new_literal_finds_it() {
        // Were the built-in table taken for a set it was not chosen for, the new literal
        // would have no fragment and its line no hit.
        let (mut literals, ordinary) = builtin_inputs();
        let ordinary: Vec<&str> = ordinary.iter().map(String::as_str).collect();
        literals.push("Zanzibar engine stalled".to_string());
        let automata =
            prefilter_automata(&fragment_groups(&literals, &ordinary)).expect("automata build");
        let line = b"[2026-12-06 03:00:00 TP0] Zanzibar engine stalled after 4 s";
        assert!(automata.iter().any(|ac| ac.is_match(&line[..])));
    }
}
