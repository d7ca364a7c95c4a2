//! The run's events as the scan gives them: one vector per log source.

use crate::base::event::Event;

/// Events by log source, `0[s]` being source `s`'s, in line order, as the scan gives
/// them. They stay apart until they are moved to their nodes: flattening them first (as
/// the run's one vector, grown by doubling) and then splitting that by node moved every
/// event's bytes once more, and held the flat vector beside the nodes' at the peak.
#[derive(Debug, Default)]
pub(super) struct BySource(pub(super) Vec<Vec<Event>>);

impl BySource {
    pub(super) fn iter(&self) -> impl Iterator<Item = &Event> {
        self.0.iter().flatten()
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Event> {
        self.0.iter_mut().flatten()
    }

    pub(super) fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    /// All events in one vector, in source then line order (`flatten_once`).
    pub(super) fn into_flat(self) -> Vec<Event> {
        flatten_once(self.0)
    }
}

/// Groups of events (by source) in one vector, in order: sized once (no slack, no
/// reallocation), each group's vector freed once its events are moved, a lone group taken
/// as it is. The groups are still all allocated when the vector is, and their freed
/// memory (small heap blocks) mostly stays with the process: used where the events are
/// already in the order wanted (one node; `run_from_bytes`).
pub(super) fn flatten_once(mut groups: Vec<Vec<Event>>) -> Vec<Event> {
    if groups.len() == 1 {
        return groups.pop().unwrap_or_default();
    }
    let mut all = Vec::with_capacity(groups.iter().map(Vec::len).sum());
    for evs in groups {
        all.extend(evs);
    }
    all
}

#[cfg(test)]
pub(in crate::session) mod tests {
    use super::*;
    use crate::base::event::Origin;

    pub(in crate::session) fn event(source: usize, line: u64) -> Event {
        Event {
            origin: Origin { source, line },
            ts: None,
            ts_step_ms: 1000,
            year_inferred: false,
            time_only: false,
            rank: None,
            pid: None,
            process: None,
            host: None,
            kind: "load_end".into(),
            grammar: "sglang".into(),
            fields: Default::default(),
            message: String::new(),
            extra: None,
        }
    }

    #[test]
    fn flattening_keeps_source_then_line_order_and_every_event() {
        let by = BySource(vec![
            vec![event(0, 3), event(0, 9)],
            vec![],
            vec![event(2, 1)],
        ]);
        assert_eq!(by.len(), 3);
        let order: Vec<(usize, u64)> = (by.iter())
            .map(|e| (e.origin.source, e.origin.line))
            .collect();
        let flat = by.into_flat();
        assert_eq!(order, [(0, 3), (0, 9), (2, 1)]);
        assert_eq!(
            flat.iter()
                .map(|e| (e.origin.source, e.origin.line))
                .collect::<Vec<_>>(),
            order
        );
        assert_eq!(flat.capacity(), 3, "sized once, no doubling slack");
    }
}
