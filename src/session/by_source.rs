//! The run's events as the scan gives them: one vector in source then line order.

use crate::base::event::Event;

/// Events of every log source in one vector, source by source, each source's in line
/// order (`origin.source` says whose). The scan appends each file's events as its batch
/// of files finishes: a vector per file, all held until the last file was scanned and
/// then joined, left the events' size resident twice at the peak (the per-file vectors'
/// freed small blocks stay with the process); one vector of this size is its own mapping,
/// grown in place (`mremap`) and given back whole.
#[derive(Debug, Default)]
pub(super) struct BySource(pub(super) Vec<Event>);

impl BySource {
    pub(super) fn iter(&self) -> impl Iterator<Item = &Event> {
        self.0.iter()
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Event> {
        self.0.iter_mut()
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// All events in one vector, in source then line order.
    pub(super) fn into_flat(self) -> Vec<Event> {
        self.0
    }
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
            writer: None,
            kind: "load_end".into(),
            grammar: "sglang".into(),
            fields: Default::default(),
            message: "".into(),
            extra: None,
        }
    }
}
