//! The breakdown against nvidia-smi in words: per GPU, what nvidia-smi saw used, what the
//! breakdown's ranks took, and the difference named with its evidence.

use crate::analysis::smi::{GpuRanks, SmiComparison};
use crate::base::text::sanitize;
use crate::base::units::human_bytes;
use crate::model::Run;
use crate::render::text::breakdown::gib;
use crate::render::{put, rank_span, Style};

fn signed(b: i64) -> String {
    if b < 0 {
        format!("-{}", human_bytes(-b))
    } else {
        human_bytes(b)
    }
}

fn one(o: &mut String, run: &Run, c: &SmiComparison, style: Style) {
    let placed = match c.placement {
        GpuRanks::Shared => "the CSV's only GPU: every rank on it",
        GpuRanks::ByIndex => "rank k on GPU k, the servers' default on one node (assumed)",
    };
    put(
        o,
        style.width,
        2,
        &format!(
            "GPU{} ({}), {} ({placed}): nvidia-smi {} used at t+{:.1} s, the first sample a stamp's second after the last of them printed its free figure; the breakdown's ranks took {} (device − free, ±{}); nvidia-smi saw {} more",
            c.gpu,
            sanitize(&c.source),
            rank_span(&c.ranks),
            gib(c.smi_used),
            c.at_s.get(),
            gib(c.taken),
            human_bytes(c.resolution),
            signed(c.difference())
        ),
    );
    let before = c.before.unwrap_or(0);
    match c.before {
        Some(b) => put(
            o,
            style.width,
            4,
            &format!(
                "before the run's first line nvidia-smi saw {} used: {}",
                human_bytes(b),
                if b == 0 {
                    "no other process"
                } else {
                    "other processes (or an earlier server) held it"
                }
            ),
        ),
        None => put(
            o,
            style.width,
            4,
            "nvidia-smi has no sample before the run's first line: other processes not told apart",
        ),
    }
    let rest = c.difference() - before;
    let n = c.ranks.len().max(1) as i64;
    let within = rest.abs() <= c.resolution;
    put(
        o,
        style.width,
        4,
        &if within {
            format!(
                "the rest, {}, is within the figures' ±{}",
                signed(rest),
                human_bytes(c.resolution)
            )
        } else {
            format!(
                "the rest, {} = {} per process: what each process holds that its own free-memory figures do not count (the CUDA context, created before the first){}",
                signed(rest),
                signed(rest / n),
                if c.finished {
                    ""
                } else {
                    ", and what the phase a rank stopped in took after its last free figure"
                }
            )
        },
    );
    if let Some(p) = &c.process {
        put(
            o,
            style.width,
            4,
            &format!(
                "evidence: {}'s OOM message says its process has {} in use, {} more than it took by its figures ({}; the difference is what it holds outside them and what the failing phase took after its last figure) ({}:{})",
                p.rank,
                human_bytes(p.in_use),
                signed(p.in_use - p.taken),
                human_bytes(p.taken),
                run.source_name(&p.origin),
                p.origin.line
            ),
        );
    }
}

/// After the breakdown: one paragraph per GPU of the run's nvidia-smi CSVs.
pub(crate) fn smi_text(run: &Run, cs: &[SmiComparison], style: Style) -> String {
    let mut o = String::new();
    if cs.is_empty() {
        return o;
    }
    o.push_str(&style.bold("memory breakdown against nvidia-smi"));
    o.push('\n');
    for c in cs {
        one(&mut o, run, c, style);
    }
    o
}
