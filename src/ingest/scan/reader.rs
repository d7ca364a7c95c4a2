//! Reading a source into blocks of whole lines, in buffers used again from batch to batch.

use std::io::{self, Read};

use super::ReadStop;

/// The first read of a source asks for this much; each further read doubles it up to
/// the block size, so a small file costs a small buffer, not a block.
const FIRST_READ: usize = 64 << 10;

/// The smallest block: the commands use `DEFAULT_BLOCK`; tests and the fuzz targets ask
/// for small blocks so that a small input spans several and the merge of their edges (a
/// traceback or a line across two blocks, a line split for its length) is in most runs.
pub(super) const MIN_BLOCK: usize = 256;

/// A read buffer and how many of its bytes hold input.
#[derive(Default)]
struct Chunk {
    buf: Vec<u8>,
    len: usize,
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&self.buf)
    }
}

/// A block of whole lines (or the piece of a line longer than a block).
pub(super) struct Block {
    chunk: Chunk,
    /// A range of a mapped file, whose bytes the block is in place of `chunk`'s.
    #[cfg(target_os = "linux")]
    mapped: Option<super::mapped::MappedRange>,
    /// Its last line is the cut end of the input (no newline).
    pub(crate) cut_tail: bool,
    /// It ends inside a line that the next block goes on with.
    pub(crate) inside_line: bool,
}

impl Block {
    pub(crate) fn bytes(&self) -> &[u8] {
        #[cfg(target_os = "linux")]
        if let Some(m) = &self.mapped {
            return m.bytes();
        }
        self.chunk.bytes()
    }

    /// A range of a mapped file as a block.
    #[cfg(target_os = "linux")]
    pub(super) fn mapped(
        range: super::mapped::MappedRange,
        cut_tail: bool,
        inside_line: bool,
    ) -> Block {
        Block {
            chunk: Chunk::default(),
            mapped: Some(range),
            cut_tail,
            inside_line,
        }
    }

    /// Where a mapped file's block ends in the file; `None` for a block read.
    #[cfg(target_os = "linux")]
    pub(super) fn mapped_end(&self) -> Option<usize> {
        self.mapped.as_ref().map(super::mapped::MappedRange::end)
    }

    /// The first `len` bytes of `buf` as a block.
    pub(super) fn of(buf: Vec<u8>, len: usize, cut_tail: bool, inside_line: bool) -> Block {
        Block {
            chunk: Chunk { buf, len },
            #[cfg(target_os = "linux")]
            mapped: None,
            cut_tail,
            inside_line,
        }
    }

    /// Its buffer, to be filled again.
    pub(super) fn into_buffer(self) -> Vec<u8> {
        self.chunk.buf
    }
}

/// Cuts a byte stream into blocks at line ends.
pub(super) struct BlockReader<R> {
    reader: R,
    block_size: usize,
    /// The bytes read past the last block's cut.
    pending: Chunk,
    /// Buffers of blocks already scanned: a fresh buffer per block was zero-filled by the
    /// allocator and the kernel every time. A buffer's bytes up to its `len()` are
    /// initialised once and then only overwritten; `Chunk::len` says how many hold input.
    pool: Vec<Vec<u8>>,
    eof: bool,
    total: u64,
    read_size: usize,
    stop: Option<ReadStop>,
    split_long_lines: u64,
}

impl<R: Read> BlockReader<R> {
    pub(crate) fn new(reader: R, block_size: usize) -> Self {
        let block_size = block_size.max(MIN_BLOCK);
        BlockReader {
            reader,
            block_size,
            pending: Chunk::default(),
            pool: Vec::new(),
            eof: false,
            total: 0,
            read_size: FIRST_READ.min(block_size),
            stop: None,
            split_long_lines: 0,
        }
    }

    /// Up to `n` blocks; none at the end of the input.
    pub(crate) fn next_batch(&mut self, n: usize) -> Vec<Block> {
        let mut blocks = Vec::with_capacity(n);
        while blocks.len() < n && !(self.eof && self.pending.len == 0) {
            self.fill();
            let block = self.cut();
            if block.chunk.len > 0 {
                blocks.push(block);
            } else {
                self.pool.push(block.chunk.buf);
            }
        }
        blocks
    }

    /// Gives the buffers of scanned blocks back for the next batch.
    pub(crate) fn recycle(&mut self, blocks: Vec<Block>) {
        self.pool.extend(blocks.into_iter().map(Block::into_buffer));
    }

    /// Whether the input is read to its end and every block of it handed out.
    pub(crate) fn at_end(&self) -> bool {
        self.eof && self.pending.len == 0
    }

    /// Bytes read so far.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Lines longer than a block, cut to keep memory bounded.
    pub(crate) fn split_long_lines(&self) -> u64 {
        self.split_long_lines
    }

    /// Why reading stopped before the end of the input, if it did.
    pub(crate) fn take_stop(&mut self) -> Option<ReadStop> {
        self.stop.take()
    }

    /// Reads until `pending` holds a block's worth or the input ends.
    fn fill(&mut self) {
        while !self.eof && self.pending.len < self.block_size {
            let old = self.pending.len;
            let want = self.read_size.min(self.block_size - old);
            self.read_size = (self.read_size * 2).min(self.block_size);
            if self.pending.buf.len() < old + want {
                self.pending.buf.resize(old + want, 0);
            }
            let buf = &mut self.pending.buf[old..old + want];
            let (n, err) = read_full(&mut self.reader, buf, None);
            self.pending.len = old + n;
            self.total += n as u64;
            if let Some(e) = err {
                self.stop = Some(ReadStop::after(self.total, &e));
                self.eof = true;
            } else if n < want {
                self.eof = true;
            }
        }
    }

    /// Takes the block of whole lines out of `pending`; what follows its cut (a part of a
    /// line) starts the next block, in a buffer from the pool.
    fn cut(&mut self) -> Block {
        let filled = self.pending.bytes();
        let (cut_at, inside_line) = cut_point(filled, self.eof);
        self.split_long_lines += u64::from(inside_line);
        let mut next = Chunk {
            buf: self.pool.pop().unwrap_or_default(),
            len: 0,
        };
        let rest = filled.get(cut_at..).unwrap_or(&[]);
        if next.buf.len() < rest.len() {
            next.buf.resize(rest.len(), 0);
        }
        next.buf[..rest.len()].copy_from_slice(rest);
        next.len = rest.len();
        let mut chunk = std::mem::replace(&mut self.pending, next);
        chunk.len = cut_at;
        let cut_tail =
            self.eof && self.pending.len == 0 && chunk.bytes().last().is_some_and(|&b| b != b'\n');
        Block {
            chunk,
            #[cfg(target_os = "linux")]
            mapped: None,
            cut_tail,
            inside_line,
        }
    }
}

/// Where a block of the bytes `filled` ends, and whether it ends inside a line: after
/// its last line end, or where the bytes end at the input's end (`at_end`); one line
/// longer than a block is split at its last `\r` if any (flattened progress output), else
/// where the bytes end.
pub(super) fn cut_point(filled: &[u8], at_end: bool) -> (usize, bool) {
    if at_end {
        return (filled.len(), false);
    }
    match memchr::memrchr(b'\n', filled) {
        Some(p) => (p + 1, false),
        None => (
            memchr::memrchr(b'\r', filled).map_or(filled.len(), |p| p + 1),
            true,
        ),
    }
}

/// Fills `buf` as far as the reader goes, or until a read leaves it holding `enough`
/// bytes (a file read at its listed size plus one byte: `session::read`): the bytes read
/// and the error that stopped it early, if one did (what was read before it counts).
pub(crate) fn read_full<R: Read>(
    r: &mut R,
    buf: &mut [u8],
    enough: Option<usize>,
) -> (usize, Option<io::Error>) {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) if Some(filled + n) == enough => return (filled + n, None),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return (filled, Some(e)),
        }
    }
    (filled, None)
}
