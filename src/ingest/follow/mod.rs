//! Following a run's logs as they are written (`watch`), like `tail -F`: each log is read
//! from where the last read stopped, its whole lines fed to the same scan as `summary`'s
//! ([`LineFeed`]), the unfinished last line kept until its newline comes. A file renamed
//! away (rotation), cut shorter (copy-truncate) or deleted and made again goes on in a new
//! *segment*: a source of its own (`server.log#2`), its lines numbered from 1 as in the
//! file, so evidence `file:line` stays true; the run's de-duplication across sources
//! counts a line written to both incarnations once. A file that cannot be read, or holds
//! binary bytes, gets a note and the others are still followed.
//!
//! The follower only reads; when to read (a file event or a poll tick) is the caller's.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::grammar::GrammarSet;
use crate::ingest::scan::{EventBudget, LineFeed, SourceScan, DEFAULT_BLOCK};
use crate::ingest::source::{self, Compression, NodeFiles, SourceFile, SourceKind, StopReason};

mod compressed;

pub(crate) use compressed::COMPRESSED_FOLLOW_MAX;
use compressed::{compressed_state, poll_compressed, CompressedState};

/// Bytes read from one file in one go, at most: a file that grew by gigabytes is read in
/// several polls, so one busy file does not hold the others back.
const MAX_READ_PER_POLL: u64 = 64 << 20;

/// What happened to a followed file, for the board and the run's notes (worded in
/// `render::text::watch`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[expect(
    missing_docs,
    reason = "each variant's text names its fields; every one has `path`, the file as given"
)]
pub enum FollowNote {
    /// A log that appeared after the start.
    NewFile { path: String },
    /// The file at the path is another one (renamed away and a new one made, or deleted and
    /// made again): read on as segment `segment`.
    Replaced { path: String, segment: usize },
    /// The file became shorter than what was read (copy-truncate): read again from its
    /// start as segment `segment`.
    Truncated {
        path: String,
        read: u64,
        size: u64,
        segment: usize,
    },
    /// The path is gone; what was read is kept and the path is watched for a new file.
    Deleted { path: String },
    /// The file cannot be opened or read; tried again at every poll.
    Unreadable { path: String, error: String },
    /// Lines holding NUL bytes (binary content) were skipped, from this byte on.
    Binary {
        path: String,
        offset: u64,
        lines: u64,
    },
    /// A compressed log: decoded again from its start each time it grows.
    Compressed { path: String },
    /// A compressed log past [`COMPRESSED_FOLLOW_MAX`]: what was decoded is kept, its
    /// growth is not read.
    CompressedTooLarge { path: String, size: u64 },
    /// At the end of the watch, a compressed log whose stream stops short (still being
    /// written, or cut): what decoded before the error was read, the rest was not.
    CompressedCut {
        path: String,
        decoded: u64,
        error: StopReason,
    },
    /// The standard input ended.
    InputEnded,
}

/// What the follower has read: each node's files as the loader lists inputs (every
/// segment a log of its own), and each log's scan by path.
#[derive(Debug, Default)]
pub struct ReadSoFar {
    /// Each node's files, as the loader groups inputs.
    pub groups: Vec<NodeFiles>,
    /// Each log's scan so far, by path.
    pub scans: HashMap<PathBuf, SourceScan>,
}

/// One incarnation of a followed file: its own source of the run.
struct Segment<'a> {
    file: SourceFile,
    feed: LineFeed<'a>,
}

/// A followed log, under its path.
struct Followed<'a> {
    gs: &'a GrammarSet,
    budget: &'a EventBudget,
    path: PathBuf,
    /// The path as notes show it.
    shown: std::rc::Rc<str>,
    /// The node group it was listed in (an index into `Follower::groups`).
    group: usize,
    segments: Vec<Segment<'a>>,
    handle: Option<File>,
    /// Device and inode of the file open under the path.
    identity: Option<(u64, u64)>,
    offset: u64,
    /// The last line read, until its newline is written.
    partial: Vec<u8>,
    /// The last note on its state, so that a state is said once.
    trouble: Option<String>,
    gone: bool,
    /// Binary lines skipped in the current segment: the first one's offset, how many.
    binary: Option<(u64, u64)>,
    /// `Some` for a gzip or zstd log (offsets are then in decoded bytes).
    compressed: Option<CompressedState>,
    /// Whether it is compressed is not known yet: found at its first look, from its first
    /// bytes, or later when they do not yet say (created, not yet written); nothing is
    /// read until they do.
    undecided: bool,
}

/// The follower: every log of the run and its segments.
pub struct Follower<'a> {
    gs: &'a GrammarSet,
    budget: &'a EventBudget,
    paths: Vec<PathBuf>,
    groups: Vec<NodeFiles>,
    files: Vec<Followed<'a>>,
    /// Streams fed through channels instead of files: stdin, or a replay's files.
    streams: Vec<Stream<'a>>,
    notes: Vec<FollowNote>,
}

/// Bytes that come through a channel (the standard input, or a recorded file replayed),
/// under the path the run names them by; the sender dropped is the stream's end.
struct Stream<'a> {
    path: PathBuf,
    rx: mpsc::Receiver<io::Result<Vec<u8>>>,
    feed: LineFeed<'a>,
    partial: Vec<u8>,
    ended: bool,
}

impl<'a> Follower<'a> {
    /// Follows `paths` (as `summary` reads them; `-` alone for the standard input).
    pub fn new(
        gs: &'a GrammarSet,
        budget: &'a EventBudget,
        paths: &[PathBuf],
    ) -> Result<Self, source::SourceError> {
        let mut f = Follower {
            gs,
            budget,
            paths: paths.to_vec(),
            groups: Vec::new(),
            files: Vec::new(),
            streams: Vec::new(),
            notes: Vec::new(),
        };
        if paths.len() == 1 && paths[0].as_os_str() == "-" {
            f.streams.push(Stream {
                path: paths[0].clone(),
                rx: spawn_stdin_reader(),
                feed: LineFeed::new(gs, 0, budget),
                partial: Vec::new(),
                ended: false,
            });
            f.groups = source::discover_nodes(paths)?;
        } else {
            f.discover(true)?;
        }
        Ok(f)
    }

    /// Replays a recorded run (`watch --replay`): its logs' lines are sent at the pace of
    /// their stamps × `speed` (`ingest::replay`) and read as they come, under the files'
    /// own names, through the same scan and loader as a live run.
    pub fn replay(
        gs: &'a GrammarSet,
        budget: &'a EventBudget,
        paths: &[PathBuf],
        speed: f64,
    ) -> Result<Self, crate::ingest::replay::ReplayError> {
        let groups = source::discover_nodes(paths)?;
        let logs: Vec<SourceFile> = groups
            .iter()
            .flat_map(|g| g.files.iter())
            .filter(|f| f.kind == SourceKind::Log)
            .cloned()
            .collect();
        let receivers = crate::ingest::replay::start(gs, &logs, speed)?;
        let streams = logs
            .iter()
            .zip(receivers)
            .map(|(sf, rx)| Stream {
                path: sf.path.clone(),
                rx,
                feed: LineFeed::new(gs, 0, budget),
                partial: Vec::new(),
                ended: false,
            })
            .collect();
        Ok(Follower {
            gs,
            budget,
            paths: paths.to_vec(),
            groups,
            files: Vec::new(),
            streams,
            notes: Vec::new(),
        })
    }

    /// Lists the run's files again: logs that appeared since are followed from their
    /// start. A file once followed stays in the run even when its path is gone.
    pub fn discover(&mut self, first: bool) -> Result<(), source::SourceError> {
        if !self.streams.is_empty() {
            return Ok(());
        }
        let found = match source::discover_nodes(&self.paths) {
            Ok(g) => g,
            // A run directory with no log yet (the server has not started, or between a
            // delete and the new file): looked at again later.
            Err(source::SourceError::EmptyDir { .. }) => return Ok(()),
            Err(_) if !first => return Ok(()),
            Err(e) => return Err(e),
        };
        for g in found {
            let gi = match self.groups.iter().position(|x| x.node == g.node) {
                Some(i) => i,
                None => {
                    self.groups.push(NodeFiles {
                        files: Vec::new(),
                        ..g.clone()
                    });
                    self.groups.len() - 1
                }
            };
            for sf in g.files {
                let known = self.groups[gi].files.iter().any(|f| f.path == sf.path)
                    || self.files.iter().any(|f| f.path == sf.path);
                if known {
                    continue;
                }
                if sf.kind == SourceKind::Log {
                    self.follow(gi, sf, first);
                } else {
                    self.groups[gi].files.push(sf);
                }
            }
        }
        Ok(())
    }

    fn follow(&mut self, group: usize, sf: SourceFile, first: bool) {
        let shown = sf.display();
        if !first {
            self.notes.push(FollowNote::NewFile {
                path: shown.clone(),
            });
        }
        let file = SourceFile { size: None, ..sf };
        self.files.push(Followed {
            gs: self.gs,
            budget: self.budget,
            path: file.path.clone(),
            shown: shown.into(),
            group,
            segments: vec![Segment {
                file,
                feed: LineFeed::new(self.gs, 0, self.budget),
            }],
            handle: None,
            identity: None,
            offset: 0,
            partial: Vec::new(),
            trouble: None,
            gone: false,
            binary: None,
            compressed: None,
            undecided: true,
        });
    }

    /// Reads what was written since the last call; returns the bytes read (0: nothing
    /// new). Notes on what happened wait in [`Follower::take_notes`].
    pub fn poll(&mut self) -> u64 {
        let mut read = 0;
        for s in &mut self.streams {
            read += poll_stream(s, &mut self.notes);
        }
        for f in &mut self.files {
            let (n, notes) = poll_file(f);
            read += n;
            self.notes.extend(notes);
        }
        read
    }

    /// Said when the watch ends: each compressed log whose stream stops short.
    pub fn closing_notes(&self) -> Vec<FollowNote> {
        (self.files.iter())
            .filter_map(|f| {
                let state = f.compressed.as_ref()?;
                Some(FollowNote::CompressedCut {
                    path: f.shown.to_string(),
                    decoded: state.decoded,
                    error: state.cut.clone()?,
                })
            })
            .collect()
    }

    /// The standard input, or every replayed file, ended (never true for files followed:
    /// they may always grow).
    pub fn input_ended(&self) -> bool {
        !self.streams.is_empty() && self.streams.iter().all(|s| s.ended)
    }

    /// The notes gathered since the last call.
    pub fn take_notes(&mut self) -> Vec<FollowNote> {
        std::mem::take(&mut self.notes)
    }

    /// The paths to watch for file events: the directories given (new rank files) and the
    /// followed files' directories.
    pub fn watch_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self
            .paths
            .iter()
            .filter(|p| p.as_os_str() != "-")
            .map(|p| {
                if p.is_dir() {
                    p.clone()
                } else {
                    p.parent()
                        .filter(|d| !d.as_os_str().is_empty())
                        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
                }
            })
            .collect();
        for f in &self.files {
            if let Some(d) = f.path.parent().filter(|d| !d.as_os_str().is_empty()) {
                dirs.push(d.to_path_buf());
            }
        }
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// What has been read so far, for the loader: each node's files (every segment a log
    /// of its own) and each segment's scan.
    pub fn given(&self) -> ReadSoFar {
        let mut groups: Vec<NodeFiles> = self.groups.clone();
        let mut scans = HashMap::new();
        for s in &self.streams {
            scans.insert(s.path.clone(), s.feed.scan());
        }
        for f in &self.files {
            for seg in &f.segments {
                if let Some(g) = groups.get_mut(f.group) {
                    g.files.push(seg.file.clone());
                }
                scans.insert(seg.file.path.clone(), seg.feed.scan());
            }
        }
        ReadSoFar { groups, scans }
    }

    /// Lines read so far, over every file.
    pub fn lines(&self) -> u64 {
        let files: u64 = self
            .files
            .iter()
            .flat_map(|f| f.segments.iter().map(|s| s.feed.lines()))
            .sum();
        files + self.streams.iter().map(|s| s.feed.lines()).sum::<u64>()
    }
}

fn spawn_stdin_reader() -> mpsc::Receiver<io::Result<Vec<u8>>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stdin = io::stdin().lock();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if tx.send(Ok(buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    break;
                }
            }
        }
        // Dropping the sender tells the follower the input ended.
    });
    rx
}

fn poll_stream(s: &mut Stream, notes: &mut Vec<FollowNote>) -> u64 {
    let mut read = 0u64;
    loop {
        match s.rx.try_recv() {
            Ok(Ok(bytes)) => {
                read += bytes.len() as u64;
                s.partial.extend_from_slice(&bytes);
                feed_whole_lines(&mut s.feed, &mut s.partial);
            }
            Ok(Err(e)) => {
                notes.push(FollowNote::Unreadable {
                    path: crate::base::text::shown_path(&s.path),
                    error: e.to_string(),
                });
            }
            Err(mpsc::TryRecvError::Empty) => break,
            Err(mpsc::TryRecvError::Disconnected) => {
                if !s.ended {
                    s.ended = true;
                    flush_partial(&mut s.feed, &mut s.partial);
                    if s.path.as_os_str() == "-" {
                        notes.push(FollowNote::InputEnded);
                    }
                }
                break;
            }
        }
    }
    read
}

/// Feeds the whole lines at the start of `buf` and keeps the rest; a line longer than a
/// block is fed in pieces, as the scan splits it.
fn feed_whole_lines(feed: &mut LineFeed, buf: &mut Vec<u8>) {
    match memchr::memrchr(b'\n', buf) {
        Some(p) => {
            for piece in buf[..=p].chunks(DEFAULT_BLOCK) {
                let inside = piece.last() != Some(&b'\n');
                feed.push(piece, inside);
            }
            buf.drain(..=p);
        }
        None if buf.len() >= DEFAULT_BLOCK => {
            feed.push(buf, true);
            buf.clear();
        }
        None => {}
    }
}

/// A last line that will get no newline (its file was replaced, or the input ended) is
/// read as the file's last line.
fn flush_partial(feed: &mut LineFeed, partial: &mut Vec<u8>) {
    if !partial.is_empty() {
        partial.push(b'\n');
        feed_whole_lines(feed, partial);
        partial.clear();
    }
}

/// Empties the lines that hold a NUL byte (binary content): returns the text left and how
/// many lines were emptied, with the first one's offset in `bytes`.
fn drop_binary_lines(bytes: &[u8]) -> (Vec<u8>, u64, Option<usize>) {
    if memchr::memchr(0, bytes).is_none() {
        return (bytes.to_vec(), 0, None);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut dropped = 0;
    let mut first = None;
    let mut at = 0;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if let Some(p) = memchr::memchr(0, line) {
            // An empty line in its place keeps the lines after it numbered as in the file.
            dropped += 1;
            first.get_or_insert(at + p);
            if line.last() == Some(&b'\n') {
                out.push(b'\n');
            }
        } else {
            out.extend_from_slice(line);
        }
        at += line.len();
    }
    (out, dropped, first)
}

fn identity_of(m: &std::fs::Metadata) -> (u64, u64) {
    (m.dev(), m.ino())
}

/// One poll of one file: its state checked against the path, and what was written since.
fn poll_file(f: &mut Followed) -> (u64, Vec<FollowNote>) {
    let mut notes = Vec::new();
    // Named once, when it was first followed: an idle poll of a thousand files formats no
    // path.
    let shown = std::rc::Rc::clone(&f.shown);
    if f.undecided {
        let Some(c) = f
            .segments
            .first()
            .and_then(|s| s.file.compression_if_known())
        else {
            return (0, notes);
        };
        f.undecided = false;
        if c != Compression::None {
            f.compressed = Some(compressed_state(&shown, &mut notes));
        }
    }
    if f.compressed.is_some() {
        let read = poll_compressed(f, &shown, &mut notes);
        return (read, notes);
    }
    let at_path = std::fs::metadata(&f.path);
    let mut read = 0;
    // Whatever was written to the open file before its path changed is read first.
    if f.handle.is_some() {
        read += read_open(f, &shown, &mut notes);
    }
    let replaced = match (&at_path, f.identity) {
        (Ok(m), Some(id)) => identity_of(m) != id,
        _ => false,
    };
    if replaced {
        f.flush();
        f.handle = None;
    }
    match &at_path {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if !f.gone {
                f.gone = true;
                notes.push(FollowNote::Deleted {
                    path: shown.to_string(),
                });
            }
            return (read, notes);
        }
        Err(e) => {
            say_trouble(f, &shown, e.to_string(), &mut notes);
            return (read, notes);
        }
        Ok(_) => {}
    }
    if f.handle.is_none() {
        match File::open(&f.path).and_then(|h| Ok((h.metadata()?, h))) {
            Ok((m, h)) => {
                // A file read before (or deleted, or replaced): this one is new text.
                if f.identity.is_some() || f.gone {
                    f.replaced(&shown, &mut notes);
                }
                f.gone = false;
                f.trouble = None;
                f.identity = Some(identity_of(&m));
                f.handle = Some(h);
                f.offset = 0;
                read += read_open(f, &shown, &mut notes);
            }
            Err(e) => say_trouble(f, &shown, e.to_string(), &mut notes),
        }
    }
    (read, notes)
}

fn say_trouble(f: &mut Followed, shown: &str, error: String, notes: &mut Vec<FollowNote>) {
    if f.trouble.as_deref() != Some(error.as_str()) {
        f.trouble = Some(error.clone());
        notes.push(FollowNote::Unreadable {
            path: shown.to_string(),
            error,
        });
    }
}

impl Followed<'_> {
    /// Starts the next incarnation of the file: a source named `path#N`, lines from 1.
    fn new_segment(&mut self) {
        let n = self.segments.len() + 1;
        let Some(first) = self.segments.first() else {
            return;
        };
        let mut name = self.path.clone().into_os_string();
        name.push(format!("#{n}"));
        let file = SourceFile {
            path: PathBuf::from(name),
            digest: Default::default(),
            ..first.file.clone()
        };
        // The loader numbers the sources; the index given here is not kept.
        self.segments.push(Segment {
            file,
            feed: LineFeed::new(self.gs, 0, self.budget),
        });
        self.partial.clear();
        self.binary = None;
        self.offset = 0;
    }

    /// Another file under the path (rotated, re-created, rewritten): the current
    /// segment's last line is read as it is, and a new segment begins, with a note.
    fn replaced(&mut self, shown: &str, notes: &mut Vec<FollowNote>) {
        self.flush();
        self.new_segment();
        notes.push(FollowNote::Replaced {
            path: shown.to_string(),
            segment: self.segments.len(),
        });
    }

    /// The current segment's last line will get no newline: read it as it is.
    fn flush(&mut self) {
        if let Some(seg) = self.segments.last_mut() {
            flush_partial(&mut seg.feed, &mut self.partial);
        }
    }
}

/// Reads the open file from the offset on; a file now shorter than the offset was
/// truncated: a new segment read from its start.
fn read_open(f: &mut Followed, shown: &str, notes: &mut Vec<FollowNote>) -> u64 {
    let size = match f.handle.as_ref().map(File::metadata) {
        Some(Ok(m)) => m.len(),
        Some(Err(e)) => {
            say_trouble(f, shown, e.to_string(), notes);
            return 0;
        }
        None => return 0,
    };
    if size < f.offset {
        let read = f.offset;
        // The copy holds the lines read so far; what comes now is new text.
        f.flush();
        f.new_segment();
        notes.push(FollowNote::Truncated {
            path: shown.to_string(),
            read,
            size,
            segment: f.segments.len(),
        });
    }
    if size == f.offset {
        return 0;
    }
    let want = (size - f.offset).min(MAX_READ_PER_POLL);
    let mut bytes = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
    let offset = f.offset;
    let result = match f.handle.as_mut() {
        Some(h) => h
            .seek(SeekFrom::Start(offset))
            .and_then(|_| h.take(want).read_to_end(&mut bytes)),
        None => return 0,
    };
    if let Err(e) = result {
        say_trouble(f, shown, e.to_string(), notes);
        return 0;
    }
    take_bytes(f, bytes, offset, shown, notes)
}

/// Feeds `bytes`, read at `offset` of the current segment, to its scan: whole lines now
/// (lines holding a NUL byte skipped, with a note), the last unfinished one held.
fn take_bytes(
    f: &mut Followed,
    bytes: Vec<u8>,
    offset: u64,
    shown: &str,
    notes: &mut Vec<FollowNote>,
) -> u64 {
    f.offset += bytes.len() as u64;
    // Where the held partial line began in the file.
    let held_from = offset - f.partial.len() as u64;
    f.partial.extend_from_slice(&bytes);
    let Some(p) = memchr::memrchr(b'\n', &f.partial) else {
        if let Some(seg) = f.segments.last_mut() {
            feed_whole_lines(&mut seg.feed, &mut f.partial);
        }
        return bytes.len() as u64;
    };
    let whole: Vec<u8> = f.partial.drain(..=p).collect();
    let (text, dropped, first_nul) = drop_binary_lines(&whole);
    if dropped > 0 {
        let at = held_from + first_nul.unwrap_or(0) as u64;
        match &mut f.binary {
            Some((_, n)) => *n += dropped,
            None => {
                f.binary = Some((at, dropped));
                notes.push(FollowNote::Binary {
                    path: shown.to_string(),
                    offset: at,
                    lines: dropped,
                });
            }
        }
    }
    if let Some(seg) = f.segments.last_mut() {
        let mut text = text;
        feed_whole_lines(&mut seg.feed, &mut text);
    }
    bytes.len() as u64
}

#[cfg(test)]
mod tests;
