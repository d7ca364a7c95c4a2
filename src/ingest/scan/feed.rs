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
