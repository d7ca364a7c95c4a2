//! A trace entry (`device_traces[device][i]`) and how a trace-entry dict's fields are read
//! into one. Both snapshot decoders use it: the pickle reader, which decodes entries
//! while it reads (`direct_entry`), and the model's general path (`set_entry_field`). It
//! reads values through [`EntryValues`], which the reader implements, so the reader
//! depends on this module and not on the model that is built from it.

use std::sync::Arc;

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

/// What a trace entry records. Unknown actions keep their name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Oom,
    Snapshot,
    Other(Arc<str>),
}

impl Action {
    pub(crate) fn from_name(s: &str) -> Action {
        match s {
            "alloc" => Action::Alloc,
            "free_requested" => Action::FreeRequested,
            "free_completed" => Action::FreeCompleted,
            "segment_alloc" => Action::SegmentAlloc,
            "segment_free" => Action::SegmentFree,
            "segment_map" => Action::SegmentMap,
            "segment_unmap" => Action::SegmentUnmap,
            "oom" => Action::Oom,
            "snapshot" => Action::Snapshot,
            other => Action::Other(other.into()),
        }
    }
}

/// One entry of `device_traces[device]`.
#[derive(Debug, Clone)]
pub struct TraceEntry {
    pub action: Action,
    pub addr: u64,
    /// For `alloc`/`free_*`: the requested bytes (not the rounded block size); for
    /// segment actions: the segment bytes; for `oom`: the bytes asked for.
    pub size: u64,
    pub stream: u64,
    /// Microseconds since the Unix epoch (PyTorch's clock), for lining up with logs.
    pub time_us: i64,
    /// Only on `oom`: what the driver reported free.
    pub device_free: Option<u64>,
    pub stack: StackId,
}

impl TraceEntry {
    /// An entry before its fields are read: every field a trace dict may leave out at
    /// its default, `stack` as given.
    pub(crate) fn blank(stack: StackId) -> TraceEntry {
        TraceEntry {
            action: Action::Snapshot,
            addr: 0,
            size: 0,
            stream: 0,
            time_us: 0,
            device_free: None,
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
/// one resolves it). A value of the wrong type gives (expected, found) for the error.
#[inline]
pub(crate) fn set_entry_field<V: EntryValues>(
    p: &V,
    field: EntryField,
    v: V::Ref,
    e: &mut TraceEntry,
) -> Result<(), (&'static str, &'static str)> {
    let int = |v: V::Ref| p.int(v).map_err(|found| ("int", found));
    let uint = |v: V::Ref| u64::try_from(int(v)?).map_err(|_| ("non-negative int", "negative int"));
    match field {
        EntryField::Action => match p.str(v) {
            Ok(s) => e.action = Action::from_name(s),
            Err(found) => return Err(("str", found)),
        },
        EntryField::Addr => e.addr = uint(v)?,
        EntryField::Size => e.size = uint(v)?,
        EntryField::Stream => e.stream = uint(v)?,
        EntryField::TimeUs => e.time_us = int(v)?,
        EntryField::DeviceFree => e.device_free = Some(uint(v)?),
        EntryField::Frames | EntryField::Ignored => {}
    }
    Ok(())
}

/// Decodes one trace-entry dict from its values while the pickle is being read, when
/// every field has the type the general path (`Builder::entry_fields`) accepts; `None`
/// otherwise, and the dict is then kept as a dict for the general path to report on.
/// `stack` holds the raw reference of the `frames` value (or the empty stack) until
/// `Builder::traces` resolves it, so stacks are interned in the same order as always.
pub(crate) fn direct_entry<V: EntryValues>(
    p: &V,
    layout: &[EntryField],
    vals: impl Iterator<Item = V::Ref>,
) -> Option<TraceEntry> {
    let mut e = TraceEntry::blank(StackId(UNRESOLVED_EMPTY));
    for (&field, v) in layout.iter().zip(vals) {
        if field == EntryField::Frames {
            e.stack = StackId(V::raw(v));
        } else {
            set_entry_field(p, field, v, &mut e).ok()?;
        }
    }
    Some(e)
}

/// In a directly decoded entry without `frames`: no reference can take this value (it
/// is the memo's "no entry" marker), so it stands for the empty stack.
pub(crate) const UNRESOLVED_EMPTY: u32 = u32::MAX;
