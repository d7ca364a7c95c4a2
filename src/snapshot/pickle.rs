//! A reader for the pickle subset that `torch.cuda.memory._dump_snapshot()` writes.
//!
//! Hand-written rather than serde-pickle: serde-pickle 1.2 stops on every real snapshot
//! with `Syntax(Recursive)` (it removes a memo entry while visiting it, and snapshots share
//! memoised frames and strings heavily); with `replace_recursive_structures` it takes 7 s on
//! the 23 MB `decode_heavy` fixture and replaces shared values with `None`. Here values live
//! in an arena and the memo holds indices into it, so a frame dict referenced a million
//! times is stored once and costs four bytes per reference.
//!
//! Safety rules this module keeps:
//! - no opcode that names or calls Python code is executed (`GLOBAL`, `REDUCE`, `BUILD`, …
//!   are errors carrying the opcode and byte offset; the snapshots never contain them);
//! - the reader is a stack machine, never recursive, so 100,000 nested lists are just a
//!   long stack; the arena may even contain cycles (a list appended to itself), so every
//!   walk over it must be iterative or depth-limited;
//! - length prefixes are checked against the bytes that are actually left before anything
//!   is allocated or read;
//! - memo keys from `BINPUT`/`LONG_BINPUT` are untrusted: a sparse key goes to a map, it
//!   never sizes a vector.
//!
//! Memory: containers store their first batch of items as a range in one shared `u32`
//! vector, and identical small batches (the same call stack, the same dict keys) share one
//! range; ints that fit 31 bits live inside the reference itself; equal strings are
//! stored once. On `decode_heavy` this keeps the arena well under the file size.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Read;

use super::pages;
use super::trace::{
    direct_entry, direct_entry_layout, EntryField, EntryValues, TraceEntry, TraceTables,
};

/// What went wrong, with the byte offset of the opcode (or length field) at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PickleError {
    #[error("empty input (0 bytes): not a pickle")]
    Empty,
    #[error("not a pickle of protocol 2-5: byte 0 is 0x{found:02x}, expected PROTO (0x80)")]
    BadMagic { found: u8 },
    #[error("unsupported pickle protocol {protocol} at byte {offset} (2-5 are read)")]
    BadProtocol { protocol: u8, offset: u64 },
    #[error("input ends at byte {offset} inside {what}")]
    Truncated { offset: u64, what: &'static str },
    #[error("input ends at byte {offset} without a STOP opcode")]
    NoStop { offset: u64 },
    #[error(
        "opcode {name} at byte {offset} would run Python code; snapshots are read as data only"
    )]
    Forbidden { name: &'static str, offset: u64 },
    #[error("opcode {name} at byte {offset} is not supported by this reader")]
    Unsupported { name: &'static str, offset: u64 },
    #[error("unknown opcode 0x{op:02x} at byte {offset}")]
    UnknownOpcode { op: u8, offset: u64 },
    #[error("length {len} at byte {offset} exceeds the {remaining} bytes left in the input")]
    LengthTooLarge {
        len: u64,
        remaining: u64,
        offset: u64,
    },
    #[error("{name} at byte {offset}: {why}")]
    Malformed {
        name: &'static str,
        offset: u64,
        why: &'static str,
    },
    #[error("memo key {key} read at byte {offset} was never stored")]
    MemoMissing { key: u64, offset: u64 },
    #[error("string at byte {offset} is not valid UTF-8")]
    Utf8 { offset: u64 },
    #[error("input at byte {offset} exceeds this reader's 4 GiB arena limits")]
    TooLarge { offset: u64 },
    #[error("read error at byte {offset}: {message}")]
    Io { offset: u64, message: String },
}

type R<T> = Result<T, PickleError>;

/// A reference to a value: either an arena node index or, with the top bit set, a small
/// int held inline (31-bit two's complement). Most ints in a snapshot (sizes, lines,
/// streams) fit, which saves a 16-byte node each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueRef(u32);

const INLINE: u32 = 1 << 31;
/// With the top bit clear and this one set, a reference is an index into `Pickle::wide`:
/// ints wider than 31 bits (the 425k addresses and timestamps of `decode_heavy`) take
/// 8 bytes there instead of a 16-byte node. Node indices stay below this bit.
const WIDE: u32 = 1 << 30;
const INLINE_MIN: i64 = -(1 << 30);
const INLINE_MAX: i64 = (1 << 30) - 1;
const MEMO_HOLE: u32 = u32::MAX;

impl ValueRef {
    fn int(v: i64) -> Option<ValueRef> {
        // -1 would encode as u32::MAX, which the memo uses for "no entry".
        if (INLINE_MIN..=INLINE_MAX).contains(&v) && v != -1 {
            Some(ValueRef(INLINE | (v as u32 & !INLINE)))
        } else {
            None
        }
    }
    /// The reference as stored (see `trace::direct_entry`, which parks one in a
    /// `StackId` until the model resolves it).
    pub(crate) fn raw(self) -> u32 {
        self.0
    }
    pub(crate) fn from_raw(raw: u32) -> ValueRef {
        ValueRef(raw)
    }
    fn inline_int(self) -> Option<i64> {
        if self.0 & INLINE != 0 {
            // Sign-extend the 31-bit payload.
            Some(((self.0 << 1) as i32 >> 1) as i64)
        } else {
            None
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Node {
    None,
    Bool(bool),
    Float(f64),
    /// Ints too wide for i64 (LONG1/LONG4): little-endian two's complement in `bytes`.
    BigInt {
        start: u32,
        len: u32,
    },
    Str {
        start: u32,
        len: u32,
    },
    Bytes {
        start: u32,
        len: u32,
    },
    /// Items in `items[start..start+len]`; `Big` when filled by more than one batch.
    Seq {
        kind: SeqKind,
        start: u32,
        len: u32,
    },
    BigSeq {
        kind: SeqKind,
        idx: u32,
    },
    /// Keys in `items[keys..keys+len]` (shared between dicts with the same key batch),
    /// values in `items[vals..vals+len]`.
    Dict {
        keys: u32,
        vals: u32,
        len: u32,
    },
    BigDict {
        idx: u32,
    },
    /// A trace-entry dict decoded straight into `Pickle::direct[idx]`.
    Direct {
        idx: u32,
    },
}

/// Container flavour; sets are kept as sequences because snapshots never hold them and a
/// reader has no use for set semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqKind {
    List,
    Tuple,
    Set,
}

/// A decoded value borrowed from a [`Pickle`].
#[derive(Clone, Copy, Debug)]
pub enum Value<'a> {
    None,
    Bool(bool),
    Int(i64),
    /// An int wider than 64 bits, as little-endian two's complement bytes.
    BigInt(&'a [u8]),
    Float(f64),
    Str(&'a str),
    Bytes(&'a [u8]),
    Seq(SeqKind, Seq<'a>),
    Dict(Dict<'a>),
}

impl<'a> Value<'a> {
    /// The text of a `str`; `None` for any other type.
    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A short name for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::BigInt(_) => "int past 64 bits",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::Seq(SeqKind::List, _) => "list",
            Value::Seq(SeqKind::Tuple, _) => "tuple",
            Value::Seq(SeqKind::Set, _) => "set",
            Value::Dict(_) => "dict",
        }
    }
}

/// The items of a list, tuple or set.
#[derive(Clone, Copy, Debug)]
pub struct Seq<'a> {
    pub(crate) items: &'a [ValueRef],
}

impl<'a> Seq<'a> {
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn refs(&self) -> &'a [ValueRef] {
        self.items
    }
}

/// The entries of a dict, in insertion order (later duplicates are kept; `get` returns the
/// last, as Python would).
#[derive(Clone, Copy, Debug)]
pub struct Dict<'a> {
    inner: DictInner<'a>,
}

#[derive(Clone, Copy, Debug)]
enum DictInner<'a> {
    Split {
        keys: &'a [ValueRef],
        vals: &'a [ValueRef],
    },
    Pairs(&'a [(ValueRef, ValueRef)]),
}

impl<'a> Dict<'a> {
    pub fn len(&self) -> usize {
        match self.inner {
            DictInner::Split { keys, .. } => keys.len(),
            DictInner::Pairs(p) => p.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Equal for two dicts whose keys are stored in the same place (dicts filled with an
    /// identical key batch share it), so callers can resolve key names once per layout.
    pub fn layout_id(&self) -> (usize, usize) {
        match self.inner {
            DictInner::Split { keys, .. } => (keys.as_ptr() as usize, keys.len()),
            DictInner::Pairs(p) => (p.as_ptr() as usize, usize::MAX),
        }
    }

    pub fn pair(&self, i: usize) -> Option<(ValueRef, ValueRef)> {
        match self.inner {
            DictInner::Split { keys, vals } => Some((*keys.get(i)?, *vals.get(i)?)),
            DictInner::Pairs(p) => p.get(i).copied(),
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = (ValueRef, ValueRef)> + 'a {
        let d = *self;
        (0..d.len()).filter_map(move |i| d.pair(i))
    }
}

/// A decoded pickle: an arena of values and the root reference.
#[derive(Debug, Default)]
pub struct Pickle {
    nodes: Vec<Node>,
    /// Ints that do not fit inline (see `WIDE`).
    wide: Vec<i64>,
    items: Vec<ValueRef>,
    big_seqs: Vec<Vec<ValueRef>>,
    big_dicts: Vec<Vec<(ValueRef, ValueRef)>>,
    text: String,
    bytes: Vec<u8>,
    root: Option<ValueRef>,
    /// Trace entries decoded as they were read (`parse_direct` only).
    direct: Vec<TraceEntry>,
    /// The streams and unknown action names those entries refer to.
    direct_tables: TraceTables,
    /// `device_free` of those entries that have one, by index in `direct`.
    direct_device_free: Vec<(u32, u64)>,
    /// Set when a `Direct` node is read as a generic value: its keys and values are not
    /// kept, so only a reading with `parse` can answer.
    touched_direct: Cell<bool>,
    /// Set when the reader met a use of a decoded entry it cannot replay (a second
    /// batch of items for the same dict); the arena is then incomplete.
    needs_general: bool,
}

impl EntryValues for Pickle {
    type Ref = ValueRef;
    #[inline]
    fn int(&self, v: ValueRef) -> Result<i64, &'static str> {
        match self.get(v) {
            Value::Int(i) => Ok(i),
            Value::Bool(b) => Ok(b as i64),
            other => Err(other.type_name()),
        }
    }
    #[inline]
    fn str(&self, v: ValueRef) -> Result<&str, &'static str> {
        match self.get(v) {
            Value::Str(s) => Ok(s),
            other => Err(other.type_name()),
        }
    }
    #[inline]
    fn raw(v: ValueRef) -> u32 {
        v.raw()
    }
}

impl Pickle {
    /// The top-level value (what `pickle.load` returns).
    pub fn root(&self) -> ValueRef {
        self.root.unwrap_or(ValueRef(0))
    }

    /// Looks a reference up. Every `ValueRef` handed out by this `Pickle` is valid; a
    /// foreign one reads as `None` rather than panicking.
    pub fn get(&self, r: ValueRef) -> Value<'_> {
        if let Some(v) = r.inline_int() {
            return Value::Int(v);
        }
        if r.0 & WIDE != 0 {
            return self
                .wide
                .get((r.0 & !WIDE) as usize)
                .map_or(Value::None, |&v| Value::Int(v));
        }
        let Some(node) = self.nodes.get(r.0 as usize) else {
            return Value::None;
        };
        match *node {
            Node::None => Value::None,
            Node::Bool(b) => Value::Bool(b),
            Node::Float(f) => Value::Float(f),
            Node::BigInt { start, len } => Value::BigInt(slice(&self.bytes, start, len)),
            Node::Str { start, len } => {
                let (s, e) = (start as usize, start as usize + len as usize);
                Value::Str(self.text.get(s..e).unwrap_or(""))
            }
            Node::Bytes { start, len } => Value::Bytes(slice(&self.bytes, start, len)),
            Node::Seq { kind, start, len } => Value::Seq(
                kind,
                Seq {
                    items: slice(&self.items, start, len),
                },
            ),
            Node::BigSeq { kind, idx } => Value::Seq(
                kind,
                Seq {
                    items: self
                        .big_seqs
                        .get(idx as usize)
                        .map_or(&[], |v| v.as_slice()),
                },
            ),
            Node::Dict { keys, vals, len } => Value::Dict(Dict {
                inner: DictInner::Split {
                    keys: slice(&self.items, keys, len),
                    vals: slice(&self.items, vals, len),
                },
            }),
            Node::BigDict { idx } => Value::Dict(Dict {
                inner: DictInner::Pairs(self.big_dicts.get(idx as usize).map_or(&[], |v| v)),
            }),
            Node::Direct { .. } => {
                self.touched_direct.set(true);
                Value::Dict(Dict {
                    inner: DictInner::Pairs(&[]),
                })
            }
        }
    }

    /// The index in the directly decoded entries of a `Direct` node.
    pub(crate) fn direct_index(&self, r: ValueRef) -> Option<u32> {
        match self.nodes.get(r.0 as usize) {
            Some(&Node::Direct { idx }) if r.0 & (INLINE | WIDE) == 0 => Some(idx),
            _ => None,
        }
    }

    pub(crate) fn take_direct(&mut self) -> Direct {
        Direct {
            entries: std::mem::take(&mut self.direct),
            tables: std::mem::take(&mut self.direct_tables),
            device_free: std::mem::take(&mut self.direct_device_free),
        }
    }

    /// Whether a directly decoded entry was read as a generic dict (see `get`).
    pub(crate) fn touched_direct(&self) -> bool {
        self.touched_direct.get()
    }

    pub(crate) fn needs_general(&self) -> bool {
        self.needs_general
    }

    /// Looks up `key` (a str) in a dict value; `None` if `r` is not a dict or lacks it.
    pub fn dict_get(&self, d: &Dict<'_>, key: &str) -> Option<ValueRef> {
        let mut found = None;
        for (k, v) in d.iter() {
            if matches!(self.get(k), Value::Str(s) if s == key) {
                found = Some(v);
            }
        }
        found
    }

    /// A stable identity for container values, so callers can cache work per shared
    /// node (a memoised frame dict, a shared stack list). Inline ints have none.
    pub fn node_id(&self, r: ValueRef) -> Option<u32> {
        (r.0 & (INLINE | WIDE) == 0).then_some(r.0)
    }

    /// For seqs whose items range is shared between equal batches: a key equal for two
    /// seqs whenever their items are the same range, so callers can cache per content.
    pub fn seq_storage_key(&self, r: ValueRef) -> Option<(u32, u32)> {
        match self.nodes.get(r.0 as usize)? {
            Node::Seq { start, len, .. } if r.0 & INLINE == 0 => Some((*start, *len)),
            _ => None,
        }
    }

    /// Approximate heap bytes held by the arena (for the performance notes).
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.wide.capacity() * 8
            + self.items.capacity() * 4
            + self
                .big_seqs
                .iter()
                .map(|v| v.capacity() * 4)
                .sum::<usize>()
            + self
                .big_dicts
                .iter()
                .map(|v| v.capacity() * 8)
                .sum::<usize>()
            + self.text.capacity()
            + self.bytes.capacity()
    }
}

fn slice<T>(v: &[T], start: u32, len: u32) -> &[T] {
    let s = start as usize;
    v.get(s..s + len as usize).unwrap_or(&[])
}

/// Where the reader takes bytes from: a slice, or a file read in chunks so that a large
/// snapshot is never resident twice (once as bytes, once decoded).
pub trait Input {
    /// The next `n` bytes, or `None` when fewer than `n` are left.
    fn take(&mut self, n: usize) -> Result<Option<&[u8]>, std::io::Error>;
    /// Bytes consumed so far.
    fn offset(&self) -> u64;
    /// Bytes left, when known; used to reject length prefixes before allocating.
    fn remaining(&self) -> u64;
    /// The next `n` bytes if they are already in memory: the hot path, with no I/O and
    /// no error plumbing. `None` means "ask `take`", not "end of input".
    fn take_buffered(&mut self, n: usize) -> Option<&[u8]>;
    /// How many bytes `take_buffered` can hand out right now.
    fn buffered_len(&self) -> usize;
    /// The bytes already in memory, for the decoder's fast path to peek at.
    fn buffered(&self) -> &[u8];
    /// Consumes `n <= buffered().len()` bytes that were peeked at.
    fn advance(&mut self, n: usize);
}

/// The trace entries the reader decoded itself (`parse_direct`), what they refer to by
/// index, and the `device_free` values of those that have one (by index in `entries`).
#[derive(Default)]
pub(crate) struct Direct {
    pub entries: Vec<TraceEntry>,
    pub tables: TraceTables,
    pub device_free: Vec<(u32, u64)>,
}

/// Reads from memory.
pub struct SliceInput<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> SliceInput<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        SliceInput { data, pos: 0 }
    }
}

impl Input for SliceInput<'_> {
    #[inline]
    fn take(&mut self, n: usize) -> Result<Option<&[u8]>, std::io::Error> {
        let end = match self.pos.checked_add(n) {
            Some(e) if e <= self.data.len() => e,
            _ => return Ok(None),
        };
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(Some(s))
    }
    fn offset(&self) -> u64 {
        self.pos as u64
    }
    fn remaining(&self) -> u64 {
        (self.data.len() - self.pos) as u64
    }
    #[inline(always)]
    fn buffered_len(&self) -> usize {
        self.data.len() - self.pos
    }
    #[inline(always)]
    fn take_buffered(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    #[inline(always)]
    fn buffered(&self) -> &[u8] {
        self.data.get(self.pos..).unwrap_or(&[])
    }
    #[inline(always)]
    fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.data.len());
    }
}

/// Reads from any `Read` of known total length, through a buffer that only grows to hold
/// the largest single item (bounded by `total`, which is checked first).
pub struct ReaderInput<R: Read> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    consumed: u64,
    total: u64,
}

const CHUNK: usize = 256 * 1024;

impl<T: Read> ReaderInput<T> {
    pub fn new(inner: T, total: u64) -> Self {
        ReaderInput {
            inner,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            consumed: 0,
            total,
        }
    }

    #[cold]
    fn refill(&mut self, n: usize) -> Result<bool, std::io::Error> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        while self.end < n {
            let got = self.inner.read(&mut self.buf[self.end..])?;
            if got == 0 {
                return Ok(false);
            }
            self.end += got;
        }
        Ok(true)
    }
}

impl<T: Read> Input for ReaderInput<T> {
    #[inline]
    fn take(&mut self, n: usize) -> Result<Option<&[u8]>, std::io::Error> {
        if self.end - self.pos < n && (n as u64 > self.remaining() || !self.refill(n)?) {
            return Ok(None);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        self.consumed += n as u64;
        Ok(Some(s))
    }
    fn offset(&self) -> u64 {
        self.consumed
    }
    fn remaining(&self) -> u64 {
        self.total.saturating_sub(self.consumed)
    }
    #[inline(always)]
    fn buffered_len(&self) -> usize {
        self.end - self.pos
    }
    #[inline(always)]
    fn take_buffered(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end.min(self.end))?;
        if s.len() != n {
            return None;
        }
        self.pos = end;
        self.consumed += n as u64;
        Some(s)
    }
    #[inline(always)]
    fn buffered(&self) -> &[u8] {
        self.buf.get(self.pos..self.end).unwrap_or(&[])
    }
    #[inline(always)]
    fn advance(&mut self, n: usize) {
        let n = n.min(self.end - self.pos);
        self.pos += n;
        self.consumed += n as u64;
    }
}

/// Decodes a whole pickle held in memory.
pub fn parse(data: &[u8]) -> R<Pickle> {
    Machine::new(SliceInput::new(data)).run()
}

/// Decodes a pickle from a reader of known length.
pub fn parse_reader<T: Read>(inner: T, total: u64) -> R<Pickle> {
    Machine::new(ReaderInput::new(inner, total)).run()
}

/// Like [`parse_reader`], but every dict whose keys and values are those of a trace
/// entry is decoded straight into a `TraceEntry` as it is read, instead of into the
/// arena (see `model::from_direct`, which must be the one to read the result). Errors are
/// those of `parse_reader`: the machine runs the same steps, only fresh trace-entry
/// dicts are stored differently.
pub(crate) fn parse_direct<T: Read>(inner: T, total: u64) -> R<Pickle> {
    let mut m = Machine::new(ReaderInput::new(inner, total));
    m.direct = true;
    m.presize(total);
    m.run()
}

/// [`parse_direct`] from memory.
pub(crate) fn parse_direct_bytes(data: &[u8]) -> R<Pickle> {
    let mut m = Machine::new(SliceInput::new(data));
    m.direct = true;
    m.presize(data.len() as u64);
    m.run()
}

/// Identity hasher for keys that already are hashes.
#[derive(Default)]
struct PreHashed(u64);
impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {}
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}
type PreMap<V> = HashMap<u64, V, BuildHasherDefault<PreHashed>>;

/// A small multiplicative hasher for integer keys (node ids, ranges): SipHash's DoS
/// resistance buys nothing for keys that are arena indices, and costs a tenth of the time.
#[derive(Default)]
pub struct FastHasher(u64);
impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, b: &[u8]) {
        for &x in b {
            self.0 = mix(self.0, x as u64);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = mix(self.0, v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = mix(self.0, v);
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = mix(self.0, v as u64);
    }
}
/// A `HashMap` keyed by arena indices.
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

#[inline]
fn mix(h: u64, v: u64) -> u64 {
    (h.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

fn hash_bytes(b: &[u8]) -> u64 {
    let mut h = b.len() as u64;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = mix(h, u64::from_le_bytes(w));
    }
    for &x in chunks.remainder() {
        h = mix(h, x as u64);
    }
    mix(h, 0xff)
}

/// Raises `pinned` above every wide-int slot `refs` point to: those slots are now held
/// outside the machine's stack and must survive (see `Machine::wide_pinned`).
#[inline]
fn pin_wide(pinned: &mut u32, refs: &[ValueRef]) {
    for r in refs {
        if r.0 & (INLINE | WIDE) == WIDE {
            *pinned = (*pinned).max((r.0 & !WIDE) + 1);
        }
    }
}

/// A hash of a batch of refs, four at a time in two independent lanes: the batches
/// hashed are mostly call stacks (every fresh `frames` list), and a single chain of
/// multiplies, one per ref, was a tenth of the reader's time.
#[inline]
fn batch_hash(batch: &[ValueRef]) -> u64 {
    let (mut a, mut b) = (batch.len() as u64, 0u64);
    let pair = |x: &[ValueRef]| x[0].0 as u64 | (x[1].0 as u64) << 32;
    let mut quads = batch.chunks_exact(4);
    for q in &mut quads {
        a = mix(a, pair(&q[..2]));
        b = mix(b, pair(&q[2..]));
    }
    for r in quads.remainder() {
        a = mix(a, r.0 as u64);
    }
    mix(a, b)
}

/// Batches longer than this are not shared: long ones are unlikely to repeat, and hashing
/// them would cost more than it saves.
const SHARE_MAX: usize = 256;

/// `Machine::store_batch` on the fields it needs, so a batch can be stored straight from
/// the machine's stack without copying it out first.
fn store_batch(
    items: &mut Vec<ValueRef>,
    batches: &mut PreMap<(u32, u32)>,
    pinned: &mut u32,
    batch: &[ValueRef],
    at: u64,
) -> R<u32> {
    pin_wide(pinned, batch);
    let share = batch.len() <= SHARE_MAX && !batch.is_empty();
    let mut h = 0;
    if share {
        h = batch_hash(batch);
        if let Some(&(start, len)) = batches.get(&h) {
            if len as usize == batch.len() && slice(items, start, len) == batch {
                return Ok(start);
            }
        }
    }
    let start = items.len();
    if start + batch.len() > u32::MAX as usize {
        return Err(PickleError::TooLarge { offset: at });
    }
    items.extend_from_slice(batch);
    if share {
        batches.insert(h, (start as u32, batch.len() as u32));
    }
    Ok(start as u32)
}

/// A dict key batch `(start, len)` in `items`, and its fields when a trace entry with
/// those keys can be decoded directly.
type KeyLayout = (u32, u32, Option<Box<[EntryField]>>);

/// When the wide-int slots that `batch` (a decoded entry's pairs) refers to are exactly
/// the last slots of `wide`, all unpinned, the length to cut `wide` back to: nothing
/// else refers to those slots (the memo and containers pin theirs; the stack below a
/// dict's items was pushed before them). `None` otherwise, and nothing is cut.
fn unpinned_tail(wide: &[i64], pinned: u32, batch: &[ValueRef]) -> Option<usize> {
    let len = wide.len();
    // Bit i: slot `len - 1 - i` is referred to.
    let mut seen = 0u64;
    for r in batch {
        if r.0 & (INLINE | WIDE) == WIDE {
            let back = len.checked_sub((r.0 & !WIDE) as usize + 1)?;
            if back >= 64 {
                return None;
            }
            seen |= 1 << back;
        }
    }
    let k = seen.count_ones() as usize;
    // Contiguous from the end, and above every pinned slot.
    if k == 0 || seen != u64::MAX >> (64 - k) || len - k < pinned as usize {
        return None;
    }
    Some(len - k)
}

/// Fresh lists filled with memo gets only (`MARK`, `BINGET`/`LONG_BINGET`…, `APPENDS`), by
/// the bytes of that body. PyTorch writes each trace entry's call stack as a fresh list
/// of memoised frames: 142k lists in `decode_heavy`, 4 M gets, most of the reader's
/// steps, for 170 distinct stacks. A body read before is stored again by its bytes, with
/// the items range it produced, and a list with the same body gets that range without
/// its gets being executed. It is exactly what executing them gives: the same keys name
/// the same values while no memo key is rebound (`memo_put` clears the cache when one is),
/// and `store_batch` would share the same range for the same refs. Only the direct reader
/// (`parse_direct`) uses it; `parse` executes every step, as the reference.
#[derive(Default)]
struct ListBodies {
    /// By hash of the body's bytes: where the bytes are kept, and the items range.
    by_hash: PreMap<(u32, u32, u32, u32)>,
    bytes: Vec<u8>,
    scratch: Vec<ValueRef>,
}

/// Bytes of list bodies kept at most; past it, bodies are executed as read (a hostile
/// file of all-distinct bodies costs this much memory and no more).
const LIST_BODY_BYTES_MAX: usize = 1 << 20;
/// Gets per body looked at; longer lists are executed as read, as `store_batch` does not
/// share them either.
const LIST_BODY_GETS_MAX: usize = SHARE_MAX;

impl ListBodies {
    fn clear(&mut self) {
        self.by_hash.clear();
        self.bytes.clear();
    }

    /// At a `MARK` whose body follows in `body`: when the stack's top is a fresh empty
    /// list above every mark and the body is memo gets only, ended by `APPENDS`, all in
    /// the buffer and all keys in the dense memo, fills the list as the steps would and
    /// returns the bytes used (body and `APPENDS`). `None` otherwise, with nothing changed.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn fill(
        &mut self,
        body: &[u8],
        stack: &[ValueRef],
        marks: &[usize],
        memo: &[u32],
        p: &mut Pickle,
        batches: &mut PreMap<(u32, u32)>,
        pinned: &mut u32,
    ) -> Option<usize> {
        let &list = stack.last()?;
        if stack.len() <= marks.last().copied().unwrap_or(0) || list.0 & (INLINE | WIDE) != 0 {
            return None;
        }
        let idx = list.0 as usize;
        let Some(&Node::Seq { kind, len: 0, .. }) = p.nodes.get(idx) else {
            return None;
        };
        // The body's extent: gets up to an APPENDS.
        let (mut at, mut gets) = (0, 0);
        loop {
            match *body.get(at)? {
                b'h' => at += 2,
                b'j' => at += 5,
                b'e' => break,
                _ => return None,
            }
            gets += 1;
            if gets > LIST_BODY_GETS_MAX {
                return None;
            }
        }
        if gets == 0 {
            return None;
        }
        let gets_bytes = body.get(..at)?;
        let h = hash_bytes(gets_bytes);
        if let Some(&(bs, bl, start, len)) = self.by_hash.get(&h) {
            if self.bytes.get(bs as usize..(bs + bl) as usize) == Some(gets_bytes) {
                p.nodes[idx] = Node::Seq { kind, start, len };
                return Some(at + 1);
            }
        }
        // First time: the gets as the steps would run them, then stored for next time.
        let mut refs = std::mem::take(&mut self.scratch);
        refs.clear();
        let mut k = 0;
        while k < at {
            let key = match gets_bytes[k] {
                b'h' => {
                    k += 2;
                    gets_bytes[k - 1] as usize
                }
                _ => {
                    let w = gets_bytes.get(k + 1..k + 5)?;
                    k += 5;
                    u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize
                }
            };
            match memo.get(key) {
                Some(&v) if v != MEMO_HOLE => refs.push(ValueRef(v)),
                _ => {
                    self.scratch = refs;
                    return None;
                }
            }
        }
        let stored = store_batch(&mut p.items, batches, pinned, &refs, 0);
        let len = refs.len() as u32;
        self.scratch = refs;
        let start = stored.ok()?;
        p.nodes[idx] = Node::Seq { kind, start, len };
        if self.bytes.len() + at <= LIST_BODY_BYTES_MAX {
            let bs = self.bytes.len() as u32;
            self.bytes.extend_from_slice(gets_bytes);
            self.by_hash.insert(h, (bs, at as u32, start, len));
        }
        Some(at + 1)
    }
}

struct Machine<I: Input> {
    input: I,
    p: Pickle,
    stack: Vec<ValueRef>,
    marks: Vec<usize>,
    /// Dense memo; `MEMO_HOLE` marks keys never stored. Four bytes per entry because
    /// the 568k entries of a large snapshot are read at random, so cache lines matter.
    memo: Vec<u32>,
    /// Where the last dict's key batch went: consecutive trace entries share keys, and a
    /// direct comparison is cheaper than hashing.
    last_keys: Option<(u32, u32)>,
    memo_sparse: HashMap<u64, ValueRef>,
    strings: PreMap<Vec<u32>>,
    batches: PreMap<(u32, u32)>,
    scratch: Vec<ValueRef>,
    scratch2: Vec<ValueRef>,
    /// Offset and byte of the opcode being executed, for errors.
    at: u64,
    op: u8,
    /// Decode trace-entry dicts straight into `TraceEntry`s (`parse_direct`).
    direct: bool,
    /// Wide-int slots below this are referenced from the memo or a container; those
    /// above it only from the stack, so a decoded entry's addresses and times can be
    /// dropped from the table when they are its last slots.
    wide_pinned: u32,
    /// The key batch (start, len) last classified, and its fields when it is a layout
    /// `trace::direct_entry` can decode.
    direct_layout: Option<KeyLayout>,
    /// The last short string stored as read, and its node: torch writes one value
    /// (`'N/A'`) afresh in every trace entry, and between two of them pickle's own memo
    /// serves the other strings, so this spares the hash and the candidate list.
    last_str: Option<(u8, [u8; LAST_STR_MAX], u32)>,
    /// What directly decoded entries refer to (moved to the `Pickle` at the end).
    tables: TraceTables,
    /// List bodies seen before (see `ListBodies`).
    list_bodies: ListBodies,
}

const LAST_STR_MAX: usize = 16;

/// A string short enough to keep as `Machine::last_str`, with its node.
fn short_str(raw: &[u8], node: u32) -> Option<(u8, [u8; LAST_STR_MAX], u32)> {
    let mut buf = [0u8; LAST_STR_MAX];
    buf.get_mut(..raw.len())?.copy_from_slice(raw);
    Some((raw.len() as u8, buf, node))
}

/// Stores an int wider than an inline ref in the side table (`None` when it is full).
fn push_wide(wide: &mut Vec<i64>, v: i64) -> Option<ValueRef> {
    let idx = wide.len();
    if idx >= WIDE as usize {
        return None;
    }
    wide.push(v);
    Some(ValueRef(WIDE | idx as u32))
}

impl<I: Input> Machine<I> {
    fn new(input: I) -> Self {
        Machine {
            input,
            p: Pickle::default(),
            stack: Vec::new(),
            marks: Vec::new(),
            memo: Vec::new(),
            last_keys: None,
            memo_sparse: HashMap::new(),
            strings: PreMap::default(),
            batches: PreMap::default(),
            scratch: Vec::new(),
            scratch2: Vec::new(),
            at: 0,
            op: 0,
            direct: false,
            wide_pinned: 0,
            direct_layout: None,
            last_str: None,
            tables: TraceTables::default(),
            list_bodies: ListBodies::default(),
        }
    }

    /// Room for the large arrays, from the file's size (see `pages`): what a snapshot
    /// written by PyTorch holds per byte of file, with some headroom (`decode_heavy`:
    /// a trace entry per 110 bytes, a memo slot per 41, a node per 66). A guess too small
    /// costs a reallocation, one too large only address space: pages are touched as
    /// they are written.
    fn presize(&mut self, total: u64) {
        let per = |bytes: u64| usize::try_from(total / bytes).unwrap_or(usize::MAX);
        pages::reserve_huge(&mut self.p.direct, per(96));
        // The memo is 2.3 MiB in decode_heavy: room for twice that, so whole huge pages
        // fit inside it.
        pages::reserve_huge(&mut self.memo, per(20));
        pages::reserve_huge(&mut self.p.nodes, per(56));
    }

    fn malformed(&self, why: &'static str) -> PickleError {
        PickleError::Malformed {
            name: op_name(self.op),
            offset: self.at,
            why,
        }
    }

    #[inline(always)]
    fn take(&mut self, n: usize, what: &'static str) -> R<&[u8]> {
        if self.input.buffered_len() >= n {
            let offset = self.input.offset();
            return self
                .input
                .take_buffered(n)
                .ok_or(PickleError::Truncated { offset, what });
        }
        self.take_slow(n, what)
    }

    #[cold]
    fn take_slow(&mut self, n: usize, what: &'static str) -> R<&[u8]> {
        let offset = self.input.offset();
        match self.input.take(n) {
            Ok(Some(s)) => Ok(s),
            Ok(None) => Err(PickleError::Truncated { offset, what }),
            Err(e) => Err(PickleError::Io {
                offset,
                message: e.to_string(),
            }),
        }
    }

    #[inline]
    fn fixed<const N: usize>(&mut self, what: &'static str) -> R<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Reads a length field and rejects it unless that many bytes are actually left.
    fn length(&mut self, width: usize) -> R<usize> {
        let offset = self.input.offset();
        let len = match width {
            1 => self.fixed::<1>("a length")?[0] as u64,
            4 => u32::from_le_bytes(self.fixed::<4>("a length")?) as u64,
            _ => u64::from_le_bytes(self.fixed::<8>("a length")?),
        };
        let remaining = self.input.remaining();
        if len > remaining {
            return Err(PickleError::LengthTooLarge {
                len,
                remaining,
                offset,
            });
        }
        usize::try_from(len).map_err(|_| PickleError::TooLarge { offset })
    }

    fn node(&mut self, n: Node) -> R<ValueRef> {
        let idx = self.p.nodes.len();
        if idx >= WIDE as usize {
            return Err(PickleError::TooLarge { offset: self.at });
        }
        self.p.nodes.push(n);
        Ok(ValueRef(idx as u32))
    }

    /// Stores an int that does not fit inline; `None` when the table is full.
    #[inline]
    fn wide_int(&mut self, v: i64) -> Option<ValueRef> {
        push_wide(&mut self.p.wide, v)
    }

    #[inline]
    fn push(&mut self, r: ValueRef) {
        self.stack.push(r);
    }

    #[inline]
    fn pop(&mut self) -> R<ValueRef> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.malformed("stack is empty"));
        }
        self.stack
            .pop()
            .ok_or_else(|| self.malformed("stack is empty"))
    }

    fn top(&self) -> R<ValueRef> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.malformed("stack is empty"));
        }
        self.stack
            .last()
            .copied()
            .ok_or_else(|| self.malformed("stack is empty"))
    }

    fn pop_mark(&mut self) -> R<usize> {
        self.marks.pop().ok_or_else(|| self.malformed("no MARK"))
    }

    fn int(&mut self, v: i64) -> R<ValueRef> {
        match ValueRef::int(v) {
            Some(r) => Ok(r),
            None => self
                .wide_int(v)
                .ok_or(PickleError::TooLarge { offset: self.at }),
        }
    }

    fn long(&mut self, width: usize) -> R<ValueRef> {
        let n = self.length(width)?;
        let b = self.take(n, "a long")?;
        if n == 0 {
            return self.int(0);
        }
        if n <= 8 {
            let neg = b[n - 1] & 0x80 != 0;
            let mut w = if neg { [0xffu8; 8] } else { [0u8; 8] };
            w[..n].copy_from_slice(b);
            let v = i64::from_le_bytes(w);
            return self.int(v);
        }
        let b = b.to_vec();
        let start = self.append_bytes(&b)?;
        self.node(Node::BigInt {
            start,
            len: n as u32,
        })
    }

    fn append_bytes(&mut self, b: &[u8]) -> R<u32> {
        let start = self.p.bytes.len();
        if start + b.len() > u32::MAX as usize {
            return Err(PickleError::TooLarge { offset: self.at });
        }
        self.p.bytes.extend_from_slice(b);
        Ok(start as u32)
    }

    fn string(&mut self, width: usize) -> R<ValueRef> {
        let n = self.length(width)?;
        let offset = self.input.offset();
        let at = self.at;
        let raw = match self.input.take(n) {
            Ok(Some(s)) => s,
            Ok(None) => {
                return Err(PickleError::Truncated {
                    offset,
                    what: "a string",
                })
            }
            Err(e) => {
                return Err(PickleError::Io {
                    offset,
                    message: e.to_string(),
                })
            }
        };
        if let Some((len, buf, r)) = &self.last_str {
            if buf.get(..*len as usize) == Some(raw) {
                return Ok(ValueRef(*r));
            }
        }
        // Equal strings are stored once: torch writes a fresh str object for every
        // repeated value (`'N/A'`, file names), so pickle's own memo does not share them.
        let h = hash_bytes(raw);
        if let Some(cands) = self.strings.get(&h) {
            for &c in cands {
                if let Some(Node::Str { start, len }) = self.p.nodes.get(c as usize) {
                    let (s, e) = (*start as usize, *start as usize + *len as usize);
                    if self.p.text.as_bytes().get(s..e) == Some(raw) {
                        self.last_str = short_str(raw, c);
                        return Ok(ValueRef(c));
                    }
                }
            }
        }
        let s = std::str::from_utf8(raw).map_err(|_| PickleError::Utf8 { offset })?;
        // The one point where snapshot text is made safe: every string a snapshot holds
        // (frame names, file names, actions, settings) passes here, so none can carry an
        // escape sequence or a bidi override to a terminal. Printable ASCII needs nothing.
        let cleaned;
        let (s, plain) = if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            (s, true)
        } else {
            cleaned = crate::base::text::sanitize(s);
            let same = cleaned == s;
            (cleaned.as_str(), same)
        };
        let start = self.p.text.len();
        let len = s.len();
        if start + len > u32::MAX as usize {
            return Err(PickleError::TooLarge { offset: at });
        }
        self.p.text.push_str(s);
        let r = self.node(Node::Str {
            start: start as u32,
            len: len as u32,
        })?;
        // Only text stored as read can be found again by its raw bytes; a cleaned string
        // is stored per occurrence (linear in the input), never added to a candidate
        // list that every later copy would scan.
        if plain {
            self.strings.entry(h).or_default().push(r.0);
            self.last_str = (self.p.text.as_bytes().get(start..start + len))
                .and_then(|stored| short_str(stored, r.0));
        }
        Ok(r)
    }

    fn bytes(&mut self, width: usize) -> R<ValueRef> {
        let n = self.length(width)?;
        let b = self.take(n, "bytes")?.to_vec();
        let start = self.append_bytes(&b)?;
        self.node(Node::Bytes {
            start,
            len: n as u32,
        })
    }

    /// Stores a batch of refs in `items`, sharing the range with an identical earlier
    /// batch when there is one. Returns the start.
    fn store_batch(&mut self, batch: &[ValueRef]) -> R<u32> {
        store_batch(
            &mut self.p.items,
            &mut self.batches,
            &mut self.wide_pinned,
            batch,
            self.at,
        )
    }

    fn new_seq(&mut self, kind: SeqKind, items: &[ValueRef]) -> R<ValueRef> {
        let start = self.store_batch(items)?;
        self.node(Node::Seq {
            kind,
            start,
            len: items.len() as u32,
        })
    }

    /// Moves the stack above `from` into the scratch buffer, reusing its allocation.
    fn take_batch(&mut self, from: usize) -> Vec<ValueRef> {
        let mut batch = std::mem::take(&mut self.scratch);
        batch.clear();
        batch.extend_from_slice(self.stack.get(from..).unwrap_or(&[]));
        self.stack.truncate(from);
        batch
    }

    /// APPEND/APPENDS/ADDITEMS: extend the list below the mark with the stack tail.
    fn extend_seq(&mut self, target: ValueRef, from: usize) -> R<()> {
        // The common case, a fresh list's only batch, is stored straight from the stack.
        let idx = target.0 as usize;
        if let (0, Some(&Node::Seq { kind, len: 0, .. })) =
            (target.0 & INLINE, self.p.nodes.get(idx))
        {
            let batch = self.stack.get(from..).unwrap_or(&[]);
            let start = store_batch(
                &mut self.p.items,
                &mut self.batches,
                &mut self.wide_pinned,
                batch,
                self.at,
            )?;
            self.p.nodes[idx] = Node::Seq {
                kind,
                start,
                len: batch.len() as u32,
            };
            self.stack.truncate(from);
            return Ok(());
        }
        let batch = self.take_batch(from);
        let r = self.extend_seq_with(target, &batch);
        self.scratch = batch;
        r
    }

    fn extend_seq_with(&mut self, target: ValueRef, batch: &[ValueRef]) -> R<()> {
        pin_wide(&mut self.wide_pinned, batch);
        let idx = target.0 as usize;
        let node = match (target.0 & INLINE, self.p.nodes.get(idx)) {
            (0, Some(n)) => *n,
            _ => return Err(self.malformed("target is not a list")),
        };
        match node {
            Node::Seq { kind, start, len } => {
                // A second batch (lists over 1000 items): move to a growable vector once.
                let mut v = Vec::new();
                if self.p.big_seqs.is_empty() && self.direct {
                    // The first long list of a snapshot is nearly always a device's
                    // trace: room for the entries expected (see `presize`), so it is not
                    // copied at every doubling (850 KiB, copied 8 times, in decode_heavy).
                    pages::reserve_huge(&mut v, self.p.direct.capacity());
                }
                v.extend_from_slice(slice(&self.p.items, start, len));
                v.extend_from_slice(batch);
                let big = self.p.big_seqs.len() as u32;
                self.p.big_seqs.push(v);
                self.p.nodes[idx] = Node::BigSeq { kind, idx: big };
            }
            Node::BigSeq { idx: big, .. } => {
                if let Some(v) = self.p.big_seqs.get_mut(big as usize) {
                    v.extend_from_slice(batch);
                }
            }
            _ => return Err(self.malformed("target is not a list")),
        }
        Ok(())
    }

    /// SETITEM/SETITEMS: pairs from the stack tail into the dict below them.
    fn extend_dict(&mut self, target: ValueRef, from: usize) -> R<()> {
        if (self.stack.len() - from) % 2 != 0 {
            return Err(self.malformed("odd number of items for a dict"));
        }
        // The common case, a fresh dict (every trace entry), is filled straight from the
        // stack: its keys are compared in place with the previous dict's, and its values
        // appended, without copying the batch out first.
        let idx = target.0 as usize;
        if let (0, Some(Node::Dict { len: 0, .. })) = (target.0 & INLINE, self.p.nodes.get(idx)) {
            let batch = self.stack.get(from..).unwrap_or(&[]);
            let n = batch.len() / 2;
            let same_keys = match self.last_keys {
                Some((start, len)) if len as usize == n => slice(&self.p.items, start, len)
                    .iter()
                    .zip(batch.chunks_exact(2))
                    .all(|(k, kv)| *k == kv[0]),
                _ => false,
            };
            let keys = match self.last_keys {
                Some((start, _)) if same_keys => start,
                _ => {
                    let mut keys = std::mem::take(&mut self.scratch2);
                    keys.clear();
                    keys.extend(batch.chunks_exact(2).map(|kv| kv[0]));
                    let stored = store_batch(
                        &mut self.p.items,
                        &mut self.batches,
                        &mut self.wide_pinned,
                        &keys,
                        self.at,
                    );
                    self.scratch2 = keys;
                    stored?
                }
            };
            self.last_keys = Some((keys, n as u32));
            if self.direct && self.try_direct(idx, keys, n, from) {
                return Ok(());
            }
            let batch = self.stack.get(from..).unwrap_or(&[]);
            let vals = self.p.items.len();
            if vals + n > u32::MAX as usize {
                return Err(PickleError::TooLarge { offset: self.at });
            }
            pin_wide(&mut self.wide_pinned, batch);
            self.p.items.extend(batch.chunks_exact(2).map(|kv| kv[1]));
            self.p.nodes[idx] = Node::Dict {
                keys,
                vals: vals as u32,
                len: n as u32,
            };
            self.stack.truncate(from);
            return Ok(());
        }
        let batch = self.take_batch(from);
        let r = self.extend_dict_with(target, &batch);
        self.scratch = batch;
        r
    }

    /// Decodes the fresh dict `idx`, whose keys were just stored at `keys` and whose
    /// pairs are the stack above `from`, into a trace entry when its layout and values
    /// allow (`trace::direct_entry`). On success the stack is consumed and the node
    /// becomes `Direct`; otherwise nothing has changed.
    fn try_direct(&mut self, idx: usize, keys: u32, n: usize, from: usize) -> bool {
        let fresh =
            !matches!(&self.direct_layout, Some((k, l, _)) if *k == keys && *l as usize == n);
        if fresh {
            let layout: Vec<EntryField> = slice(&self.p.items, keys, n as u32)
                .iter()
                .map(|&k| EntryField::of_key(self.p.get(k).as_str()))
                .collect();
            let ok = direct_entry_layout(&layout);
            self.direct_layout = Some((keys, n as u32, ok.then(|| layout.into_boxed_slice())));
        }
        let Some((_, _, Some(layout))) = &self.direct_layout else {
            return false;
        };
        let batch = self.stack.get(from..).unwrap_or(&[]);
        let vals = batch.chunks_exact(2).map(|kv| kv[1]);
        let Some((entry, device_free)) = direct_entry(&self.p, layout, vals, &mut self.tables)
        else {
            return false;
        };
        let Ok(d) = u32::try_from(self.p.direct.len()) else {
            return false;
        };
        // The entry's `frames` reference is kept (in `stack`) until the model resolves it.
        for (&f, kv) in layout.iter().zip(batch.chunks_exact(2)) {
            if f == EntryField::Frames {
                pin_wide(&mut self.wide_pinned, &kv[1..]);
            }
        }
        if let Some(keep) = unpinned_tail(&self.p.wide, self.wide_pinned, batch) {
            self.p.wide.truncate(keep);
        }
        self.p.direct.push(entry);
        if let Some(free) = device_free {
            self.p.direct_device_free.push((d, free));
        }
        self.p.nodes[idx] = Node::Direct { idx: d };
        self.stack.truncate(from);
        true
    }

    fn extend_dict_with(&mut self, target: ValueRef, batch: &[ValueRef]) -> R<()> {
        pin_wide(&mut self.wide_pinned, batch);
        let idx = target.0 as usize;
        let node = match (target.0 & INLINE, self.p.nodes.get(idx)) {
            (0, Some(n)) => *n,
            _ => return Err(self.malformed("target is not a dict")),
        };
        match node {
            // A fresh dict (`len: 0`) was filled by `extend_dict` already.
            Node::Dict { keys, vals, len } => {
                let mut v: Vec<(ValueRef, ValueRef)> = slice(&self.p.items, keys, len)
                    .iter()
                    .copied()
                    .zip(slice(&self.p.items, vals, len).iter().copied())
                    .collect();
                v.extend(batch.chunks_exact(2).map(|c| (c[0], c[1])));
                let big = self.p.big_dicts.len() as u32;
                self.p.big_dicts.push(v);
                self.p.nodes[idx] = Node::BigDict { idx: big };
            }
            Node::BigDict { idx: big } => {
                if let Some(v) = self.p.big_dicts.get_mut(big as usize) {
                    v.extend(batch.chunks_exact(2).map(|c| (c[0], c[1])));
                }
            }
            Node::Direct { .. } => {
                // More items for a dict already decoded as a trace entry: its keys and
                // values were not kept, so the general reader must take over.
                self.p.needs_general = true;
                return Err(self.malformed("dict already decoded"));
            }
            _ => return Err(self.malformed("target is not a dict")),
        }
        Ok(())
    }

    /// Keeps the invariant that every sparse key is above the dense memo's end, so that
    /// `memo.len() + memo_sparse.len()` is the number of distinct keys, which is the key
    /// `MEMOIZE` stores under (Python's `len(memo)`).
    fn memo_put(&mut self, key: u64, v: ValueRef) {
        pin_wide(&mut self.wide_pinned, &[v]);
        let k = key as usize;
        if k < self.memo.len() {
            self.memo[k] = v.0;
            // A body read before may now stand for other values.
            self.list_bodies.clear();
        } else if k == self.memo.len() {
            self.memo.push(v.0);
            self.memo_sparse.remove(&key);
            // Sparse keys that the dense memo now reaches move into it.
            while let Some(next) = self.memo_sparse.remove(&(self.memo.len() as u64)) {
                self.memo.push(next.0);
            }
        } else {
            self.memo_sparse.insert(key, v);
        }
    }

    #[inline]
    fn memo_get(&mut self, key: u64) -> R<ValueRef> {
        let found = match self.memo.get(key as usize) {
            Some(&v) if v != MEMO_HOLE => Some(ValueRef(v)),
            _ => self.memo_sparse.get(&key).copied(),
        };
        found.ok_or(PickleError::MemoMissing {
            key,
            offset: self.at,
        })
    }

    /// The fast path, for the opcodes that make up nearly 90 % of a snapshot (memo gets,
    /// `MEMOIZE`, `MARK`, ints): while the next opcode and its whole argument are already
    /// buffered and its step cannot fail, steps run here, on the buffer in place with a
    /// local cursor, no per-field length checks and no error plumbing. It stops, having
    /// left that opcode unread, at anything else (including every step that would fail);
    /// the general path then reads the same opcode and reports errors with their offsets.
    /// Returns whether any step ran.
    #[inline(always)]
    fn fast_run(&mut self) -> bool {
        let buf = self.input.buffered();
        let mut i = 0;
        // Ten bytes cover the longest step here (LONG1 of 8 bytes).
        while let Some(&head) = buf.get(i..).and_then(|b| b.first_chunk::<10>()) {
            let (n, v) = match head[0] {
                b'h' => match self.memo.get(head[1] as usize) {
                    Some(&v) if v != MEMO_HOLE => (2, ValueRef(v)),
                    _ => break,
                },
                b'j' => {
                    let k = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
                    match self.memo.get(k as usize) {
                        Some(&v) if v != MEMO_HOLE => (5, ValueRef(v)),
                        _ => break,
                    }
                }
                0x94 => {
                    // MEMOIZE: the key is the memo's size, which is `memo.len()` while no
                    // sparse key has been stored.
                    let floor = self.marks.last().copied().unwrap_or(0);
                    match self.stack.last() {
                        Some(&v) if self.stack.len() > floor && self.memo_sparse.is_empty() => {
                            pin_wide(&mut self.wide_pinned, &[v]);
                            self.memo.push(v.0)
                        }
                        _ => break,
                    }
                    i += 1;
                    continue;
                }
                b'(' => {
                    // Only the direct reader takes the shortcut: the general one executes
                    // every step, the reference it is checked against (fuzz target
                    // `pickle`).
                    if self.direct {
                        let body = buf.get(i + 1..).unwrap_or(&[]);
                        if let Some(n) = self.list_bodies.fill(
                            body,
                            &self.stack,
                            &self.marks,
                            &self.memo,
                            &mut self.p,
                            &mut self.batches,
                            &mut self.wide_pinned,
                        ) {
                            i += 1 + n;
                            continue;
                        }
                    }
                    self.marks.push(self.stack.len());
                    i += 1;
                    continue;
                }
                b'K' => match ValueRef::int(head[1] as i64) {
                    Some(r) => (2, r),
                    None => break,
                },
                b'M' => match ValueRef::int(u16::from_le_bytes([head[1], head[2]]) as i64) {
                    Some(r) => (3, r),
                    None => break,
                },
                b'J' => {
                    let v = i32::from_le_bytes([head[1], head[2], head[3], head[4]]);
                    match ValueRef::int(v as i64) {
                        Some(r) => (5, r),
                        None => break,
                    }
                }
                0x8a => {
                    // LONG1 of 1..=8 bytes: addresses and timestamps, 425k of them.
                    let len = head[1] as usize;
                    if len == 0 || len > 8 {
                        break;
                    }
                    // The eight bytes after the length, shifted so the int's top byte is
                    // the word's, then shifted back arithmetically: sign-extended without a
                    // copy of variable length (a call to memcpy per address).
                    let [_, _, word @ ..] = head;
                    let shift = 64 - 8 * len as u32;
                    let v = ((u64::from_le_bytes(word) << shift) as i64) >> shift;
                    // Not `wide_int`: `buf` borrows the input, so only `p` is borrowed here.
                    let Some(r) = ValueRef::int(v).or_else(|| push_wide(&mut self.p.wide, v))
                    else {
                        break;
                    };
                    (2 + len, r)
                }
                _ => break,
            };
            self.stack.push(v);
            i += n;
        }
        self.input.advance(i);
        i > 0
    }

    fn run(mut self) -> R<Pickle> {
        let res = self.run_steps();
        self.p.direct_tables = std::mem::take(&mut self.tables);
        match res {
            Ok(()) => Ok(self.p),
            // The arena is incomplete; `model::from_direct` sees the flag and the input
            // is read again by the general reader, which reports any error itself.
            Err(_) if self.p.needs_general => Ok(self.p),
            Err(e) => Err(e),
        }
    }

    fn run_steps(&mut self) -> R<()> {
        // Header: PROTO n with 2 <= n <= 5.
        let first = self.take(1, "the header").map_err(|_| PickleError::Empty)?[0];
        if first != 0x80 {
            return Err(PickleError::BadMagic { found: first });
        }
        let proto = self.fixed::<1>("the protocol number")?[0];
        if !(2..=5).contains(&proto) {
            return Err(PickleError::BadProtocol {
                protocol: proto,
                offset: 1,
            });
        }
        loop {
            if self.fast_run() {
                continue;
            }
            self.at = self.input.offset();
            let op = match self.input.take_buffered(1) {
                Some(b) => b[0],
                None => match self.input.take(1) {
                    Ok(Some(b)) => b[0],
                    Ok(None) => return Err(PickleError::NoStop { offset: self.at }),
                    Err(e) => {
                        return Err(PickleError::Io {
                            offset: self.at,
                            message: e.to_string(),
                        })
                    }
                },
            };
            self.op = op;
            match op {
                b'h' => {
                    let k = self.fixed::<1>("BINGET")?[0] as u64;
                    let v = self.memo_get(k)?;
                    self.push(v);
                }
                b'j' => {
                    let k = u32::from_le_bytes(self.fixed::<4>("LONG_BINGET")?) as u64;
                    let v = self.memo_get(k)?;
                    self.push(v);
                }
                0x94 => {
                    // MEMOIZE
                    let v = self.top()?;
                    let k = (self.memo.len() + self.memo_sparse.len()) as u64;
                    self.memo_put(k, v);
                }
                b'q' => {
                    let k = self.fixed::<1>("BINPUT")?[0] as u64;
                    let v = self.top()?;
                    self.memo_put(k, v);
                }
                b'r' => {
                    let k = u32::from_le_bytes(self.fixed::<4>("LONG_BINPUT")?) as u64;
                    let v = self.top()?;
                    self.memo_put(k, v);
                }
                b'K' => {
                    let v = self.fixed::<1>("BININT1")?[0] as i64;
                    let r = self.int(v)?;
                    self.push(r);
                }
                b'M' => {
                    let v = u16::from_le_bytes(self.fixed::<2>("BININT2")?) as i64;
                    let r = self.int(v)?;
                    self.push(r);
                }
                b'J' => {
                    let v = i32::from_le_bytes(self.fixed::<4>("BININT")?) as i64;
                    let r = self.int(v)?;
                    self.push(r);
                }
                0x8a => {
                    let r = self.long(1)?;
                    self.push(r);
                }
                0x8b => {
                    let r = self.long(4)?;
                    self.push(r);
                }
                b'G' => {
                    let v = f64::from_be_bytes(self.fixed::<8>("BINFLOAT")?);
                    let r = self.node(Node::Float(v))?;
                    self.push(r);
                }
                b'N' => {
                    let r = self.node(Node::None)?;
                    self.push(r);
                }
                0x88 | 0x89 => {
                    let r = self.node(Node::Bool(op == 0x88))?;
                    self.push(r);
                }
                0x8c => {
                    let r = self.string(1)?;
                    self.push(r);
                }
                b'X' => {
                    let r = self.string(4)?;
                    self.push(r);
                }
                0x8d => {
                    let r = self.string(8)?;
                    self.push(r);
                }
                b'C' | b'U' => {
                    let r = self.bytes(1)?;
                    self.push(r);
                }
                b'B' | b'T' => {
                    let r = self.bytes(4)?;
                    self.push(r);
                }
                0x8e | 0x96 => {
                    let r = self.bytes(8)?;
                    self.push(r);
                }
                b'}' => {
                    let r = self.node(Node::Dict {
                        keys: 0,
                        vals: 0,
                        len: 0,
                    })?;
                    self.push(r);
                }
                b']' => {
                    let r = self.new_seq(SeqKind::List, &[])?;
                    self.push(r);
                }
                b')' => {
                    let r = self.new_seq(SeqKind::Tuple, &[])?;
                    self.push(r);
                }
                0x8f => {
                    let r = self.new_seq(SeqKind::Set, &[])?;
                    self.push(r);
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    let floor = self.marks.last().copied().unwrap_or(0);
                    if self.stack.len() < floor + n {
                        return Err(self.malformed("stack is empty"));
                    }
                    let items = self.take_batch(self.stack.len() - n);
                    let r = self.new_seq(SeqKind::Tuple, &items);
                    self.scratch = items;
                    self.push(r?);
                }
                b't' | b'l' | 0x91 => {
                    let from = self.pop_mark()?;
                    let items = self.take_batch(from);
                    let kind = match op {
                        b't' => SeqKind::Tuple,
                        b'l' => SeqKind::List,
                        _ => SeqKind::Set,
                    };
                    let r = self.new_seq(kind, &items);
                    self.scratch = items;
                    self.push(r?);
                }
                b'd' => {
                    let from = self.pop_mark()?;
                    let r = self.node(Node::Dict {
                        keys: 0,
                        vals: 0,
                        len: 0,
                    })?;
                    if self.stack.len() > from {
                        self.extend_dict(r, from)?;
                    }
                    self.push(r);
                }
                b'(' => self.marks.push(self.stack.len()),
                b'a' => {
                    let from = self.stack.len().saturating_sub(1);
                    let floor = self.marks.last().copied().unwrap_or(0);
                    if from < floor + 1 || self.stack.len() < 2 {
                        return Err(self.malformed("stack is empty"));
                    }
                    let target = self.stack[from - 1];
                    self.extend_seq(target, from)?;
                }
                b'e' | 0x90 => {
                    let from = self.pop_mark()?;
                    let floor = self.marks.last().copied().unwrap_or(0);
                    if from == 0 || from <= floor {
                        return Err(self.malformed("no list below the MARK"));
                    }
                    let target = self.stack[from - 1];
                    if self.stack.len() > from {
                        self.extend_seq(target, from)?;
                    }
                }
                b's' => {
                    let floor = self.marks.last().copied().unwrap_or(0);
                    if self.stack.len() < floor + 3 {
                        return Err(self.malformed("stack is empty"));
                    }
                    let from = self.stack.len() - 2;
                    let target = self.stack[from - 1];
                    self.extend_dict(target, from)?;
                }
                b'u' => {
                    let from = self.pop_mark()?;
                    let floor = self.marks.last().copied().unwrap_or(0);
                    if from == 0 || from <= floor {
                        return Err(self.malformed("no dict below the MARK"));
                    }
                    let target = self.stack[from - 1];
                    if self.stack.len() > from {
                        self.extend_dict(target, from)?;
                    }
                }
                0x95 => {
                    // FRAME: a hint for buffered readers; our input is already buffered.
                    self.fixed::<8>("FRAME")?;
                }
                0x80 => {
                    let proto = self.fixed::<1>("PROTO")?[0];
                    if !(2..=5).contains(&proto) {
                        return Err(PickleError::BadProtocol {
                            protocol: proto,
                            offset: self.at,
                        });
                    }
                }
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    let from = self.pop_mark()?;
                    self.stack.truncate(from);
                }
                b'2' => {
                    let v = self.top()?;
                    self.push(v);
                }
                b'.' => {
                    let root = self.pop()?;
                    if !self.marks.is_empty() {
                        return Err(self.malformed("STOP inside an open MARK"));
                    }
                    self.p.root = Some(root);
                    return Ok(());
                }
                b'c' | 0x93 | b'R' | b'b' | b'i' | b'o' | 0x81 | 0x92 | 0x82 | 0x83 | 0x84
                | b'P' | b'Q' => {
                    return Err(PickleError::Forbidden {
                        name: op_name(op),
                        offset: self.at,
                    })
                }
                b'I' | b'L' | b'F' | b'S' | b'V' | b'g' | b'p' | 0x97 | 0x98 => {
                    return Err(PickleError::Unsupported {
                        name: op_name(op),
                        offset: self.at,
                    })
                }
                _ => {
                    return Err(PickleError::UnknownOpcode {
                        op,
                        offset: self.at,
                    })
                }
            }
        }
    }
}

fn op_name(op: u8) -> &'static str {
    match op {
        b'(' => "MARK",
        b'.' => "STOP",
        b'0' => "POP",
        b'1' => "POP_MARK",
        b'2' => "DUP",
        b'F' => "FLOAT",
        b'I' => "INT",
        b'J' => "BININT",
        b'K' => "BININT1",
        b'L' => "LONG",
        b'M' => "BININT2",
        b'N' => "NONE",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        b'R' => "REDUCE",
        b'S' => "STRING",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'V' => "UNICODE",
        b'X' => "BINUNICODE",
        b'a' => "APPEND",
        b'b' => "BUILD",
        b'c' => "GLOBAL",
        b'd' => "DICT",
        b'}' => "EMPTY_DICT",
        b'e' => "APPENDS",
        b'g' => "GET",
        b'h' => "BINGET",
        b'i' => "INST",
        b'j' => "LONG_BINGET",
        b'l' => "LIST",
        b']' => "EMPTY_LIST",
        b'o' => "OBJ",
        b'p' => "PUT",
        b'q' => "BINPUT",
        b'r' => "LONG_BINPUT",
        b's' => "SETITEM",
        b't' => "TUPLE",
        b')' => "EMPTY_TUPLE",
        b'u' => "SETITEMS",
        b'G' => "BINFLOAT",
        b'B' => "BINBYTES",
        b'C' => "SHORT_BINBYTES",
        0x80 => "PROTO",
        0x81 => "NEWOBJ",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        0x85 => "TUPLE1",
        0x86 => "TUPLE2",
        0x87 => "TUPLE3",
        0x88 => "NEWTRUE",
        0x89 => "NEWFALSE",
        0x8a => "LONG1",
        0x8b => "LONG4",
        0x8c => "SHORT_BINUNICODE",
        0x8d => "BINUNICODE8",
        0x8e => "BINBYTES8",
        0x8f => "EMPTY_SET",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        0x92 => "NEWOBJ_EX",
        0x93 => "STACK_GLOBAL",
        0x94 => "MEMOIZE",
        0x95 => "FRAME",
        0x96 => "BYTEARRAY8",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_ints_round_trip() {
        assert!(ValueRef::int(-1).is_none());
        for v in [0, 1, -2, INLINE_MIN, INLINE_MAX, 12345, -9876] {
            assert_eq!(ValueRef::int(v).and_then(|r| r.inline_int()), Some(v));
        }
        assert!(ValueRef::int(INLINE_MAX + 1).is_none());
    }

    #[test]
    fn only_an_unpinned_tail_of_wide_slots_is_cut() {
        let wide = [0i64; 5];
        let w = |i: u32| ValueRef(WIDE | i);
        let small = ValueRef::int(7).unwrap();
        // Slots 3 and 4 are the last two and nothing pins them: keep 3.
        assert_eq!(unpinned_tail(&wide, 0, &[small, w(3), w(4)]), Some(3));
        assert_eq!(unpinned_tail(&wide, 3, &[w(4), w(3)]), Some(3));
        // The same slot twice still counts once.
        assert_eq!(unpinned_tail(&wide, 0, &[w(4), w(4)]), Some(4));
        // Slot 3 is not in the batch, so 2 and 4 are not a tail.
        assert_eq!(unpinned_tail(&wide, 0, &[w(2), w(4)]), None);
        // Slot 3 is pinned (the memo or a container holds it).
        assert_eq!(unpinned_tail(&wide, 4, &[w(3), w(4)]), None);
        // No wide slot at all.
        assert_eq!(unpinned_tail(&wide, 0, &[small]), None);
    }

    #[test]
    fn small_dict_and_shared_memo() {
        // pickle.dumps({'a': [1, 2], 'b': 'x'} with 'x' memoised and reused), protocol 4.
        let data = b"\x80\x04\x95\x1c\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01K\x02e\x8c\x01b\x94h\x01u.";
        let p = parse(data).unwrap();
        let Value::Dict(d) = p.get(p.root()) else {
            panic!("not a dict")
        };
        assert_eq!(d.len(), 2);
        let a = p.dict_get(&d, "a").unwrap();
        let Value::Seq(SeqKind::List, s) = p.get(a) else {
            panic!("not a list")
        };
        assert_eq!(s.len(), 2);
        let b = p.dict_get(&d, "b").unwrap();
        assert!(matches!(p.get(b), Value::Str("a")));
    }

    /// One byte per `read`: the fast path never has 10 bytes buffered, so every opcode
    /// goes through the general path. Both paths must build the same values.
    struct OneByte<'a>(&'a [u8]);
    impl Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((&b, rest)), Some(out)) => {
                    *out = b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn fast_and_general_paths_agree() {
        // Trace-like entries sharing keys and a memoised frame, ints of every width
        // (inline, wide, -1, beyond 64 bits), a tuple and a list; protocol 4.
        let data = b"\x80\x04\x95\x61\x01\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x0d\x64\x65\x76\x69\x63\x65\x5f\x74\
          \x72\x61\x63\x65\x73\x94\x5d\x94\x5d\x94\x28\x7d\x94\x28\x8c\x06\x61\x63\x74\x69\x6f\x6e\x94\x8c\
          \x05\x61\x6c\x6c\x6f\x63\x94\x8c\x04\x61\x64\x64\x72\x94\x8a\x06\x00\x00\x00\xee\xc4\x7f\x8c\x04\
          \x73\x69\x7a\x65\x94\x8a\x06\x00\x00\x00\x00\x00\x01\x8c\x06\x66\x72\x61\x6d\x65\x73\x94\x5d\x94\
          \x28\x7d\x94\x28\x8c\x08\x66\x69\x6c\x65\x6e\x61\x6d\x65\x94\x8c\x04\x61\x2e\x70\x79\x94\x8c\x04\
          \x6c\x69\x6e\x65\x94\x4b\x03\x8c\x04\x6e\x61\x6d\x65\x94\x8c\x01\x66\x94\x75\x68\x0b\x65\x8c\x01\
          \x74\x94\x8a\x07\xea\x08\x05\xce\x66\x61\x06\x8c\x03\x6e\x65\x67\x94\x8a\x05\x00\x00\x00\x00\xf8\
          \x8c\x03\x62\x69\x67\x94\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40\x75\x7d\x94\x28\x68\x05\x68\
          \x06\x68\x07\x8a\x06\x01\x00\x00\xee\xc4\x7f\x68\x08\x4a\xff\xff\xff\xff\x68\x09\x5d\x94\x28\x68\
          \x0b\x68\x0b\x65\x68\x11\x8a\x07\xea\x08\x05\xce\x66\x61\x06\x68\x12\x8a\x05\x00\x00\x00\x00\xf8\
          \x68\x13\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40\x75\x7d\x94\x28\x68\x05\x68\x06\x68\x07\x8a\
          \x06\x02\x00\x00\xee\xc4\x7f\x68\x08\x4a\xff\xff\xff\xff\x68\x09\x5d\x94\x28\x68\x0b\x68\x0b\x65\
          \x68\x11\x8a\x07\xea\x08\x05\xce\x66\x61\x06\x68\x12\x8a\x05\x00\x00\x00\x00\xf8\x68\x13\x8a\x09\
          \x00\x00\x00\x00\x00\x00\x00\x00\x40\x75\x65\x61\x8c\x01\x78\x94\x4b\x01\x4b\x02\x86\x94\x8c\x01\
          \x6b\x94\x5d\x94\x28\x4d\xff\xff\x4a\xff\xff\xff\x7f\x4a\x00\x00\x00\x80\x4b\xff\x4a\xff\xff\xff\
          \xff\x65\x75\x2e";
        let fast = parse(data).unwrap();
        let slow = parse_reader(OneByte(data), data.len() as u64).unwrap();
        let json =
            |p: &Pickle| crate::snapshot::types::to_json(p, p.root(), 16, &mut 10_000).to_string();
        assert_eq!(json(&fast), json(&slow));
        assert!(json(&fast).contains("140483783294977"), "{}", json(&fast));
        assert!(json(&fast).contains("-34359738368"));
        assert!(json(&fast).contains("[65535,2147483647,-2147483648,255,-1]"));
    }

    #[test]
    fn long1_of_every_width_and_sign() {
        let vals = [
            0,
            1,
            -1,
            127,
            128,
            -128,
            -129,
            255,
            (1 << 30) - 1,
            1 << 30,
            -(1 << 30) - 1,
            140_487_900_314_112,
            1_795_944_036_400_133,
            -(1 << 40),
            i64::MAX,
            i64::MIN,
        ];
        // `pickle.dumps(vals, protocol=4)` writes each int with LONG1 when it is wide;
        // here every one is LONG1 of its shortest two's complement length.
        let mut data = b"\x80\x04]\x94(".to_vec();
        for v in vals {
            let b = v.to_le_bytes();
            let len = (1..=8)
                .find(|&n| {
                    let shift = 64 - 8 * n as u32;
                    ((v << shift) >> shift) == v
                })
                .unwrap_or(8);
            data.extend([0x8a, len as u8]);
            data.extend_from_slice(&b[..len]);
        }
        data.extend(b"e.");
        let fast = parse(&data).unwrap();
        let slow = parse_reader(OneByte(&data), data.len() as u64).unwrap();
        for p in [&fast, &slow] {
            let Value::Seq(_, items) = p.get(p.root()) else {
                panic!("not a list");
            };
            let got: Vec<i64> = items
                .refs()
                .iter()
                .map(|&r| match p.get(r) {
                    Value::Int(i) => i,
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(got, vals);
        }
    }
}
