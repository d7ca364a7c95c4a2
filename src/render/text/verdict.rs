//! The verdict's middle rows of `diff` (cause, effect, remedy, time), built once for the
//! text and the TUI's Diff view, so that the two say the same.

use super::diff::spread_shown;
use super::summary::figure_label;
use crate::analysis::diff::{RunDiff, Status};
use crate::base::units::group_thousands;
use crate::base::units::ByteDelta;
use crate::render::figure_shown;
use crate::render::figure_text;

/// The verdict's middle rows, labelled: the cause (the failure itself when it is not about
/// memory; else the first divergence with its allocation sites, or the snapshots' cause),
/// the effect, the time changes. `diff`'s text and the TUI's Diff view both print these,
/// so the two say the same.
pub(crate) fn verdict_rows(
    d: &RunDiff,
    attribution: &[String],
    snapshot_cause: &[String],
) -> Vec<(&'static str, String)> {
    let mut rows: Vec<(&'static str, String)> = Vec::new();
    // A failure that is not about memory is its own cause; a memory figure that moved
    // too is shown under `memory`.
    let failure_cause = d
        .failure_cause
        .as_ref()
        .filter(|fc| d.status == Status::Failed && !crate::analysis::cause::is_memory(fc.kind));
    let mut cause_label = "cause";
    if let Some(fc) = failure_cause {
        for (i, l) in super::cause::lines(d, fc).iter().enumerate() {
            rows.push((if i == 0 { "cause" } else { "" }, l.clone()));
        }
        cause_label = "memory";
    }
    if let Some(div) = &d.first_divergence {
        let f = d
            .figures
            .iter()
            .find(|f| f.phase == div.phase && f.figure == div.figure);
        if let Some(f) = f {
            let text = format!(
                "{}  {} {} on {}/{} ranks ({}; {} -> {}{})",
                f.phase,
                figure_label(f.figure.name()),
                spread_shown(f),
                div.ranks_moved,
                div.ranks_compared,
                div.class.name(),
                figure_shown(
                    &f.figure,
                    f.baseline_median,
                    f.is_bytes,
                    f.resolution,
                    usize::MAX
                ),
                figure_shown(
                    &f.figure,
                    f.candidate_median,
                    f.is_bytes,
                    f.resolution,
                    usize::MAX
                ),
                // A figure printed to the byte has no resolution worth a number.
                if f.is_bytes && f.resolution <= 1.0 {
                    "; logged to the byte".to_string()
                } else if f.is_bytes {
                    format!(
                        "; log resolution {:.2} MiB",
                        f.resolution / crate::base::units::MIB
                    )
                } else {
                    String::new()
                }
            );
            rows.push((cause_label, text));
        }
        for a in attribution {
            rows.push(("", a.clone()));
        }
        for l in snapshot_cause {
            rows.push(("", l.clone()));
        }
    } else if !snapshot_cause.is_empty() {
        for (i, l) in snapshot_cause.iter().enumerate() {
            rows.push((if i == 0 { cause_label } else { "" }, l.clone()));
        }
    } else if failure_cause.is_some() {
        // The failure is the cause; no memory figure to add.
    } else if d.comparability.memory_compared && d.figures.is_empty() {
        // Not "nothing moved": the logs printed nothing to compare (TGI prints no
        // per-phase memory), so the reader is told what could not be seen.
        rows.push((
            "cause",
            "no memory figure printed by both runs, nothing to compare; a PyTorch memory snapshot of each would show where memory went".to_string(),
        ));
    } else if d.comparability.memory_compared {
        let what = if d.time.findings.is_empty() {
            "no figure moved beyond the print resolution"
        } else {
            "no memory figure moved beyond the print resolution; the time did (below)"
        };
        rows.push(("cause", what.to_string()));
    }
    // A memory failure's cause is its first divergence; the changes its grammars'
    // suspects tie to it are worded under it, as a non-memory failure's are.
    if let Some(fc) = (d.failure_cause.as_ref())
        .filter(|fc| d.status == Status::Failed && crate::analysis::cause::is_memory(fc.kind))
    {
        let has_cause = rows.iter().any(|(l, _)| *l == "cause");
        for (i, l) in super::cause::suspect_lines(d, fc).into_iter().enumerate() {
            rows.push((if i == 0 && !has_cause { "cause" } else { "" }, l));
        }
    }
    if let Some(e) = effect_text(d) {
        rows.push(("effect", e));
    }
    if d.status == Status::Failed {
        for (i, t) in super::remedy::lines(&d.remedies).into_iter().enumerate() {
            rows.push((if i == 0 { "remedy" } else { "" }, t));
        }
    }
    for (i, t) in super::time::rows(&d.time).iter().enumerate() {
        rows.push((if i == 0 { "time" } else { "" }, t.clone()));
    }
    rows
}

/// What the first divergence cost further on: the KV pool, the free memory after it, and
/// what the failing phase asked for.
fn effect_text(d: &RunDiff) -> Option<String> {
    let e = d.effect.as_ref()?;
    let mut parts = Vec::new();
    match e.kv_tokens_delta {
        Some(0) => parts.push(format!(
            "KV pool sized as before ({} tokens/rank)",
            e.kv_tokens_baseline
                .map(group_thousands)
                .unwrap_or_default()
        )),
        Some(t) => parts.push(format!(
            "KV pool {} {} tokens/rank{}",
            if t < 0 { "lost" } else { "gained" },
            group_thousands(t.abs()),
            e.kv_bytes_delta
                .map(|b| format!(" ({})", crate::base::units::human_size(b.magnitude())))
                .unwrap_or_default()
        )),
        None => {}
    }
    if let (Some(dl), Some((b, c))) = (e.avail_after_pool_delta, e.avail_after_pool) {
        if dl != ByteDelta::ZERO {
            parts.push(format!(
                "free memory after the pool {} {} -> {}",
                if dl < ByteDelta::ZERO { "fell" } else { "rose" },
                figure_text(b as f64, true, crate::base::units::GIB / 100.0),
                figure_text(c as f64, true, crate::base::units::GIB / 100.0)
            ));
        }
    }
    if let Some(g) = d.candidate.groups.first() {
        if let Some(req) = g.oom.requested {
            // A failure placed in ready only because the rank had completed the phase
            // before (the server never served) is not ready's.
            let step = match g.after_phase {
                Some(a) => format!("the failed step after {a}"),
                None => g.phase.to_string(),
            };
            parts.push(format!(
                "{} asked for {}{}",
                step,
                req.shown(),
                (g.oom.allowed)
                    .map(|a| format!(" past the {} allowed", a.shown()))
                    .unwrap_or_default()
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}
