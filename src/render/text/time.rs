//! Time changes between two runs, in words: the headline's "start-up N s slower", the
//! verdict's `time` rows and the figure table's time rows (`diff` text, JSON's strings,
//! the TUI's Diff view).

use crate::analysis::diff::SlowerStartup;
use crate::analysis::timing::{PhaseTime, TimeDiff, TimeFinding};

/// Seconds as every time is printed (`units::seconds`).
pub(crate) use crate::base::units::seconds as secs;

/// A signed change of seconds (`units::seconds_delta`).
pub(crate) use crate::base::units::seconds_delta as delta_secs;

/// One finding: `weight_load +8.0 s on 4/4 ranks (systematic; 3.0 s -> 11.0 s)`,
/// `TP1 +6.0 s in weight_load (straggler; began 6.0 s late; 3.0 s -> 9.0 s)`,
/// `TP0 +6.0 s in kv_cache (waited for TP1, late in weight_load)`.
pub(crate) fn finding(f: &TimeFinding) -> String {
    match f {
        TimeFinding::Systematic {
            phase,
            ranks_moved,
            ranks_compared,
            baseline_s,
            candidate_s,
            delta_s,
        } => format!(
            "{phase} {} on {ranks_moved}/{ranks_compared} ranks (systematic; {} -> {})",
            delta_secs(*delta_s),
            secs(*baseline_s),
            secs(*candidate_s)
        ),
        TimeFinding::Rank {
            rank,
            phase,
            baseline_s,
            candidate_s,
            delta_s,
            before_first_line_delta_s,
            straggler,
            waited_for,
        } => {
            let mut why = Vec::new();
            if let Some((other, other_phase)) = waited_for {
                why.push(format!("waited for {other}, late in {other_phase}"));
            } else if *straggler {
                why.push("straggler".to_string());
            }
            if let Some(before) = before_first_line_delta_s {
                let (before, inside) = (*before, *delta_s - *before);
                // Where most of the change went: before the phase's first line (the rank
                // began late) or inside the phase (it ran longer).
                if before.abs() >= inside.abs() && before.abs().is_positive() {
                    why.push(format!(
                        "began {} {}",
                        secs(before.abs()),
                        if before.is_positive() {
                            "late"
                        } else {
                            "early"
                        }
                    ));
                } else if inside.abs().is_positive() {
                    why.push(format!(
                        "ran {} {} inside the phase",
                        secs(inside.abs()),
                        if inside.is_positive() {
                            "longer"
                        } else {
                            "shorter"
                        }
                    ));
                }
            }
            why.push(format!("{} -> {}", secs(*baseline_s), secs(*candidate_s)));
            format!(
                "{rank} {} in {phase} ({})",
                delta_secs(*delta_s),
                why.join("; ")
            )
        }
    }
}

/// The headline's part for a slower start-up.
pub(crate) fn slower(s: &SlowerStartup) -> String {
    let mut out = match s.to_ready {
        Some((b, c)) => format!(
            "start-up {} slower (first line to ready {} -> {})",
            secs(c - b),
            secs(b),
            secs(c)
        ),
        None => "start-up slower".to_string(),
    };
    if let Some(lead) = &s.lead {
        out.push_str(": ");
        out.push_str(&finding(lead));
    }
    out
}

/// The verdict's `time` rows: the first line to ready when it moved, then every finding.
pub(crate) fn rows(t: &TimeDiff) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(r) = t.to_ready.as_ref().filter(|r| r.beyond) {
        out.push(format!(
            "first line to ready {} -> {} ({}; beyond the {} the stamps and the {:.0} % tolerance allow)",
            secs(r.baseline_s),
            secs(r.candidate_s),
            delta_secs(r.delta_s),
            secs(r.threshold_s),
            t.tolerance * 100.0
        ));
    }
    out.extend(t.findings.iter().map(finding));
    out
}

/// A phase's time row of the figure table: its median window in each run and the change.
pub(crate) fn phase_cells(p: &PhaseTime) -> (String, String, String, String) {
    let ranks = if p.ranks_moved == 0 {
        "-".to_string()
    } else {
        format!("{}/{} {}", p.ranks_moved, p.ranks_compared, p.class.name())
    };
    (
        secs(p.baseline.median),
        secs(p.candidate.median),
        delta_secs(p.delta.median),
        ranks,
    )
}
