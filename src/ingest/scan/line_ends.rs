//! The search for a line's end, set up once per block.
//!
//! The scan looks for each line's end with one search that also finds a `\r` before it
//! (a progress bar glued to a record). `memchr::memchr2` picks its routine and builds its
//! vectors on every call; lines of a serving log are ~150 bytes, so on the shared 256 MiB
//! log that set-up was ~30 of the ~80 instructions a line's search took (callgrind, one
//! thread). The searcher here is built once per block and asked directly.

/// A searcher for `\n` and `\r`.
#[derive(Clone, Copy)]
pub(super) struct LineEnds {
    /// memchr's AVX2 routine, where the processor has AVX2; else `memchr2` is asked.
    #[cfg(target_arch = "x86_64")]
    avx2: Option<memchr::arch::x86_64::avx2::memchr::Two>,
}

impl LineEnds {
    pub(super) fn new() -> LineEnds {
        LineEnds {
            #[cfg(target_arch = "x86_64")]
            avx2: memchr::arch::x86_64::avx2::memchr::Two::new(b'\n', b'\r'),
        }
    }

    /// Where the first `\n` or `\r` in `hay` is.
    #[inline]
    fn find(&self, hay: &[u8]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if let Some(two) = &self.avx2 {
            return two.find(hay);
        }
        memchr::memchr2(b'\n', b'\r', hay)
    }

    /// Where the line that goes on at `buf[from]` ends (its `\n`, or the end of `buf`),
    /// and whether a `\r` (a progress bar glued to a record) comes before that. One search
    /// finds the first of the two: nearly no line holds a `\r`, and a second search of
    /// every line for its last `\r` (`last_segment`) cost 2-3 % of scanning a large log.
    #[inline(always)]
    pub(super) fn line_end(&self, buf: &[u8], from: usize) -> (usize, bool) {
        let rest = buf.get(from..).unwrap_or_default();
        match self.find(rest) {
            Some(p) if rest.get(p) == Some(&b'\r') => {
                let cr = from + p;
                let end = memchr::memchr(b'\n', &buf[cr..]).map_or(buf.len(), |q| cr + q);
                (end, true)
            }
            Some(p) => (from + p, false),
            None => (buf.len(), false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_newline_or_carriage_return_where_memchr2_does() {
        let ends = LineEnds::new();
        // Haystacks of every length up to 300 (below, at and past the 16- and 32-byte
        // vectors and the 64-byte loop), with the first `\n` or `\r` at each place, a
        // later one of the other kind, or none.
        let mut compared = 0;
        for len in 0..300usize {
            for first in (0..=len).step_by(7) {
                for (a, b) in [(b'\n', b'\r'), (b'\r', b'\n')] {
                    let mut hay: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                    if first < len {
                        hay[first] = a;
                        if first + 3 < len {
                            hay[first + 3] = b;
                        }
                    }
                    let want = (first < len).then_some(first);
                    assert_eq!(ends.find(&hay), want, "len {len}, first at {first}");
                    assert_eq!(ends.find(&hay), memchr::memchr2(b'\n', b'\r', &hay));
                    compared += 1;
                }
            }
        }
        assert!(compared > 10_000);
    }

    #[test]
    fn a_line_ends_at_its_newline_and_says_whether_a_carriage_return_came_first() {
        let ends = LineEnds::new();
        let buf = b"abc\nprogress 10%\rrecord\nlast\rcut";
        // By hand: `\n` at 3, `\r` at 16, `\n` at 23, `\r` at 28, 32 bytes.
        assert_eq!(ends.line_end(buf, 0), (3, false));
        assert_eq!(ends.line_end(buf, 4), (23, true));
        // From past the `\r` (a shape's compared bytes hold none): no `\r` seen.
        assert_eq!(ends.line_end(buf, 17), (23, false));
        // A `\r` with no `\n` after it, then no line end at all: the buffer's end.
        assert_eq!(ends.line_end(buf, 24), (32, true));
        assert_eq!(ends.line_end(buf, 29), (32, false));
        assert_eq!(ends.line_end(buf, 32), (32, false));
    }
}
