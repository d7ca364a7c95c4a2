//! One run, all ranks side by side: per phase, who reported it, how long it took, how far
//! apart the ranks finished, and which ranks stand out.

use serde::Serialize;

use crate::event::Rank;
use crate::model::{Phase, Run};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: &mut [f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(|a, b| a.total_cmp(b));
        let n = values.len();
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        Some(Spread {
            min: values[0],
            median,
            max: values[n - 1],
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FigureStats {
    pub name: &'static str,
    pub ranks: usize,
    pub spread: Spread,
    /// One step of the printed figure, in its unit (bytes for memory).
    pub resolution: f64,
    pub is_bytes: bool,
    /// Ranks off the median by more than one print step.
    pub outliers: Vec<Rank>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseStats {
    pub phase: Phase,
    /// Ranks that reported the phase, and of them how many finished it.
    pub ranks: usize,
    pub completed: usize,
    /// Seconds between the first and the last rank finishing.
    pub end_skew_s: Option<f64>,
    pub duration_s: Option<Spread>,
    pub figures: Vec<FigureStats>,
    /// Ranks that finished well after the median (see `STRAGGLER_*`).
    pub stragglers: Vec<Rank>,
}

/// A rank is a straggler when it ends the phase this many seconds after the median…
pub const STRAGGLER_MIN_S: f64 = 2.0;
/// …and later than the median by this fraction of the median duration.
pub const STRAGGLER_FRACTION: f64 = 0.5;

pub fn phase_stats(run: &Run) -> Vec<PhaseStats> {
    let mut out = Vec::new();
    for phase in Phase::ALL {
        let spans: Vec<(&Rank, &crate::model::PhaseSpan)> = run
            .ranks
            .iter()
            .filter_map(|r| r.phase(phase).map(|s| (&r.rank, s)))
            .collect();
        if spans.is_empty() {
            continue;
        }
        // Engine processes report figures but are not counted among the ranks.
        let completed = spans
            .iter()
            .filter(|(r, s)| s.complete && !r.is_engine())
            .count();
        let ends: Vec<_> = spans
            .iter()
            .filter_map(|(r, s)| s.end.map(|e| (*r, e)))
            .collect();
        let end_skew_s = match (
            ends.iter().map(|e| e.1).min(),
            ends.iter().map(|e| e.1).max(),
        ) {
            (Some(a), Some(b)) => Some((b - a).num_milliseconds() as f64 / 1000.0),
            _ => None,
        };
        let mut durations: Vec<f64> = spans.iter().filter_map(|(_, s)| s.duration_s()).collect();
        let duration_s = Spread::of(&mut durations);
        let mut stragglers = Vec::new();
        if let Some(first) = run.start {
            let mut offsets: Vec<f64> = ends
                .iter()
                .map(|(_, e)| (*e - first).num_milliseconds() as f64 / 1000.0)
                .collect();
            if let Some(sp) = Spread::of(&mut offsets) {
                let slack = STRAGGLER_MIN_S.max(
                    duration_s
                        .as_ref()
                        .map_or(0.0, |d| d.median * STRAGGLER_FRACTION),
                );
                for (r, e) in &ends {
                    let off = (*e - first).num_milliseconds() as f64 / 1000.0;
                    if off - sp.median > slack {
                        stragglers.push((*r).clone());
                    }
                }
            }
        }
        let mut names: Vec<&'static str> = Vec::new();
        for (_, s) in &spans {
            for f in &s.figures {
                if !names.contains(&f.name) {
                    names.push(f.name);
                }
            }
        }
        let mut figures = Vec::new();
        for name in names {
            let vals: Vec<(&Rank, f64, f64, bool)> = spans
                .iter()
                .filter_map(|(r, s)| {
                    let f = s.figure(name)?;
                    let bytes = f.value.as_bytes().is_some();
                    Some((*r, f.value.as_f64()?, f.value.resolution() as f64, bytes))
                })
                .collect();
            let mut nums: Vec<f64> = vals.iter().map(|v| v.1).collect();
            let Some(spread) = Spread::of(&mut nums) else {
                continue;
            };
            let resolution = vals.iter().map(|v| v.2).fold(0.0, f64::max);
            let is_bytes = vals.iter().any(|v| v.3);
            // Durations have their own test (stragglers); a figure's outliers are memory
            // and counts off the median by more than the print resolution.
            let outliers = if name == "elapsed" {
                Vec::new()
            } else {
                vals.iter()
                    .filter(|v| (v.1 - spread.median).abs() > resolution.max(f64::EPSILON) * 1.01)
                    .map(|v| v.0.clone())
                    .collect()
            };
            figures.push(FigureStats {
                name,
                ranks: vals.len(),
                spread,
                resolution,
                is_bytes,
                outliers,
            });
        }
        out.push(PhaseStats {
            phase,
            ranks: spans.iter().filter(|(r, _)| !r.is_engine()).count(),
            completed,
            end_skew_s,
            duration_s,
            figures,
            stragglers,
        });
    }
    out
}
