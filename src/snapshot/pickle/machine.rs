//! The stack machine's state and its primitive steps: reading lengths and strings,
//! building containers, the memo.

use std::collections::HashMap;

use super::*;

pub(super) struct Machine<I: Input> {
    pub(super) input: I,
    pub(super) p: Pickle,
    pub(super) stack: Vec<ValueRef>,
    pub(super) marks: Vec<usize>,
    /// Dense memo; `MEMO_HOLE` marks keys never stored. Four bytes per entry because
    /// the 568k entries of a large snapshot are read at random, so cache lines matter.
    pub(super) memo: Vec<u32>,
    /// Where the last dict's key batch went: consecutive trace entries share keys, and a
    /// direct comparison is cheaper than hashing.
    pub(super) last_keys: Option<(u32, u32)>,
    pub(super) memo_sparse: HashMap<u64, ValueRef>,
    pub(super) strings: PreMap<Vec<u32>>,
    pub(super) batches: PreMap<(u32, u32)>,
    pub(super) scratch: Vec<ValueRef>,
    pub(super) scratch2: Vec<ValueRef>,
    /// Offset and byte of the opcode being executed, for errors.
    pub(super) at: u64,
    pub(super) op: u8,
    /// Decode trace-entry dicts straight into `TraceEntry`s (`parse_direct`).
    pub(super) direct: bool,
    /// Wide-int slots below this are referenced from the memo or a container; those
    /// above it only from the stack, so a decoded entry's addresses and times can be
    /// dropped from the table when they are its last slots.
    pub(super) wide_pinned: u32,
    /// The key batch (start, len) last classified, and its fields when it is a layout
    /// `trace::direct_entry` can decode.
    pub(super) direct_layout: Option<KeyLayout>,
    /// The last short string stored as read, and its node: torch writes one value
    /// (`'N/A'`) afresh in every trace entry, and between two of them pickle's own memo
    /// serves the other strings, so this spares the hash and the candidate list.
    pub(super) last_str: Option<(u8, [u8; LAST_STR_MAX], u32)>,
    /// What directly decoded entries refer to (moved to the `Pickle` at the end).
    pub(super) tables: TraceTables,
    /// List bodies seen before (see `ListBodies`).
    pub(super) list_bodies: ListBodies,
}

pub(super) const LAST_STR_MAX: usize = 16;

/// A string short enough to keep as `Machine::last_str`, with its node.
pub(super) fn short_str(raw: &[u8], node: u32) -> Option<(u8, [u8; LAST_STR_MAX], u32)> {
    let mut buf = [0u8; LAST_STR_MAX];
    buf.get_mut(..raw.len())?.copy_from_slice(raw);
    Some((raw.len() as u8, buf, node))
}

/// Stores an int wider than an inline ref in the side table (`None` when it is full).
pub(super) fn push_wide(wide: &mut Vec<i64>, v: i64) -> Option<ValueRef> {
    let idx = wide.len();
    if idx >= WIDE as usize {
        return None;
    }
    wide.push(v);
    Some(ValueRef(WIDE | idx as u32))
}

impl<I: Input> Machine<I> {
    pub(super) fn new(input: I) -> Self {
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
    pub(super) fn presize(&mut self, total: u64) {
        let per = |bytes: u64| usize::try_from(total / bytes).unwrap_or(usize::MAX);
        pages::reserve_huge(&mut self.p.direct, per(96));
        // The memo is 2.3 MiB in decode_heavy: room for twice that, so whole huge pages
        // fit inside it.
        pages::reserve_huge(&mut self.memo, per(20));
        pages::reserve_huge(&mut self.p.nodes, per(56));
    }

    pub(super) fn malformed(&self, why: &'static str) -> PickleError {
        PickleError::Malformed {
            name: op_name(self.op),
            offset: self.at,
            why,
        }
    }

    #[inline(always)]
    pub(super) fn take(&mut self, n: usize, what: &'static str) -> R<&[u8]> {
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
    pub(super) fn take_slow(&mut self, n: usize, what: &'static str) -> R<&[u8]> {
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
    pub(super) fn fixed<const N: usize>(&mut self, what: &'static str) -> R<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Reads a length field and rejects it unless that many bytes are actually left.
    pub(super) fn length(&mut self, width: usize) -> R<usize> {
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

    pub(super) fn node(&mut self, n: Node) -> R<ValueRef> {
        let idx = self.p.nodes.len();
        if idx >= WIDE as usize {
            return Err(PickleError::TooLarge { offset: self.at });
        }
        self.p.nodes.push(n);
        Ok(ValueRef(idx as u32))
    }

    /// Stores an int that does not fit inline; `None` when the table is full.
    #[inline]
    pub(super) fn wide_int(&mut self, v: i64) -> Option<ValueRef> {
        push_wide(&mut self.p.wide, v)
    }

    #[inline]
    pub(super) fn push(&mut self, r: ValueRef) {
        self.stack.push(r);
    }

    #[inline]
    pub(super) fn pop(&mut self) -> R<ValueRef> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.malformed("stack is empty"));
        }
        self.stack
            .pop()
            .ok_or_else(|| self.malformed("stack is empty"))
    }

    pub(super) fn top(&self) -> R<ValueRef> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.malformed("stack is empty"));
        }
        self.stack
            .last()
            .copied()
            .ok_or_else(|| self.malformed("stack is empty"))
    }

    pub(super) fn pop_mark(&mut self) -> R<usize> {
        self.marks.pop().ok_or_else(|| self.malformed("no MARK"))
    }

    pub(super) fn int(&mut self, v: i64) -> R<ValueRef> {
        match ValueRef::int(v) {
            Some(r) => Ok(r),
            None => self
                .wide_int(v)
                .ok_or(PickleError::TooLarge { offset: self.at }),
        }
    }

    pub(super) fn long(&mut self, width: usize) -> R<ValueRef> {
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

    pub(super) fn append_bytes(&mut self, b: &[u8]) -> R<u32> {
        let start = self.p.bytes.len();
        if start + b.len() > u32::MAX as usize {
            return Err(PickleError::TooLarge { offset: self.at });
        }
        self.p.bytes.extend_from_slice(b);
        Ok(start as u32)
    }

    pub(super) fn string(&mut self, width: usize) -> R<ValueRef> {
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

    pub(super) fn bytes(&mut self, width: usize) -> R<ValueRef> {
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
    pub(super) fn store_batch(&mut self, batch: &[ValueRef]) -> R<u32> {
        store_batch(
            &mut self.p.items,
            &mut self.batches,
            &mut self.wide_pinned,
            batch,
            self.at,
        )
    }

    pub(super) fn new_seq(&mut self, kind: SeqKind, items: &[ValueRef]) -> R<ValueRef> {
        let start = self.store_batch(items)?;
        self.node(Node::Seq {
            kind,
            start,
            len: items.len() as u32,
        })
    }

    /// Moves the stack above `from` into the scratch buffer, reusing its allocation.
    pub(super) fn take_batch(&mut self, from: usize) -> Vec<ValueRef> {
        let mut batch = std::mem::take(&mut self.scratch);
        batch.clear();
        batch.extend_from_slice(self.stack.get(from..).unwrap_or(&[]));
        self.stack.truncate(from);
        batch
    }

    /// APPEND/APPENDS/ADDITEMS: extend the list below the mark with the stack tail.
    pub(super) fn extend_seq(&mut self, target: ValueRef, from: usize) -> R<()> {
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

    pub(super) fn extend_seq_with(&mut self, target: ValueRef, batch: &[ValueRef]) -> R<()> {
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
    pub(super) fn extend_dict(&mut self, target: ValueRef, from: usize) -> R<()> {
        if !(self.stack.len() - from).is_multiple_of(2) {
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
    pub(super) fn try_direct(&mut self, idx: usize, keys: u32, n: usize, from: usize) -> bool {
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

    pub(super) fn extend_dict_with(&mut self, target: ValueRef, batch: &[ValueRef]) -> R<()> {
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
    pub(super) fn memo_put(&mut self, key: u64, v: ValueRef) {
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
    pub(super) fn memo_get(&mut self, key: u64) -> R<ValueRef> {
        let found = match self.memo.get(key as usize) {
            Some(&v) if v != MEMO_HOLE => Some(ValueRef(v)),
            _ => self.memo_sparse.get(&key).copied(),
        };
        found.ok_or(PickleError::MemoMissing {
            key,
            offset: self.at,
        })
    }
}
