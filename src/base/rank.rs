//! A rank: the set of its tags (`DP1 PP0 TP3`), shared by the events that name it.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;

/// The parallelism dimensions SGLang and vLLM name a rank by, in display order.
pub(crate) const TAG_ORDER: [&str; 6] = ["DP", "PP", "ATTN_CP", "MOE_DP", "TP", "EP"];

/// A rank is the set of its tags (`DP1 PP0 TP3`), parsed in any order and kept in
/// `TAG_ORDER` so that ranks compare and sort the same whatever order a server printed.
#[derive(Clone, Debug, Default)]
pub struct Rank {
    /// (index into TAG_ORDER or 255 for an unknown tag, tag name, number). Shared: a
    /// rank is made for each of its events and kept in every map keyed by rank, and the
    /// scan gives a file's consecutive events of one rank the same list
    /// (`ingest::scan::merge`'s `Shared`). A thin pointer: a rank is in every event,
    /// every rank's row and every per-rank figure of a `diff`, 8 bytes each where an
    /// `Arc<[…]>` is 16.
    tags: Arc<Box<[(u8, TagName, u32)]>>,
}

/// `DP0_PP1_TP2` as `DP0`, `PP1`, `TP2`: an underscore after a digit separates tags, one
/// inside a name (`ATTN_CP1`) does not.
fn split_after_digits(word: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(word);
    std::iter::from_fn(move || {
        let w = rest?;
        let cut = (w.as_bytes().windows(2)).position(|p| p[0].is_ascii_digit() && p[1] == b'_');
        match cut {
            Some(i) => {
                rest = w.get(i + 2..).filter(|r| !r.is_empty());
                w.get(..=i)
            }
            None => rest.take(),
        }
    })
}

/// A tag's name: a known one (`TAG_ORDER`, `engine`, `rank`) is the constant itself, so
/// that a rank, made for every event and cloned into every map keyed by rank, costs one
/// allocation (its tag list) and not one more per tag.
type TagName = Cow<'static, str>;

/// A tag's place in `TAG_ORDER` (255 for any other) and its name.
fn tag(name: &str) -> (u8, TagName) {
    if let Some((p, known)) = TAG_ORDER.iter().enumerate().find(|(_, t)| **t == name) {
        return (p as u8, Cow::Borrowed(known));
    }
    match [ENGINE, GLOBAL].into_iter().find(|t| *t == name) {
        Some(known) => (255, Cow::Borrowed(known)),
        None => (255, Cow::Owned(name.to_string())),
    }
}

impl Rank {
    pub(crate) fn from_pairs<S: AsRef<str>, I: IntoIterator<Item = (S, u32)>>(pairs: I) -> Rank {
        let mut tags: Vec<(u8, TagName, u32)> = pairs
            .into_iter()
            .map(|(name, n)| {
                let (order, name) = tag(name.as_ref());
                (order, name, n)
            })
            .collect();
        tags.sort();
        tags.dedup();
        Rank {
            tags: Arc::new(tags.into_boxed_slice()),
        }
    }

    /// Parses `" DP1 TP3"`-style tag lists; `None` when the text holds no tag. Tags may
    /// also be joined by `_` (`DP0_PP1_TP2`, a process name): an underscore after a digit
    /// separates, one inside a name (`ATTN_CP1`) does not.
    pub fn parse_tags(text: &str) -> Option<Rank> {
        let mut pairs = Vec::new();
        for word in text.split_whitespace().flat_map(split_after_digits) {
            let split = word.find(|c: char| c.is_ascii_digit())?;
            let (name, num) = word.split_at(split);
            // Tags are upper-case names (`TP`, `ATTN_CP`); `rank=2` is not one.
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                return None;
            }
            pairs.push((name, num.parse().ok()?));
        }
        if pairs.is_empty() {
            None
        } else {
            Some(Rank::from_pairs(pairs))
        }
    }

    /// The engine / driver process of a server that is not itself a numbered rank
    /// (vLLM's engine core, a V0 driver with no prefix): it still reports figures.
    pub(crate) fn engine() -> Rank {
        Rank::from_pairs([(ENGINE, 0)])
    }

    /// The engine process of one data-parallel replica (a grammar's engine process rule
    /// names it by a `dp` capture): each replica has its own, and they must not merge
    /// into one row.
    pub(crate) fn engine_of(dp: Option<u32>) -> Rank {
        match dp {
            Some(n) => Rank::from_pairs([(ENGINE, 0), ("DP", n)]),
            None => Rank::engine(),
        }
    }

    /// An engine or API process, not a numbered rank.
    pub fn is_engine(&self) -> bool {
        self.tags.iter().any(|t| t.1 == ENGINE)
    }

    /// A process's global rank when that is all a line says (c10's `[rank3]:`): the model
    /// maps it onto the run's ranks where the layout makes that certain.
    pub(crate) fn global(n: u32) -> Rank {
        Rank::from_pairs([(GLOBAL, n)])
    }

    /// The one tag of a rank named by a single tag (`TP3` → `("TP", 3)`).
    pub(crate) fn single(&self) -> Option<(&str, u32)> {
        match &self.tags[..] {
            [(_, name, n)] => Some((&**name, *n)),
            _ => None,
        }
    }

    /// The global rank number, for a rank that is only that.
    pub(crate) fn as_global(&self) -> Option<u32> {
        match &self.tags[..] {
            [(_, name, n)] if name == GLOBAL => Some(*n),
            _ => None,
        }
    }

    /// The names of the rank's tags (`PP`, `TP`).
    pub(crate) fn tag_names(&self) -> impl Iterator<Item = &str> {
        self.tags.iter().map(|t| &*t.1)
    }

    /// Tensor-parallel rank `n` (`TP3`), alone.
    pub fn tp(n: u32) -> Rank {
        Rank::from_pairs([("TP", n)])
    }

    /// This rank with tag `name` set to `n` (`TP3` with DP 1: `DP1 TP3`).
    pub(crate) fn with_tag(&self, name: &str, n: u32) -> Rank {
        let kept = (self.tags.iter())
            .filter(|t| t.1 != name)
            .map(|t| (&*t.1, t.2));
        Rank::from_pairs(kept.chain([(name, n)]))
    }

    pub(crate) fn get(&self, tag: &str) -> Option<u32> {
        self.tags.iter().find(|t| t.1 == tag).map(|t| t.2)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// The two hold one list of tags (the scan's sharing), not two equal ones.
    pub(crate) fn shares_tags_with(&self, other: &Rank) -> bool {
        Arc::ptr_eq(&self.tags, &other.tags)
    }

    /// Where the list of tags is: the same for ranks that share one (`shares_tags_with`),
    /// different for lists alive at once. A key cheaper than the rank for a map that meets
    /// one shared list again and again (a file's events of one rank) while the ranks are
    /// borrowed: hashing it reads no tags.
    pub(crate) fn tags_address(&self) -> usize {
        Arc::as_ptr(&self.tags).cast::<()>().addr()
    }
}

/// In JSON a rank is its display name (`"PP1 TP2"`).
// Equality, order and hash as derived over the tags, with two shortcuts: two ranks sharing
// one list are equal without a look at it, and a known tag's name (`TAG_ORDER`, place
// below 255) is never compared or hashed, its place saying which it is (`tag`). Ranks are
// the keys of most maps a run is built with, and comparing `"TP"` with `"TP"` byte by
// byte was most of every comparison.
impl PartialEq for Rank {
    fn eq(&self, other: &Rank) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Rank {}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Rank) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rank {
    fn cmp(&self, other: &Rank) -> std::cmp::Ordering {
        if Arc::ptr_eq(&self.tags, &other.tags) {
            return std::cmp::Ordering::Equal;
        }
        let tag_order = |(pa, na, ka): &(u8, TagName, u32), (pb, nb, kb): &(u8, TagName, u32)| {
            pa.cmp(pb)
                .then_with(|| {
                    if *pa == 255 {
                        na.cmp(nb)
                    } else {
                        std::cmp::Ordering::Equal
                    }
                })
                .then(ka.cmp(kb))
        };
        (self.tags.iter().zip(other.tags.iter()))
            .map(|(a, b)| tag_order(a, b))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| self.tags.len().cmp(&other.tags.len()))
    }
}

impl std::hash::Hash for Rank {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_usize(self.tags.len());
        for (place, name, n) in self.tags.iter() {
            state.write_u8(*place);
            if *place == 255 {
                name.hash(state);
            }
            state.write_u32(*n);
        }
    }
}

impl Serialize for Rank {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

const ENGINE: &str = "engine";
const GLOBAL: &str = "rank";

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_engine() {
            f.write_str(ENGINE)?;
            if let Some(dp) = self.get("DP") {
                write!(f, " DP{dp}")?;
            }
            return Ok(());
        }
        for (i, (_, name, n)) in self.tags.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{name}{n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::Rank;

    #[test]
    fn ranks_compare_and_hash_as_their_tag_lists_do() {
        // Known tags (TP, DP, PP), unknown ones (`X`, `Y`: compared by name), a longer
        // list beside its prefix, and one list shared by two ranks: every pair orders as
        // the (place, name, number) lists themselves do, and equal ranks hash alike.
        let texts = [
            "TP0", "TP1", "DP0 TP1", "DP1 TP0", "PP0 TP3", "X2", "Y1", "X2 TP0", "TP10",
        ];
        let mut ranks: Vec<Rank> = (texts.iter()).filter_map(|t| Rank::parse_tags(t)).collect();
        assert_eq!(ranks.len(), texts.len());
        ranks.push(ranks[2].clone());
        ranks.push(Rank::parse_tags("TP1").unwrap());
        let list = |r: &Rank| -> Vec<(u8, String, u32)> {
            r.tags
                .iter()
                .map(|(p, n, k)| (*p, n.to_string(), *k))
                .collect()
        };
        let hash = |r: &Rank| {
            use std::hash::{BuildHasher, BuildHasherDefault};
            BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(r)
        };
        for a in &ranks {
            for b in &ranks {
                assert_eq!(a.cmp(b), list(a).cmp(&list(b)), "{a} against {b}");
                assert_eq!(a == b, list(a) == list(b), "{a} against {b}");
                if a == b {
                    assert_eq!(hash(a), hash(b), "{a}");
                }
            }
        }
        // By hand: DP sorts before TP, a number after its tag, X's unknown tag after TP.
        let order: Vec<String> = {
            let mut r = ranks.clone();
            r.sort();
            r.dedup();
            r.iter().map(|r| r.to_string()).collect()
        };
        assert_eq!(order.first().map(String::as_str), Some("DP0 TP1"));
        assert!(order.iter().position(|r| r == "TP1") < order.iter().position(|r| r == "TP10"));
    }

    #[test]
    fn tags_joined_by_an_underscore_after_a_number_are_separate_tags() {
        let shown = |t: &str| Rank::parse_tags(t).map(|r| r.to_string());
        assert_eq!(shown("DP0_PP1_TP2").as_deref(), Some("DP0 PP1 TP2"));
        assert_eq!(shown(" TP3 DP1").as_deref(), Some("DP1 TP3"));
        assert_eq!(shown("ATTN_CP1 TP0_").as_deref(), Some("ATTN_CP1 TP0"));
        assert_eq!(shown("XY2_TP1").as_deref(), Some("TP1 XY2"));
        // A number with no name, or a name with no number, is no tag list.
        assert_eq!(shown("TP1_2"), None);
        assert_eq!(shown("TP"), None);
        assert_eq!(shown(""), None);
        let r = Rank::parse_tags("DP1 TP3");
        assert_eq!(r.as_ref().and_then(|r| r.get("TP")), Some(3));
        assert_eq!(
            r.map(|r| r.with_tag("TP", 5).to_string()).as_deref(),
            Some("DP1 TP5")
        );
    }
}
