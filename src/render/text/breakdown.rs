//! The memory breakdown in words: per group of ranks, the device memory and each
//! category with its share, its resolution and its derivation (the lines read, the
//! subtraction made); with a baseline, the category that moved.

use crate::analysis::breakdown::{
    Amount, BreakdownDiff, DeviceSource, RankBreakdown, RowValue, RunBreakdown, TermValue,
};
use crate::base::units::{human_bytes, human_delta};
use crate::grammar::memory_model::{Category, DeviceBasis, Term};
use crate::model::Run;
use crate::render::{put, rank_span, Style};

const GIB: f64 = (1u64 << 30) as f64;

/// A category's name as the table shows it.
pub(crate) fn category_label(c: Category) -> &'static str {
    match c {
        Category::Communication => "NCCL / custom AR / outside PyTorch",
        Category::Weights => "weights",
        Category::KvPool => "KV pool",
        Category::CudaGraphs => "CUDA graphs",
        Category::Activations => "activations / workspace",
        Category::Other => "other",
        Category::Free => "free",
    }
}

/// GiB with two decimals; a value that rounds to zero prints without a sign.
pub(crate) fn gib(bytes: i64) -> String {
    let v = bytes as f64 / GIB;
    format!("{:.2} GiB", if v.abs() < 0.005 { 0.0 } else { v })
}

fn term_text(run: &Run, t: &TermValue) -> String {
    let name = match &t.term {
        Term::Figure(p, f) => format!("{}.{}", p.name(), f.name()),
        Term::Field(k, f) => format!("{k}.{f}"),
        Term::Device => "device".into(),
        Term::Rest => "the other categories".into(),
    };
    match &t.origin {
        Some(o) => format!(
            "{name} {} ({}:{})",
            // As the line printed it (`640.00 MiB`, not `0.62 GiB`).
            if t.step > 1 {
                crate::base::units::bytes_as_printed(t.bytes, t.step.unsigned_abs())
            } else if t.resolution > 0 || matches!(t.term, Term::Figure(..)) {
                gib(t.bytes)
            } else {
                t.bytes.to_string()
            },
            run.source_name(o),
            o.line
        ),
        None => format!("{name} {}", gib(t.bytes)),
    }
}

/// `a (file:line) − b (file:line)`.
pub(crate) fn derivation(run: &Run, a: &Amount) -> String {
    let mut s = String::new();
    for (i, t) in a.terms.iter().enumerate() {
        match (i, t.sign < 0) {
            (0, true) => s.push('−'),
            (0, false) => {}
            (_, true) => s.push_str(" − "),
            (_, false) => s.push_str(" + "),
        }
        s.push_str(&term_text(run, t));
    }
    s
}

fn device_text(run: &Run, b: &RankBreakdown) -> String {
    let Some(d) = &b.device else {
        return "device memory not known: the log prints no total or start figure, and no nvidia-smi CSV or OOM message gives one".into();
    };
    let what = match d.source {
        DeviceSource::Log(DeviceBasis::FreeAtStart) => {
            "free memory at start (before the server took any)"
        }
        DeviceSource::Log(DeviceBasis::Total) => "device total, as the log prints it",
        DeviceSource::NvidiaSmi => "device total, nvidia-smi memory.total",
        DeviceSource::OomCapacity => "device total, the OOM message's capacity",
    };
    let mut s = format!("device {} — {what}", gib(d.amount.bytes));
    if !d.amount.terms.is_empty() {
        s.push_str(&format!(" = {}", derivation(run, &d.amount)));
    }
    if d.amount.resolution > 0 {
        s.push_str(&format!(", ±{}", human_bytes(d.amount.resolution)));
    }
    s
}

fn group_text(o: &mut String, run: &Run, b: &RankBreakdown, style: Style) {
    let device = b.device.as_ref().map(|d| d.amount.bytes).filter(|&d| d > 0);
    for row in &b.rows {
        let mut label = category_label(row.category).to_string();
        if !row.includes.is_empty() {
            let inc: Vec<&str> = row.includes.iter().map(|c| category_label(*c)).collect();
            label.push_str(&format!(" (with {})", inc.join(", ")));
        }
        match &row.value {
            RowValue::Measured(a) => {
                let pct = device
                    .map(|d| {
                        let p = a.bytes as f64 * 100.0 / d as f64;
                        format!("{:5.1} %", if p.abs() < 0.05 { 0.0 } else { p })
                    })
                    .unwrap_or_else(|| "    —  ".into());
                let from = if a.terms.iter().any(|t| t.term == Term::Rest) {
                    "device − the categories above and below".to_string()
                } else {
                    derivation(run, a)
                };
                put(
                    o,
                    style.width,
                    4,
                    &format!(
                        "{label:<36} {:>10}  {pct}  ±{}",
                        gib(a.bytes),
                        human_bytes(a.resolution)
                    ),
                );
                // The derivation on its own lines: it is the longest cell and wraps.
                put(o, style.width, 6, &format!("= {from}"));
            }
            RowValue::Merged(into) => put(
                o,
                style.width,
                4,
                &format!(
                    "{label:<36} not in this log: counted in {}",
                    category_label(*into)
                ),
            ),
            RowValue::NotReached => put(
                o,
                style.width,
                4,
                &format!("{label:<36} not reached: the lines it is read from are missing"),
            ),
        }
    }
    if let Some(c) = &b.closure {
        let word = if c.holds() {
            style.good("add up to the device")
        } else {
            style.warn("do not add up to the device")
        };
        put(
            o,
            style.width,
            4,
            &format!(
                "categories {word}: {} against {}, within ±{}",
                gib(c.sum),
                gib(c.device),
                human_bytes(c.tolerance)
            ),
        );
    }
}

/// The breakdown section of `summary --memory`.
pub(crate) fn breakdown_text(run: &Run, b: &RunBreakdown, style: Style) -> String {
    let mut o = String::new();
    o.push_str(&style.bold(&format!("memory breakdown ({} memory model)", b.grammar)));
    o.push('\n');
    for g in &b.groups {
        put(
            &mut o,
            style.width,
            2,
            &format!(
                "{}: {}",
                rank_span(&g.ranks),
                device_text(run, &g.breakdown)
            ),
        );
        group_text(&mut o, run, &g.breakdown, style);
    }
    o
}

/// What moved between two runs' breakdowns, as (indent, sentence): the terminal's text
/// and the HTML report say the same.
pub(crate) fn moved_lines(d: &BreakdownDiff) -> Vec<(usize, String)> {
    let mut o = Vec::new();
    if d.moved.is_empty() {
        o.push((0, "no category moved beyond its resolution".to_string()));
    }
    for m in &d.moved {
        o.push((
            0,
            format!(
                "{}: {} (±{}) on {} of {} ranks",
                category_label(m.category),
                human_delta(m.delta),
                human_bytes(m.resolution),
                m.ranks_moved,
                m.ranks_compared
            ),
        ));
    }
    if let Some(s) = &d.snapshot {
        let residual = match (s.residual, s.log_resolution) {
            (Some(r), Some(step)) if r.magnitude().get() <= step => format!(
                "the rest, {}, is within the log's print step ({}): nothing seen outside PyTorch",
                human_delta(r),
                human_bytes(step as i64)
            ),
            (Some(r), _) => format!(
                "{} outside it (residual: NCCL, IPC, cudaMalloc)",
                human_delta(r)
            ),
            (None, _) => "the residual unknown".into(),
        };
        let sites = if s.sites.is_empty() {
            String::new()
        } else {
            format!(" at {}", s.sites.join(", "))
        };
        o.push((
            2,
            format!(
                "snapshots: PyTorch's allocator reserved {}{sites} in {}; {residual}",
                human_delta(s.allocator),
                category_label(s.category)
            ),
        ));
    }
    if !d.not_compared.is_empty() {
        let names: Vec<&str> = d.not_compared.iter().map(|c| category_label(*c)).collect();
        o.push((
            0,
            format!(
                "not compared (read from different lines in the two runs: a rank stopped earlier): {}",
                names.join(", ")
            ),
        ));
    }
    o
}

/// What moved between two runs' breakdowns.
pub(crate) fn breakdown_diff_text(d: &BreakdownDiff, style: Style) -> String {
    let mut o = String::new();
    o.push_str(&style.bold("memory breakdown against the baseline"));
    o.push('\n');
    for (indent, line) in moved_lines(d) {
        put(&mut o, style.width, 2 + indent, &line);
    }
    o
}
