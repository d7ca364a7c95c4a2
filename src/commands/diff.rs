//! `rankscope diff`: a candidate run against a baseline; the exit code is the status.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rankscope::analysis::{attribute, diff};
use rankscope::load;
use rankscope::render::{self, json};

use super::{out, out_json, shown, LogContext};

pub fn run(
    cx: &LogContext,
    paths: &[PathBuf],
    baseline: &[PathBuf],
    as_json: bool,
    explain: bool,
) -> Result<u8> {
    let (baseline, candidate): (&[PathBuf], &[PathBuf]) = match (baseline.is_empty(), paths) {
        (false, _) => (baseline, paths),
        (true, [b, c]) => (std::slice::from_ref(b), std::slice::from_ref(c)),
        (true, _) => anyhow::bail!(
            "diff: give BASELINE CANDIDATE, or --baseline PATH (repeatable) and the candidate's paths"
        ),
    };
    let (b, c) = rayon::join(|| cx.load(baseline), || cx.load(candidate));
    let b = b.with_context(|| format!("baseline {}", shown(baseline)))?;
    let c = c.with_context(|| format!("candidate {}", shown(candidate)))?;
    let d = diff::diff(&b.run, &c.run);
    let ((bs, be), (cs, ce)) = rayon::join(
        || load::load_snapshots(&b.run, &b.files),
        || load::load_snapshots(&c.run, &c.files),
    );
    let attribution = attribute::attribute(&b.run, &c.run, &d, &bs, &cs);
    let evidence = attribute::snapshot_evidence(&c.run, &bs, &cs);
    let mut notes: Vec<String> = be.into_iter().chain(ce).collect();
    for (name, run, snaps) in [("baseline", &b.run, &bs), ("candidate", &c.run, &cs)] {
        let parts: Vec<String> = attribute::rank_match_note(snaps)
            .into_iter()
            .chain(attribute::clock_note(run, snaps))
            .collect();
        if !parts.is_empty() {
            notes.push(format!("{name} snapshots {}", parts.join("; ")));
        }
    }
    if attribution.is_none() && d.first_divergence.is_some() && (bs.is_empty() || cs.is_empty()) {
        notes.push(
            "no snapshots in one of the runs: the divergence is not attributed to allocation sites"
                .into(),
        );
    }
    let code = d.status.exit_code() as u8;
    if as_json {
        out_json(&json::diff_doc(
            &b.run,
            &c.run,
            &d,
            attribution.as_ref(),
            Some(&evidence),
        ))?;
    } else {
        let style = cx.style;
        let extra = render::diff_text::Extra {
            config: render::diff_text::allocator_setting_lines(&evidence),
            snapshot_cause: render::diff_text::fragmentation_cause_lines(
                &evidence,
                d.first_divergence.is_some(),
            ),
            oom_sites: render::diff_text::oom_site_lines(&evidence),
            attribution: attribution
                .as_ref()
                .map(render::diff_text::attribution_lines)
                .unwrap_or_default(),
            notes,
        };
        let mut text = render::diff_text::diff(&d, &extra, style);
        if explain {
            text.push_str(&render::diff_text::explain(&d, style));
            if let Some(a) = &attribution {
                for c in &a.clock {
                    text.push_str(&format!("clock: {c}\n"));
                }
            }
        }
        out(&text)?;
    }
    // Not freed piece by piece, as in `summary`.
    std::mem::forget((b, c, d, bs, cs));
    Ok(code)
}
