//! A plain file's blocks as ranges of its mapping (`ingest::mapped_file`): cut where
//! [`super::reader::BlockReader`] cuts the same bytes, handed to the scanning threads
//! without a copy, and let go of once merged.

use std::sync::Arc;

use super::parallel::{BlockSource, Filled};
use super::reader::{cut_point, Block, MIN_BLOCK};
use crate::ingest::mapped_file::MappedFile;

/// The mapping's pages are let go of in steps this long. Each drop stops the other
/// scanning threads to flush their address translations: dropped a block at a time (1 MiB),
/// two threads took 1.21× the CPU of one on a 1 GiB log (1.16× with the drops cut at 2 MiB
/// boundaries), and 1.0× when nothing was dropped (docs/performance.md, "The second change
/// of 2026-12-07"). A step adds its length to the resident memory, whatever the thread
/// count.
const RELEASE_STEP: usize = 16 << 20;

/// A block's bytes: a range of a mapped file.
pub(super) struct MappedRange {
    map: Arc<MappedFile>,
    start: usize,
    end: usize,
}

impl MappedRange {
    pub(super) fn bytes(&self) -> &[u8] {
        self.map
            .bytes()
            .get(self.start..self.end)
            .unwrap_or_default()
    }

    pub(super) fn end(&self) -> usize {
        self.end
    }
}

/// A mapped file cut into blocks of whole lines: a block is the next `block_size` bytes up
/// to the last line end in them (a line longer than a block split at its last `\r`, else
/// where the range ends), or the rest of the file.
pub(super) struct MappedBlocks {
    map: Arc<MappedFile>,
    block_size: usize,
    /// Where the next block starts.
    offset: usize,
    /// The mapping's pages before this are let go of (a 2 MiB boundary).
    released_to: usize,
    split_long_lines: u64,
}

impl MappedBlocks {
    pub(super) fn new(map: Arc<MappedFile>, block_size: usize) -> Self {
        MappedBlocks {
            map,
            block_size: block_size.max(MIN_BLOCK),
            offset: 0,
            released_to: 0,
            split_long_lines: 0,
        }
    }
}

impl BlockSource for MappedBlocks {
    type Claim = Filled;

    fn claim(&mut self) -> Option<Filled> {
        // A file cut while mapped is scanned again by reading it: the rest is not needed.
        if self.map.faulted() {
            return None;
        }
        let bytes = self.map.bytes();
        let rest = bytes.get(self.offset..).filter(|r| !r.is_empty())?;
        let at_end = rest.len() <= self.block_size;
        let range = &rest[..rest.len().min(self.block_size)];
        let (len, inside_line) = cut_point(range, at_end);
        self.split_long_lines += u64::from(inside_line);
        let start = self.offset;
        self.offset += len;
        let cut_tail = at_end && range.last() != Some(&b'\n');
        Some(Filled {
            block: Block::mapped(
                MappedRange {
                    map: Arc::clone(&self.map),
                    start,
                    end: self.offset,
                },
                cut_tail,
                inside_line,
            ),
            read: self.offset as u64,
            last: None,
        })
    }

    fn fill(claim: Filled) -> Filled {
        claim
    }

    /// Blocks come back merged, in input order (or let go after the input ended), so
    /// every byte before the furthest end given back is done with.
    fn recycle(&mut self, back: Vec<Block>) {
        let furthest = back.iter().filter_map(Block::mapped_end).max();
        if let Some(end) = furthest.filter(|&end| end >= self.released_to + RELEASE_STEP) {
            self.released_to = self.map.release_before(self.released_to, end);
        }
    }

    fn split_long_lines(&self) -> u64 {
        self.split_long_lines
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::super::{scan_file_at, EventBudget, SourceScan};
    use super::*;
    use crate::grammar::GrammarSet;
    use crate::ingest::stream::{content_digest, content_hasher};

    /// An SGLang start-up of two ranks, then decode lines: 64 KiB or more, 16 pages.
    fn log() -> Vec<u8> {
        let mut t = String::new();
        for tp in 0..2 {
            t.push_str(&format!(
                "[2026-12-07 10:00:01 TP{tp}] Init torch distributed begin.\n"
            ));
            t.push_str(&format!(
                "[2026-12-07 10:00:09 TP{tp}] Load weight end. type=LlamaForCausalLM, \
                 dtype=torch.bfloat16, avail mem=61.20 GB, mem usage=14.99 GB.\n"
            ));
        }
        let mut i = 0;
        while t.len() < 64 << 10 {
            t.push_str(&format!(
                "[2026-12-07 10:01:{:02} TP0] Decode batch. #running-req: {i}, #token: 91141, \
                 token usage: 0.43, gen throughput (token/s): 2.98, #queue-req: 0\n",
                i % 60
            ));
            i += 1;
        }
        t.into_bytes()
    }

    /// One thread scans `file` in blocks of 4 KiB, the file cut to `cut_to` bytes when the
    /// first block is merged; the scan and the hash of what it read.
    fn scan_cut(file: &std::fs::File, cut_to: Option<u64>) -> (SourceScan, u64) {
        let gs = GrammarSet::builtin().expect("built-in grammars compile");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let mut hasher = content_hasher();
        let cut = |_| {
            if let Some(len) = cut_to {
                file.set_len(len).expect("truncate");
            }
        };
        let budget = EventBudget::default();
        let scan =
            pool.install(|| scan_file_at(&gs, 0, file, 4096, &budget, Some(&mut hasher), cut));
        (scan, std::hash::Hasher::finish(&hasher))
    }

    #[test]
    fn a_file_cut_while_its_mapping_is_scanned_is_scanned_again_by_reading() {
        let text = log();
        // 20,100 bytes: the first block (4 KiB) is merged whole before the cut, the cut
        // falls inside a decode line of the fifth page, and pages 6 to 16 are gone.
        let cut_at = 20_100;
        let mut cut_file = tempfile::NamedTempFile::new().expect("temp file");
        cut_file.write_all(&text).expect("write");
        let (scan, digest) = scan_cut(cut_file.as_file(), Some(cut_at));
        let mut short = tempfile::NamedTempFile::new().expect("temp file");
        short.write_all(&text[..cut_at as usize]).expect("write");
        let (expected, expected_digest) = scan_cut(short.as_file(), None);
        assert_eq!(scan.bytes, cut_at);
        assert_eq!(digest, content_digest(&text[..cut_at as usize]));
        assert_eq!(expected_digest, digest);
        // What the 20,100 bytes give: the four start-up events, their lines and the decode
        // lines before the cut one, which is the cut last line; not the zeros the mapping
        // read past the cut.
        assert_eq!(format!("{scan:?}"), format!("{expected:?}"));
        assert_eq!(scan.events.len(), 4);
        let whole_lines = text[..cut_at as usize]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        assert_eq!(scan.counts.lines, whole_lines as u64 + 1);
        let cut_line = text[..cut_at as usize].rsplit(|&b| b == b'\n').next();
        let cut_line = cut_line.map(|l| String::from_utf8_lossy(l).into_owned());
        assert!(cut_line.as_deref().is_some_and(|l| l.contains("Decode")));
        assert_eq!(scan.cut_last_line, cut_line);
    }

    #[test]
    fn a_mapped_files_pages_are_let_go_of_in_steps_behind_the_merge() {
        // 419,430 lines of 100 bytes (41,943,000 bytes) in blocks of 1 MiB: each block
        // holds 10,485 lines and ends at a multiple of 1,048,500.
        let line = [&[b'x'; 99][..], b"\n"].concat();
        let text = line.repeat(419_430);
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        f.write_all(&text).expect("write");
        let map = Arc::new(MappedFile::new(f.as_file()).expect("mapped"));
        let mut blocks = MappedBlocks::new(Arc::clone(&map), 1 << 20);
        let mut released = vec![0];
        let mut ends = Vec::new();
        while let Some(filled) = blocks.claim() {
            ends.push(filled.read);
            blocks.recycle(vec![filled.block]);
            released.push(blocks.released_to);
        }
        assert_eq!(ends.len(), 41);
        assert_eq!(ends[0], 1_048_500);
        assert_eq!(ends.last(), Some(&41_943_000));
        released.dedup();
        // The 17th block ends at 17,824,500, the first end 16 MiB past 0: the pages before
        // its last 2 MiB boundary (16 MiB) go; the 33rd, at 34,600,500, takes them to
        // 32 MiB; the last block ends short of 48 MiB.
        assert_eq!(released, [0, 16 << 20, 32 << 20]);
    }
}
