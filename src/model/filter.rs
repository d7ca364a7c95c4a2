//! The one event filter of `events` (`--kind`, `--rank`): the text table, the JSON
//! document and the NDJSON stream all keep what it keeps.

use crate::base::event::{Event, Rank};

/// `events --kind/--rank`: which events to keep.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Event kinds to keep; empty keeps every kind.
    pub kinds: Vec<String>,
    /// The rank to keep, as printed (`TP1`, `engine DP0`); `None` keeps every rank and
    /// the events that name none.
    pub rank: Option<String>,
}

impl EventFilter {
    /// Whether a rank (or, for `None`, an event that names no rank) passes `--rank`.
    pub fn keeps_rank(&self, rank: Option<&Rank>) -> bool {
        match &self.rank {
            None => true,
            Some(want) => rank.is_some_and(|r| r.to_string() == *want),
        }
    }

    pub(crate) fn keeps(&self, e: &Event) -> bool {
        (self.kinds.is_empty() || self.kinds.iter().any(|k| *k == e.kind))
            && self.keeps_rank(e.rank.as_ref())
    }
}
