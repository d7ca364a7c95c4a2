//! A configuration printed inside a JSON string (`[[config]]` `escaped = "json"`): a
//! JSON-lines server writes `"msg":"args: Args { model: \"/m/x\", tp: 2 }"`, so the
//! quotes of Rust's `{:?}` (or a Python value's backslashes) arrive escaped. The text
//! after the marker is unescaped up to the end of the JSON string before its syntax is
//! read, and each unescaped byte remembers where it stood, so an error still names a byte
//! of the line as printed.

/// The text of a JSON string from the start of `body` to its closing quote, unescaped.
pub(super) struct Unescaped {
    pub(super) text: String,
    /// `offsets[i]`: where unescaped byte `i` starts in the escaped body (the start of its
    /// escape sequence); one more entry for the end of the text.
    offsets: Vec<usize>,
}

impl Unescaped {
    /// Unescapes `body` as the inside of a JSON string: `\"`, `\\`, `\/`, `\b`, `\f`, `\n`,
    /// `\r`, `\t` and `\uXXXX` (a surrogate pair as one character), ending at the first
    /// unescaped `"`, or at the end of `body` when the line was cut before it. A backslash
    /// before anything else is kept with what follows, as written. A control character
    /// other than a newline, tab or carriage return becomes U+FFFD: the line's control
    /// sequences were removed when it was read, and an escape must not bring one back.
    pub(super) fn json(body: &str) -> Unescaped {
        let mut text = String::with_capacity(body.len());
        let mut offsets = Vec::with_capacity(body.len() + 1);
        let mut push = |text: &mut String, c: char, at: usize| {
            let c = if c.is_control() && !matches!(c, '\n' | '\t' | '\r') {
                char::REPLACEMENT_CHARACTER
            } else {
                c
            };
            text.push(c);
            offsets.resize(text.len(), at);
        };
        let bytes = body.as_bytes();
        let mut i = 0;
        while let Some(c) = body.get(i..).and_then(|r| r.chars().next()) {
            if c == '"' {
                break;
            }
            if c != '\\' {
                push(&mut text, c, i);
                i += c.len_utf8();
                continue;
            }
            let (decoded, len) = match bytes.get(i + 1) {
                Some(b'"') => (Some('"'), 2),
                Some(b'\\') => (Some('\\'), 2),
                Some(b'/') => (Some('/'), 2),
                Some(b'b') => (Some('\u{8}'), 2),
                Some(b'f') => (Some('\u{c}'), 2),
                Some(b'n') => (Some('\n'), 2),
                Some(b'r') => (Some('\r'), 2),
                Some(b't') => (Some('\t'), 2),
                Some(b'u') => unicode_escape(body, i),
                _ => (None, 1),
            };
            match decoded {
                Some(d) => push(&mut text, d, i),
                // Not an escape JSON has: the backslash stays, read as printed.
                None => push(&mut text, '\\', i),
            }
            i += len;
        }
        offsets.push(i);
        Unescaped { text, offsets }
    }

    /// Where byte `at` of the unescaped text stood in the escaped body.
    pub(super) fn original(&self, at: usize) -> usize {
        match self.offsets.get(at) {
            Some(&o) => o,
            None => self.offsets.last().copied().unwrap_or(0),
        }
    }
}

/// `\uXXXX` at `at` (and a low surrogate's `\uXXXX` after a high one): the character and
/// the length of its escape; `None` for four characters that are not hex digits (the
/// backslash is then kept).
fn unicode_escape(body: &str, at: usize) -> (Option<char>, usize) {
    let hex = |from: usize| {
        body.get(from..from + 4)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    let Some(hi) = hex(at + 2) else {
        return (None, 1);
    };
    if (0xD800..0xDC00).contains(&hi) {
        let lo = body
            .get(at + 6..at + 8)
            .filter(|s| *s == "\\u")
            .and_then(|_| hex(at + 8))
            .filter(|lo| (0xDC00..0xE000).contains(lo));
        if let Some(lo) = lo {
            let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
            return (char::from_u32(c), 12);
        }
    }
    // A lone surrogate is no character: shown as U+FFFD.
    (
        Some(char::from_u32(hi).unwrap_or(char::REPLACEMENT_CHARACTER)),
        6,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_string_is_unescaped_to_its_closing_quote() {
        // `A { m: \"/x\" }"}` : the struct, then the JSON record's end.
        let u = Unescaped::json(r#"A { m: \"/x\" }"}"#);
        assert_eq!(u.text, r#"A { m: "/x" }"#);
        // `"` of `"/x"` is byte 7 unescaped, and its `\"` starts at byte 7 escaped; the
        // closing `"` (byte 10 unescaped) was `\"` at byte 11 (after `\"/x`, 5 bytes).
        assert_eq!(u.original(7), 7);
        assert_eq!(u.original(10), 11);
        // The end of the text is the record's closing quote, byte 15.
        assert_eq!(u.original(u.text.len()), 15);
    }

    #[test]
    fn every_json_escape_reads() {
        let u = Unescaped::json(r#"a\\b\/c\n\t\u00e9\ud83d\ude00\q\u12"#);
        // `\q` is no JSON escape and `\u12` too short: both kept as printed.
        assert_eq!(u.text, "a\\b/c\n\té😀\\q\\u12");
        // `é` (unescaped bytes 7 and 8) comes from `\u00e9` at byte 11; both point there.
        assert_eq!(u.original(7), 11);
        assert_eq!(u.original(8), 11);
        // The emoji (4 bytes from byte 9 unescaped) is the pair at byte 17.
        assert_eq!(u.original(9), 17);
        assert_eq!(u.original(12), 17);
        // `\q`'s backslash is byte 13 unescaped, 29 escaped; its `q` 14 and 30.
        assert_eq!(u.original(13), 29);
        assert_eq!(u.original(14), 30);
    }

    #[test]
    fn an_escaped_control_character_is_not_brought_back() {
        let u = Unescaped::json(r#"x\u001b[31m"#);
        assert_eq!(u.text, "x\u{fffd}[31m");
        let lone = Unescaped::json(r#"\ud800z"#);
        assert_eq!(lone.text, "\u{fffd}z");
    }
}
