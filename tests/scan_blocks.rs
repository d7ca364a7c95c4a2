//! How an input is cut into blocks, and how many threads scan them, changes nothing the
//! scan reports: the bundled runs' logs, cut into blocks from the longest line's length to a few
//! KiB and scanned by pools of one and four threads (four: blocks are then scanned as
//! they are read, each on whichever thread is free, and merged in input order), give the
//! events, line counts and notes of the whole file scanned as one block.
//!
//! Not yet so for every log: cut into blocks of a few hundred bytes, 33 of the 245 logs
//! under tests/verdicts and tests/fixtures differ — 31 in the text of a failure whose
//! unprefixed traceback (after a record, no event opening it) spans a block boundary:
//! the part gathered before the boundary is not carried into the next block; 2 in
//! counts, kubectl's interleaved pod streams, whose parked tracebacks are not carried
//! either. Add those directories to `logs()` to see them.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use rankscope::grammar::GrammarSet;
use rankscope::ingest::scan::{scan_reader, SourceScan};

fn logs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("samples")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory under samples/") {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                dirs.push(path);
            } else if name.ends_with(".log") || name == "stdout.txt" {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn scan(gs: &GrammarSet, text: &[u8], block: usize, threads: usize) -> SourceScan {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    pool.install(|| scan_reader(gs, 0, text, block, |_| {}).expect("in memory"))
}

#[test]
fn blocks_and_threads_change_nothing_the_scan_reports() {
    let gs = GrammarSet::builtin().expect("built-in grammars compile");
    let logs = logs();
    // The bundled runs' logs and captured stdout: SGLang, vLLM V0 and V1, TGI, LMDeploy,
    // TensorRT-LLM, two nodes, a directory of rank files.
    assert!(logs.len() >= 40, "{} logs under samples/", logs.len());
    let mut compared = 0;
    for path in &logs {
        let text = std::fs::read(path).expect("a sample log");
        let whole = scan(&gs, &text, text.len() + 1, 1);
        assert!(whole.counts.lines > 0, "{}", path.display());
        // A line longer than a block is cut in pieces (counted in `split_long_lines`):
        // blocks here hold the longest line whole.
        let longest = text
            .split(|&b| b == b'\n')
            .map(<[u8]>::len)
            .max()
            .unwrap_or(0);
        for block in [longest + 1, 1000, 4096] {
            if block <= longest || block >= text.len() {
                continue;
            }
            for threads in [1, 4] {
                let cut = scan(&gs, &text, block, threads);
                let at = format!("{} in blocks of {block} on {threads}", path.display());
                assert_eq!(cut.counts, whole.counts, "{at}");
                assert_eq!(cut.events.len(), whole.events.len(), "{at}");
                for (c, w) in cut.events.iter().zip(&whole.events) {
                    assert_eq!(c, w, "{at}, line {}", w.origin.line);
                }
                assert_eq!(cut.dropped_events, whole.dropped_events, "{at}");
                assert_eq!(cut.cut_last_line, whole.cut_last_line, "{at}");
                assert_eq!(
                    format!("{:?}", cut.unknown_samples),
                    format!("{:?}", whole.unknown_samples),
                    "{at}"
                );
                compared += 1;
            }
        }
    }
    // Most logs are longer than 4 KiB: all three cuts are compared for them.
    assert!(compared >= 100, "{compared} cut scans compared");
}

#[test]
fn a_run_of_long_files_ends_on_any_thread_count() {
    // Four logs of many blocks each, read in parallel: each file's scan runs on one of the
    // pool's threads and hands its blocks to the pool. With a thread blocked on its own
    // file's results while its blocks waited in its own queue, two such files on two
    // threads never ended.
    use rankscope::session::{LoadOptions, Session};
    let gs = GrammarSet::builtin().expect("built-in grammars compile");
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let base = std::fs::read_to_string(root.join("tp8-baseline/server.log")).expect("sample");
    let mut paths = Vec::new();
    for i in 0..4 {
        let mut text = base.clone();
        while text.len() < 256 << 10 {
            text.push_str(&format!(
                "[2026-11-29 09:18:19 TP{i}] some plain record line\n"
            ));
        }
        let path = dir.path().join(format!("node{i}.log"));
        std::fs::write(&path, text).expect("write");
        paths.push(path);
    }
    let opts = LoadOptions {
        block_size: 16 << 10,
        ..LoadOptions::default()
    };
    let load = |threads: usize| {
        let (paths, opts) = (paths.clone(), opts.clone());
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let gs = GrammarSet::builtin().expect("built-in grammars compile");
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a thread pool");
            let session = pool.install(|| Session::open(&gs, &paths, &opts, &|_, _| {}));
            let _ = done.send(session.map(|s| s.run));
        });
        result
            .recv_timeout(std::time::Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("loading on {threads} threads did not end in 2 minutes"))
            .expect("loads")
    };
    let lines: u64 = (paths.iter())
        .map(|p| {
            std::fs::read(p)
                .expect("written")
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as u64
        })
        .sum();
    for threads in [1, 2, 4] {
        let run = load(threads);
        let read: u64 = run.sources.iter().map(|s| s.counts.lines).sum();
        assert_eq!(read, lines, "{threads} threads");
        let one = scan(&gs, base.as_bytes(), base.len() + 1, 1);
        // The four files' start-up events are the sample's, the same lines in each.
        assert_eq!(run.events.len(), one.events.len(), "{threads} threads");
    }
}
