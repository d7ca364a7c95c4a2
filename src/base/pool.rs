//! Work for rayon's pool, run on the calling thread when the pool has one thread.
//!
//! Handing work to a one-thread pool and waiting for it gives the same results as doing
//! it here, at the cost of a wake-up per hand-off and of the work's memory coming from
//! the pool thread's own allocator arena, which glibc grows page range by page range
//! with `mprotect` (`summary` of 8,192 rank files at one thread: 397 `futex` and 1,941
//! `mprotect` calls handed off, 6 and 73 here). The pool is not built to include the
//! calling thread (`use_current_thread`) instead: the TUI loads on a thread of its own
//! while the main thread draws, and with one thread the loading thread's parallel work
//! would wait for the main thread forever.

use rayon::prelude::*;

/// Whether the pool has more than one thread, so that handing work to it pays.
fn parallel() -> bool {
    rayon::current_num_threads() > 1
}

/// `a` and `b`, in parallel on the pool (`rayon::join`), or one after the other here.
pub fn both<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if parallel() {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}

/// `f` of each item with its index, in parallel on the pool or in turn here; the results
/// in the items' order either way.
pub fn map_indexed<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    if parallel() {
        items.par_iter().enumerate().map(|(i, t)| f(i, t)).collect()
    } else {
        items.iter().enumerate().map(|(i, t)| f(i, t)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_on_one_thread_and_on_several() {
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let items: Vec<u32> = (0..100).collect();
            let squares = pool.install(|| map_indexed(&items, |i, &t| (i, t * t)));
            let expected: Vec<(usize, u32)> = (0..100).map(|t| (t as usize, t * t)).collect();
            assert_eq!(squares, expected, "{threads} threads");
            assert_eq!(pool.install(|| both(|| 2 + 2, || "four")), (4, "four"));
        }
    }
}
