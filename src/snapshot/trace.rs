//! A trace entry (`device_traces[device][i]`) and how a trace-entry dict's fields are read
//! into one. Both snapshot decoders use it: the pickle reader, which decodes entries
//! while it reads (`direct_entry`), and the model's general path (`set_entry_field`). It
//! reads values through [`EntryValues`], which the reader implements, so the reader
//! depends on this module and not on the model that is built from it.

use std::collections::HashMap;

/// The values of a decoded pickle, as trace-entry fields read them. The error is the
/// found value's type name, for the caller's "expected X, found Y".
pub(crate) trait EntryValues {
    type Ref: Copy;
    /// An int (a bool counts, as in Python).
    fn int(&self, v: Self::Ref) -> Result<i64, &'static str>;
    fn str(&self, v: Self::Ref) -> Result<&str, &'static str>;
    /// The reference as stored, parked in an entry's `stack` until the model resolves it.
    fn raw(v: Self::Ref) -> u32;
}

/// Index into [`Snapshot::stacks`]; `StackId(0)` is always the empty stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StackId(pub u32);

/// What a trace entry records. An action this version does not know keeps its name in
/// the snapshot's [`TraceTables`], so an entry holds two bytes of action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A block allocated.
    Alloc,
    /// A block's free asked for (it may wait for a stream).
    FreeRequested,
    /// A block's free done.
    FreeCompleted,
    /// A segment reserved from the device (`cudaMalloc`).
    SegmentAlloc,
    /// A segment given back to the device.
    SegmentFree,
    /// Memory mapped into an expandable segment.
    SegmentMap,
    /// Memory unmapped from an expandable segment.
    SegmentUnmap,
    /// An allocation that failed: out of memory.
    Oom,
    /// The moment the snapshot was taken.
    Snapshot,
    /// An action this version does not know.
    Other(UnknownAction),
}

/// An action name this version does not know: index into [`TraceTables`]' names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnknownAction(pub(crate) u8);

/// A CUDA stream a trace entry ran on: index into [`TraceTables`]' streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StreamId(pub(crate) u16);

/// The values trace entries refer to by index rather than hold: unknown action names and
/// stream handles (a few of each in a real snapshot), each once, in order of first
/// appearance in the traces. Indices keep an entry at 32 bytes: a trace is hundreds of
/// thousands of entries (212,637 in `decode_heavy`), and every byte of an entry is 200 KiB
/// of fresh pages for the reader to touch.
#[derive(Clone, Default)]
pub struct TraceTables {
    names: Vec<Box<str>>,
    name_index: HashMap<Box<str>, u8>,
    streams: Vec<u64>,
    stream_index: HashMap<u64, u16>,
    /// The last stream looked up: consecutive entries nearly always share one.
    last_stream: Option<(u64, StreamId)>,
}

/// Debug and PartialEq on what the tables hold, not on their lookup maps.
impl std::fmt::Debug for TraceTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceTables")
            .field("names", &self.names)
            .field("streams", &self.streams)
            .finish()
    }
}

impl PartialEq for TraceTables {
    fn eq(&self, other: &Self) -> bool {
        self.names == other.names && self.streams == other.streams
    }
}

impl TraceTables {
    pub(crate) fn action_name(&self, a: UnknownAction) -> Option<&str> {
        self.names.get(a.0 as usize).map(|n| &**n)
    }

    /// Unknown action names, in order of first appearance.
    pub(crate) fn action_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.names.iter().map(|n| &**n)
    }

    pub(crate) fn stream(&self, id: StreamId) -> u64 {
        self.streams.get(id.0 as usize).copied().unwrap_or(0)
    }

    /// The stream a value names, added when new; `None` once 65,536 distinct streams are
    /// held (hostile input only: a process has a handful).
    #[inline]
    pub(crate) fn stream_id(&mut self, v: u64) -> Option<StreamId> {
        match self.last_stream {
            Some((last, id)) if last == v => Some(id),
            _ => self.stream_id_slow(v),
        }
    }

    fn stream_id_slow(&mut self, v: u64) -> Option<StreamId> {
        let id = match self.stream_index.get(&v) {
            Some(&i) => StreamId(i),
            None => {
                let i = u16::try_from(self.streams.len()).ok()?;
                self.streams.push(v);
                self.stream_index.insert(v, i);
                StreamId(i)
            }
        };
        self.last_stream = Some((v, id));
        Some(id)
    }

    /// The action a name stands for; `None` when the name is unknown and 256 unknown
    /// names are already held (PyTorch has ten actions in all).
    pub(crate) fn action(&mut self, s: &str) -> Option<Action> {
        Some(match s {
            "alloc" => Action::Alloc,
            "free_requested" => Action::FreeRequested,
            "free_completed" => Action::FreeCompleted,
            "segment_alloc" => Action::SegmentAlloc,
            "segment_free" => Action::SegmentFree,
            "segment_map" => Action::SegmentMap,
            "segment_unmap" => Action::SegmentUnmap,
            "oom" => Action::Oom,
            "snapshot" => Action::Snapshot,
            other => match self.name_index.get(other) {
                Some(&i) => Action::Other(UnknownAction(i)),
                None => {
                    let i = u8::try_from(self.names.len()).ok()?;
                    self.names.push(other.into());
                    self.name_index.insert(other.into(), i);
                    Action::Other(UnknownAction(i))
                }
            },
        })
    }

    /// Renumbers the tables in order of first appearance in `traces` (walked in order),
    /// rewriting the entries: the same snapshot then has the same indices whichever
    /// order its decoder met the entries in (the direct reader meets them as the pickle
    /// creates them, the general one as the trace lists hold them).
    pub(crate) fn canonicalize(&mut self, traces: &mut [&mut [Vec<TraceEntry>]]) {
        let mut stream_map: Vec<Option<u16>> = vec![None; self.streams.len()];
        let mut name_map: Vec<Option<u8>> = vec![None; self.names.len()];
        let (mut streams, mut names) = (Vec::new(), Vec::new());
        for t in traces.iter().flat_map(|g| g.iter()) {
            for e in t {
                if let Some(slot @ None) = stream_map.get_mut(e.stream.0 as usize) {
                    *slot = Some(streams.len() as u16);
                    streams.push(self.stream(e.stream));
                }
                if let Action::Other(u) = e.action {
                    if let (Some(slot @ None), Some(name)) =
                        (name_map.get_mut(u.0 as usize), self.names.get(u.0 as usize))
                    {
                        *slot = Some(names.len() as u8);
                        names.push(name.clone());
                    }
                }
            }
        }
        let identity = stream_map
            .iter()
            .enumerate()
            .all(|(i, m)| *m == Some(i as u16))
            && name_map
                .iter()
                .enumerate()
                .all(|(i, m)| *m == Some(i as u8));
        if identity {
            return;
        }
        for t in traces.iter_mut().flat_map(|g| g.iter_mut()) {
            for e in t {
                let stream = stream_map.get(e.stream.0 as usize).copied().flatten();
                e.stream = StreamId(stream.unwrap_or(0));
                if let Action::Other(u) = e.action {
                    let name = name_map.get(u.0 as usize).copied().flatten();
                    e.action = Action::Other(UnknownAction(name.unwrap_or(0)));
                }
            }
        }
        self.stream_index = streams
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, i as u16))
            .collect();
        self.name_index = (names.iter().enumerate())
            .map(|(i, n)| (n.clone(), i as u8))
            .collect();
        self.streams = streams;
        self.names = names;
        self.last_stream = None;
    }
}

/// One entry of `device_traces[device]`: 32 bytes (a test holds it to that). `oom`
/// entries' `device_free` is kept beside the traces (`Snapshot::device_free`).
#[derive(Debug, Clone)]
pub struct TraceEntry {
    /// The block's or segment's address.
    pub addr: u64,
    /// For `alloc`/`free_*`: the requested bytes (not the rounded block size); for
    /// segment actions: the segment bytes; for `oom`: the bytes asked for.
    pub size: u64,
    /// Microseconds since the Unix epoch (PyTorch's clock), for lining up with logs.
    pub time_us: i64,
    /// The stack that made the call.
    pub stack: StackId,
    pub(crate) stream: StreamId,
    /// What happened.
    pub action: Action,
}

impl TraceEntry {
    /// An entry before its fields are read: every field a trace dict may leave out at
    /// its default, `stack` as given. `stream` is the table's index 0 until read; an
    /// entry without a `stream` key gets stream 0's index from [`default_stream`].
    pub(crate) fn blank(stack: StackId) -> TraceEntry {
        TraceEntry {
            action: Action::Snapshot,
            addr: 0,
            size: 0,
            time_us: 0,
            stream: StreamId(0),
            stack,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum EntryField {
    Action,
    Addr,
    Size,
    Stream,
    TimeUs,
    DeviceFree,
    Frames,
    Ignored,
}

impl EntryField {
    /// The field a trace-entry dict key fills (`None`: the key is not a string, and
    /// is ignored like any other unknown key).
    pub(crate) fn of_key(key: Option<&str>) -> EntryField {
        match key {
            Some("action") => EntryField::Action,
            Some("addr") => EntryField::Addr,
            Some("size") => EntryField::Size,
            Some("stream") => EntryField::Stream,
            Some("time_us") => EntryField::TimeUs,
            Some("device_free") => EntryField::DeviceFree,
            Some("frames") => EntryField::Frames,
            _ => EntryField::Ignored,
        }
    }
}

/// A key layout the reader may decode straight into a [`TraceEntry`]: it names an
/// action and no field twice (a repeated field would be checked twice by the general
/// path, and only the last `frames` is kept here).
pub(crate) fn direct_entry_layout(layout: &[EntryField]) -> bool {
    let mut seen = 0u32;
    for &f in layout {
        if f == EntryField::Ignored {
            continue;
        }
        let bit = 1u32 << (f as u32);
        if seen & bit != 0 {
            return false;
        }
        seen |= bit;
    }
    seen & (1 << EntryField::Action as u32) != 0
}

/// Sets the field of `e` that `field` names from the value `v`, as both decoders do;
/// `frames` is left to the caller (the direct decoder parks the reference, the general
/// one resolves it). Returns `device_free` when that is the field, for the caller to
/// keep beside the entry. A value of the wrong type gives (expected, found) for the error.
#[inline]
pub(crate) fn set_entry_field<V: EntryValues>(
    p: &V,
    field: EntryField,
    v: V::Ref,
    e: &mut TraceEntry,
    tables: &mut TraceTables,
) -> Result<Option<u64>, (&'static str, &'static str)> {
    let int = |v: V::Ref| p.int(v).map_err(|found| ("int", found));
    let uint = |v: V::Ref| u64::try_from(int(v)?).map_err(|_| ("non-negative int", "negative int"));
    match field {
        EntryField::Action => match p.str(v) {
            Ok(s) => {
                e.action = tables.action(s).ok_or((
                    "a known action or one of 256 unknown names",
                    "yet another unknown action name",
                ))?
            }
            Err(found) => return Err(("str", found)),
        },
        EntryField::Addr => e.addr = uint(v)?,
        EntryField::Size => e.size = uint(v)?,
        EntryField::Stream => e.stream = tables.stream_id(uint(v)?).ok_or(TOO_MANY_STREAMS)?,
        EntryField::TimeUs => e.time_us = int(v)?,
        EntryField::DeviceFree => return Ok(Some(uint(v)?)),
        EntryField::Frames | EntryField::Ignored => {}
    }
    Ok(None)
}

/// Decodes one trace-entry dict from its values while the pickle is being read, when
/// every field has the type the general path (`Builder::entry_fields`) accepts; `None`
/// otherwise, and the dict is then kept as a dict for the general path to report on.
/// `stack` holds the raw reference of the `frames` value (or the empty stack) until
/// `Builder::traces` resolves it, so stacks are interned in the same order as always.
/// The second value is the entry's `device_free`, if it has one.
pub(crate) fn direct_entry<V: EntryValues>(
    p: &V,
    layout: &[EntryField],
    vals: impl Iterator<Item = V::Ref>,
    tables: &mut TraceTables,
) -> Option<(TraceEntry, Option<u64>)> {
    let mut e = TraceEntry::blank(StackId(UNRESOLVED_EMPTY));
    let mut device_free = None;
    let mut stream = false;
    for (&field, v) in layout.iter().zip(vals) {
        stream |= field == EntryField::Stream;
        if field == EntryField::Frames {
            e.stack = StackId(V::raw(v));
        } else if let Some(free) = set_entry_field(p, field, v, &mut e, tables).ok()? {
            device_free = Some(free);
        }
    }
    if !stream {
        e.stream = default_stream(tables).ok()?;
    }
    Some((e, device_free))
}

/// The stream of an entry without a `stream` key: stream 0, as PyTorch's default.
pub(crate) fn default_stream(
    tables: &mut TraceTables,
) -> Result<StreamId, (&'static str, &'static str)> {
    tables.stream_id(0).ok_or(TOO_MANY_STREAMS)
}

/// (expected, found) when a trace names more streams than an index tells apart.
const TOO_MANY_STREAMS: (&str, &str) = ("one of 65,536 streams", "yet another stream");

/// In a directly decoded entry without `frames`: no reference can take this value (it
/// is the memo's "no entry" marker), so it stands for the empty stack.
pub(crate) const UNRESOLVED_EMPTY: u32 = u32::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_32_bytes() {
        // The trace is nearly all of a snapshot's memory (212,637 entries in the
        // decode_heavy fixture); each byte here is 200 KiB of pages touched there.
        assert_eq!(std::mem::size_of::<TraceEntry>(), 32);
    }

    #[test]
    fn unknown_action_names_are_kept_once_each_and_counted_out() {
        let mut t = TraceTables::default();
        let a = t.action("segment_defrag");
        assert_eq!(t.action("alloc"), Some(Action::Alloc));
        assert_eq!(t.action("segment_defrag"), a);
        let Some(Action::Other(u)) = a else {
            panic!("an unknown name is Other: {a:?}")
        };
        assert_eq!(t.action_name(u), Some("segment_defrag"));
        for i in 1..=255 {
            assert!(t.action(&format!("n{i}")).is_some());
        }
        // 256 distinct names fill the index; one more is refused, not wrapped.
        assert_eq!(t.action("one_too_many"), None);
        assert_eq!(t.action_names().count(), 256);
        assert_eq!(t.action("n7"), t.action("n7"));
    }

    #[test]
    fn streams_are_numbered_in_order_of_first_appearance_and_renumbered_by_trace_order() {
        let mut t = TraceTables::default();
        let (a, b) = (t.stream_id(7).unwrap(), t.stream_id(0x7f00).unwrap());
        assert_eq!(
            (a, b, t.stream_id(7).unwrap()),
            (StreamId(0), StreamId(1), StreamId(0))
        );
        let entry = |s| TraceEntry {
            stream: s,
            ..TraceEntry::blank(StackId(0))
        };
        // The trace holds the second stream first: after canonicalize it is number 0.
        let mut traces = vec![vec![entry(b), entry(a), entry(b)]];
        t.canonicalize(&mut [&mut traces]);
        let got: Vec<u64> = traces[0].iter().map(|e| t.stream(e.stream)).collect();
        assert_eq!(got, vec![0x7f00, 7, 0x7f00]);
        assert_eq!(traces[0][0].stream, StreamId(0));
        assert_eq!(t.stream_id(7), Some(StreamId(1)));
    }
}
