//! Log text made safe: decoded, stripped of colour codes and control sequences.
//!
//! Log lines reach terminals through rankscope; an escape sequence in a log (a colour code,
//! or something hostile) must never be passed through. Everything that prints log text
//! goes through `clean_line` or `sanitize`.

use std::sync::LazyLock;

/// [`clean_line`] without a copy when the line is printable ASCII already, as nearly
/// every log line is: the scan and detection look at many lines they keep nothing of.
pub(crate) fn clean_cow(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    if is_printable_ascii(bytes) {
        if let Ok(s) = std::str::from_utf8(bytes) {
            return std::borrow::Cow::Borrowed(s.trim_end());
        }
    }
    std::borrow::Cow::Owned(clean_line(bytes))
}

/// Every byte printable ASCII or a tab: nothing for [`sanitize`] to remove.
///
/// Tested 32 bytes at a time with no exit inside a chunk, which the compiler turns into
/// vector compares: the byte-at-a-time `all` took ~1,400 instructions an event line of
/// the shared bench's rank files, this ~90, and the scan keeps every event line's text.
fn is_printable_ascii(bytes: &[u8]) -> bool {
    // 0x20..0x7f as one unsigned compare; a byte's misfit as 0 or 1, or-ed over a chunk.
    let misfit = |b: u8| u8::from(b.wrapping_sub(0x20) >= 0x5f && b != b'\t');
    let fits = |chunk: &[u8]| chunk.iter().fold(0, |acc, &b| acc | misfit(b)) == 0;
    if bytes.len() < 32 {
        return bytes.iter().all(|&b| misfit(b) == 0);
    }
    let mut chunks = bytes.chunks_exact(32);
    // The last 32 bytes as one more chunk, over bytes already tested: a byte loop over the
    // rest cost more than the chunks of a line of a hundred bytes.
    chunks.all(fits) && fits(&bytes[bytes.len() - 32..])
}

/// Decodes bytes (invalid UTF-8 becomes U+FFFD), removes ANSI escape sequences — also the
/// ones whose ESC byte was already replaced by U+FFFD in a copy — and every other control
/// character except tab, and trims trailing white space.
pub fn clean_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    sanitize(&text)
}

/// A path as it is shown: its name can hold any byte but `/` and NUL, escape sequences
/// included, and it reaches the terminal, the notes and the JSON this way only.
pub fn shown_path(path: &std::path::Path) -> String {
    sanitize(&path.display().to_string())
}

/// A log's text made safe to print: escape sequences, control and bidi characters removed,
/// trailing space trimmed (the one gate every log byte passes before a terminal or a
/// report).
pub fn sanitize(text: &str) -> String {
    // Most log lines are printable ASCII: nothing to remove, one copy (the loop below,
    // char by char, was 4 % of loading 8,192 files).
    if is_printable_ascii(text.as_bytes()) {
        return text.trim_end().to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let after = &rest[c.len_utf8()..];
        if c == '\u{1b}' {
            rest = skip_escape(after);
            continue;
        }
        if c == '\u{fffd}' {
            // A colour code whose ESC was replaced in a copy: only `[digits;…m` counts.
            if let Some(body) = after.strip_prefix('[') {
                let params = body
                    .bytes()
                    .take_while(|b| b.is_ascii_digit() || *b == b';')
                    .count();
                if body.as_bytes().get(params) == Some(&b'm') {
                    rest = &body[params + 1..];
                    continue;
                }
            }
        }
        if c == '\t' || !(c.is_control() || is_bidi_override(c)) {
            out.push(c);
        }
        rest = after;
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out
}

/// Skips the body of an escape sequence that started with ESC.
fn skip_escape(s: &str) -> &str {
    let b = s.as_bytes();
    match b.first() {
        // CSI: parameters and intermediates, then one final byte in 0x40..=0x7e.
        Some(b'[') => {
            let mut i = 1;
            while i < b.len() && (0x20..0x40).contains(&b[i]) {
                i += 1;
            }
            if i < b.len() && (0x40..=0x7e).contains(&b[i]) {
                i += 1;
            }
            &s[i..]
        }
        // OSC: up to BEL or ESC \.
        Some(b']') => {
            let mut i = 1;
            while i < b.len() {
                if b[i] == 0x07 {
                    return &s[i + 1..];
                }
                if b[i] == 0x1b && b.get(i + 1) == Some(&b'\\') {
                    return &s[i + 2..];
                }
                i += 1;
            }
            ""
        }
        Some(c) if c.is_ascii() => &s[1..],
        _ => s,
    }
}

/// Characters that reorder what a terminal shows (Trojan-source style): dropped.
fn is_bidi_override(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Terminal columns `s` takes (wide characters count two, combining marks none).
pub fn columns(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// Cuts to `width` terminal columns, the last of them `…` when anything was cut.
pub(crate) fn truncate(s: &str, width: usize) -> String {
    if columns(s) <= width {
        return s.to_string();
    }
    let room = width.saturating_sub(1);
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// Reads UTF-16 text (after its byte-order mark) as UTF-8, as ripgrep does: logs
/// written by Windows tools or PowerShell redirection are UTF-16. Unpaired surrogates
/// become U+FFFD, as lossy UTF-8 decoding does elsewhere.
pub(crate) struct Utf16Reader<R> {
    inner: R,
    big_endian: bool,
    /// Encoded UTF-8 not yet handed out.
    out: Vec<u8>,
    out_pos: usize,
    /// A byte of a code unit whose other byte has not been read yet.
    odd: Option<u8>,
    /// A high surrogate waiting for its low half.
    high: Option<u16>,
    done: bool,
}

impl<R: std::io::Read> Utf16Reader<R> {
    /// `inner` starts after the byte-order mark.
    pub(crate) fn new(inner: R, big_endian: bool) -> Self {
        Utf16Reader {
            inner,
            big_endian,
            out: Vec::new(),
            out_pos: 0,
            odd: None,
            high: None,
            done: false,
        }
    }

    fn push_unit(&mut self, u: u16) {
        let emit = |c: char, out: &mut Vec<u8>| {
            let mut b = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        };
        if let Some(h) = self.high.take() {
            if (0xdc00..0xe000).contains(&u) {
                let c = 0x10000 + (((h as u32) - 0xd800) << 10) + ((u as u32) - 0xdc00);
                emit(char::from_u32(c).unwrap_or('\u{fffd}'), &mut self.out);
                return;
            }
            emit('\u{fffd}', &mut self.out);
        }
        if (0xd800..0xdc00).contains(&u) {
            self.high = Some(u);
        } else {
            emit(
                char::from_u32(u as u32).unwrap_or('\u{fffd}'),
                &mut self.out,
            );
        }
    }
}

impl<R: std::io::Read> std::io::Read for Utf16Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.out_pos == self.out.len() && !self.done {
            self.out.clear();
            self.out_pos = 0;
            let mut raw = [0u8; 8192];
            let n = self.inner.read(&mut raw)?;
            if n == 0 {
                self.done = true;
                if self.high.take().is_some() || self.odd.take().is_some() {
                    self.out.extend_from_slice("\u{fffd}".as_bytes());
                }
                break;
            }
            let mut bytes = &raw[..n];
            if let Some(first) = self.odd.take() {
                let pair = [first, bytes[0]];
                let u = if self.big_endian {
                    u16::from_be_bytes(pair)
                } else {
                    u16::from_le_bytes(pair)
                };
                self.push_unit(u);
                bytes = &bytes[1..];
            }
            let mut units = bytes.chunks_exact(2);
            for pair in &mut units {
                let pair = [pair[0], pair[1]];
                let u = if self.big_endian {
                    u16::from_be_bytes(pair)
                } else {
                    u16::from_le_bytes(pair)
                };
                self.push_unit(u);
            }
            self.odd = units.remainder().first().copied();
        }
        let n = buf.len().min(self.out.len() - self.out_pos);
        buf[..n].copy_from_slice(&self.out[self.out_pos..self.out_pos + n]);
        self.out_pos += n;
        Ok(n)
    }
}

/// `hay` begins with `prefix`, compared in place: the scan compares a few bytes of every
/// line with what the line before held (a record start, a noise literal, a rank's tags),
/// and `starts_with` calls libc's `memcmp`, whose call costs more than comparing them
/// (three calls were 5 % of scanning a serving log). Up to 32 bytes: a byte loop below 4,
/// two overlapping 4-byte words from 4 (a rank's tags, ` TP0`, are 4 bytes and compared on
/// every line), two 8-byte words from 8, four from 17 (vLLM's process names, `Worker_TP0
/// pid=4210`, are 19 to 24 bytes, compared on every line: `memcmp` was 6 % of scanning a
/// vLLM log); longer ones go to `memcmp`.
#[inline]
pub(crate) fn begins_with(hay: &[u8], prefix: &[u8]) -> bool {
    let n = prefix.len();
    let Some(head) = hay.get(..n) else {
        return false;
    };
    let word = |s: &[u8], at: usize| {
        s.get(at..at + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map(u64::from_ne_bytes)
    };
    let half = |s: &[u8], at: usize| {
        s.get(at..at + 4)
            .and_then(|w| <[u8; 4]>::try_from(w).ok())
            .map(u32::from_ne_bytes)
    };
    match n {
        0..4 => head.iter().zip(prefix).all(|(a, b)| a == b),
        4..8 => half(head, 0) == half(prefix, 0) && half(head, n - 4) == half(prefix, n - 4),
        8..=16 => word(head, 0) == word(prefix, 0) && word(head, n - 8) == word(prefix, n - 8),
        17..=32 => {
            word(head, 0) == word(prefix, 0)
                && word(head, 8) == word(prefix, 8)
                && word(head, n - 16) == word(prefix, n - 16)
                && word(head, n - 8) == word(prefix, n - 8)
        }
        _ => head == prefix,
    }
}

pub(crate) fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| b.is_ascii_whitespace())
}

/// The line inside its wrappers, and the node the outermost naming wrapper gives: a
/// kubectl pod, a compose service, a journald host. It tells a digit from other bytes but
/// never one digit from another, so a line and its digit-for-digit twin are peeled alike:
/// the scan's bare-line shapes rest on it (`scan::shape::BareShapes`).
pub(crate) fn peel_wrapper(line: &[u8]) -> (&[u8], Option<&[u8]>) {
    peel(line, true)
}

/// The line inside the wrappers that carry it (compose, kubectl, journald, RFC 3339
/// stamps, quotes, boxes) but not inside a Python-logging `… - LEVEL - ` wrapper, whose
/// level an event may read.
pub(crate) fn peel_transport(line: &[u8]) -> &[u8] {
    peel(line, false).0
}

// The searchers `peel` uses, built once (building one per call was a tenth of the scan
// of a run of many small files):
/// ` - `, which every level wrapper holds: one search, where a `memchr` for each `-` of a
/// line's head (a host name's, a date's) was a call per dash.
static SPACED_DASH: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b" - "));
static LEVELS: LazyLock<[memchr::memmem::Finder<'static>; 4]> = LazyLock::new(|| {
    [
        memchr::memmem::Finder::new(b" - INFO - "),
        memchr::memmem::Finder::new(b" - WARNING - "),
        memchr::memmem::Finder::new(b" - ERROR - "),
        memchr::memmem::Finder::new(b" - DEBUG - "),
    ]
});

/// FastChat's bar before the text its logger wrote to stderr.
const STDERR_BAR: &[u8] = b" | stderr | ";

/// Where the first ` | stderr | ` in `head` begins, its first `| ` being at or past `bar`
/// (the first `| ` of `head`): compared in place at each byte from there, where a
/// `memmem` search cost ~100 instructions a line that holds a `| ` (a progress bar's
/// every step), most of which put their first `| ` near the head's end.
fn stderr_bar(head: &[u8], bar: usize) -> Option<usize> {
    let last = head.len().checked_sub(STDERR_BAR.len())?;
    (bar.saturating_sub(1)..=last)
        .find(|&s| head.get(s..).is_some_and(|h| begins_with(h, STDERR_BAR)))
}

fn peel(mut line: &[u8], levels: bool) -> (&[u8], Option<&[u8]>) {
    let mut node: Option<&[u8]> = None;
    for _ in 0..4 {
        let before = line.len();
        // kubectl logs --prefix: `[pod/<name>/<container>] `.
        if let Some(rest) = line.strip_prefix(b"[pod/") {
            if let Some(close) = memchr::memchr(b']', &rest[..rest.len().min(160)]) {
                let inner = &rest[..close];
                if let Some(slash) = memchr::memchr(b'/', inner) {
                    if slash > 0 && rest.get(close + 1) == Some(&b' ') {
                        node = node.or(Some(&inner[..slash]));
                        line = &rest[close + 2..];
                    }
                }
            }
        }
        let head = &line[..line.len().min(64)];
        // docker-compose: `<service>-<n>`, padding, `| ` — a name without inner spaces.
        // (memchr for the bar, not `memmem::find`: that builds a searcher per call, and
        // this runs on most lines that do not start like a record.)
        let mut bar = memchr::memchr_iter(b'|', head).find(|&p| head.get(p + 1) == Some(&b' '));
        if let Some(p) = bar {
            let name = line[..p].trim_ascii_end();
            if !name.is_empty()
                && name
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(b))
            {
                node = node.or(Some(name));
                line = &line[p + 2..];
                // The bar below may be anywhere in what follows the service's.
                bar = Some(0);
            }
        }
        // FastChat's logger inside it: `<date> <time> | ERROR | stderr | `. Its bar holds
        // `| `: where the search above found none in the same bytes, none is there.
        if let Some(bar) = bar {
            if let Some(p) = stderr_bar(&line[..line.len().min(64)], bar) {
                line = &line[p + STDERR_BAR.len()..];
            }
        }
        if let Some(rest) = line.strip_prefix(b"> ") {
            line = rest;
        }
        if let Some(rest) = line.strip_prefix("│ ".as_bytes()) {
            line = rest;
        }
        // 2026-01-07T09:31:55.102938471Z, 2026-12-01T10:02:03.123456+00:00 (or +0000).
        if let Some(rest) = strip_rfc3339(line) {
            line = rest;
            if let Some((host, rest)) = strip_journald_ident(line) {
                node = node.or(Some(host));
                line = rest;
            }
        }
        // journald's short format: `Dec 01 10:02:03 host unit[pid]: `.
        if let Some(rest) = strip_syslog_stamp(line) {
            if let Some((host, rest)) = strip_journald_ident(rest) {
                node = node.or(Some(host));
                line = rest;
            }
        }
        if !levels {
            if line.len() == before {
                break;
            }
            continue;
        }
        let head = &line[..line.len().min(96)];
        // Each level wrapper holds ` - ` first: most lines have none, and pay one search.
        let dash = SPACED_DASH.find(head).is_some();
        if dash {
            for level in LEVELS.iter() {
                if let Some(p) = level.find(head) {
                    line = &line[p + level.needle().len()..];
                    break;
                }
            }
        }
        if line.len() == before {
            break;
        }
    }
    (line, node)
}

/// The rest of the line after an RFC 3339 stamp and its space: `YYYY-MM-DDTHH:MM:SS`,
/// optional fraction, then `Z` or an offset (`+00:00`, `+0000`).
fn strip_rfc3339(line: &[u8]) -> Option<&[u8]> {
    let digits = |r: std::ops::Range<usize>| {
        line.get(r)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    let shape = digits(0..4)
        && line.get(4) == Some(&b'-')
        && digits(5..7)
        && line.get(7) == Some(&b'-')
        && digits(8..10)
        && line.get(10) == Some(&b'T')
        && digits(11..13)
        && line.get(13) == Some(&b':');
    if !shape {
        return None;
    }
    let sp = memchr::memchr(b' ', &line[..line.len().min(40)])?;
    let stamp = &line[..sp];
    let zoned = stamp.ends_with(b"Z") || {
        let tail = &stamp[stamp.len().saturating_sub(6)..];
        let tail4 = &stamp[stamp.len().saturating_sub(5)..];
        (tail.len() == 6 && (tail[0] == b'+' || tail[0] == b'-') && tail[3] == b':')
            || (tail4.len() == 5
                && (tail4[0] == b'+' || tail4[0] == b'-')
                && tail4[1..].iter().all(u8::is_ascii_digit))
    };
    zoned.then(|| &line[sp + 1..])
}

/// The rest of the line after a syslog stamp `Mon DD HH:MM:SS ` (the day space-padded).
fn strip_syslog_stamp(line: &[u8]) -> Option<&[u8]> {
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    // The space first: one byte rules out most lines before twelve comparisons.
    if line.get(3) != Some(&b' ') {
        return None;
    }
    let month = line.get(..3)?;
    if !MONTHS.contains(&month) {
        return None;
    }
    let day = line.get(4..6)?;
    let time = line.get(7..15)?;
    let day_ok = day[1].is_ascii_digit() && (day[0].is_ascii_digit() || day[0] == b' ');
    let time_ok = time.iter().enumerate().all(|(i, b)| {
        if i == 2 || i == 5 {
            *b == b':'
        } else {
            b.is_ascii_digit()
        }
    });
    (day_ok && time_ok && line.get(6) == Some(&b' ') && line.get(15) == Some(&b' '))
        .then(|| &line[16..])
}

/// journald's `host unit[pid]: ` after its stamp: the host, and the rest of the line. The
/// `[pid]` is required, so a server's own text after a bare stamp is not taken for it.
fn strip_journald_ident(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let head = &line[..line.len().min(160)];
    let sp = memchr::memchr(b' ', head)?;
    let host = &head[..sp];
    if host.is_empty()
        || !host
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(b))
    {
        return None;
    }
    let after = &head[sp + 1..];
    let colon = memchr::memmem::find(after, b"]: ")?;
    let ident = &after[..colon];
    let open = memchr::memrchr(b'[', ident)?;
    let ok = open > 0
        && ident[open + 1..].iter().all(u8::is_ascii_digit)
        && open + 1 < ident.len()
        && !ident[..open].contains(&b' ');
    ok.then(|| (host, &line[sp + 1 + colon + 3..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_ascii_is_told_at_every_length_and_place() {
        // Lengths around the 32-byte chunks and the last chunk taken again over tested
        // bytes; one byte that needs cleaning put at every place in turn.
        for len in [0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 130] {
            let line: Vec<u8> = (0..len).map(|i| b" a~\tZ0"[i % 6]).collect();
            assert!(is_printable_ascii(&line), "clean line of {len}");
            for bad in [0x00, 0x08, 0x0a, 0x0d, 0x1b, 0x1f, 0x7f, 0x80, 0xc3, 0xff] {
                for at in 0..len {
                    let mut dirty = line.clone();
                    dirty[at] = bad;
                    assert!(!is_printable_ascii(&dirty), "{bad:#x} at {at} of {len}");
                }
            }
        }
        // The bounds of the range: a space and a tilde pass, the bytes beside them do not.
        assert!(is_printable_ascii(&[b' '; 40]) && is_printable_ascii(&[b'~'; 40]));
        assert!(!is_printable_ascii(&[0x1f; 40]) && !is_printable_ascii(&[0x7f; 40]));
    }

    #[test]
    fn peel_takes_off_each_wrapper_and_leaves_other_lines_whole() {
        let peeled = |line: &str| {
            let (inner, node) = peel_wrapper(line.as_bytes());
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            (text(inner), node.map(text))
        };
        let whole = |line: &str| (line.to_string(), None);
        // FastChat's logger bar, alone and inside a compose service's.
        assert_eq!(
            peeled("2024-09-02 08:40:12 | ERROR | stderr | Traceback"),
            ("Traceback".into(), None)
        );
        assert_eq!(
            peeled("web-7  | 2024-09-02 08:40:12 | ERROR | stderr | boom"),
            ("boom".into(), Some("web-7".into()))
        );
        // A service with a long name before a logger that is no service name.
        assert_eq!(
            peeled("inference-gateway-replica-17  | main proc | stderr | boom"),
            ("boom".into(), Some("inference-gateway-replica-17".into()))
        );
        // The stderr bar is the first `| ` (its space before it); a progress bar's `| `
        // near the head's end, whose bytes after it hold no stderr bar, stays whole.
        assert_eq!(
            peeled("08:40:12 main proc | stderr | boom"),
            ("boom".into(), None)
        );
        let bar = "Capturing batches (bs=128 avail_mem=0.64 GB):   0% Completed | 0/15 [00:00]";
        assert_eq!(peeled(bar), whole(bar));
        // journald's short format names its host; a word that only looks like a month
        // does not.
        assert_eq!(
            peeled("Dec 01 10:02:03 gpu-3 python[412]: [2026-12-01 10:02:03 TP0] Ready"),
            (
                "[2026-12-01 10:02:03 TP0] Ready".into(),
                Some("gpu-3".into())
            )
        );
        assert_eq!(peeled("Dec batch 1"), whole("Dec batch 1"));
        // Python logging's level, which `peel_transport` keeps.
        let logged = "2026-12-05 10:11:12,123 - sglang - INFO - Load weight begin";
        assert_eq!(peeled(logged), ("Load weight begin".into(), None));
        assert_eq!(peel_transport(logged.as_bytes()), logged.as_bytes());
        // Dashes and bars that are no wrapper: NCCL's host, a progress bar.
        for line in [
            "gpu-node-000:40000:40000 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P",
            "Loading safetensors checkpoint shards:   4% Completed | 8/163 [00:01<00:25]",
            "a - b",
        ] {
            assert_eq!(peeled(line), whole(line), "{line}");
        }
    }

    /// The scan's bare-line shapes rest on it (`scan::shape::BareShapes`): `peel` tells a
    /// digit from other bytes, never one digit from another. Every line of the bundled
    /// samples and each kind of wrapper, each digit moved on by one to nine places at
    /// once and one digit at a time: the same bytes peeled, the same node.
    #[test]
    fn peel_answers_the_same_for_a_digit_put_for_another() {
        let wrapped: [&[u8]; 8] = [
            b"2024-09-02 08:40:12 | ERROR | stderr | Traceback",
            b"web-7  | 2024-09-02 08:40:12 | ERROR | stderr | boom",
            b"[pod/vllm-0/server] INFO 05-02 08:14:09 [gpu_worker.py:12] ready",
            b"2026-01-07T09:31:55.102938471Z gpu-3 vllm[4242]: INFO 05-02 ready",
            b"Dec 01 10:02:03 gpu-3 python[412]: [2026-12-01 10:02:03 TP0] Ready",
            b"2026-12-05 10:11:12,123 - sglang - INFO - Load weight begin",
            b"> \xe2\x94\x82 [2026-12-01 10:02:03 TP0] Ready",
            b"Loading safetensors checkpoint shards:   4% Completed | 8/163 [00:01<00:25]",
        ];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        let mut files: Vec<std::path::PathBuf> = Vec::new();
        let mut dirs = vec![root];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "log" || e == "txt") {
                    files.push(path);
                }
            }
        }
        let texts: Vec<Vec<u8>> = files.iter().filter_map(|f| std::fs::read(f).ok()).collect();
        let lines = (texts.iter())
            .flat_map(|t| t.split(|&b| b == b'\n'))
            .chain(wrapped);
        // Where the inner line starts and how long it is, and where the node lies.
        let answer = |line: &[u8]| {
            let (inner, node) = peel_wrapper(line);
            let at = |part: &[u8]| part.as_ptr() as usize - line.as_ptr() as usize;
            (at(inner), inner.len(), node.map(|n| (at(n), n.len())))
        };
        let (mut asked, mut peeled) = (0, 0);
        for line in lines {
            let want = answer(line);
            peeled += usize::from(want.0 > 0);
            let digits: Vec<usize> = (0..line.len())
                .filter(|&i| line[i].is_ascii_digit())
                .collect();
            let moved =
                |line: &mut [u8], i: usize, k: u8| line[i] = b'0' + (line[i] - b'0' + k) % 10;
            for k in 1..10 {
                let mut all = line.to_vec();
                for &i in &digits {
                    moved(&mut all, i, k);
                }
                assert_eq!(answer(&all), want, "{}", String::from_utf8_lossy(&all));
                asked += 1;
            }
            for &i in digits.iter().take(40) {
                let mut one = line.to_vec();
                moved(&mut one, i, 5);
                assert_eq!(answer(&one), want, "{}", String::from_utf8_lossy(&one));
            }
        }
        // The samples are there (a fresh clone holds them: 41 files, ~1,000 lines) and
        // some lines were peeled.
        assert!(
            files.len() > 30 && asked > 9 * 900 && peeled >= 8,
            "{asked} {peeled}"
        );
    }

    #[test]
    fn begins_with_answers_as_starts_with_at_every_length_and_every_differing_byte() {
        // Prefixes of every length class (the byte loop below 4, the two 4-byte words
        // below 8, the two 8-byte words from 8 to 16, four from 17 to 32, memcmp past 32),
        // each also with one byte changed at every position, and against a text one byte
        // too short.
        let text = b"[2026-12-05 10:11:12 TP3] Decode batch. #running-req: 12";
        for n in 0..=40 {
            let prefix = &text[..n];
            assert!(begins_with(text, prefix), "{n}");
            assert!(
                !begins_with(&text[..n.saturating_sub(1)], prefix) || n == 0,
                "{n}"
            );
            for at in 0..n {
                let mut changed = prefix.to_vec();
                changed[at] ^= 0x20;
                assert!(!begins_with(text, &changed), "{n} changed at {at}");
                assert_eq!(begins_with(text, &changed), text.starts_with(&changed));
            }
        }
        assert!(begins_with(b"", b""));
        assert!(!begins_with(b"", b"["));
    }

    #[test]
    fn strips_colour_and_controls() {
        assert_eq!(
            clean_line(b"\x1b[1;36m(VllmWorker rank=0 pid=1)\x1b[0;0m INFO x\r"),
            "(VllmWorker rank=0 pid=1) INFO x"
        );
        assert_eq!(
            sanitize("\u{fffd}[1;36m(VllmWorker rank=0 pid=1)\u{fffd}[0;0m INFO"),
            "(VllmWorker rank=0 pid=1) INFO"
        );
        assert_eq!(clean_line(b"a\x07b\x1b]0;title\x07c"), "abc");
        assert_eq!(clean_line(b"caf\xe9 ok"), "caf\u{fffd} ok");
        // A lone U+FFFD followed by an ordinary bracket is text, not a colour code.
        assert_eq!(sanitize("x \u{fffd}[rank0] y"), "x \u{fffd}[rank0] y");
        assert_eq!(sanitize("evil\u{202e}txt"), "eviltxt");
    }

    #[test]
    fn printable_ascii_is_copied_and_trimmed_like_any_line() {
        // The ASCII fast path keeps tabs and trims the end, as the general path does.
        assert_eq!(sanitize("[TP0] a\tb = 1.5 GB  \t "), "[TP0] a\tb = 1.5 GB");
        // DEL and other controls are not printable: they still go.
        assert_eq!(sanitize("a\x7fb\x00c"), "abc");
        assert_eq!(sanitize("   "), "");
    }

    #[test]
    fn utf16_read_as_utf8() {
        use std::io::Read;
        // "a€😀\n" in UTF-16LE: 0x0061, 0x20ac, the pair d83d de00, 0x000a; then an
        // unpaired high surrogate at the end.
        let le: Vec<u8> = [0x0061u16, 0x20ac, 0xd83d, 0xde00, 0x000a, 0xd800]
            .iter()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        // One byte at a time, so that code units and pairs straddle reads.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                match (self.0.split_first(), buf.first_mut()) {
                    (Some((b, rest)), Some(slot)) => {
                        *slot = *b;
                        self.0 = rest;
                        Ok(1)
                    }
                    _ => Ok(0),
                }
            }
        }
        let mut s = String::new();
        Utf16Reader::new(Trickle(&le), false)
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "a\u{20ac}\u{1f600}\n\u{fffd}");
        let be: Vec<u8> = [0x0062u16, 0x00e9]
            .iter()
            .flat_map(|u| u.to_be_bytes())
            .collect();
        let mut s = String::new();
        Utf16Reader::new(&be[..], true)
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "b\u{e9}");
    }
}
