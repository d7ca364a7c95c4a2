//! The nom parsers for reprs, kwargs and calls; every failure keeps its byte offset.

use nom::{
    branch::alt,
    bytes::complete::{take_while, take_while1},
    character::complete::{char as ch, digit0, digit1, one_of},
    combinator::{opt, recognize},
    sequence::{pair, tuple},
};

use super::*;

pub(super) fn ws(i: &str) -> &str {
    i.trim_start()
}

pub(super) fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

pub(super) fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

pub(super) fn ident(i: &str) -> PResult<'_, &str> {
    match i.chars().next() {
        Some(c) if is_ident_start(c) => take_while1(is_ident_char)(i),
        _ => fail(i, "a name"),
    }
}

#[inline(never)]
pub(super) fn dotted_name(i: &str) -> PResult<'_, &str> {
    recognize(pair(ident, nom::multi::many0(pair(ch('.'), ident))))(i)
}

// Every level of nesting costs a frame of `value` plus one of the container parser. In
// debug builds a frame holds the locals of every match arm, so the arms live in separate
// never-inlined functions: only the ones on the recursive path sit on the stack.
pub(super) fn value(i: &str, depth: usize) -> PResult<'_, PyValue> {
    let Some(c) = i.chars().next() else {
        return fail(i, "a value");
    };
    match c {
        '\'' | '"' => str_value(i),
        '[' | '(' | '{' if depth >= MAX_DEPTH => too_deep(i),
        '[' => items(&i[1..], depth + 1, ']'),
        '(' => items(&i[1..], depth + 1, ')'),
        '{' => brace(&i[1..], depth + 1),
        '<' => angle(i),
        '.' if i.starts_with("...") => Ok((&i[3..], PyValue::Name("...".into()))),
        '-' | '+' | '.' | '0'..='9' => number(i),
        c if is_ident_start(c) => name_or_call(i, depth),
        _ => fail(i, "a value"),
    }
}

pub(super) fn too_deep<T>(i: &str) -> PResult<'_, T> {
    Err(nom::Err::Failure(PErr {
        input: i,
        expected: "shallower nesting",
        too_deep: true,
    }))
}

#[inline(never)]
pub(super) fn str_value(i: &str) -> PResult<'_, PyValue> {
    let (rest, s) = string_body(i, false)?;
    Ok((rest, PyValue::Str(s)))
}

/// The items of a list or tuple, after the opening bracket. Written as one loop with a
/// single recursive call and no `?` on it, because in debug builds each `?` and call site
/// keeps its own copy of the result on the stack, and this frame repeats at every level.
#[inline(never)]
pub(super) fn items(i: &str, depth: usize, close: char) -> PResult<'_, PyValue> {
    let mut out = Vec::new();
    let mut comma = false;
    let mut i = ws(i);
    loop {
        if let Some(rest) = i.strip_prefix(close) {
            let v = if close == ']' {
                PyValue::List(out)
            } else if out.len() == 1 && !comma {
                // `(x)` is just x; only a comma or emptiness makes a tuple.
                out.pop().unwrap_or(PyValue::None)
            } else {
                PyValue::Tuple(out)
            };
            return Ok((rest, v));
        }
        let rest = match value(i, depth) {
            Ok((rest, v)) => {
                out.push(v);
                ws(rest)
            }
            Err(e) => return Err(e),
        };
        if let Some(r) = rest.strip_prefix(',') {
            comma = true;
            i = ws(r);
        } else if rest.starts_with(close) {
            i = rest;
        } else {
            return fail(
                rest,
                if close == ']' {
                    "`,` or `]`"
                } else {
                    "`,` or `)`"
                },
            );
        }
    }
}

/// After `{`: a dict or a set, decided by whether the first item is followed by `:`. One
/// loop and one recursive call, for the stack's sake as in [`items`].
#[inline(never)]
pub(super) fn brace(i: &str, depth: usize) -> PResult<'_, PyValue> {
    let mut i = ws(i);
    if let Some(rest) = i.strip_prefix('}') {
        return Ok((rest, PyValue::Dict(Vec::new())));
    }
    // Set items, or dict keys and values alternating.
    let mut parts: Vec<PyValue> = Vec::new();
    let mut is_dict: Option<bool> = None;
    loop {
        let rest = match value(i, depth) {
            Ok((rest, v)) => {
                parts.push(v);
                ws(rest)
            }
            Err(e) => return Err(e),
        };
        let dict = match is_dict {
            Some(d) => d,
            None => {
                is_dict = Some(rest.starts_with(':'));
                rest.starts_with(':')
            }
        };
        let (next, expected) = if dict && parts.len() % 2 == 1 {
            (rest.strip_prefix(':'), "`:`")
        } else if let Some(r) = rest.strip_prefix(',') {
            (Some(ws(r)), "")
        } else if rest.starts_with('}') {
            (Some(rest), "")
        } else if dict {
            (None, "`,` or `}`")
        } else {
            (None, "`,`, `:` or `}`")
        };
        let Some(next) = next else {
            return fail(rest, expected);
        };
        if dict && parts.len() % 2 == 1 {
            i = ws(next);
            continue;
        }
        if let Some(r) = next.strip_prefix('}') {
            return Ok((r, finish_brace(parts, dict)));
        }
        i = next;
    }
}

#[inline(never)]
pub(super) fn finish_brace(parts: Vec<PyValue>, dict: bool) -> PyValue {
    if !dict {
        return PyValue::Set(parts);
    }
    let mut pairs = Vec::with_capacity(parts.len() / 2);
    let mut it = parts.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        pairs.push((k, v));
    }
    PyValue::Dict(pairs)
}

/// `<ModelImpl.AUTO: 'auto'>`, `<class 'int'>`, `<function f at 0x7f..>`: opaque, kept as
/// text. Quotes are skipped so a `>` inside a string does not end it.
#[inline(never)]
pub(super) fn angle(i: &str) -> PResult<'_, PyValue> {
    let mut level = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (n, c) in i.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '<' => level += 1,
            '>' => {
                level -= 1;
                if level == 0 {
                    let end = n + 1;
                    return Ok((&i[end..], PyValue::Name(i[..end].to_string())));
                }
            }
            _ => {}
        }
    }
    fail(
        &i[i.len()..],
        if quote.is_some() {
            "a closing quote"
        } else {
            "`>`"
        },
    )
}

#[inline(never)]
pub(super) fn number(i: &str) -> PResult<'_, PyValue> {
    let (after_sign, sign) = opt(one_of("+-"))(i)?;
    // Python prints non-finite floats as bare words; JSON dumps them as Infinity/NaN.
    for (word, v) in [
        ("Infinity", f64::INFINITY),
        ("inf", f64::INFINITY),
        ("NaN", f64::NAN),
        ("nan", f64::NAN),
    ] {
        if let Some(rest) = after_sign.strip_prefix(word) {
            if !rest.starts_with(is_ident_char) {
                let v = if sign == Some('-') { -v } else { v };
                return Ok((rest, PyValue::Float(v)));
            }
        }
    }
    let (rest, text) = match number_text(i) {
        Ok(ok) => ok,
        Err(_) => return fail(after_sign, "a number"),
    };
    let digits = text.trim_start_matches('+');
    if !text.contains(['.', 'e', 'E']) {
        return Ok((
            rest,
            match digits.parse::<i64>() {
                Ok(n) => PyValue::Int(n),
                Err(_) => PyValue::BigInt(normalise_big_int(digits)),
            },
        ));
    }
    match digits.parse::<f64>() {
        Ok(f) => Ok((rest, PyValue::Float(f))),
        Err(_) => fail(i, "a number"),
    }
}

pub(super) fn number_text(i: &str) -> PResult<'_, &str> {
    let mantissa = alt((
        recognize(pair(digit1, opt(pair(ch('.'), digit0)))),
        recognize(pair(ch('.'), digit1)),
    ));
    let exponent = tuple((one_of("eE"), opt(one_of("+-")), digit1));
    recognize(tuple((opt(one_of("+-")), mantissa, opt(exponent))))(i)
}

pub(super) fn normalise_big_int(digits: &str) -> String {
    let (neg, body) = match digits.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, digits),
    };
    let body = body.trim_start_matches('0');
    let body = if body.is_empty() { "0" } else { body };
    if neg && body != "0" {
        format!("-{body}")
    } else {
        body.to_string()
    }
}

#[inline(never)]
pub(super) fn name_or_call(i: &str, depth: usize) -> PResult<'_, PyValue> {
    let (rest, name) = dotted_name(i)?;
    if let Some(body) = rest.strip_prefix('(') {
        if depth >= MAX_DEPTH {
            return too_deep(i);
        }
        return call_value(body, name, depth + 1);
    }
    name_value(rest, name)
}

#[inline(never)]
pub(super) fn call_value<'a>(body: &'a str, name: &str, depth: usize) -> PResult<'a, PyValue> {
    let mut args = Vec::new();
    let mut kwargs = Vec::new();
    match call_body(body, depth, &mut args, &mut kwargs) {
        Ok(rest) => Ok((rest, finish_call(name, args, kwargs))),
        Err(e) => Err(e),
    }
}

#[inline(never)]
pub(super) fn finish_call(
    name: &str,
    args: Vec<PyValue>,
    kwargs: Vec<(String, PyValue)>,
) -> PyValue {
    if name == "set" && args.is_empty() && kwargs.is_empty() {
        return PyValue::Set(Vec::new());
    }
    PyValue::Call {
        name: name.to_string(),
        args,
        kwargs,
    }
}

#[inline(never)]
pub(super) fn name_value<'a>(rest: &'a str, name: &str) -> PResult<'a, PyValue> {
    // String prefixes: b'..' for bytes, r'..' raw. There is no bytes variant: the text is
    // what a reader compares.
    if rest.starts_with(['\'', '"'])
        && matches!(
            name.to_ascii_lowercase().as_str(),
            "r" | "b" | "u" | "rb" | "br"
        )
    {
        let raw = name.contains(['r', 'R']);
        let (rest, s) = string_body(rest, raw)?;
        return Ok((rest, PyValue::Str(s)));
    }
    let v = match name {
        "None" | "null" => PyValue::None,
        // JSON spellings show up inside vLLM's embedded JSON; no Python repr prints a
        // bare `true` meaning anything else.
        "True" | "true" => PyValue::Bool(true),
        "False" | "false" => PyValue::Bool(false),
        "inf" | "Infinity" => PyValue::Float(f64::INFINITY),
        "nan" | "NaN" => PyValue::Float(f64::NAN),
        _ => PyValue::Name(name.to_string()),
    };
    Ok((rest, v))
}

/// After `Name(`. Arguments are pushed only once followed by `,` or `)`, so that when the
/// input is cut, what the caller holds is exactly what was printed in full.
pub(super) fn call_body<'a>(
    i: &'a str,
    depth: usize,
    args: &mut Vec<PyValue>,
    kwargs: &mut Vec<(String, PyValue)>,
) -> Result<&'a str, nom::Err<PErr<'a>>> {
    let mut i = ws(i);
    loop {
        if let Some(rest) = i.strip_prefix(')') {
            return Ok(rest);
        }
        let key = keyword(i);
        let start = match key {
            Some((_, after_eq)) => ws(after_eq),
            None => i,
        };
        // No `?`: see `items`.
        let (rest, v) = match value(start, depth) {
            Ok((rest, v)) => (ws(rest), v),
            Err(e) => return Err(e),
        };
        let (rest, done) = if let Some(r) = rest.strip_prefix(',') {
            (ws(r), false)
        } else if let Some(r) = rest.strip_prefix(')') {
            (r, true)
        } else {
            return Err(nom::Err::Error(PErr {
                input: rest,
                expected: "`,` or `)`",
                too_deep: false,
            }));
        };
        push_arg(key.map(|(k, _)| k), v, args, kwargs);
        if done {
            return Ok(rest);
        }
        i = rest;
    }
}

#[inline(never)]
pub(super) fn push_arg(
    key: Option<&str>,
    v: PyValue,
    args: &mut Vec<PyValue>,
    kwargs: &mut Vec<(String, PyValue)>,
) {
    match key {
        Some(k) => kwargs.push((k.to_string(), v)),
        None => args.push(v),
    }
}

/// `name=` (but not `name==`): the key and the text after `=`.
#[inline(never)]
pub(super) fn keyword(i: &str) -> Option<(&str, &str)> {
    let (rest, k) = ident(i).ok()?;
    let rest = ws(rest);
    let after = rest.strip_prefix('=')?;
    if after.starts_with('=') {
        return None;
    }
    Some((k, after))
}

/// A quoted string starting at its opening quote. Errors inside point at the offending
/// escape; a missing closing quote points at the end of the input, i.e. truncation.
#[inline(never)]
pub(super) fn string_body(i: &str, raw: bool) -> PResult<'_, String> {
    let mut chars = i.char_indices();
    let Some((_, quote)) = chars.next() else {
        return fail(i, "a string");
    };
    let mut out = String::new();
    let mut pending_high: Option<u32> = None;
    while let Some((n, c)) = chars.next() {
        if c == quote {
            if pending_high.take().is_some() {
                out.push('\u{fffd}');
            }
            return Ok((&i[n + c.len_utf8()..], out));
        }
        if c != '\\' {
            if pending_high.take().is_some() {
                out.push('\u{fffd}');
            }
            out.push(c);
            continue;
        }
        let Some((_, e)) = chars.next() else {
            return fail(&i[i.len()..], "an escape after `\\`");
        };
        if raw {
            out.push('\\');
            out.push(e);
            continue;
        }
        let hex_len = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        if hex_len == 0 {
            if pending_high.take().is_some() {
                out.push('\u{fffd}');
            }
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                'a' => out.push('\x07'),
                'b' => out.push('\x08'),
                'f' => out.push('\x0c'),
                'v' => out.push('\x0b'),
                '\\' | '\'' | '"' | '/' => out.push(e),
                // Python keeps unknown escapes as written.
                _ => {
                    out.push('\\');
                    out.push(e);
                }
            }
            continue;
        }
        let mut code = 0u32;
        for _ in 0..hex_len {
            match chars.next() {
                None => return fail(&i[i.len()..], "hex digits of an escape"),
                Some((m, d)) => match d.to_digit(16) {
                    Some(v) => code = code * 16 + v,
                    None => return fail(&i[m..], "a hex digit"),
                },
            }
        }
        // JSON writes astral characters as UTF-16 surrogate pairs: join them.
        if let Some(high) = pending_high.take() {
            if (0xDC00..0xE000).contains(&code) {
                let joined = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00);
                out.push(char::from_u32(joined).unwrap_or('\u{fffd}'));
                continue;
            }
            out.push('\u{fffd}');
        }
        if e == 'u' && (0xD800..0xDC00).contains(&code) {
            pending_high = Some(code);
            continue;
        }
        match char::from_u32(code) {
            Some(c) => out.push(c),
            None => out.push('\u{fffd}'),
        }
    }
    fail(&i[i.len()..], "a closing quote")
}

/// vLLM formats some fields without `!r`, so `tokenizer_mode=auto` or
/// `served_model_name=meta-llama/Llama-3.1-8B` appear unquoted: a run of anything but
/// separators, brackets and quotes, which must end at `,`, whitespace or the input's end.
pub(super) fn bare_word(i: &str) -> Option<(&str, &str)> {
    let stop = |c: char| c.is_whitespace() || ",()[]{}'\"<>=".contains(c);
    let (rest, word) = take_while::<_, _, PErr<'_>>(|c| !stop(c))(i).ok()?;
    let clean_end =
        rest.is_empty() || rest.starts_with(',') || rest.starts_with(char::is_whitespace);
    (!word.is_empty() && clean_end).then_some((rest, word))
}

pub(super) fn kwarg_value(i: &str) -> PResult<'_, PyValue> {
    let ends_cleanly =
        |r: &str| r.is_empty() || r.starts_with(',') || r.starts_with(char::is_whitespace);
    match value(i, 0) {
        Ok((rest, v)) if ends_cleanly(rest) => Ok((rest, v)),
        Ok((rest, v)) => match bare_word(i) {
            Some((r, w)) => Ok((r, PyValue::Name(w.to_string()))),
            None => Ok((rest, v)),
        },
        Err(e) => match bare_word(i) {
            Some((r, w)) if !matches!(e, nom::Err::Failure(PErr { too_deep: true, .. })) => {
                Ok((r, PyValue::Name(w.to_string())))
            }
            _ => Err(e),
        },
    }
}

/// The shared loop of [`parse_kwargs`] and [`parse_kwargs_lenient`]: the pairs read in
/// full, and the error that stopped it, if any.
pub(super) fn kwargs_core(s: &str) -> (Vec<(String, PyValue)>, Option<ReprError>) {
    let mut out = Vec::new();
    let mut i = ws(s);
    if i.is_empty() {
        return (out, None);
    }
    loop {
        let key = match ident(i) {
            Ok((rest, k)) => {
                let rest = ws(rest);
                match rest.strip_prefix('=') {
                    Some(after) => Some((k, after)),
                    // `... b` cut mid-key.
                    None if rest.is_empty() => return (out, Some(err_at(s, rest, "`=`"))),
                    None => None,
                }
            }
            Err(_) => None,
        };
        let Some((k, after_eq)) = key else {
            if out.is_empty() {
                return (out, Some(err_at(s, i, "`name=`")));
            }
            // Whatever follows the last pair is not ours: vLLM lines may carry a suffix.
            return (out, None);
        };
        let (rest, v) = match kwarg_value(ws(after_eq)) {
            Ok(ok) => ok,
            Err(e) => return (out, Some(to_repr_error(s, e))),
        };
        out.push((k.to_string(), v));
        let rest = ws(rest);
        match rest.strip_prefix(',') {
            Some(r) => {
                i = ws(r);
                if i.is_empty() {
                    // A line never ends in a comma unless it was cut there.
                    return (out, Some(err_at(s, i, "`name=`")));
                }
            }
            None => return (out, None),
        }
    }
}
