//! Log text made safe: decoded, stripped of colour codes and control sequences.
//!
//! Log lines reach terminals through rankscope; an escape sequence in a log (a colour code,
//! or something hostile) must never be passed through. Everything that prints log text
//! goes through `clean_line` or `sanitize`.

/// Decodes bytes (invalid UTF-8 becomes U+FFFD), removes ANSI escape sequences — also the
/// ones whose ESC byte was already replaced by U+FFFD in a copy — and every other control
/// character except tab, and trims trailing white space.
pub fn clean_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    sanitize(&text)
}

pub fn sanitize(text: &str) -> String {
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

/// Cuts to `width` characters, the last of them `…` when anything was cut.
pub fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

pub fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| b.is_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
