//! A long input's blocks scanned on several threads as they are read, and merged in order.
//!
//! Each thread runs one loop: claim the next block (under the source's lock, so blocks
//! are numbered, and a stream's read, decompressed and hashed, in input order), read it
//! if the claim did not, scan it, and merge whatever is next in order (under the merge's
//! lock). No thread is set apart to merge. The design before handed each block to the
//! pool as a job of its own and merged on the thread that read the first block: on two
//! threads that thread parked and was woken once a block (979 and 979 `futex` calls for
//! the 1,024 blocks of the shared GiB log) while the other slept whenever it ran out of
//! spawned jobs, and two threads took 1.1–1.4× the CPU of one (docs/performance.md, "The
//! seventh change of 2026-12-06").

use std::any::Any;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::block::BlockScan;
use super::merge::Merger;
use super::reader::{Block, BlockReader};
use super::{merge_block, scan_one, EventBudget, ReadStop};
use crate::grammar::GrammarSet;

/// Where the loops take their blocks from. A block is claimed under the source's lock,
/// so blocks are numbered in input order, and filled after the lock is let go: a file
/// read at offsets copies its blocks on every thread at once (`positional`), a stream
/// reads each block while it claims it.
pub(super) trait BlockSource: Send {
    type Claim: Send;
    /// The next block's claim; `None` at the input's end.
    fn claim(&mut self) -> Option<Self::Claim>;
    /// Merged blocks, whose buffers the next reads may fill again.
    fn recycle(&mut self, back: Vec<Block>);
    /// The claimed block's bytes.
    fn fill(claim: Self::Claim) -> Filled;
    /// Lines longer than a block, split to keep memory bounded.
    fn split_long_lines(&self) -> u64;
}

/// A block read: its bytes, and the input's bytes up to its end (for progress).
pub(super) struct Filled {
    pub(super) block: Block,
    pub(super) read: u64,
    /// The input ends with this block, read short: at the error that stopped the read
    /// (`Some`), or where the file ended (`None`: it became shorter since the block was
    /// claimed, which the read notes tell by its size).
    pub(super) last: Option<Option<ReadStop>>,
}

impl<R: Read + Send> BlockSource for BlockReader<R> {
    type Claim = Filled;

    fn claim(&mut self) -> Option<Filled> {
        let block = self.next_batch(1).pop()?;
        Some(Filled {
            block,
            read: self.total(),
            last: None,
        })
    }

    fn fill(claim: Filled) -> Filled {
        claim
    }

    fn recycle(&mut self, back: Vec<Block>) {
        BlockReader::recycle(self, back);
    }

    fn split_long_lines(&self) -> u64 {
        BlockReader::split_long_lines(self)
    }
}

/// The source as the loops share it.
struct Claims<S> {
    source: S,
    /// The next block's place in the input, counted in blocks.
    next_index: u64,
}

/// The merge's side: what is scanned and waits for an earlier block, and what is merged.
struct MergeState<'m, 'g, P> {
    merger: &'m mut Merger<'g>,
    progress: &'m mut P,
    /// The hash of the input's bytes, fed in order as blocks are merged (a source whose
    /// reader does not hash what it reads); out of the state while a loop hashes.
    hasher: Option<&'m mut twox_hash::XxHash3_64>,
    /// The input hashes: merged blocks wait in `unhashed` until then.
    hashes: bool,
    /// Merged blocks not yet hashed, in input order. They are hashed outside the lock by
    /// the loop that took `hasher` (`Loops::hash_merged`): hashed under it, a block held
    /// the lock ~25 µs of its ~190 µs scan, and at two threads the other loop, finding it
    /// held, slept and was woken ~300 times over the shared GiB log.
    unhashed: std::collections::VecDeque<Block>,
    /// Scanned blocks waiting for an earlier block's merge.
    waiting: BTreeMap<u64, (Filled, BlockScan)>,
    next_merge: u64,
    /// Blocks claimed and not yet merged: a loop claims no more while `window` are.
    in_flight: usize,
    /// Merged blocks whose buffers the next claims take back.
    given_back: Vec<Block>,
    /// Loops waiting for room: a merge wakes them, and only then (each wake is a system
    /// call, one a block when made after every merge).
    waiting_for_room: usize,
    /// A block's read stopped short: the input ends there, and later blocks are let go.
    ended: bool,
    /// The input's bytes up to the last block merged.
    merged_to: u64,
    /// The panic of a read, a scan or a merge: every loop stops and it is raised again
    /// once they have.
    panic: Option<Box<dyn Any + Send>>,
}

impl<P: FnMut(u64)> MergeState<'_, '_, P> {
    /// Whether the loops are to claim no more blocks.
    fn stopped(&self) -> bool {
        self.ended || self.panic.is_some()
    }

    /// Merges the blocks that are next in order; how many blocks left the window.
    fn merge_ready(&mut self) -> usize {
        let mut left = 0;
        while let Some((filled, r)) = self.waiting.remove(&self.next_merge) {
            let Filled { block, read, last } = filled;
            // Only a read that stopped short gives an empty block.
            if !block.bytes().is_empty() {
                merge_block(self.merger, r, &block);
            }
            (self.progress)(read);
            self.merged_to = read;
            if self.hashes {
                self.unhashed.push_back(block);
            } else {
                self.give_back(block);
                left += 1;
            }
            self.next_merge += 1;
            if let Some(stop) = last {
                self.merger.out.read_stop = stop;
                self.ended = true;
                for (_, (later, _)) in std::mem::take(&mut self.waiting) {
                    self.give_back(later.block);
                    left += 1;
                }
            }
        }
        left
    }

    fn give_back(&mut self, block: Block) {
        self.given_back.push(block);
        self.in_flight -= 1;
    }
}

/// What the loops of one input share.
struct Loops<'s, 'm, 'g, S, P> {
    gs: &'s GrammarSet,
    budget: &'s EventBudget,
    claims: Mutex<Claims<S>>,
    merge: Mutex<MergeState<'m, 'g, P>>,
    /// Signalled when blocks leave the window or the loops stop.
    room: Condvar,
    window: usize,
}

impl<'m, 'g, S: BlockSource, P: FnMut(u64) + Send> Loops<'_, 'm, 'g, S, P> {
    /// Reads, scans and merges blocks until the input ends or a panic stops the loops.
    /// `first`: the input's first block, read before the loops began.
    fn run(&self, first: Option<Filled>) {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.scan(first)));
        if let Err(payload) = ran {
            // A loop that stopped by a panic may hold the block next in order: the others
            // would wait for room forever.
            locked(&self.merge).panic.get_or_insert(payload);
            self.room.notify_all();
        }
    }

    fn scan(&self, first: Option<Filled>) {
        let mut next = first.map(|filled| (0, filled));
        while let Some((index, filled)) = next.take().or_else(|| self.claim_next()) {
            let r = scan_one(self.gs, self.budget, &filled.block);
            let mut m = locked(&self.merge);
            if m.stopped() {
                m.give_back(filled.block);
                return;
            }
            m.waiting.insert(index, (filled, r));
            if m.merge_ready() > 0 && m.waiting_for_room > 0 {
                self.room.notify_all();
            }
            self.hash_merged(m);
        }
    }

    /// Hashes the merged blocks in order, outside the merge's lock, unless another loop
    /// is at it: that loop takes the blocks merged meanwhile before it lets the hasher go.
    fn hash_merged<'l>(&'l self, mut m: MutexGuard<'l, MergeState<'m, 'g, P>>) {
        if m.unhashed.is_empty() {
            return;
        }
        let Some(hasher) = m.hasher.take() else {
            return;
        };
        while !m.unhashed.is_empty() {
            let blocks = std::mem::take(&mut m.unhashed);
            drop(m);
            for block in &blocks {
                std::hash::Hasher::write(&mut *hasher, block.bytes());
            }
            m = locked(&self.merge);
            for block in blocks {
                m.give_back(block);
            }
            if m.waiting_for_room > 0 {
                self.room.notify_all();
            }
        }
        m.hasher = Some(hasher);
    }

    /// The next block, once the window has room; `None` at the input's end or once the
    /// loops stopped.
    fn claim_next(&self) -> Option<(u64, Filled)> {
        let back = {
            let mut m = locked(&self.merge);
            while m.in_flight >= self.window && !m.stopped() {
                m.waiting_for_room += 1;
                m = self.room.wait(m).unwrap_or_else(PoisonError::into_inner);
                m.waiting_for_room -= 1;
            }
            if m.stopped() {
                return None;
            }
            m.in_flight += 1;
            std::mem::take(&mut m.given_back)
        };
        let claimed = {
            let mut c = locked(&self.claims);
            c.source.recycle(back);
            let claim = c.source.claim();
            let index = c.next_index;
            c.next_index += u64::from(claim.is_some());
            claim.map(|claim| (index, claim))
        };
        match claimed {
            Some((index, claim)) => Some((index, S::fill(claim))),
            None => {
                locked(&self.merge).in_flight -= 1;
                None
            }
        }
    }
}

/// Scans the blocks of a long input on the pool's threads as they are read, and merges
/// them in order: `first` is the input's first block, read already. At most two blocks a
/// thread are claimed and not yet merged, so memory stays bounded whatever the blocks'
/// speeds. `hasher` is fed the blocks' bytes in order. Returns the source (its totals and
/// stop) once the input is read, and the input's bytes up to the last block merged.
///
/// A loop waits for room only while another loop scans the block next in order, and no
/// scan waits on the pool: a loop never waits for work that only its own thread would do
/// (a run's files are scanned in parallel, each file's scan on one of the pool's threads,
/// and a scan must not come to run pool work while it holds a block). The calling thread
/// runs a loop itself, so the input is read to its end even when every other thread is
/// busy with files of its own.
pub(super) fn blocks_as_read<S: BlockSource, P: FnMut(u64) + Send>(
    gs: &GrammarSet,
    budget: &EventBudget,
    merger: &mut Merger<'_>,
    source: S,
    first: Option<Filled>,
    progress: &mut P,
    hasher: Option<&mut twox_hash::XxHash3_64>,
) -> (S, u64) {
    let loops = Loops {
        gs,
        budget,
        claims: Mutex::new(Claims {
            source,
            next_index: u64::from(first.is_some()),
        }),
        merge: Mutex::new(MergeState {
            merger,
            progress,
            hashes: hasher.is_some(),
            hasher,
            unhashed: std::collections::VecDeque::new(),
            waiting: BTreeMap::new(),
            next_merge: 0,
            in_flight: usize::from(first.is_some()),
            given_back: Vec::new(),
            waiting_for_room: 0,
            ended: false,
            merged_to: 0,
            panic: None,
        }),
        room: Condvar::new(),
        window: rayon::current_num_threads().max(1) * 2,
    };
    rayon::in_place_scope(|pool| {
        for _ in 1..rayon::current_num_threads() {
            let loops = &loops;
            pool.spawn(move |_| loops.run(None));
        }
        loops.run(first);
    });
    let state = unlocked(loops.merge);
    if let Some(payload) = state.panic {
        std::panic::resume_unwind(payload);
    }
    // The loop that hashes looks again under the lock before it lets the hasher go, so a
    // block merged meanwhile is never left; a read that stopped short may leave blocks
    // after its stop, which the hash of a stopped read does not need.
    debug_assert!(state.unhashed.is_empty() || state.ended);
    let mut claims = unlocked(loops.claims);
    claims.source.recycle(state.given_back);
    (claims.source, state.merged_to)
}

/// A lock that a panic elsewhere does not poison: the loops' panics are caught and raised
/// again once every loop has stopped, and what the locks guard is left whole by them.
fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a lock held, once no loop holds it (as [`locked`], whatever a panic left).
fn unlocked<T>(m: Mutex<T>) -> T {
    m.into_inner().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks handed out as written: block `stop_at` reads short (its read stop), and the
    /// fill of a block whose first byte is `!` panics.
    struct Scripted {
        blocks: std::collections::VecDeque<Vec<u8>>,
        read: u64,
        index: usize,
        stop_at: Option<usize>,
    }

    impl BlockSource for Scripted {
        type Claim = (usize, Filled);

        fn claim(&mut self) -> Option<(usize, Filled)> {
            let bytes = self.blocks.pop_front()?;
            self.read += bytes.len() as u64;
            self.index += 1;
            let last = (self.stop_at == Some(self.index - 1)).then(|| {
                Some(ReadStop {
                    offset: self.read,
                    reason: crate::ingest::source::StopReason::Error("cut".into()),
                })
            });
            let len = bytes.len();
            let filled = Filled {
                block: Block::of(bytes, len, false, false),
                read: self.read,
                last,
            };
            Some((self.index - 1, filled))
        }

        fn recycle(&mut self, _: Vec<Block>) {}

        fn split_long_lines(&self) -> u64 {
            0
        }

        fn fill((index, filled): (usize, Filled)) -> Filled {
            assert!(filled.block.bytes().first() != Some(&b'!'), "block {index}");
            filled
        }
    }

    /// 40 blocks of 3 record lines each; block `panic_at`'s first byte is `!`.
    fn scripted(stop_at: Option<usize>, panic_at: Option<usize>) -> Scripted {
        let blocks = (0..40)
            .map(|k| {
                let mut b = Vec::new();
                for i in 0..3 {
                    b.extend_from_slice(
                        format!("[2026-12-06 10:11:12 TP0] line {k}.{i}\n").as_bytes(),
                    );
                }
                if panic_at == Some(k) {
                    b[0] = b'!';
                }
                b
            })
            .collect();
        Scripted {
            blocks,
            read: 0,
            index: 0,
            stop_at,
        }
    }

    /// The scan of `source` on `threads` threads: what it found, its progress reports, and
    /// the hash of the blocks it merged.
    fn scan(source: Scripted, threads: usize) -> std::thread::Result<(SourceScan, Vec<u64>, u64)> {
        let gs = GrammarSet::builtin().expect("built-in grammars compile");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        let budget = EventBudget::default();
        pool.install(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut merger = Merger::new(&gs, 0, &budget);
                let mut reads = Vec::new();
                let mut progress = |n| reads.push(n);
                let mut hasher = crate::ingest::stream::content_hasher();
                let hash = Some(&mut hasher);
                let (_, read) =
                    blocks_as_read(&gs, &budget, &mut merger, source, None, &mut progress, hash);
                (
                    merger.finish(read),
                    reads,
                    std::hash::Hasher::finish(&hasher),
                )
            }))
        })
    }

    use super::super::SourceScan;

    #[test]
    fn a_block_read_short_ends_the_input_on_any_thread_count() {
        // The 40 blocks' bytes in input order, as one text: three lines a block, of 35
        // bytes in blocks 0-9 and 36 in blocks 10-39 (`[2026-12-06 10:11:12 TP0] line `
        // is 31, then `{k}.{i}` and the newline).
        let input: Vec<u8> = scripted(None, None).blocks.into_iter().flatten().collect();
        assert_eq!(input.len(), 3 * (10 * 35 + 30 * 36));
        let input_hash = crate::ingest::stream::content_digest(&input);
        for threads in [1, 2, 4] {
            let (whole, reads, hash) = scan(scripted(None, None), threads).expect("no panic");
            assert_eq!(whole.counts.lines, 120, "{threads}");
            // Hashed in input order whichever loop merged or hashed each block.
            assert_eq!(hash, input_hash, "{threads}");
            assert!(whole.read_stop.is_none());
            // Progress comes in input order, a block at a time.
            assert_eq!(reads.len(), 40);
            assert!(reads.windows(2).all(|w| w[0] < w[1]));
            let (cut, reads, _) = scan(scripted(Some(17), None), threads).expect("no panic");
            // Blocks 0 to 17 are merged, 3 lines each; what the other loops read after it
            // is let go.
            assert_eq!(cut.counts.lines, 54, "{threads}");
            assert_eq!(reads.len(), 18);
            let stop = cut.read_stop.expect("the short read's stop");
            assert_eq!(Some(&stop.offset), reads.last());
            assert_eq!(Some(&cut.bytes), reads.last());
        }
    }

    #[test]
    fn a_panic_in_one_loop_stops_the_others_and_is_raised() {
        for threads in [1, 2, 4] {
            let panicked = scan(scripted(None, Some(17)), threads);
            let payload = panicked.expect_err("the fill's panic is raised");
            let text = payload
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_default();
            assert!(text.contains("block 17"), "{threads}: {text}");
        }
    }
}
