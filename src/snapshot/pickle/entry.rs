//! A trace entry read whole. Every entry of a device's trace is the same dict written the
//! same way (`EMPTY_DICT MEMOIZE MARK`, eight key/value pairs, `SETITEMS`), about twenty
//! opcodes that the opcode loop pushes onto the stack one by one for `extend_dict` and
//! `try_direct` to take off again. When the dict's keys are those of the last entry
//! decoded directly, `read_entry` reads the pairs from the buffer in place, decodes the
//! entry with `direct_entry`, and leaves the machine as those opcodes would have left it.

use super::*;

/// Pairs of a trace entry read whole at most (PyTorch 2.x writes eight, nine with
/// `device_free`); a longer dict takes the opcode loop.
const FIELDS_MAX: usize = 12;

/// A field's value as an entry's bytes give it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Val {
    Int(i64),
    Ref(ValueRef),
    /// A fresh list (`EMPTY_LIST MEMOIZE MARK` gets `APPENDS`): the node it becomes, and
    /// where its gets start and end in the entry's bytes.
    List {
        node: u32,
        body: u32,
        end: u32,
    },
}

/// `direct_entry`'s view of the values: ints and strings read as the arena would give
/// them once built.
struct Vals<'a>(&'a Pickle);

impl EntryValues for Vals<'_> {
    type Ref = Val;
    fn int(&self, v: Val) -> Result<i64, &'static str> {
        match v {
            Val::Int(i) => Ok(i),
            Val::Ref(r) => self.0.int(r),
            Val::List { .. } => Err("list"),
        }
    }
    fn str(&self, v: Val) -> Result<&str, &'static str> {
        match v {
            Val::Ref(r) => self.0.str(r),
            Val::Int(_) => Err("int"),
            Val::List { .. } => Err("list"),
        }
    }
    fn raw(v: Val) -> u32 {
        match v {
            Val::Ref(r) => r.0,
            Val::List { node, .. } => node,
            // Not reached: `parse` refuses an int as `frames`, the only field read raw
            // (as a wide int it would have a table slot only the opcode loop gives).
            Val::Int(_) => UNRESOLVED_EMPTY,
        }
    }
}

/// An entry's bytes, read: its length through `SETITEMS`, each pair's value, which
/// values a `MEMOIZE` followed, and how many fresh lists it holds.
struct Parsed {
    len: usize,
    vals: [Val; FIELDS_MAX],
    memoized: u32,
    lists: usize,
}

/// A memo get (`BINGET`, `LONG_BINGET`) at `at`: the value, and the bytes it took. `None`
/// for any other opcode or a key the dense memo does not hold.
#[inline(always)]
fn memo_get(b: &[u8], at: usize, memo: &[u32]) -> Option<(ValueRef, usize)> {
    let (key, n) = match *b.get(at)? {
        b'h' => (*b.get(at + 1)? as usize, 2),
        b'j' => {
            let w = b.get(at + 1..at + 5)?;
            (u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize, 5)
        }
        _ => return None,
    };
    match memo.get(key) {
        Some(&v) if v != MEMO_HOLE => Some((ValueRef(v), n)),
        _ => None,
    }
}

/// The value at `at` and the bytes it took, for the opcodes PyTorch writes in a trace
/// entry: small ints, `LONG1` addresses and times, memo gets, the string last stored
/// (`'N/A'`, written afresh in every entry), a fresh list of gets (`frames`). `next_node`
/// is the node a fresh list becomes. `None` for anything else: the opcode loop reads it.
#[inline(always)]
fn value(
    b: &[u8],
    at: usize,
    memo: &[u32],
    last_str: Option<(&[u8], u32)>,
    next_node: &mut u32,
) -> Option<(Val, usize)> {
    let arg = |from: usize, n: usize| b.get(at + from..at + from + n);
    Some(match *b.get(at)? {
        b'K' => (Val::Int(*b.get(at + 1)? as i64), 2),
        b'M' => {
            let w = arg(1, 2)?;
            (Val::Int(u16::from_le_bytes([w[0], w[1]]) as i64), 3)
        }
        b'J' => {
            let w = arg(1, 4)?;
            (
                Val::Int(i32::from_le_bytes([w[0], w[1], w[2], w[3]]) as i64),
                5,
            )
        }
        0x8a => {
            let len = *b.get(at + 1)? as usize;
            if !(1..=8).contains(&len) {
                return None;
            }
            let mut word = [0u8; 8];
            word[..len].copy_from_slice(arg(2, len)?);
            // Sign-extended from its top byte, as `fast_run` reads it.
            let shift = 64 - 8 * len as u32;
            let v = ((u64::from_le_bytes(word) << shift) as i64) >> shift;
            (Val::Int(v), 2 + len)
        }
        b'h' | b'j' => {
            let (r, n) = memo_get(b, at, memo)?;
            (Val::Ref(r), n)
        }
        0x8c => {
            let len = *b.get(at + 1)? as usize;
            let (stored, node) = last_str?;
            if arg(2, len)? != stored {
                return None;
            }
            (Val::Ref(ValueRef(node)), 2 + len)
        }
        b']' => {
            if arg(1, 2)? != [0x94, b'('] {
                return None;
            }
            // The body's extent only: its gets are those of a body read before
            // (`read_entry` looks it up), or the opcode loop reads the entry.
            let body = at + 3;
            let (mut k, mut gets) = (body, 0);
            loop {
                k += match *b.get(k)? {
                    b'h' => 2,
                    b'j' => 5,
                    b'e' => break,
                    _ => return None,
                };
                gets += 1;
                if gets > LIST_BODY_GETS_MAX {
                    return None;
                }
            }
            let node = *next_node;
            *next_node += 1;
            let (body, end) = (u32::try_from(body).ok()?, u32::try_from(k).ok()?);
            (Val::List { node, body, end }, k + 1 - at)
        }
        _ => return None,
    })
}

/// Reads the entry at the start of `b` (`EMPTY_DICT MEMOIZE MARK`, pairs, `SETITEMS`)
/// whose keys are the refs `keys`, in that order. `first_node` is the node its dict
/// becomes. `None` at anything the opcode loop must read.
fn parse(
    b: &[u8],
    keys: &[ValueRef],
    memo: &[u32],
    last_str: Option<(&[u8], u32)>,
    first_node: u32,
    out: &mut Parsed,
) -> Option<()> {
    if b.get(..3)? != [b'}', 0x94, b'('] || keys.len() > FIELDS_MAX {
        return None;
    }
    let mut next_node = first_node + 1;
    let mut at = 3;
    for (i, &key) in keys.iter().enumerate() {
        let (k, n) = memo_get(b, at, memo)?;
        if k != key {
            return None;
        }
        at += n;
        let (v, n) = value(b, at, memo, last_str, &mut next_node)?;
        at += n;
        if b.get(at) == Some(&0x94) {
            // Only a reference is memoised here as it is: an int would take a table
            // slot, a list a second key.
            if !matches!(v, Val::Ref(_)) {
                return None;
            }
            out.memoized |= 1 << i;
            at += 1;
        }
        out.vals[i] = v;
    }
    if b.get(at) != Some(&b'u') {
        return None;
    }
    out.len = at + 1;
    out.lists = (next_node - first_node - 1) as usize;
    Some(())
}

impl<I: Input> Machine<I> {
    /// At `EMPTY_DICT` in the direct reader: when the dict is a trace entry with the keys
    /// of the last one decoded directly, all in the buffer, reads it whole and returns
    /// true, the machine left as its opcodes would have left it — the dict memoised, its
    /// values' `MEMOIZE`s and fresh lists in order, the entry decoded, the dict's node on
    /// the stack. False with nothing changed otherwise (but for what `direct_entry` adds
    /// to the tables, which the opcode loop adds again the same way).
    pub(super) fn read_entry(&mut self) -> bool {
        let Some((keys, n, Some(layout))) = &self.direct_layout else {
            return false;
        };
        let (keys, n) = (*keys, *n);
        // After a dict of other keys (a frame's), `extend_dict` stores this one's keys
        // again: left to it.
        if self.last_keys != Some((keys, n)) || !self.memo_sparse.is_empty() {
            return false;
        }
        let b = self.input.buffered();
        let first_node = self.p.nodes.len();
        let last_str = (self.last_str.as_ref())
            .and_then(|(len, buf, node)| Some((buf.get(..*len as usize)?, *node)));
        let expected = slice(&self.p.items, keys, n);
        if expected.is_empty() || expected.len() != n as usize {
            return false;
        }
        let mut e = Parsed {
            len: 0,
            vals: [Val::Int(0); FIELDS_MAX],
            memoized: 0,
            lists: 0,
        };
        if parse(b, expected, &self.memo, last_str, first_node as u32, &mut e).is_none() {
            return false;
        }
        let vals = &e.vals[..n as usize];
        let frames_int = (layout.iter().zip(vals))
            .any(|(&f, v)| f == EntryField::Frames && matches!(v, Val::Int(_)));
        // The room the opcode loop would find, or it reports the error itself.
        let room =
            first_node + 1 + e.lists < WIDE as usize && u32::try_from(self.p.direct.len()).is_ok();
        if frames_int || !room {
            return false;
        }
        // Each fresh list's body, read before: its items (a new body is left to the
        // opcode loop, which stores it for the next time).
        let mut bodies = [(0u32, 0u32); FIELDS_MAX];
        for (slot, v) in bodies.iter_mut().zip(vals) {
            if let Val::List { body, end, .. } = *v {
                let gets = b.get(body as usize..end as usize).unwrap_or(&[]);
                match self.list_bodies.known(gets) {
                    Some(items) => *slot = items,
                    None => return false,
                }
            }
        }
        let vals = vals.iter().copied();
        let Some((entry, device_free)) =
            direct_entry(&Vals(&self.p), layout, vals, &mut self.tables)
        else {
            return false;
        };
        // Committed: what the opcodes do, in their order.
        let d = first_node as u32;
        self.p.nodes.push(Node::Dict {
            keys: 0,
            vals: 0,
            len: 0,
        });
        self.memo.push(d);
        for (i, &v) in e.vals[..n as usize].iter().enumerate() {
            match v {
                Val::List { node, .. } => {
                    let (start, len) = bodies[i];
                    self.p.nodes.push(Node::Seq {
                        kind: SeqKind::List,
                        start,
                        len,
                    });
                    self.memo.push(node);
                }
                Val::Ref(r) if e.memoized & (1 << i) != 0 => {
                    pin_wide(&mut self.wide_pinned, &[r]);
                    self.memo.push(r.0);
                }
                Val::Ref(r) if layout.get(i) == Some(&EntryField::Frames) => {
                    pin_wide(&mut self.wide_pinned, &[r]);
                }
                _ => {}
            }
        }
        let idx = self.p.direct.len() as u32;
        self.p.direct.push(entry);
        if let Some(free) = device_free {
            self.p.direct_device_free.push((idx, free));
        }
        self.p.nodes[d as usize] = Node::Direct { idx };
        self.stack.push(ValueRef(d));
        self.p.read_whole += 1;
        self.input.advance(e.len);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearly_every_entry_of_a_real_snapshot_is_read_whole() {
        // The opcode loop reads an entry whose list body is new, or whose keys follow a
        // dict of other keys (a frame's, where a stack is met the first time).
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        for (run, rank, entries, whole) in [
            ("tp8-baseline", 0, 718, 692),
            ("tp2-frag-grouped", 1, 1692, 1649),
        ] {
            let path = root.join(run).join(format!("snapshot_rank{rank}.pickle"));
            let data = std::fs::read(&path).expect("a bundled sample");
            let p = parse_direct_bytes(&data).expect("a real snapshot reads");
            assert_eq!((p.direct.len(), p.read_whole), (entries, whole), "{run}");
        }
    }
}
