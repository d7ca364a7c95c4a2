//! The whole dates a block's lines print, kept for its events whose stamps print none.

use crate::grammar::GrammarSet;

use super::block::{BlockScan, PendingEvent};

/// The whole dates the block's lines print (a `date` or `stamp` prefix, on any line: glog's
/// `Log file created at:` header gives no event) up to its last event whose stamp printed
/// no date in a grammar that prints dates too (`datable`), which the loader dates from the
/// nearest of them before it. A second pass, and only over blocks holding such an event:
/// the lines of other logs (vLLM's, whose every stamp lacks a year) are read once. A date
/// like the one kept before it adds nothing and is not kept, so a file of dated traffic
/// costs a few entries, not one per line.
pub(super) fn dated_lines(
    gs: &GrammarSet,
    buf: &[u8],
    events: &[PendingEvent],
) -> Vec<(u64, chrono::NaiveDateTime)> {
    let last = (events.iter().rev())
        .find(|pe| pe.m.prefix.as_ref().is_some_and(|p| p.datable))
        .map(|pe| pe.line_in_block);
    match last {
        Some(last) if gs.has_dating_prefixes() => printed_dates(gs, buf, last),
        _ => Vec::new(),
    }
}

/// The whole dates lines 1..=`up_to` of `buf` print, each kept only where the date
/// changes.
fn printed_dates(gs: &GrammarSet, buf: &[u8], up_to: u64) -> Vec<(u64, chrono::NaiveDateTime)> {
    let mut out: Vec<(u64, chrono::NaiveDateTime)> = Vec::new();
    let (mut start, mut line_no) = (0usize, 0u64);
    while start < buf.len() && line_no < up_to {
        let end = memchr::memchr(b'\n', &buf[start..]).map_or(buf.len(), |p| start + p);
        line_no += 1;
        if let Some(t) = gs.printed_date(&buf[start..end]) {
            if out.last().is_none_or(|(_, p)| p.date() != t.date()) {
                out.push((line_no, t));
            }
        }
        start = end + 1;
    }
    out
}

/// A file's first block (`line_base` 0) that holds no event to date keeps the whole dates
/// its first lines print (glog's `Log file created at:` header): a file followed as it is
/// written, or read in blocks, gets its dateless events in later blocks, which
/// `dated_lines` reads only up to their own lines.
pub(super) fn date_from_head(gs: &GrammarSet, r: &mut BlockScan, buf: &[u8], line_base: u64) {
    /// A header is among a file's first lines; a file that starts without one has none.
    const HEAD_LINES: u64 = 16;
    if line_base == 0 && r.dated.is_empty() && gs.has_dating_prefixes() {
        r.dated = printed_dates(gs, buf, HEAD_LINES);
    }
}
