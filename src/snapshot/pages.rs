//! Room for the reader's large arrays, backed by 2 MiB pages where the kernel allows.
//!
//! Reading a snapshot is mostly touching fresh memory: the trace, the memo and the node
//! table of a 23 MB snapshot are some 20 MB written once, in order. On a virtual machine
//! each fresh 4 KiB page can cost a fault in the guest and another in the host (a page the
//! guest returned to its host, through free page reporting, is zeroed again by the host
//! when it is touched), and `mem` measured 0.01–0.23 s of system time for the same file
//! depending on what ran before it. With transparent huge pages in `madvise` mode (the
//! common default), asking for 2 MiB pages on these arrays turns some 500 faults per
//! 2 MiB into one. This and `ingest::mapped_file` are the crate's only `unsafe` code; see
//! `reserve_huge`.

/// Below this many bytes a vector is left to the allocator as it is.
const HUGE_MIN: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// Reserves room for `n` more items in `v` and, when that room is large, asks the kernel
/// to back it with huge pages. Only a hint: where transparent huge pages are off or not
/// available the pages are ordinary ones, and nothing else changes. The room is a guess
/// from a file's size, so a reservation the allocator refuses (a huge or lying file) is
/// skipped, not fatal: the vector then grows as it is filled, as without the guess.
pub(crate) fn reserve_huge<T>(v: &mut Vec<T>, n: usize) {
    if v.try_reserve(n).is_err() {
        return;
    }
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_MIN {
        return;
    }
    advise_huge(v.as_ptr() as usize, bytes);
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // one of the crate's two unsafe modules: see the SAFETY note below
fn advise_huge(start: usize, bytes: usize) {
    // Only whole huge pages inside the buffer: the hint applies to the pages of the
    // mapping, and the ends of the buffer may share a page with other allocations.
    let Some(begin) = start.checked_next_multiple_of(HUGE_PAGE) else {
        return;
    };
    let end = start.saturating_add(bytes) / HUGE_PAGE * HUGE_PAGE;
    if end <= begin {
        return;
    }
    // SAFETY: MADV_HUGEPAGE changes how the kernel backs pages of an existing mapping,
    // never their contents or the mapping itself, so no Rust object is affected; the
    // range lies inside `v`'s allocation, which is live for the call. A failure (THP
    // compiled out, or `never`) leaves the hint unapplied, which is correct too.
    unsafe {
        libc::madvise(begin as *mut libc::c_void, end - begin, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_start: usize, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_the_allocator_refuses_is_skipped() {
        // Room for usize::MAX / 2 u64s cannot exist: the hint gives up, the vector works.
        let mut v: Vec<u64> = vec![1, 2];
        reserve_huge(&mut v, usize::MAX / 2);
        v.push(3);
        assert_eq!(v, [1, 2, 3]);
    }

    #[test]
    fn a_large_reservation_is_made() {
        let mut v: Vec<u32> = Vec::new();
        reserve_huge(&mut v, 3 << 20);
        assert!(v.capacity() >= 3 << 20);
    }
}
