//! A log's bytes: the file (or stdin) opened, its compression read from its first bytes,
//! decompressed within the limits of `source::limits`, and the raw bytes counted and
//! hashed as they pass (the run's content hash needs no second read).

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::source::{compression_of, limits, Compression, SourceError, SourceFile};

/// A log's bytes as text: decompressed, and with the count of bytes taken from the
/// file itself, for offsets in messages and the expansion ratio.
pub(crate) struct Stream {
    pub(crate) reader: Box<dyn Read + Send>,
    pub(crate) compression: Compression,
    raw_read: Arc<AtomicU64>,
    raw_digest: Arc<OnceLock<u64>>,
}

impl Stream {
    /// A handle that reads the same count after the reader has been moved.
    pub(crate) fn raw_counter(&self) -> Arc<AtomicU64> {
        self.raw_read.clone()
    }

    /// A handle that holds the XXH3-64 of the file's bytes once the reader has read them
    /// to their end (empty when reading stopped before it).
    pub(crate) fn raw_digest(&self) -> Arc<OnceLock<u64>> {
        self.raw_digest.clone()
    }
}

/// The raw file's reader: counts and hashes the bytes taken from the file.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
    hasher: Option<Box<twox_hash::XxHash3_64>>,
    digest: Arc<OnceLock<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        if let Some(h) = self.hasher.as_mut() {
            match buf.get(..n) {
                Some(got) if n > 0 => std::hash::Hasher::write(&mut **h, got),
                _ => {
                    // The end of the file: every byte went through the hasher.
                    let _ = self.digest.set(std::hash::Hasher::finish(&**h));
                    self.hasher = None;
                }
            }
        }
        Ok(n)
    }
}

/// Why reading a file stopped before its end: what a read note says (`model::notes`),
/// worded by `render::text::notes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// An error of the file system or the decoder, in its own words.
    Error(String),
    /// A decompression limit of [`limits`] was reached.
    Decompression(DecompressionStop),
}

impl StopReason {
    /// The reason an error of a reader gives: a [`DecompressionStop`] travels inside the
    /// `io::Error` the reader returns, any other error is its own text.
    pub(crate) fn of(e: &io::Error) -> StopReason {
        match e
            .get_ref()
            .and_then(|x| x.downcast_ref::<DecompressionStop>())
        {
            Some(stop) => StopReason::Decompression(*stop),
            None => StopReason::Error(e.to_string()),
        }
    }
    /// Back into the `io::Error` it was read from, for a caller that takes one.
    pub(crate) fn into_io_error(self) -> io::Error {
        match self {
            StopReason::Error(text) => io::Error::other(text),
            StopReason::Decompression(stop) => io::Error::other(stop),
        }
    }
}

/// Which decompression limit stopped a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecompressionStop {
    /// The most decompressed bytes read from one file ([`limits::MAX_DECOMPRESSED`]).
    SizeLimit {
        /// The limit, in bytes.
        limit: u64,
    },
    /// Past [`limits::BOMB_CHECK_AFTER`], `expanded` bytes out of `compressed`: more than
    /// `ratio`:1.
    Ratio {
        /// Decompressed bytes handed out.
        expanded: u64,
        /// Compressed bytes taken to make them.
        compressed: u64,
        /// The ratio it passed.
        ratio: u64,
    },
}

// An `io::Error` can only carry an error, which must display: what a reader that sees
// only the `io::Error` shows (`watch --replay`'s read error). The read notes word the
// stop themselves (`render::text::notes`), from the fact.
impl std::fmt::Display for DecompressionStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "decompression stopped at a limit: {self:?}")
    }
}

impl std::error::Error for DecompressionStop {}

/// Stops a decompressor at the limits above, with an error carrying which
/// ([`DecompressionStop`]; the scan keeps what came before it).
struct Limited<R> {
    inner: R,
    out: u64,
    raw: Arc<AtomicU64>,
    max_out: u64,
    bomb_after: u64,
    bomb_ratio: u64,
}

impl<R> Limited<R> {
    fn new(inner: R, raw: Arc<AtomicU64>) -> Self {
        Limited {
            inner,
            out: 0,
            raw,
            max_out: limits::MAX_DECOMPRESSED,
            bomb_after: limits::BOMB_CHECK_AFTER,
            bomb_ratio: limits::BOMB_RATIO,
        }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.out >= self.max_out {
            return Err(io::Error::other(DecompressionStop::SizeLimit {
                limit: self.max_out,
            }));
        }
        let raw = self.raw.load(Ordering::Relaxed).max(1);
        if self.out >= self.bomb_after && self.out / raw > self.bomb_ratio {
            return Err(io::Error::other(DecompressionStop::Ratio {
                expanded: self.out,
                compressed: raw,
                ratio: self.bomb_ratio,
            }));
        }
        let room = (self.max_out - self.out).min(buf.len() as u64) as usize;
        let n = self.inner.read(&mut buf[..room])?;
        self.out += n as u64;
        Ok(n)
    }
}

/// The content hash of a file's bytes as stored (XXH3-64, seed 0; docs/json.md): what the
/// scan hashes as it reads, a small file's bytes whole and the identity's second reading
/// (`export::identity`) must agree, so they all start here.
pub(crate) fn content_hasher() -> twox_hash::XxHash3_64 {
    twox_hash::XxHash3_64::with_seed(0)
}

/// [`content_hasher`]'s digest of `bytes` in one call.
pub(crate) fn content_digest(bytes: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(bytes)
}

/// Opens a log source as a byte stream, decompressing as needed.
pub(crate) fn open(sf: &SourceFile) -> Result<Box<dyn Read + Send>, SourceError> {
    open_stream(sf, false).map(|s| s.reader)
}

/// Opens a log source: the compression is read from the stream's first bytes (so gzip
/// and zstd on stdin or through a FIFO are decompressed too), and decompression stops
/// at the limits in [`limits`]. With `hash`, a regular file's bytes are hashed as they
/// are read (`Stream::raw_digest`, the run's identity).
pub(crate) fn open_stream(sf: &SourceFile, hash: bool) -> Result<Stream, SourceError> {
    let unreadable = |source| SourceError::Unreadable {
        path: sf.display(),
        source,
    };
    let raw: Box<dyn Read + Send> = if sf.is_stdin() {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(&sf.path).map_err(unreadable)?)
    };
    let raw_read = Arc::new(AtomicU64::new(0));
    let raw_digest = Arc::new(OnceLock::new());
    let mut counted = Counting {
        inner: raw,
        count: raw_read.clone(),
        // Only a regular file (listed with a size) has a content hash: stdin, a FIFO or
        // a device cannot be read again to check it, and is given none (docs/json.md).
        hasher: (hash && sf.size.is_some() && !sf.is_stdin()).then(|| Box::new(content_hasher())),
        digest: raw_digest.clone(),
    };
    let mut head = [0u8; 4];
    let (got, error) = crate::ingest::scan::read_full(&mut counted, &mut head, None);
    if let Some(e) = error {
        return Err(unreadable(e));
    }
    let compression = compression_of(&head[..got]);
    let whole = BufReader::with_capacity(1 << 16, Cursor::new(head[..got].to_vec()).chain(counted));
    let limited = |inner: Box<dyn Read + Send>| -> Box<dyn Read + Send> {
        Box::new(Limited::new(inner, raw_read.clone()))
    };
    let reader: Box<dyn Read + Send> = match compression {
        Compression::None => Box::new(whole),
        Compression::Gzip => limited(Box::new(flate2::read::MultiGzDecoder::new(whole))),
        Compression::Zstd => {
            let mut d = zstd::stream::read::Decoder::with_buffer(whole).map_err(unreadable)?;
            // A frame names the window it needs, up to 2 GiB; the decoder allocates it.
            // zstd's own CLI default (windowLog 27, 128 MiB) is part of the memory bound.
            d.window_log_max(limits::ZSTD_WINDOW_LOG_MAX)
                .map_err(unreadable)?;
            limited(Box::new(d))
        }
    };
    Ok(Stream {
        reader,
        compression,
        raw_read,
        raw_digest,
    })
}

/// A NUL byte in the first 8 KiB marks a binary file (logs never hold one).
pub(crate) fn binary_offset(head: &[u8]) -> Option<usize> {
    memchr::memchr(0, &head[..head.len().min(8192)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes a reader handed out before its first error, and that error.
    fn read_until_error(r: &mut impl Read, buf: &mut [u8]) -> (usize, io::Error) {
        let mut out = 0;
        loop {
            match r.read(buf) {
                Ok(n) => out += n,
                Err(e) => return (out, e),
            }
        }
    }

    #[test]
    fn decompression_stops_at_the_ratio_and_the_size_limits() {
        // 1 compressed byte read so far and 1,000 bytes of output per read: past 4,000
        // bytes out, a ratio above 500:1 stops the read, so reads 1..=4 succeed and the
        // fifth fails; the 4,000 bytes before it were handed out.
        let raw = Arc::new(AtomicU64::new(1));
        let mut l = Limited::new(io::repeat(b'A'), raw.clone());
        l.bomb_after = 4_000;
        let mut buf = [0u8; 1_000];
        let (out, err) = read_until_error(&mut l, &mut buf);
        assert_eq!(out, 4_000);
        // 4,000 bytes out of 1 compressed byte is past 500:1.
        assert_eq!(
            StopReason::of(&err),
            StopReason::Decompression(DecompressionStop::Ratio {
                expanded: 4_000,
                compressed: 1,
                ratio: 500
            })
        );
        // Below the ratio the size limit stops it, exactly at the limit.
        raw.store(1_000_000, Ordering::Relaxed);
        let mut l = Limited::new(io::repeat(b'A'), raw);
        l.max_out = 2_500;
        let (out, err) = read_until_error(&mut l, &mut buf);
        assert_eq!(out, 2_500);
        assert_eq!(
            StopReason::of(&err),
            StopReason::Decompression(DecompressionStop::SizeLimit { limit: 2_500 })
        );
        // Any other error is its own text.
        assert_eq!(
            StopReason::of(&io::Error::other("unexpected end of file")),
            StopReason::Error("unexpected end of file".into())
        );
    }
}
