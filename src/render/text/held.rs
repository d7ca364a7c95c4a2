//! The breakdown against the ranks' snapshots in words: per group of ranks, one rank's
//! snapshot — what PyTorch's allocator held of each category and what it did not.

use crate::analysis::breakdown::RunBreakdown;
use crate::analysis::held::{CategoryHeld, Placed, RankHeld};
use crate::base::units::human_bytes;
use crate::render::text::breakdown::{category_label, gib};
use crate::render::{put, rank_span, Style};

fn category_line(c: &CategoryHeld) -> String {
    let sites = if c.sites.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = c
            .sites
            .iter()
            .map(|s| {
                format!(
                    "{} {}{}",
                    crate::base::text::sanitize(&s.label),
                    human_bytes(s.reserved),
                    match s.placed {
                        Placed::ByStack | Placed::ByTime => "",
                        Placed::BySize =>
                            ", placed by size: first allocated in a second two phases share",
                    }
                )
            })
            .collect();
        format!(" ({})", names.join(", "))
    };
    let held = format!("allocator {}{sites}", human_bytes(c.reserved));
    match c.residual {
        None => format!(
            "{:<36} {held}; the breakdown has no figure to set it against",
            category_label(c.category)
        ),
        Some(r) if r.abs() <= c.resolution => format!(
            "{:<36} {held}; the rest, {}, is within the figure's ±{}: all of it in PyTorch",
            category_label(c.category),
            human_bytes(r),
            human_bytes(c.resolution)
        ),
        Some(r) if r < 0 => format!(
            "{:<36} {held}; {} more than the log's figure (memory the phase reused or freed before the log's line)",
            category_label(c.category),
            human_bytes(-r)
        ),
        Some(r) => format!(
            "{:<36} {held}; outside PyTorch {} (±{}: NCCL, CUDA context, IPC, cudaMalloc, or freed before the dump)",
            category_label(c.category),
            gib(r),
            human_bytes(c.resolution)
        ),
    }
}

/// After the breakdown: for each of its groups, the first rank with a snapshot.
pub(crate) fn held_text(b: &RunBreakdown, held: &[RankHeld], style: Style) -> String {
    let mut o = String::new();
    if held.is_empty() {
        return o;
    }
    o.push_str(&style.bold(
        "memory breakdown against the snapshots (what PyTorch's allocator held at the dump)",
    ));
    o.push('\n');
    for g in &b.groups {
        let with: Vec<&RankHeld> = held.iter().filter(|h| g.ranks.contains(&h.rank)).collect();
        let Some(h) = with.first() else {
            put(
                &mut o,
                style.width,
                2,
                &format!("{}: no snapshot", rank_span(&g.ranks)),
            );
            continue;
        };
        put(
            &mut o,
            style.width,
            2,
            &format!(
                "{}: read on {} ({}; {} of the group's ranks have one)",
                rank_span(&g.ranks),
                h.rank,
                crate::base::text::sanitize(&h.path),
                with.len()
            ),
        );
        for c in &h.categories {
            put(&mut o, style.width, 4, &category_line(c));
        }
        put(
            &mut o,
            style.width,
            4,
            &format!(
                "allocator reserved {} in all; {} of it at sites first seen outside these phases (serving) or not placed on the log's clock",
                human_bytes(h.reserved),
                human_bytes(h.unplaced)
            ),
        );
    }
    o
}
