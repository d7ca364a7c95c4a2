//! Trace entries decoded straight into the model while the pickle is read
//! (`read_bytes`/`read_path`) must give exactly what the general reader gives
//! (`pickle::parse` + `types::from_pickle`): the same snapshot, or the same error. The
//! hand-made pickles below use a decoded entry in every way the direct path cannot follow
//! itself, so each must fall back to the general reader.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use rankscope::snapshot::{pickle, read_bytes, read_path, types, Action};

/// The general reader's answer, as text: the snapshot's `Debug` rendering (every field) or
/// the error message.
fn general(data: &[u8]) -> String {
    match pickle::parse(data) {
        Ok(p) => match types::from_pickle(&p) {
            Ok(s) => format!("{s:?}"),
            Err(e) => format!("error: {e}"),
        },
        Err(e) => format!("error: pickle: {e}"),
    }
}

fn direct(data: &[u8]) -> String {
    match read_bytes(data) {
        Ok(s) => format!("{s:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// A protocol-4 pickle written opcode by opcode.
#[derive(Default)]
struct P(Vec<u8>);
impl P {
    fn new() -> P {
        P(vec![0x80, 4])
    }
    fn op(mut self, b: &[u8]) -> P {
        self.0.extend_from_slice(b);
        self
    }
    /// SHORT_BINUNICODE
    fn s(mut self, t: &str) -> P {
        self.0.push(0x8c);
        self.0.push(t.len() as u8);
        self.0.extend_from_slice(t.as_bytes());
        self
    }
    /// BININT1
    fn k(self, v: u8) -> P {
        self.op(&[b'K', v])
    }
    /// LONG1 of 8 bytes
    fn long(mut self, v: i64) -> P {
        self.0.extend_from_slice(&[0x8a, 8]);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn memoize(self) -> P {
        self.op(&[0x94])
    }
    fn get(self, k: u8) -> P {
        self.op(&[b'h', k])
    }
    fn pipe(self, f: impl FnOnce(P) -> P) -> P {
        f(self)
    }
    fn done(self) -> Vec<u8> {
        let mut v = self.0;
        v.push(b'.');
        v
    }
}

/// `{'action': 'alloc', 'addr': ADDR, 'size': SIZE, 'frames': []}` as an open dict
/// (MARK pushed, items pushed, SETITEMS not yet written) — memo keys are not used.
fn entry(p: P, addr: i64, size: u8) -> P {
    p.op(b"}(")
        .s("action")
        .s("alloc")
        .s("addr")
        .long(addr)
        .s("size")
        .k(size)
        .s("frames")
        .op(b"]")
}

fn same(data: &[u8]) -> String {
    let (d, g) = (direct(data), general(data));
    assert_eq!(d, g);
    d
}

#[test]
fn real_snapshots_read_the_same_both_ways() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut n = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "pickle") {
                let data = std::fs::read(&f).unwrap();
                same(&data);
                // And through the file reader.
                let from_file = format!("{:?}", read_path(&f).unwrap());
                assert_eq!(from_file, general(&data), "{}", f.display());
                n += 1;
            }
        }
    }
    // samples/: tp1 ×2, tp2-frag-* ×4, tp2-nccl-fail ×2, tp8-* ×24.
    assert_eq!(n, 32);
}

#[test]
fn one_entry_dict_listed_twice_is_read_twice() {
    // {'segments': [], 'device_traces': [[E, E]]}, E memoised as key 0 and fetched again.
    let data = P::new()
        .op(b"}(")
        .s("segments")
        .op(b"]")
        .s("device_traces")
        .op(b"](") // device_traces and its MARK
        .op(b"](") // the device's list and its MARK
        .op(b"}")
        .memoize() // memo key 0: E
        .op(b"(")
        .s("action")
        .s("alloc")
        .s("addr")
        .long(1 << 40)
        .op(b"u")
        .get(0)
        .op(b"e") // APPENDS to the device list
        .op(b"e") // APPENDS to the outer list
        .op(b"u")
        .done();
    let out = same(&data);
    let s = read_bytes(&data).unwrap();
    assert_eq!(s.device_traces.len(), 1);
    assert_eq!(s.device_traces[0].len(), 2, "{out}");
    for e in &s.device_traces[0] {
        assert_eq!(e.addr, 1 << 40);
        assert_eq!(e.action, Action::Alloc);
    }
}

#[test]
fn an_entry_dict_filled_twice_keeps_both_batches() {
    // E = {'action': 'alloc'} by SETITEMS, then E['size'] = 5 by a second SETITEM.
    let data = P::new()
        .op(b"}(")
        .s("segments")
        .op(b"]")
        .s("device_traces")
        .op(b"]]}(")
        .s("action")
        .s("alloc")
        .op(b"u")
        .s("size")
        .k(5)
        .op(b"s") // SETITEM on E
        .op(b"a") // APPEND E to the device list
        .op(b"a") // APPEND the device list to device_traces
        .op(b"u")
        .done();
    same(&data);
    let s = read_bytes(&data).unwrap();
    assert_eq!(s.device_traces[0][0].size, 5);
}

#[test]
fn an_entry_dict_also_read_as_settings_is_rendered_whole() {
    // allocator_settings is the same dict object as the only trace entry.
    let data = entry(
        P::new()
            .op(b"}(")
            .s("segments")
            .op(b"]")
            .s("device_traces")
            .op(b"]]"),
        4096,
        7,
    )
    .op(b"u")
    .memoize() // 0: E
    .op(b"a")
    .op(b"a")
    .s("allocator_settings")
    .get(0)
    .op(b"u")
    .done();
    let out = same(&data);
    let s = read_bytes(&data).unwrap();
    assert_eq!(s.device_traces[0][0].size, 7);
    assert_eq!(
        s.allocator_settings,
        serde_json::json!({"action": "alloc", "addr": 4096, "size": 7, "frames": []}),
        "{out}"
    );
}

#[test]
fn bad_fields_give_the_general_errors() {
    let root = || {
        P::new()
            .op(b"}(")
            .s("segments")
            .op(b"]")
            .s("device_traces")
            .op(b"]]")
    };
    // frames = 7: decoded directly, then refused where the stack is resolved.
    let data = root()
        .op(b"}(")
        .s("action")
        .s("alloc")
        .s("frames")
        .k(7)
        .op(b"uaau")
        .done();
    assert_eq!(
        same(&data),
        "error: snapshot key `device_traces[0][0].frames`: expected list, found int"
    );
    // addr = -1: never decoded directly; the general path names the key.
    let data = root()
        .op(b"}(")
        .s("action")
        .s("alloc")
        .s("addr")
        .long(-1)
        .op(b"uaau")
        .done();
    assert_eq!(
        same(&data),
        "error: snapshot key `device_traces[0][0].addr`: expected non-negative int, found negative int"
    );
}

#[test]
fn two_devices_each_get_their_entries() {
    // device_traces = [[E(addr 1, size 2)], [E(addr 3, size 4), E(addr 5, size 6)]].
    let p = P::new()
        .op(b"}(")
        .s("segments")
        .op(b"]")
        .s("device_traces")
        .op(b"](");
    let p = entry(p.op(b"]"), 1, 2).op(b"ua");
    let p = entry(entry(p.op(b"]("), 3, 4).op(b"u"), 5, 6).op(b"ue");
    let data = p.op(b"eu").done();
    same(&data);
    let s = read_bytes(&data).unwrap();
    let got: Vec<Vec<(u64, u64)>> = s
        .device_traces
        .iter()
        .map(|t| t.iter().map(|e| (e.addr, e.size)).collect())
        .collect();
    assert_eq!(got, vec![vec![(1, 2)], vec![(3, 4), (5, 6)]]);
}

#[test]
fn a_memoised_address_outlives_its_decoded_entry() {
    // The entry's addr (2^40 + 5, a wide int) is memoised and read again as
    // allocator_settings after the entry was decoded: its slot must survive.
    let data = P::new()
        .op(b"}(")
        .s("segments")
        .op(b"]")
        .s("device_traces")
        .op(b"]]}(")
        .s("action")
        .s("alloc")
        .s("addr")
        .long((1 << 40) + 5)
        .memoize() // memo key 0: the address
        .s("time_us")
        .long(1 << 50)
        .op(b"uaa")
        .s("allocator_settings")
        .get(0)
        .op(b"u")
        .done();
    same(&data);
    let s = read_bytes(&data).unwrap();
    assert_eq!(s.device_traces[0][0].addr, (1 << 40) + 5);
    assert_eq!(s.device_traces[0][0].time_us, 1 << 50);
    assert_eq!(s.allocator_settings, serde_json::json!((1u64 << 40) + 5));
}

/// `{'segments': [], 'device_traces': [], 'x': 'a' (memo 0), 'allocator_settings': [...]}`
/// with the settings list's items written by `items` (MARK and APPENDS around them), and
/// a last key after it: the reader's fast steps need some bytes beyond the one they run.
fn settings_list(items: impl FnOnce(P) -> P) -> Vec<u8> {
    let p = P::new()
        .op(b"}(")
        .s("segments")
        .op(b"]")
        .s("device_traces")
        .op(b"]")
        .s("x")
        .s("a")
        .memoize()
        .s("allocator_settings")
        .op(b"](");
    items(p)
        .op(b"e")
        .s("padding")
        .s("sixteen bytes...")
        .op(b"u")
        .done()
}

#[test]
fn a_list_body_read_again_after_its_memo_key_is_rebound_gets_the_new_value() {
    // Three fresh lists with the same body, `[memo 0]`; between the second and the third,
    // BINPUT 0 rebinds memo 0 from 'a' to 'b'. The direct reader serves a repeated body
    // from what it produced before (a call stack per trace entry, 4 M gets in
    // decode_heavy): that must not outlive the rebinding.
    let one = |p: P| p.op(b"](").get(0).op(b"e");
    let data = settings_list(|p| one(one(p)).s("b").op(&[b'q', 0]).pipe(one));
    same(&data);
    let s = read_bytes(&data).unwrap();
    assert_eq!(
        s.allocator_settings,
        serde_json::json!([["a"], ["a"], "b", ["b"]])
    );
}

#[test]
fn a_repeated_list_body_with_a_missing_key_fails_as_the_general_reader_does() {
    let data = settings_list(|p| p.op(b"](").get(0).op(b"e").op(b"](").get(0).get(7).op(b"e"));
    let got = same(&data);
    assert!(got.contains("memo key 7"), "{got}");
}

#[test]
fn repeated_list_bodies_of_both_get_widths_read_the_same_both_ways() {
    // BINGET and LONG_BINGET of the same key, in one body, twice, then a body that is a
    // prefix of it: each list gets its own items.
    let body = |p: P| p.op(b"](").get(0).op(&[b'j', 0, 0, 0, 0]).op(b"e");
    let data = settings_list(|p| body(body(p)).op(b"](").get(0).op(b"e"));
    same(&data);
    let s = read_bytes(&data).unwrap();
    assert_eq!(
        s.allocator_settings,
        serde_json::json!([["a", "a"], ["a", "a"], ["a"]])
    );
}

/// `{'action': ACTION, 'addr': ADDR, 'size': 4096, 'stream': STREAM, 'frames': []}`, open.
fn entry_on(p: P, action: &str, addr: i64, stream: i64) -> P {
    p.op(b"}(")
        .s("action")
        .s(action)
        .s("addr")
        .long(addr)
        .s("size")
        .op(&[b'M', 0, 16])
        .s("stream")
        .long(stream)
        .s("frames")
        .op(b"]")
}

#[test]
fn unknown_actions_and_streams_are_kept_by_index_and_reported() {
    // One device: alloc on stream 0x7f00, two 'segment_defrag' (a name no PyTorch
    // writes) on stream 0x7f00 and 0, and an alloc on 0. Decoded both ways alike; the
    // summary counts the unknown action, which moves no figure.
    let p = P::new()
        .op(b"}(")
        .s("segments")
        .op(b"]")
        .s("device_traces")
        .op(b"]](");
    let p = entry_on(p, "alloc", 1 << 40, 0x7f00).op(b"u");
    let p = entry_on(p, "segment_defrag", 2 << 40, 0x7f00).op(b"u");
    let p = entry_on(p, "segment_defrag", 3 << 40, 0).op(b"u");
    let p = entry_on(p, "alloc", 4 << 40, 0).op(b"u");
    let data = p.op(b"eau").done();
    same(&data);
    let s = read_bytes(&data).unwrap();
    let t = &s.device_traces[0];
    let streams: Vec<u64> = t.iter().map(|e| s.stream(e)).collect();
    assert_eq!(streams, vec![0x7f00, 0x7f00, 0, 0]);
    assert!(matches!(t[1].action, Action::Other(_)));
    assert_eq!(t[1].action, t[2].action);
    let sum = rankscope::snapshot::inspect::summarize(&s, &Default::default());
    assert_eq!(sum.unknown_actions, vec![("segment_defrag".to_string(), 2)]);
    assert_eq!(sum.trace_entries, 4);
    let text = rankscope::render::text::mem::summary_text(&sum, 5, 100);
    assert!(
        text.contains("2 of them with an action this version does not know, left out of every figure: segment_defrag ×2"),
        "{text}"
    );
}
