//! Interning: pre-hashed keys, shared item batches and list bodies, so that repeated
//! stacks and dict keys are stored once.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::*;

/// Identity hasher for keys that already are hashes.
#[derive(Default)]
pub(super) struct PreHashed(pub(super) u64);
impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {}
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}
pub(super) type PreMap<V> = HashMap<u64, V, BuildHasherDefault<PreHashed>>;

/// A small multiplicative hasher for integer keys (node ids, ranges): SipHash's DoS
/// resistance buys nothing for keys that are arena indices, and costs a tenth of the time.
#[derive(Default)]
pub(crate) struct FastHasher(u64);
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
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

#[inline]
pub(super) fn mix(h: u64, v: u64) -> u64 {
    (h.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

pub(super) fn hash_bytes(b: &[u8]) -> u64 {
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
pub(super) fn pin_wide(pinned: &mut u32, refs: &[ValueRef]) {
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
pub(super) fn batch_hash(batch: &[ValueRef]) -> u64 {
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
pub(super) const SHARE_MAX: usize = 256;

/// `Machine::store_batch` on the fields it needs, so a batch can be stored straight from
/// the machine's stack without copying it out first.
pub(super) fn store_batch(
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
pub(super) type KeyLayout = (u32, u32, Option<Box<[EntryField]>>);

/// When the wide-int slots that `batch` (a decoded entry's pairs) refers to are exactly
/// the last slots of `wide`, all unpinned, the length to cut `wide` back to: nothing
/// else refers to those slots (the memo and containers pin theirs; the stack below a
/// dict's items was pushed before them). `None` otherwise, and nothing is cut.
pub(super) fn unpinned_tail(wide: &[i64], pinned: u32, batch: &[ValueRef]) -> Option<usize> {
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
pub(super) struct ListBodies {
    /// By hash of the body's bytes: where the bytes are kept, and the items range.
    pub(super) by_hash: PreMap<(u32, u32, u32, u32)>,
    pub(super) bytes: Vec<u8>,
    pub(super) scratch: Vec<ValueRef>,
}

/// Bytes of list bodies kept at most; past it, bodies are executed as read (a hostile
/// file of all-distinct bodies costs this much memory and no more).
pub(super) const LIST_BODY_BYTES_MAX: usize = 1 << 20;
/// Gets per body looked at; longer lists are executed as read, as `store_batch` does not
/// share them either.
pub(super) const LIST_BODY_GETS_MAX: usize = SHARE_MAX;

impl ListBodies {
    pub(super) fn clear(&mut self) {
        self.by_hash.clear();
        self.bytes.clear();
    }

    /// The items range of a body read before, by its gets' bytes (without `APPENDS`).
    #[inline]
    pub(super) fn known(&self, gets: &[u8]) -> Option<(u32, u32)> {
        if gets.is_empty() {
            return None;
        }
        let &(bs, bl, start, len) = self.by_hash.get(&hash_bytes(gets))?;
        (self.bytes.get(bs as usize..(bs + bl) as usize) == Some(gets)).then_some((start, len))
    }

    /// At a `MARK` whose body follows in `body`: when the stack's top is a fresh empty
    /// list above every mark and the body is memo gets only, ended by `APPENDS`, all in
    /// the buffer and all keys in the dense memo, fills the list as the steps would and
    /// returns the bytes used (body and `APPENDS`). `None` otherwise, with nothing changed.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn fill(
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
        if let Some((start, len)) = self.known(gets_bytes) {
            p.nodes[idx] = Node::Seq { kind, start, len };
            return Some(at + 1);
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
            self.by_hash
                .insert(hash_bytes(gets_bytes), (bs, at as u32, start, len));
        }
        Some(at + 1)
    }
}
