//! The run's parallel layout: which of its ranks a global rank number is.
//!
//! PyTorch names a process by its global rank (c10's `[rank6]:` lines, `Ranks 6 failed to
//! pass monitoredBarrier`), the servers by their tags (`PP1 TP2`, `Worker_PP1_TP2`). Both
//! SGLang and vLLM number the ranks of one world pipeline stage by pipeline stage:
//! global = pp · tp_size + tp (SGLang's model runner passes
//! `rank = tp_size * pp_rank + tp_rank` to `init_distributed_environment`; vLLM's
//! `ParallelConfig` ranks are laid out the same within a data-parallel replica, and its
//! `init_distributed_environment` offsets them by `data_parallel_rank * world_size`, one
//! world across the replicas, where SGLang's replicas are worlds of their own). A global
//! number names an existing rank only where that is certain; it never makes a new one.

use std::collections::HashMap;

use crate::base::event::Rank;
use crate::model::config::pyrepr::PyValue;
use crate::model::config::ParsedConfig;

/// The sizes a server's configuration printed, where it printed them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LayoutSizes {
    pub(crate) tp: Option<u32>,
    pub(crate) pp: Option<u32>,
    /// One world spans the data-parallel replicas (vLLM: the global rank is offset by
    /// dp · pp_size · tp_size); otherwise each replica is a world of its own.
    pub(crate) across_replicas: bool,
}

impl LayoutSizes {
    /// SGLang's `tp_size` / `pp_size`, vLLM's `tensor_parallel_size` /
    /// `pipeline_parallel_size`.
    pub(crate) fn from_config(config: Option<&ParsedConfig>) -> LayoutSizes {
        let Some(c) = config else {
            return LayoutSizes::default();
        };
        let int = |keys: &[&str]| {
            keys.iter().find_map(|k| match c.config.get(k) {
                Some(PyValue::Int(n)) => u32::try_from(*n).ok().filter(|n| *n > 0),
                _ => None,
            })
        };
        LayoutSizes {
            tp: int(&["tp_size", "tensor_parallel_size"]),
            pp: int(&["pp_size", "pipeline_parallel_size"]),
            across_replicas: false,
        }
    }
}

/// Where global rank `n` sits in the layout the configuration printed, `(dp, pp, tp)`:
/// global = (dp · pp_size + pp) · tp_size + tp, pp_size 1 when the configuration gives
/// none. `None` without a `tp_size`, and for a number past one world of a server whose
/// replicas are worlds of their own (`per_replica`): no such number exists there, so the
/// sizes do not describe the run and nothing is certain.
pub(crate) fn place_global(n: u32, sizes: LayoutSizes) -> Option<(u32, u32, u32)> {
    let tp_size = sizes.tp?;
    let world = tp_size.checked_mul(sizes.pp.unwrap_or(1))?;
    let dp = n / world;
    if dp > 0 && !sizes.across_replicas {
        return None;
    }
    let within = n % world;
    Some((dp, within / tp_size, within % tp_size))
}

/// The name global rank `n` has in the configured layout: `PP` shown when there is more
/// than one stage, `DP` when `with_dp` (some number of the run lies past the first
/// replica's world), `TP` always — as a rank named by its tags would be (`PP1 TP2`).
pub(crate) fn global_name(n: u32, sizes: LayoutSizes, with_dp: bool) -> Option<Rank> {
    let (dp, pp, tp) = place_global(n, sizes)?;
    let mut pairs = vec![("TP".to_string(), tp)];
    if sizes.pp.is_some_and(|p| p > 1) {
        pairs.push(("PP".to_string(), pp));
    }
    if with_dp {
        pairs.push(("DP".to_string(), dp));
    }
    Some(Rank::from_pairs(pairs))
}

/// Tags that do not change a rank's place in the world of one replica (`EP` is derived
/// from TP; `ATTN_CP` / `MOE_DP` subdivide it).
fn is_layout_tag(name: &str) -> bool {
    matches!(name, "PP" | "TP" | "DP" | "EP" | "ATTN_CP" | "MOE_DP")
}

/// Each global rank number that names exactly one of `ranks`. Empty when the ranks are not
/// all tagged by (DP, PP, TP) position (a rank with a DP or PP tag and no TP tag is TP 0 of
/// a TP size of 1), or when two ranks share one (plain data parallelism: each replica is a
/// world of its own, so a global number is ambiguous).
pub(crate) fn global_ranks<'r>(
    ranks: impl IntoIterator<Item = &'r Rank>,
    sizes: LayoutSizes,
) -> HashMap<u32, Rank> {
    let mut placed: Vec<(u32, u32, u32, &Rank)> = Vec::new();
    for r in ranks {
        if r.is_engine() || r.as_global().is_some() || r.is_empty() {
            continue;
        }
        if r.get("pid").is_some() {
            // A worker that never said its rank: its place is unknown.
            return HashMap::new();
        }
        if !r.tag_names().all(is_layout_tag) {
            return HashMap::new();
        }
        // A rank named by its replica or stage without a TP tag (data-parallel attention's
        // `DP2 EP2`) is the one TP rank of its place.
        let tp = match r.get("TP") {
            Some(tp) => tp,
            None if r.get("DP").is_some() || r.get("PP").is_some() => 0,
            None => return HashMap::new(),
        };
        placed.push((r.get("DP").unwrap_or(0), r.get("PP").unwrap_or(0), tp, r));
    }
    // A stage or TP number of u32::MAX has no size one past it (found by the scan fuzz
    // target: `TP4294967295`): no numbering, as for any global number that overflows.
    if placed.iter().any(|p| p.1 == u32::MAX || p.2 == u32::MAX) {
        return HashMap::new();
    }
    let tp_size = placed
        .iter()
        .map(|p| p.2 + 1)
        .max()
        .map_or(sizes.tp, |seen| {
            Some(sizes.tp.map_or(seen, |t| t.max(seen)))
        });
    let Some(tp_size) = tp_size else {
        return HashMap::new();
    };
    let pp_size = placed
        .iter()
        .map(|p| p.1 + 1)
        .max()
        .map_or(1, |seen| sizes.pp.map_or(seen, |p| p.max(seen)));
    let mut out: HashMap<u32, Rank> = HashMap::new();
    for (dp, pp, tp, r) in placed {
        let replica = if sizes.across_replicas { dp } else { 0 };
        let Some(g) = replica
            .checked_mul(pp_size)
            .and_then(|x| x.checked_add(pp))
            .and_then(|x| x.checked_mul(tp_size))
            .and_then(|x| x.checked_add(tp))
        else {
            return HashMap::new();
        };
        if out.insert(g, r.clone()).is_some_and(|prev| prev != *r) {
            return HashMap::new();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(s: &str) -> Rank {
        Rank::parse_tags(s).unwrap()
    }

    #[test]
    fn a_tp_or_pp_number_at_u32_max_gives_no_numbering_and_no_overflow() {
        for last in ["PP0 TP4294967295", "PP4294967295 TP0"] {
            let ranks = [tags("PP0 TP0"), tags(last)];
            assert!(
                global_ranks(&ranks, LayoutSizes::default()).is_empty(),
                "{last}"
            );
        }
    }

    /// Trial 12's DP4 × EP4 ranks (data-parallel attention, no TP tag): in one world
    /// across replicas, global rank n is `DPn EPn`; per replica the numbers collide (each
    /// replica's one rank is its rank 0), so none is placed.
    #[test]
    fn ranks_without_a_tp_tag_are_the_one_tp_rank_of_their_replica() {
        let ranks: Vec<Rank> = (0..4).map(|i| tags(&format!("DP{i} EP{i}"))).collect();
        let across = LayoutSizes {
            across_replicas: true,
            ..LayoutSizes::default()
        };
        let placed = global_ranks(&ranks, across);
        assert_eq!(placed.len(), 4);
        assert_eq!(placed.get(&2), Some(&tags("DP2 EP2")));
        assert!(global_ranks(&ranks, LayoutSizes::default()).is_empty());
    }

    #[test]
    fn a_global_number_is_placed_by_the_configured_sizes() {
        let sizes = LayoutSizes {
            tp: Some(4),
            pp: Some(2),
            across_replicas: false,
        };
        // 6 = 1 · 4 + 2; 3 = 0 · 4 + 3.
        assert_eq!(place_global(6, sizes), Some((0, 1, 2)));
        assert_eq!(place_global(3, sizes), Some((0, 0, 3)));
        // Past PP2 × TP4 = 8 in a world of one replica: not a number of this layout.
        assert_eq!(place_global(8, sizes), None);
        // One world across replicas: 13 = (1 · 2 + 1) · 4 + 1.
        let across = LayoutSizes {
            across_replicas: true,
            ..sizes
        };
        assert_eq!(place_global(13, across), Some((1, 1, 1)));
        // No tp_size printed: no place, whatever the rest says.
        assert_eq!(place_global(1, LayoutSizes::default()), None);
        // tp_size alone: one stage.
        let tp_only = LayoutSizes {
            tp: Some(8),
            ..LayoutSizes::default()
        };
        assert_eq!(place_global(5, tp_only), Some((0, 0, 5)));
    }

    #[test]
    fn pp_major_numbering() {
        let ranks: Vec<Rank> = (0..2)
            .flat_map(|p| (0..4).map(move |t| tags(&format!("PP{p} TP{t}"))))
            .collect();
        let m = global_ranks(&ranks, LayoutSizes::default());
        assert_eq!(m.len(), 8);
        // 6 = 1 · 4 + 2
        assert_eq!(m[&6], tags("PP1 TP2"));
        assert_eq!(m[&3], tags("PP0 TP3"));
    }

    #[test]
    fn config_size_wins_over_the_ranks_seen() {
        // Only TP0 of each stage printed; the configuration says four per stage.
        let ranks = [tags("PP0 TP0"), tags("PP1 TP0")];
        let sizes = LayoutSizes {
            tp: Some(4),
            pp: Some(2),
            across_replicas: false,
        };
        let m = global_ranks(&ranks, sizes);
        assert_eq!(m[&4], tags("PP1 TP0"));
        assert!(!m.contains_key(&1));
    }

    #[test]
    fn plain_data_parallel_is_ambiguous() {
        let ranks = [tags("DP0 TP0"), tags("DP1 TP0")];
        assert!(global_ranks(&ranks, LayoutSizes::default()).is_empty());
        // Attention DP numbers TP across the replicas: 1 is DP1 TP1.
        let ranks = [tags("DP0 TP0"), tags("DP1 TP1")];
        assert_eq!(
            global_ranks(&ranks, LayoutSizes::default())[&1],
            tags("DP1 TP1")
        );
    }

    #[test]
    fn a_world_across_replicas_offsets_by_the_replica() {
        // vLLM DP2 × PP2 × TP2: DP1 PP0 TP1 is 1 · (2 · 2) + 0 · 2 + 1 = 5.
        let ranks: Vec<Rank> = (0..2)
            .flat_map(|d| {
                (0..2).flat_map(move |p| (0..2).map(move |t| tags(&format!("DP{d} PP{p} TP{t}"))))
            })
            .collect();
        let sizes = LayoutSizes {
            across_replicas: true,
            ..LayoutSizes::default()
        };
        let m = global_ranks(&ranks, sizes);
        assert_eq!(m.len(), 8);
        assert_eq!(m[&5], tags("DP1 PP0 TP1"));
        assert_eq!(m[&7], tags("DP1 PP1 TP1"));
        // The same ranks as worlds of their own per replica: ambiguous, no mapping.
        assert!(global_ranks(&ranks, LayoutSizes::default()).is_empty());
    }
}
