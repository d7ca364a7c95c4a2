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

use std::io::Read;

use super::pages;
use super::trace::{
    direct_entry, direct_entry_layout, EntryField, EntryValues, TraceEntry, TraceTables,
    UNRESOLVED_EMPTY,
};

mod entry;
mod input;
mod intern;
mod machine;
mod run;
mod value;

pub(crate) use input::*;
pub(crate) use intern::*;
use machine::*;
use run::*;
pub use value::*;

/// What went wrong, with the byte offset of the opcode (or length field) at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[expect(
    missing_docs,
    reason = "the #[error] texts say what each variant and field is"
)]
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
        assert_eq!(s.refs().len(), 2);
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
