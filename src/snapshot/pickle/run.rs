//! The opcode loop: the fast path for the snapshot's common shapes, and the general
//! step for every other opcode.

use super::*;

impl<I: Input> Machine<I> {
    /// The fast path, for the opcodes that make up nearly 90 % of a snapshot (memo gets,
    /// `MEMOIZE`, `MARK`, ints): while the next opcode and its whole argument are already
    /// buffered and its step cannot fail, steps run here, on the buffer in place with a
    /// local cursor, no per-field length checks and no error plumbing. It stops, having
    /// left that opcode unread, at anything else (including every step that would fail);
    /// the general path then reads the same opcode and reports errors with their offsets.
    /// Returns whether any step ran.
    #[inline(always)]
    pub(super) fn fast_run(&mut self) -> bool {
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

    pub(super) fn run(mut self) -> R<Pickle> {
        let res = self.run_steps();
        self.p.input_bytes = self.at;
        self.p.direct_tables = std::mem::take(&mut self.tables);
        match res {
            Ok(()) => Ok(self.p),
            // The arena is incomplete; `model::from_direct` sees the flag and the input
            // is read again by the general reader, which reports any error itself.
            Err(_) if self.p.needs_general => Ok(self.p),
            Err(e) => Err(e),
        }
    }

    pub(super) fn run_steps(&mut self) -> R<()> {
        self.header()?;
        loop {
            if self.fast_run() {
                continue;
            }
            if self.direct && self.read_entry() {
                continue;
            }
            let op = self.next_op()?;
            self.op = op;
            if self.step(op)? {
                return Ok(());
            }
        }
    }

    /// `PROTO n` with 2 <= n <= 5.
    fn header(&mut self) -> R<()> {
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
        Ok(())
    }

    /// The next opcode, its offset noted in `at`.
    #[inline(always)]
    fn next_op(&mut self) -> R<u8> {
        self.at = self.input.offset();
        match self.input.take_buffered(1) {
            Some(b) => Ok(b[0]),
            None => match self.input.take(1) {
                Ok(Some(b)) => Ok(b[0]),
                Ok(None) => Err(PickleError::NoStop { offset: self.at }),
                Err(e) => Err(PickleError::Io {
                    offset: self.at,
                    message: e.to_string(),
                }),
            },
        }
    }

    /// One opcode of the general path, by job: the memo, scalars, containers, the stack.
    /// True at `STOP`.
    #[inline(always)]
    fn step(&mut self, op: u8) -> R<bool> {
        match op {
            b'h' | b'j' | 0x94 | b'q' | b'r' => self.step_memo(op)?,
            b'K' | b'M' | b'J' | 0x8a | 0x8b | b'G' | b'N' | 0x88 | 0x89 | 0x8c | b'X' | 0x8d
            | b'C' | b'U' | b'B' | b'T' | 0x8e | 0x96 => self.step_scalar(op)?,
            b'}'
            | b']'
            | b')'
            | 0x8f
            | 0x85..=0x87
            | b't'
            | b'l'
            | 0x91
            | b'd'
            | b'a'
            | b'e'
            | 0x90
            | b's'
            | b'u' => self.step_container(op)?,
            _ => return self.step_stack(op),
        }
        Ok(false)
    }

    /// Memo gets and puts.
    fn step_memo(&mut self, op: u8) -> R<()> {
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
            _ => {
                let k = u32::from_le_bytes(self.fixed::<4>("LONG_BINPUT")?) as u64;
                let v = self.top()?;
                self.memo_put(k, v);
            }
        }
        Ok(())
    }

    /// Ints, floats, None, bools, strings and bytes: one value pushed.
    fn step_scalar(&mut self, op: u8) -> R<()> {
        let r = match op {
            b'K' => {
                let v = self.fixed::<1>("BININT1")?[0] as i64;
                self.int(v)?
            }
            b'M' => {
                let v = u16::from_le_bytes(self.fixed::<2>("BININT2")?) as i64;
                self.int(v)?
            }
            b'J' => {
                let v = i32::from_le_bytes(self.fixed::<4>("BININT")?) as i64;
                self.int(v)?
            }
            0x8a => self.long(1)?,
            0x8b => self.long(4)?,
            b'G' => {
                let v = f64::from_be_bytes(self.fixed::<8>("BINFLOAT")?);
                self.node(Node::Float(v))?
            }
            b'N' => self.node(Node::None)?,
            0x88 | 0x89 => self.node(Node::Bool(op == 0x88))?,
            0x8c => self.string(1)?,
            b'X' => self.string(4)?,
            0x8d => self.string(8)?,
            b'C' | b'U' => self.bytes(1)?,
            b'B' | b'T' => self.bytes(4)?,
            _ => self.bytes(8)?,
        };
        self.push(r);
        Ok(())
    }

    /// Empty and built containers, and the appends and set-items that fill them.
    fn step_container(&mut self, op: u8) -> R<()> {
        match op {
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
            _ => self.step_fill(op)?,
        }
        Ok(())
    }

    /// `APPEND`, `APPENDS`, `ADDITEMS`, `SETITEM`, `SETITEMS`: items added to the
    /// container below them.
    fn step_fill(&mut self, op: u8) -> R<()> {
        match op {
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
            _ => {
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
        }
        Ok(())
    }

    /// Marks, frames, pops, dups, `STOP` (true), and the opcodes refused.
    fn step_stack(&mut self, op: u8) -> R<bool> {
        match op {
            b'(' => self.marks.push(self.stack.len()),
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
                return Ok(true);
            }
            b'c' | 0x93 | b'R' | b'b' | b'i' | b'o' | 0x81 | 0x92 | 0x82 | 0x83 | 0x84 | b'P'
            | b'Q' => {
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
        Ok(false)
    }
}

pub(super) fn op_name(op: u8) -> &'static str {
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
