//! Two snapshots compared: totals, segments and sites that changed, and the sites that grew between two points of one snapshot's trace.

use super::*;

/// One site's memory in both snapshots.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteChange {
    /// The site, as `SiteRule` names it.
    pub site: String,
    pub(crate) a_allocated: Bytes,
    /// Bytes allocated at the site in snapshot B.
    pub b_allocated: Bytes,
    pub(crate) a_reserved: Bytes,
    pub(crate) b_reserved: Bytes,
    pub(crate) delta_allocated: ByteDelta,
    /// B's reserved bytes at the site less A's.
    pub delta_reserved: ByteDelta,
}

/// Segments of one shape, pool, stream and site that B has and A does not.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentChange {
    /// What the segments have in common.
    pub key: SegmentKey,
    /// How many.
    pub count: u64,
    pub(crate) bytes: Bytes,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct TotalsDelta {
    pub(crate) segments: i64,
    pub(crate) reserved: ByteDelta,
    pub(crate) allocated: ByteDelta,
    pub(crate) active: ByteDelta,
    pub(crate) requested: ByteDelta,
    pub(crate) peak_reserved: ByteDelta,
    pub(crate) peak_allocated: ByteDelta,
}

/// Two snapshots compared: sites only in one, sites that changed, new segments.
#[derive(Debug, Clone, PartialEq)]
pub struct MemDiff {
    pub(crate) only_a: Vec<SiteChange>,
    /// Sites with memory in B only.
    pub only_b: Vec<SiteChange>,
    pub(crate) changed: Vec<SiteChange>,
    /// Segments in B with no counterpart in A, matched by (size, pool, stream, site).
    pub new_segments: Vec<SegmentChange>,
    pub(crate) gone_segments: Vec<SegmentChange>,
    pub(crate) totals: TotalsDelta,
    pub(crate) a_totals: Totals,
    pub(crate) b_totals: Totals,
    pub(crate) a_ooms: usize,
    pub(crate) b_ooms: usize,
    /// Each side's first OOM, analysed (limit, fragmentation).
    pub(crate) a_oom: Option<crate::snapshot::oom::OomAnalysis>,
    pub(crate) b_oom: Option<crate::snapshot::oom::OomAnalysis>,
    pub(crate) a_free: crate::snapshot::oom::FreeSpace,
    pub(crate) b_free: crate::snapshot::oom::FreeSpace,
}

pub(super) fn sdelta(a: u64, b: u64) -> i64 {
    (b as i128 - a as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Compares run A (baseline) with run B (candidate). Sites are matched by name, segments
/// by their [`SegmentKey`] as multisets: addresses differ between runs.
pub fn diff(a: &MemSummary, b: &MemSummary) -> MemDiff {
    let mut sites: BTreeMap<&str, (Option<&SiteBytes>, Option<&SiteBytes>)> = BTreeMap::new();
    for s in &a.sites {
        sites.entry(&s.site).or_default().0 = Some(s);
    }
    for s in &b.sites {
        sites.entry(&s.site).or_default().1 = Some(s);
    }
    let (mut only_a, mut only_b, mut changed) = (Vec::new(), Vec::new(), Vec::new());
    for (name, (x, y)) in sites {
        let none = (Bytes::ZERO, Bytes::ZERO);
        let (aa, ar) = x.map_or(none, |s| (s.allocated, s.reserved));
        let (ba, br) = y.map_or(none, |s| (s.allocated, s.reserved));
        let c = SiteChange {
            site: name.to_string(),
            a_allocated: aa,
            b_allocated: ba,
            a_reserved: ar,
            b_reserved: br,
            delta_allocated: aa.change_to(ba),
            delta_reserved: ar.change_to(br),
        };
        let a_has = aa > Bytes::ZERO || ar > Bytes::ZERO;
        let b_has = ba > Bytes::ZERO || br > Bytes::ZERO;
        match (a_has, b_has) {
            (true, false) => only_a.push(c),
            (false, true) => only_b.push(c),
            (true, true) if aa != ba || ar != br => changed.push(c),
            _ => {}
        }
    }
    let mag = |c: &SiteChange| {
        c.delta_allocated
            .magnitude()
            .max(c.delta_reserved.magnitude())
    };
    for v in [&mut only_a, &mut only_b, &mut changed] {
        v.sort_by(|x, y| mag(y).cmp(&mag(x)).then_with(|| x.site.cmp(&y.site)));
    }

    let mut counts: BTreeMap<&SegmentKey, (u64, u64)> = BTreeMap::new();
    for s in &a.segments {
        counts.entry(&s.key).or_default().0 += 1;
    }
    for s in &b.segments {
        counts.entry(&s.key).or_default().1 += 1;
    }
    let (mut new_segments, mut gone_segments) = (Vec::new(), Vec::new());
    for (k, (ca, cb)) in counts {
        let change = |n: u64| SegmentChange {
            key: k.clone(),
            count: n,
            bytes: Bytes(n.saturating_mul(k.size.get())),
        };
        if cb > ca {
            new_segments.push(change(cb - ca));
        } else if ca > cb {
            gone_segments.push(change(ca - cb));
        }
    }
    for v in [&mut new_segments, &mut gone_segments] {
        v.sort_by(|x, y| y.bytes.cmp(&x.bytes).then_with(|| x.key.cmp(&y.key)));
    }

    let peak = |p: &Option<Peak>| p.as_ref().map_or(Bytes::ZERO, |p| p.bytes);
    MemDiff {
        only_a,
        only_b,
        changed,
        new_segments,
        gone_segments,
        totals: TotalsDelta {
            segments: sdelta(a.totals.segments, b.totals.segments),
            reserved: a.totals.reserved.change_to(b.totals.reserved),
            allocated: a.totals.allocated.change_to(b.totals.allocated),
            active: a.totals.active.change_to(b.totals.active),
            requested: a.totals.requested.change_to(b.totals.requested),
            peak_reserved: peak(&a.peak_reserved).change_to(peak(&b.peak_reserved)),
            peak_allocated: peak(&a.peak_allocated).change_to(peak(&b.peak_allocated)),
        },
        a_totals: a.totals.clone(),
        b_totals: b.totals.clone(),
        a_ooms: a.ooms.len(),
        b_ooms: b.ooms.len(),
        a_oom: a.oom_analyses.first().cloned(),
        b_oom: b.oom_analyses.first().cloned(),
        a_free: a.free_space.clone(),
        b_free: b.free_space.clone(),
    }
}

/// Net memory per site over a time window.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteDelta {
    /// The site, as `SiteRule` names it.
    pub site: String,
    /// Requested bytes allocated in the window minus those freed in it, each attributed to
    /// the site that allocated the block (frees carry the freeing stack, not the owner's).
    pub net_allocated: i64,
    /// Allocations at the site in the window.
    pub allocs: u64,
    pub(crate) frees: u64,
    /// Segment bytes reserved minus released in the window, by the segment's site.
    pub net_reserved: i64,
}

/// What each site allocated and reserved, net, between `t0_us` (inclusive) and `t1_us`
/// (exclusive), e.g. during one start-up phase taken from the logs. Sorted by magnitude.
pub fn sites_between(s: &Snapshot, rule: &SiteRule, t0_us: i64, t1_us: i64) -> Vec<SiteDelta> {
    let mut sites = Sites::new(s, rule);
    // Owner of each live block / segment, learnt from the whole trace before the window.
    let mut block_owner: HashMap<(usize, u64), StackId> = HashMap::new();
    let mut seg_owner: HashMap<(usize, u64), StackId> = HashMap::new();
    let mut out: HashMap<std::rc::Rc<str>, SiteDelta> = HashMap::new();
    for (dev, trace) in s.device_traces.iter().enumerate() {
        for e in trace {
            let inside = e.time_us >= t0_us && e.time_us < t1_us;
            let owner = match e.action {
                Action::Alloc => {
                    block_owner.insert((dev, e.addr), e.stack);
                    Some(e.stack)
                }
                Action::SegmentAlloc | Action::SegmentMap => {
                    seg_owner.insert((dev, e.addr), e.stack);
                    Some(e.stack)
                }
                Action::FreeCompleted => {
                    Some(block_owner.remove(&(dev, e.addr)).unwrap_or(e.stack))
                }
                Action::SegmentFree | Action::SegmentUnmap => {
                    Some(seg_owner.remove(&(dev, e.addr)).unwrap_or(e.stack))
                }
                _ => None,
            };
            let (Some(owner), true) = (owner, inside) else {
                continue;
            };
            let (name, _) = sites.get(owner);
            let d = out.entry(name.clone()).or_insert_with(|| SiteDelta {
                site: name.to_string(),
                net_allocated: 0,
                allocs: 0,
                frees: 0,
                net_reserved: 0,
            });
            let n = e.size.min(i64::MAX as u64) as i64;
            match e.action {
                Action::Alloc => {
                    d.net_allocated = d.net_allocated.saturating_add(n);
                    d.allocs += 1;
                }
                Action::FreeCompleted => {
                    d.net_allocated = d.net_allocated.saturating_sub(n);
                    d.frees += 1;
                }
                Action::SegmentAlloc | Action::SegmentMap => {
                    d.net_reserved = d.net_reserved.saturating_add(n)
                }
                _ => d.net_reserved = d.net_reserved.saturating_sub(n),
            }
        }
    }
    let mut v: Vec<SiteDelta> = out
        .into_values()
        .filter(|d| d.net_allocated != 0 || d.net_reserved != 0 || d.allocs > 0)
        .collect();
    v.sort_by(|a, b| {
        let m = |d: &SiteDelta| {
            d.net_allocated
                .unsigned_abs()
                .max(d.net_reserved.unsigned_abs())
        };
        m(b).cmp(&m(a)).then_with(|| a.site.cmp(&b.site))
    });
    v
}
