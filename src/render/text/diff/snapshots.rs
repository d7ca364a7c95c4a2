//! The snapshots' part of a diff in words: OOM sites, fragmentation, allocator settings, the attribution of the first divergence, and how snapshots were matched to ranks and to the log clock.

use super::*;

/// The requesting site of each failing rank's OOM, ranks with the same site on one line,
/// and who else allocates there: "only PP1 TP2 allocates here" names a stray allocation.
/// Without a baseline (`summary`), only the run's own ranks are compared.
pub fn oom_site_lines(ev: &crate::analysis::attribute::SnapshotEvidence) -> Vec<String> {
    use crate::base::units::human_size;
    let mut groups: Vec<(
        &str,
        crate::base::units::Bytes,
        Vec<&crate::analysis::attribute::OomSite>,
    )> = Vec::new();
    for o in &ev.oom_sites {
        match groups
            .iter_mut()
            .find(|g| g.0 == o.analysis.site && g.1 == o.analysis.requested)
        {
            Some(g) => g.2.push(o),
            None => groups.push((&o.analysis.site, o.analysis.requested, vec![o])),
        }
    }
    let mut lines = Vec::new();
    for (site, requested, group) in groups {
        let in_group = |r: &crate::base::event::Rank| group.iter().any(|o| &o.rank == r);
        let mut others: Vec<&crate::base::event::Rank> = group
            .iter()
            .flat_map(|o| &o.other_ranks)
            .filter(|r| !in_group(r))
            .collect();
        others.sort();
        others.dedup();
        let mut allocating: Vec<&crate::base::event::Rank> = group
            .iter()
            .flat_map(|o| &o.others_allocating)
            .filter(|r| !in_group(r))
            .collect();
        allocating.sort();
        allocating.dedup();
        let baseline = group.iter().find_map(|o| o.baseline_allocates);
        let who = rank_span(group.iter().map(|o| &o.rank));
        let mut text = format!(
            "OOM request (snapshot{}): {who} asked {} at {site}; ",
            if group.len() == 1 { "" } else { "s" },
            human_size(requested)
        );
        if allocating.is_empty() && baseline != Some(true) && !others.is_empty() {
            text.push_str(&format!(
                "only {who} allocate{} here, not {}{}",
                if group.len() == 1 { "s" } else { "" },
                rank_list(others.iter().copied()),
                match baseline {
                    Some(false) => " nor the baseline",
                    _ => "",
                }
            ));
        } else {
            let mut parts: Vec<String> = Vec::new();
            if !others.is_empty() {
                parts.push(if allocating.len() == others.len() {
                    "every other rank allocates here too".to_string()
                } else if allocating.is_empty() {
                    format!("{} do not allocate here", rank_list(others.iter().copied()))
                } else {
                    format!(
                        "{} allocate here too",
                        rank_list(allocating.iter().copied())
                    )
                });
            }
            match baseline {
                Some(true) => parts.push("the baseline allocates here too".into()),
                Some(false) => parts.push("the baseline never allocates here".into()),
                None => {}
            }
            if parts.is_empty() {
                parts.push(if group.len() > 1 {
                    format!("every rank with a snapshot ({}) fails here", group.len())
                } else {
                    "no other snapshot to compare".into()
                });
            }
            text.push_str(&parts.join("; "));
        }
        lines.push(text);
    }
    lines
}

/// The cause when the snapshots show fragmentation: the figures of the first fragmented
/// rank, the sites pinning the holes, what bound the allocation, the baseline's free
/// space for contrast, and the remedy.
pub fn fragmentation_cause_lines(
    ev: &crate::analysis::attribute::SnapshotEvidence,
    figures_moved: bool,
) -> Vec<String> {
    use crate::render::text::mem as sr;
    let frag: Vec<&crate::analysis::attribute::OomSite> = ev.fragmented().collect();
    let Some(first) = frag.first() else {
        return Vec::new();
    };
    let scope = format!(
        "on {}/{} failing ranks with a snapshot ({} shown)",
        frag.len(),
        ev.oom_sites.len(),
        first.rank
    );
    let mut lines = sr::fragmentation_lines(&first.analysis, false, Some(&scope));
    if let Some(l) = lines.first_mut() {
        if !figures_moved {
            l.push_str("; no log figure moved beyond the print resolution");
        }
    }
    // The limit goes before the remedy, which is the last thing to read.
    let remedy = lines
        .iter()
        .position(|l| l.starts_with("remedy:"))
        .map(|i| lines.remove(i));
    if let Some(l) = sr::limit_line(&first.analysis.limit, first.allowed) {
        lines.push(l);
    }
    if let Some((rank, f)) = &ev.baseline_free {
        lines.push(format!(
            "baseline {rank} at its dump: {} free inside segments, largest block {}",
            sr::fmt_bytes(f.unallocated),
            sr::fmt_bytes(f.largest_free)
        ));
    }
    lines.extend(remedy);
    lines
}

/// `summary`'s snapshot section for a run with failures: each failing rank's OOM request
/// and, when the snapshots show it, fragmentation.
pub fn summary_snapshot_section(
    ev: &crate::analysis::attribute::SnapshotEvidence,
    style: Style,
) -> String {
    let mut o = String::new();
    let lines: Vec<String> = oom_site_lines(ev)
        .into_iter()
        .chain(fragmentation_cause_lines(ev, true))
        .collect();
    if lines.is_empty() {
        return o;
    }
    o.push('\n');
    for (i, l) in lines.iter().enumerate() {
        row(&mut o, style, if i == 0 { "snapshots" } else { "" }, l);
    }
    o
}
/// The allocator settings of the two runs' snapshots, for the config section.
pub fn allocator_setting_lines(ev: &crate::analysis::attribute::SnapshotEvidence) -> Vec<String> {
    if !ev.allocator_settings_compared {
        return Vec::new();
    }
    if ev.allocator_settings.is_empty() {
        return vec!["allocator_settings  no change between the snapshots".into()];
    }
    ev.allocator_settings
        .iter()
        .map(|c| {
            format!(
                "allocator {}  {} -> {}",
                sanitize(&c.key),
                cut(&sanitize(c.baseline.as_deref().unwrap_or("(unset)")), 30),
                cut(&sanitize(c.candidate.as_deref().unwrap_or("(unset)")), 30)
            )
        })
        .collect()
}

/// The snapshot side of the cause: who allocated the divergence, and what PyTorch
/// could not see.
pub(crate) fn attribution_lines(a: &crate::analysis::attribute::Attribution) -> Vec<String> {
    use crate::base::units::{human_bytes, human_size};
    let mut lines = Vec::new();
    for s in a.sites.iter().filter(|s| s.phase == Some(a.phase)).take(3) {
        lines.push(format!(
            "snapshots: {} reserved, {} allocated in {} block{} by {} on {}/{} ranks",
            human_delta(s.delta_reserved.median as i64),
            human_bytes(s.delta_allocated.median as i64),
            s.blocks,
            if s.blocks == 1 { "" } else { "s" },
            s.label,
            s.ranks,
            a.ranks_compared
        ));
    }
    for (site, n, bytes) in a.new_segments.iter().take(2) {
        lines.push(format!(
            "{n} new segment{} ({}) in the candidate, from {site}",
            if *n == 1 { "" } else { "s" },
            human_size(*bytes)
        ));
    }
    if let (Some(r), Some(res)) = (a.residual, a.log_resolution) {
        let within = r.magnitude().get() <= res;
        lines.push(format!(
            "residual outside PyTorch (log delta - allocator delta): {}{}",
            human_delta(r),
            if within {
                format!(
                    ", within the log's {:.2} MiB resolution: ~0",
                    res as f64 / crate::base::units::MIB
                )
            } else {
                " (NCCL, cudaMalloc outside PyTorch, IPC mappings)".to_string()
            }
        ));
    }
    lines
}
/// `all 8` when a group is every snapshot, else its ranks.
pub(super) fn who(ranks: &[String], total: usize) -> String {
    if ranks.len() == total && total > 1 {
        format!("all {total}")
    } else {
        ranks.join(", ")
    }
}

/// How a run's snapshots were matched to ranks, in a phrase: `matched by file name,
/// device index agrees (all 2)`; snapshots matched alike are one group.
pub(crate) fn rank_match_note(n: &RankMatchNote) -> String {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (rank, how) in &n.snapshots {
        let how = match how {
            MatchEvidence::FileNameAndOomGpu => {
                "by file name and the GPU its OOM message names".to_string()
            }
            MatchEvidence::FileNameSharedDevice => "by file name".to_string(),
            MatchEvidence::FileNameDeviceAgrees => "by file name, device index agrees".to_string(),
            MatchEvidence::FileNameOnly => "by file name only".to_string(),
            MatchEvidence::OomGpu { device, file_said } => format!(
                "by the GPU its OOM message names (device {device}){}",
                file_said
                    .as_ref()
                    .map(|r| format!(", not the file name's {r}"))
                    .unwrap_or_default()
            ),
            MatchEvidence::Device { device } => format!(
                "by device index {device} (no rank in the file name; one GPU per rank from GPU 0 assumed)"
            ),
        };
        groups.entry(how).or_default().push(rank.to_string());
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(how, ranks)| format!("{how} ({})", who(&ranks, n.snapshots.len())))
        .collect();
    let stray = n
        .snapshots
        .iter()
        .any(|(_, h)| *h == MatchEvidence::FileNameOnly);
    let devices = match (n.shared_device, stray) {
        (Some(d), _) => format!("; all on device {d}, which cannot tell ranks apart"),
        (None, true) => "; their devices do not follow rank order".to_string(),
        _ => String::new(),
    };
    format!("matched {}{devices}", parts.join("; "))
}

/// `+01:00` or `+0.42 s`.
pub(super) fn offset_text(us: i64, zone: bool) -> String {
    let sign = if us < 0 { "-" } else { "+" };
    if zone {
        let mins = us.unsigned_abs() / 60_000_000;
        format!("{sign}{:02}:{:02}", mins / 60, mins % 60)
    } else {
        crate::base::units::clock_offset(us as f64 / 1e6)
    }
}

/// How a run's snapshot clocks were put on its log clock, in one line: per offset as
/// printed, the ranks, the anchors and the widest uncertainty.
pub(crate) fn clock_note(n: &ClockNote) -> String {
    // (offset text, anchors) → (ranks, widest half-interval)
    let mut groups: BTreeMap<(String, String), (Vec<String>, i64)> = BTreeMap::new();
    for c in &n.clocks {
        let how = match &c.anchors {
            Some(a) => format!("anchored on {}", a.join(" and ")),
            None => "first lines only, whole quarter hours".to_string(),
        };
        let g = groups
            .entry((offset_text(c.offset_us, c.zone), how))
            .or_default();
        g.0.push(c.rank.to_string());
        g.1 = g.1.max(c.half_us);
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|((offset, how), (ranks, half))| {
            let pm = if half >= 60_000_000 {
                format!("±{:.1} min", half as f64 / 60e6)
            } else {
                format!("±{:.2} s", half as f64 / 1e6)
            };
            format!("{offset} {pm}, {how} ({})", who(&ranks, n.snapshots))
        })
        .collect();
    format!("clock = log clock {}", parts.join("; "))
}

/// The candidate's snapshot clock line of `--explain` and the JSON's `clock`.
pub fn attribution_clock(a: &Attribution) -> Option<String> {
    a.clock
        .as_ref()
        .map(|n| format!("candidate snapshot {}", clock_note(n)))
}

/// A snapshot note in words.
pub(crate) fn snapshot_note(n: &SnapshotNote) -> String {
    match n {
        SnapshotNote::Unusable(e) => e.clone(),
        SnapshotNote::Matched { side, ranks, clock } => {
            let name = match side {
                Side::Baseline => "baseline",
                Side::Candidate => "candidate",
            };
            let parts: Vec<String> = ranks
                .iter()
                .map(rank_match_note)
                .chain(clock.iter().map(clock_note))
                .collect();
            format!("{name} snapshots {}", parts.join("; "))
        }
        SnapshotNote::NotAttributed => {
            "no snapshots in one of the runs: the divergence is not attributed to allocation sites"
                .into()
        }
    }
}
