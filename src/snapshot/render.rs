//! Plain-text rendering of summaries and diffs: 80 columns, no terminal handling.

use std::fmt::Write;

use super::analysis::{MemDiff, MemSummary, SiteChange};

const WIDTH: usize = 80;

/// `24.03 MiB`: binary units, two decimals; bytes below 1 KiB as `512 B`.
pub use crate::units::human_size as fmt_bytes;

/// Signed sizes: `+40.00 MiB`, `-512 B`, `0 B`.
pub fn fmt_delta(n: i64) -> String {
    match n.signum() {
        1 => format!("+{}", fmt_bytes(n.unsigned_abs())),
        -1 => format!("-{}", fmt_bytes(n.unsigned_abs())),
        _ => "0 B".into(),
    }
}

/// Cuts to `w` characters, marking the cut with `…`.
use crate::text::truncate as fit;

fn time_s(first: Option<i64>, t: i64) -> String {
    match first {
        Some(f) => format!("t+{:.3}s", (t - f) as f64 / 1e6),
        None => format!("{t}us"),
    }
}

/// A one-screen summary with the `top` largest sites.
pub fn summary_text(s: &MemSummary, top: usize) -> String {
    let mut o = String::new();
    let t = &s.totals;
    let _ = writeln!(
        o,
        "reserved {}  allocated {}  active {}  in {} segments",
        fmt_bytes(t.reserved),
        fmt_bytes(t.allocated),
        fmt_bytes(t.active),
        t.segments
    );
    for p in &s.by_pool {
        let kind = if p.private {
            "private (graph)"
        } else {
            "default"
        };
        let _ = writeln!(
            o,
            "  pool {:>8} {:<16} reserved {:>12}  allocated {:>12}",
            format!("{},{}", p.pool.0, p.pool.1),
            kind,
            fmt_bytes(p.totals.reserved),
            fmt_bytes(p.totals.allocated)
        );
    }
    for st in &s.by_stream {
        let _ = writeln!(
            o,
            "  stream {:<23} reserved {:>12}  allocated {:>12}",
            st.label,
            fmt_bytes(st.totals.reserved),
            fmt_bytes(st.totals.allocated)
        );
    }
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
        let free = oom.device_free.map_or("?".to_string(), fmt_bytes);
        let line = format!(
            "OOM  asked {} with {} free on the device, at {} in {}",
            fmt_bytes(oom.requested),
            free,
            time_s(s.first_time_us, oom.time_us),
            oom.site
        );
        let _ = writeln!(o, "{}", fit(&line, WIDTH));
    }
    let _ = writeln!(o, "{} trace entries", s.trace_entries);
    if top > 0 && !s.sites.is_empty() {
        let _ = writeln!(
            o,
            "{:<44} {:>11} {:>11} {:>10}",
            "site (live memory)", "allocated", "reserved", "blocks"
        );
        for site in s.sites.iter().take(top) {
            let _ = writeln!(
                o,
                "{:<44} {:>11} {:>11} {:>10}",
                fit(&site_label(&site.site, &site.lines), 44),
                fmt_bytes(site.allocated),
                fmt_bytes(site.reserved),
                site.blocks
            );
        }
        if s.sites.len() > top {
            let _ = writeln!(o, "… {} more sites", s.sites.len() - top);
        }
    }
    o
}

/// `init_custom_ar (model_runner.py:85-87)`: the site with the lines it spans.
pub fn site_label(site: &str, lines: &[i64]) -> String {
    // A per-line site already names its line.
    if let ([a], Some(head)) = (lines, site.strip_suffix(')')) {
        if head.ends_with(&format!(":{a}")) {
            return site.to_string();
        }
    }
    let span = match (lines.first(), lines.last()) {
        (Some(a), Some(b)) if a == b => format!(":{a}"),
        (Some(a), Some(b)) => format!(":{a}-{b}"),
        _ => return site.to_string(),
    };
    match site.strip_suffix(')') {
        Some(head) => format!("{head}{span})"),
        None => format!("{site}{span}"),
    }
}

fn change_rows(o: &mut String, title: &str, v: &[SiteChange], top: usize) {
    if v.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "{:<38} {:>13} {:>13} {:>13}",
        title, "A alloc", "B alloc", "delta resv"
    );
    for c in v.iter().take(top) {
        let _ = writeln!(
            o,
            "{:<38} {:>13} {:>13} {:>13}",
            fit(&c.site, 38),
            fmt_bytes(c.a_allocated),
            fmt_bytes(c.b_allocated),
            fmt_delta(c.delta_reserved)
        );
    }
    if v.len() > top {
        let _ = writeln!(o, "… {} more", v.len() - top);
    }
}

/// The diff of run A (baseline) against run B, the `top` largest changes per section.
pub fn diff_text(d: &MemDiff, top: usize) -> String {
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
    let _ = writeln!(o, "{}", fit(&line, WIDTH));
    change_rows(&mut o, "sites only in B", &d.only_b, top);
    change_rows(&mut o, "sites only in A", &d.only_a, top);
    change_rows(&mut o, "sites changed", &d.changed, top);
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
            let _ = writeln!(o, "{}", fit(&line, WIDTH));
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
        assert_eq!(fmt_bytes(25_198_592), "24.03 MiB");
        assert_eq!(fmt_bytes(20_971_520), "20.00 MiB");
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_delta(-1024), "-1.00 KiB");
    }
}
