//! Every input of shared/hostile (copied into tests/hostile) and small versions of what its
//! `make_big_inputs.sh` makes, through the binary as a user runs it: each gives a result
//! or an error naming the file, within the memory bound of docs/reliability.md, and
//! nothing it prints holds an escape byte or a bidi override.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rankscope::grammar::GrammarSet;
use rankscope::ingest::scan::{budget, scan_reader};
use rankscope::ingest::source::{ListingNote, SpecialFile};
use rankscope::model::notes::ReadNote;
use rankscope::render::text::notes::read_note;
use rankscope::session::{LoadOptions, Session};
use rankscope::snapshot;

/// The bound docs/reliability.md states for any input: peak resident memory of one
/// `rankscope` process.
const RSS_BOUND_KIB: u64 = 256 * 1024;

fn hostile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hostile")
        .join(name)
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name)
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
    max_rss_kib: u64,
    wall: Duration,
}

/// Runs the binary, sampling its peak RSS (`VmHWM`, the kernel's high-water mark of the
/// process's own memory) every 2 ms while it runs. `wait4`'s `ru_maxrss` cannot be
/// used from a test: a child spawned from the test process starts with the test
/// process's memory as its high-water mark.
fn rankscope(args: &[&str], stdin: Option<Vec<u8>>) -> Outcome {
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rankscope"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rankscope");
    let writer = stdin.map(|bytes| {
        let mut pipe = child.stdin.take().expect("stdin");
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        })
    });
    let mut out_pipe = child.stdout.take().expect("stdout");
    let mut err_pipe = child.stderr.take().expect("stderr");
    let out_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out_pipe.read_to_end(&mut v);
        v
    });
    let err_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err_pipe.read_to_end(&mut v);
        v
    });
    let status_path = format!("/proc/{}/status", child.id());
    let mut hwm_kib = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_path) {
            // Only the binary's own image counts: a reading of another (CI once saw
            // 492,040 KiB for `mem` of a 15-byte pickle, which peaks at 7-15 MiB under
            // `/usr/bin/time`: the test process's high-water mark) is not the child's.
            let is_rankscope = text.lines().any(|l| l == "Name:\trankscope");
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
            if let (true, Some(h)) = (is_rankscope, hwm) {
                hwm_kib = hwm_kib.max(h);
            }
        }
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stdout = out_thread.join().expect("stdout reader");
    let stderr = err_thread.join().expect("stderr reader");
    if let Some(w) = writer {
        let _ = w.join();
    }
    let o = Outcome {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        max_rss_kib: hwm_kib,
        wall: t0.elapsed(),
    };
    assert_clean(&o, args);
    o
}

/// The sampler reads the child's own high-water mark, and reads it: a debug build's
/// `events` of a bundled log runs for tens of milliseconds and holds a few MiB (14 MiB
/// under `/usr/bin/time` for a debug build's `mem` of a 15-byte pickle), far from the
/// test process's own hundreds.
#[test]
fn the_memory_sampler_reads_the_binary_itself() {
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/tp8-baseline");
    let o = rankscope(&["events", log.to_str().unwrap()], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        (2 * 1024..128 * 1024).contains(&o.max_rss_kib),
        "{} KiB",
        o.max_rss_kib
    );
}

/// No escape byte, no other C0 control but newline and tab, no bidi override, within
/// the memory bound.
fn assert_clean(o: &Outcome, args: &[&str]) {
    for (name, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        let bad = text.chars().find(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        });
        assert_eq!(bad, None, "{args:?}: control character in {name}:\n{text}");
    }
    assert!(
        o.max_rss_kib < RSS_BOUND_KIB,
        "{args:?}: peak RSS {} KiB over the bound",
        o.max_rss_kib
    );
}

fn gs() -> GrammarSet {
    GrammarSet::builtin().expect("built-in grammars compile")
}

// ---- snapshots -------------------------------------------------------------------

#[test]
fn escape_sequences_in_frame_names_are_removed_at_read_time() {
    let s = snapshot::read_path(&hostile("escape_frames.pickle")).expect("reads");
    // The pickle's frame name is `evil` ESC `]0;PWNED-TITLE` BEL ESC`[31m` `RED` ESC`[2J`
    // ESC`[0m` U+202E `oops` (its bytes at 0xe8..0x11a): the OSC title, the CSI
    // sequences and the bidi override go, the text stays.
    let names: Vec<&str> = s.frames.iter().map(|f| &*f.name).collect();
    assert!(names.contains(&"evilREDoops"), "{names:?}");
    // `large` ESC`[5m` as the segment type.
    assert_eq!(&*s.segments[0].segment_type, "large");
    for f in &s.frames {
        assert!(!f.filename.contains('\u{1b}') && !f.filename.contains('\u{7}'));
    }

    let o = rankscope(
        &["mem", hostile("escape_frames.pickle").to_str().unwrap()],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("evilREDoops"), "{}", o.stdout);

    let o = rankscope(
        &[
            "mem",
            "diff",
            hostile("escape_frames.pickle").to_str().unwrap(),
            hostile("escape_frames_b.pickle").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
}

#[test]
fn escape_sequences_in_snapshots_of_a_run_do_not_reach_diff() {
    // The hostile run is samples/tp8-custom-ar's logs with snapshots whose frame names
    // carry escapes: its verdict against the baseline must be the sample's own.
    let dir = tempfile::tempdir().unwrap();
    for f in ["server.log", "stdout.txt", "nvidia-smi-gpu.csv"] {
        std::fs::copy(sample("tp8-custom-ar").join(f), dir.path().join(f)).unwrap();
    }
    for r in 0..8 {
        let name = format!("snapshot_rank{r}.pickle");
        std::fs::copy(
            hostile("rundir_escape_in_snapshot_frames").join(&name),
            dir.path().join(&name),
        )
        .unwrap();
    }
    let base = sample("tp8-baseline");
    let expected = rankscope(
        &[
            "diff",
            base.to_str().unwrap(),
            sample("tp8-custom-ar").to_str().unwrap(),
        ],
        None,
    );
    let o = rankscope(
        &["diff", base.to_str().unwrap(), dir.path().to_str().unwrap()],
        None,
    );
    assert_eq!(o.code, expected.code, "{}", o.stderr);
    assert!(o.code == 0 || o.code == 1, "a verdict, not an error");
    let headline = |s: &str| s.lines().next().unwrap_or("").to_string();
    assert_eq!(headline(&o.stdout), headline(&expected.stdout));
}

#[test]
fn snapshot_errors_name_the_file() {
    let p = hostile("shape_error_no_filename.pickle");
    let o = rankscope(&["mem", p.to_str().unwrap()], None);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains(
            "shape_error_no_filename.pickle: snapshot key `<top level>`: expected dict, found int"
        ),
        "{}",
        o.stderr
    );

    let o = rankscope(&["mem", hostile("empty.pickle").to_str().unwrap()], None);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("empty.pickle: pickle: empty input (0 bytes): not a pickle"),
        "{}",
        o.stderr
    );
}

#[test]
fn memoize_after_sparse_memo_entries_reads_as_python_does() {
    // PROTO 4; 1 BINPUT 1; 2 BINPUT 0; 3 BINPUT 1; 4 MEMOIZE; BINGET 2; STOP. The memo
    // holds keys {0, 1} when MEMOIZE runs, so it stores under len(memo) = 2, and BINGET 2
    // gives 4 (CPython's `pickle.loads` returns 4).
    let bytes = std::fs::read(hostile("memo_memoize_after_sparse.pickle")).unwrap();
    let p = snapshot::pickle::parse(&bytes).expect("a valid pickle");
    assert!(matches!(p.get(p.root()), snapshot::pickle::Value::Int(4)));
    // Not a snapshot, and the error says so with the file's name.
    let o = rankscope(
        &[
            "mem",
            hostile("memo_memoize_after_sparse.pickle")
                .to_str()
                .unwrap(),
        ],
        None,
    );
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains(
        "memo_memoize_after_sparse.pickle: snapshot key `<top level>`: expected dict, found int"
    ));
}

#[test]
fn a_stack_shared_by_every_entry_is_resolved_once() {
    // 20,000 trace entries whose `frames` is one memoised list of 1,001 frames.
    let s = snapshot::read_path(&hostile("shared_stack_1001_x_20k.pickle")).expect("reads");
    let entries: Vec<_> = s.trace_entries().collect();
    assert_eq!(entries.len(), 20_000);
    assert!(entries.iter().all(|e| s.stack_len(e.stack) == 1001));
    assert!(entries.iter().all(|e| e.stack == entries[0].stack));

    // The same shape at 200,000 frames, written here (5.7 MB): it took 2 min 41 s when
    // stacks were cached only per batch. A debug build reads it in seconds now.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("shared_stack_200k.pickle");
    std::fs::write(&p, shared_stack_pickle(200_000, 20_000)).unwrap();
    let t = Instant::now();
    let s = snapshot::read_path(&p).expect("reads");
    let took = t.elapsed();
    assert_eq!(s.trace_entries().count(), 20_000);
    assert_eq!(
        s.stack_len(s.trace_entries().next().unwrap().stack),
        200_000
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
}

/// A snapshot whose entries all share one memoised frame list, written the way
/// `pickle.dumps` writes it (lists in APPENDS batches of 1,000).
fn shared_stack_pickle(frames: usize, entries: usize) -> Vec<u8> {
    let s = |b: &mut Vec<u8>, t: &str| {
        b.push(0x8c);
        b.push(t.len() as u8);
        b.extend_from_slice(t.as_bytes());
    };
    let mut b2 = vec![0x80, 4];
    b2.push(b'}');
    b2.push(b'(');
    s(&mut b2, "segments");
    b2.push(b']');
    s(&mut b2, "device_traces");
    b2.push(b']'); // device_traces
    b2.push(b']'); // device 0's trace
    b2.push(b'(');
    // Entry 0 builds the frame list and stores it under memo key 1.
    for i in 0..entries {
        b2.push(b'}');
        b2.push(b'(');
        s(&mut b2, "action");
        s(&mut b2, "alloc");
        s(&mut b2, "addr");
        b2.push(b'J');
        b2.extend_from_slice(&(i as i32 * 512).to_le_bytes());
        s(&mut b2, "size");
        b2.push(b'M');
        b2.extend_from_slice(&512u16.to_le_bytes());
        s(&mut b2, "frames");
        if i == 0 {
            b2.push(b']');
            b2.push(b'r');
            b2.extend_from_slice(&1u32.to_le_bytes());
            for chunk in 0..frames.div_ceil(1000) {
                b2.push(b'(');
                for f in chunk * 1000..((chunk + 1) * 1000).min(frames) {
                    b2.push(b'}');
                    b2.push(b'(');
                    s(&mut b2, "filename");
                    s(&mut b2, "m.py");
                    s(&mut b2, "line");
                    b2.push(b'J');
                    b2.extend_from_slice(&(f as i32).to_le_bytes());
                    s(&mut b2, "name");
                    s(&mut b2, "f");
                    b2.push(b'u');
                }
                b2.push(b'e');
            }
        } else {
            b2.push(b'j');
            b2.extend_from_slice(&1u32.to_le_bytes());
        }
        b2.push(b'u');
    }
    b2.push(b'e'); // the entries into device 0's trace
    b2.push(b'a'); // device 0's trace into device_traces
    b2.push(b'u'); // the two keys into the top dict
    b2.push(b'.');
    b2
}

// ---- logs: one bad file, cut files, floods ------------------------------------------

#[test]
fn a_truncated_gz_among_good_rank_logs_is_read_as_far_as_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..8 {
        let name = format!("rank{r}.log");
        std::fs::copy(
            sample("tp8-custom-ar-fixed").join(&name),
            dir.path().join(&name),
        )
        .unwrap();
    }
    std::fs::copy(hostile("rank9.log.gz"), dir.path().join("rank9.log.gz")).unwrap();
    let o = rankscope(&["summary", dir.path().to_str().unwrap()], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // `zcat rank9.log.gz | wc -c` gives 1,710 bytes before the stream ends.
    let folded = o.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        folded.contains("rank9.log.gz: read stopped after 1710 decompressed bytes"),
        "{}",
        o.stdout
    );
    assert!(folded.contains("incomplete deflate stream"), "{}", o.stdout);
    // The eight good rank logs each reach ready (samples/tp8-custom-ar-fixed).
    assert!(folded.contains("ready 8/8"), "{}", o.stdout);
}

#[test]
fn an_unreadable_file_in_a_run_is_skipped_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..2 {
        let name = format!("rank{r}.log");
        std::fs::copy(
            sample("tp8-custom-ar-fixed").join(&name),
            dir.path().join(&name),
        )
        .unwrap();
    }
    // A symlink loop named like a log, and a directory named like one.
    std::os::unix::fs::symlink("rank7.log", dir.path().join("rank7.log")).unwrap();
    std::fs::create_dir(dir.path().join("rank8.log")).unwrap();
    let run = common::load(dir.path());
    assert_eq!(run.ranks.len(), 2);
    let loop_note = run
        .notes
        .iter()
        .map(read_note)
        .find(|n| n.contains("rank7.log: skipped"))
        .expect("a note on the symlink loop");
    assert!(loop_note.contains("symbolic links"), "{loop_note}");
    // The notes are facts (the entry, what it is); the sentences are render's.
    let directory = run.notes.iter().find_map(|n| match n {
        ReadNote::Listing(ListingNote::NotRegular { path, what }) => Some((path, *what)),
        _ => None,
    });
    let (path, what) = directory.expect("a note on the directory named like a log");
    assert!(path.ends_with("/rank8.log"), "{path}");
    assert_eq!(what, SpecialFile::Directory);
    assert!(run
        .notes
        .iter()
        .map(read_note)
        .any(|n| n.ends_with("rank8.log: skipped: a directory, not a regular file")));
}

/// `summary --json` of one path: the run document.
fn summary_json(path: &Path) -> serde_json::Value {
    let o = rankscope(&["summary", "--json", path.to_str().unwrap()], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).expect("json");
    doc["run"].clone()
}

fn note_with<'a>(run: &'a serde_json::Value, needle: &str) -> &'a str {
    run["notes"]
        .as_array()
        .and_then(|n| {
            n.iter()
                .filter_map(|n| n.as_str())
                .find(|n| n.contains(needle))
        })
        .unwrap_or_else(|| panic!("no note with {needle:?}: {}", run["notes"]))
}

#[test]
fn a_cut_zstd_keeps_what_was_decoded() {
    // Request traffic only, cut inside a zstd frame: what was decoded is read (and holds
    // no start-up, which is the error), and the error says where the stream was cut.
    let p = hostile("traffic_trunc.log.zst");
    let o = rankscope(&["summary", p.to_str().unwrap()], None);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("not a start-up log"), "{}", o.stderr);
    // `zstdcat traffic_trunc.log.zst | wc -lc` prints 393,216 lines of 68 bytes
    // (26,738,688 bytes) before its error; the decoder here hands out at least as much.
    let lines: u64 = o
        .stderr
        .split("not a start-up log: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("a line count");
    assert!(lines >= 393_216, "{lines}");
    assert!(
        o.stderr
            .contains("(byte 2535 of the compressed file): incomplete frame"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_flood_of_one_event_line_is_counted_not_kept() {
    // 1,872,457 copies of one `Init torch distributed begin.` line of TP6, 56 bytes each
    // (`zstdcat | sort | uniq -c`): every line is counted as an event, the first 1,024
    // are kept, the rest are said in a note.
    let run = summary_json(&hostile("event_lines_100MB.log.zst"));
    let lines = &run["sources"][0]["lines"];
    assert_eq!(lines["lines"], 1_872_457);
    assert_eq!(lines["events"], 1_872_457);
    assert_eq!(run["sources"][0]["size_bytes"]["bytes"], 1_872_457 * 56);
    let kept = 1_872_457 - budget::SAME_EVENT_PER_SOURCE as u64;
    note_with(
        &run,
        &format!("{kept} events not kept, past the event budget"),
    );
    note_with(&run, &format!("dist_init_begin ×{kept}"));
}

#[test]
fn a_huge_nvidia_smi_csv_is_read_up_to_its_limit() {
    // make_big_inputs.sh's 1 GiB `nvidia-smi-gpu.csv` of one letter, at 40 MiB: past the
    // 32 MiB a CSV is read to.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        sample("tp8-custom-ar").join("server.log"),
        dir.path().join("server.log"),
    )
    .unwrap();
    std::fs::write(dir.path().join("nvidia-smi-gpu.csv"), vec![b'A'; 40 << 20]).unwrap();
    let o = rankscope(&["summary", dir.path().to_str().unwrap()], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let folded = o.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        folded.contains("nvidia-smi-gpu.csv: only the first 33554432 bytes are read"),
        "{}",
        o.stdout
    );
}

// ---- paths that are not plain files -----------------------------------------------

#[test]
#[allow(unsafe_code)] // mkfifo(3) has no safe wrapper in std
fn a_fifo_is_read_as_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.log");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let text = std::fs::read(sample("tp8-custom-ar-fixed").join("rank3.log")).unwrap();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, text))
    };
    let o = rankscope(&["summary", "--ranks", fifo.to_str().unwrap()], None);
    writer.join().unwrap().unwrap();
    assert_eq!(o.code, 0, "{}", o.stderr);
    // rank3.log holds only TP3's lines.
    assert!(o.stdout.contains("TP3"), "{}", o.stdout);

    let o = rankscope(&["summary", "/dev/zero"], None);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("/dev/zero: binary data (NUL byte at offset 0), not a log"),
        "{}",
        o.stderr
    );
}

#[test]
fn gzip_and_zstd_on_stdin_and_utf16_files_read_like_the_plain_log() {
    let plain = sample("tp8-custom-ar").join("server.log");
    let text = std::fs::read(&plain).unwrap();
    let want = rankscope(&["events", "--json", plain.to_str().unwrap()], None);
    let events = |s: &str| -> serde_json::Value {
        let v: serde_json::Value = serde_json::from_str(s).expect("json");
        // The path differs (`-` for stdin); the events must not.
        v["events"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| {
                        let mut e = e.clone();
                        if let Some(o) = e.as_object_mut() {
                            o.remove("source");
                        }
                        e
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let want_events = events(&want.stdout);
    assert!(want_events.as_array().is_some_and(|a| a.len() > 20));

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&text).unwrap();
    let o = rankscope(&["events", "--json", "-"], Some(gz.finish().unwrap()));
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(events(&o.stdout), want_events);

    let zst = zstd::encode_all(&text[..], 3).unwrap();
    let o = rankscope(&["events", "--json", "-"], Some(zst));
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(events(&o.stdout), want_events);

    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("server.log");
    let mut utf16 = vec![0xff, 0xfe];
    for u in String::from_utf8(text).unwrap().encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    std::fs::write(&p, utf16).unwrap();
    let o = rankscope(&["events", "--json", p.to_str().unwrap()], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(events(&o.stdout), want_events);
}

// ---- shapes: many files, many ranks, long lines -----------------------------------

#[test]
fn many_small_files_and_many_ranks() {
    // make_big_inputs.sh's 10,000 rank files at 2,000: each is rank0.log with TP0 as
    // TP{i}, so the run has 2,000 ranks.
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(sample("tp8-custom-ar-fixed").join("rank0.log")).unwrap();
    for i in 0..2000 {
        std::fs::write(
            dir.path().join(format!("rank{i}.log")),
            src.replace("TP0", &format!("TP{i}")),
        )
        .unwrap();
    }
    let t = Instant::now();
    let run = common::load(dir.path());
    assert_eq!(run.ranks.len(), 2000);
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());

    // The 50,000-rank log at 5,000 ranks: two lines per rank, diffed with itself.
    let p = dir.path().join("ranks5k.log");
    let mut text = String::new();
    for r in 0..5000 {
        text.push_str(&format!(
            "[2026-11-29 09:18:33 TP{r}] Init torch distributed begin.\n\
             [2026-11-29 09:18:37 TP{r}] Init torch distributed ends. elapsed=2.42 s, mem usage=0.64 GB\n"
        ));
    }
    std::fs::write(&p, text).unwrap();
    let o = rankscope(&["diff", p.to_str().unwrap(), p.to_str().unwrap()], None);
    // No rank reaches ready and nothing says why: every log ends before ready, so the
    // verdict is INCOMPLETE, exit 3 (`Status::exit_code`), as make_big_inputs.sh's
    // 50,000-rank log gives.
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(o.stdout.starts_with("INCOMPLETE"), "{}", o.stdout);
    assert!(o.wall < Duration::from_secs(60), "{:?}", o.wall);
    let run = common::load(&p);
    assert_eq!(run.ranks.len(), 5000);
    let d = rankscope::analysis::diff::diff(&run, &run);
    assert_eq!(d.status, rankscope::analysis::diff::Status::Incomplete);
    assert!(d
        .figures
        .iter()
        .all(|f| f.class == rankscope::analysis::diff::DeltaClass::Same && f.ranks_moved == 0));
}

#[test]
fn a_line_longer_than_a_block_keeps_later_line_numbers() {
    // Line 1 is 10,000 bytes (split into three 4 KiB blocks), line 2 an event.
    let mut text = "x".repeat(10_000);
    text.push('\n');
    text.push_str("[2026-03-01 10:00:01 TP0] Init torch distributed begin.\n");
    let s = scan_reader(&gs(), 0, text.as_bytes(), 4096, |_| {}).expect("in memory");
    assert_eq!(s.events.len(), 1);
    assert_eq!(s.events[0].origin.line, 2);
    assert_eq!(s.counts.split_long_lines, 2);
}

#[test]
fn every_load_error_names_its_file() {
    let o = rankscope(&["summary", "/nonexistent/run"], None);
    assert_eq!(o.code, 2);
    assert!(o
        .stderr
        .contains("/nonexistent/run: no such file or directory"));
    // A directory with only unreadable logs: nothing to give a verdict on.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.log"), b"\0\0binary").unwrap();
    std::fs::write(dir.path().join("b.log"), b"\0\0binary").unwrap();
    let run = Session::open(
        &gs(),
        &[dir.path().to_path_buf()],
        &LoadOptions::default(),
        &|_, _| {},
    );
    let err = run.err().expect("nothing read").to_string();
    assert!(err.contains("no log in this run could be read"), "{err}");
    assert!(
        err.contains("a.log: binary data (NUL byte at offset 0)"),
        "{err}"
    );
}

// ---- second campaign (shared/hostile/turn3; inputs copied into tests/hostile/turn3) ----

fn turn3(name: &str) -> PathBuf {
    hostile("turn3").join(name)
}

fn json(o: &Outcome) -> serde_json::Value {
    serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} (exit {}) {}", o.stdout, o.code, o.stderr))
}

/// D8: base.log and cand.log differ only in `mem_fraction_static` (0.9 → 0.5), printed
/// at byte ~100 of a 21,563-byte `server_args` line (checked with `diff` and `awk
/// length`). The scan used to cut the message at 16 KiB with its own marker and the
/// config reader then refused the line at byte 16384, so the change was lost.
#[test]
fn d8_config_line_over_16_kib_is_read_whole() {
    let base = turn3("cfg17k/base.log");
    let cand = turn3("cfg17k/cand.log");
    let o = rankscope(
        &[
            "diff",
            "--json",
            base.to_str().unwrap(),
            cand.to_str().unwrap(),
        ],
        None,
    );
    let d = json(&o);
    assert_eq!(
        d["config"]["changed"],
        serde_json::json!([{"key": "mem_fraction_static", "old": 0.9, "new": 0.5}]),
        "{}",
        o.stdout
    );
    assert_eq!(d["config_note"], serde_json::Value::Null, "{}", o.stdout);
    let t = rankscope(
        &["diff", base.to_str().unwrap(), cand.to_str().unwrap()],
        None,
    );
    assert!(
        t.stdout.contains("mem_fraction_static  0.9 -> 0.5"),
        "{}",
        t.stdout
    );
    assert!(!t.stdout.contains("not readable"), "{}", t.stdout);
}

/// D9: 1,100 failed start-ups, then one that reaches ready (grep -c server_args: 1101).
/// The last one's `Init torch distributed begin`/`ends` are stamped 22:13:57 and
/// 22:13:58 for TP0 (lines 71503/71505): dist_init is 1 s. The per-file cap of 1,024
/// same events used to keep the first 1,024 start-ups only ("attempt 1024 of 1024") and
/// pair the last `ends` with the 1,024th `begin` (9,994 s).
#[test]
fn d9_crash_loop_of_1101_startups_shows_the_last() {
    let log = turn3("crashloop_1100_then_ready.log.gz");
    let o = rankscope(&["summary", "--json", log.to_str().unwrap()], None);
    let doc = json(&o);
    let run = &doc["run"];
    assert_eq!(doc["identity"]["attempt"], 1101);
    assert_eq!(doc["identity"]["attempts"], 1101);
    assert_eq!(run["attempts"].as_array().map(Vec::len), Some(1101));
    assert_eq!(run["ready"], true);
    let dist = run["phases"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["phase"] == "dist_init"))
        .expect("dist_init phase");
    assert_eq!(dist["duration_s"]["max"], 1.0, "{dist}");
    // Nothing of the last start-up was dropped: no budget note.
    assert!(
        !run["notes"].to_string().contains("not kept"),
        "{}",
        run["notes"]
    );
    // The last start-up alone (lines 71501-71522 of the log, copied) against the loop:
    // the same configuration (`prefill_workspace_order='grouped'`, port 29637, which no
    // earlier start-up printed) and the same figures.
    let last = turn3("crashloop_last_startup.log");
    let d = rankscope(
        &[
            "diff",
            "--json",
            last.to_str().unwrap(),
            log.to_str().unwrap(),
        ],
        None,
    );
    let d = json(&d);
    assert_eq!(d["status"], "same", "{d}");
    assert_eq!(d["config"]["changed"], serde_json::json!([]));
    assert_eq!(d["config"]["added"], serde_json::json!([]));
    assert_eq!(d["config"]["removed"], serde_json::json!([]));
}

fn rank_names(run: &serde_json::Value) -> Vec<String> {
    run["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .map(|r| r["rank"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// D10: rank_2pow64.log names TP2⁶⁴, TP2⁶⁴−1, TP2³², TP2³²−1 and TP0, two lines each
/// (begin and end of dist_init). The three past u32 used to become rank-less events
/// counted as TP0; now they are not read, and a note counts them (3 tags × 2 lines).
#[test]
fn d10_rank_numbers_past_u32_are_not_merged_into_tp0() {
    let log = turn3("rank_2pow64.log");
    let o = rankscope(&["summary", "--json", log.to_str().unwrap()], None);
    let run = &json(&o)["run"];
    assert_eq!(rank_names(run), ["TP0", "TP4294967295"]);
    let notes = run["notes"].to_string();
    assert!(
        notes.contains("6 event line(s) naming a rank number past 4294967295 (first at line 1: `TP18446744073709551616`)"),
        "{notes}"
    );
    // A 100,000-digit rank number (as rank_100k_digits.log, made here): its begin and
    // end are not read, so TP0 (line 3, `begin` only) has not finished dist_init.
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("rank_100k_digits.log");
    let digits = "9".repeat(100_000);
    std::fs::write(
        &big,
        format!(
            "[2026-11-29 09:18:12 TP{digits}] Init torch distributed begin.\n\
             [2026-11-29 09:18:13 TP{digits}] Init torch distributed ends. elapsed=1.0 s, mem usage=0.60 GB\n\
             [2026-11-29 09:18:13 TP0] Init torch distributed begin.\n"
        ),
    )
    .expect("write");
    let o = rankscope(&["summary", "--json", big.to_str().unwrap()], None);
    let run = &json(&o)["run"];
    assert_eq!(rank_names(run), ["TP0"]);
    let dist = &run["phases"][1];
    assert_eq!(dist["phase"], "dist_init");
    assert_eq!(dist["completed"], 0, "{dist}");
    assert!(run["notes"]
        .to_string()
        .contains("2 event line(s) naming a rank number past"));
}

/// D22: invalid_dates.log stamps month 13, Feb 30 and 25:61:61 on lines 1-3 (line 4,
/// 23:59:60, is a leap second chrono reads). Those events have no time, and a note
/// now says so with the first line and what did not read.
#[test]
fn d22_invalid_stamps_are_noted() {
    let log = turn3("invalid_dates.log");
    let o = rankscope(&["summary", "--json", log.to_str().unwrap()], None);
    let notes = json(&o)["run"]["notes"].to_string();
    assert!(
        notes.contains("3 event line(s) with a stamp that is no date or time, first at line 1 (date `2026-13-01`"),
        "{notes}"
    );
}

/// D22: stamps that go backwards inside the plausible years (TP0: 2026 → 2025 → 2026,
/// by a year) give no negative duration; the backward jump is noted and the phase says
/// its stamps are out of order.
#[test]
fn d22_backward_stamps_give_no_negative_duration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("back.log");
    std::fs::write(
        &log,
        "[2026-11-29 09:18:12 TP0] Init torch distributed begin.\n\
         [2025-11-29 09:18:13 TP0] Init torch distributed ends. mem usage=0.60 GB\n\
         [2026-11-29 09:18:14 TP0] Load weight begin. avail mem=14.00 GB\n",
    )
    .expect("write");
    let o = rankscope(&["summary", "--json", log.to_str().unwrap()], None);
    let run = &json(&o)["run"];
    for p in run["phases"].as_array().expect("phases") {
        for k in ["min", "median", "max"] {
            let v = &p["duration_s"][k];
            assert!(v.is_null() || v.as_f64() >= Some(0.0), "{p}");
        }
    }
    assert!(run["notes"]
        .to_string()
        .contains("time stamps go backwards"));
    let t = rankscope(&["summary", "--width", "200", log.to_str().unwrap()], None);
    assert!(t.stdout.contains("stamps out of order"), "{}", t.stdout);
    assert!(!t.stdout.contains(" -1"), "{}", t.stdout);
}

/// D22's left-over: time_jumps.log goes 2026 → 1970 → 9999 → 0001 for TP0 and TP1 (lines
/// 1–4 and 5–8). It said "started 0001-01-01"; the six stamps outside 2000–2099 are
/// untimed and noted, the start is the 2026 stamp of line 1, and nothing is measured
/// across the millennia.
#[test]
fn d22_stamps_outside_the_plausible_years_are_not_the_start() {
    let log = turn3("time_jumps.log");
    let t = rankscope(&["summary", log.to_str().unwrap()], None);
    assert!(
        t.stdout
            .contains("started 2026-11-29 09:18:12, last event 0 s later"),
        "{}",
        t.stdout
    );
    let o = rankscope(&["summary", "--json", log.to_str().unwrap()], None);
    let doc = json(&o);
    let run = &doc["run"];
    let first = &doc["identity"]["first_line"]["at"];
    assert_eq!(first, "2026-11-29T09:18:12.000000-00:00", "{doc}");
    let notes = run["notes"].to_string();
    assert!(
        notes.contains("6 event line(s) stamped outside the years 2000–2099")
            && notes.contains("first at line 2 (1970-01-01 00:00:00)"),
        "{notes}"
    );
    assert!(!notes.contains("time stamps go backwards"), "{notes}");
}

/// A log stamped wholly in 1970 (a board whose clock was never set) keeps its stamps:
/// dist_init runs from 00:00:05 to 00:00:09 on TP0, 4 s, and no stamp is called
/// implausible.
#[test]
fn d22_a_run_wholly_in_1970_keeps_its_stamps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("epoch.log");
    std::fs::write(
        &log,
        "[1970-01-01 00:00:05 TP0] Init torch distributed begin.\n\
         [1970-01-01 00:00:09 TP0] Init torch distributed ends. mem usage=0.60 GB\n",
    )
    .expect("write");
    let o = rankscope(&["summary", "--json", log.to_str().unwrap()], None);
    let doc = json(&o);
    let run = &doc["run"];
    let first = &doc["identity"]["first_line"]["at"];
    assert_eq!(first, "1970-01-01T00:00:05.000000-00:00", "{doc}");
    assert!(!run["notes"].to_string().contains("stamped outside"));
    let dist = run["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .find(|p| p["phase"] == "dist_init")
        .expect("dist_init");
    assert_eq!(dist["duration_s"]["max"].as_f64(), Some(4.0), "{dist}");
}

/// D11: one rank-naming prefix per line, TP0 … TP(N−1) with N two past the bound of
/// distinct prefixes a file keeps (131,072; was 65,536, which 100,000 ranks passed with
/// no note). Line 1 is TP0's dist_init begin, line k+2 names TPk: the first prefix not
/// kept is TP131072, on line 131,074.
#[test]
fn d11_ranks_past_the_prefix_bound_are_noted() {
    let n = rankscope::ingest::scan::MAX_SEEN_PREFIXES + 2;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("ranks.log");
    let mut text = String::from("[2026-11-29 09:18:12 TP0] Init torch distributed begin.\n");
    for r in 0..n {
        text.push_str(&format!(
            "[2026-11-29 09:18:13 TP{r}] some plain record line\n"
        ));
    }
    std::fs::write(&log, text).expect("write");
    let o = rankscope(&["summary", "--json", log.to_str().unwrap()], None);
    let run = &json(&o)["run"];
    assert_eq!(
        run["ranks"].as_array().map(Vec::len),
        Some(rankscope::ingest::scan::MAX_SEEN_PREFIXES)
    );
    let notes = run["notes"].to_string();
    assert!(
        notes.contains("more than 131072 distinct rank prefixes; those first seen from line 131074 on are not counted"),
        "{notes}"
    );
}

/// D12: rank9.log.gz of rundir_one_truncated_gz is a gzip cut at byte 652 (1,710 bytes
/// decoded, `gzip -t` says "unexpected end of file"). `summary` notes it; `diff` now
/// does too, in its text and in `candidate_notes` of its JSON.
#[test]
fn d12_diff_shows_the_read_notes_summary_shows() {
    let dir = turn3("rundir_one_truncated_gz");
    let base = sample("tp8-custom-ar");
    let args = ["diff", base.to_str().unwrap(), dir.to_str().unwrap()];
    let want = "rank9.log.gz: read stopped after 1710 decompressed bytes (byte 652 of the compressed file)";
    let s = rankscope(&["summary", "--json", dir.to_str().unwrap()], None);
    assert!(json(&s)["run"]["notes"].to_string().contains(want));
    let j = rankscope(&[&args[..1], &["--json"], &args[1..]].concat(), None);
    let d = json(&j);
    let notes = d["candidate_notes"].to_string();
    assert!(notes.contains(want), "{notes}");
    let t = rankscope(&args, None);
    let flat = t.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("note candidate: "), "{}", t.stdout);
    assert!(flat.contains("rank9.log.gz: read stopped after 1710 decompressed bytes (byte 652 of the compressed file)"), "{}", t.stdout);
}

/// Runs the binary as an unprivileged user (uid/gid 65534 through `setpriv` when the
/// test runs as root: root reads a directory at mode 000).
fn rankscope_unprivileged(args: &[&str]) -> Outcome {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|u| u.split_whitespace().next() == Some("0"))
        })
        .unwrap_or(false);
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_rankscope"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_rankscope"))
    };
    let t0 = Instant::now();
    let out = cmd
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("setpriv (util-linux) runs the binary unprivileged");
    let o = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        max_rss_kib: 0,
        wall: t0.elapsed(),
    };
    assert_clean(&o, args);
    o
}

/// D13: a run directory of two node directories, node1 at mode 000. node0 is
/// tp8-baseline's server.log (8 ranks ready). node1 used to vanish without a note, and
/// the clock line said `--no-clock-align`, which was not given.
#[test]
fn d13_unreadable_node_directory_is_noted() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("nodes_perm");
    for n in ["node0", "node1"] {
        std::fs::create_dir_all(run.join(n)).expect("mkdir");
        std::fs::copy(
            sample("tp8-baseline/server.log"),
            run.join(n).join("server.log"),
        )
        .expect("copy");
    }
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod")
    };
    mode(dir.path(), 0o755);
    mode(&run.join("node1"), 0o000);
    let o = rankscope_unprivileged(&["summary", run.to_str().unwrap()]);
    let j = rankscope_unprivileged(&["summary", "--json", run.to_str().unwrap()]);
    mode(&run.join("node1"), 0o755);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let flat = o.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("nodes_perm/node1: skipped: Permission denied (os error 13)"),
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains("--no-clock-align"), "{}", o.stdout);
    assert!(json(&j)["run"]["notes"]
        .to_string()
        .contains("node1: skipped: Permission denied"));
    // With node1 the only node, the error names it.
    std::fs::remove_dir_all(run.join("node0")).expect("rm");
    mode(&run.join("node1"), 0o000);
    let e = rankscope_unprivileged(&["summary", run.to_str().unwrap()]);
    mode(&run.join("node1"), 0o755);
    assert_eq!(e.code, 2);
    assert!(
        e.stderr.contains("node1") && e.stderr.contains("Permission denied"),
        "{}",
        e.stderr
    );
}

/// D20: a run directory holding tp8-baseline's server.log and, under names rankscope
/// reads, a FIFO, a directory and symlinks to /dev/zero and /dev/urandom. They used to
/// be skipped with no note (a dangling link got one); each is now noted with what it is.
#[test]
fn d20_special_files_in_a_run_directory_are_noted() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path();
    std::fs::copy(sample("tp8-baseline/server.log"), run.join("server.log")).expect("copy");
    symlink("/dev/zero", run.join("rank1.log")).expect("symlink");
    symlink("/dev/urandom", run.join("rank4.log")).expect("symlink");
    symlink("/dev/zero", run.join("snapshot_rank0.pickle")).expect("symlink");
    symlink("/dev/zero", run.join("nvidia-smi-x.csv")).expect("symlink");
    std::fs::create_dir(run.join("rank9.log")).expect("mkdir");
    let fifo = Command::new("mkfifo")
        .arg(run.join("rank10.log"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    let o = rankscope(&["summary", "--json", run.to_str().unwrap()], None);
    let doc = json(&o);
    assert_eq!(doc["run"]["ready"], true);
    let notes = doc["run"]["notes"].to_string();
    for (name, what) in [
        ("rank1.log", "a character device"),
        ("rank4.log", "a character device"),
        ("snapshot_rank0.pickle", "a character device"),
        ("nvidia-smi-x.csv", "a character device"),
        ("rank9.log", "a directory"),
        ("rank10.log", "a FIFO"),
    ] {
        assert!(
            notes.contains(&format!("{name}: skipped: {what}, not a regular file")),
            "{name}: {notes}"
        );
    }
}

/// D23: tp8-baseline's server.log is one start-up (one server_args line); the crash
/// loop holds 1,101. `--attempt` past the last used to show the last one, exit 0.
#[test]
fn d23_attempt_past_the_last_is_an_error() {
    let log = sample("tp8-baseline/server.log");
    let o = rankscope(&["--attempt", "2", "summary", log.to_str().unwrap()], None);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    assert!(
        o.stderr.contains(
            "tp8-baseline/server.log: --attempt 2: the log holds 1 start-up (--attempt 1)"
        ),
        "{}",
        o.stderr
    );
    let ok = rankscope(&["--attempt", "1", "summary", log.to_str().unwrap()], None);
    assert_eq!(ok.code, 0);
    let lp = turn3("crashloop_1100_then_ready.log.gz");
    let o = rankscope(
        &["--attempt", "1102", "summary", lp.to_str().unwrap()],
        None,
    );
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("(--attempt 1 to 1101)"), "{}", o.stderr);
    // A run of two node directories: counted per node.
    let nodes = sample("node2-skew");
    let o = rankscope(
        &["--attempt", "2", "summary", nodes.to_str().unwrap()],
        None,
    );
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("node2-skew: --attempt 2"), "{}", o.stderr);
}

/// D25: `-` named twice used to be read by two readers at once (bogus cut-line notes,
/// or a node with an empty name). It is refused before anything is read.
#[test]
fn d25_stdin_named_twice_is_refused() {
    let log = std::fs::read(sample("tp8-baseline/server.log")).expect("sample");
    for args in [&["summary", "-", "-"][..], &["diff", "-", "-"][..]] {
        let o = rankscope(args, Some(log.clone()));
        assert_eq!(o.code, 2, "{args:?}: {}", o.stdout);
        assert!(
            o.stderr
                .contains("`-` (standard input) is given 2 times: it can be read once"),
            "{args:?}: {}",
            o.stderr
        );
    }
    let once = rankscope(&["summary", "-"], Some(log));
    assert_eq!(once.code, 0);
    assert!(
        once.stdout.starts_with("READY  -  8 ranks"),
        "{}",
        once.stdout
    );
}

/// D21: a log cut to 4 KiB while it is read (the first progress report, after the first
/// batch of blocks, truncates it) used to be reported as read whole. The read ends
/// early with no error; the listed and current sizes tell, and a note says so.
#[test]
fn d21_a_file_that_shrinks_while_read_is_noted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("server.log");
    let mut text = std::fs::read_to_string(sample("tp8-baseline/server.log")).expect("sample");
    let filler = "[2026-11-29 09:18:19 TP0] some plain record line\n";
    while text.len() < 16 << 20 {
        text.push_str(filler);
    }
    let listed = text.len();
    std::fs::write(&log, &text).expect("write");
    let opts = LoadOptions {
        block_size: 64 << 10,
        ..LoadOptions::default()
    };
    let cut = std::sync::Once::new();
    let loaded = Session::open(&gs(), &[log.to_path_buf()], &opts, &|_, _| {
        cut.call_once(|| {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&log)
                .expect("open");
            f.set_len(4096).expect("truncate");
        })
    })
    .expect("loads");
    let shrank = loaded.run.notes.iter().find_map(|n| match n {
        ReadNote::Shrank { listed, now, .. } => Some((*listed, *now)),
        _ => None,
    });
    assert_eq!(
        shrank,
        Some((listed as u64, 4096)),
        "{:?}",
        loaded.run.notes
    );
    let note = loaded
        .run
        .notes
        .iter()
        .map(read_note)
        .find(|n| n.contains("shrank while it was read"))
        .unwrap_or_else(|| panic!("no note: {:?}", loaded.run.notes));
    assert!(
        note.contains(&format!("({listed} bytes when listed, 4096 now;")),
        "{note}"
    );
    // A file read whole gets no such note.
    std::fs::write(&log, &text).expect("write");
    let whole = Session::open(&gs(), &[log.to_path_buf()], &opts, &|_, _| {}).expect("loads");
    assert!(!whole
        .run
        .notes
        .iter()
        .any(|n| matches!(n, ReadNote::Shrank { .. })));
}

/// D1: file and directory names holding an OSC title sequence, CSI sequences and a
/// newline, and a grammar whose id, name and event kind hold them. Every command that
/// prints them (`rankscope` asserts no control character reaches stdout or stderr) shows
/// the names with the sequences removed.
#[test]
fn d1_escape_sequences_in_names_do_not_reach_the_terminal() {
    let osc = "\u{1b}]0;PWNED-TITLE\u{7}";
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = tmp.path().join(format!("run{osc}\"q\\\nnl"));
    std::fs::create_dir(&run).expect("mkdir");
    let base = sample("tp8-baseline");
    std::fs::copy(base.join("server.log"), run.join(format!("rank0{osc}.log"))).expect("cp");
    std::fs::copy(
        base.join("nvidia-smi-gpu.csv"),
        run.join(format!("nvidia-smi{osc}.csv")),
    )
    .expect("cp");
    let pickle = run.join(format!("snapshot_rank0{osc}\u{1b}[2J\u{1b}[31m.pickle"));
    std::fs::copy(base.join("snapshot_rank0.pickle"), &pickle).expect("cp");
    // A file without its last newline: its name is printed with the cut line.
    std::fs::write(
        run.join(format!("rank9{osc}.log")),
        "[2026-11-29 09:18:19 TP0] some plain record line",
    )
    .expect("write");
    let r = run.to_str().unwrap();
    let b = base.to_str().unwrap();
    let p = pickle.to_str().unwrap();
    let s = rankscope(&["summary", r], None);
    assert_eq!(s.code, 0, "{}", s.stderr);
    // The name without its OSC sequence and newline: `run"q\nl`.
    assert!(s.stdout.contains("/run\"q\\nl  8 ranks"), "{}", s.stdout);
    assert!(s.stdout.contains("nvidia-smi.csv"), "{}", s.stdout);
    assert!(
        s.stdout.contains("rank9.log ends without a newline"),
        "{}",
        s.stdout
    );
    rankscope(&["summary", "--ranks", r], None);
    rankscope(&["events", r], None);
    rankscope(&["diff", "--explain", b, r], None);
    let prom = rankscope(&["export", "--prometheus", "-", r], None);
    assert!(prom.stdout.contains("run\\\"q\\\\nl"), "{}", prom.stdout);
    let m = rankscope(&["mem", p], None);
    assert!(m.stdout.contains("snapshot_rank0.pickle"), "{}", m.stdout);
    rankscope(&["mem", "diff", p, p], None);
    let g = turn3("escapes_in_names.toml");
    let list = rankscope(
        &["--grammar", g.to_str().unwrap(), "grammars", "list"],
        None,
    );
    assert!(
        list.stdout.lines().any(|l| l.starts_with("esc ")),
        "{}",
        list.stdout
    );
    let log = tmp.path().join("g.log");
    std::fs::write(&log, "[2026-11-29 09:18:12 TP0] Init 5\n").expect("write");
    let ev = rankscope(
        &[
            "--grammar",
            g.to_str().unwrap(),
            "events",
            log.to_str().unwrap(),
        ],
        None,
    );
    assert!(ev.stdout.contains("  k  "), "{}", ev.stdout);
}

/// D6: a grammar that is a device, a FIFO (whose open would block every command) or
/// more than 4 MiB is refused by name, before it is read.
#[test]
fn d6_grammar_files_that_are_not_regular_or_too_large_are_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fifo = tmp.path().join("a.toml");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success());
    let big = tmp.path().join("big.toml");
    std::fs::write(&big, "#".repeat((4 << 20) + 1)).expect("write");
    for (path, want) in [
        (
            "/dev/zero",
            "grammar /dev/zero: a device, not a regular file".to_string(),
        ),
        (
            fifo.to_str().unwrap(),
            format!("grammar {}: a FIFO, not a regular file", fifo.display()),
        ),
        (
            big.to_str().unwrap(),
            format!("grammar {}: larger than 4194304 bytes", big.display()),
        ),
    ] {
        let t0 = Instant::now();
        let o = rankscope(&["--grammar", path, "grammars", "list"], None);
        assert_eq!(o.code, 2, "{path}");
        assert!(o.stderr.contains(&want), "{path}: {}", o.stderr);
        assert!(t0.elapsed() < Duration::from_secs(10));
    }
    // In the user grammar directory too.
    let out = Command::new(env!("CARGO_BIN_EXE_rankscope"))
        .args(["summary", sample("tp8-baseline").to_str().unwrap()])
        .env("RANKSCOPE_GRAMMAR_DIR", tmp.path())
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a.toml: a FIFO, not a regular file"));
}

/// Runs the binary with its standard output on /dev/full (every write fails, ENOSPC).
fn rankscope_into_full_device(args: &[&str]) -> (Option<i32>, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = Command::new(env!("CARGO_BIN_EXE_rankscope"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// D15, D24: completions, help and version written into a full device used to panic
/// (exit 101, completions) or exit 0 (help, version). Each is now an error, exit 2,
/// naming the failed write.
#[test]
fn d15_d24_writes_into_a_full_device_fail_with_exit_2() {
    for args in [
        &["completions", "zsh"][..],
        &["completions", "fish"][..],
        &["--help"][..],
        &["--version"][..],
        &["summary", "--help"][..],
    ] {
        let (code, stderr) = rankscope_into_full_device(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("cannot write to standard output: No space left on device"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // Still printed whole where it can be.
    let help = rankscope(&["--help"], None);
    assert_eq!(help.code, 0);
    assert!(help.stdout.contains("Usage: rankscope"), "{}", help.stdout);
}

/// D2: clap's usage error echoed the refused argument raw: an OSC title sequence given
/// as `--width` reached the terminal. The message is cleaned line by line, exit 2.
#[test]
fn d2_a_refused_argument_is_echoed_clean() {
    let o = rankscope(&["summary", "--width", "\u{1b}]0;PWNED\u{7}12", "x"], None);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("error: invalid value '12' for '--width <N>'"),
        "{}",
        o.stderr
    );
}

/// D14: pzstd's output opens with a skippable frame (bytes `50 2a 4d 18`, 4 bytes of
/// frame sizes) before the zstd frame at byte 12 (`28 b5 2f fd`): it was refused as
/// binary. `zstd -dc` gives 82 lines, tp8-baseline's start-up of 8 ranks.
#[test]
fn d14_zstd_with_a_skippable_frame_first_is_read() {
    let f = turn3("pzstd_made.log.zst");
    let o = rankscope(&["summary", "--json", f.to_str().unwrap()], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let run = &json(&o)["run"];
    assert_eq!(run["ready"], true);
    assert_eq!(run["lines"]["lines"], 82);
    assert_eq!(run["ranks"].as_array().map(Vec::len), Some(8));
    // The same through a pipe: the compression is read from the stream's first bytes.
    let bytes = std::fs::read(&f).expect("read");
    let p = rankscope(&["summary", "--json", "-"], Some(bytes));
    assert_eq!(json(&p)["run"]["lines"]["lines"], 82);
}

/// D16: `tui --first-frame 65535x65535` aborted allocating 171,793,449,000 bytes (exit
/// 134). The size is bounded at 1000x1000 with a usage error; the bound itself draws.
#[test]
fn d16_first_frame_size_is_bounded() {
    let run = sample("tp8-baseline");
    let o = rankscope(
        &["tui", "--first-frame", "65535x65535", run.to_str().unwrap()],
        None,
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("65535x65535 is larger than a terminal: at most 1000x1000"),
        "{}",
        o.stderr
    );
    let ok = rankscope(
        &["tui", "--first-frame", "1000x1000", run.to_str().unwrap()],
        None,
    );
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    assert_eq!(ok.stdout.lines().count(), 1000);
}

/// D17: a directory, /dev/zero, a /proc file and a FIFO carrying a valid snapshot all
/// said "pickle: empty input (0 bytes)" (their length is 0). Each is now read for what
/// it is: the directory refused as one, the streams read as streams.
#[test]
fn d17_snapshot_paths_that_are_not_plain_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = rankscope(&["mem", dir.path().to_str().unwrap()], None);
    assert_eq!(d.code, 2);
    assert!(
        d.stderr
            .contains("no PyTorch memory snapshots in this directory"),
        "{}",
        d.stderr
    );
    let z = rankscope(&["mem", "/dev/zero"], None);
    assert_eq!(z.code, 2);
    assert!(
        z.stderr
            .contains("/dev/zero: pickle: not a pickle of protocol 2-5: byte 0 is 0x00"),
        "{}",
        z.stderr
    );
    let p = rankscope(&["mem", "/proc/self/status"], None);
    // /proc/self/status opens with `Name:`: byte 0 is 'N', 0x4e.
    assert!(p.stderr.contains("byte 0 is 0x4e"), "{}", p.stderr);
    let fifo = dir.path().join("snap.pickle");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success());
    let src = sample("tp8-baseline/snapshot_rank0.pickle");
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let bytes = std::fs::read(src).expect("sample");
            std::fs::write(fifo, bytes).expect("write fifo");
        })
    };
    let f = rankscope(&["mem", fifo.to_str().unwrap()], None);
    writer.join().expect("writer");
    let direct = rankscope(
        &[
            "mem",
            sample("tp8-baseline/snapshot_rank0.pickle")
                .to_str()
                .unwrap(),
        ],
        None,
    );
    assert_eq!(f.code, 0, "{}", f.stderr);
    // The same summary as the file's, after the header line naming the path.
    let body = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&f.stdout), body(&direct.stdout));
    assert!(f.stdout.contains("reserved 13.99 GiB"), "{}", f.stdout);
}

/// D18: device_free is 2^64−1 (checked with Python's unpickler), which the pickle holds
/// as a LONG1 past 64 bits: "expected int, found int" now says which int.
#[test]
fn d18_an_int_past_64_bits_is_named_as_such() {
    let f = turn3("device_2pow40.pickle");
    let o = rankscope(&["mem", f.to_str().unwrap()], None);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains(
            "snapshot key `device_traces[0][0].device_free`: expected int, found int past 64 bits"
        ),
        "{}",
        o.stderr
    );
}

/// D19: five segments of 2^62 bytes with five blocks of 2^62 each (Python's unpickler):
/// the sums wrapped (4096 PiB shown for 20480 PiB; a panic in a debug build). The
/// snapshot is refused at the first size whose sum passes 2^64: segment 0's fourth
/// block.
#[test]
fn d19_sizes_that_sum_past_64_bits_are_refused() {
    let f = turn3("sum_overflow_blocks.pickle");
    let o = rankscope(&["mem", f.to_str().unwrap()], None);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(
        o.stderr.contains(
            "snapshot key `segments[0].blocks[3].size`: expected sizes that sum under 2^64 bytes"
        ),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("panicked"));
}

/// D19 through the general reader: the `pickle` fuzz target found that
/// `types::from_pickle` (the path for pickles the direct reader hands back) built the
/// snapshot whose sizes wrap, where `read_bytes` refused it. Both refuse it now, at the
/// same key.
#[test]
fn d19_the_general_reader_refuses_sizes_past_64_bits_too() {
    let bytes = std::fs::read(turn3("sum_overflow_blocks.pickle")).expect("read");
    let general = rankscope::snapshot::pickle::parse(&bytes).expect("a valid pickle");
    let e = rankscope::snapshot::types::from_pickle(&general).expect_err("refused");
    assert!(e.to_string().contains("segments[0].blocks[3].size"), "{e}");
    let direct = rankscope::snapshot::read_bytes(&bytes).expect_err("refused");
    assert!(
        direct.to_string().ends_with(&e.to_string()),
        "{direct} / {e}"
    );
}

/// D26: a run directory with snapshot_rank1.pickle.gz (tp2-frag-grouped's, gzipped
/// here): it was taken for a snapshot by name, then refused ("byte 0 is 0x1f"). A
/// gzip snapshot is now decompressed: the candidate's two snapshots are matched.
#[test]
fn d26_a_gzip_snapshot_in_a_run_directory_is_read() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let src = sample("tp2-frag-grouped");
    for f in ["server.log", "snapshot_rank0.pickle"] {
        std::fs::copy(src.join(f), dir.path().join(f)).expect("copy");
    }
    let raw = std::fs::read(src.join("snapshot_rank1.pickle")).expect("read");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).expect("gzip");
    std::fs::write(
        dir.path().join("snapshot_rank1.pickle.gz"),
        gz.finish().expect("gzip"),
    )
    .expect("write");
    let base = sample("tp2-frag-interleaved");
    let o = rankscope(
        &[
            "diff",
            "--json",
            base.to_str().unwrap(),
            dir.path().to_str().unwrap(),
        ],
        None,
    );
    let d = json(&o);
    let notes = d["snapshot_notes"].to_string();
    assert!(!notes.contains("not a pickle"), "{notes}");
    assert!(
        notes.contains("candidate snapshots matched by file name, device index agrees (all 2)"),
        "{notes}"
    );
    let m = rankscope(
        &[
            "mem",
            dir.path()
                .join("snapshot_rank1.pickle.gz")
                .to_str()
                .unwrap(),
        ],
        None,
    );
    let plain = rankscope(
        &["mem", src.join("snapshot_rank1.pickle").to_str().unwrap()],
        None,
    );
    let body = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&m.stdout), body(&plain.stdout));
}

/// Writes a grammar of `events` events and `prefixes` prefixes, in the shape of the
/// campaign's gr/events_10k.toml and gr/prefixes_10k.toml.
fn many_grammar(path: &Path, events: usize, prefixes: usize) {
    let mut t =
        String::from("id = \"many\"\nname = \"n\"\ndescription = \"d\"\ndescribes = \"server\"\n");
    for p in 0..prefixes.max(1) {
        t.push_str(&format!(
            "\n[[prefix]]\nid = \"p{p}\"\nregex = '''^\\[(?P<date>\\d{{4}}-\\d{{2}}-\\d{{2}}) (?P<time>\\d{{2}}:\\d{{2}}:\\d{{2}}) Q{p}TP(?P<tp>\\d+)\\] '''\nstarts_with = [\"[\"]\n"
        ));
    }
    for e in 0..events {
        t.push_str(&format!(
            "\n[[event]]\nkind = \"k{e}\"\nphase = \"dist_init\"\nliterals = [\"lit{e}x\"]\nregex = '''lit{e}x (?P<v{e}>\\d+)'''\n"
        ));
    }
    std::fs::write(path, t).expect("write grammar");
}

/// D7: 10,000 grammar events took 604 MiB and 3.4 s (10,000 prefixes 753 MiB): about
/// 60 KiB each once compiled. The loaded grammars may hold 1,000 events and 256
/// prefixes together (the built-in ones: 122 and 14); past that the grammar is refused
/// by name before it is compiled. 800 events load within the memory bound.
#[test]
fn d7_grammars_with_too_many_events_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = sample("tp8-baseline");
    let big = dir.path().join("events_10k.toml");
    many_grammar(&big, 10_000, 1);
    let o = rankscope(
        &[
            "--grammar",
            big.to_str().unwrap(),
            "summary",
            run.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("events_10k.toml: loading it makes 10000 events or more, past the 1000"),
        "{}",
        o.stderr
    );
    let pf = dir.path().join("prefixes_300.toml");
    many_grammar(&pf, 1, 300);
    let o = rankscope(
        &[
            "--grammar",
            pf.to_str().unwrap(),
            "summary",
            run.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        o.stderr.contains("300 prefixes or more, past the 256"),
        "{}",
        o.stderr
    );
    // Two files that pass the bound only together: the second is named.
    let (a, b) = (dir.path().join("a.toml"), dir.path().join("b.toml"));
    many_grammar(&a, 500, 1);
    many_grammar(&b, 500, 1);
    std::fs::write(
        &b,
        std::fs::read_to_string(&b)
            .unwrap()
            .replace("\"many\"", "\"other\""),
    )
    .expect("write");
    let o = rankscope(
        &[
            "--grammar",
            a.to_str().unwrap(),
            "--grammar",
            b.to_str().unwrap(),
            "summary",
            run.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        o.stderr.contains("b.toml: loading it makes 1123 events"),
        "{}",
        o.stderr
    );
    let ok = dir.path().join("events_800.toml");
    many_grammar(&ok, 800, 1);
    let o = rankscope(
        &[
            "--grammar",
            ok.to_str().unwrap(),
            "summary",
            run.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// D5: the Perfetto export of 100,000 ranks (ranks_100k_tags.log.gz: a dist_init begin
/// and a plain record per rank) peaked at 1.41 GB: the events were built into one JSON
/// tree, then into a 63 MB buffer. They are now written as they are made (197 MiB,
/// release, for 100,000 ranks; the document is the same, compared with Python). Here
/// 50,000 ranks, within the 256 MiB bound `rankscope` asserts.
#[test]
fn d5_perfetto_export_streams() {
    let n = 50_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("ranks.log");
    let mut text = String::new();
    for r in 0..n {
        text.push_str(&format!(
            "[2026-11-29 09:18:12 TP{r}] Init torch distributed begin.\n[2026-11-29 09:18:13 TP{r}] some plain record line\n"
        ));
    }
    std::fs::write(&log, text).expect("write");
    let o = rankscope(&["export", "--perfetto", "-", log.to_str().unwrap()], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let doc = json(&o);
    // Per rank: its lane's name and sort index, the begin instant, the launch and
    // dist_init slices; and the process name and the launcher lane's two: 5n + 3 (the
    // 100,000-rank input gives 500,003).
    assert_eq!(doc["traceEvents"].as_array().map(Vec::len), Some(5 * n + 3));
    assert_eq!(doc["displayTimeUnit"], "ms");
    assert_eq!(doc["otherData"]["run"], log.to_str().unwrap());
}

/// A "billion laughs" snapshot: one block dict memoised and referenced `blocks` times in
/// one segment's block list, that segment memoised and referenced `segments` times. The
/// file holds about `2 × (blocks + segments)` bytes of references; the model would hold
/// `blocks × segments` blocks.
fn laughs_pickle(segments: usize, blocks: usize) -> Vec<u8> {
    let s = |b: &mut Vec<u8>, t: &str| {
        b.push(0x8c); // SHORT_BINUNICODE
        b.push(t.len() as u8);
        b.extend_from_slice(t.as_bytes());
    };
    let get = |b: &mut Vec<u8>, key: u8| {
        b.push(b'h'); // BINGET
        b.push(key);
    };
    let mut b = vec![0x80, 4, b'}', b'('];
    s(&mut b, "segments");
    b.extend_from_slice(b"]("); // the segment list
    b.extend_from_slice(b"}("); // the segment dict
    s(&mut b, "device");
    b.extend_from_slice(&[b'K', 0]);
    s(&mut b, "address");
    b.extend_from_slice(&[b'K', 0]);
    s(&mut b, "total_size");
    b.extend_from_slice(&[b'M', 0, 2]); // 512
    s(&mut b, "blocks");
    b.extend_from_slice(b"]("); // the block list
    b.extend_from_slice(b"}(");
    s(&mut b, "size");
    b.extend_from_slice(&[b'M', 0, 2]);
    s(&mut b, "state");
    s(&mut b, "active_allocated");
    s(&mut b, "address");
    b.extend_from_slice(&[b'K', 0]);
    b.push(b'u');
    b.push(0x94); // MEMOIZE: the block is memo 0
    for _ in 1..blocks {
        get(&mut b, 0);
    }
    b.push(b'e'); // APPENDS into the block list
    b.push(b'u'); // the segment's keys
    b.push(0x94); // the segment is memo 1
    for _ in 1..segments {
        get(&mut b, 1);
    }
    b.push(b'e'); // APPENDS into the segment list
    s(&mut b, "device_traces");
    b.push(b']');
    b.push(b'u');
    b.push(b'.');
    b
}

/// D3: a 5 KB pickle that shares one block by reference a million times is refused with
/// the key where the budget ran out, in bounded memory, instead of building a million
/// blocks (a 198 KB one took 5.35 GB); the same shape at a size a file can hold is read.
#[test]
fn d3_a_block_shared_by_reference_a_million_times_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("laughs.pickle");
    let bytes = laughs_pickle(1000, 1000);
    // 2 bytes per reference: ~4 KB for 10^6 blocks.
    assert!(bytes.len() < 4_200, "{}", bytes.len());
    std::fs::write(&bomb, &bytes).unwrap();
    let o = rankscope(&["mem", bomb.to_str().unwrap()], None);
    assert_eq!(o.code, 2, "{}", o.stderr);
    // The budget is one element per 8 bytes of the file: 4,0xx / 8 ≈ 500 blocks, so it
    // runs out in the first segment's block list.
    assert!(
        o.stderr.contains("snapshot key `segments[0].blocks[5") && o.stderr.contains("pickle bomb"),
        "{}",
        o.stderr
    );
    assert!(o.max_rss_kib < 100 * 1024, "{} KiB", o.max_rss_kib);

    // Two segments of three blocks shared the same way: 6 blocks of 512 B in ~150 bytes,
    // within what the file could hold, so read as Python would.
    let small = dir.path().join("small.pickle");
    std::fs::write(&small, laughs_pickle(2, 3)).unwrap();
    let o = rankscope(&["mem", small.to_str().unwrap()], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // Python's pickle.loads gives 2 segments of 3 blocks of 512 B each: 6 blocks, 3 KiB.
    assert!(o.stdout.contains("in 2 segments"), "{}", o.stdout);
    let site = o
        .stdout
        .lines()
        .find(|l| l.starts_with("<no frames>"))
        .unwrap();
    let cells: Vec<&str> = site.split_whitespace().collect();
    assert_eq!(cells[cells.len() - 1], "6", "{site}");
    assert_eq!(cells[2..4], ["3.00", "KiB"], "{site}");
}
