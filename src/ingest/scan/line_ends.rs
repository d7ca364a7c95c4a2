//! The search for a line's end, set up once per block.
//!
//! The scan asks, line after line, where the line that goes on at some byte ends and
//! whether a `\r` (a progress bar glued to a record) comes before that end. A line's `\n`
//! is searched for with memchr's AVX2 routine for one byte, built once a block (memchr's
//! free functions pick their routine and build their vectors on every call: for
//! `memchr2`, ~30 of the ~80 instructions a ~150-byte line's search took, callgrind). The
//! `\r`s are searched for apart, ahead: where the block holds none, once, over the whole
//! block from its first line; where it holds some, once a `\r`. Searching each line for
//! both bytes at once (memchr's `Two`) cost a second compare every 32 bytes of every line,
//! and the first search of a block streams it from memory in one pass, ahead of its lines
//! (docs/performance.md, "The eighth change of 2026-12-07").

/// Where lines end in one block.
pub(super) struct LineEnds<'b> {
    buf: &'b [u8],
    /// memchr's AVX2 routine for `\n`, where the processor has AVX2; else `memchr` is asked.
    #[cfg(target_arch = "x86_64")]
    avx2: Option<memchr::arch::x86_64::avx2::memchr::One>,
    /// Where the `\r`s were last searched from, and the first found there (`usize::MAX`:
    /// none to the block's end); `None` before the first search.
    next_return: Option<(usize, usize)>,
}

impl<'b> LineEnds<'b> {
    pub(super) fn new(buf: &'b [u8]) -> LineEnds<'b> {
        LineEnds {
            buf,
            #[cfg(target_arch = "x86_64")]
            avx2: memchr::arch::x86_64::avx2::memchr::One::new(b'\n'),
            next_return: None,
        }
    }

    /// Where the first `\n` in `hay` is.
    #[inline]
    fn newline(&self, hay: &[u8]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if let Some(one) = &self.avx2 {
            return one.find(hay);
        }
        memchr::memchr(b'\n', hay)
    }

    /// Where the line that goes on at `buf[from]` ends (its `\n`, or the end of `buf`),
    /// and whether a `\r` comes before that. Asked with any `from`; the scan asks in
    /// increasing order, so the `\r` searched for last is mostly still ahead.
    #[inline(always)]
    pub(super) fn line_end(&mut self, from: usize) -> (usize, bool) {
        let rest = self.buf.get(from..).unwrap_or_default();
        let next_return = match self.next_return {
            Some((searched_from, at)) if searched_from <= from && from <= at => at,
            _ => {
                let at = memchr::memchr(b'\r', rest).map_or(usize::MAX, |p| from + p);
                self.next_return = Some((from, at));
                at
            }
        };
        let end = self.newline(rest).map_or(self.buf.len(), |p| from + p);
        (end, next_return < end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a line's end is, by definition: the first `\n` at or after `from` (or the
    /// buffer's end), and whether a `\r` lies between.
    fn by_definition(buf: &[u8], from: usize) -> (usize, bool) {
        let rest = buf.get(from..).unwrap_or_default();
        let end = memchr::memchr(b'\n', rest).map_or(buf.len(), |p| from + p);
        let has_return = buf.get(from..end).is_some_and(|l| l.contains(&b'\r'));
        (end, has_return)
    }

    #[test]
    fn a_line_ends_at_its_newline_and_says_whether_a_carriage_return_came_first() {
        let buf = b"abc\nprogress 10%\rrecord\nlast\rcut";
        let mut ends = LineEnds::new(buf);
        // By hand: `\n` at 3, `\r` at 16, `\n` at 23, `\r` at 28, 32 bytes.
        assert_eq!(ends.line_end(0), (3, false));
        assert_eq!(ends.line_end(4), (23, true));
        // From past the `\r` (a shape's compared bytes hold none): no `\r` seen.
        assert_eq!(ends.line_end(17), (23, false));
        // A `\r` with no `\n` after it, then no line end at all: the buffer's end.
        assert_eq!(ends.line_end(24), (32, true));
        assert_eq!(ends.line_end(29), (32, false));
        assert_eq!(ends.line_end(32), (32, false));
    }

    #[test]
    fn ends_at_every_place_are_the_definitions() {
        // Buffers of every length up to 300 (below, at and past memchr's 32-byte vectors
        // and its 64-byte loop), a `\n` or `\r` at each place and another three bytes
        // later, asked from every offset in order and, with a fresh reader, backwards (a
        // `\r` searched for from a later place is not reused for an earlier one).
        let mut compared = 0;
        for len in 0..300usize {
            for first in (0..=len).step_by(7) {
                for (a, b) in [(b'\n', b'\r'), (b'\r', b'\n'), (b'\r', b'\r')] {
                    let mut hay: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                    if first < len {
                        hay[first] = a;
                        if first + 3 < len {
                            hay[first + 3] = b;
                        }
                    }
                    let mut forwards = LineEnds::new(&hay);
                    for from in 0..=len {
                        let want = by_definition(&hay, from);
                        assert_eq!(forwards.line_end(from), want, "len {len}, from {from}");
                        compared += 1;
                    }
                    let mut backwards = LineEnds::new(&hay);
                    for from in (0..=len).rev() {
                        let want = by_definition(&hay, from);
                        assert_eq!(backwards.line_end(from), want, "len {len}, from {from}");
                    }
                }
            }
        }
        assert!(compared > 1_000_000, "{compared}");
    }

    #[test]
    fn a_long_line_ends_past_its_carriage_return() {
        // A 1,000-byte line with a `\r` 700 bytes in: the line read from 0 holds it, the
        // rest of it read from 701 (as a shape's fit reads on) does not.
        let mut buf = vec![b'x'; 1_000];
        buf[700] = b'\r';
        buf.extend_from_slice(b"\nnext\n");
        let mut ends = LineEnds::new(&buf);
        assert_eq!(ends.line_end(0), (1_000, true));
        assert_eq!(ends.line_end(701), (1_000, false));
        assert_eq!(ends.line_end(1_001), (1_005, false));
        assert_eq!(ends.line_end(1_006), (1_006, false));
    }
}
