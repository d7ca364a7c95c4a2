//! A plain file's blocks read at their offsets, so that the scanning threads copy their
//! blocks from the page cache at the same time.
//!
//! Read from a stream, each block was copied under the reader's lock: the copy is two
//! fifths of a one-thread scan of a log in the page cache (`read`'s 0.13 system-s of the
//! shared GiB's 0.33 CPU-s), and two threads queued for the lock at about one block in
//! four (the other thread's copy). Here only the place of a block's end is found under
//! the lock, from the range's last bytes, and the block is read after it is let go.

use std::fs::File;
use std::io;

use super::parallel::{BlockSource, Filled};
use super::reader::{cut_point, Block, MIN_BLOCK};
use super::ReadStop;

/// Bytes at the end of a block's range looked at for its last line end. A line as long
/// (a long `server_args` line is a few KiB) makes the claim read the whole range.
const PROBE: usize = 16 << 10;

/// A regular file cut into blocks of whole lines where [`super::reader::BlockReader`]
/// cuts the same bytes: a block is the next `block_size` bytes up to the last line end
/// in them (a line longer than a block split at its last `\r`, else where the range
/// ends), or the rest of the file.
pub(super) struct FileBlocks<'f> {
    file: &'f File,
    block_size: usize,
    /// Where the next block starts.
    offset: u64,
    at_end: bool,
    probe: Vec<u8>,
    /// Buffers of merged blocks.
    pool: Vec<Vec<u8>>,
    split_long_lines: u64,
}

/// A block claimed: read already (the claim had to read its range to find its end), or
/// its place, read after the claim.
pub(super) enum FileClaim<'f> {
    Read(Filled),
    At {
        file: &'f File,
        buf: Vec<u8>,
        start: u64,
        len: usize,
    },
}

impl<'f> FileBlocks<'f> {
    /// The blocks of `file`, from its start.
    pub(super) fn new(file: &'f File, block_size: usize) -> Self {
        FileBlocks {
            file,
            block_size: block_size.max(MIN_BLOCK),
            offset: 0,
            at_end: false,
            probe: Vec::new(),
            pool: Vec::new(),
            split_long_lines: 0,
        }
    }

    /// The range's last bytes hold a line end: the block ends after the last of them.
    fn end_from_probe(&mut self, start: u64) -> Option<u64> {
        let probe_len = PROBE.min(self.block_size);
        let probe_at = start + (self.block_size - probe_len) as u64;
        self.probe.resize(probe_len, 0);
        let (n, error) = read_full_at(self.file, &mut self.probe, probe_at);
        if error.is_some() || n < probe_len {
            return None;
        }
        let last = memchr::memrchr(b'\n', &self.probe)?;
        Some(probe_at + last as u64 + 1)
    }

    /// Reads the whole range from `start` and cuts it where `BlockReader::cut` would.
    fn read_range(&mut self, start: u64) -> Option<Filled> {
        let mut buf = self.pool.pop().unwrap_or_default();
        buf.resize(self.block_size, 0);
        let (n, error) = read_full_at(self.file, &mut buf, start);
        let ends = error.is_some() || n < self.block_size;
        let (len, inside_line) = cut_point(&buf[..n], ends);
        self.at_end = ends;
        self.split_long_lines += u64::from(inside_line);
        self.offset = start + len as u64;
        if len == 0 && error.is_none() {
            self.pool.push(buf);
            return None;
        }
        let cut_tail = ends && len > 0 && buf[len - 1] != b'\n';
        Some(Filled {
            block: Block::of(buf, len, cut_tail, inside_line),
            read: self.offset,
            last: ends.then(|| error.map(|e| ReadStop::after(start + n as u64, &e))),
        })
    }
}

impl<'f> BlockSource for FileBlocks<'f> {
    type Claim = FileClaim<'f>;

    fn claim(&mut self) -> Option<FileClaim<'f>> {
        if self.at_end {
            return None;
        }
        let start = self.offset;
        match self.end_from_probe(start) {
            Some(end) => {
                self.offset = end;
                Some(FileClaim::At {
                    file: self.file,
                    buf: self.pool.pop().unwrap_or_default(),
                    start,
                    len: usize::try_from(end - start).unwrap_or(self.block_size),
                })
            }
            // The range's end is not in its last bytes: the file ends before them, a line
            // is longer than the probe, or a read failed.
            None => self.read_range(start).map(FileClaim::Read),
        }
    }

    fn fill(claim: FileClaim<'f>) -> Filled {
        let (file, mut buf, start, len) = match claim {
            FileClaim::Read(filled) => return filled,
            FileClaim::At {
                file,
                buf,
                start,
                len,
            } => (file, buf, start, len),
        };
        buf.resize(len, 0);
        let (n, error) = read_full_at(file, &mut buf[..len], start);
        let last = match error {
            Some(e) => Some(Some(ReadStop::after(start + n as u64, &e))),
            // The file became shorter since the claim saw the block whole; the read notes
            // say so from its size, as when a stream meets the end early.
            None if n < len => Some(None),
            None => None,
        };
        // A block read short ends the input: its last line is cut if it has no line end.
        let cut_tail = last.is_some() && n > 0 && buf[n - 1] != b'\n';
        Filled {
            block: Block::of(buf, n, cut_tail, false),
            read: start + n as u64,
            last,
        }
    }

    fn recycle(&mut self, back: Vec<Block>) {
        self.pool.extend(back.into_iter().map(Block::into_buffer));
    }

    fn split_long_lines(&self) -> u64 {
        self.split_long_lines
    }
}

/// Fills `buf` from the file's bytes at `offset` on, as far as the file goes: the bytes
/// read and the error that stopped it early, if one did.
fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> (usize, Option<io::Error>) {
    use std::os::unix::fs::FileExt;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return (filled, Some(e)),
        }
    }
    (filled, None)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::super::reader::BlockReader;
    use super::*;

    /// A block as a test compares it: its bytes, whether its last line is cut and whether
    /// it ends inside a line.
    fn shown(b: &Block) -> (Vec<u8>, bool, bool) {
        (b.bytes().to_vec(), b.cut_tail, b.inside_line)
    }

    /// Records, lines longer than the probe (20 KiB) but shorter than a block of 32 KiB
    /// or more, a line of 150 KiB with `\r` at 70 and 120 KiB, one of 100 KiB with none,
    /// and a last line with no line end.
    fn text() -> Vec<u8> {
        let mut t = Vec::new();
        for i in 0..400 {
            t.extend_from_slice(
                format!("[2026-12-06 10:11:12 TP{}] record {i}\n", i % 8).as_bytes(),
            );
            if i % 37 == 0 {
                t.extend(std::iter::repeat_n(b'x', 20 << 10));
                t.push(b'\n');
            }
            if i == 100 || i == 150 {
                let start = t.len();
                t.extend(std::iter::repeat_n(
                    b'y',
                    if i == 100 { 150 << 10 } else { 100 << 10 },
                ));
                if i == 100 {
                    t[start + (70 << 10)] = b'\r';
                    t[start + (120 << 10)] = b'\r';
                }
                t.push(b'\n');
            }
        }
        t.extend_from_slice(b"[2026-12-06 10:11:13 TP0] cut here");
        t
    }

    fn file_of(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().expect("a temporary file");
        f.write_all(bytes).expect("written");
        f
    }

    #[test]
    fn blocks_are_cut_where_the_stream_reader_cuts_them() {
        let text = text();
        let file = file_of(&text);
        for block_size in [PROBE / 2, PROBE + 1000, 4 * PROBE] {
            let mut stream = BlockReader::new(&text[..], block_size);
            let mut expected = Vec::new();
            while let Some(b) = stream.next_batch(1).pop() {
                expected.push(shown(&b));
            }
            let mut at = FileBlocks::new(&file, block_size);
            let (mut got, mut read_whole, mut read_after, mut read) = (Vec::new(), 0, 0, 0);
            while let Some(claim) = at.claim() {
                match &claim {
                    FileClaim::Read(_) => read_whole += 1,
                    FileClaim::At { .. } => read_after += 1,
                }
                let filled = FileBlocks::fill(claim);
                assert!(filled.last.is_none() || at.offset == text.len() as u64);
                read += filled.block.bytes().len() as u64;
                assert_eq!(filled.read, read, "bytes read up to the block's end");
                got.push(shown(&filled.block));
            }
            assert_eq!(got.len(), expected.len(), "blocks of {block_size}");
            for (k, (g, e)) in got.iter().zip(&expected).enumerate() {
                assert_eq!(
                    (g.0.len(), g.1, g.2),
                    (e.0.len(), e.1, e.2),
                    "block {k} of {block_size}"
                );
                assert!(g.0 == e.0, "block {k} of {block_size}: bytes differ");
            }
            assert_eq!(at.split_long_lines(), stream.split_long_lines());
            assert_eq!(at.offset, text.len() as u64);
            // The 150 KiB and 100 KiB lines are longer than every block here.
            assert!(at.split_long_lines() >= 2, "blocks of {block_size}");
            // Both ways of finding a block's end were taken: from the range's last bytes,
            // and (a 20 KiB line over them, the file's end) by reading the whole range.
            assert!(
                read_whole > 1 && read_after > 1,
                "{read_whole} / {read_after}"
            );
            assert_eq!(got.last().map(|b| b.1), Some(true), "the last line is cut");
        }
    }

    #[test]
    fn a_file_cut_after_its_block_was_claimed_ends_the_read_there() {
        let text: Vec<u8> = (0..20_000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let file = file_of(&text);
        let mut at = FileBlocks::new(&file, 4 * PROBE);
        let claim = at.claim().expect("a block");
        assert!(matches!(claim, FileClaim::At { .. }));
        file.set_len(1000).expect("truncated");
        let filled = FileBlocks::fill(claim);
        assert_eq!(filled.block.bytes(), &text[..1000]);
        assert_eq!(filled.read, 1000);
        // `line 0\n` … `line 9\n` are 70 bytes, `line 10\n` … `line 99\n` 720, and 23
        // lines of 9 bytes (`line 100\n` … `line 122\n`) end at byte 997: the block ends
        // in `line 123`.
        assert_eq!(&text[990..1000], b"ne 122\nlin");
        assert!(filled.block.cut_tail);
        // The input ends there, with no error: the read notes tell a file that shrank.
        assert!(matches!(filled.last, Some(None)));
    }
}
