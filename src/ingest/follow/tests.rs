//! Following compressed logs: when their first bytes are not written yet, when a decoding
//! stops short, when another file takes the path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{FollowNote, Follower};
use crate::grammar::GrammarSet;
use crate::ingest::scan::EventBudget;

/// The first `n` lines of one of the project's sample runs, each with its newline.
fn sample(run: &str, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(format!("samples/{run}/server.log")).expect("sample");
    let lines: Vec<String> = text.lines().take(n).map(|l| format!("{l}\n")).collect();
    assert_eq!(lines.len(), n, "the sample has {n} lines");
    lines
}

/// `lines` as a whole gzip stream, finished.
fn gzip(lines: &[String]) -> Vec<u8> {
    gzip_flushed(lines, &[]).1
}

/// `lines` as a gzip stream with a sync flush after each count of lines in `flush_after`:
/// the stream's length at each flush, and the whole stream, finished.
fn gzip_flushed(lines: &[String], flush_after: &[usize]) -> (Vec<usize>, Vec<u8>) {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut at_flush = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        gz.write_all(l.as_bytes()).expect("write");
        if flush_after.contains(&(i + 1)) {
            gz.flush().expect("flush");
            at_flush.push(gz.get_ref().len());
        }
    }
    (at_flush, gz.finish().expect("finish"))
}

/// Writes `bytes` as the file's whole content, in place (the same inode).
fn overwrite(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .expect("open");
    f.write_all(bytes).expect("write");
}

fn count(notes: &[FollowNote], what: fn(&FollowNote) -> bool) -> usize {
    notes.iter().filter(|n| what(n)).count()
}

/// A run directory to follow, and what its follower is built with.
struct Watched {
    gs: GrammarSet,
    budget: EventBudget,
    dir: tempfile::TempDir,
}

impl Watched {
    fn new() -> Watched {
        Watched {
            gs: GrammarSet::builtin().expect("grammars"),
            budget: EventBudget::default(),
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The followed log's path.
    fn log(&self) -> PathBuf {
        self.dir.path().join("server.log.gz")
    }

    fn follower(&self) -> Follower<'_> {
        Follower::new(&self.gs, &self.budget, &[self.dir.path().to_path_buf()]).expect("follow")
    }
}

#[test]
fn a_compressed_log_created_empty_is_read_once_its_header_is_written() {
    // `server | gzip > server.log.gz`: the file exists, empty, until gzip writes its first
    // block. It was taken for a plain log then, and its gzip bytes for binary ones.
    let run = Watched::new();
    std::fs::File::create(run.log()).expect("create");
    let mut follower = run.follower();
    follower.poll();
    let notes = follower.take_notes();
    assert_eq!(
        count(&notes, |n| matches!(n, FollowNote::Compressed { .. })),
        0
    );
    assert_eq!(follower.lines(), 0);
    overwrite(&run.log(), &gzip(&sample("tp8-baseline", 40)));
    follower.poll();
    let notes = follower.take_notes();
    assert_eq!(
        count(&notes, |n| matches!(n, FollowNote::Compressed { .. })),
        1
    );
    assert_eq!(count(&notes, |n| matches!(n, FollowNote::Binary { .. })), 0);
    assert_eq!(follower.lines(), 40);
}

/// A gzip stream of 60 sample lines flushed after lines 30 and 31 (the whole stream, and
/// its length at each flush); its first 30 lines written to `run`'s log and read by its
/// follower; then, in place (the same inode), a stream that fails at its first
/// block (block type 3 does not exist) of `broken_len(at)` bytes, looked at once. A stream
/// caught mid-block while it is written decodes short with an error the same way: the
/// decoder drops what it decoded in its last step.
fn read_30_then_a_short_decoding(
    run: &Watched,
    broken_len: impl FnOnce(&[usize]) -> usize,
) -> (Follower<'_>, Vec<usize>, Vec<u8>) {
    let path = run.log();
    let (at, whole) = gzip_flushed(&sample("tp8-baseline", 60), &[30, 31]);
    std::fs::write(&path, &whole[..at[0]]).expect("write");
    let mut follower = run.follower();
    follower.poll();
    assert_eq!(follower.lines(), 30);
    let mut broken = whole[..10].to_vec();
    broken.push(0x07);
    broken.resize(broken_len(&at), 0);
    overwrite(&path, &broken);
    follower.poll();
    assert_eq!(follower.lines(), 30);
    (follower, at, whole)
}

#[test]
fn a_compressed_log_that_decodes_short_at_an_error_is_read_again_not_taken_for_a_new_file() {
    // Longer than what was read, decoding to less with an error: it was taken for a new
    // file, and a second segment read the log again from its start (90 lines in all).
    let run = Watched::new();
    let (mut follower, _, whole) = read_30_then_a_short_decoding(&run, |at| at[0] + 1);
    overwrite(&run.log(), &whole);
    follower.poll();
    let notes = follower.take_notes();
    assert_eq!(
        count(&notes, |n| matches!(n, FollowNote::Replaced { .. })),
        0
    );
    assert_eq!(follower.lines(), 60);
    assert_eq!(follower.given().scans.len(), 1, "one segment");
}

#[test]
fn a_compressed_log_that_decoded_short_is_decoded_again_at_the_next_look_though_not_grown() {
    // The look that caught a write half done (here: the invalid stream, as long as the
    // stream flushed after line 31) must not settle the file at that size: when the write
    // is done (here: the valid stream of that length, in place) and nothing more is ever
    // written — a server that died — the next look reads line 31.
    let run = Watched::new();
    let (mut follower, at, whole) = read_30_then_a_short_decoding(&run, |at| at[1]);
    overwrite(&run.log(), &whole[..at[1]]);
    follower.poll();
    assert_eq!(follower.lines(), 31);
    let notes = follower.take_notes();
    assert_eq!(
        count(&notes, |n| matches!(n, FollowNote::Replaced { .. })),
        0
    );
}

#[test]
fn another_compressed_file_moved_to_the_path_is_a_new_segment_even_when_larger() {
    // Rotation: a new file (a new inode) renamed onto the path. Larger and decoding to
    // more than was read, it was read on from the old file's decoded length: the new
    // file's first lines lost and a line cut in two.
    let run = Watched::new();
    let path = run.log();
    let first = gzip(&sample("tp8-baseline", 20));
    std::fs::write(&path, &first).expect("write");
    let mut follower = run.follower();
    follower.poll();
    assert_eq!(follower.lines(), 20);
    let second = gzip(&sample("tp8-custom-ar", 40));
    assert!(second.len() > first.len());
    let moved = run.dir.path().join("incoming.tmp");
    std::fs::write(&moved, &second).expect("write");
    std::fs::rename(&moved, &path).expect("rename");
    follower.poll();
    let notes = follower.take_notes();
    assert_eq!(
        count(&notes, |n| matches!(
            n,
            FollowNote::Replaced { segment: 2, .. }
        )),
        1
    );
    let read = follower.given();
    let second_segment = (read.scans.iter())
        .find(|(p, _)| p.to_string_lossy().ends_with("server.log.gz#2"))
        .map(|(_, s)| s.counts.lines);
    assert_eq!(second_segment, Some(40));
    assert_eq!(follower.lines(), 60);
}
