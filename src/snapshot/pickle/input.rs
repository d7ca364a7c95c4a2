//! Where the pickle's bytes come from: a slice held in memory, or a reader read in chunks.

use std::io::Read;

use super::*;

/// Where the reader takes bytes from: a slice, or a file read in chunks so that a large
/// snapshot is never resident twice (once as bytes, once decoded).
pub(crate) trait Input {
    /// The next `n` bytes, or `None` when fewer than `n` are left.
    fn take(&mut self, n: usize) -> Result<Option<&[u8]>, std::io::Error>;
    /// Bytes consumed so far.
    fn offset(&self) -> u64;
    /// Bytes left, when known; used to reject length prefixes before allocating.
    fn remaining(&self) -> u64;
    /// The next `n` bytes if they are already in memory: the hot path, with no I/O and
    /// no error plumbing. `None` means "ask `take`", not "end of input".
    fn take_buffered(&mut self, n: usize) -> Option<&[u8]>;
    /// How many bytes `take_buffered` can hand out right now.
    fn buffered_len(&self) -> usize;
    /// The bytes already in memory, for the decoder's fast path to peek at.
    fn buffered(&self) -> &[u8];
    /// Consumes `n <= buffered().len()` bytes that were peeked at.
    fn advance(&mut self, n: usize);
}

/// The trace entries the reader decoded itself (`parse_direct`), what they refer to by
/// index, and the `device_free` values of those that have one (by index in `entries`).
#[derive(Default)]
pub(crate) struct Direct {
    pub(crate) entries: Vec<TraceEntry>,
    pub(crate) tables: TraceTables,
    pub(crate) device_free: Vec<(u32, u64)>,
}

/// Reads from memory.
pub(crate) struct SliceInput<'a> {
    pub(super) data: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> SliceInput<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        SliceInput { data, pos: 0 }
    }
}

impl Input for SliceInput<'_> {
    #[inline]
    fn take(&mut self, n: usize) -> Result<Option<&[u8]>, std::io::Error> {
        let end = match self.pos.checked_add(n) {
            Some(e) if e <= self.data.len() => e,
            _ => return Ok(None),
        };
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(Some(s))
    }
    fn offset(&self) -> u64 {
        self.pos as u64
    }
    fn remaining(&self) -> u64 {
        (self.data.len() - self.pos) as u64
    }
    #[inline(always)]
    fn buffered_len(&self) -> usize {
        self.data.len() - self.pos
    }
    #[inline(always)]
    fn take_buffered(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    #[inline(always)]
    fn buffered(&self) -> &[u8] {
        self.data.get(self.pos..).unwrap_or(&[])
    }
    #[inline(always)]
    fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.data.len());
    }
}

/// Reads from any `Read` of known total length, through a buffer that only grows to hold
/// the largest single item (bounded by `total`, which is checked first).
pub(crate) struct ReaderInput<R: Read> {
    pub(super) inner: R,
    pub(super) buf: Vec<u8>,
    pub(super) pos: usize,
    pub(super) end: usize,
    pub(super) consumed: u64,
    pub(super) total: u64,
}

pub(super) const CHUNK: usize = 256 * 1024;

impl<T: Read> ReaderInput<T> {
    pub(crate) fn new(inner: T, total: u64) -> Self {
        ReaderInput {
            inner,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            consumed: 0,
            total,
        }
    }

    #[cold]
    pub(super) fn refill(&mut self, n: usize) -> Result<bool, std::io::Error> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        while self.end < n {
            let got = self.inner.read(&mut self.buf[self.end..])?;
            if got == 0 {
                return Ok(false);
            }
            self.end += got;
        }
        Ok(true)
    }
}

impl<T: Read> Input for ReaderInput<T> {
    #[inline]
    fn take(&mut self, n: usize) -> Result<Option<&[u8]>, std::io::Error> {
        if self.end - self.pos < n && (n as u64 > self.remaining() || !self.refill(n)?) {
            return Ok(None);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        self.consumed += n as u64;
        Ok(Some(s))
    }
    fn offset(&self) -> u64 {
        self.consumed
    }
    fn remaining(&self) -> u64 {
        self.total.saturating_sub(self.consumed)
    }
    #[inline(always)]
    fn buffered_len(&self) -> usize {
        self.end - self.pos
    }
    #[inline(always)]
    fn take_buffered(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end.min(self.end))?;
        if s.len() != n {
            return None;
        }
        self.pos = end;
        self.consumed += n as u64;
        Some(s)
    }
    #[inline(always)]
    fn buffered(&self) -> &[u8] {
        self.buf.get(self.pos..self.end).unwrap_or(&[])
    }
    #[inline(always)]
    fn advance(&mut self, n: usize) {
        let n = n.min(self.end - self.pos);
        self.pos += n;
        self.consumed += n as u64;
    }
}
