//! One run, all ranks side by side: per phase, who reported it, how long it took, how far
//! apart the ranks finished, and which ranks stand out.

use crate::base::event::{FigureName, Rank};
use crate::base::units::Seconds;
use crate::model::{Phase, Run};

/// Smallest, median and largest of a set of values (the median of an even count is the mean
/// of the middle two).
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    /// The smallest value.
    pub min: f64,
    /// The median value.
    pub median: f64,
    /// The largest value.
    pub max: f64,
}

impl Spread {
    pub(crate) fn of(values: &mut [f64]) -> Option<Spread> {
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

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FigureStats {
    pub(crate) name: crate::base::event::FigureName,
    pub(crate) ranks: usize,
    pub(crate) spread: Spread,
    /// One step of the printed figure, in its unit (bytes for memory).
    pub(crate) resolution: f64,
    pub(crate) is_bytes: bool,
    /// Ranks off the median by more than one print step.
    pub(crate) outliers: Vec<Rank>,
}

/// One phase across the ranks: how long it took, how far apart the ranks ended, who was
/// late, what it reported.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseStats {
    /// Which phase.
    pub phase: Phase,
    /// Ranks that reported the phase, and of them how many finished it.
    pub(crate) ranks: usize,
    pub(crate) completed: usize,
    /// Seconds between the first and the last rank finishing.
    pub end_skew_s: Option<Seconds>,
    /// From the begin and end stamps, over the ranks that have both.
    pub duration_s: Option<Spread>,
    /// The durations printed on the end lines of the ranks with no begin stamp.
    pub printed_duration_s: Option<Spread>,
    /// Ranks that ended the phase with neither a begin stamp nor a printed duration, and
    /// the last of their end stamps.
    pub unknown_start: usize,
    /// The last end stamp of the `unknown_start` ranks.
    pub unknown_start_last_end: Option<chrono::NaiveDateTime>,
    pub(crate) figures: Vec<FigureStats>,
    /// Ranks that finished the phase later than the others by more than the stamps and
    /// clocks can explain (`Straggler`).
    pub stragglers: Vec<Rank>,
    /// How each of `stragglers` was late, in the same order.
    pub straggler_detail: Vec<Straggler>,
    /// Ranks whose end of the phase is stamped before its start, and by how many seconds:
    /// no duration is measured for them, and their end takes no part in the skew or the
    /// stragglers (their own start contradicts it).
    pub(crate) end_before_start: Vec<(Rank, Seconds)>,
}

/// A rank that ended a phase late: after the median end of the other ranks by more than
/// the uncertainty of the comparison, which is one step of the printed stamps (two
/// stamps of one instant differ by less than a step; at least `STRAGGLER_FLOOR_MS`) plus,
/// in a multi-node run, the clock uncertainty of the rank's node and of the others' (half
/// their offset intervals).
#[derive(Clone, Debug, PartialEq)]
pub struct Straggler {
    /// The late rank.
    pub rank: Rank,
    /// Seconds after the other ranks' median end.
    pub late_s: Seconds,
    /// Of which: seconds it began the phase after the others' median start (the time
    /// went before the phase's first line)…
    pub before_first_line_s: Seconds,
    /// …and seconds it ran longer inside the phase.
    pub inside_s: Seconds,
    /// What `late_s` had to exceed.
    pub uncertainty_s: Seconds,
}

impl Straggler {
    /// Where most of the time went.
    pub fn before_first_line(&self) -> bool {
        self.before_first_line_s >= self.inside_s
    }
}

/// Lateness under a second is never a straggler, even on millisecond stamps: ranks end
/// phases that no collective closes tens of milliseconds apart as a matter of course.
pub(crate) const STRAGGLER_FLOOR_MS: i64 = 1000;

/// The median of `sorted` without the element at `skip` (`sorted` holds at least two).
fn median_without(sorted: &[i64], skip: usize) -> f64 {
    let at = |j: usize| sorted[if j < skip { j } else { j + 1 }] as f64;
    let n = sorted.len() - 1;
    if n % 2 == 1 {
        at(n / 2)
    } else {
        (at(n / 2 - 1) + at(n / 2)) / 2.0
    }
}

/// Per rank, the median of the other ranks' values, in milliseconds.
fn others_median(values: &[(usize, i64)]) -> Vec<Option<f64>> {
    let n = values.iter().map(|v| v.0 + 1).max().unwrap_or(0);
    let mut out = vec![None; n];
    if values.len() < 2 {
        return out;
    }
    let mut sorted: Vec<(i64, usize)> = values.iter().map(|&(i, v)| (v, i)).collect();
    sorted.sort();
    let plain: Vec<i64> = sorted.iter().map(|x| x.0).collect();
    for (pos, &(_, i)) in sorted.iter().enumerate() {
        out[i] = Some(median_without(&plain, pos));
    }
    out
}

fn ms(t: chrono::NaiveDateTime) -> i64 {
    t.and_utc().timestamp_millis()
}

/// The stragglers of one phase. `spans[i]` is rank i's span; `clock_ms[i]` the half-width
/// of its node's clock offset (0 on the reference node and in one-node runs).
fn stragglers_of(spans: &[(&Rank, &crate::model::PhaseSpan)], clock_ms: &[i64]) -> Vec<Straggler> {
    let ends: Vec<(usize, i64)> = spans
        .iter()
        .enumerate()
        .filter_map(|(i, (_, s))| Some((i, ms(s.end?))))
        .collect();
    let starts: Vec<(usize, i64)> = spans
        .iter()
        .enumerate()
        .filter_map(|(i, (_, s))| Some((i, ms(s.start?))))
        .collect();
    let ref_end = others_median(&ends);
    let ref_start = others_median(&starts);
    let step_ms = spans
        .iter()
        .filter(|(_, s)| s.end.is_some())
        .map(|(_, s)| i64::from(s.end_step_ms))
        .max()
        .unwrap_or(STRAGGLER_FLOOR_MS)
        .max(STRAGGLER_FLOOR_MS);
    let widest = clock_ms.iter().copied().max().unwrap_or(0);
    let mut out = Vec::new();
    for &(i, end) in &ends {
        let Some(Some(reference)) = ref_end.get(i) else {
            continue;
        };
        let late = end as f64 - reference;
        let uncertainty = (step_ms + clock_ms[i] + widest) as f64;
        if late <= uncertainty {
            continue;
        }
        let began_late = match (spans[i].1.start, ref_start.get(i).copied().flatten()) {
            (Some(st), Some(r)) => (ms(st) as f64 - r).clamp(0.0, late),
            _ => 0.0,
        };
        out.push(Straggler {
            rank: spans[i].0.clone(),
            late_s: Seconds(late / 1000.0),
            before_first_line_s: Seconds(began_late / 1000.0),
            inside_s: Seconds((late - began_late) / 1000.0),
            uncertainty_s: Seconds(uncertainty / 1000.0),
        });
    }
    out
}

/// Each phase's statistics across the run's ranks, in start-up order.
pub fn phase_stats(run: &Run) -> Vec<PhaseStats> {
    let mut out = Vec::new();
    let clock_of = clock_uncertainty_ms(run);
    for phase in Phase::ALL {
        // Each span with its rank's clock uncertainty, looked up here: per phase and by
        // rank in a hash map, the lookups were a third of this at 65,536 ranks.
        let (all_spans, all_clock_ms): (Vec<(&Rank, &crate::model::PhaseSpan)>, Vec<i64>) =
            (run.ranks.iter().zip(&clock_of))
                .filter_map(|(r, &c)| r.phase(phase).map(|s| ((&r.rank, s), c)))
                .unzip();
        if all_spans.is_empty() {
            continue;
        }
        let end_before_start: Vec<(Rank, Seconds)> = all_spans
            .iter()
            .filter_map(|(r, s)| Some(((*r).clone(), Seconds(s.end_before_start_s()?))))
            .collect();
        // Ends and figures of the ranks whose stamps are in order; the others' figures
        // still count (they are not stamps).
        let (spans, clock_ms): (Vec<(&Rank, &crate::model::PhaseSpan)>, Vec<i64>) =
            (all_spans.iter().zip(&all_clock_ms))
                .filter(|((_, s), _)| s.end_before_start_s().is_none())
                .map(|(&span, &c)| (span, c))
                .unzip();
        // Engine processes report figures but are not counted among the ranks.
        let completed = all_spans
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
            (Some(a), Some(b)) => Some(Seconds::from_ms((b - a).num_milliseconds())),
            _ => None,
        };
        let mut durations: Vec<f64> = spans.iter().filter_map(|(_, s)| s.duration_s()).collect();
        let duration_s = Spread::of(&mut durations);
        let begin_unknown: Vec<&crate::model::PhaseSpan> = spans
            .iter()
            .map(|(_, s)| *s)
            .filter(|s| s.start.is_none() && s.end.is_some())
            .collect();
        let mut printed: Vec<f64> = begin_unknown
            .iter()
            .filter_map(|s| s.printed_elapsed_s())
            .collect();
        let printed_duration_s = Spread::of(&mut printed);
        let no_duration: Vec<_> = begin_unknown
            .iter()
            .filter(|s| s.printed_elapsed_s().is_none())
            .filter_map(|s| s.end)
            .collect();
        let straggler_detail = stragglers_of(&spans, &clock_ms);
        let stragglers = straggler_detail.iter().map(|s| s.rank.clone()).collect();
        let figures = figure_stats(&all_spans);
        out.push(PhaseStats {
            phase,
            ranks: all_spans.iter().filter(|(r, _)| !r.is_engine()).count(),
            completed,
            end_skew_s,
            duration_s,
            printed_duration_s,
            unknown_start: no_duration.len(),
            unknown_start_last_end: no_duration.iter().max().copied(),
            figures,
            stragglers,
            straggler_detail,
            end_before_start,
        });
    }
    out
}

/// Each rank's clock uncertainty in milliseconds: its node's offset's half-width, and the
/// whole offset when it was not applied.
fn clock_uncertainty_ms(run: &Run) -> Vec<i64> {
    // Raw stamps (`--no-clock-align`) are off by the whole offset.
    let of_node: foldhash::HashMap<&Rank, i64> = (run.nodes.iter())
        .flat_map(|n| {
            let ms = n.offset.as_ref().map_or(0, |o| {
                o.half_width_ms() + if o.applied { 0 } else { o.mid_ms().abs() }
            });
            n.ranks.iter().map(move |r| (r, ms))
        })
        .collect();
    (run.ranks.iter())
        .map(|r| of_node.get(&r.rank).copied().unwrap_or(0))
        .collect()
}

/// Each figure the phase's spans report, across ranks: its spread, print resolution and
/// the ranks off its median.
fn figure_stats(all_spans: &[(&Rank, &crate::model::PhaseSpan)]) -> Vec<FigureStats> {
    let (names, vals_of) = figure_values(all_spans);
    let mut figures = Vec::new();
    for (name, vals) in names.into_iter().zip(vals_of) {
        let mut nums: Vec<f64> = vals.iter().map(|v| v.1).collect();
        let Some(spread) = Spread::of(&mut nums) else {
            continue;
        };
        let resolution = vals.iter().map(|v| v.2).fold(0.0, f64::max);
        let is_bytes = vals.iter().any(|v| v.3);
        // Durations have their own test (stragglers); a figure's outliers are memory
        // and counts off the median by more than the print resolution.
        // A rank is off the median only where most ranks agree on it: of two ranks
        // that differ (or an even split) neither is the odd one out.
        let tolerance = resolution.max(f64::EPSILON) * 1.01;
        let near_median = vals
            .iter()
            .filter(|v| (v.1 - spread.median).abs() <= tolerance)
            .count();
        let outliers = if *name == "elapsed" || near_median * 2 <= vals.len() {
            Vec::new()
        } else {
            vals.iter()
                .filter(|v| (v.1 - spread.median).abs() > tolerance)
                .map(|v| v.0.clone())
                .collect()
        };
        figures.push(FigureStats {
            name: name.clone(),
            ranks: vals.len(),
            spread,
            resolution,
            is_bytes,
            outliers,
        });
    }
    figures
}

/// A figure's value on one rank: the value, its print resolution, whether it is bytes.
type FigureValue<'r> = (&'r Rank, f64, f64, bool);

/// The names of the figures the spans report, in the order they first come, and each
/// one's values: of each span, the first figure of that name, where it reads as a number.
/// One pass over the spans: a pass per name read every rank's span again, from memory
/// that a run of 65,536 ranks no longer holds in cache (a third of `phase_stats`).
fn figure_values<'r, 's>(
    all_spans: &[(&'r Rank, &'s crate::model::PhaseSpan)],
) -> (Vec<&'s FigureName>, Vec<Vec<FigureValue<'r>>>) {
    let value = |r: &'r Rank, f: &crate::model::Figure| {
        let bytes = f.value.as_bytes().is_some();
        Some((r, f.value.as_f64()?, f.value.resolution() as f64, bytes))
    };
    let mut names: Vec<&FigureName> = Vec::new();
    let mut vals_of: Vec<Vec<FigureValue>> = Vec::new();
    for (r, s) in all_spans {
        for (k, f) in s.figures.iter().enumerate() {
            // A span's later figure of a name it printed already is not its value.
            if s.figures[..k].iter().any(|g| g.name == f.name) {
                continue;
            }
            let j = names.iter().position(|n| **n == f.name).unwrap_or_else(|| {
                names.push(&f.name);
                vals_of.push(Vec::new());
                names.len() - 1
            });
            if let Some(vals) = vals_of.get_mut(j) {
                vals.extend(value(r, f));
            }
        }
    }
    // Two grammars' figures of one word (in other units or directions) are two names
    // that a span's figures are looked up by in words: each takes the first of either.
    let shared_word =
        (names.iter().enumerate()).any(|(i, a)| names[..i].iter().any(|b| a.name() == b.name()));
    if shared_word {
        vals_of = (names.iter())
            .map(|name| {
                (all_spans.iter())
                    .filter_map(|(r, s)| value(r, s.figure(name.name())?))
                    .collect()
            })
            .collect();
    }
    (names, vals_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_the_others() {
        // Ends 10, 20, 26 s: without 26 the median is 15, without 10 it is 23.
        let m = others_median(&[(0, 10_000), (1, 20_000), (2, 26_000)]);
        assert_eq!(m, vec![Some(23_000.0), Some(18_000.0), Some(15_000.0)]);
    }

    /// A figure of `name` (a built-in one, else declared in `unit`) of the count `v`.
    fn figure(name: &str, unit: &str, v: i64) -> crate::model::Figure {
        use crate::base::event::{FigureDef, FigureUnit, WorseWhen};
        let name = FigureName::builtin(name).unwrap_or_else(|| {
            FigureName::Declared(std::sync::Arc::new(FigureDef {
                name: name.to_string().into(),
                unit: FigureUnit::Named(unit.to_string()),
                worse: WorseWhen::More,
            }))
        });
        crate::model::Figure {
            name,
            value: crate::base::fields::FieldValue::Int(v),
            origin: crate::base::event::Origin { source: 0, line: 1 },
        }
    }

    fn span(figures: Vec<crate::model::Figure>) -> crate::model::PhaseSpan {
        crate::model::PhaseSpan {
            figures,
            ..crate::model::PhaseSpan::empty(Phase::KvCache)
        }
    }

    /// Each name's values as (rank's TP, value).
    fn seen(vals: &[FigureValue]) -> Vec<(u32, f64)> {
        (vals.iter())
            .map(|v| (v.0.get("TP").unwrap_or(u32::MAX), v.1))
            .collect()
    }

    #[test]
    fn figure_values_in_one_pass_are_those_looked_up_by_name() {
        let ranks: Vec<Rank> = (0..4).map(Rank::tp).collect();
        // Names first come in different spans and orders; rank 3 prints `tokens` twice: the
        // first counts, as a lookup by name finds it.
        let spans = [
            span(vec![figure("tokens", "", 10), figure("mem_usage", "", 7)]),
            span(vec![figure("pages", "blocks", 3)]),
            span(vec![figure("mem_usage", "", 8), figure("tokens", "", 11)]),
            span(vec![figure("tokens", "", 12), figure("tokens", "", 99)]),
        ];
        let all: Vec<(&Rank, &crate::model::PhaseSpan)> = ranks.iter().zip(&spans).collect();
        let (names, vals) = figure_values(&all);
        let words: Vec<&str> = names.iter().map(|n| n.name()).collect();
        assert_eq!(words, ["tokens", "mem_usage", "pages"]);
        assert_eq!(seen(&vals[0]), [(0, 10.0), (2, 11.0), (3, 12.0)]);
        assert_eq!(seen(&vals[1]), [(0, 7.0), (2, 8.0)]);
        assert_eq!(seen(&vals[2]), [(1, 3.0)]);
    }

    #[test]
    fn two_names_of_one_word_each_take_every_spans_first_figure_of_that_word() {
        // Two grammars' `pages`, in blocks (rank 0) and in slabs (rank 1): two names, and a
        // lookup by the word finds each span's first `pages` for both.
        let ranks: Vec<Rank> = (0..2).map(Rank::tp).collect();
        let spans = [
            span(vec![figure("pages", "blocks", 3)]),
            span(vec![
                figure("pages", "slabs", 4),
                figure("pages", "blocks", 5),
            ]),
        ];
        let all: Vec<(&Rank, &crate::model::PhaseSpan)> = ranks.iter().zip(&spans).collect();
        let (names, vals) = figure_values(&all);
        assert_eq!(names.len(), 2);
        assert_eq!(seen(&vals[0]), [(0, 3.0), (1, 4.0)]);
        assert_eq!(seen(&vals[1]), [(0, 3.0), (1, 4.0)]);
    }
}
