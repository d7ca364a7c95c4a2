//! Rank names that only the whole run (or every node of it) can settle: global ranks
//! placed by the layout, a single-GPU engine named TP0, the first pipeline stage named
//! `PP0` and the first data-parallel replica `DP0`.

use std::collections::HashMap;

use super::{server_of, NodeEvents};
use crate::base::event::{kind, Event, Rank};
use crate::grammar::Knowledge;
use crate::model::layout::LayoutSizes;

/// Names that only the whole run can settle. A global rank (c10's `[rank3]:`, a prefix's
/// `grank` capture) of a run whose processes are named by their global numbers alone is
/// placed by the sizes the configuration printed (`tp_size`, `pp_size`: `PP1 TP2` is 6
/// of PP2 × TP4) — certain, since the line is the process's own — and, with no sizes
/// printed, is the TP rank of that number. Beside ranks named by their tags it is the TP
/// rank of that number when those are TP ranks alone, else the rank the run's layout
/// puts at that number (`layout::global_ranks`), and no rank at all where the layout
/// does not say: a global number never makes a rank of its own beside the tagged ones. A
/// run with no numbered rank but an engine process is a single-GPU run whose engine does
/// the work (TP0); an unprefixed V0-style driver beside one unnamed worker process is
/// rank 0 beside rank 1.
pub(super) struct RankNames {
    rename: HashMap<Rank, Rank>,
    tp_only: bool,
    /// The configured sizes that place every global number of a run of global numbers
    /// alone, and which tags its names carry.
    placed: Option<GlobalNames>,
    pub(super) globals: HashMap<u32, Rank>,
    /// A global number the configured sizes cannot hold, when they were printed: the
    /// numbers are then named as with no sizes, and the run notes it.
    pub(super) unplaced: Option<crate::model::notes::ReadNote>,
}

/// How a run whose processes are named by global numbers alone names them: by the
/// configured layout, `DP` shown when some number lies past the first replica's world.
#[derive(Clone, Copy)]
struct GlobalNames {
    sizes: LayoutSizes,
    with_dp: bool,
}

impl GlobalNames {
    fn name(&self, n: u32) -> Option<Rank> {
        crate::model::layout::global_name(n, self.sizes, self.with_dp)
    }
}

/// The layout sizes the run's configuration line printed (`tp_size`, `pp_size` and
/// their vLLM spellings), and how the run's server numbers its replicas; no sizes when
/// no configuration line is among `events`.
pub(crate) fn configured_sizes(events: &[Event], know: &Knowledge) -> LayoutSizes {
    let config = events
        .iter()
        .find(|e| e.kind == kind::SERVER_ARGS)
        .and_then(|e| crate::model::config::Config::from_event(e, know).ok());
    let mut sizes = LayoutSizes::from_config(config.as_ref());
    sizes.across_replicas = server_of(events, know).is_some_and(|g| know.world_spans_replicas(&g));
    sizes
}

/// `configured_sizes` of `events`, or of `run_sizes` (another node's configuration) when
/// these events print no `tp_size`.
pub(super) fn sizes_or_run(
    events: &[Event],
    know: &Knowledge,
    run_sizes: Option<LayoutSizes>,
) -> LayoutSizes {
    let mut sizes = configured_sizes(events, know);
    if sizes.tp.is_none() {
        if let Some(run) = run_sizes {
            sizes.tp = run.tp;
            sizes.pp = run.pp;
        }
    }
    sizes
}

impl RankNames {
    /// `run_sizes`: the sizes another part of the run printed (a node whose files hold
    /// no configuration line is named by the configuration of the node that printed it).
    pub(super) fn of(
        events: &[Event],
        know: &Knowledge,
        run_sizes: Option<LayoutSizes>,
    ) -> RankNames {
        // Distinct first (a hash per event), then sorted: sorting every event's rank was
        // a tenth of loading a run of thousands of ranks. An event whose rank is the one
        // before's list of tags (a file's events share one) is not hashed again: a hash for
        // every event of a rank file was 1 % of `diff` of two runs of 1,024 rank files.
        // Nor is one whose list was met before (`Rank::tags_address`): in time order a run
        // of thousands of rank files meets each file's list again far from the last time.
        let mut before: Option<&Rank> = None;
        let mut lists: std::collections::HashSet<usize, foldhash::fast::RandomState> =
            Default::default();
        let distinct: std::collections::HashSet<&Rank, foldhash::fast::RandomState> = events
            .iter()
            .filter_map(|e| e.rank.as_ref())
            .filter(|r| {
                let again = before.is_some_and(|b| b.shares_tags_with(r));
                before = Some(r);
                !again && lists.insert(r.tags_address()) && r.as_global().is_none() && !r.is_empty()
            })
            .collect();
        let mut named: Vec<&Rank> = distinct.into_iter().collect();
        // Distinct, so the unstable sort gives the one order.
        named.sort_unstable();
        let tp_only = named.iter().all(|r| {
            r.is_engine() || r.get("pid").is_some() || r.single().is_some_and(|(t, _)| t == "TP")
        });
        let engines = named.iter().filter(|r| r.is_engine()).count();
        let pids: Vec<Rank> = named
            .iter()
            .filter(|r| r.get("pid").is_some())
            .map(|r| (*r).clone())
            .collect();
        let workers = named.len() - engines - pids.len();
        let mut rename = first_stage_names(&named);
        // A lone engine is the one GPU's process (vLLM at TP1 logs as `EngineCore`), unless
        // workers named by a global number alone (`VllmWorker rank=1`) are the ranks (a
        // pass over the events only for a run that has a lone engine).
        let global_workers =
            || (events.iter()).any(|e| e.rank.as_ref().is_some_and(|r| r.as_global().is_some()));
        if workers == 0 && engines == 1 && pids.len() <= 1 && !global_workers() {
            if let Some(e) = named.iter().find(|r| r.is_engine()) {
                rename.insert((*e).clone(), Rank::tp(0));
            }
            if let Some(p) = pids.first() {
                rename.insert(p.clone(), Rank::tp(1));
            }
        }
        let sizes = sizes_or_run(events, know, run_sizes);
        let (placed, unplaced) = if workers == 0 {
            match global_names(events, sizes) {
                Ok(p) => (p, None),
                Err(number) => (
                    None,
                    Some(crate::model::notes::ReadNote::GlobalRanksUnplaced {
                        number,
                        tp: sizes.tp.unwrap_or(0),
                        pp: sizes.pp.unwrap_or(1),
                    }),
                ),
            }
        } else {
            (None, None)
        };
        let globals = if let Some(p) = placed {
            let seen: std::collections::BTreeSet<u32> = events
                .iter()
                .filter_map(|e| e.rank.as_ref()?.as_global())
                .collect();
            seen.into_iter()
                .filter_map(|n| Some((n, p.name(n)?)))
                .collect()
        } else if tp_only {
            HashMap::new()
        } else {
            let renamed: Vec<&Rank> = named.iter().map(|r| rename.get(*r).unwrap_or(*r)).collect();
            crate::model::layout::global_ranks(renamed, sizes)
        };
        RankNames {
            rename,
            tp_only,
            placed,
            globals,
            unplaced,
        }
    }

    /// What `r` is called in the run: `None` when nothing is to change, `Some(None)` when
    /// the line names a global rank the layout cannot place.
    pub(super) fn settle(&self, r: &Rank) -> Option<Option<Rank>> {
        if !self.rename.is_empty() {
            if let Some(to) = self.rename.get(r) {
                return Some(Some(to.clone()));
            }
        }
        let n = r.as_global()?;
        if let Some(to) = self.placed.and_then(|p| p.name(n)) {
            return Some(Some(to));
        }
        if self.tp_only {
            Some(Some(Rank::tp(n)))
        } else {
            Some(self.globals.get(&n).cloned())
        }
    }
}

/// The layout names of a run whose processes are named by global numbers alone, when the
/// configuration's sizes place every one of them; `Ok(None)` with no numbers or no sizes,
/// `Err(n)` for the first number `n` the sizes cannot hold (the numbers are then named as
/// with no configuration, and the run notes it).
fn global_names(events: &[Event], sizes: LayoutSizes) -> Result<Option<GlobalNames>, u32> {
    let seen: std::collections::BTreeSet<u32> = events
        .iter()
        .filter_map(|e| e.rank.as_ref()?.as_global())
        .collect();
    if seen.is_empty() || sizes.tp.is_none() {
        return Ok(None);
    }
    let mut with_dp = false;
    for &n in &seen {
        let (dp, ..) = crate::model::layout::place_global(n, sizes).ok_or(n)?;
        with_dp |= dp > 0;
    }
    Ok(Some(GlobalNames { sizes, with_dp }))
}

/// A run of more than one pipeline stage names its first stage `PP0 TP0`, as SGLang's log
/// prefix does once `pp_size > 1`, and a run of more than one data-parallel replica names
/// its first replica `DP0 TP0` — but a line that spells the rank out by itself
/// (`assignment` evidence, a per-line rule) cannot know the run's stage or replica count
/// and drops the zero (`TP0`). Named beside `PP1 TP0` or `DP1 TP0`, that rank would read
/// as another layout and sort after stage or replica 1. The evidence that the zero was
/// dropped is a counterpart: a rank named by TP alone whose TP number a rank of stage or
/// replica above 0 also has (`TP2` beside `DP1 TP2`). Then every worker rank named by TP
/// without those tags gets each zero tag (`DP`, `PP`, `PCP`, `EP`) the counterparts carry:
/// `DP0 TP2`. Without a counterpart (lines of unrelated runs in one file: `TP9` beside
/// `DP1 TP1`) the names stay as the lines print them.
fn first_stage_names(named: &[&Rank]) -> HashMap<Rank, Rank> {
    let worker = |r: &&&Rank| !r.is_engine() && r.get("pid").is_none() && r.get("TP").is_some();
    let split =
        |r: &&&Rank| r.get("PP").is_some_and(|p| p > 0) || r.get("DP").is_some_and(|d| d > 0);
    let bare = |r: &&&Rank| ZERO_TAGS.iter().all(|t| r.get(t).is_none());
    let counterparts: Vec<&&Rank> = named
        .iter()
        .filter(worker)
        .filter(split)
        .filter(|o| {
            named
                .iter()
                .filter(worker)
                .filter(bare)
                .any(|r| r.get("TP") == o.get("TP"))
        })
        .collect();
    if counterparts.is_empty() {
        return HashMap::new();
    }
    let zero_tags: Vec<&str> = ZERO_TAGS
        .into_iter()
        .filter(|t| counterparts.iter().any(|o| o.get(t).is_some()))
        .collect();
    named
        .iter()
        .filter(worker)
        .filter(bare)
        .map(|r| {
            let mut pairs: Vec<(String, u32)> = r
                .tag_names()
                .map(|t| (t.to_string(), r.get(t).unwrap_or(0)))
                .collect();
            for t in &zero_tags {
                pairs.push((t.to_string(), 0));
            }
            ((*r).clone(), Rank::from_pairs(pairs))
        })
        .collect()
}

/// The tags an `assignment` line drops at zero when no stage or replica is above zero.
const ZERO_TAGS: [&str; 4] = ["DP", "PP", "PCP", "EP"];

/// [`first_stage_names`] across the nodes of one run: each node is settled on its own, and
/// a node that holds only the first stage cannot see that there are others.
pub fn name_first_stage(nodes: &mut [NodeEvents], events: &mut [Event]) {
    let all: std::collections::BTreeSet<&Rank> = nodes.iter().flat_map(|n| &n.ranks).collect();
    let all: Vec<&Rank> = all.into_iter().collect();
    let rename = first_stage_names(&all);
    if rename.is_empty() {
        return;
    }
    for e in events.iter_mut() {
        if let Some(to) = e.rank.as_ref().and_then(|r| rename.get(r)) {
            e.rank = Some(to.clone());
        }
    }
    for node in nodes.iter_mut() {
        for r in node.ranks.iter_mut() {
            if let Some(to) = rename.get(r) {
                *r = to.clone();
            }
        }
        node.ranks.sort();
    }
}

/// `events` with their rank names settled, and the note on global numbers the sizes
/// could not place, if any.
pub(super) fn settle_rank_names(
    mut events: Vec<Event>,
    know: &Knowledge,
    run_sizes: Option<LayoutSizes>,
) -> (Vec<Event>, Option<crate::model::notes::ReadNote>) {
    let names = RankNames::of(&events, know, run_sizes);
    settle_with(&mut events, &names);
    (events, names.unplaced)
}

pub(super) fn settle_with(events: &mut [Event], names: &RankNames) {
    for e in events.iter_mut() {
        let Some(r) = e.rank.as_ref() else { continue };
        if let Some(to) = names.settle(r) {
            e.rank = to;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::model::build::tests::ranked;

    #[test]
    fn each_distinct_rank_counts_whether_its_events_share_a_list_or_not() {
        // A lone engine is renamed TP0 only where no worker rank is seen. The engine's
        // events share one list; the worker's two each follow one of the engine's, the
        // second with a list of its own equal to the first's.
        let engine = Rank::engine();
        let worker = Rank::tp(3);
        let know = Knowledge::empty();
        let events = vec![
            ranked(1, &engine),
            ranked(2, &engine),
            ranked(3, &worker),
            ranked(4, &engine),
            ranked(5, &Rank::tp(3)),
        ];
        let names = RankNames::of(&events, &know, None);
        assert!(names.rename.is_empty(), "{:?}", names.rename);
        // Without the worker, the engine is the one GPU's process: TP0.
        let alone = vec![ranked(1, &engine), ranked(2, &engine)];
        let names = RankNames::of(&alone, &know, None);
        assert_eq!(names.rename.get(&engine), Some(&Rank::tp(0)));
    }
}
