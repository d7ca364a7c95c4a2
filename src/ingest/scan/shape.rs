//! Line shapes: what a noise record's first bytes showed, kept to answer the lines like
//! it without asking the grammars again.
//!
//! A server's traffic is a few line shapes over and over: `[2026-03-04 10:11:12 TP0]
//! Decode batch. …`, the next one the same but for its digits. Such a line is a record
//! (it begins with a record start), noise (it holds a noise literal) and names its rank
//! (`identity::identity_key`); asking the three took ~400 instructions a line on the shared
//! benchmark log, more than the block prefilter's search. A shape keeps the line's head up
//! to the last byte those answers rest on, and a later line whose head is the same —
//! byte for byte where they rest on it (the record start and the noise literal), else the
//! same or a digit where the kept line had a digit — gets the same answers, its own
//! identity bytes taken from the same place (another rank's, `TP3` for `TP0`: one shape
//! serves every rank of a width). Digits cannot move those answers: none is a bracket, a
//! `:` or a space (what the identity is found by), and the spans read byte for byte are
//! compared byte for byte. So a shape gives the
//! answer the grammars would, never another one; a line it does not fit is asked as
//! before. A shape whose noise literal marks traffic (`traffic = true`) answers one more
//! question: the line gives no event, whatever follows, so the block prefilter is not
//! asked (`hits`; why that answer is the grammars':
//! `block_prefilter::traffic_shapes_are_exact`).

use crate::base::text::is_blank;
use crate::grammar::{GrammarSet, LineMemo};

use super::identity::{closing_bracket, identity_key};

/// How much of a line's head a shape can compare: SGLang's noise literals end near byte
/// 40, vLLM's (`Received request `, `Avg prompt throughput:` behind the process prefix,
/// the stamp and the logger's file and line) near byte 95.
const SPAN: usize = 128;

/// Shapes kept: traffic interleaves a few shapes (vLLM's throughput, request added,
/// received and finished, and access lines: five), and a line that fits none is asked in
/// full and kept, so too few kept made every line pay both. A shape that does not fit is
/// most often told by its last word, a few instructions.
const KEPT: usize = 8;

/// Bare lines' shapes kept: a rank file's progress bars and NCCL lines come in ~10 lengths
/// (a bar's count of one, two and three digits, `100%`), met in the same order file after
/// file; with fewer kept than that, each file's first line of each length pushed out the
/// shape the next file's next one would have fitted. A line that fits none is told
/// by its length, one comparison a shape.
const BARE_KEPT: usize = 24;

/// A shape's head as 8-byte words, read little-endian.
const WORDS: usize = SPAN / 8;

/// One noise record's head and what its answers rest on, as 8-byte words (read
/// little-endian).
#[derive(Clone)]
pub(super) struct Shape {
    /// The kept line's head.
    head: [u64; WORDS],
    /// The bits of each byte that must be the same in a line that fits: all of a byte
    /// compared byte for byte, the high nibble (`3`) where the kept line had a digit
    /// another digit may stand for.
    same: [u64; WORDS],
    /// 0x80 in each byte where the kept line had a digit another digit may stand for.
    any_digit: [u64; WORDS],
    /// How many words hold compared bytes (at most `WORDS`).
    words: usize,
    /// How many bytes are compared.
    compared_len: usize,
    /// Where the line's identity bytes lie (`identity_key`), if it had any.
    key: Option<(usize, usize)>,
    /// Its noise literal marks traffic (`Answers::traffic`).
    traffic: bool,
}

/// What a shape that fits a line says of it.
#[derive(Debug, PartialEq)]
pub(super) struct Fit<'l> {
    /// The line's identity bytes, if the kept line had any.
    pub(super) key: Option<&'l [u8]>,
    /// How many of the line's first bytes the shape compared: none of them ends the line
    /// (each is the kept line's own byte or a digit), so its end lies past them.
    pub(super) len: usize,
    /// The line is traffic whatever its bytes past the shape hold: no event, so the
    /// block prefilter need not be asked (`GrammarSet::record_and_noise_spans`).
    pub(super) traffic: bool,
}

/// The shapes of a block's last noise records (at most `KEPT`).
#[derive(Default)]
pub(super) struct Shapes {
    kept: Vec<Shape>,
    /// The place the next shape takes once `KEPT` are kept: the oldest's.
    next: usize,
}

/// The spans of a noise record that its answers rest on.
struct Answers {
    /// The length of the record start it begins with.
    start_len: usize,
    /// Its noise literal (start, end).
    noise: (usize, usize),
    /// Its identity bytes (start, end), if any.
    key: Option<(usize, usize)>,
    /// Where the bracket that closes its first tag lies, if it begins with one (`[` or
    /// `(`): what the identity is looked for up to.
    close: Option<usize>,
    /// Its noise literal is a traffic literal, and a line that fits is traffic as the
    /// grammars read it (`block_prefilter::traffic_shapes_are_exact`).
    traffic: bool,
}

impl Shapes {
    /// What the shape that fits the line `window` starts with says of it, `None` if none
    /// fits. `window`: the block's bytes from the line's start, at least `SPAN` of them.
    /// The line's end need not be known: a shape compares only bytes that are the kept
    /// line's own or digits, never a `\n` or `\r`, so a line that ends within them does
    /// not fit, and the scan looks for the end of a line that fits past them.
    ///
    /// Inlined into the scan's loop with `Shape::fits`, as the compiler chose until a change
    /// elsewhere in the crate tipped its choice: a call a line cost 5-7 % of `events` on
    /// the shared log.
    #[inline(always)]
    pub(super) fn fit<'l>(&self, window: &'l [u8]) -> Option<Fit<'l>> {
        let head: &[u8; SPAN] = window.get(..SPAN)?.try_into().ok()?;
        let shape = self.kept.iter().find(|s| s.fits(head))?;
        Some(Fit {
            key: shape.key.and_then(|(a, b)| window.get(a..b)),
            len: shape.compared_len,
            traffic: shape.traffic,
        })
    }

    /// Keeps the shape of `line`, a plain noise record (no wrapper, no `\r`) just
    /// classified, with what `memo` says its answers rested on.
    pub(super) fn keep_record(&mut self, gs: &GrammarSet, line: &[u8], memo: &LineMemo) {
        let Some(spans) = gs.record_and_noise_spans(memo) else {
            return;
        };
        // The key is a slice of the line: its place is its offset from the line's start.
        let key = identity_key(line).map(|k| {
            let at = k.as_ptr() as usize - line.as_ptr() as usize;
            (at, at + k.len())
        });
        let answers = Answers {
            start_len: spans.start_len,
            noise: spans.noise,
            key,
            close: closing_bracket(line),
            traffic: spans.traffic,
        };
        self.keep(line, &answers);
    }

    /// Keeps the shape of `line`, a plain noise record (no wrapper, no `\r`) with these
    /// answers; the oldest goes when `KEPT` are kept. A line whose answers rest on
    /// bytes past `SPAN`, or past its end, gives none.
    fn keep(&mut self, line: &[u8], answers: &Answers) {
        let Some(shape) = Shape::of(line, answers) else {
            return;
        };
        keep_in_ring(&mut self.kept, &mut self.next, KEPT, shape);
    }
}

/// Keeps `item` among at most `most` in `kept`: once full, in place of the oldest, at
/// `next`, which moves on.
fn keep_in_ring<T>(kept: &mut Vec<T>, next: &mut usize, most: usize, item: T) {
    if kept.len() < most {
        kept.push(item);
    } else if let Some(oldest) = kept.get_mut(*next) {
        *oldest = item;
        *next = (*next + 1) % most;
    }
}

/// The shapes of a thread's last bare lines (kept from block to block under one grammar
/// set: `block::LEARNED`): lines that start no record and carry no
/// wrapper, read with no traceback open or parked after the block's first record, with no
/// `\r` — a progress bar's steps, NCCL's `Channel` lines, a third of a rank file's lines.
/// What the grammars answer of such a line (no record start, nothing to peel, a noise
/// literal or none) rests on all of it, so a shape keeps the whole line and fits only a
/// line of the same length, the same byte for byte over its first `exact` bytes and past
/// them but for digits, where another digit may stand. That gives the same answers: the
/// anchored record starts read no further than `exact` bytes
/// (`GrammarSet::bare_shape_exact_len`); `peel_wrapper` tells a digit from other bytes
/// but never one digit from another; and the set is built only where the noise literals
/// are blind to digits (`AnyLiteral::blind_to_digits`).
#[derive(Default)]
pub(super) struct BareShapes {
    /// Each shape, and whether its line held a noise literal.
    kept: Vec<(Shape, bool)>,
    /// The place the next shape takes once `BARE_KEPT` are kept: the oldest's.
    next: usize,
    /// The shape that fitted last, tried first: a bar's steps come in a run, and among
    /// shapes of one length (another bar's, an NCCL line's) a misfit costs a few words'
    /// comparison each.
    last_fit: usize,
}

impl BareShapes {
    /// Whether the bare line of `len` bytes that `window` starts with holds a noise
    /// literal, if a kept shape fits it; `window` as for `Shapes::fit`.
    #[inline]
    pub(super) fn fit(&mut self, window: &[u8], len: usize) -> Option<bool> {
        if self.kept.is_empty() {
            return None;
        }
        let head: &[u8; SPAN] = window.get(..SPAN)?.try_into().ok()?;
        let fits = |(s, _): &(Shape, bool)| s.compared_len == len && s.fits(head);
        if let Some(&(_, noise)) = self.kept.get(self.last_fit).filter(|k| fits(k)) {
            return Some(noise);
        }
        // The last fit is asked again below: skipping it cost a compare a shape, more
        // than its one length compare (+1 M instructions of `diff` of 1,024 files).
        for (at, kept) in self.kept.iter().enumerate() {
            if fits(kept) {
                self.last_fit = at;
                return Some(kept.1);
            }
        }
        None
    }

    /// Keeps the shape of `line`, a bare line just read, of which the first `exact` bytes
    /// are compared byte for byte; the oldest goes when `BARE_KEPT` are kept. A line longer
    /// than `SPAN` gives none.
    pub(super) fn keep(&mut self, line: &[u8], exact: usize, noise: bool) {
        let Some(shape) = Shape::of_bare(line, exact) else {
            return;
        };
        keep_in_ring(&mut self.kept, &mut self.next, BARE_KEPT, (shape, noise));
    }
}

/// `bytes` as little-endian words.
fn words_of(bytes: &[u8; SPAN]) -> [u64; WORDS] {
    let mut words = [0u64; WORDS];
    for (i, w) in words.iter_mut().enumerate() {
        *w = word_at(bytes, i);
    }
    words
}

/// The `i`-th 8 bytes of `bytes` as a little-endian word (`i` < `WORDS`).
fn word_at(bytes: &[u8; SPAN], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
    u64::from_le_bytes(b)
}

/// 0x80 in each byte of `w` whose low seven bits are past `9` (0x39): 0x46 added to them
/// sets the top bit from 0x3a on (no carry leaves a byte: 0x7f + 0x46 < 0x100). Of a byte
/// whose high nibble is `3` (what `Shape::same` asks where a digit may stand), exactly
/// those that are no digit.
fn past_nine(w: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const TOP: u64 = 0x8080_8080_8080_8080;
    ((w & LOW7) + 0x4646_4646_4646_4646) & TOP
}

impl Shape {
    fn of(line: &[u8], a: &Answers) -> Option<Shape> {
        // `identity_key` looks for the closing bracket in the first 96 bytes: a line that
        // begins with a bracket is compared up to it, so another line closes it at the
        // same place (a digit is no bracket).
        let opens = matches!(line.first(), Some(b'[' | b'('));
        if opens && a.close.is_none() {
            return None;
        }
        let end = (a.start_len)
            .max(a.noise.1)
            .max(a.key.map_or(0, |k| k.1))
            .max(a.close.map_or(0, |c| c + 1));
        if end > SPAN || end > line.len() || is_blank(&line[..end]) {
            return None;
        }
        // The identity's tags are not among them: another rank's tags of the same width
        // (`TP3` for `TP0`) sit in the same place, and are taken from the line itself.
        let exact = |i: usize| i < a.start_len || (a.noise.0..a.noise.1).contains(&i);
        let mut shape = Shape::comparing(&line[..end], exact);
        shape.key = a.key;
        shape.traffic = a.traffic;
        Some(shape)
    }

    /// The shape that compares `line` (at most `SPAN` bytes): byte for byte where `exact`
    /// says so or the byte is no digit, else any digit for a digit.
    fn comparing(line: &[u8], exact: impl Fn(usize) -> bool) -> Shape {
        let mut head = [0u8; SPAN];
        let mut same = [0u8; SPAN];
        let mut any_digit = [0u8; SPAN];
        head[..line.len()].copy_from_slice(line);
        for (i, &b) in line.iter().enumerate() {
            if !exact(i) && b.is_ascii_digit() {
                any_digit[i] = 0x80;
                same[i] = 0xf0;
            } else {
                same[i] = 0xff;
            }
        }
        Shape {
            head: words_of(&head),
            same: words_of(&same),
            any_digit: words_of(&any_digit),
            words: line.len().div_ceil(8),
            compared_len: line.len(),
            key: None,
            traffic: false,
        }
    }

    /// A bare line's shape (`BareShapes`): the whole line, its first `exact` bytes and
    /// every byte but a digit compared byte for byte.
    fn of_bare(line: &[u8], exact: usize) -> Option<Shape> {
        if line.is_empty() || line.len() > SPAN {
            return None;
        }
        Some(Shape::comparing(line, |i| i < exact))
    }

    /// The last word first, where shapes of one prefix differ (their noise literals): a
    /// shape that does not fit is most often told by it. The others are tested four at a
    /// time, with no branch a word: a four is two 16-byte vectors to the compiler, in any
    /// caller. (Left to a loop over the words before the last, the compiler chose a vector
    /// loop or a branch a word as the code around the scan changed: 4 % of the shared
    /// log's instructions either way.) A four may run past the last word: past `words` a
    /// shape's `same` and `any_digit` are zero, so those words always fit.
    #[inline(always)]
    fn fits(&self, head: &[u8; SPAN]) -> bool {
        let misfit = |i: usize| {
            let w = word_at(head, i);
            ((w ^ self.head[i]) & self.same[i]) | (past_nine(w) & self.any_digit[i])
        };
        let Some(last) = self.words.min(WORDS).checked_sub(1) else {
            return true;
        };
        if misfit(last) != 0 {
            return false;
        }
        let fours = last.div_ceil(4).min(WORDS / 4);
        // Loops, not `Iterator::all`: the compiler left `all`'s loop a call of its own once
        // the scan's loop grew (7 % more instructions on the shared log).
        for f in 0..fours {
            let mut four = 0;
            for j in 0..4 {
                four |= misfit(f * 4 + j);
            }
            if four != 0 {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digit_place_takes_any_digit_and_nothing_else_and_a_kept_byte_only_itself() {
        let first = b"[2026-03-04 10:11:12 TP0] Decode batch. #running-req: 4, #token: 8";
        let mut shapes = Shapes::default();
        shapes.keep(first, &sglang_answers(first));
        // Every byte value in each place of the date (digits at 1-4, 6-7, 9-10, 12-13,
        // 15-16, 18-19; `-`, ` ` and `:` between them), next to bytes that stay: a digit's
        // place fits the ten digits, another place only its own byte. 0x7f-0xff and the
        // bytes around `0`-`9` (`/`, `:`) are among them.
        let mut tried = 0;
        for place in 1..20 {
            let kept_digit = first[place].is_ascii_digit();
            for b in 0..=255u8 {
                let mut line = first.to_vec();
                line[place] = b;
                let fits = shapes.fit(&padded(&line)).is_some();
                let want = if kept_digit {
                    b.is_ascii_digit()
                } else {
                    b == first[place]
                };
                assert_eq!(fits, want, "{b:#04x} at {place}");
                tried += 1;
            }
        }
        assert_eq!(tried, 19 * 256);
    }

    fn sglang_answers(line: &[u8]) -> Answers {
        // By hand, for `[2026-03-04 10:11:12 TP0] Decode batch. …`: the record start `[`
        // (1 byte), the tags ` TP0` at 20..24, `]` at 24, `Decode batch` at 26..38.
        assert_eq!(&line[20..22], b" T");
        assert_eq!(line[24], b']');
        assert_eq!(&line[26..38], b"Decode batch");
        Answers {
            start_len: 1,
            noise: (26, 38),
            key: Some((20, 24)),
            close: Some(24),
            traffic: true,
        }
    }

    #[test]
    fn a_long_shape_rejects_a_line_that_differs_in_any_one_of_its_words() {
        // vLLM's shape of a scheduler line, its noise literal taken to end at byte 90 so that
        // 12 words are compared, the last not at a four's end (by hand: `(EngineCore_DP0
        // pid=4211) INFO 12-06 08:00:01 ` is 46 bytes, `[loggers.py:123] ` 17 more, the
        // literal from 63; `)` at 24).
        let first = b"(EngineCore_DP0 pid=4211) INFO 12-06 08:00:01 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s";
        assert_eq!(&first[63..90], b"Engine 000: Avg prompt thro");
        assert_eq!(first[24], b')');
        let answers = Answers {
            start_len: 1,
            noise: (63, 90),
            key: None,
            close: Some(24),
            traffic: true,
        };
        let mut shapes = Shapes::default();
        shapes.keep(first, &answers);
        assert!(shapes.fit(&padded(first)).is_some());
        // A byte other than a digit changed in each of the 12 words (a digit's place takes
        // any digit): none fits.
        let mut words_tried = 0;
        for word in 0..12 {
            let place = (word * 8..word * 8 + 8)
                .find(|&i| !first[i].is_ascii_digit())
                .expect("each word holds a byte other than a digit");
            let mut line = first.to_vec();
            line[place] = if line[place] == b'#' { b'@' } else { b'#' };
            assert!(
                shapes.fit(&padded(&line)).is_none(),
                "word {word}, byte {place}"
            );
            words_tried += 1;
        }
        assert_eq!(words_tried, 12);
    }

    fn padded(line: &[u8]) -> Vec<u8> {
        let mut w = line.to_vec();
        w.resize(line.len() + SPAN, b'\n');
        w
    }

    #[test]
    fn a_line_that_differs_in_its_digits_fits_and_gives_its_own_identity_place() {
        let first = b"[2026-03-04 10:11:12 TP0] Decode batch. #running-req: 4, #token: 8";
        let mut shapes = Shapes::default();
        shapes.keep(first, &sglang_answers(first));
        let next = b"[2026-03-04 10:11:19 TP0] Decode batch. #running-req: 41, #token: 1";
        let window = padded(next);
        let fit = shapes.fit(&window);
        assert_eq!(fit.map(|f| f.key), Some(Some(&b" TP0"[..])));
        // Compared up to the end of `Decode batch` (byte 38): the line's end lies past it.
        assert_eq!(shapes.fit(&window).map(|f| f.len), Some(38));
        // Another rank of the same width: its own tags, from the same place.
        let other = b"[2026-03-04 10:11:12 TP7] Decode batch. #running-req: 4, #token: 8";
        let window = padded(other);
        let fit = shapes.fit(&window);
        assert_eq!(fit.map(|f| f.key), Some(Some(&b" TP7"[..])));
    }

    #[test]
    fn a_line_that_differs_where_the_answers_rest_does_not_fit() {
        let first = b"[2026-03-04 10:11:12 TP0] Decode batch. #running-req: 4, #token: 8";
        let mut shapes = Shapes::default();
        shapes.keep(first, &sglang_answers(first));
        for other in [
            // Tags of another width.
            &b"[2026-03-04 10:11:12 TP10] Decode batch. #running-req: 4, #token: 8"[..],
            // Another message.
            b"[2026-03-04 10:11:12 TP0] Prefill batch. #new-seq: 1, #new-token: 8",
            // A digit where a letter was: the stamp's `-` held by a digit.
            b"[2026-03-04110:11:12 TP0] Decode batch. #running-req: 4, #token: 8",
            // A letter where a digit was.
            b"[2026-03-04 10:11:1x TP0] Decode batch. #running-req: 4, #token: 8",
            // Cut before the end of the noise literal.
            b"[2026-03-04 10:11:12 TP0] Decode bat",
            // Ended inside the compared bytes, where the kept line had a space or a digit,
            // by a line that goes on as the kept one did.
            b"[2026-03-04 10:11:12 TP0]\nDecode batch. #running-req: 4, #token: 8",
            b"[2026-03-04 10:11:1\r TP0] Decode batch. #running-req: 4, #token: 8",
        ] {
            assert_eq!(
                shapes.fit(&padded(other)),
                None,
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn eight_shapes_are_kept_and_the_oldest_goes() {
        // Nine shapes told apart by a letter of their tags (`TA0` … `TI0`), which is
        // compared byte for byte.
        let mut shapes = Shapes::default();
        let lines: Vec<Vec<u8>> = ('A'..='I')
            .map(|c| format!("[2026-03-04 10:11:12 T{c}0] Decode batch. #token: 1").into_bytes())
            .collect();
        for line in &lines {
            shapes.keep(line, &sglang_answers(line));
        }
        assert_eq!(shapes.fit(&padded(&lines[0])), None);
        for line in &lines[1..] {
            let window = padded(line);
            let fit = shapes.fit(&window);
            assert_eq!(fit.map(|f| f.key), Some(Some(&line[20..24])));
        }
    }

    #[test]
    fn no_shape_past_the_span_or_for_an_unclosed_bracket() {
        let mut shapes = Shapes::default();
        let long = [
            b"[2026-03-04 10:11:12 TP0] ".as_slice(),
            &[b'x'; 120],
            b" Decode batch",
        ]
        .concat();
        let noise_at = long.len() - 12;
        shapes.keep(
            &long,
            &Answers {
                start_len: 1,
                noise: (noise_at, long.len()),
                key: Some((20, 24)),
                close: Some(24),
                traffic: true,
            },
        );
        assert!(shapes.kept.is_empty());
        let line = b"[no close Decode batch and more and more";
        shapes.keep(
            line,
            &Answers {
                start_len: 1,
                noise: (10, 22),
                key: None,
                close: None,
                traffic: true,
            },
        );
        assert!(shapes.kept.is_empty());
    }

    #[test]
    fn a_bare_shape_fits_only_its_own_length_its_first_bytes_and_digits_for_digits() {
        // An NCCL line (85 bytes), its first 14 compared byte for byte (the built-in
        // grammars' longest record start, `[TensorRT-LLM]`).
        let kept = b"gpu-node-000:40000:40007 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/CUMEM/read";
        assert_eq!(kept.len(), 85);
        let mut bare = BareShapes::default();
        bare.keep(kept, 14, true);
        let fit = |bare: &mut BareShapes, line: &[u8]| bare.fit(&padded(line), line.len());
        assert_eq!(fit(&mut bare, kept), Some(true));
        // Another rank's line: digits for digits past byte 14 (`40001:40008 [1]`, `1[1] -> 2[2]`).
        let other = b"gpu-node-000:40001:40008 [1] NCCL INFO Channel 03/0 : 1[1] -> 2[2] via P2P/CUMEM/read";
        assert_eq!(fit(&mut bare, other), Some(true));
        // A digit changed within the first 14 bytes (`gpu-node-001`, byte 11), a digit for
        // a letter (`P2P` to `P3P`), a byte more (`Channel 103/0`), a byte less.
        let mut node = kept.to_vec();
        node[11] = b'1';
        assert_eq!(fit(&mut bare, &node), None);
        let mut letter = kept.to_vec();
        let p2p = kept.windows(3).position(|w| w == b"P2P").unwrap();
        letter[p2p + 1] = b'x';
        assert_eq!(fit(&mut bare, &letter), None);
        let mut longer = kept.to_vec();
        longer.insert(47, b'1');
        assert_eq!(fit(&mut bare, &longer), None);
        assert_eq!(fit(&mut bare, &kept[..84]), None);
        // A longer line that begins with the kept one: all the shape's bytes are its own.
        let extended = [&kept[..], b" (retry 2)"].concat();
        assert_eq!(fit(&mut bare, &extended), None);
        // A shape of each length answers for its own; the one that fitted last is asked
        // first, and the others still fit.
        let bar = b"Loading safetensors checkpoint shards:  14% Completed | 24/163 [00:04<00:23, 7.01it/s]";
        bare.keep(bar, 14, false);
        assert_eq!(fit(&mut bare, b"Loading safetensors checkpoint shards:  19% Completed | 32/163 [00:05<00:21, 7.01it/s]"), Some(false));
        assert_eq!(bare.last_fit, 1);
        assert_eq!(fit(&mut bare, other), Some(true));
        assert_eq!(bare.last_fit, 0);
        // A line longer than a shape compares keeps none.
        let mut long = BareShapes::default();
        long.keep(&[b'x'; SPAN + 1], 14, false);
        assert!(long.kept.is_empty());
        // Past `BARE_KEPT` the oldest goes first.
        let mut many = BareShapes::default();
        for n in 0..=BARE_KEPT {
            many.keep(&vec![b'a'; n + 1], 14, false);
        }
        assert_eq!(many.kept.len(), BARE_KEPT);
        assert_eq!(many.fit(&padded(b"a"), 1), None);
        assert_eq!(many.fit(&padded(b"aa"), 2), Some(false));
    }
}
