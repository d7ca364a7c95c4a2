//! The phase the ranks had reached when a line outside them was printed, for many lines.
//!
//! A launcher's failure line (`RuntimeError` of an API server, `Worker … died`) fails in
//! the latest phase any rank's phase line had reached by then. Asked line by line with a
//! pass over every event, an API server that logs an error per request after its engine
//! died made `summary` quadratic: 50 files of 1,000 such lines took 2.3 s, and the time
//! grew with the square of the lines. [`PhaseAt`] reads the events once and answers each
//! line with two binary searches.

use std::collections::HashMap;

use chrono::NaiveDateTime;

use crate::base::event::Event;
use crate::base::event::Phase;
use crate::grammar::Knowledge;

/// The phases the events of a run reached, less those of the process asking (`own`: its
/// lines say nothing of the ranks' progress), ordered for [`PhaseAt::at`].
pub(crate) struct PhaseAt {
    /// By source, its phase lines in line order, each with the latest phase reached up
    /// to and including it.
    by_line: HashMap<usize, Vec<(u64, Phase)>>,
    /// The stamped phase lines of every source in stamp order, each with the latest phase
    /// reached by then and the latest reached by then in another source than that one's.
    by_stamp: Vec<(NaiveDateTime, Reached)>,
}

/// The latest phase reached up to a point of `by_stamp`, the source it was reached in,
/// and the latest phase any other source had reached by then.
#[derive(Clone, Copy)]
struct Reached {
    best: Phase,
    source: usize,
    elsewhere: Option<Phase>,
}

impl PhaseAt {
    pub(crate) fn new(events: &[Event], own: &[usize], know: &Knowledge) -> PhaseAt {
        // A line whose `then` began the next phase (`KV page pool: …` then cuda_graph) has
        // reached that phase, as the ranks' own outcomes read it.
        PhaseAt::by(events, own, |e| {
            know.phase_of(e).map(|(p, _)| p).max(know.then_of(e))
        })
    }

    /// As `new`, with the phase each event reached given by `reached`.
    fn by(events: &[Event], own: &[usize], reached: impl Fn(&Event) -> Option<Phase>) -> PhaseAt {
        let mut is_own = vec![false; events.len()];
        for &i in own {
            if let Some(x) = is_own.get_mut(i) {
                *x = true;
            }
        }
        let mut by_line: HashMap<usize, Vec<(u64, Phase)>> = HashMap::new();
        let mut stamped: Vec<(NaiveDateTime, usize, Phase)> = Vec::new();
        for (e, _) in events.iter().zip(is_own).filter(|(_, own)| !own) {
            let Some(phase) = reached(e) else { continue };
            by_line
                .entry(e.origin.source)
                .or_default()
                .push((e.origin.line, phase));
            if let Some(ts) = e.ts {
                stamped.push((ts, e.origin.source, phase));
            }
        }
        for lines in by_line.values_mut() {
            lines.sort_by_key(|&(line, _)| line);
            running_max(lines.iter_mut().map(|(_, p)| p));
        }
        stamped.sort_by_key(|&(ts, ..)| ts);
        let mut by_stamp = Vec::with_capacity(stamped.len());
        let mut so_far: Option<Reached> = None;
        for (ts, source, phase) in stamped {
            let next = match so_far {
                None => Reached {
                    best: phase,
                    source,
                    elsewhere: None,
                },
                Some(r) if phase > r.best => Reached {
                    best: phase,
                    source,
                    // The old best is elsewhere unless it was this source's.
                    elsewhere: if r.source == source {
                        r.elsewhere
                    } else {
                        Some(r.best)
                    },
                },
                Some(r) if source != r.source => Reached {
                    elsewhere: r.elsewhere.max(Some(phase)),
                    ..r
                },
                Some(r) => r,
            };
            so_far = Some(next);
            by_stamp.push((ts, next));
        }
        PhaseAt { by_line, by_stamp }
    }

    /// The phase the ranks were in when `line` was printed: the latest phase a phase line
    /// had reached by then (`launch` before any). Within `line`'s file by line order;
    /// across files by stamp, when both lines are stamped — an unstamped line of another
    /// file cannot be placed against it.
    pub(crate) fn at(&self, line: &Event) -> Phase {
        let source = line.origin.source;
        let same_file = self.by_line.get(&source).and_then(|lines| {
            let before = lines.partition_point(|&(l, _)| l < line.origin.line);
            before
                .checked_sub(1)
                .and_then(|i| lines.get(i))
                .map(|&(_, p)| p)
        });
        let other_files = line.ts.and_then(|ts| {
            let by_then = self.by_stamp.partition_point(|&(t, _)| t <= ts);
            let (_, r) = by_then.checked_sub(1).and_then(|i| self.by_stamp.get(i))?;
            if r.source == source {
                r.elsewhere
            } else {
                Some(r.best)
            }
        });
        same_file.max(other_files).unwrap_or(Phase::Launch)
    }
}

/// The phase of a line outside the ranks as [`PhaseAt::at`] reads it, with how it was
/// found (`ranks_at_line`, as JSON's `phase_from` says it); the index is built in `slot`
/// on the first line asked: most runs ask of no line.
pub(crate) fn ranks_at_line(
    slot: &mut Option<PhaseAt>,
    events: &[Event],
    own: &[usize],
    know: &Knowledge,
    line: &Event,
) -> (Phase, &'static str) {
    let index = slot.get_or_insert_with(|| PhaseAt::new(events, own, know));
    (index.at(line), "ranks_at_line")
}

/// Each phase becomes the latest of those up to it.
fn running_max<'a>(phases: impl Iterator<Item = &'a mut Phase>) {
    let mut latest: Option<Phase> = None;
    for p in phases {
        latest = latest.max(Some(*p));
        if let Some(l) = latest {
            *p = l;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// An event of `source` at `line`, stamped at second `second` when given, that reached
    /// `phase` (carried in its kind for the test's `reached`).
    fn at(source: usize, line: u64, second: Option<u32>, phase: Option<Phase>) -> Event {
        let mut e = crate::base::event::test_event(source, line, second);
        e.kind = phase.map_or("none", Phase::name).into();
        e
    }

    fn reached(e: &Event) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == e.kind.as_str())
    }

    /// The rule as it was first written, a pass over every event per line: the oracle.
    fn by_every_event(events: &[Event], own: &[usize], line: &Event) -> Phase {
        let before = |e: &Event| match (e.ts, line.ts) {
            _ if e.origin.source == line.origin.source => e.origin.line < line.origin.line,
            (Some(a), Some(b)) => a <= b,
            _ => false,
        };
        (events.iter().enumerate())
            .filter(|(i, e)| !own.contains(i) && before(e))
            .filter_map(|(_, e)| reached(e))
            .max()
            .unwrap_or(Phase::Launch)
    }

    #[test]
    fn by_hand_a_line_sees_its_own_files_earlier_lines_and_others_stamped_by_then() {
        let events = vec![
            // File 0: the launcher's (own) line 1 reached cuda_graph, which does not count.
            at(0, 1, Some(1), Some(Phase::CudaGraph)),
            at(0, 2, None, Some(Phase::WeightLoad)),
            at(0, 5, Some(2), None),
            // File 1: kv_cache at 10:00:03, unstamped cuda_graph after it.
            at(1, 1, Some(3), Some(Phase::KvCache)),
            at(1, 2, None, Some(Phase::CudaGraph)),
        ];
        let index = PhaseAt::by(&events, &[0], reached);
        // File 0's line 5 at 10:00:02: its own line 2 (weight_load); file 1's kv_cache
        // was printed at 10:00:03, after it; the unstamped cuda_graph cannot be placed.
        assert_eq!(index.at(&events[2]), Phase::WeightLoad);
        // The same line stamped 10:00:04 sees file 1's kv_cache.
        assert_eq!(index.at(&at(0, 5, Some(4), None)), Phase::KvCache);
        // An unstamped line of a file with no phase line before it: launch.
        assert_eq!(index.at(&at(2, 9, None, None)), Phase::Launch);
        // File 3 printed cuda_graph at 10:00:04 on line 2, after its line 1 stamped
        // 10:00:05 (two writers to one file): line 1 sees file 1's kv_cache of 10:00:03,
        // not its own later line, though that one is the latest phase by then.
        let more = [events, vec![at(3, 2, Some(4), Some(Phase::CudaGraph))]].concat();
        let index = PhaseAt::by(&more, &[0], reached);
        assert_eq!(index.at(&at(3, 1, Some(5), None)), Phase::KvCache);
        assert_eq!(index.at(&at(3, 3, Some(5), None)), Phase::CudaGraph);
        // A line of the file that reached the latest phase sees the others' latest: file
        // 2's dist_init, though file 1 had reached kv_cache before it.
        let two = [
            at(1, 2, Some(10), Some(Phase::KvCache)),
            at(2, 1, Some(11), Some(Phase::DistInit)),
        ];
        let index = PhaseAt::by(&two, &[], reached);
        assert_eq!(index.at(&at(1, 1, Some(12), None)), Phase::DistInit);
    }

    #[test]
    fn the_index_answers_as_a_pass_over_every_event_does() {
        // Eight files, stamps that go back and forth within a file, unstamped lines, ties,
        // and every fifth event the asking process's own; every line asked.
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut events = Vec::new();
        for i in 0..600u64 {
            let source = next(8) as usize;
            let second = (next(4) > 0).then(|| next(60) as u32);
            // Phases rare and mostly early, so the latest reached is not `ready` everywhere
            // after the first few lines.
            let phase = (next(6) == 0).then(|| Phase::ALL[next(6).min(next(6)) as usize]);
            events.push(at(source, i / 8 + 1, second, phase));
        }
        let own: Vec<usize> = (0..events.len()).filter(|i| i % 5 == 0).collect();
        let index = PhaseAt::by(&events, &own, reached);
        for line in &events {
            assert_eq!(
                index.at(line),
                by_every_event(&events, &own, line),
                "{:?}",
                line.origin
            );
        }
    }
}
