//! The block prefilter's hits, searched for as the lines ask.
//!
//! A block's lines were once all searched in one pass before any was read. A server's
//! traffic is now mostly answered by a traffic shape (`shape`), which needs no search,
//! so the prefilter runs only over the lines that ask: from the first line that asks, a
//! stretch ahead is searched at once, which doubles while the lines keep asking (a
//! start-up, a rank file: the whole block in a few passes, as before) and shrinks to the
//! asking line alone where the lines between were answered without (a line of other
//! noise among the scheduler's steps is searched alone, the steps are not).

use crate::grammar::GrammarSet;

/// The stretch past its line a search covers when lines ask densely: a line of traffic
/// is ~100-250 bytes. It doubles with every search while they do.
const FIRST_AHEAD: usize = 256;

/// Lines answered without a search between two that ask, from which on the second is
/// searched alone. A search of one ~100-byte line cost ~650-950 instructions (the
/// searcher's set-up), the block-wide search ~2 a byte: a line alone is the cheaper
/// where the lines between hold more than ~400 bytes. (Measured before uvicorn's access
/// lines were traffic: vLLM's, one in two or three lines, went in stretches, SGLang's,
/// one in twenty, alone.)
const SPARSE: u32 = 4;

pub(super) struct Hits<'a> {
    gs: &'a GrammarSet,
    buf: &'a [u8],
    /// The hits of `buf[from..to]`, in order.
    found: Vec<usize>,
    /// The first hit of `found` not before the last line asked about.
    next: usize,
    from: usize,
    to: usize,
    /// How far past an asking line's end the next search runs.
    ahead: usize,
    /// Lines answered without a search since a line last asked.
    skipped: u32,
}

impl<'a> Hits<'a> {
    pub(super) fn new(gs: &'a GrammarSet, buf: &'a [u8]) -> Self {
        Hits {
            gs,
            buf,
            found: Vec::new(),
            next: 0,
            from: 0,
            to: 0,
            // A block's first lines ask before any shape is kept: a block of traffic is
            // not searched whole for them.
            ahead: 0,
            skipped: 0,
        }
    }

    /// Whether the line `buf[start..end]` holds a hit. Lines are asked about in order.
    pub(super) fn in_line(&mut self, start: usize, end: usize) -> bool {
        if start < self.from || end > self.to {
            if self.skipped >= SPARSE {
                self.ahead = 0;
            }
            let to = end
                .max(start.saturating_add(self.ahead))
                .min(self.buf.len());
            // From the line's start: a fragment that crossed the last stretch's end is
            // found whole.
            self.gs
                .literal_hits_in(self.buf, start..to, &mut self.found);
            (self.from, self.to, self.next) = (start, to, 0);
            self.ahead = self.ahead.saturating_mul(2).max(FIRST_AHEAD);
        }
        self.skipped = 0;
        while self.found.get(self.next).is_some_and(|&h| h < start) {
            self.next += 1;
        }
        self.found.get(self.next).is_some_and(|&h| h < end)
    }

    /// A line was answered without a search.
    pub(super) fn skipped(&mut self) {
        self.skipped = self.skipped.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hits `Hits` finds for the lines of `buf` asked about (`ask[k]`: line `k` is
    /// asked, else answered without a search), and the hits a search of the whole block
    /// finds in them.
    fn asked_and_whole(
        gs: &GrammarSet,
        buf: &[u8],
        ask: impl Fn(usize) -> bool,
    ) -> (Vec<bool>, Vec<bool>) {
        let whole = gs.literal_hits(buf);
        let mut hits = Hits::new(gs, buf);
        let (mut asked, mut expected) = (Vec::new(), Vec::new());
        let mut at = 0;
        for (k, line) in buf.split(|&b| b == b'\n').enumerate() {
            let (s, e) = (at, at + line.len());
            at = e + 1;
            if !ask(k) {
                hits.skipped();
                continue;
            }
            asked.push(hits.in_line(s, e));
            expected.push(whole.iter().any(|&h| h >= s && h < e));
        }
        (asked, expected)
    }

    #[test]
    fn a_stretch_that_ends_inside_a_literal_finds_it_with_its_line() {
        let gs = GrammarSet::builtin().expect("built-in grammars compile");
        // The first line is searched alone, the second from its start 256 bytes on, into
        // the third, whose literal that stretch ends in, at each of its places (by hand:
        // the second line is k bytes and its newline, so 255 - k of the third's 33 bytes
        // are in the stretch: all for k = 222, none for k = 255).
        for k in 215..=255 {
            let text = format!(
                "[2026-12-06 08:00:00 TP0] Decode batch. #running-req: 1\n{}\nKV Cache is allocated. #tokens: 5\n",
                "y".repeat(k)
            );
            let (asked, expected) = asked_and_whole(&gs, text.as_bytes(), |_| true);
            assert_eq!(expected, [false, false, true, false], "k = {k}");
            assert_eq!(asked, expected, "k = {k}");
        }
    }

    #[test]
    fn lines_asked_among_lines_answered_without_find_the_hits_a_whole_search_finds() {
        let gs = GrammarSet::builtin().expect("built-in grammars compile");
        // In sixes: an event line, four traffic lines answered without a search (their
        // shape's), and an event line whose literal ends it, of a growing length.
        let mut text = String::new();
        for i in 0..600 {
            let line = match i % 6 {
                0 => format!(
                    "[2026-12-06 08:00:{:02} TP{}] Load weight begin. avail mem=7{i}.5 GB",
                    i % 60,
                    i % 8
                ),
                5 => format!("{} KV Cache is allocated", "x".repeat(i / 2)),
                _ => format!(
                    "[2026-12-06 08:00:{:02} TP0] Decode batch. #running-req: {i}",
                    i % 60
                ),
            };
            text.push_str(&line);
            text.push('\n');
        }
        let (asked, expected) =
            asked_and_whole(&gs, text.as_bytes(), |k| !(1..=4).contains(&(k % 6)));
        // Every event line (2 of 6: 200) holds a hit.
        assert_eq!(expected.iter().filter(|&&h| h).count(), 200);
        assert_eq!(asked, expected);
    }
}
