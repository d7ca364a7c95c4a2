//! Plain-text rendering of summaries and diffs at a given width (the caller decides it),
//! no terminal handling. Evidence (an OOM's site, the limit, the segments) is wrapped,
//! never cut.

use std::fmt::Write;

use crate::render::put;
use crate::snapshot::inspect::{MemDiff, MemSummary, SiteChange};
use crate::snapshot::oom::{FreeSpace, Limit, OomAnalysis};
use crate::snapshot::site::site_label;

/// `24.03 MiB`: binary units, two decimals; bytes below 1 KiB as `512 B`.
pub use crate::base::units::human_size as fmt_bytes;
use crate::base::units::Bytes;

/// Signed sizes: `+40.00 MiB`, `-512 B`, `±0 B` (`units::human_delta`).
pub(crate) use crate::base::units::human_delta as fmt_delta;

/// A table cell wrapped at word boundaries into `w` columns, each line padded to `w`.
fn cell_lines(text: &str, w: usize) -> Vec<String> {
    crate::render::wrap(text, w)
        .into_iter()
        .map(|l| crate::render::fit(&l, w.max(crate::base::text::columns(&l))))
        .collect()
}

fn time_s(first: Option<i64>, t: i64) -> String {
    match first {
        // The style of every time rankscope prints (`t+5.2 s`, `units::seconds`).
        Some(f) => crate::base::units::since_start((t - f) as f64 / 1e6),
        None => format!("{t} us"),
    }
}

/// A one-screen summary with the `top` largest sites.
pub fn summary_text(s: &MemSummary, top: usize, width: usize) -> String {
    let mut o = String::new();
    totals_lines(&mut o, s, width);
    peaks_and_ooms(&mut o, s, width);
    site_table(&mut o, s, top, width);
    o
}

/// The snapshot's totals, then per memory pool and per stream.
fn totals_lines(o: &mut String, s: &MemSummary, width: usize) {
    let t = &s.totals;
    let totals = format!(
        "reserved {}  allocated {}  active {}  in {} segments",
        fmt_bytes(t.reserved),
        fmt_bytes(t.allocated),
        fmt_bytes(t.active),
        t.segments
    );
    put(o, width, 0, &totals);
    // The pool and stream rows line up in 78 columns; narrower, each is a wrapped line.
    let narrow = width < 78;
    for p in &s.by_pool {
        let kind = if p.private {
            "private (graph)"
        } else {
            "default"
        };
        let (pool, reserved, allocated) = (
            format!("{},{}", p.pool.0, p.pool.1),
            fmt_bytes(p.totals.reserved),
            fmt_bytes(p.totals.allocated),
        );
        if narrow {
            // A label and its value kept on one line (non-breaking spaces; `wrap` turns
            // them back).
            let text =
                format!("pool {pool} {kind}: reserved\u{a0}{reserved}, allocated\u{a0}{allocated}");
            put(o, width, 2, &text);
        } else {
            let _ = writeln!(
                o,
                "  pool {pool:>8} {kind:<16} reserved {reserved:>12}  allocated {allocated:>12}",
            );
        }
    }
    for st in &s.by_stream {
        let (reserved, allocated) = (
            fmt_bytes(st.totals.reserved),
            fmt_bytes(st.totals.allocated),
        );
        if narrow {
            let text = format!(
                "stream {}: reserved\u{a0}{reserved}, allocated\u{a0}{allocated}",
                st.label
            );
            put(o, width, 2, &text);
        } else {
            let _ = writeln!(
                o,
                "  stream {:<23} reserved {reserved:>12}  allocated {allocated:>12}",
                st.label,
            );
        }
    }
}

/// The peaks, each out-of-memory (the analysed first per device in full), the free space
/// when no OOM was analysed, and the trace entries read and not understood.
fn peaks_and_ooms(o: &mut String, s: &MemSummary, width: usize) {
    if let Some(p) = &s.peak_reserved {
        let _ = writeln!(
            o,
            "peak reserved  {} at {}",
            fmt_bytes(p.bytes),
            time_s(s.first_time_us, p.time_us)
        );
    }
    if let Some(p) = &s.peak_allocated {
        let _ = writeln!(
            o,
            "peak allocated {} at {} (requested sizes)",
            fmt_bytes(p.bytes),
            time_s(s.first_time_us, p.time_us)
        );
    }
    for oom in &s.ooms {
        // The analysed first OOM of its device gets the full story below; others a line.
        if s.oom_analyses
            .iter()
            .any(|a| a.device == oom.device && a.time_us == oom.time_us)
        {
            continue;
        }
        let free = oom.device_free.map_or("?".to_string(), fmt_bytes);
        let line = format!(
            "OOM  asked {} with {} free on the device, at {} in {}",
            fmt_bytes(oom.requested),
            free,
            time_s(s.first_time_us, oom.time_us),
            oom.site
        );
        put(o, width, 0, &line);
    }
    for a in &s.oom_analyses {
        let head = format!(
            "OOM  asked {} at {} in",
            fmt_bytes(a.requested),
            time_s(s.first_time_us, a.time_us)
        );
        oom_section(o, width, 0, &head, a);
    }
    if s.oom_analyses.is_empty() {
        if let Some(l) = free_space_line(&s.free_space) {
            put(o, width, 0, &l);
        }
    }
    let _ = writeln!(o, "{} trace entries", s.trace_entries);
    if !s.unknown_actions.is_empty() {
        let names: Vec<String> = (s.unknown_actions.iter())
            .map(|(name, n)| format!("{name} ×{n}"))
            .collect();
        let unknown: u64 = s.unknown_actions.iter().map(|(_, n)| n).sum();
        put(
            o,
            width,
            0,
            &format!(
                "{unknown} of them with an action this version does not know, left out of every \
                 figure: {}",
                names.join(", ")
            ),
        );
    }
}

/// The `top` largest allocation sites: a table, or one wrapped line per site when the
/// output is narrower than the table.
fn site_table(o: &mut String, s: &MemSummary, top: usize, width: usize) {
    if top > 0 && !s.sites.is_empty() && width < 36 + 44 {
        // Narrower than the table: one wrapped line per site.
        let _ = writeln!(o, "site (live memory): allocated, reserved, blocks");
        for site in s.sites.iter().take(top) {
            let text = format!(
                "{}: {}, {}, {}",
                site_label(&site.site, &site.lines),
                fmt_bytes(site.allocated),
                fmt_bytes(site.reserved),
                plural(site.blocks, "block")
            );
            put(o, width, 0, &text);
        }
        if s.sites.len() > top {
            let _ = writeln!(o, "… {} more sites", s.sites.len() - top);
        }
    } else if top > 0 && !s.sites.is_empty() {
        // The site column takes what the three figures (36 columns) leave, 44 at least.
        let site_w = width.saturating_sub(36).max(44);
        let _ = writeln!(
            o,
            "{} {:>11} {:>11} {:>10}",
            crate::render::fit("site (live memory)", site_w),
            "allocated",
            "reserved",
            "blocks"
        );
        for site in s.sites.iter().take(top) {
            let lines = cell_lines(&site_label(&site.site, &site.lines), site_w);
            for (i, l) in lines.iter().enumerate() {
                if i == 0 {
                    let _ = writeln!(
                        o,
                        "{l} {:>11} {:>11} {:>10}",
                        fmt_bytes(site.allocated),
                        fmt_bytes(site.reserved),
                        site.blocks
                    );
                } else {
                    let _ = writeln!(o, "  {}", l.trim_end());
                }
            }
        }
        if s.sites.len() > top {
            let _ = writeln!(o, "… {} more sites", s.sites.len() - top);
        }
    }
}

fn plural(n: u64, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// What bound the allocation. `allowed` is the cap the log's OOM message printed
/// (`14.00 GiB allowed`), when the caller has the log.
pub fn limit_line(l: &Limit, allowed: Option<u64>) -> Option<String> {
    match l {
        Limit::Device {
            device_free,
            segment,
        } => Some(format!(
            "limit: the device, {} free < the {} segment asked for",
            fmt_bytes(*device_free),
            fmt_bytes(*segment)
        )),
        Limit::ProcessCap {
            device_free,
            segment,
            cap_at_least,
            cap_below,
        } => {
            let cap = match allowed {
                Some(a) => format!("> {} allowed", fmt_bytes(a)),
                None => format!(
                    "passes the cap, which lies in [{}, {})",
                    fmt_bytes(*cap_at_least),
                    fmt_bytes(*cap_below)
                ),
            };
            Some(format!(
                "limit: the process's memory cap, not the device ({} free on it): {} held + the {} segment asked for {cap}",
                fmt_bytes(*device_free),
                fmt_bytes(*cap_at_least),
                fmt_bytes(*segment),
            ))
        }
        Limit::Unknown => None,
    }
}

/// One line on the free memory inside segments, when some segment holds any.
pub(crate) fn free_space_line(f: &FreeSpace) -> Option<String> {
    if f.unallocated == Bytes::ZERO && f.private_unallocated == Bytes::ZERO {
        return None;
    }
    Some(format!(
        "free inside segments {} (+{} in graph pools), largest block {}; {} with holes, {} wholly free",
        fmt_bytes(f.unallocated),
        fmt_bytes(f.private_unallocated),
        fmt_bytes(f.largest_free),
        plural(f.segments_with_holes, "segment"),
        f.wholly_free_segments
    ))
}

/// The fragmentation verdict of one OOM as lines: the figures, the sites whose blocks pin
/// the holes and the remedy; with `detail`, a row per segment shape and up to three
/// pinning sites. Empty when the OOM was not fragmentation.
/// `scope` names whose figures these are (`on 2/2 failing ranks, TP0 shown`).
pub(crate) fn fragmentation_lines(
    a: &OomAnalysis,
    detail: bool,
    scope: Option<&str>,
) -> Vec<String> {
    let Some(f) = &a.fragmentation else {
        return Vec::new();
    };
    let at = if a.at_oom {
        "at the OOM"
    } else {
        "at the dump"
    };
    let when = match scope {
        Some(s) => format!("{at} {s}"),
        None => at.to_string(),
    };
    let part = if f.free == a.space.unallocated {
        String::new()
    } else {
        format!(", {} of it", fmt_bytes(f.free))
    };
    let mut v = vec![format!(
        "fragmentation {when}: {} reserved but unallocated{part} in {} across {} holding live blocks; largest hole {} < {} asked",
        fmt_bytes(a.space.unallocated),
        plural(f.holes, "hole"),
        plural(f.segments, "segment"),
        fmt_bytes(f.largest_hole),
        fmt_bytes(a.requested)
    )];
    if detail {
        v.push(format!(
            "  {:>5} {:>11} {:>11} {:>12} {:>13}",
            "segs", "size", "allocated", "free blocks", "largest free"
        ));
        for sh in f.shapes.iter().take(6) {
            v.push(format!(
                "  {:>5} {:>11} {:>11} {:>12} {:>13}",
                sh.count,
                fmt_bytes(sh.size),
                fmt_bytes(sh.allocated),
                sh.free_blocks,
                fmt_bytes(sh.largest_free)
            ));
        }
        if f.shapes.len() > 6 {
            v.push(format!("  … {} more shapes", f.shapes.len() - 6));
        }
    }
    for p in f.pinned_by.iter().take(if detail { 3 } else { 1 }) {
        v.push(format!(
            "holes pinned by {}: {} ({}) in {} of the {}",
            p.site,
            plural(p.blocks, "block"),
            fmt_bytes(p.bytes),
            p.segments,
            plural(f.segments, "segment"),
        ));
    }
    if let Some(l) = remedy_line(a.expandable_segments) {
        v.push(l);
    }
    if let Some(n) = &a.state_note {
        v.push(format!("note: {n}"));
    }
    v
}

/// PyTorch's own advice for fragmentation, unless the snapshot shows it already taken.
pub(crate) fn remedy_line(expandable: Option<bool>) -> Option<String> {
    match expandable {
        Some(true) => None,
        Some(false) => Some(
            "remedy: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (off in the snapshot's allocator_settings)".into(),
        ),
        None => Some(
            "remedy: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the snapshot does not record the setting)".into(),
        ),
    }
}

/// The OOM, what bound it and the fragmentation section, for `mem` and `mem diff`.
fn oom_section(o: &mut String, width: usize, indent: usize, head: &str, a: &OomAnalysis) {
    put(o, width, indent, &format!("{head} {}", a.site));
    if let Some(l) = limit_line(&a.limit, None) {
        put(o, width, indent + 2, &l);
    }
    if a.fragmentation.is_none() {
        let at = if a.at_oom {
            "at the OOM"
        } else {
            "at the dump"
        };
        if let Some(l) = free_space_line(&a.space) {
            put(o, width, indent + 2, &format!("{at}: {l}"));
        }
        if let Some(n) = &a.state_note {
            put(o, width, indent + 2, &format!("note: {n}"));
        }
    }
    for l in fragmentation_lines(a, true, None) {
        if l.starts_with("  ") {
            let _ = writeln!(o, "{}{l}", " ".repeat(indent));
        } else {
            put(o, width, indent, &l);
        }
    }
}

fn change_rows(o: &mut String, width: usize, title: &str, v: &[SiteChange], top: usize) {
    if v.is_empty() {
        return;
    }
    if width < 42 + 38 {
        // Narrower than the table: one wrapped line per site, the figures named.
        let _ = writeln!(o, "{title}");
        for c in v.iter().take(top) {
            let text = format!(
                "{}: allocated\u{a0}{} -> {}, reserved\u{a0}{}",
                c.site,
                fmt_bytes(c.a_allocated),
                fmt_bytes(c.b_allocated),
                fmt_delta(c.delta_reserved)
            );
            put(o, width, 2, &text);
        }
        if v.len() > top {
            let _ = writeln!(o, "… {} more", v.len() - top);
        }
        return;
    }
    // The site column takes what the three figures (42 columns) leave, 38 at least.
    let site_w = width.saturating_sub(42).max(38);
    let _ = writeln!(
        o,
        "{} {:>13} {:>13} {:>13}",
        crate::render::fit(title, site_w),
        "A alloc",
        "B alloc",
        "delta resv"
    );
    for c in v.iter().take(top) {
        for (i, l) in cell_lines(&c.site, site_w).iter().enumerate() {
            if i == 0 {
                let _ = writeln!(
                    o,
                    "{l} {:>13} {:>13} {:>13}",
                    fmt_bytes(c.a_allocated),
                    fmt_bytes(c.b_allocated),
                    fmt_delta(c.delta_reserved)
                );
            } else {
                let _ = writeln!(o, "  {}", l.trim_end());
            }
        }
    }
    if v.len() > top {
        let _ = writeln!(o, "… {} more", v.len() - top);
    }
}

/// The diff of run A (baseline) against run B, the `top` largest changes per section.
pub fn diff_text(d: &MemDiff, top: usize, width: usize) -> String {
    let mut o = String::new();
    let t = &d.totals;
    let _ = writeln!(
        o,
        "reserved  {} -> {} ({})",
        fmt_bytes(d.a_totals.reserved),
        fmt_bytes(d.b_totals.reserved),
        fmt_delta(t.reserved)
    );
    let _ = writeln!(
        o,
        "allocated {} -> {} ({})",
        fmt_bytes(d.a_totals.allocated),
        fmt_bytes(d.b_totals.allocated),
        fmt_delta(t.allocated)
    );
    let line = format!(
        "segments {} -> {}  peak reserved {}  peak allocated {}  OOMs {} -> {}",
        d.a_totals.segments,
        d.b_totals.segments,
        fmt_delta(t.peak_reserved),
        fmt_delta(t.peak_allocated),
        d.a_ooms,
        d.b_ooms
    );
    put(&mut o, width, 0, &line);
    for (side, oom, free) in [("A", &d.a_oom, &d.a_free), ("B", &d.b_oom, &d.b_free)] {
        match oom {
            Some(a) => {
                let head = format!("{side} OOM  asked {} in", fmt_bytes(a.requested));
                oom_section(&mut o, width, 0, &head, a);
            }
            None => {
                if let Some(l) = free_space_line(free) {
                    put(&mut o, width, 0, &format!("{side} {l}"));
                }
            }
        }
    }
    change_rows(&mut o, width, "sites only in B", &d.only_b, top);
    change_rows(&mut o, width, "sites only in A", &d.only_a, top);
    change_rows(&mut o, width, "sites changed", &d.changed, top);
    for (title, v) in [
        ("new in B", &d.new_segments),
        ("gone from A", &d.gone_segments),
    ] {
        if v.is_empty() {
            continue;
        }
        let _ = writeln!(o, "segments {title}:");
        for c in v.iter().take(top) {
            let line = format!(
                "  {} x {} = {}  pool {},{} stream {}  {}",
                c.count,
                fmt_bytes(c.key.size),
                fmt_bytes(c.bytes),
                c.key.pool.0,
                c.key.pool.1,
                c.key.stream,
                c.key.site
            );
            put(&mut o, width, 2, line.trim_start());
        }
        if v.len() > top {
            let _ = writeln!(o, "  … {} more", v.len() - top);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(fmt_bytes(25_198_592_u64), "24.03 MiB");
        assert_eq!(fmt_bytes(20_971_520_u64), "20.00 MiB");
        assert_eq!(fmt_bytes(512_u64), "512 B");
        assert_eq!(fmt_delta(-1024_i64), "-1.00 KiB");
    }
}
