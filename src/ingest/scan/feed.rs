//! Lines fed as they are written (`watch`): each piece of whole lines is one block,
//! scanned and merged as [`super::scan_stream`] merges its blocks, so what crosses two
//! pieces (a traceback written in two goes) is settled as it is across blocks.

use super::block::scan_block;
use super::merge::Merger;
use super::{EventBudget, SourceScan};
use crate::grammar::GrammarSet;

pub(crate) struct LineFeed<'a> {
    merger: Merger<'a>,
}

impl<'a> LineFeed<'a> {
    pub(crate) fn new(gs: &'a GrammarSet, source: usize, budget: &'a EventBudget) -> Self {
        LineFeed {
            merger: Merger::new(gs, source, budget),
        }
    }

    /// Scans whole lines (`lines` ends with a newline), or with `inside_line` the first
    /// part of a line longer than a block, whose rest comes in the next piece.
    pub(crate) fn push(&mut self, lines: &[u8], inside_line: bool) {
        if lines.is_empty() {
            return;
        }
        let m = &mut self.merger;
        let gs = m.grammars();
        if m.out.detected.is_empty() && m.line_base == 0 {
            m.out.detected = gs.detect(&lines[..lines.len().min(64 << 10)]);
        }
        let mut r = scan_block(gs, lines, false, m.budget(), None);
        r.ends_inside_line = inside_line;
        if inside_line {
            m.out.counts.split_long_lines += 1;
        }
        m.out.bytes += lines.len() as u64;
        m.push_block(r, lines, false);
    }

    /// What the lines fed so far gave, as `scan_stream` returns it for a whole file.
    pub(crate) fn scan(&self) -> SourceScan {
        self.merger.snapshot()
    }

    /// Lines read so far.
    pub(crate) fn lines(&self) -> u64 {
        self.merger.line_base
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// `watch` reads what a server has written so far, often a line or a few at a time:
    /// fed one line per piece, every log under tests/verdicts (most of them failures with
    /// their tracebacks: SGLang's scheduler, vLLM's workers, bare stderr, compose and
    /// kubectl streams) gives the events and counts of the whole file read at once.
    #[test]
    fn a_log_fed_a_line_at_a_time_reads_as_the_whole_file() {
        let gs = GrammarSet::builtin().expect("built-in grammars compile");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/verdicts");
        let mut fed = 0;
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .expect("tests/verdicts")
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read(&path).expect("a log");
            if text.last() != Some(&b'\n') {
                continue; // a cut last line: `watch` holds it until its newline comes
            }
            let whole = super::super::scan_reader(&gs, 0, &text[..], text.len() + 1, |_| {})
                .expect("in memory");
            let budget = EventBudget::default();
            let mut feed = LineFeed::new(&gs, 0, &budget);
            for line in text.split_inclusive(|&b| b == b'\n') {
                feed.push(line, false);
            }
            let pieces = feed.scan();
            let at = path.display();
            assert_eq!(pieces.counts, whole.counts, "{at}");
            assert_eq!(pieces.events, whole.events, "{at}");
            fed += 1;
        }
        // 67 of the 75 logs end with a newline.
        assert!(fed >= 60, "{fed} logs fed");
    }
}
