//! How an input is cut into blocks, and how many threads scan them, changes nothing the
//! scan reports: every log under samples/, tests/verdicts/ and tests/fixtures/ (made-up
//! servers' with their own grammars), cut into blocks from the longest line's length to a
//! few KiB and scanned by pools of one and four threads (four: blocks are then scanned as
//! they are read, each on whichever thread is free, and merged in input order), read as a
//! stream, mapped, and read at the blocks' offsets in the file, gives the events, line counts and notes
//! of the whole file scanned as one block. What a block's first lines need from the lines
//! before it (a traceback open or parked there, the unprefixed traceback gathered since
//! the last record, the lines of an input that starts inside one) is carried across the
//! boundary (`Merger::push_block`).

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use rankscope::grammar::GrammarSet;
use rankscope::ingest::scan::{scan_file, scan_file_read_at_offsets, scan_reader, SourceScan};

/// Every log under `samples/`, `tests/verdicts/` and `tests/fixtures/`, with the grammar
/// files of its fixture when it is a made-up server's (`tests/fixtures/<dir>/*.toml`).
fn logs() -> Vec<(PathBuf, Vec<PathBuf>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for top in ["samples", "tests/verdicts", "tests/fixtures"] {
        let mut dirs = vec![(root.join(top), Vec::new())];
        while let Some((dir, grammars)) = dirs.pop() {
            let entries: Vec<PathBuf> = std::fs::read_dir(&dir)
                .expect("a directory of logs")
                .map(|e| e.expect("a directory entry").path())
                .collect();
            let own_grammars: Vec<PathBuf> = if dir.parent() == Some(&root.join("tests/fixtures")) {
                let mut g: Vec<PathBuf> = (entries.iter())
                    .filter(|p| p.extension().is_some_and(|e| e == "toml"))
                    .cloned()
                    .collect();
                g.sort();
                g
            } else {
                grammars
            };
            for path in entries {
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if path.is_dir() {
                    dirs.push((path, own_grammars.clone()));
                } else if name.ends_with(".log") || name == "stdout.txt" {
                    out.push((path, own_grammars.clone()));
                }
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

/// `file` (holding `text`) scanned in place: its blocks ranges of the file mapped into
/// memory (`ingest::scan::scan_file`, what a plain log longer than a block is read by),
/// or read at their offsets (`scan_file_read_at_offsets`, where it cannot be mapped).
fn scan_in_place(
    gs: &GrammarSet,
    file: &std::fs::File,
    block: usize,
    threads: usize,
    mapped: bool,
) -> SourceScan {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let scanned = if mapped {
        pool.install(|| scan_file(gs, 0, file, block, |_| {}))
    } else {
        pool.install(|| scan_file_read_at_offsets(gs, 0, file, block, |_| {}))
    };
    scanned.expect("a file")
}

#[test]
fn blocks_and_threads_change_nothing_the_scan_reports() {
    let builtin = GrammarSet::builtin().expect("built-in grammars compile");
    let logs = logs();
    // The bundled runs' logs and captured stdout (SGLang, vLLM V0 and V1, TGI, LMDeploy,
    // TensorRT-LLM, two nodes, a directory of rank files), the public logs' shapes under
    // tests/verdicts, and the fixtures, made-up servers' with their own grammars.
    assert!(logs.len() >= 280, "{} logs", logs.len());
    let mut compared = 0;
    let mut differ: Vec<String> = Vec::new();
    let mut sets: std::collections::HashMap<Vec<PathBuf>, GrammarSet> = Default::default();
    for (path, grammars) in &logs {
        let gs = if grammars.is_empty() {
            &builtin
        } else {
            sets.entry(grammars.clone()).or_insert_with(|| {
                let all = rankscope::grammar::load_all(grammars).expect("the fixture's grammars");
                GrammarSet::new(all).expect("the fixture's grammars compile")
            })
        };
        let text = std::fs::read(path).expect("a log");
        let file = std::fs::File::open(path).expect("a log");
        let whole = scan(gs, &text, text.len() + 1, 1);
        assert!(whole.counts.lines > 0, "{}", path.display());
        // A line longer than a block is cut in pieces (counted in `split_long_lines`):
        // blocks here hold the longest line whole.
        let longest = text
            .split(|&b| b == b'\n')
            .map(<[u8]>::len)
            .max()
            .unwrap_or(0);
        for block in [longest + 1, 300, 1000, 4096] {
            if block <= longest || block >= text.len() {
                continue;
            }
            for threads in [1, 4] {
                let cut = scan(gs, &text, block, threads);
                let mapped = scan_in_place(gs, &file, block, threads, true);
                let at_offsets = scan_in_place(gs, &file, block, threads, false);
                let ways = [
                    ("read", cut),
                    ("mapped", mapped),
                    ("read at offsets", at_offsets),
                ];
                for (how, scan) in ways {
                    if let Some(d) = first_difference(&scan, &whole) {
                        differ.push(format!(
                            "{} {how} in blocks of {block} on {threads}: {d}",
                            path.display()
                        ));
                    }
                    compared += 1;
                }
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} cut scans differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
    // Most logs are longer than 4 KiB: all four cuts are compared for them, each read
    // from a stream, mapped and at offsets.
    assert!(compared >= 3000, "{compared} cut scans compared");
}

/// What a scan cut into blocks reports otherwise than the whole file's, first found.
fn first_difference(cut: &SourceScan, whole: &SourceScan) -> Option<String> {
    if cut.counts != whole.counts {
        return Some(format!("counts {:?} vs {:?}", cut.counts, whole.counts));
    }
    if cut.events.len() != whole.events.len() {
        return Some(format!(
            "{} events vs {}",
            cut.events.len(),
            whole.events.len()
        ));
    }
    if let Some((c, w)) = cut.events.iter().zip(&whole.events).find(|(c, w)| c != w) {
        return Some(format!("event of line {}: {c:?}\nvs {w:?}", w.origin.line));
    }
    if cut.dropped_events != whole.dropped_events || cut.cut_last_line != whole.cut_last_line {
        return Some("dropped events or the cut last line".into());
    }
    let (cu, wu) = (
        format!("{:?}", cut.unknown_samples),
        format!("{:?}", whole.unknown_samples),
    );
    (cu != wu).then(|| format!("unknown samples {cu} vs {wu}"))
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

#[test]
fn a_wrapped_nodes_traceback_interrupted_by_another_node_is_whole_in_any_blocks() {
    // Two compose services' output interleaved line by line: worker-0's traceback is cut
    // three times by worker-1's records, and each part comes back behind its own
    // service's wrapper. Wherever the blocks cut the stream, the failure's text is its
    // five lines, in order, and no line of worker-1's is in it; the line counts are the
    // whole stream's.
    let mut text = String::new();
    let w0 = "sgl-worker-0| ";
    let w1 = "sgl-worker-1| ";
    text.push_str(&format!(
        "{w0}[2026-03-02 10:04:11 TP0] Load weight begin. avail mem=70.12 GB\n"
    ));
    text.push_str(&format!(
        "{w1}[2026-03-02 10:04:11 TP1] Load weight begin. avail mem=70.12 GB\n"
    ));
    text.push_str(&format!(
        "{w0}[2026-03-02 10:04:19 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    ));
    let frames = [
        "  File \"/srv/sglang/srt/managers/scheduler.py\", line 2210, in run_scheduler_process",
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)",
        "  File \"/srv/sglang/srt/model_executor/model_runner.py\", line 734, in load_model",
        "    self.model = get_model(model_config=self.model_config)",
        "RuntimeError: weight shape mismatch for layers.3.mlp (expected 4096, got 4608)",
    ];
    for (i, frame) in frames.iter().enumerate() {
        if i % 2 == 1 {
            text.push_str(&format!(
                "{w1}[2026-03-02 10:04:2{i} TP1] Load weight end. type=GrebeForCausalLM, avail mem=52.4{i} GB, mem usage=17.7{i} GB\n"
            ));
        }
        text.push_str(&format!("{w0}{frame}\n"));
    }
    text.push_str(&format!("{w1}[2026-03-02 10:04:31 TP1] KV Cache is allocated. #tokens: 91141, K size: 6.95 GB, V size: 6.95 GB\n"));
    let gs = GrammarSet::builtin().expect("built-in grammars compile");
    let whole = scan(&gs, text.as_bytes(), text.len() + 1, 1);
    let failure = (whole.events.iter())
        .find(|e| e.message.contains("Scheduler hit an exception"))
        .expect("worker-0's failure");
    let detail = failure.detail().unwrap_or("");
    // Its lines as printed, the service's wrapper in front.
    let expected: Vec<String> = frames.iter().map(|f| format!("{w0}{f}")).collect();
    assert_eq!(
        detail,
        expected.join("\n"),
        "the failure's traceback, whole"
    );
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    for block in (longest + 1..text.len()).step_by(5) {
        for threads in [1, 3] {
            let cut = scan(&gs, text.as_bytes(), block, threads);
            if let Some(d) = first_difference(&cut, &whole) {
                panic!("in blocks of {block} on {threads}: {d}");
            }
        }
    }
}

#[test]
fn more_parked_tracebacks_than_are_kept_read_the_same_in_any_blocks() {
    // A hundred pods each open a traceback, one line each, then each pod's next frame
    // comes back, last pod first: more tracebacks are parked than the scan keeps (64),
    // so the first pods' are let go and their frames read as lines of their own. Cut
    // anywhere, the stream reads as it does whole.
    // A router's record after each opening line parks that pod's traceback at once, so
    // blocks end with none open and their parked tracebacks add up across blocks.
    let mut text = String::new();
    for pod in 0..100 {
        text.push_str(&format!(
            "[pod/grebe-{pod}/sglang] [2026-03-02 10:04:{:02} TP0] Scheduler hit an exception: Traceback (most recent call last):\n",
            pod % 60
        ));
        text.push_str("[pod/router/sglang] [2026-03-02 10:04:59] router: worker health check\n");
    }
    for pod in (0..100).rev() {
        text.push_str(&format!(
            "[pod/grebe-{pod}/sglang]   File \"/srv/sglang/srt/managers/scheduler.py\", line {}, in event_loop\n",
            100 + pod
        ));
    }
    let gs = GrammarSet::builtin().expect("built-in grammars compile");
    let whole = scan(&gs, text.as_bytes(), text.len() + 1, 1);
    // All 100 tracebacks were parked, the first 36 let go: pods 36..=99's frames go on
    // with their tracebacks (their opening lines are lines 73, 75, … 199). Pods 0..=35
    // have none left: their frames are lines of their own, in no other pod's traceback.
    let with_frame: Vec<u64> = (whole.events.iter())
        .filter(|e| e.detail().is_some_and(|d| d.contains("in event_loop")))
        .map(|e| e.origin.line)
        .collect();
    assert_eq!(
        with_frame,
        (36..100).map(|pod| 2 * pod + 1).collect::<Vec<u64>>()
    );
    let pod36 = whole.events.iter().find(|e| e.origin.line == 73);
    assert_eq!(
        pod36.and_then(|e| e.detail()),
        Some("[pod/grebe-36/sglang]   File \"/srv/sglang/srt/managers/scheduler.py\", line 136, in event_loop")
    );
    // Every frame is a continuation line, behind its wrapper as printed.
    assert_eq!(whole.counts.continuation, 100);
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    for block in [longest + 1, 1000, 4096, 9000] {
        for threads in [1, 3] {
            let cut = scan(&gs, text.as_bytes(), block, threads);
            if let Some(d) = first_difference(&cut, &whole) {
                panic!("in blocks of {block} on {threads}: {d}");
            }
        }
    }
}
