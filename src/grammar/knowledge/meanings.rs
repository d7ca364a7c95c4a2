//! What each (grammar, kind) pair means, resolved once per set of grammars, and each
//! thread's memo of where the pairs it asked for last are.
//!
//! Building a run asks what an event's kind means several times per event (its attempt,
//! its phase, its figures, its rank rule): 800,000 times for 8,192 rank files, each two
//! string-keyed hash lookups (grammar, then kind) of ~200 instructions. The pairs a run
//! asks for are few and repeat, so a thread remembers, by the addresses of the two
//! strings (an event's grammar and kind are shared `Arc`s, the same for every event of
//! one kind), which entry of the table answered; the entry's own grammar and kind are
//! compared before it is used, so a memo entry that an address now names differently is
//! never taken for it. The table is built when first asked and again after each grammar
//! is added, each build with an id of its own, so a memo entry of another table (another
//! set of grammars on the same thread) is never used either.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{ByName, KindMeaning};

/// The id the next table built takes (0 is no table's).
static NEXT_TABLE: AtomicU64 = AtomicU64::new(1);

/// Slots of a thread's memo (direct-mapped by the two strings' addresses).
const MEMO_SLOTS: usize = 64;

thread_local! {
    /// (table id, entry) per slot.
    static MEMO: [Cell<(u64, u32)>; MEMO_SLOTS] =
        const { [const { Cell::new((0, 0)) }; MEMO_SLOTS] };
}

/// Every (grammar, kind) pair the grammars declare, with what it means
/// (`Knowledge::meaning_of`'s answer).
#[derive(Clone, Debug)]
pub(super) struct MeaningTable {
    id: u64,
    entries: Vec<(String, String, Option<KindMeaning>)>,
    /// Grammar, then kind → place in `entries`.
    places: ByName<ByName<u32>>,
}

impl MeaningTable {
    /// The table of these grammars' meanings, `answer` giving each pair's.
    pub(super) fn of<'k>(
        kinds: &'k ByName<ByName<KindMeaning>>,
        answer: impl Fn(&str, &str) -> Option<&'k KindMeaning>,
    ) -> MeaningTable {
        let mut entries = Vec::new();
        let mut places: ByName<ByName<u32>> = ByName::default();
        for (grammar, of_grammar) in kinds {
            for kind in of_grammar.keys() {
                let Ok(place) = u32::try_from(entries.len()) else {
                    break;
                };
                entries.push((
                    grammar.clone(),
                    kind.clone(),
                    answer(grammar, kind).cloned(),
                ));
                places
                    .entry(grammar.clone())
                    .or_default()
                    .insert(kind.clone(), place);
            }
        }
        MeaningTable {
            id: NEXT_TABLE.fetch_add(1, Ordering::Relaxed),
            entries,
            places,
        }
    }

    /// What `kind` means in `grammar`, if the pair is in the table (else `None`: the
    /// caller answers as for a grammar that does not declare it).
    pub(super) fn lookup(&self, grammar: &str, kind: &str) -> Option<Option<&KindMeaning>> {
        let slot = slot_of(grammar, kind);
        let (id, place) = MEMO.with(|m| m[slot].get());
        if id == self.id {
            if let Some((g, k, meaning)) = self.entries.get(place as usize) {
                if g == grammar && k == kind {
                    return Some(meaning.as_ref());
                }
            }
        }
        let place = *self.places.get(grammar)?.get(kind)?;
        MEMO.with(|m| m[slot].set((self.id, place)));
        (self.entries.get(place as usize)).map(|(_, _, meaning)| meaning.as_ref())
    }
}

/// The memo slot of a pair: its strings' addresses, mixed.
fn slot_of(grammar: &str, kind: &str) -> usize {
    let a = grammar.as_ptr() as usize as u64;
    let b = kind.as_ptr() as usize as u64;
    let mixed = (a ^ b.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (mixed >> 58) as usize % MEMO_SLOTS
}

#[cfg(test)]
mod tests {
    use crate::grammar::Knowledge;

    #[test]
    fn every_pair_means_from_the_table_what_the_grammars_maps_say() {
        // Every pair the built-in grammars declare (more than the memo's 64 slots, so
        // some pairs share a slot and find the other's entry there), a kind no
        // grammar declares and a grammar not loaded, asked three times over: each time
        // the answer the maps give.
        let know = Knowledge::default();
        let mut pairs: Vec<(String, String)> = (know.kinds.iter())
            .flat_map(|(g, kinds)| kinds.keys().map(move |k| (g.clone(), k.clone())))
            .collect();
        assert!(pairs.len() > super::MEMO_SLOTS, "{} pairs", pairs.len());
        pairs.push(("sglang".into(), "no_such_kind".into()));
        pairs.push(("no_such_grammar".into(), "dist_init_end".into()));
        let shown = |m: Option<&super::KindMeaning>| format!("{m:?}");
        for _ in 0..3 {
            for (g, k) in &pairs {
                let searched = shown(know.meaning_searched(g, k));
                assert_eq!(shown(know.meaning_of(g, k)), searched, "{g} {k}");
            }
        }
        // By hand: SGLang's `dist_init_end` ends distributed init, and so does a grammar's
        // not loaded (the first declaring grammar's meaning); an unknown kind has none.
        let phase = |g: &str, k: &str| know.meaning_of(g, k).and_then(|m| m.phase);
        assert_eq!(
            phase("sglang", "dist_init_end").map(|(p, _)| p),
            Some(crate::model::Phase::DistInit)
        );
        assert_eq!(
            phase("no_such_grammar", "dist_init_end").map(|(p, _)| p),
            Some(crate::model::Phase::DistInit)
        );
        assert!(know.meaning_of("sglang", "no_such_kind").is_none());
    }
}
