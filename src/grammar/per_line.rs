//! What the block scan asks of every line, and of the lines its prefilter hit: the
//! prefilter's hits, whether a line starts a record, holds a noise literal, is traffic,
//! and which events its literals point at. The scanners are built here too.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Anchored, Input, StartKind};

use super::any_literal::AnyLiteral;
use super::block_prefilter::{
    fragment_groups, prefilter_automata, traffic_shapes_are_exact, ScanInputs,
};
use super::{GrammarError, GrammarSet};

/// What the previous lines of a block matched, for the per-line tests of the scan
/// (`GrammarSet::starts_record`, `GrammarSet::is_noise`): traffic repeats one line shape,
/// so a line is first checked for the pattern the last one matched, at the same place,
/// by comparing its bytes; only when it differs is the automaton run. The answer is the
/// same either way (the line holds that pattern there); on the shared benchmark log the
/// two searches were a fifth of the scan.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LineMemo {
    record_start: Option<usize>,
    noise: super::any_literal::LiteralMemo,
}

/// What a noise record's answers rested on (`GrammarSet::record_and_noise_spans`).
pub(crate) struct RecordAndNoise {
    /// The length of the record start the line began with.
    pub(crate) start_len: usize,
    /// Where its noise literal lay (start, end).
    pub(crate) noise: (usize, usize),
    /// The noise literal is a traffic literal, and a traffic shape may answer alone
    /// (`GrammarSet::traffic_shapes`).
    pub(crate) traffic: bool,
}

/// Every event literal in one automaton, for the lines the prefilter hit: a contiguous
/// NFA. A DFA walked a hit line in ~700 fewer instructions but took 18.5 M to build, a
/// quarter of every command's start-up and its longest step at two threads (its table,
/// 1.3 MB for the built-in grammars' 133 literals); the NFA costs more only past ~27,000
/// hit lines (2,000 rank files of 13 events).
pub(super) fn line_automaton(literals: &[&String]) -> Result<AhoCorasick, GrammarError> {
    AhoCorasickBuilder::new()
        .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
        .prefilter(false)
        .build(literals)
        .map_err(|e| GrammarError::Matcher(e.to_string()))
}

/// What the scan asks of every line: the block prefilter, the anchored record starts and
/// the noise literals. The prefilter's fragments avoid the record starts and noise
/// literals, ordinary text on every line (`prefilter_fragments`).
pub(super) struct LineScanners {
    pub(super) prefilter: Vec<AhoCorasick>,
    pub(super) start_ac: AhoCorasick,
    pub(super) noise: AnyLiteral,
    pub(super) traffic_shapes: bool,
    /// `GrammarSet::bare_shape_exact_len`.
    pub(super) bare_exact: Option<usize>,
}

pub(super) fn line_scanners(inputs: &ScanInputs) -> Result<LineScanners, GrammarError> {
    let start_ac = AhoCorasickBuilder::new()
        .start_kind(StartKind::Anchored)
        .build(&inputs.starts)
        .map_err(|e| GrammarError::Matcher(e.to_string()))?;
    let groups = fragment_groups(&inputs.literals, &inputs.ordinary());
    let noise = AnyLiteral::new(&inputs.noise, &inputs.traffic)?;
    let bare_exact =
        (noise.blind_to_digits()).then(|| inputs.starts.iter().map(String::len).max().unwrap_or(0));
    Ok(LineScanners {
        prefilter: prefilter_automata(&groups)?,
        start_ac,
        noise,
        traffic_shapes: traffic_shapes_are_exact(&inputs.literals, &inputs.traffic, &groups),
        bare_exact,
    })
}

impl GrammarSet {
    /// Start offsets, in order, of prefilter fragments in a buffer: every line that holds
    /// an event literal holds one of them (within the literal, so on the same line).
    #[cfg(test)]
    pub(crate) fn literal_hits(&self, buf: &[u8]) -> Vec<usize> {
        let mut hits: Vec<usize> = Vec::new();
        self.literal_hits_in(buf, 0..buf.len(), &mut hits);
        hits
    }

    /// [`GrammarSet::literal_hits`] of `buf[span]`, in place of what `hits` held (offsets
    /// in `buf`). A fragment is found only whole inside `span`: a span that starts at a
    /// line's start and ends at a line's end finds every hit of its lines.
    pub(crate) fn literal_hits_in(
        &self,
        buf: &[u8],
        span: std::ops::Range<usize>,
        hits: &mut Vec<usize>,
    ) {
        hits.clear();
        for ac in &self.prefilter {
            let input = Input::new(buf).span(span.clone());
            hits.extend(ac.find_iter(input).map(|m| m.start()));
        }
        if self.prefilter.len() > 1 {
            hits.sort_unstable();
            hits.dedup();
        }
    }

    /// The (grammar, event, literal offset) candidates a line's literals point at, in
    /// the order events are tried in: the user's grammars before the built-in ones, each
    /// group in load order, events in file order. No candidates when the line is
    /// traffic: a traffic literal begins no later than every event literal it holds.
    pub(crate) fn candidates(&self, text: &str) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        let mut first_traffic = usize::MAX;
        let mut first_event = usize::MAX;
        for m in self.line_literals.find_overlapping_iter(text) {
            let pattern = m.pattern().as_usize();
            if pattern >= self.literal_owner.len() {
                first_traffic = first_traffic.min(m.start());
                continue;
            }
            first_event = first_event.min(m.start());
            for &(g, e) in self.owners(pattern) {
                out.push((g, e, m.start()));
            }
        }
        if first_traffic <= first_event {
            out.clear();
            return out;
        }
        // An event whose literals occur more than once is tried once, at the first.
        out.sort_by_key(|c| (self.is_builtin(c.0), c.0, c.1, c.2));
        out.dedup_by_key(|c| (c.0, c.1));
        out
    }

    pub(crate) fn owners(&self, pattern: usize) -> &[(usize, usize)] {
        self.literal_owner
            .get(pattern)
            .map_or(&[], |v| v.as_slice())
    }

    /// Cheap test on a line's first bytes: does it start like a record of a known family?
    /// This is the per-line work of the scan, so it is one anchored automaton step, not a
    /// regex: a line that starts with `[` is taken as an SGLang-family record here and is
    /// only parsed for real when it carries an event.
    ///
    /// `memo` keeps the pattern the last record started with and the noise literal the
    /// last noise line held, from line to line of a block ([`LineMemo`]).
    pub(crate) fn starts_record(&self, line: &[u8], memo: &mut LineMemo) -> bool {
        let head = &line[..line.len().min(64)];
        let last = memo.record_start.and_then(|i| self.record_starts.get(i));
        if last.is_some_and(|start| crate::base::text::begins_with(head, start)) {
            return true;
        }
        match self.start_ac.find(Input::new(head).anchored(Anchored::Yes)) {
            Some(m) => {
                memo.record_start = Some(m.pattern().as_usize());
                true
            }
            None => false,
        }
    }

    /// What the last yes of `starts_record` and of `is_noise` rested on, as `memo` holds it
    /// after both. `None` when `memo` holds neither.
    pub(crate) fn record_and_noise_spans(&self, memo: &LineMemo) -> Option<RecordAndNoise> {
        let start = self.record_starts.get(memo.record_start?)?.len();
        Some(RecordAndNoise {
            start_len: start,
            noise: self.noise.span_of(memo.noise[0])?,
            traffic: self.traffic_shapes && self.noise.is_traffic(memo.noise[0]),
        })
    }

    /// Where a bare line's shape may answer for a later line (`scan::shape::BareShapes`),
    /// how many of its first bytes the shape compares byte for byte: the longest record
    /// start's length, as the anchored starts read no further and may hold digits
    /// (SGLang's `[2`). `None` where a digit put for another may change whether a line
    /// holds a noise literal (`AnyLiteral::blind_to_digits`).
    pub(crate) fn bare_shape_exact_len(&self) -> Option<usize> {
        self.bare_exact
    }

    /// Whether a line holds a `[[noise]]` literal; `memo` as for [`GrammarSet::starts_record`].
    pub(crate) fn is_noise(&self, line: &[u8], memo: &mut LineMemo) -> bool {
        self.noise.is_match(line, &mut memo.noise)
    }
}
