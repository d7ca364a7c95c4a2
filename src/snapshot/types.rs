//! The snapshot as typed data, built from the pickle arena.
//!
//! Frames and whole stacks are interned: a snapshot repeats the same few hundred stacks
//! across hundreds of thousands of trace entries, so an entry holds a `StackId` and the
//! strings exist once. Unknown keys are ignored (PyTorch adds keys between versions); a
//! known key holding the wrong type is an error naming the key's path.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::error::SnapshotError;
use super::pickle::{Dict, Direct, FastMap, Pickle, SeqKind, Value, ValueRef};
use super::trace::{default_stream, set_entry_field, EntryField, UNRESOLVED_EMPTY};
pub use super::trace::{Action, StackId, StreamId, TraceEntry, TraceTables, UnknownAction};

/// One Python or C++ frame. C++ frames (from `record_memory_history(stacks="all")`) have
/// `line == 0` and file names such as `??` or `CUDACachingAllocator.cpp`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The source file as recorded (`??` for an unnamed C++ frame).
    pub filename: Arc<str>,
    /// The line; 0 for a C++ frame.
    pub line: i64,
    /// The function.
    pub name: Arc<str>,
}

/// A block's state at the dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockState {
    /// Allocated and in use.
    ActiveAllocated,
    /// Freed, waiting for a stream to finish with it.
    ActivePendingFree,
    /// Free, cached by the allocator.
    Inactive,
    /// A state this version does not know.
    Other,
}

/// A block of a segment: an allocation, or free space cached.
#[derive(Debug, Clone)]
pub struct Block {
    pub(crate) address: u64,
    pub(crate) size: u64,
    pub(crate) requested_size: u64,
    pub(crate) state: BlockState,
    pub(crate) stack: StackId,
}

/// A segment the caching allocator reserved from the device.
#[derive(Debug, Clone)]
pub struct Segment {
    pub(crate) device: i64,
    pub(crate) address: u64,
    pub(crate) total_size: u64,
    pub(crate) allocated_size: u64,
    pub(crate) active_size: u64,
    pub(crate) requested_size: u64,
    pub(crate) stream: u64,
    /// `large` or `small` (the allocator's two pools of block sizes).
    pub segment_type: Arc<str>,
    /// `(0, 0)` is the default pool; anything else is a private pool (CUDA graphs).
    pub(crate) segment_pool_id: (i64, i64),
    pub(crate) is_expandable: bool,
    /// The stack that allocated the segment, when PyTorch recorded one (often empty).
    pub(crate) stack: StackId,
    pub(crate) blocks: Vec<Block>,
}

/// A PyTorch CUDA memory snapshot.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The device segments as dumped.
    pub segments: Vec<Segment>,
    /// One trace per device, in recording order.
    pub device_traces: Vec<Vec<TraceEntry>>,
    pub(crate) host_segments: Vec<Segment>,
    pub(crate) host_traces: Vec<Vec<TraceEntry>>,
    /// Rendered as JSON (nested at most [`JSON_DEPTH`] levels); informational only.
    pub allocator_settings: serde_json::Value,
    pub(crate) external_annotations: serde_json::Value,
    /// Every frame any stack names, once.
    pub frames: Vec<Frame>,
    /// Each stack is a list of indices into `frames`, innermost (allocation call) first.
    pub stacks: Vec<Vec<u32>>,
    /// The streams and unknown action names trace entries refer to by index.
    pub(crate) tables: TraceTables,
    /// `device_free` of the entries that have one (`oom` entries), by (device, index in
    /// `device_traces[device]`); and the same for `host_traces`.
    pub device_free: BTreeMap<(usize, usize), u64>,
    pub(crate) host_device_free: BTreeMap<(usize, usize), u64>,
}

impl Snapshot {
    /// The frames of a stack, innermost first.
    pub fn stack(&self, id: StackId) -> impl Iterator<Item = &Frame> + '_ {
        self.stacks
            .get(id.0 as usize)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
            .iter()
            .filter_map(|&f| self.frames.get(f as usize))
    }

    /// How many frames stack `id` has.
    pub fn stack_len(&self, id: StackId) -> usize {
        self.stacks.get(id.0 as usize).map_or(0, |v| v.len())
    }

    /// What the driver reported free at `device_traces[device][index]`, when the entry
    /// says (only `oom` entries do).
    pub(crate) fn device_free(&self, device: usize, index: usize) -> Option<u64> {
        self.device_free.get(&(device, index)).copied()
    }

    /// The CUDA stream handle of an entry.
    pub fn stream(&self, e: &TraceEntry) -> u64 {
        self.tables.stream(e.stream)
    }

    /// All device trace entries, device by device.
    pub fn trace_entries(&self) -> impl Iterator<Item = &TraceEntry> + '_ {
        self.device_traces.iter().flatten()
    }
}

/// How deep `allocator_settings`/`external_annotations` are rendered into JSON; deeper
/// values become the string `"…"` (the walk is recursive, so it must be bounded).
pub(crate) const JSON_DEPTH: usize = 16;

/// The fewest pickle bytes a block or a trace entry takes: a dict of a few keys (each
/// key a memo reference of 2 bytes or more) and their values, with its `MARK`, `SETITEMS`
/// and the reference that places it in its list. More elements than the file's bytes
/// allow at this rate can only come from one value referenced many times.
pub(crate) const MIN_BYTES_PER_ELEMENT: u64 = 8;

struct Builder<'p> {
    p: &'p Pickle,
    /// Blocks and trace entries still allowed (see [`MIN_BYTES_PER_ELEMENT`]).
    elements_left: u64,
    snap: Snapshot,
    strs: HashMap<String, Arc<str>>,
    frame_ids: HashMap<Frame, u32>,
    frame_by_node: FastMap<u32, u32>,
    stack_ids: HashMap<Vec<u32>, u32>,
    stack_by_storage: FastMap<(u32, u32), u32>,
    /// Stacks by the identity of their list: a memoised list shared by many entries is
    /// resolved once, however long it is and however it was filled (a list of more than
    /// 1,000 frames arrives in several batches and has no shared storage range).
    stack_by_node: FastMap<u32, u32>,
    /// The items range and stack the last lookup by range found.
    last_stack: Option<((u32, u32), u32)>,
    scratch: Vec<u32>,
    /// Field of each key, per dict key layout: trace entries share one layout, so key
    /// names are compared once instead of 212,637 times.
    entry_layouts: FastMap<(usize, usize), Vec<EntryField>>,
    /// The layout the previous entry used: consecutive entries almost always share it,
    /// so the map above is consulted only when the layout changes.
    last_layout: ((usize, usize), Vec<EntryField>),
    /// Trace entries the reader decoded directly (see `pickle::parse_direct`), each
    /// handed out once, and which ones were.
    direct: Vec<TraceEntry>,
    direct_taken: Vec<bool>,
    /// `device_free` of directly decoded entries, by index in `direct`.
    direct_device_free: FastMap<u32, u64>,
    /// `device_free` values of the trace list being built, by (device, index).
    pending_device_free: Vec<((usize, usize), u64)>,
    /// A directly decoded entry was reached twice: only the general path can build that.
    conflict: bool,
}

type Res<T> = Result<T, SnapshotError>;

fn shape(path: impl Into<String>, expected: &'static str, found: &'static str) -> SnapshotError {
    SnapshotError::Shape {
        path: path.into(),
        expected,
        found,
    }
}

/// Builds the model from a decoded pickle; sizes that sum past 64 bits are refused here
/// too (D19), so every public way to a `Snapshot` gives the same answer (the `pickle`
/// fuzz target compares this path with `read_bytes`, and found it did not).
pub fn from_pickle(p: &Pickle) -> Res<Snapshot> {
    build(p, Direct::default()).0.and_then(super::sizes_fit)
}

/// Builds the model from a pickle read by `pickle::parse_direct`, whose trace entries
/// are already decoded. `None` when the pickle uses a decoded entry in a way only the
/// general path can follow (the same dict reached twice, or read as a dict elsewhere):
/// the caller then reads the input again with `pickle::parse`.
pub(crate) fn from_direct(mut p: Pickle) -> Option<Res<Snapshot>> {
    if p.needs_general() {
        return None;
    }
    let direct = p.take_direct();
    let (res, conflict) = build(&p, direct);
    (!conflict && !p.touched_direct()).then_some(res)
}

fn build(p: &Pickle, direct: Direct) -> (Res<Snapshot>, bool) {
    let Direct {
        entries: direct,
        tables,
        device_free: direct_device_free,
    } = direct;
    let mut b = Builder {
        p,
        elements_left: p.input_bytes() / MIN_BYTES_PER_ELEMENT,
        snap: Snapshot {
            tables,
            ..Snapshot::default()
        },
        direct_device_free: direct_device_free.into_iter().collect(),
        pending_device_free: Vec::new(),
        strs: HashMap::new(),
        frame_ids: HashMap::new(),
        frame_by_node: FastMap::default(),
        stack_ids: HashMap::new(),
        stack_by_storage: FastMap::default(),
        stack_by_node: FastMap::default(),
        last_stack: None,
        scratch: Vec::new(),
        entry_layouts: FastMap::default(),
        last_layout: ((0, usize::MAX), Vec::new()),
        direct_taken: Vec::new(),
        direct,
        conflict: false,
    };
    b.snap.stacks.push(Vec::new());
    b.stack_ids.insert(Vec::new(), 0);
    let res = b.fill();
    let conflict = b.conflict;
    (res.map(|()| b.snap), conflict)
}

impl<'p> Builder<'p> {
    /// Counts one block or trace entry against the pickle's size.
    fn spend_element(&mut self, path: &dyn Fn() -> String) -> Res<()> {
        if self.elements_left == 0 {
            return Err(SnapshotError::TooManyElements {
                path: path(),
                limit: self.p.input_bytes() / MIN_BYTES_PER_ELEMENT,
                bytes: self.p.input_bytes(),
                per: MIN_BYTES_PER_ELEMENT,
            });
        }
        self.elements_left -= 1;
        Ok(())
    }

    fn fill(&mut self) -> Res<()> {
        let (p, b) = (self.p, self);

        let root = match p.get(p.root()) {
            Value::Dict(d) => d,
            other => return Err(shape("<top level>", "dict", other.type_name())),
        };
        let Some(segs) = p.dict_get(&root, "segments") else {
            return Err(SnapshotError::MissingKey {
                path: "segments".into(),
            });
        };
        b.snap.segments = b.segments(segs, "segments")?;
        if let Some(t) = p.dict_get(&root, "device_traces") {
            b.snap.device_traces = b.traces(t, "device_traces")?;
            b.snap.device_free = b.pending_device_free.drain(..).collect();
        }
        if let Some(s) = p.dict_get(&root, "host_segments") {
            b.snap.host_segments = b.segments(s, "host_segments")?;
        }
        if let Some(t) = p.dict_get(&root, "host_traces") {
            b.snap.host_traces = b.traces(t, "host_traces")?;
            b.snap.host_device_free = b.pending_device_free.drain(..).collect();
        }
        let snap = &mut b.snap;
        (snap.tables).canonicalize(&mut [&mut snap.device_traces, &mut snap.host_traces]);
        if let Some(v) = p.dict_get(&root, "allocator_settings") {
            b.snap.allocator_settings = to_json(p, v, JSON_DEPTH, &mut JSON_BUDGET.clone());
        }
        if let Some(v) = p.dict_get(&root, "external_annotations") {
            b.snap.external_annotations = to_json(p, v, JSON_DEPTH, &mut JSON_BUDGET.clone());
        }
        Ok(())
    }

    fn seq(&self, r: ValueRef, path: &dyn Fn() -> String) -> Res<&'p [ValueRef]> {
        match self.p.get(r) {
            Value::Seq(SeqKind::List | SeqKind::Tuple, s) => Ok(s.refs()),
            other => Err(shape(path(), "list", other.type_name())),
        }
    }

    fn dict(&self, r: ValueRef, path: &dyn Fn() -> String) -> Res<Dict<'p>> {
        match self.p.get(r) {
            Value::Dict(d) => Ok(d),
            other => Err(shape(path(), "dict", other.type_name())),
        }
    }

    fn int(&self, r: ValueRef, path: &dyn Fn() -> String) -> Res<i64> {
        match self.p.get(r) {
            Value::Int(i) => Ok(i),
            Value::Bool(b) => Ok(b as i64),
            other => Err(shape(path(), "int", other.type_name())),
        }
    }

    fn uint(&self, r: ValueRef, path: &dyn Fn() -> String) -> Res<u64> {
        let i = self.int(r, path)?;
        u64::try_from(i).map_err(|_| shape(path(), "non-negative int", "negative int"))
    }

    fn str(&mut self, r: ValueRef, path: &dyn Fn() -> String) -> Res<Arc<str>> {
        match self.p.get(r) {
            Value::Str(s) => Ok(self.intern(s)),
            other => Err(shape(path(), "str", other.type_name())),
        }
    }

    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.strs.get(s) {
            return a.clone();
        }
        let a: Arc<str> = s.into();
        self.strs.insert(s.to_owned(), a.clone());
        a
    }

    fn segments(&mut self, r: ValueRef, base: &str) -> Res<Vec<Segment>> {
        let list = self.seq(r, &|| base.to_owned())?;
        let mut out = Vec::with_capacity(list.len());
        for (i, &sr) in list.iter().enumerate() {
            let path = |k: &str| format!("{base}[{i}].{k}");
            let d = self.dict(sr, &|| format!("{base}[{i}]"))?;
            let mut seg = Segment {
                device: 0,
                address: 0,
                total_size: 0,
                allocated_size: 0,
                active_size: 0,
                requested_size: 0,
                stream: 0,
                segment_type: self.intern(""),
                segment_pool_id: (0, 0),
                is_expandable: false,
                stack: StackId(0),
                blocks: Vec::new(),
            };
            for (k, v) in d.iter() {
                let Value::Str(key) = self.p.get(k) else {
                    continue;
                };
                let p = || path(key);
                match key {
                    "device" => seg.device = self.int(v, &p)?,
                    "address" => seg.address = self.uint(v, &p)?,
                    "total_size" => seg.total_size = self.uint(v, &p)?,
                    "allocated_size" => seg.allocated_size = self.uint(v, &p)?,
                    "active_size" => seg.active_size = self.uint(v, &p)?,
                    "requested_size" => seg.requested_size = self.uint(v, &p)?,
                    "stream" => seg.stream = self.uint(v, &p)?,
                    "segment_type" => seg.segment_type = self.str(v, &p)?,
                    "segment_pool_id" => {
                        let t = self.seq(v, &p)?;
                        let a = t.first().map(|&x| self.int(x, &p)).transpose()?;
                        let b = t.get(1).map(|&x| self.int(x, &p)).transpose()?;
                        seg.segment_pool_id = (a.unwrap_or(0), b.unwrap_or(0));
                    }
                    "is_expandable" => {
                        seg.is_expandable = match self.p.get(v) {
                            Value::Bool(b) => b,
                            Value::Int(i) => i != 0,
                            other => return Err(shape(p(), "bool", other.type_name())),
                        }
                    }
                    "frames" => seg.stack = self.stack(v, &p)?,
                    "blocks" => {
                        let bl = self.seq(v, &p)?;
                        seg.blocks.reserve(bl.len());
                        for (j, &br) in bl.iter().enumerate() {
                            let path = || format!("{base}[{i}].blocks[{j}]");
                            self.spend_element(&path)?;
                            let blk = self.block(br, &path)?;
                            seg.blocks.push(blk);
                        }
                    }
                    _ => {}
                }
            }
            out.push(seg);
        }
        Ok(out)
    }

    fn block(&mut self, r: ValueRef, base: &dyn Fn() -> String) -> Res<Block> {
        let d = self.dict(r, base)?;
        let mut b = Block {
            address: 0,
            size: 0,
            requested_size: 0,
            state: BlockState::Other,
            stack: StackId(0),
        };
        for (k, v) in d.iter() {
            let Value::Str(key) = self.p.get(k) else {
                continue;
            };
            let p = || format!("{}.{key}", base());
            match key {
                "address" => b.address = self.uint(v, &p)?,
                "size" => b.size = self.uint(v, &p)?,
                "requested_size" => b.requested_size = self.uint(v, &p)?,
                "state" => {
                    b.state = match self.p.get(v) {
                        Value::Str("active_allocated") => BlockState::ActiveAllocated,
                        Value::Str("active_pending_free") => BlockState::ActivePendingFree,
                        Value::Str("inactive") => BlockState::Inactive,
                        Value::Str(_) => BlockState::Other,
                        other => return Err(shape(p(), "str", other.type_name())),
                    }
                }
                "frames" => b.stack = self.stack(v, &p)?,
                _ => {}
            }
        }
        Ok(b)
    }

    fn traces(&mut self, r: ValueRef, base: &str) -> Res<Vec<Vec<TraceEntry>>> {
        let devs = self.seq(r, &|| base.to_owned())?;
        let mut out = Vec::with_capacity(devs.len());
        for (dev, &tr) in devs.iter().enumerate() {
            let entries = self.seq(tr, &|| format!("{base}[{dev}]"))?;
            let path = |i: usize| move || format!("{base}[{dev}][{i}]");
            // The usual case: this list holds every directly decoded entry, in order, so
            // the reader's vector becomes the trace as it is.
            if self.holds_all_direct(entries) {
                let mut v = std::mem::take(&mut self.direct);
                self.direct_taken = vec![true; v.len()];
                for (i, e) in v.iter_mut().enumerate() {
                    e.stack = self.direct_stack(e.stack, &path(i))?;
                }
                let free = std::mem::take(&mut self.direct_device_free);
                (self.pending_device_free)
                    .extend(free.into_iter().map(|(k, f)| ((dev, k as usize), f)));
                out.push(v);
                continue;
            }
            let mut v = Vec::with_capacity(entries.len());
            for (i, &er) in entries.iter().enumerate() {
                self.spend_element(&path(i))?;
                let free = match self.p.direct_index(er) {
                    Some(k) => {
                        let Some(mut e) = self.take_direct(k) else {
                            self.conflict = true;
                            return Err(SnapshotError::MissingKey { path: path(i)() });
                        };
                        e.stack = self.direct_stack(e.stack, &path(i))?;
                        v.push(e);
                        self.direct_device_free.get(&k).copied()
                    }
                    None => {
                        let (e, free) = self.entry(er, &path(i))?;
                        v.push(e);
                        free
                    }
                };
                if let Some(f) = free {
                    self.pending_device_free.push(((dev, i), f));
                }
            }
            out.push(v);
        }
        Ok(out)
    }

    fn holds_all_direct(&self, entries: &[ValueRef]) -> bool {
        !self.direct.is_empty()
            && self.direct_taken.is_empty()
            && entries.len() == self.direct.len()
            && entries
                .iter()
                .enumerate()
                .all(|(i, &r)| self.p.direct_index(r) == Some(i as u32))
    }

    /// A copy of directly decoded entry `k`, once; `None` the second time.
    fn take_direct(&mut self, k: u32) -> Option<TraceEntry> {
        let k = k as usize;
        if self.direct_taken.len() < self.direct.len() {
            self.direct_taken.resize(self.direct.len(), false);
        }
        let e = self.direct.get(k)?;
        let seen = self.direct_taken.get_mut(k)?;
        if std::mem::replace(seen, true) {
            return None;
        }
        Some(e.clone())
    }

    /// The stack of a directly decoded entry, from the `frames` reference it carries.
    fn direct_stack(&mut self, raw: StackId, entry: &dyn Fn() -> String) -> Res<StackId> {
        if raw.0 == UNRESOLVED_EMPTY {
            return Ok(StackId(0));
        }
        self.stack(ValueRef::from_raw(raw.0), &|| format!("{}.frames", entry()))
    }

    /// A trace entry read from its dict, and its `device_free` if it has one.
    fn entry(&mut self, r: ValueRef, base: &dyn Fn() -> String) -> Res<(TraceEntry, Option<u64>)> {
        let d = self.dict(r, base)?;
        let mut e = TraceEntry::blank(StackId(0));
        let id = d.layout_id();
        if self.last_layout.0 != id || self.last_layout.1.len() != d.len() {
            let layout = match self.entry_layouts.get(&id) {
                Some(l) => l.clone(),
                None => {
                    let l: Vec<EntryField> = d
                        .iter()
                        .map(|(k, _)| EntryField::of_key(self.p.get(k).as_str()))
                        .collect();
                    self.entry_layouts.insert(id, l.clone());
                    l
                }
            };
            self.last_layout = (id, layout);
        }
        let layout = std::mem::take(&mut self.last_layout.1);
        let res = self.entry_fields(&d, &layout, &mut e, base);
        self.last_layout.1 = layout;
        let free = res?;
        Ok((e, free))
    }

    fn entry_fields(
        &mut self,
        d: &Dict<'p>,
        layout: &[EntryField],
        e: &mut TraceEntry,
        base: &dyn Fn() -> String,
    ) -> Res<Option<u64>> {
        let (mut has_action, mut has_stream, mut device_free) = (false, false, None);
        for (&field, (k, v)) in layout.iter().zip(d.iter()) {
            let p = || match self.p.get(k) {
                Value::Str(key) => format!("{}.{key}", base()),
                _ => base(),
            };
            match field {
                EntryField::Frames => e.stack = self.stack(v, &p)?,
                _ => {
                    let free = set_entry_field(self.p, field, v, e, &mut self.snap.tables)
                        .map_err(|(expected, found)| shape(p(), expected, found))?;
                    device_free = free.or(device_free);
                    has_action |= field == EntryField::Action;
                    has_stream |= field == EntryField::Stream;
                }
            }
        }
        if !has_action {
            return Err(SnapshotError::MissingKey {
                path: format!("{}.action", base()),
            });
        }
        if !has_stream {
            e.stream = default_stream(&mut self.snap.tables)
                .map_err(|(expected, found)| shape(base(), expected, found))?;
        }
        Ok(device_free)
    }

    fn stack(&mut self, r: ValueRef, path: &dyn Fn() -> String) -> Res<StackId> {
        // Equal stacks that are not the same list usually share one items range in the
        // arena, so a list with a range is cached on that alone: a fresh list per entry
        // (142k in `decode_heavy`) would fill a map by node for no gain. The entries of a
        // trace mostly repeat the previous entry's stack, which is checked first.
        let storage = self.p.seq_storage_key(r);
        let node = self.p.node_id(r);
        if let Some(key) = storage {
            if let Some((last, id)) = self.last_stack {
                if last == key {
                    return Ok(StackId(id));
                }
            }
            if let Some(&id) = self.stack_by_storage.get(&key) {
                self.last_stack = Some((key, id));
                return Ok(StackId(id));
            }
        } else if let Some(id) = node.and_then(|n| self.stack_by_node.get(&n)) {
            return Ok(StackId(*id));
        }
        let list = self.seq(r, path)?;
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        for (i, &fr) in list.iter().enumerate() {
            match self.frame(fr, &|| format!("{}[{i}]", path())) {
                Ok(f) => ids.push(f),
                Err(e) => {
                    self.scratch = ids;
                    return Err(e);
                }
            }
        }
        let id = match self.stack_ids.get(&ids) {
            Some(&id) => id,
            None => {
                let id = self.snap.stacks.len() as u32;
                self.snap.stacks.push(ids.clone());
                self.stack_ids.insert(ids.clone(), id);
                id
            }
        };
        self.scratch = ids;
        match (storage, node) {
            (Some(key), _) => {
                self.stack_by_storage.insert(key, id);
                self.last_stack = Some((key, id));
            }
            (None, Some(n)) => {
                self.stack_by_node.insert(n, id);
            }
            (None, None) => {}
        }
        Ok(StackId(id))
    }

    fn frame(&mut self, r: ValueRef, path: &dyn Fn() -> String) -> Res<u32> {
        let node = self.p.node_id(r);
        if let Some(n) = node {
            if let Some(&id) = self.frame_by_node.get(&n) {
                return Ok(id);
            }
        }
        let d = self.dict(r, path)?;
        let mut f = Frame {
            filename: self.intern(""),
            line: 0,
            name: self.intern(""),
        };
        for (k, v) in d.iter() {
            let Value::Str(key) = self.p.get(k) else {
                continue;
            };
            let p = || format!("{}.{key}", path());
            match key {
                "filename" => f.filename = self.str(v, &p)?,
                "name" => f.name = self.str(v, &p)?,
                "line" => f.line = self.int(v, &p)?,
                _ => {}
            }
        }
        let id = match self.frame_ids.get(&f) {
            Some(&id) => id,
            None => {
                let id = self.snap.frames.len() as u32;
                self.snap.frames.push(f.clone());
                self.frame_ids.insert(f, id);
                id
            }
        };
        if let Some(n) = node {
            self.frame_by_node.insert(n, id);
        }
        Ok(id)
    }
}

/// How many values one JSON rendering may visit: shared references can make a small
/// pickle describe an exponentially large tree, so depth alone is not a bound.
pub(crate) const JSON_BUDGET: usize = 200_000;

/// Renders a value as JSON, at most `depth` levels deep and `budget` values in all
/// (cycles and shared references are possible in a pickle; the bounds keep this finite).
pub(crate) fn to_json(
    p: &Pickle,
    r: ValueRef,
    depth: usize,
    budget: &mut usize,
) -> serde_json::Value {
    use serde_json::Value as J;
    if depth == 0 || *budget == 0 {
        return J::String("…".into());
    }
    *budget -= 1;
    match p.get(r) {
        Value::None => J::Null,
        Value::Bool(b) => J::Bool(b),
        Value::Int(i) => J::from(i),
        Value::BigInt(b) => J::String(format!("<int of {} bytes>", b.len())),
        Value::Float(f) => serde_json::Number::from_f64(f).map_or(J::Null, J::Number),
        Value::Str(s) => J::String(s.to_owned()),
        Value::Bytes(b) => J::String(format!("<{} bytes>", b.len())),
        Value::Seq(_, s) => J::Array(
            s.refs()
                .iter()
                .map(|&x| to_json(p, x, depth - 1, budget))
                .collect(),
        ),
        Value::Dict(d) => {
            let mut m = serde_json::Map::new();
            for (k, v) in d.iter() {
                let key = match p.get(k) {
                    Value::Str(s) => s.to_owned(),
                    Value::Int(i) => i.to_string(),
                    other => format!("<{}>", other.type_name()),
                };
                m.insert(key, to_json(p, v, depth - 1, budget));
            }
            J::Object(m)
        }
    }
}
