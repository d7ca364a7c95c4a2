//! Memory: each rank's figures per phase (the parts the TUI's Memory view stacks), the
//! baseline's beside the candidate's; nvidia-smi's samples over time; the snapshots'
//! OOM evidence, fragmentation and largest allocation sites.

use crate::base::units::since_start;
use std::collections::BTreeMap;
use std::fmt::Write;

use super::{esc, heading, Page, Side, SnapView};
use crate::analysis::lanes::{parts_of, PARTS};
use crate::base::event::Rank;
use crate::base::units::{human_bytes, human_size};
use crate::render::figure_text;
use crate::render::text::diff::{fragmentation_cause_lines, oom_site_lines};

/// Line colours of the nvidia-smi chart, one per GPU in turn (`polyline.k0` … in the style).
const GPU_COLOURS: usize = 6;

/// Allocation sites listed per snapshot.
const SITES_SHOWN: usize = 5;

type Parts = [Option<(i64, f64)>; 5];

/// One row of the memory table: the ranks whose cells print alike.
struct MemRow<'a> {
    ranks: Vec<&'a Rank>,
    parts: Parts,
    base: Option<Parts>,
    /// The cells as printed, candidate's then baseline's.
    key: Vec<String>,
}

fn cell(v: Option<(i64, f64)>) -> String {
    v.map_or("-".to_string(), |(b, res)| figure_text(b as f64, true, res))
}

/// One bar of stacked parts, `y` from the top of the row's SVG.
fn stacked(o: &mut String, parts: &Parts, scale: f64, y: f64, h: f64, class: &str) {
    let mut x = 0.0;
    for (k, v) in parts.iter().enumerate() {
        let Some((b, _)) = v else { continue };
        let w = (*b).max(0) as f64 * scale;
        let _ = write!(
            o,
            "<rect class=\"{class} m{k}\" x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{h}\"/>"
        );
        x += w;
    }
}

/// Memory per phase per rank; ranks whose figures print alike share a row.
pub(crate) fn section(o: &mut String, p: &Page) {
    heading(o, "memory", "Memory per phase per rank");
    let cand = rows_of(&p.candidate);
    let base = p.baseline.as_ref().map(rows_of);
    if cand
        .iter()
        .all(|(_, parts)| parts.iter().all(Option::is_none))
    {
        o.push_str("<p class=\"muted\">the logs print no per-phase memory figure</p>\n");
        return;
    }
    let max = cand
        .iter()
        .chain(base.iter().flatten())
        .map(|(_, parts)| parts.iter().flatten().map(|v| v.0.max(0)).sum::<i64>())
        .max()
        .unwrap_or(1)
        .max(1);
    let scale = 300.0 / max as f64;
    let base_of = |r: &Rank| -> Option<Parts> {
        base.as_ref()
            .and_then(|b| b.iter().find(|(x, _)| *x == r).map(|(_, p)| *p))
    };
    // Rows alike in every cell are one row, listing its ranks.
    let mut groups: Vec<MemRow> = Vec::new();
    for (rank, parts) in &cand {
        let base = base_of(rank);
        let mut key: Vec<String> = parts.iter().map(|v| cell(*v)).collect();
        key.extend(base.iter().flat_map(|b| b.iter().map(|v| cell(*v))));
        match groups.iter_mut().find(|g| g.key == key) {
            Some(g) => g.ranks.push(rank),
            None => groups.push(MemRow {
                ranks: vec![rank],
                parts: *parts,
                base,
                key,
            }),
        }
    }
    let _ = write!(
        o,
        "<p class=\"legend\">{}<span>bars: init, weights, KV pool, CUDA graphs, then what was left free</span></p>\n<table class=\"grid\" id=\"mem-table\">\n<tr><th>ranks</th>",
        if p.baseline.is_some() {
            "<span>baseline: the upper, paler bar and each cell's second line</span>"
        } else {
            ""
        }
    );
    for (_, _, label) in PARTS {
        let _ = write!(o, "<th>{label}</th>");
    }
    o.push_str("<th></th></tr>\n");
    for MemRow {
        ranks,
        parts,
        base: b,
        ..
    } in &groups
    {
        let _ = write!(
            o,
            "<tr><td>{}</td>",
            esc(&super::rank_ranges(ranks.iter().copied()))
        );
        for k in 0..PARTS.len() {
            let _ = write!(o, "<td class=\"num\">{}", esc(&cell(parts[k])));
            if let Some(b) = b {
                let _ = write!(o, "<br><span class=\"muted\">{}</span>", esc(&cell(b[k])));
            }
            o.push_str("</td>");
        }
        let h = if b.is_some() { 22.0 } else { 12.0 };
        let _ = write!(
            o,
            "<td><svg width=\"300\" height=\"{h}\" viewBox=\"0 0 300 {h}\" xmlns=\"http://www.w3.org/2000/svg\">"
        );
        let mut y = 0.0;
        if let Some(b) = b {
            stacked(o, b, scale, 0.0, 9.0, "bar-base");
            y = 11.0;
        }
        stacked(o, parts, scale, y, 10.0, "bar-cand");
        o.push_str("</svg></td></tr>\n");
    }
    o.push_str("</table>\n");
}

fn rows_of<'a>(s: &'a Side) -> Vec<(&'a Rank, Parts)> {
    s.run
        .worker_ranks()
        .map(|r| (&r.rank, parts_of(r)))
        .collect()
}

/// nvidia-smi's samples over time: one line per GPU, the device's total dashed.
pub(crate) fn nvsmi_section(o: &mut String, p: &Page) {
    let sides: Vec<(&str, &Side)> = std::iter::once(("candidate", &p.candidate))
        .chain(p.baseline.iter().map(|b| ("baseline", b)))
        .filter(|(_, s)| !s.run.gpus.is_empty())
        .collect();
    if sides.is_empty() {
        return;
    }
    heading(o, "nvidia-smi", "nvidia-smi samples");
    for (what, side) in sides {
        gpu_chart(o, what, side);
    }
}

fn gpu_chart(o: &mut String, what: &str, side: &Side) {
    const W: f64 = 1000.0;
    const H: f64 = 180.0;
    const LEFT: f64 = 70.0;
    let gpus = &side.run.gpus;
    let t_max = (gpus.iter())
        .flat_map(|g| g.series.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let b_max = (gpus.iter())
        .map(|g| {
            g.total_bytes
                .unwrap_or_default()
                .max(g.peak_used_bytes)
                .get()
        })
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let x = |t: f64| LEFT + t.max(0.0) / t_max * (W - LEFT - 10.0);
    let y = |b: f64| H - 20.0 - b / b_max * (H - 30.0);
    let _ = writeln!(
        o,
        "<h3>{what}: {}</h3>\n<svg class=\"gpu\" role=\"img\" aria-label=\"nvidia-smi memory used over time\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\">",
        esc(&side.run.name)
    );
    for frac in [0.0, 0.5, 1.0] {
        let _ = writeln!(
            o,
            "<line class=\"gl\" x1=\"{LEFT}\" x2=\"{W}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\"/><text class=\"ax\" x=\"2\" y=\"{:.1}\">{}</text>",
            y(b_max * frac) + 3.0,
            human_bytes((b_max * frac) as i64),
            yy = y(b_max * frac)
        );
    }
    let _ = writeln!(
        o,
        "<text class=\"ax\" x=\"{LEFT}\" y=\"{}\">{}</text><text class=\"ax\" x=\"{W}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        H - 4.0,
        since_start(0.0),
        H - 4.0,
        since_start(t_max)
    );
    for (k, g) in gpus.iter().enumerate() {
        if let Some(total) = g.total_bytes {
            let _ = writeln!(
                o,
                "<line class=\"total\" x1=\"{LEFT}\" x2=\"{W}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\"><title>GPU{} total {}</title></line>",
                g.gpu,
                human_size(total),
                yy = y(total.get() as f64)
            );
        }
        let points: Vec<String> = (g.series.iter())
            .map(|(t, b)| format!("{:.1},{:.1}", x(*t), y(*b as f64)))
            .collect();
        let _ = writeln!(
            o,
            "<polyline class=\"gpu k{}\" points=\"{}\"><title>GPU{}: peak {} used{}, {} samples ({})</title></polyline>",
            k % GPU_COLOURS,
            points.join(" "),
            g.gpu,
            human_size(g.peak_used_bytes),
            g.peak_at_s.map(|s| format!(" at {}", since_start(s))).unwrap_or_default(),
            g.samples,
            esc(&g.source)
        );
    }
    o.push_str("</svg>\n");
}

/// What the snapshots show: the failing ranks' OOM requests and fragmentation (as
/// `summary` says them; against a baseline they are in the verdict), and each snapshot's
/// largest sites.
pub(crate) fn snapshot_section(o: &mut String, p: &Page) {
    // Against a baseline, the verdict's rows hold these lines already.
    let lines = match p.diff {
        Some(_) => Vec::new(),
        None => {
            let mut lines = oom_site_lines(p.evidence);
            lines.extend(fragmentation_cause_lines(p.evidence, true));
            lines
        }
    };
    let sides: Vec<(&str, &Side)> = std::iter::once(("candidate", &p.candidate))
        .chain(p.baseline.iter().map(|b| ("baseline", b)))
        .filter(|(_, s)| !s.snapshots.is_empty())
        .collect();
    if lines.is_empty() && sides.is_empty() {
        return;
    }
    heading(o, "snapshots", "PyTorch memory snapshots");
    if !lines.is_empty() {
        o.push_str("<ul id=\"snapshot-evidence\">\n");
        for l in &lines {
            let _ = writeln!(o, "<li>{}</li>", esc(l));
        }
        o.push_str("</ul>\n");
    }
    for (what, side) in sides {
        site_table(o, what, &side.snapshots);
    }
}

fn site_table(o: &mut String, what: &str, snaps: &[SnapView]) {
    // Snapshots whose largest sites print alike share a row.
    let mut rows: BTreeMap<Vec<String>, Vec<&SnapView>> = BTreeMap::new();
    for s in snaps {
        let sum = s.summary;
        let mut key = vec![
            human_size(sum.totals.reserved),
            human_size(sum.totals.allocated),
            human_size(sum.free_space.unallocated),
            human_size(sum.free_space.largest_free),
        ];
        for site in sum.sites.iter().take(SITES_SHOWN) {
            key.push(format!(
                "{} {} allocated, {} reserved",
                crate::snapshot::site::site_label(&site.site, &site.lines),
                human_size(site.allocated),
                human_size(site.reserved)
            ));
        }
        rows.entry(key).or_default().push(s);
    }
    let _ = writeln!(
        o,
        "<h3>{what}: largest allocation sites at the dump</h3>\n<table class=\"grid small\">\n<tr><th>ranks</th><th>reserved</th><th>allocated</th><th>free in segments</th><th>largest free block</th><th>sites (largest allocated first)</th></tr>"
    );
    let mut rows: Vec<(Vec<String>, Vec<&SnapView>)> = rows.into_iter().collect();
    rows.sort_by(|a, b| {
        a.1.first()
            .map(|s| s.rank)
            .cmp(&b.1.first().map(|s| s.rank))
    });
    for (key, group) in rows {
        let files: Vec<&str> = group.iter().map(|s| s.path).collect();
        let _ = write!(
            o,
            "<tr><td title=\"{}\">{}</td>",
            esc(&files.join("\n")),
            esc(&super::rank_ranges(group.iter().map(|s| s.rank)))
        );
        for v in &key[..4] {
            let _ = write!(o, "<td class=\"num\">{}</td>", esc(v));
        }
        o.push_str("<td>");
        for (i, s) in key[4..].iter().enumerate() {
            if i > 0 {
                o.push_str("<br>");
            }
            o.push_str(&esc(s));
        }
        o.push_str("</td></tr>\n");
    }
    o.push_str("</table>\n");
}
