//! A plain file mapped into memory for the scan, guarded against being cut while mapped.
//!
//! `read` copies a file's bytes from the page cache into the scan's buffers: 0.075 of the
//! 0.267 CPU-s a one-thread scan of a 1 GiB log in the page cache took on this project's
//! machine, against 0.012 for mapping the same pages when the cache holds them in 2 MiB
//! folios, as it holds a file read from disk (held in 4 KiB pages, the two cost about the
//! same; docs/performance.md, "The second change of 2026-12-07"). A mapping has one hazard
//! that `read` has not: a page of the file cut away while it is mapped (`logrotate`'s
//! `copytruncate` empties a live log in place) raises `SIGBUS` when touched, which kills
//! the process. So a mapping here is registered with a `SIGBUS` handler that puts zeros in
//! place of the missing page and every page after it, and counts the fault; the scan then
//! sees zeros instead of dying (and claims no more blocks), and its caller, told by
//! [`MappedFile::faulted`], throws that scan away and reads the file again with `read`,
//! which reports the cut as it reports any file that shrank. A fault at any other address
//! goes on to the handler that was there before (Rust's own, which tells a stack overflow
//! from a crash), as if this one were not installed.
//!
//! This module and `snapshot/pages.rs` are the crate's only `unsafe` code; each block has
//! its SAFETY note.

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Mappings registered with the handler at once: one a file scanned in place, and the pool
/// scans at most one file a thread. A file that finds no free slot is read, not mapped.
const SLOTS: usize = 64;

/// One registered mapping: its address range (`start` 0: none yet, or none any more) and
/// the faults taken in it. `taken` claims the slot before the range is known.
struct Slot {
    taken: AtomicBool,
    start: AtomicUsize,
    end: AtomicUsize,
    faults: AtomicUsize,
}

static REGISTRY: [Slot; SLOTS] = [const {
    Slot {
        taken: AtomicBool::new(false),
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        faults: AtomicUsize::new(0),
    }
}; SLOTS];

/// Where [`MappedFile::release_before`] cuts: a multiple of every page size Linux has.
const RELEASE_ALIGN: usize = 2 << 20;

/// A plain file's bytes, mapped read-only, with the fault count of its slot.
pub(crate) struct MappedFile {
    map: memmap2::Mmap,
    slot: &'static Slot,
}

impl MappedFile {
    /// `file` mapped whole, or `None` where it cannot be (an empty file, a file system
    /// that maps nothing, no free slot, no handler): the caller reads it instead.
    pub(crate) fn new(file: &File) -> Option<MappedFile> {
        guard::install()?;
        let slot = REGISTRY.iter().find(|s| {
            s.taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        slot.faults.store(0, Ordering::Relaxed);
        let Some(map) = guard::map(file) else {
            slot.taken.store(false, Ordering::Release);
            return None;
        };
        let start = map.as_ptr() as usize;
        slot.end.store(start + map.len(), Ordering::Release);
        slot.start.store(start, Ordering::Release);
        Some(MappedFile { map, slot })
    }

    /// The file's bytes as they were when it was mapped (its size then); a page cut from
    /// the file since reads as zeros, and [`MappedFile::faulted`] says so.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Whether a page of the mapping was found cut from the file (and read as zeros).
    pub(crate) fn faulted(&self) -> bool {
        self.slot.faults.load(Ordering::Acquire) > 0
    }

    /// Lets the kernel drop this process's pages of the mapping from `from` (where the
    /// last call's pages ended, 0 at first) up to the last 2 MiB boundary before `end`, the
    /// caller being done with every byte before `end`: the resident memory then holds the
    /// blocks in flight, not every page read so far. Returns where the dropped pages end,
    /// the next call's `from`. A page touched again is mapped again from the file.
    ///
    /// At 2 MiB boundaries because a file read from disk sits in the page cache in 2 MiB
    /// pieces, which the kernel maps whole; dropping part of one splits its mapping.
    pub(crate) fn release_before(&self, from: usize, end: usize) -> usize {
        let to = end.min(self.map.len()) / RELEASE_ALIGN * RELEASE_ALIGN;
        if to > from {
            guard::drop_pages(&self.map, from, to - from);
        }
        to.max(from)
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // The slot is let go before the mapping is: a fault in the range after this would
        // be a bug of the scan's, and goes to the handler before this one.
        self.slot.start.store(0, Ordering::Release);
        self.slot.end.store(0, Ordering::Release);
        self.slot.taken.store(false, Ordering::Release);
    }
}

/// The `unsafe` part: the mapping, the handler and its installation.
#[allow(unsafe_code)] // mmap, madvise and sigaction: see the SAFETY notes
mod guard {
    use std::fs::File;
    use std::sync::atomic::Ordering;
    use std::sync::OnceLock;

    use super::REGISTRY;

    /// The page size once the handler is installed; `None` if it could not be.
    static PAGE: OnceLock<Option<usize>> = OnceLock::new();
    /// The action installed before ours, to which `on_sigbus` passes a fault that is not
    /// in a mapping; set before ours is installed.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

    /// Installs the `SIGBUS` handler once; the page size, or `None` if it could not be.
    pub(super) fn install() -> Option<usize> {
        *PAGE.get_or_init(|| {
            // SAFETY: sysconf reads a constant of the system.
            let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
            if !page.is_power_of_two() {
                return None;
            }
            // SAFETY: a zeroed sigaction is a valid value (no handler, empty mask), and
            // sigaction only writes the current action into `previous`. The new action
            // runs `on_sigbus`, which is async-signal-safe (atomic loads and stores, mmap,
            // and the previous handler, itself written to run in a signal). SA_ONSTACK
            // keeps the alternate signal stack Rust's runtime set up for its own handler.
            unsafe {
                let mut previous: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) != 0 {
                    return None;
                }
                let _ = PREVIOUS.set(previous);
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_sigbus as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) != 0 {
                    return None;
                }
            }
            Some(page)
        })
    }

    /// `file` mapped read-only, whole; `None` for an empty file or a failed map.
    pub(super) fn map(file: &File) -> Option<memmap2::Mmap> {
        // SAFETY: the map is read while other processes may write the file. Appends past
        // its end are not in it; a log is not rewritten in place; a cut is caught by
        // `on_sigbus`, which puts zeros where the page was and counts it, and the caller
        // then throws the scan away (`MappedFile::faulted`). The bytes are never handed
        // out beyond the scan of this file.
        let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
        (!map.is_empty()).then_some(map)
    }

    /// `file` mapped where the handler does not know of it: for the test that a fault
    /// there is not taken for a cut the handler covers.
    #[cfg(test)]
    pub(super) fn map_unregistered(file: &File) -> memmap2::Mmap {
        map(file).expect("mapped")
    }

    /// Drops the pages `[offset, offset + len)` of `map` from the process (page-aligned).
    pub(super) fn drop_pages(map: &memmap2::Mmap, offset: usize, len: usize) {
        // SAFETY: MADV_DONTNEED on a private read-only file mapping discards only the
        // process's page table entries: a later read maps the file's page again, with the
        // same bytes (a page replaced by zeros after a fault reads as zeros again). No
        // byte a live reference points at changes. A failure leaves the pages resident.
        let _ =
            unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len) };
    }

    /// The `SIGBUS` handler: a fault inside a registered mapping gets zeros in place of the
    /// pages from the faulting one to the mapping's end, and is counted; any other fault
    /// goes to the handler installed before.
    extern "C" fn on_sigbus(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler.
        let addr = unsafe { (*info).si_addr() } as usize;
        // Only installed handlers run, and `install` sets the page size first.
        let Some(&Some(page)) = PAGE.get() else {
            return pass_on(signal, info, context);
        };
        for slot in &REGISTRY {
            let start = slot.start.load(Ordering::Acquire);
            if start == 0 || addr < start || addr >= slot.end.load(Ordering::Acquire) {
                continue;
            }
            // A cut takes every page after it too: zeros from the faulting page to the
            // mapping's end take one fault, not one a page.
            let at = addr & !(page - 1);
            let len = slot.end.load(Ordering::Acquire).next_multiple_of(page) - at;
            // SAFETY: MAP_FIXED replaces pages inside the registered mapping, which its
            // `MappedFile` owns and unmaps whole on drop; the new pages are private,
            // anonymous, read-only and zero-filled. mmap is a system call, safe in a
            // signal handler.
            let zeros = unsafe {
                libc::mmap(
                    at as *mut libc::c_void,
                    len,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if zeros != libc::MAP_FAILED {
                slot.faults.fetch_add(1, Ordering::AcqRel);
                return;
            }
        }
        pass_on(signal, info, context);
    }

    /// Runs the handler installed before ours; for none (or `SIG_IGN`) restores the
    /// default action, so that the fault, taken again on return, ends the process as it
    /// would have.
    fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
        let previous = PREVIOUS.get();
        // SAFETY: the previous action was read by sigaction and is called as the kernel
        // would have called it: with siginfo when it asked for it (SA_SIGINFO).
        unsafe {
            match previous {
                Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
                    if p.sa_flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                            std::mem::transmute(p.sa_sigaction);
                        f(signal, info, context);
                    } else {
                        let f: extern "C" fn(libc::c_int) = std::mem::transmute(p.sa_sigaction);
                        f(signal);
                    }
                }
                _ => {
                    let mut default: libc::sigaction = std::mem::zeroed();
                    default.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(signal, &default, std::ptr::null_mut());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// `len` bytes that differ from page to page and within a page, none of them zero.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b'a' + ((i / 4096 + i % 7) % 26) as u8)
            .collect()
    }

    fn file_of(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        f.write_all(bytes).expect("write");
        f.flush().expect("flush");
        f
    }

    /// The resident bytes of the mapping that starts at `start`, from /proc/self/smaps
    /// (per mapping, so other tests' memory does not count).
    fn resident(start: usize) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let head = format!("{start:x}-");
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head)).skip(1);
        let rss = lines
            .find(|l| l.starts_with("Rss:"))
            .expect("the mapping's Rss line");
        let kib: usize = rss
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .expect("kB");
        kib * 1024
    }

    /// The page size the handler was installed with (4 KiB on x86-64).
    fn page() -> usize {
        guard::install().expect("the handler installs")
    }

    #[test]
    fn a_mapped_file_reads_its_bytes_and_lets_go_of_pages_behind_it() {
        // 8 MiB and 123 bytes: with 4 KiB pages, 2,049 of them when all are touched.
        let page = page();
        let data = pattern((8 << 20) + 123);
        let whole = data.len().next_multiple_of(page);
        let f = file_of(&data);
        let map = MappedFile::new(f.as_file()).expect("mapped");
        assert_eq!(map.bytes(), &data[..]);
        let start = map.bytes().as_ptr() as usize;
        assert_eq!(resident(start), whole);
        // Done with 3,000,000 bytes: the 2 MiB before them go (2,097,152 bytes: 512 pages of
        // 4 KiB), the rest up to byte 3,000,000 stays.
        assert_eq!(map.release_before(0, 3_000_000), 2 << 20);
        assert_eq!(resident(start), whole - (2 << 20));
        // A second call goes on from where the first stopped; short of the next 2 MiB
        // boundary it drops nothing.
        assert_eq!(map.release_before(2 << 20, 4_000_000), 2 << 20);
        assert_eq!(resident(start), whole - (2 << 20));
        // To the end: the last 123 bytes' page stays.
        assert_eq!(map.release_before(2 << 20, data.len()), 8 << 20);
        assert_eq!(resident(start), page);
        // Pages let go of read the file again.
        assert_eq!(map.bytes(), &data[..]);
        assert!(!map.faulted());
    }

    #[test]
    fn a_file_cut_while_mapped_reads_as_zeros_past_the_cut_and_says_so() {
        let page = page();
        let data = pattern(5 * page + 100);
        let f = file_of(&data);
        let map = MappedFile::new(f.as_file()).expect("mapped");
        assert_eq!(map.bytes()[page * 3], data[page * 3]);
        // Cut to a page and 10 bytes: the rest of that page reads as zeros without a
        // fault (the kernel's tail of the last page), the pages after it fault.
        f.as_file().set_len(page as u64 + 10).expect("truncate");
        assert_eq!(&map.bytes()[..page + 10], &data[..page + 10]);
        assert!(!map.faulted());
        assert!(map.bytes()[page + 10..].iter().all(|&b| b == 0));
        assert!(map.faulted());
        // Another mapping is not marked by this one's faults.
        let other = file_of(&data);
        let other_map = MappedFile::new(other.as_file()).expect("mapped");
        assert_eq!(other_map.bytes(), &data[..]);
        assert!(!other_map.faulted());
    }

    #[test]
    fn a_slot_is_free_again_once_its_mapping_is_dropped() {
        let f = file_of(&pattern(10_000));
        for _ in 0..3 * SLOTS {
            let map = MappedFile::new(f.as_file()).expect("a free slot");
            assert_eq!(map.bytes().len(), 10_000);
        }
    }

    #[test]
    fn an_empty_file_is_not_mapped() {
        let f = file_of(b"");
        assert!(MappedFile::new(f.as_file()).is_none());
    }

    /// A fault in a mapping that is not registered (any other `SIGBUS`) ends the process
    /// by that signal, as without the handler: the test runs itself again as a child that
    /// installs the handler, maps a file outside it, cuts the file and reads past the cut.
    #[test]
    fn a_fault_outside_every_registered_mapping_still_ends_the_process() {
        const CHILD: &str = "RANKSCOPE_TEST_SIGBUS_CHILD";
        let name = "ingest::mapped_file::tests::a_fault_outside_every_registered_mapping_still_ends_the_process";
        if std::env::var_os(CHILD).is_some() {
            let registered = file_of(&pattern(3 * page()));
            let _installs_the_handler = MappedFile::new(registered.as_file()).expect("mapped");
            let other = file_of(&pattern(3 * page()));
            let unregistered = guard::map_unregistered(other.as_file());
            other.as_file().set_len(10).expect("truncate");
            let byte = unregistered[2 * page()];
            // Not reached: the read above ends the process.
            println!("read {byte} past the cut");
            return;
        }
        let exe = std::env::current_exe().expect("the test binary");
        let out = std::process::Command::new(exe)
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .expect("the child runs");
        use std::os::unix::process::ExitStatusExt;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.signal(), Some(libc::SIGBUS), "{stdout}");
        assert!(!stdout.contains("past the cut"), "{stdout}");
    }
}
