//! A line that gave no event: a record (the prefix it names), noise, a line of a
//! traceback, or one not understood.

use crate::base::text::{clean_line, is_blank, peel_wrapper};
use crate::grammar::GrammarSet;

use super::super::traceback::{
    continues_traceback, end_prefixed_traceback, end_traceback_at_record, gather_loose_traceback,
    resume_traceback, FirstRecord, Tb, TRACEBACK_HEADER,
};
use super::super::{push_detail, UnknownLine, MAX_DETAIL, MAX_UNKNOWN_SAMPLES};
use super::{note_prefix, BlockScan, LineShapes, ScanLine};

/// What `classify_plain` found a line to be, where a shape may answer the lines like it.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Plain {
    /// A noise record read as it stands (no wrapper peeled): a `Shape` may be kept of it.
    NoiseRecord,
    /// A bare line (`BareShapes`), which held a noise literal or not.
    Bare { noise: bool },
    /// Anything else.
    Other,
}

/// Reads a line the prefilter did not hit and no noise record's shape fitted (`window`:
/// the block from the line's start): by a bare line's shape if one fits, else by
/// `classify_plain`, keeping the shape of what it read where one may be kept.
///
/// Not inlined: in the scan's loop, its branches tipped the compiler into a slower form
/// of the loop around the noise records' shapes (1 % more instructions on the shared
/// log), where the call costs a few instructions a line that comes here.
#[inline(never)]
pub(super) fn read_plain(
    gs: &GrammarSet,
    window: &[u8],
    line: &ScanLine,
    shapes: &mut LineShapes,
    out: &mut BlockScan,
    open_tb: &mut Option<Tb>,
) {
    let ScanLine {
        raw,
        has_cr,
        line_no,
        ..
    } = *line;
    let bare_may_fit = shapes.bare_exact.is_some() && !has_cr && out.ends_nothing(open_tb);
    if let Some(noise) = bare_may_fit
        .then(|| shapes.bare.fit(window, raw.len()))
        .flatten()
    {
        classify_bare(out, open_tb, raw, line_no, noise);
        return;
    }
    match classify_plain(gs, raw, has_cr, line_no, out, open_tb) {
        Plain::NoiseRecord if !has_cr => shapes.records.keep_record(gs, raw, &out.memo),
        Plain::Bare { noise } if !has_cr => {
            if let Some(exact) = shapes.bare_exact {
                shapes.bare.keep(raw, exact, noise);
            }
        }
        _ => {}
    }
}

/// Reads a line that gave no event (a record, noise, a traceback's, other). `has_cr`:
/// `raw` holds a `\r`.
pub(super) fn classify_plain(
    gs: &GrammarSet,
    raw: &[u8],
    has_cr: bool,
    line_no: u64,
    out: &mut BlockScan,
    open_tb: &mut Option<Tb>,
) -> Plain {
    // A `\r`-separated bar glued to a record: classify by the last segment, as a terminal
    // would show it.
    let last = if has_cr { last_segment(raw) } else { raw };
    if is_blank(last) {
        if out.seen_record {
            out.counts.blank += 1;
        } else {
            out.lead_lines += 1;
            out.lead_counts.blank += 1;
        }
        return Plain::Other;
    }
    // Most lines start like a record: peel wrappers only when the cheap test fails.
    let plain_record = gs.starts_record(last, &mut out.memo);
    let (inner, node) = if plain_record {
        (last, None)
    } else {
        peel_wrapper(last)
    };
    // No wrapper peeled: the line itself was just tested.
    let peeled = inner.len() != last.len();
    if plain_record || (peeled && gs.starts_record(inner, &mut out.memo)) {
        // A record's prefix is parsed here only while a traceback is open (rare: a line
        // from the same process continues it). The block's first record takes that
        // reading, or keeps its line for the merge, which reads it only if the block
        // before left a traceback open (`FirstRecord::unread`).
        let mut read = None;
        if let Some(tb) = open_tb.as_ref() {
            let (prefix, message) = read.get_or_insert_with(|| read_record(gs, last));
            if continues_traceback(out, Some(tb), prefix.as_ref(), message, true) {
                out.counts.continuation += 1;
                tb.grow(out, message);
                return Plain::Other;
            }
        }
        if !out.seen_record {
            out.first_record = Some(match &read {
                Some((prefix, message)) => FirstRecord::of(prefix.as_ref(), message),
                None => FirstRecord::unread(last),
            });
        }
        end_traceback_at_record(out, open_tb, node);
        out.seen_record = true;
        out.loose_tb.clear();
        // A record that gave no event but holds a `[[noise]]` literal is noise, as its
        // grammar declared: a known line deliberately ignored, not an "other record".
        let noise = gs.is_noise(last, &mut out.memo);
        if noise {
            out.counts.noise += 1;
        } else {
            out.counts.records += 1;
        }
        note_prefix(out, inner, line_no);
        return if noise && plain_record {
            Plain::NoiseRecord
        } else {
            Plain::Other
        };
    }
    if node.is_none() && !peeled && out.ends_nothing(open_tb) {
        let noise = gs.is_noise(last, &mut out.memo);
        classify_bare(out, open_tb, last, line_no, noise);
        return Plain::Bare { noise };
    }
    // Inside a traceback everything up to the next record belongs to it, including lines
    // that would be noise on their own (`Traceback (most recent call last):`).
    resume_traceback(out, open_tb, node);
    end_prefixed_traceback(out, open_tb);
    if let Some(tb) = open_tb.as_ref() {
        out.tb_prefixed.get_or_insert(false);
        out.counts.continuation += 1;
        tb.grow(out, &clean_line(last));
        return Plain::Other;
    }
    if out.seen_record {
        gather_loose_traceback(out, last);
    } else if last.starts_with(TRACEBACK_HEADER.as_bytes()) {
        out.lead_tb_header = true;
    }
    if gs.is_noise(last, &mut out.memo) {
        if out.seen_record {
            out.counts.noise += 1;
        } else {
            // Before the block's first record it may still continue a traceback of the
            // previous block (the merge decides), so its text is kept like any lead line.
            out.lead_lines += 1;
            out.lead_counts.noise += 1;
            let text = clean_line(last);
            if out.lead_text.len() + text.len() < MAX_DETAIL {
                push_detail(&mut out.lead_text, &text);
            }
        }
        return Plain::Other;
    }
    classify_other(out, last, inner, line_no);
    Plain::Other
}

/// What `classify_plain` does with a bare line once its answers are known (asked, or a
/// bare shape's): after the block's first record, with no traceback open or parked and
/// nothing peeled, the line goes on with none but a loose one.
fn classify_bare(
    out: &mut BlockScan,
    open_tb: &mut Option<Tb>,
    line: &[u8],
    line_no: u64,
    noise: bool,
) {
    end_prefixed_traceback(out, open_tb);
    gather_loose_traceback(out, line);
    if noise {
        out.counts.noise += 1;
    } else {
        classify_other(out, line, line, line_no);
    }
}

/// A record line's prefix, read, and its message (the text after the prefix).
pub(in crate::ingest::scan) fn read_record(
    gs: &GrammarSet,
    line: &[u8],
) -> (Option<crate::grammar::PrefixInfo>, String) {
    let text = clean_line(line);
    let prefix = gs.find_prefix(&text, text.len());
    let message = (prefix.as_ref())
        .and_then(|p| text.get(p.message_start..))
        .unwrap_or("")
        .to_owned();
    (prefix, message)
}

/// A line that is no record, no noise and not inside a traceback: a continuation if
/// indented, else not understood (kept as an example).
fn classify_other(out: &mut BlockScan, last: &[u8], inner: &[u8], line_no: u64) {
    // Behind a wrapper (`[pod/x/c]   File …`), the line as its process printed it.
    let indented = inner.first().is_some_and(|b| b.is_ascii_whitespace());
    if !out.seen_record {
        out.lead_lines += 1;
        let text = clean_line(last);
        if out.lead_text.len() + text.len() < MAX_DETAIL {
            push_detail(&mut out.lead_text, &text);
        }
        if indented {
            out.lead_counts.continuation += 1;
        } else {
            out.lead_counts.unknown += 1;
            if out.lead_unknown.len() < MAX_UNKNOWN_SAMPLES {
                out.lead_unknown.push(UnknownLine {
                    line: line_no,
                    text: text.chars().take(512).collect(),
                });
            }
        }
        return;
    }
    if indented {
        out.counts.continuation += 1;
        return;
    }
    out.counts.unknown += 1;
    if out.unknown.len() < MAX_UNKNOWN_SAMPLES {
        out.unknown.push(UnknownLine {
            line: line_no,
            // An example, not the record: a few hundred bytes are enough to recognise it.
            text: clean_line(&last[..last.len().min(512)]),
        });
    }
}

/// The last non-blank `\r`-separated segment of a line (the whole line when it has no
/// `\r`, as nearly every line has not). `memrchr` finds the separators with SIMD: a
/// byte-at-a-time split of every traffic line was a third of scanning a large log.
fn last_segment(raw: &[u8]) -> &[u8] {
    let mut end = raw.len();
    while let Some(p) = memchr::memrchr(b'\r', &raw[..end]) {
        let seg = &raw[p + 1..end];
        if !is_blank(seg) {
            return seg;
        }
        end = p;
    }
    // The first segment, or (all segments blank) the line itself, as before.
    let first = &raw[..end];
    if is_blank(first) {
        raw
    } else {
        first
    }
}
