//! The arena's values: references, nodes, sequences and dicts, and the parsed pickle.

use std::cell::Cell;

use super::*;

pub(super) type R<T> = Result<T, PickleError>;

/// A reference to a value: either an arena node index or, with the top bit set, a small
/// int held inline (31-bit two's complement). Most ints in a snapshot (sizes, lines,
/// streams) fit, which saves a 16-byte node each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueRef(pub(super) u32);

pub(super) const INLINE: u32 = 1 << 31;
/// With the top bit clear and this one set, a reference is an index into `Pickle::wide`:
/// ints wider than 31 bits (the 425k addresses and timestamps of `decode_heavy`) take
/// 8 bytes there instead of a 16-byte node. Node indices stay below this bit.
pub(super) const WIDE: u32 = 1 << 30;
pub(super) const INLINE_MIN: i64 = -(1 << 30);
pub(super) const INLINE_MAX: i64 = (1 << 30) - 1;
pub(super) const MEMO_HOLE: u32 = u32::MAX;

impl ValueRef {
    pub(super) fn int(v: i64) -> Option<ValueRef> {
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
    pub(super) fn inline_int(self) -> Option<i64> {
        if self.0 & INLINE != 0 {
            // Sign-extend the 31-bit payload.
            Some(((self.0 << 1) as i32 >> 1) as i64)
        } else {
            None
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Node {
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
    /// A Python list.
    List,
    /// A tuple.
    Tuple,
    /// A set or frozenset.
    Set,
}

/// A decoded value borrowed from a [`Pickle`].
#[derive(Clone, Copy, Debug)]
pub enum Value<'a> {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An int that fits in 64 bits.
    Int(i64),
    /// An int wider than 64 bits, as little-endian two's complement bytes.
    BigInt(&'a [u8]),
    /// A float.
    Float(f64),
    /// A `str`, borrowed from the pickle's bytes.
    Str(&'a str),
    /// A `bytes` value.
    Bytes(&'a [u8]),
    /// A list, tuple or set.
    Seq(SeqKind, Seq<'a>),
    /// A dict.
    Dict(Dict<'a>),
}

impl<'a> Value<'a> {
    /// The text of a `str`; `None` for any other type.
    pub(crate) fn as_str(&self) -> Option<&'a str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A short name for error messages.
    pub(crate) fn type_name(&self) -> &'static str {
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
    /// The items, as references into the pickle.
    pub fn refs(&self) -> &'a [ValueRef] {
        self.items
    }
}

/// The entries of a dict, in insertion order (later duplicates are kept; `get` returns the
/// last, as Python would).
#[derive(Clone, Copy, Debug)]
pub struct Dict<'a> {
    pub(super) inner: DictInner<'a>,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum DictInner<'a> {
    Split {
        keys: &'a [ValueRef],
        vals: &'a [ValueRef],
    },
    Pairs(&'a [(ValueRef, ValueRef)]),
}

impl<'a> Dict<'a> {
    pub(crate) fn len(&self) -> usize {
        match self.inner {
            DictInner::Split { keys, .. } => keys.len(),
            DictInner::Pairs(p) => p.len(),
        }
    }
    /// Equal for two dicts whose keys are stored in the same place (dicts filled with an
    /// identical key batch share it), so callers can resolve key names once per layout.
    pub(crate) fn layout_id(&self) -> (usize, usize) {
        match self.inner {
            DictInner::Split { keys, .. } => (keys.as_ptr() as usize, keys.len()),
            DictInner::Pairs(p) => (p.as_ptr() as usize, usize::MAX),
        }
    }

    pub(crate) fn pair(&self, i: usize) -> Option<(ValueRef, ValueRef)> {
        match self.inner {
            DictInner::Split { keys, vals } => Some((*keys.get(i)?, *vals.get(i)?)),
            DictInner::Pairs(p) => p.get(i).copied(),
        }
    }
    pub(crate) fn iter(&self) -> impl Iterator<Item = (ValueRef, ValueRef)> + 'a {
        let d = *self;
        (0..d.len()).filter_map(move |i| d.pair(i))
    }
}

/// A decoded pickle: an arena of values and the root reference.
#[derive(Debug, Default)]
pub struct Pickle {
    pub(super) nodes: Vec<Node>,
    /// Ints that do not fit inline (see `WIDE`).
    pub(super) wide: Vec<i64>,
    pub(super) items: Vec<ValueRef>,
    pub(super) big_seqs: Vec<Vec<ValueRef>>,
    pub(super) big_dicts: Vec<Vec<(ValueRef, ValueRef)>>,
    pub(super) text: String,
    pub(super) bytes: Vec<u8>,
    pub(super) root: Option<ValueRef>,
    /// Trace entries decoded as they were read (`parse_direct` only).
    pub(super) direct: Vec<TraceEntry>,
    /// The streams and unknown action names those entries refer to.
    pub(super) direct_tables: TraceTables,
    /// `device_free` of those entries that have one, by index in `direct`.
    pub(super) direct_device_free: Vec<(u32, u64)>,
    /// Set when a `Direct` node is read as a generic value: its keys and values are not
    /// kept, so only a reading with `parse` can answer.
    pub(super) touched_direct: Cell<bool>,
    /// Set when the reader met a use of a decoded entry it cannot replay (a second
    /// batch of items for the same dict); the arena is then incomplete.
    pub(super) needs_general: bool,
    /// Trace entries `read_entry` read whole (the rest took the opcode loop).
    pub(super) read_whole: u32,
    /// Bytes the reader consumed: what bounds how many values the model may build.
    pub(super) input_bytes: u64,
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
    /// Bytes of the pickle that were read.
    pub(crate) fn input_bytes(&self) -> u64 {
        self.input_bytes
    }

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
    pub(crate) fn dict_get(&self, d: &Dict<'_>, key: &str) -> Option<ValueRef> {
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
    pub(crate) fn node_id(&self, r: ValueRef) -> Option<u32> {
        (r.0 & (INLINE | WIDE) == 0).then_some(r.0)
    }

    /// For seqs whose items range is shared between equal batches: a key equal for two
    /// seqs whenever their items are the same range, so callers can cache per content.
    pub(crate) fn seq_storage_key(&self, r: ValueRef) -> Option<(u32, u32)> {
        match self.nodes.get(r.0 as usize)? {
            Node::Seq { start, len, .. } if r.0 & INLINE == 0 => Some((*start, *len)),
            _ => None,
        }
    }
}

pub(super) fn slice<T>(v: &[T], start: u32, len: u32) -> &[T] {
    let s = start as usize;
    v.get(s..s + len as usize).unwrap_or(&[])
}
