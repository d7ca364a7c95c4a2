//! Where the memory went: the breakdown of `summary --memory` drawn — per group of ranks
//! a bar of its categories stacked across the device, and a table with each category's
//! share, resolution and derivation (`file:line` of every figure); the capacity it buys;
//! with `--vs`, the categories that moved and what the change cost, in `diff --memory`'s
//! words.

use std::fmt::Write;

use super::{esc, heading, Page};
use crate::analysis::breakdown::{RankBreakdown, RowValue, RunBreakdown};
use crate::base::units::{group_thousands, human_bytes};
use crate::grammar::memory_model::{Category, Term};
use crate::model::Run;
use crate::render::text::breakdown::{category_label, derivation, gib, moved_lines};

/// Width of a bar in SVG units.
const BAR_W: f64 = 600.0;

fn class_of(c: Category) -> &'static str {
    match c {
        Category::Communication => "c-comm",
        Category::Weights => "c-weights",
        Category::KvPool => "c-kv",
        Category::CudaGraphs => "c-graphs",
        Category::Activations => "c-act",
        Category::Other => "c-other",
        Category::Free => "c-free",
    }
}

/// The categories stacked left to right across the device (or their sum when the device
/// is not known).
fn bar(o: &mut String, b: &RankBreakdown) {
    let measured: Vec<(Category, i64)> = b
        .rows
        .iter()
        .filter_map(|r| match &r.value {
            RowValue::Measured(a) => Some((r.category, a.bytes.max(0))),
            _ => None,
        })
        .collect();
    let sum: i64 = measured.iter().map(|x| x.1).sum();
    let whole = b
        .device
        .as_ref()
        .map_or(sum, |d| d.amount.bytes.max(sum))
        .max(1);
    let scale = BAR_W / whole as f64;
    let _ = write!(
        o,
        "<svg viewBox=\"0 0 {BAR_W} 18\" width=\"{BAR_W}\" height=\"18\" role=\"img\">"
    );
    let mut x = 0.0;
    for (c, bytes) in &measured {
        let w = *bytes as f64 * scale;
        let _ = write!(
            o,
            "<rect class=\"{}\" x=\"{x:.1}\" y=\"2\" width=\"{w:.1}\" height=\"14\"><title>{}: {}</title></rect>",
            class_of(*c),
            esc(category_label(*c)),
            esc(&gib(*bytes))
        );
        x += w;
    }
    o.push_str("</svg>\n");
}

fn table(o: &mut String, run: &Run, b: &RankBreakdown) {
    let device = b.device.as_ref().map(|d| d.amount.bytes).filter(|&d| d > 0);
    o.push_str("<table class=\"grid\">\n<tr><th>category</th><th>GiB</th><th>share</th><th>±</th><th>derivation</th></tr>\n");
    for row in &b.rows {
        let mut label = category_label(row.category).to_string();
        if !row.includes.is_empty() {
            let inc: Vec<&str> = row.includes.iter().map(|c| category_label(*c)).collect();
            label.push_str(&format!(" (with {})", inc.join(", ")));
        }
        let _ = write!(
            o,
            "<tr><td><i class=\"{}\"></i>{}</td>",
            class_of(row.category),
            esc(&label)
        );
        match &row.value {
            RowValue::Measured(a) => {
                let share = device.map_or("—".to_string(), |d| {
                    format!("{:.1} %", a.bytes as f64 * 100.0 / d as f64)
                });
                let from = if a.terms.iter().any(|t| t.term == Term::Rest) {
                    "device − the other categories".to_string()
                } else {
                    derivation(run, a)
                };
                let _ = writeln!(
                    o,
                    "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"small\">= {}</td></tr>",
                    esc(&gib(a.bytes)),
                    esc(&share),
                    esc(&human_bytes(a.resolution)),
                    esc(&from)
                );
            }
            RowValue::Merged(into) => {
                let _ = writeln!(
                    o,
                    "<td colspan=\"4\" class=\"muted\">not in this log: counted in {}</td></tr>",
                    esc(category_label(*into))
                );
            }
            RowValue::NotReached => {
                o.push_str("<td colspan=\"4\" class=\"muted\">not reached: the lines it is read from are missing</td></tr>\n");
            }
        }
    }
    o.push_str("</table>\n");
    if let Some(c) = &b.closure {
        let _ = writeln!(
            o,
            "<p class=\"{}\">categories {} the device: {} against {}, within ±{}</p>",
            if c.holds() { "good" } else { "warn" },
            if c.holds() {
                "add up to"
            } else {
                "do not add up to"
            },
            esc(&gib(c.sum)),
            esc(&gib(c.device)),
            esc(&human_bytes(c.tolerance))
        );
    }
}

fn groups(o: &mut String, run: &Run, b: &RunBreakdown) {
    for g in &b.groups {
        let device = match &g.breakdown.device {
            Some(d) => {
                let mut s = format!("device {}", gib(d.amount.bytes));
                if !d.amount.terms.is_empty() {
                    s.push_str(&format!(" = {}", derivation(run, &d.amount)));
                }
                s
            }
            None => "device memory not known".to_string(),
        };
        let _ = writeln!(
            o,
            "<h3>{}</h3>\n<p class=\"small\">{}</p>",
            esc(&super::rank_ranges(&g.ranks)),
            esc(&device)
        );
        bar(o, &g.breakdown);
        table(o, run, &g.breakdown);
    }
}

fn capacity(o: &mut String, run: &Run, m: &crate::report::MemoryReport) {
    let Some(c) = &m.capacity else { return };
    let mut rows: Vec<(String, String)> = vec![(
        "KV pool".into(),
        format!(
            "{} tokens per rank, read on {}",
            group_thousands(c.pool_tokens),
            c.rank
        ),
    )];
    if let Some(l) = &c.log_per_token {
        rows.push((
            "bytes per token".into(),
            format!(
                "{} ± {} (log)",
                group_thousands(l.bytes.round() as i64),
                group_thousands(l.tolerance.ceil() as i64)
            ),
        ));
    }
    for r in &c.lengths {
        rows.push((
            format!("requests of {} tokens", group_thousands(r.tokens)),
            format!(
                "{} at once ({:.2}x){}",
                group_thousands(r.requests),
                r.concurrency,
                if r.limited {
                    ", capped by the server's limit"
                } else {
                    ""
                }
            ),
        ));
    }
    if let Some(s) = &c.server_said {
        rows.push((
            "the server's own line".into(),
            format!(
                "{:.2}x for {} tokens ({}:{}); ours {:.2}x",
                s.concurrency,
                group_thousands(s.tokens),
                run.source_name(&s.origin),
                s.origin.line,
                s.ours
            ),
        ));
    }
    o.push_str("<h3>Capacity</h3>\n<table class=\"rows\">\n");
    for (k, v) in rows {
        let _ = writeln!(o, "<tr><th>{}</th><td>{}</td></tr>", esc(&k), esc(&v));
    }
    o.push_str("</table>\n");
}

/// The breakdown section: the candidate's groups and capacity; with `--vs`, what moved.
pub(crate) fn section(o: &mut String, p: &Page) {
    heading(o, "breakdown", "Where the memory went");
    let run = p.candidate.run;
    let memory = match p.diff {
        Some(d) => &d.memory.candidate,
        None => &p.candidate.report.memory,
    };
    let Some(b) = &memory.breakdown else {
        o.push_str(
            "<p class=\"muted\">the run's server grammar has no memory model: no breakdown</p>\n",
        );
        return;
    };
    let _ = writeln!(
        o,
        "<p class=\"small muted\">{} memory model; each category from the figures the log printed (docs/capacity.md)</p>",
        esc(&b.grammar)
    );
    if let Some(moved) = p.diff.and_then(|d| d.memory.moved.as_ref()) {
        o.push_str("<h3>Against the baseline</h3>\n<ul>\n");
        for (indent, line) in moved_lines(moved) {
            let _ = writeln!(
                o,
                "<li{}>{}</li>",
                if indent > 0 {
                    " class=\"small muted\""
                } else {
                    ""
                },
                esc(&line)
            );
        }
        if let Some(cost) = &p.diff.and_then(|d| d.memory.cost.as_ref()) {
            let text = crate::render::text::capacity::capacity_cost_text(
                cost,
                crate::render::Style {
                    color: false,
                    width: 10_000,
                },
            );
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                let _ = writeln!(o, "<li>{}</li>", esc(line));
            }
        }
        o.push_str("</ul>\n");
    }
    groups(o, run, b);
    // Snapshots and nvidia-smi against the breakdown, in `summary --memory`'s words.
    let m = &p.candidate.report.memory;
    let style = crate::render::Style {
        color: false,
        width: 100,
    };
    let text = crate::render::text::held::held_text(b, &m.held, style)
        + &crate::render::text::smi::smi_text(run, &m.smi, style);
    if !text.is_empty() {
        let _ = writeln!(o, "<pre>{}</pre>", esc(&text));
    }
    capacity(o, run, memory);
}
