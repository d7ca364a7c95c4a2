//! Broken input as real logs have it (shared/FORMATS.md §8): every case gives a result,
//! no event is lost, and what was not understood is counted.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rankscope::grammar::GrammarSet;
use rankscope::ingest::scan::{scan_bytes, scan_reader, LineCounts, SourceScan};

fn gs() -> GrammarSet {
    GrammarSet::builtin().expect("built-in grammars compile")
}

fn scan(text: &[u8]) -> SourceScan {
    let s = scan_bytes(&gs(), text);
    assert_accounted(&s.counts);
    s
}

/// Every line lands in exactly one bucket.
fn assert_accounted(c: &LineCounts) {
    assert_eq!(
        c.lines,
        c.events + c.records + c.continuation + c.noise + c.blank + c.unknown,
        "{c:?}"
    );
}

const END_TP0: &str =
    "[2026-03-01 10:00:01 TP0] Init torch distributed ends. elapsed=1.00 s, mem usage=0.60 GB";

#[test]
fn crlf_line_endings() {
    let text =
        format!("{END_TP0}\r\n[2026-03-01 10:00:01 TP0] Load weight begin. avail mem=14.00 GB\r\n");
    let s = scan(text.as_bytes());
    assert_eq!(s.events.len(), 2);
    assert_eq!(s.events[0].bytes("mem_usage_bytes"), Some(644_245_094));
    assert_eq!(s.events[1].bytes("avail_bytes"), Some(15_032_385_536));
    assert_eq!(s.counts.unknown, 0);
}

#[test]
fn ansi_colour_codes_real_and_replaced() {
    let text = "\x1b[32m[2026-03-01 10:00:01 TP3]\x1b[0m Load weight begin. avail mem=14.00 GB\n\
                \u{fffd}[1;36m[2026-03-01 10:00:02 TP3]\u{fffd}[0m Memory pool end. avail mem=0.64 GB\n";
    let s = scan(text.as_bytes());
    assert_eq!(s.events.len(), 2);
    assert_eq!(
        s.events[0].rank.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP3")
    );
    assert_eq!(s.events[1].kind, "mem_pool_end");
    assert!(!s.events[0].message.contains('\u{1b}'));
}

#[test]
fn progress_bar_glued_to_the_next_record() {
    let text = "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.00it/s]\r\
                [2026-03-01 10:00:05 TP1] Load weight end. elapsed=4.00 s, type=LlamaForCausalLM, avail mem=6.60 GB, mem usage=7.29 GB.\n\
                Loading safetensors checkpoint shards: 100% Completed | 2/2 [00:02<00:00,  1.00it/s]\n";
    let s = scan(text.as_bytes());
    assert_eq!(s.events.len(), 1);
    assert_eq!(s.events[0].kind, "weight_load_end");
    assert_eq!(
        s.events[0].rank.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP1")
    );
    assert_eq!(s.counts.noise, 1, "the bar-only line is known noise");
    assert_eq!(s.counts.unknown, 0);
}

#[test]
fn a_record_that_overwrote_a_bar_is_read_as_the_record() {
    // A terminal shows the text after the last `\r`: here a record that gives no event,
    // so the line counts as a record, not as a line nobody understood; the line after it
    // holds no `\r` at all.
    let text =
        "Downloading weights:  10%|#         | 1/10\r[2026-03-01 10:00:05 TP1] Waiting for peers\n\
                [2026-03-01 10:00:06 TP1] Still waiting for peers\n";
    let s = scan(text.as_bytes());
    assert_eq!(s.events.len(), 0);
    assert_eq!((s.counts.records, s.counts.unknown), (2, 0));
}

#[test]
fn non_utf8_bytes_do_not_lose_the_event() {
    let mut text =
        b"[2026-03-01 10:00:01 TP0] Init torch distributed begin. \xff\xfe\x80\n".to_vec();
    text.extend_from_slice(b"\xc3\x28 stray bytes from a bad copy\n");
    let s = scan(&text);
    assert_eq!(s.events.len(), 1);
    assert_eq!(s.events[0].kind, "dist_init_begin");
    assert_eq!(s.counts.unknown, 1);
    assert!(s.unknown_samples[0].text.contains('\u{fffd}'));
    assert_eq!(s.unknown_samples[0].line, 2);
}

#[test]
fn truncated_last_line_is_reported_not_read_as_a_value() {
    // `9114` may be `91141` cut short: the event is kept, the figure dropped and said so.
    let text = format!("{END_TP0}\n[2026-03-01 10:00:02 TP0] max_total_num_tokens=9114");
    let s = scan(text.as_bytes());
    assert_eq!(s.events.len(), 2);
    assert_eq!(s.events[1].kind, "kv_budget");
    assert_eq!(s.events[1].field("tokens"), None);
    assert_eq!(s.cut_fields, vec!["kv_budget.tokens".to_string()]);
    assert!(s
        .cut_last_line
        .as_deref()
        .is_some_and(|l| l.ends_with("max_total_num_tokens=9114")));

    // Cut before its unit, the line no longer has the event's shape: no event, but the cut
    // line is reported and counted, never read as 11.2 GB.
    let text = format!("{END_TP0}\n[2026-03-01 10:00:02 TP0] Load weight begin. avail mem=11.2");
    let s = scan(text.as_bytes());
    assert_eq!(s.events.len(), 1);
    assert_eq!(s.counts.lines, 2);
    assert!(s
        .cut_last_line
        .as_deref()
        .is_some_and(|l| l.ends_with("avail mem=11.2")));
}

#[test]
fn empty_and_blank_inputs() {
    let s = scan(b"");
    assert_eq!((s.events.len(), s.counts.lines), (0, 0));
    let s = scan(b"\n\n   \n");
    assert_eq!((s.events.len(), s.counts.blank), (0, 3));
}

#[test]
fn traceback_attaches_to_its_rank_and_the_oom_inside_it_inherits_the_rank() {
    let text = "[2026-03-01 10:00:09 TP5] Scheduler hit an exception: Traceback (most recent call last):\n\
                \x20 File \"/srv/sglang/model_executor/model_runner.py\", line 300, in init_memory_pool\n\
                \x20   self.pool = make_pool()\n\
                torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity of 79.10 GiB of which 1.50 GiB is free.\n\
                \n\
                [2026-03-01 10:00:10] Received sigquit from a child process. It usually means the child failed.\n";
    let s = scan(text.as_bytes());
    let kinds: Vec<&str> = s.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["error", "oom", "error"]);
    assert_eq!(
        s.events[1].rank.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP5")
    );
    assert_eq!(s.events[1].bytes("requested_bytes"), Some(2 << 30));
    let tb = s.events[0].detail().expect("traceback");
    assert!(tb.contains("in init_memory_pool") && tb.contains("OutOfMemoryError"));
    assert!(s.events[2].rank.is_none(), "the launcher line has no rank");
    assert_eq!(s.counts.unknown, 0);
}

#[test]
fn a_traceback_without_a_prefix_keeps_its_frames() {
    // Input that starts mid-traceback: the frames before the closing line are its
    // traceback. After a record, a plain stderr traceback (header, frames, closing line)
    // is the closing line's traceback too; a record in between would end it.
    let bare = "  File \"/srv/sglang/srt/model_executor/model_runner.py\", line 902, in init_memory_pool\n\
                \x20   self.max_total_num_tokens = self.profile_max_num_token(total_gpu_memory)\n\
                RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n";
    let s = scan(bare.as_bytes());
    assert_eq!(s.events.len(), 1);
    let tb = s.events[0].detail().expect("frames");
    assert!(tb.contains("in init_memory_pool"), "{tb}");
    let after = "INFO 08-27 14:02:21 model_runner.py:917] Loading model weights took 13.4732 GB\n\
                 Traceback (most recent call last):\n\
                 \x20 File \"/srv/vllm/worker/worker.py\", line 257, in _warm_up_model\n\
                 \x20   self.model_runner.capture_model(self.gpu_cache)\n\
                 RuntimeError: CUDA error: an illegal memory access was encountered\n";
    let s = scan(after.as_bytes());
    let err = s.events.iter().find(|e| e.kind == "error").expect("error");
    let tb = err.detail().expect("frames");
    assert!(
        tb.starts_with("Traceback") && tb.contains("in _warm_up_model"),
        "{tb}"
    );
    let ended = "Traceback (most recent call last):\n\
                 \x20 File \"/srv/vllm/worker/worker.py\", line 257, in _warm_up_model\n\
                 INFO 08-27 14:02:21 model_runner.py:917] Loading model weights took 13.4732 GB\n\
                 RuntimeError: CUDA error: an illegal memory access was encountered\n";
    let s = scan(ended.as_bytes());
    let err = s.events.iter().find(|e| e.kind == "error").expect("error");
    assert_eq!(err.detail(), None);
}

#[test]
fn traceback_split_across_blocks_is_joined() {
    // A tiny block size forces the traceback and its OOM line into later blocks.
    let mut text = String::from(
        "[2026-03-01 10:00:09 TP2] Scheduler hit an exception: Traceback (most recent call last):\n",
    );
    for i in 0..400 {
        text.push_str(&format!(
            "  File \"/srv/x.py\", line {i}, in capture_graphs\n"
        ));
    }
    // A chained exception far from the header: a line that is noise on its own, but
    // here part of the traceback, in a block of its own.
    text.push_str("Traceback (most recent call last):\n");
    text.push_str("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which 30.96 GiB is free.\n");
    let s = scan_reader(&gs(), 0, text.as_bytes(), 4096, |_| {}).expect("in memory");
    assert_accounted(&s.counts);
    assert_eq!(s.events.len(), 2);
    assert_eq!(s.events[1].kind, "oom");
    assert_eq!(
        s.events[1].rank.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP2")
    );
    assert_eq!(s.counts.continuation, 401);
    assert_eq!((s.counts.unknown, s.counts.noise), (0, 0));
    assert_eq!(s.events[1].origin.line, 403);
    let tb = s.events[0].detail().expect("traceback");
    assert!(tb.contains("line 399, in capture_graphs\nTraceback (most recent call last):"));
}

#[test]
fn a_fifty_megabyte_line_is_split_and_later_events_survive() {
    let mut text = Vec::with_capacity(51 << 20);
    text.extend_from_slice(b"[2026-03-01 10:00:00 TP0] Init torch distributed begin. ");
    text.resize(50 << 20, b'x');
    text.push(b'\n');
    text.extend_from_slice(END_TP0.as_bytes());
    text.push(b'\n');
    let s = scan(&text);
    let kinds: Vec<&str> = s.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["dist_init_begin", "dist_init_end"]);
    assert!(s.counts.split_long_lines >= 1);
    assert_eq!(s.events[1].bytes("mem_usage_bytes"), Some(644_245_094));
    // The event keeps a bounded part of its 50 MB message, and says how much it left.
    let m = &s.events[0].message;
    assert!(m.len() < (16 << 10) + 64, "{}", m.len());
    assert!(m.contains("more bytes]"));
}

#[test]
fn duplicate_consoles_and_repeats_within_a_file() {
    // The same line twice in one file is two events (Python printed it twice).
    let text = format!("{END_TP0}\n{END_TP0}\n");
    let s = scan(text.as_bytes());
    assert_eq!(s.events.len(), 2);
}

#[test]
fn hostile_control_sequences_never_reach_the_message() {
    let text = "[2026-03-01 10:00:01 TP0] Scheduler hit an exception: \x1b]0;pwned\x07\x1b[2J\x1b[31mboom\u{202e}\n";
    let s = scan(text.as_bytes());
    assert_eq!(s.events.len(), 1);
    let m = &s.events[0].message;
    assert!(
        !m.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{m:?}"
    );
    assert!(m.ends_with("boom"));
}

#[test]
fn random_fragments_of_real_lines_never_panic_and_every_line_is_counted() {
    // Pieces of real records, escapes, multi-byte characters and control bytes, glued at
    // random (fixed seed), scanned with block sizes that cut anywhere.
    let pieces: [&[u8]; 16] = [
        b"[2026-11-29 09:18:14 TP1] ",
        b"Init torch distributed ends. elapsed=1.39 s, mem usage=0.60 GB",
        b"(Worker_TP3 pid=7781) ERROR 02-10 12:00:31 [multiproc_executor.py:643] ",
        b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of ",
        b"Scheduler hit an exception: Traceback (most recent call last):",
        b"vm:1138:1138 [0] NCCL INFO comm 0x426b1a20 rank 0 nranks 1 cudaDev 0 busId 60 - Init COMPLETE",
        b"\x1b[1;36m",
        b"\xef\xbf\xbd[0;0m",
        b"\r",
        b"\n",
        b"\xe2\x8f\x8e",
        b"\xff\xfe\x80",
        b"  File \"/x.py\", line 3, in capture_graphs",
        b"KV Cache is allocated. #tokens: ",
        b"server_args=ServerArgs(a=1, b='",
        b"\x07\x1b]0;t\x07",
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let gs = gs();
    for round in 0..200 {
        let mut text = Vec::new();
        for _ in 0..(next() % 60) {
            text.extend_from_slice(pieces[(next() % pieces.len() as u64) as usize]);
        }
        let block = 64 + (next() % 512) as usize;
        let s = scan_reader(&gs, 0, &text[..], block, |_| {}).expect("in memory");
        assert_accounted(&s.counts);
        let newlines = text.iter().filter(|&&b| b == b'\n').count() as u64;
        let last_partial = u64::from(text.last().is_some_and(|&b| b != b'\n'));
        assert!(
            s.counts.lines >= newlines + last_partial,
            "round {round}: {} lines counted, {} in the input",
            s.counts.lines,
            newlines + last_partial
        );
        for e in &s.events {
            assert!(!e.message.chars().any(|c| c.is_control() && c != '\t'));
        }
    }
}
