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

/// Writes a snapshot as `torch.cuda.memory._dump_snapshot()` does: every string, dict and
/// list memoised (`MEMOIZE`) in order, a string met before fetched from the memo (but
/// `'N/A'`, written afresh each time), so that from the third entry on the direct reader
/// reads each trace entry whole (`read_entry`) rather than opcode by opcode.
struct Torch {
    bytes: Vec<u8>,
    next: u32,
    strings: Vec<(String, u32)>,
}

impl Torch {
    fn new() -> Torch {
        Torch {
            bytes: vec![0x80, 4],
            next: 0,
            strings: Vec::new(),
        }
    }
    fn op(&mut self, b: &[u8]) -> &mut Torch {
        self.bytes.extend_from_slice(b);
        self
    }
    /// `MEMOIZE` of the value just written.
    fn memoized(&mut self) -> &mut Torch {
        self.memoize();
        self
    }
    /// `SETITEMS`: the end of an entry.
    fn end(&mut self) {
        self.bytes.push(b'u');
    }
    fn memoize(&mut self) -> u32 {
        self.bytes.push(0x94);
        self.next += 1;
        self.next - 1
    }
    fn get(&mut self, k: u32) -> &mut Torch {
        match u8::try_from(k) {
            Ok(k) => self.op(&[b'h', k]),
            Err(_) => {
                self.bytes.push(b'j');
                self.op(&k.to_le_bytes())
            }
        }
    }
    fn str(&mut self, t: &str) -> &mut Torch {
        match self.strings.iter().find(|(s, _)| s == t) {
            Some(&(_, k)) => self.get(k),
            None => {
                self.fresh_str(t);
                let k = self.next - 1;
                self.strings.push((t.to_string(), k));
                self
            }
        }
    }
    fn fresh_str(&mut self, t: &str) -> &mut Torch {
        self.bytes.extend_from_slice(&[0x8c, t.len() as u8]);
        self.bytes.extend_from_slice(t.as_bytes());
        self.memoize();
        self
    }
    /// LONG1 in as few bytes as hold the value and its sign, as `pickle` writes it.
    fn long(&mut self, v: i64) -> &mut Torch {
        let bytes = v.to_le_bytes();
        let mut n = 8;
        while n > 1 && (bytes[n - 1] == 0 || bytes[n - 1] == 0xff) {
            let sign_kept = (bytes[n - 2] & 0x80 != 0) == (bytes[n - 1] == 0xff);
            if !sign_kept {
                break;
            }
            n -= 1;
        }
        self.bytes.extend_from_slice(&[0x8a, n as u8]);
        self.op(&bytes[..n])
    }
    fn k(&mut self, v: u8) -> &mut Torch {
        self.op(&[b'K', v])
    }
    /// A frame dict, returning its memo key.
    fn frame(&mut self, name: &str, line: u8) -> u32 {
        self.op(b"}");
        let key = self.memoize();
        self.op(b"(")
            .str("filename")
            .str("a.py")
            .str("line")
            .k(line);
        self.str("name").str(name).op(b"u");
        key
    }
    /// `{'segments': [], 'device_traces': [[…]]}` around the entries `entries` writes.
    fn snapshot(entries: impl FnOnce(&mut Torch)) -> Vec<u8> {
        let mut t = Torch::new();
        t.op(b"}").memoize();
        t.op(b"(").str("segments").op(b"]").memoize();
        t.str("device_traces").op(b"]").memoize();
        t.op(b"(").op(b"]").memoize();
        t.op(b"(");
        entries(&mut t);
        t.op(b"eeu.");
        t.bytes
    }
}

/// What a trace entry's `frames` is.
enum Frames<'a> {
    /// A fresh list of these frame dicts (by memo key).
    List(&'a [u32]),
    /// The list of an earlier entry (by memo key), as `free_completed` shares its
    /// `free_requested`'s.
    Shared(u32),
}

/// The keys PyTorch 2.x writes for a trace entry, in its order, up to `frames`'s value:
/// an open entry dict whose `size` `size` writes.
fn entry_head(t: &mut Torch, action: &str, addr: i64, size: impl FnOnce(&mut Torch)) {
    t.op(b"}").memoize();
    t.op(b"(").str("action").str(action).str("addr").long(addr);
    t.str("size");
    size(t);
    t.str("stream").k(0).str("time_us").long(addr * 3);
    t.str("compile_context").fresh_str("N/A");
    t.str("user_metadata").str("").str("frames");
}

/// One trace entry; returns the memo key of its `frames` list.
fn torch_entry(t: &mut Torch, action: &str, addr: i64, size: u8, frames: Frames) -> u32 {
    entry_head(t, action, addr, |t| {
        t.k(size);
    });
    match frames {
        Frames::Shared(k) => {
            t.get(k).op(b"u");
            k
        }
        Frames::List(keys) => {
            let list = t.next;
            list_and_end(t, keys);
            list
        }
    }
}

/// A first `alloc` entry of size 1, whose list defines the frames named (at lines 3, 4,
/// …); returns their memo keys.
fn first_entry(t: &mut Torch, names: &[&str]) -> Vec<u32> {
    entry_head(t, "alloc", 1 << 40, |t| {
        t.k(1);
    });
    t.op(b"]").memoize();
    t.op(b"(");
    let frames = (names.iter().zip(3..))
        .map(|(name, line)| t.frame(name, line))
        .collect();
    t.op(b"eu");
    frames
}

#[test]
fn entries_written_as_torch_writes_them_read_the_same_both_ways() {
    let data = Torch::snapshot(|t| {
        // The first entry defines its frames inside its list; the second's list body is
        // new; the third's was read before; the fourth shares the third's list; the
        // fifth names a new action; the sixth fetches it.
        let [f, g] = first_entry(t, &["f", "g"])[..] else {
            unreachable!("two frames defined")
        };
        torch_entry(t, "alloc", 2 << 40, 2, Frames::List(&[f, g]));
        let third = torch_entry(t, "alloc", 3 << 40, 3, Frames::List(&[f, g]));
        torch_entry(t, "free_completed", 3 << 40, 3, Frames::Shared(third));
        torch_entry(t, "free_requested", 4 << 40, 4, Frames::List(&[g]));
        torch_entry(t, "free_requested", 5 << 40, 5, Frames::List(&[g]));
        torch_entry(t, "free_requested", 6 << 40, 6, Frames::List(&[f, g]));
    });
    same(&data);
    let s = read_bytes(&data).unwrap();
    let got: Vec<(Action, u64, u64, i64, Vec<&str>)> = s.device_traces[0]
        .iter()
        .map(|e| {
            let names = s.stack(e.stack).map(|f| &*f.name).collect();
            (e.action, e.addr >> 40, e.size, e.time_us >> 40, names)
        })
        .collect();
    use Action::{Alloc, FreeCompleted, FreeRequested};
    assert_eq!(
        got,
        vec![
            (Alloc, 1, 1, 3, vec!["f", "g"]),
            (Alloc, 2, 2, 6, vec!["f", "g"]),
            (Alloc, 3, 3, 9, vec!["f", "g"]),
            (FreeCompleted, 3, 3, 9, vec!["f", "g"]),
            (FreeRequested, 4, 4, 12, vec!["g"]),
            (FreeRequested, 5, 5, 15, vec!["g"]),
            (FreeRequested, 6, 6, 18, vec!["f", "g"]),
        ]
    );
}

/// Two entries that leave the direct reader ready to read the next whole (their keys
/// decoded directly, the list body `[f]` read before); returns the frame's memo key.
fn two_entries(t: &mut Torch) -> u32 {
    let f = first_entry(t, &["f"])[0];
    torch_entry(t, "alloc", 2 << 40, 2, Frames::List(&[f]));
    f
}

/// `]` `MEMOIZE` `(` gets of `keys` `APPENDS` `SETITEMS`: a fresh `frames` list, and the
/// entry's end.
fn list_and_end(t: &mut Torch, keys: &[u32]) {
    t.op(b"]").memoize();
    t.op(b"(");
    for &k in keys {
        t.get(k);
    }
    t.op(b"eu");
}

/// A snapshot of `two_entries`, a third entry written by `third` (given the frame's memo
/// key), and a fourth ordinary one, read whole again: what the opcodes left after the
/// third must be what `read_entry` expects. Both readers must agree; where the general
/// reader refuses the third entry's `error_at` key, so must the direct one, else the
/// sizes are the four entries'.
fn check_third(what: &str, error_at: Option<&str>, third: impl FnOnce(&mut Torch, u32)) {
    let data = Torch::snapshot(|t| {
        let f = two_entries(t);
        third(t, f);
        torch_entry(t, "alloc", 4 << 40, 4, Frames::List(&[f]));
    });
    let out = same(&data);
    if let Some(key) = error_at {
        let e = format!("error: snapshot key `device_traces[0][2].{key}`: expected ");
        assert!(out.starts_with(&e), "{what}: {out}");
        return;
    }
    let s = read_bytes(&data).unwrap();
    let sizes: Vec<u64> = s.device_traces[0].iter().map(|e| e.size).collect();
    assert_eq!(sizes, [1, 2, 7, 4], "{what}: {out}");
}

#[test]
fn entries_the_direct_reader_cannot_read_whole_read_the_same_both_ways() {
    // Third entries with PyTorch's keys in its order, `read_entry` refusing each: (what,
    // the key the general reader refuses, the address, `size`'s value, `frames`'s value
    // given the frame's memo key and the entry's own).
    type Value = fn(&mut Torch) -> &mut Torch;
    type FramesValue = fn(&mut Torch, u32, u32);
    let (seven, memoised, a_string): (Value, Value, Value) =
        (|t| t.k(7), |t| t.k(7).memoized(), |t| t.str("alloc"));
    let (list_f, an_int, itself, empty): (FramesValue, FramesValue, FramesValue, FramesValue) = (
        |t, f, _| list_and_end(t, &[f]),
        |t, _, _| t.k(7).end(),
        |t, _, own| list_and_end(t, &[own]),
        |t, _, _| list_and_end(t, &[]),
    );
    let cases: [(&str, Option<&str>, i64, Value, FramesValue); 6] = [
        ("size memoised", None, 3 << 40, memoised, list_f),
        (
            "size a string from the memo",
            Some("size"),
            3 << 40,
            a_string,
            list_f,
        ),
        ("frames an int", Some("frames"), 3 << 40, seven, an_int),
        (
            "a negative address",
            Some("addr"),
            -(3 << 40),
            seven,
            list_f,
        ),
        (
            "frames holding the entry itself",
            None,
            3 << 40,
            seven,
            itself,
        ),
        ("an empty frames list", None, 3 << 40, seven, empty),
    ];
    for (what, error_at, addr, size, frames) in cases {
        check_third(what, error_at, |t, f| {
            let own = t.next;
            entry_head(t, "alloc", addr, |t| {
                size(t);
            });
            frames(t, f, own);
        });
    }
    // Keys in another order, and one key fewer.
    check_third("size before addr", None, |t, f| {
        t.op(b"}").memoize();
        t.op(b"(").str("action").str("alloc").str("size").k(7);
        t.str("addr").long(3 << 40).str("stream").k(0);
        t.str("time_us")
            .long(9 << 40)
            .str("compile_context")
            .fresh_str("N/A");
        t.str("user_metadata").str("").str("frames");
        list_and_end(t, &[f]);
    });
    check_third("no time_us", None, |t, f| {
        t.op(b"}").memoize();
        t.op(b"(")
            .str("action")
            .str("alloc")
            .str("addr")
            .long(3 << 40);
        t.str("size")
            .k(7)
            .str("stream")
            .k(0)
            .str("compile_context")
            .fresh_str("N/A");
        t.str("user_metadata").str("").str("frames");
        list_and_end(t, &[f]);
    });
}
