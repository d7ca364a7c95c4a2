//! Broken and hostile inputs: each gives a typed error with a byte offset, never a panic,
//! never an allocation sized by an untrusted length.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use rankscope::snapshot::pickle::{parse, PickleError, SeqKind, Value};
use rankscope::snapshot::{read_bytes, SnapshotError};

fn sample_bytes() -> Vec<u8> {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/tp8-custom-ar/snapshot_rank0.pickle");
    std::fs::read(p).unwrap()
}

#[test]
fn truncated_at_every_offset_of_a_real_prefix() {
    let data = sample_bytes();
    let n = data.len().min(6000);
    for cut in 0..n {
        let err = parse(&data[..cut]).expect_err("a cut pickle must not parse");
        let off = err.offset().expect("an offset");
        assert!(off <= cut as u64, "cut {cut}: offset {off} for {err}");
    }
    // Cut anywhere in the whole file (sampled), through the snapshot API as well.
    for cut in (0..data.len()).step_by(997) {
        let err = read_bytes(&data[..cut]).expect_err("cut");
        assert!(matches!(err, SnapshotError::Pickle { .. }), "{err}");
        assert!(err.offset().is_some());
    }
}

#[test]
fn the_whole_file_still_parses() {
    let s = read_bytes(&sample_bytes()).unwrap();
    assert_eq!(s.segments.len(), 158);
}

#[test]
fn wrong_magic() {
    assert_eq!(
        parse(b"hello").unwrap_err(),
        PickleError::BadMagic { found: b'h' }
    );
    assert_eq!(parse(b"").unwrap_err(), PickleError::Empty);
    assert!(matches!(
        parse(b"\x80\x09N.").unwrap_err(),
        PickleError::BadProtocol {
            protocol: 9,
            offset: 1
        }
    ));
    let e = read_bytes(b"PK\x03\x04zipfile").unwrap_err();
    assert!(e.to_string().contains("not a pickle"), "{e}");
}

#[test]
fn code_opcodes_are_refused_with_their_offset() {
    // pickle.dumps of os.system via GLOBAL + REDUCE, protocol 2.
    let e = parse(b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00idR.").unwrap_err();
    assert_eq!(
        e,
        PickleError::Forbidden {
            name: "GLOBAL",
            offset: 2
        }
    );
    assert!(e.to_string().contains("GLOBAL") && e.to_string().contains("byte 2"));
    let e = parse(b"\x80\x04N)R.").unwrap_err();
    assert_eq!(
        e,
        PickleError::Forbidden {
            name: "REDUCE",
            offset: 4
        }
    );
    let e = parse(b"\x80\x04\x8c\x02os\x8c\x06system\x93.").unwrap_err();
    assert_eq!(
        e,
        PickleError::Forbidden {
            name: "STACK_GLOBAL",
            offset: 14
        }
    );
    for (op, name) in [
        (b'b', "BUILD"),
        (b'o', "OBJ"),
        (0x81u8, "NEWOBJ"),
        (b'i', "INST"),
    ] {
        let e = parse(&[0x80, 4, b'N', op, b'.']).unwrap_err();
        assert_eq!(e, PickleError::Forbidden { name, offset: 3 });
    }
}

#[test]
fn unknown_opcode() {
    assert_eq!(
        parse(b"\x80\x04N\xff.").unwrap_err(),
        PickleError::UnknownOpcode {
            op: 0xff,
            offset: 3
        }
    );
}

#[test]
fn nesting_100_000_deep() {
    let depth = 100_000;
    // EMPTY_LIST x depth, then APPEND x (depth-1): each list inside the one below it.
    let mut p = vec![0x80, 4];
    p.extend(std::iter::repeat_n(b']', depth));
    p.extend(std::iter::repeat_n(b'a', depth - 1));
    p.push(b'.');
    let pk = parse(&p).unwrap();
    // Walk it iteratively: the depth is all there.
    let mut r = pk.root();
    let mut seen = 1;
    while let Value::Seq(SeqKind::List, s) = pk.get(r) {
        match s.refs().first() {
            Some(&inner) => {
                r = inner;
                seen += 1;
            }
            None => break,
        }
    }
    assert_eq!(seen, depth);
    // The snapshot layer wants a dict and says so, without walking the depth.
    let e = read_bytes(&p).unwrap_err();
    assert!(e.to_string().contains("expected dict"), "{e}");

    // MARK-based nesting (LIST), 100,000 deep inside a key the model renders to JSON.
    let mut fixed = b"\x80\x04}(\x8c\x08segments]\x8c\x12allocator_settings".to_vec();
    fixed.extend(std::iter::repeat_n(b'(', depth));
    fixed.extend(std::iter::repeat_n(b'l', depth));
    fixed.extend(b"u.");
    let s = read_bytes(&fixed).unwrap();
    assert!(s.segments.is_empty());
    assert!(s.allocator_settings.to_string().contains('…'));
}

#[test]
fn huge_length_prefixes_are_checked_before_allocating() {
    let mut p = b"\x80\x04\x8d".to_vec();
    p.extend(u64::MAX.to_le_bytes());
    assert_eq!(
        parse(&p).unwrap_err(),
        PickleError::LengthTooLarge {
            len: u64::MAX,
            remaining: 0,
            offset: 3
        }
    );
    let e = parse(b"\x80\x04X\xff\xff\xff\xffabc.").unwrap_err();
    assert_eq!(
        e,
        PickleError::LengthTooLarge {
            len: 0xffff_ffff,
            remaining: 4,
            offset: 3
        }
    );
    assert!(e.to_string().contains("byte 3"));
    let mut p = b"\x80\x04\x8e".to_vec();
    p.extend((1u64 << 40).to_le_bytes());
    assert!(matches!(parse(&p), Err(PickleError::LengthTooLarge { .. })));
    let e = parse(b"\x80\x04\x8b\xff\xff\xff\x7f.").unwrap_err();
    assert!(matches!(e, PickleError::LengthTooLarge { offset: 3, .. }));
}

#[test]
fn huge_memo_keys_do_not_size_anything() {
    // LONG_BINPUT 0xfffffffe then LONG_BINGET of it.
    let p = parse(b"\x80\x04Nr\xfe\xff\xff\xff0j\xfe\xff\xff\xff.").unwrap();
    assert!(matches!(p.get(p.root()), Value::None));
    assert_eq!(
        parse(b"\x80\x04h\x05.").unwrap_err(),
        PickleError::MemoMissing { key: 5, offset: 2 }
    );
}

#[test]
fn cycles_and_exponential_sharing_stay_bounded() {
    // l = []; l.append(l) as the snapshot's allocator_settings.
    let p = b"\x80\x04}(\x8c\x08segments]\x8c\x12allocator_settings]\x94h\x00au.";
    let e = read_bytes(p);
    // memo 0 is the empty list here (the dict was not memoised), so this is a cycle.
    let s = e.unwrap();
    assert!(s.allocator_settings.to_string().len() < 10_000);

    // x = [x0, x0] sixty levels deep: 2^60 paths through 60 nodes.
    let mut q = b"\x80\x04}(\x8c\x08segments]\x8c\x12allocator_settingsN".to_vec();
    for _ in 0..60 {
        q.extend(b"\x94h\x00\x86"); // memoise top, push it again, TUPLE2
        q.extend(b"0"); // drop it ...
        q.extend(b"h\x00h\x00\x86"); // ... and rebuild from the memo
    }
    q.extend(b"u.");
    if let Ok(s) = read_bytes(&q) {
        assert!(s.allocator_settings.to_string().len() < 50_000_000);
    }
}

#[test]
fn stack_underflow_and_stray_marks() {
    assert!(matches!(
        parse(b"\x80\x04.").unwrap_err(),
        PickleError::Malformed { offset: 2, .. }
    ));
    assert!(matches!(
        parse(b"\x80\x04a.").unwrap_err(),
        PickleError::Malformed { offset: 2, .. }
    ));
    assert!(matches!(
        parse(b"\x80\x04(N.").unwrap_err(),
        PickleError::Malformed { .. }
    ));
    assert!(matches!(
        parse(b"\x80\x04Ne.").unwrap_err(),
        PickleError::Malformed { .. }
    ));
    assert!(matches!(
        parse(b"\x80\x04}NNNu.").unwrap_err(),
        PickleError::Malformed { .. }
    ));
    assert!(matches!(
        parse(b"\x80\x04N").unwrap_err(),
        PickleError::NoStop { offset: 3 }
    ));
    assert!(matches!(
        parse(b"\x80\x04\x8c\x02\xff\xfe.").unwrap_err(),
        PickleError::Utf8 { offset: 4 }
    ));
}

#[test]
fn mutated_real_snapshot_never_panics() {
    let data = sample_bytes();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..300 {
        let mut d = data.clone();
        for _ in 0..4 {
            let i = (next() % d.len() as u64) as usize;
            d[i] = next() as u8;
        }
        let _ = read_bytes(&d);
    }
}

#[test]
fn wrong_shapes_name_the_key() {
    // {'segments': [{'total_size': 'big'}]}
    let p = b"\x80\x04}(\x8c\x08segments](}(\x8c\ntotal_size\x8c\x03bigueu.";
    let e = read_bytes(p).unwrap_err().to_string();
    assert!(
        e.contains("segments[0].total_size") && e.contains("expected int"),
        "{e}"
    );
    // {'device_traces': 3}
    let p = b"\x80\x04}(\x8c\x08segments]\x8c\rdevice_tracesK\x03u.";
    let e = read_bytes(p).unwrap_err().to_string();
    assert!(
        e.contains("device_traces") && e.contains("expected list"),
        "{e}"
    );
    let e = read_bytes(b"\x80\x04}.").unwrap_err().to_string();
    assert!(e.contains("segments") && e.contains("missing"), "{e}");
}
