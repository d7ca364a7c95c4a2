//! What PyTorch's caching allocator held of each breakdown category, from a rank's
//! memory snapshot: every allocation site's reserved bytes at the dump, placed in the
//! phase its stack names (the grammars' `frame_phase`), else the phase where the site
//! first allocated on the log's clock (as `attribute` places them), and that phase's
//! category. The category's log figure less what the allocator held is
//! the residual it did not see: NCCL's buffers, IPC mappings, the CUDA context, plain
//! `cudaMalloc` — or memory freed before the dump.

use std::collections::BTreeMap;

use crate::analysis::attribute::{clock_offset_us, covers, first_alloc_by_site, RankSnapshot};
use crate::analysis::breakdown::{model_of, rank_breakdown, Reader};
use crate::base::event::Phase;
use crate::base::event::Rank;
use crate::base::units::Bytes;
use crate::grammar::memory_model::Category;
use crate::grammar::FrameRule;
use crate::model::{RankRun, Run};
use crate::snapshot::inspect::{self as snap, SiteRule};
use crate::snapshot::site::site_label;
use crate::snapshot::Snapshot;

/// Sites named per category, largest first.
const SITES_SHOWN: usize = 3;

/// One memory category on one rank: what the allocator held at sites of its phase.
#[derive(Clone, Debug, PartialEq)]
pub struct CategoryHeld {
    /// The category.
    pub category: Category,
    /// Bytes of the segments whose site first allocated in the category's phase.
    pub reserved: i64,
    /// The largest `SITES_SHOWN` sites.
    pub sites: Vec<HeldSite>,
    /// The breakdown's figure for the category on this rank, less `reserved`: what the
    /// allocator did not hold. None when the breakdown did not measure the category.
    pub residual: Option<i64>,
    /// The breakdown figure's resolution: a residual within it is indistinguishable
    /// from none.
    pub resolution: i64,
    /// The breakdown figure's print steps added (the JSON's resolution).
    pub(crate) step: i64,
}

/// One allocation site a category holds.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldSite {
    /// The site as shown: `function (file:lines)`.
    pub label: String,
    pub(crate) reserved: i64,
    /// How the site was placed in the category's phase.
    pub placed: Placed,
}

/// How a site was put in a category's phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placed {
    /// A frame of its stack names the phase (`frame_phase`).
    ByStack,
    /// Its first allocation falls in the phase's window on the log's clock, and in no
    /// other's.
    ByTime,
    /// Its first allocation falls in a second two phases share (whole-second stamps):
    /// put in the first of them whose log figure still has room for it.
    BySize,
}

/// One rank's snapshot against its breakdown.
#[derive(Clone, Debug, PartialEq)]
pub struct RankHeld {
    /// The rank.
    pub rank: Rank,
    /// The snapshot's file.
    pub(crate) path: String,
    /// Every category with a phase of its own, in the breakdown's order.
    pub categories: Vec<CategoryHeld>,
    /// Reserved at sites first seen outside those phases (serving, launch) or whose
    /// time could not be placed.
    pub(crate) unplaced: i64,
    /// Everything the allocator reserved at the dump.
    pub(crate) reserved: i64,
}

/// Per site, its first allocation's time (snapshot clock) and the phase its stack names
/// through the grammars' `frame_phase` rules, if any.
fn first_allocs(
    s: &Snapshot,
    rule: &SiteRule,
    frames: &[FrameRule],
) -> BTreeMap<String, (i64, Option<Phase>)> {
    (first_alloc_by_site(s, rule).into_iter())
        .map(|(site, e)| {
            let stack: Vec<(&str, &str)> =
                s.stack(e.stack).map(|f| (&*f.name, &*f.filename)).collect();
            let phase = crate::grammar::phase_of_stack(frames, stack.into_iter());
            (site, (e.time_us, phase))
        })
        .collect()
}

fn rank_held(run: &Run, rd: &Reader, s: &RankSnapshot) -> Option<RankHeld> {
    let model = model_of(run)?;
    let rr = run.rank(&s.rank)?;
    let rule = SiteRule::default();
    let summary = snap::summarize(&s.snapshot, &rule);
    let first = first_allocs(&s.snapshot, &rule, &run.frame_phases);
    let offset = clock_offset_us(rr, &s.snapshot, &run.frame_phases);
    let b = rank_breakdown(rd, rr, model);
    let mut by_cat: BTreeMap<Category, Vec<HeldSite>> = BTreeMap::new();
    let mut unplaced = 0i64;
    // Sites whose time matches more than one phase, placed after the sure ones.
    let mut shared: Vec<(HeldSite, Vec<Category>)> = Vec::new();
    for site in summary.sites.iter().filter(|x| x.reserved > Bytes::ZERO) {
        let label = site_label(&site.site, &site.lines);
        let reserved = site.reserved.as_signed().get();
        let held = |placed| HeldSite {
            label: label.clone(),
            reserved,
            placed,
        };
        let Some(&(t, by_stack)) = first.get(&site.site) else {
            unplaced = unplaced.saturating_add(reserved);
            continue;
        };
        if let Some(c) = by_stack.and_then(Category::of_phase) {
            by_cat.entry(c).or_default().push(held(Placed::ByStack));
            continue;
        }
        let cats: Vec<Category> = offset
            .and_then(|o| t.checked_sub(o))
            .map(|t| phases_at(rr, t))
            .unwrap_or_default()
            .into_iter()
            .filter_map(Category::of_phase)
            .collect();
        match cats.as_slice() {
            [] => unplaced = unplaced.saturating_add(reserved),
            [c] => by_cat.entry(*c).or_default().push(held(Placed::ByTime)),
            _ => shared.push((held(Placed::BySize), cats)),
        }
    }
    shared.sort_by_key(|(h, _)| std::cmp::Reverse(h.reserved));
    for (h, cats) in shared {
        let room = |c: &Category| {
            let measured = b.bytes(*c)?;
            let res = b.row(*c).map_or(0, |r| match &r.value {
                crate::analysis::breakdown::RowValue::Measured(a) => a.resolution,
                _ => 0,
            });
            let held: i64 = by_cat
                .get(c)
                .map_or(0, |v| v.iter().map(|x| x.reserved).sum());
            (measured - held - h.reserved >= -res).then_some(())
        };
        match cats.iter().find(|c| room(c).is_some()) {
            Some(c) => by_cat.entry(*c).or_default().push(h),
            None => unplaced = unplaced.saturating_add(h.reserved),
        }
    }
    let categories = Category::ALL
        .into_iter()
        .filter(|c| c.phase().is_some())
        .map(|c| {
            let mut sites = by_cat.remove(&c).unwrap_or_default();
            sites.sort_by_key(|x| std::cmp::Reverse(x.reserved));
            let reserved: i64 = sites.iter().map(|x| x.reserved).sum();
            sites.truncate(SITES_SHOWN);
            let measured = b.row(c).and_then(|r| match &r.value {
                crate::analysis::breakdown::RowValue::Measured(a) => Some(a),
                _ => None,
            });
            CategoryHeld {
                category: c,
                reserved,
                sites,
                residual: measured.map(|a| a.bytes - reserved),
                resolution: measured.map_or(0, |a| a.resolution),
                step: measured.map_or(0, |a| a.step),
            }
        })
        .collect();
    Some(RankHeld {
        rank: s.rank.clone(),
        path: s.path.clone(),
        categories,
        unplaced,
        reserved: i64::try_from(summary.totals.reserved).unwrap_or(i64::MAX),
    })
}

/// The phases whose window holds a moment of the rank's log clock (`attribute::covers`;
/// `attribute::phase_at` gives the first, this every match).
fn phases_at(rr: &RankRun, t_log_us: i64) -> Vec<Phase> {
    (rr.phases.iter())
        .filter(|p| covers(p, t_log_us))
        .map(|p| p.phase)
        .collect()
}

/// Every worker rank's snapshot against its breakdown, in rank order.
pub fn held(run: &Run, snaps: &[RankSnapshot]) -> Vec<RankHeld> {
    let rd = Reader::new(run);
    let mut out: Vec<RankHeld> = snaps
        .iter()
        .filter_map(|s| rank_held(run, &rd, s))
        .collect();
    out.sort_by(|a, b| a.rank.cmp(&b.rank));
    out
}
