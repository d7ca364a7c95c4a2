//! Parser for the Python reprs that inference servers print at start-up.
//!
//! SGLang logs `server_args=ServerArgs(...)`, vLLM logs `... with config: a=1, b='x', ...`
//! and `non-default args: {...}`. Those are reprs, not JSON: single-quoted strings, tuples,
//! `None`, enum reprs like `<ModelImpl.AUTO: 'auto'>`, and in vLLM's case values printed
//! without `!r` (`tokenizer_mode=auto`, `served_model_name=org/Model-7B`) mixed with
//! embedded JSON (`compilation_config={"level":3,...}`). Logs are also cut mid-line, so
//! every failure reports a byte offset, and truncation is told apart from bad syntax.

use std::fmt;

use nom::{
    branch::alt,
    bytes::complete::{take_while, take_while1},
    character::complete::{char as ch, digit0, digit1, one_of},
    combinator::{opt, recognize},
    error::{ErrorKind, ParseError},
    sequence::{pair, tuple},
    IResult,
};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// Deeper than any real config; low enough that the recursive descent stays far from the
/// 2 MiB stack of a test or worker thread even in debug builds.
pub const MAX_DEPTH: usize = 256;

/// A value from a Python repr.
#[derive(Debug, Clone)]
pub enum PyValue {
    None,
    Bool(bool),
    Int(i64),
    /// An integer outside i64, kept as its decimal text so nothing is rounded.
    BigInt(String),
    Float(f64),
    Str(String),
    List(Vec<PyValue>),
    Tuple(Vec<PyValue>),
    Set(Vec<PyValue>),
    /// Kept in printed order: the order is what a person reading the log saw.
    Dict(Vec<(PyValue, PyValue)>),
    Call {
        name: String,
        args: Vec<PyValue>,
        kwargs: Vec<(String, PyValue)>,
    },
    /// Anything printed as a bare token: `torch.bfloat16`, `<ModelImpl.AUTO: 'auto'>`,
    /// vLLM's unquoted `auto` or `org/Model-7B`.
    Name(String),
}

/// Python's `==` as far as configs go: `1e-05` and `0.00001` are one float; dicts and sets
/// ignore order. Unlike IEEE, NaN equals NaN, because a config that says `nan` on both
/// sides has not changed.
impl PartialEq for PyValue {
    fn eq(&self, other: &Self) -> bool {
        use PyValue::*;
        match (self, other) {
            (None, None) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (BigInt(a), BigInt(b)) => a == b,
            (Float(a), Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Str(a), Str(b)) | (Name(a), Name(b)) => a == b,
            (List(a), List(b)) | (Tuple(a), Tuple(b)) => a == b,
            (Set(a), Set(b)) => same_unordered(a, b, |x, y| x == y),
            (Dict(a), Dict(b)) => same_unordered(a, b, |x, y| x.0 == y.0 && x.1 == y.1),
            (
                Call {
                    name: n1,
                    args: a1,
                    kwargs: k1,
                },
                Call {
                    name: n2,
                    args: a2,
                    kwargs: k2,
                },
            ) => n1 == n2 && a1 == a2 && same_unordered(k1, k2, |x, y| x == y),
            _ => false,
        }
    }
}

fn same_unordered<T>(a: &[T], b: &[T], eq: impl Fn(&T, &T) -> bool) -> bool {
    if a.len() != b.len() {
        return false;
    }
    // Reprs of the same config print in the same order, so the quadratic path is rare.
    if a.iter().zip(b).all(|(x, y)| eq(x, y)) {
        return true;
    }
    let mut used = vec![false; b.len()];
    a.iter().all(|x| {
        let hit = b.iter().enumerate().position(|(j, y)| !used[j] && eq(x, y));
        match hit {
            Some(j) => {
                used[j] = true;
                true
            }
            None => false,
        }
    })
}

impl PyValue {
    /// The repr Python itself would print, so tables show what the log showed, in one
    /// spelling: `1e-05` and `0.00001` both come out as `1e-05`.
    pub fn to_python_repr(&self) -> String {
        let mut out = String::new();
        self.write_repr(&mut out);
        out
    }

    fn write_repr(&self, out: &mut String) {
        match self {
            PyValue::None => out.push_str("None"),
            PyValue::Bool(true) => out.push_str("True"),
            PyValue::Bool(false) => out.push_str("False"),
            PyValue::Int(i) => out.push_str(&i.to_string()),
            PyValue::BigInt(s) | PyValue::Name(s) => out.push_str(s),
            PyValue::Float(f) => out.push_str(&py_float_repr(*f)),
            PyValue::Str(s) => write_py_str(s, out),
            PyValue::List(items) => write_items(out, "[", items, "]"),
            PyValue::Tuple(items) if items.len() == 1 => write_items(out, "(", items, ",)"),
            PyValue::Tuple(items) => write_items(out, "(", items, ")"),
            // `{}` is an empty dict in Python.
            PyValue::Set(items) if items.is_empty() => out.push_str("set()"),
            PyValue::Set(items) => write_items(out, "{", items, "}"),
            PyValue::Dict(pairs) => {
                out.push('{');
                for (n, (k, v)) in pairs.iter().enumerate() {
                    if n > 0 {
                        out.push_str(", ");
                    }
                    k.write_repr(out);
                    out.push_str(": ");
                    v.write_repr(out);
                }
                out.push('}');
            }
            PyValue::Call { name, args, kwargs } => {
                out.push_str(name);
                out.push('(');
                let mut first = true;
                for a in args {
                    if !first {
                        out.push_str(", ");
                    }
                    first = false;
                    a.write_repr(out);
                }
                for (k, v) in kwargs {
                    if !first {
                        out.push_str(", ");
                    }
                    first = false;
                    out.push_str(k);
                    out.push('=');
                    v.write_repr(out);
                }
                out.push(')');
            }
        }
    }
}

impl fmt::Display for PyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_python_repr())
    }
}

fn write_items(out: &mut String, open: &str, items: &[PyValue], close: &str) {
    out.push_str(open);
    for (n, v) in items.iter().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        v.write_repr(out);
    }
    out.push_str(close);
}

fn write_py_str(s: &str, out: &mut String) {
    // Python's own rule: single quotes unless that would need escaping and double would not.
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Python's `repr(float)`: shortest round-trip digits, fixed notation for exponents in
/// -4..16, otherwise `1e-05` style with a signed two-digit exponent.
pub fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` already gives the shortest round-trip digits, as Python does.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let body = if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                format!("{digits}{}.0", "0".repeat(int_len - digits.len()))
            } else {
                format!("{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{body}")
    } else {
        let m = if digits.len() == 1 {
            digits
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.unsigned_abs())
    }
}

/// Natural JSON: None → null, tuples and sets → arrays, dicts with string keys → objects
/// (other dicts → arrays of `[key, value]`), calls → `{"call": name, "args": [...],
/// "kwargs": {...}}`, big ints → strings. JSON has no inf/nan, and null already means
/// None, so non-finite floats become the strings `"inf"`, `"-inf"`, `"nan"`.
impl Serialize for PyValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PyValue::None => s.serialize_unit(),
            PyValue::Bool(b) => s.serialize_bool(*b),
            PyValue::Int(i) => s.serialize_i64(*i),
            PyValue::Float(f) if f.is_finite() => s.serialize_f64(*f),
            PyValue::Float(f) => s.serialize_str(&py_float_repr(*f)),
            PyValue::BigInt(t) | PyValue::Str(t) | PyValue::Name(t) => s.serialize_str(t),
            PyValue::List(v) | PyValue::Tuple(v) | PyValue::Set(v) => s.collect_seq(v),
            PyValue::Dict(pairs) => {
                if pairs.iter().all(|(k, _)| matches!(k, PyValue::Str(_))) {
                    let mut m = s.serialize_map(Some(pairs.len()))?;
                    for (k, v) in pairs {
                        m.serialize_entry(k, v)?;
                    }
                    m.end()
                } else {
                    s.collect_seq(pairs.iter().map(|(k, v)| (k, v)))
                }
            }
            PyValue::Call { name, args, kwargs } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("call", name)?;
                m.serialize_entry("args", args)?;
                m.serialize_entry("kwargs", &KwargsMap(kwargs))?;
                m.end()
            }
        }
    }
}

struct KwargsMap<'a>(&'a [(String, PyValue)]);

impl Serialize for KwargsMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// What went wrong, where (a byte offset into the text given to the parser).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ReprError {
    pub offset: usize,
    /// What the parser needed there, e.g. "`,` or `]`".
    pub expected: String,
    /// The character found instead; `None` at the end of the input.
    pub found: Option<char>,
    pub kind: ReprErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReprErrorKind {
    /// Not a repr we understand.
    Syntax,
    /// The input ended inside a value: the usual shape of a log line cut short.
    Truncated,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl fmt::Display for ReprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.found) {
            (ReprErrorKind::TooDeep, _) => write!(
                f,
                "at byte {}: nested deeper than {MAX_DEPTH} levels",
                self.offset
            ),
            (ReprErrorKind::Truncated, _) | (_, None) => write!(
                f,
                "input ends at byte {}, expected {}",
                self.offset, self.expected
            ),
            (ReprErrorKind::Syntax, Some(c)) => write!(
                f,
                "at byte {}: expected {}, found {c:?}",
                self.offset, self.expected
            ),
        }
    }
}

impl ReprError {
    /// Offsets are relative to the text parsed; callers that cut it out of a longer line
    /// shift them so the offset points into the line.
    pub fn shifted(mut self, by: usize) -> Self {
        self.offset += by;
        self
    }
}

// ---------------------------------------------------------------------------------------
// The grammar. Values dispatch on their first character rather than through `alt`, which
// keeps error positions exact and the per-level stack frames small.

#[derive(Debug)]
struct PErr<'a> {
    input: &'a str,
    expected: &'static str,
    too_deep: bool,
}

impl<'a> ParseError<&'a str> for PErr<'a> {
    fn from_error_kind(input: &'a str, kind: ErrorKind) -> Self {
        PErr {
            input,
            // Only nom's own leaves get here; naming the leaf is the best on offer.
            expected: match kind {
                ErrorKind::Digit => "a digit",
                ErrorKind::Char | ErrorKind::OneOf => "a punctuation mark",
                ErrorKind::TakeWhile1 => "a name",
                _ => "a value",
            },
            too_deep: false,
        }
    }

    fn append(_: &'a str, _: ErrorKind, other: Self) -> Self {
        other
    }

    // The branch that got furthest explains the failure best.
    fn or(self, other: Self) -> Self {
        if other.input.len() <= self.input.len() {
            other
        } else {
            self
        }
    }
}

type PResult<'a, T> = IResult<&'a str, T, PErr<'a>>;

fn fail<'a, T>(input: &'a str, expected: &'static str) -> PResult<'a, T> {
    Err(nom::Err::Error(PErr {
        input,
        expected,
        too_deep: false,
    }))
}

fn to_repr_error(whole: &str, e: nom::Err<PErr<'_>>) -> ReprError {
    match e {
        nom::Err::Error(p) | nom::Err::Failure(p) => {
            let offset = whole.len().saturating_sub(p.input.len());
            let found = p.input.chars().next();
            let kind = if p.too_deep {
                ReprErrorKind::TooDeep
            } else if found.is_none() {
                ReprErrorKind::Truncated
            } else {
                ReprErrorKind::Syntax
            };
            ReprError {
                offset,
                expected: p.expected.to_string(),
                found,
                kind,
            }
        }
        // Only streaming parsers say Incomplete; none is used, but a cut is what it means.
        nom::Err::Incomplete(_) => ReprError {
            offset: whole.len(),
            expected: "more input".into(),
            found: None,
            kind: ReprErrorKind::Truncated,
        },
    }
}

fn err_at(whole: &str, at: &str, expected: &'static str) -> ReprError {
    to_repr_error(
        whole,
        nom::Err::Error(PErr {
            input: at,
            expected,
            too_deep: false,
        }),
    )
}

fn ws(i: &str) -> &str {
    i.trim_start()
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn ident(i: &str) -> PResult<'_, &str> {
    match i.chars().next() {
        Some(c) if is_ident_start(c) => take_while1(is_ident_char)(i),
        _ => fail(i, "a name"),
    }
}

#[inline(never)]
fn dotted_name(i: &str) -> PResult<'_, &str> {
    recognize(pair(ident, nom::multi::many0(pair(ch('.'), ident))))(i)
}

// Every level of nesting costs a frame of `value` plus one of the container parser. In
// debug builds a frame holds the locals of every match arm, so the arms live in separate
// never-inlined functions: only the ones on the recursive path sit on the stack.
fn value(i: &str, depth: usize) -> PResult<'_, PyValue> {
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

fn too_deep<T>(i: &str) -> PResult<'_, T> {
    Err(nom::Err::Failure(PErr {
        input: i,
        expected: "shallower nesting",
        too_deep: true,
    }))
}

#[inline(never)]
fn str_value(i: &str) -> PResult<'_, PyValue> {
    let (rest, s) = string_body(i, false)?;
    Ok((rest, PyValue::Str(s)))
}

/// The items of a list or tuple, after the opening bracket. Written as one loop with a
/// single recursive call and no `?` on it, because in debug builds each `?` and call site
/// keeps its own copy of the result on the stack, and this frame repeats at every level.
#[inline(never)]
fn items(i: &str, depth: usize, close: char) -> PResult<'_, PyValue> {
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
fn brace(i: &str, depth: usize) -> PResult<'_, PyValue> {
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
fn finish_brace(parts: Vec<PyValue>, dict: bool) -> PyValue {
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
fn angle(i: &str) -> PResult<'_, PyValue> {
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
fn number(i: &str) -> PResult<'_, PyValue> {
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

fn number_text(i: &str) -> PResult<'_, &str> {
    let mantissa = alt((
        recognize(pair(digit1, opt(pair(ch('.'), digit0)))),
        recognize(pair(ch('.'), digit1)),
    ));
    let exponent = tuple((one_of("eE"), opt(one_of("+-")), digit1));
    recognize(tuple((opt(one_of("+-")), mantissa, opt(exponent))))(i)
}

fn normalise_big_int(digits: &str) -> String {
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
fn name_or_call(i: &str, depth: usize) -> PResult<'_, PyValue> {
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
fn call_value<'a>(body: &'a str, name: &str, depth: usize) -> PResult<'a, PyValue> {
    let mut args = Vec::new();
    let mut kwargs = Vec::new();
    match call_body(body, depth, &mut args, &mut kwargs) {
        Ok(rest) => Ok((rest, finish_call(name, args, kwargs))),
        Err(e) => Err(e),
    }
}

#[inline(never)]
fn finish_call(name: &str, args: Vec<PyValue>, kwargs: Vec<(String, PyValue)>) -> PyValue {
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
fn name_value<'a>(rest: &'a str, name: &str) -> PResult<'a, PyValue> {
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
fn call_body<'a>(
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
fn push_arg(
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
fn keyword(i: &str) -> Option<(&str, &str)> {
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
fn string_body(i: &str, raw: bool) -> PResult<'_, String> {
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
fn bare_word(i: &str) -> Option<(&str, &str)> {
    let stop = |c: char| c.is_whitespace() || ",()[]{}'\"<>=".contains(c);
    let (rest, word) = take_while::<_, _, PErr<'_>>(|c| !stop(c))(i).ok()?;
    let clean_end =
        rest.is_empty() || rest.starts_with(',') || rest.starts_with(char::is_whitespace);
    (!word.is_empty() && clean_end).then_some((rest, word))
}

fn kwarg_value(i: &str) -> PResult<'_, PyValue> {
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
fn kwargs_core(s: &str) -> (Vec<(String, PyValue)>, Option<ReprError>) {
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

/// Parse the whole of `s` as one value; leading and trailing whitespace is allowed.
pub fn parse_value(s: &str) -> Result<PyValue, ReprError> {
    let (v, used) = parse_value_prefix(s)?;
    let rest = ws(&s[used..]);
    if !rest.is_empty() {
        return Err(err_at(s, rest, "end of input"));
    }
    Ok(v)
}

/// Parse one value at the start of `s` (after whitespace) and say how many bytes it took,
/// for values embedded in a longer log line.
pub fn parse_value_prefix(s: &str) -> Result<(PyValue, usize), ReprError> {
    match value(ws(s), 0) {
        Ok((rest, v)) => Ok((v, s.len() - rest.len())),
        Err(e) => Err(to_repr_error(s, e)),
    }
}

/// Parse `a=1, b='x', ...`, the body of vLLM's config line. Text after the last pair that
/// does not continue the list (no comma, or no `name=` after it) is ignored, as is done
/// for a suffix on the line. Input that ends inside a key or value is an error.
pub fn parse_kwargs(s: &str) -> Result<Vec<(String, PyValue)>, ReprError> {
    match kwargs_core(s) {
        (out, None) => Ok(out),
        (_, Some(e)) => Err(e),
    }
}

/// The pairs of a kwargs list that was possibly cut short.
#[derive(Debug, Clone, PartialEq)]
pub struct LenientKwargs {
    /// The pairs printed in full before the cut. A value cut at the very end of a vLLM
    /// line cannot be told from a complete one (`max_seq_len=40` may have been `4096`):
    /// nothing closes that list.
    pub kwargs: Vec<(String, PyValue)>,
    pub truncated: bool,
}

/// Like [`parse_kwargs`], but a cut line yields the pairs before the cut. Errors other
/// than truncation are still errors: they mean this is not the text we think it is.
pub fn parse_kwargs_lenient(s: &str) -> Result<LenientKwargs, ReprError> {
    match kwargs_core(s) {
        (kwargs, None) => Ok(LenientKwargs {
            kwargs,
            truncated: false,
        }),
        (kwargs, Some(e)) if e.kind == ReprErrorKind::Truncated => Ok(LenientKwargs {
            kwargs,
            truncated: true,
        }),
        (_, Some(e)) => Err(e),
    }
}

/// A call such as `ServerArgs(...)` that was possibly cut short.
#[derive(Debug, Clone, PartialEq)]
pub struct LenientCall {
    pub name: String,
    /// Arguments followed by `,` or `)` before the cut; the one the cut fell in is dropped.
    pub args: Vec<PyValue>,
    pub kwargs: Vec<(String, PyValue)>,
    pub truncated: bool,
    /// Bytes of `s` taken by the call (all of `s` when truncated).
    pub consumed: usize,
}

/// Parse a call at the start of `s` (after whitespace), salvaging the arguments before a
/// cut. Text after the closing `)` is left alone.
pub fn parse_call_lenient(s: &str) -> Result<LenientCall, ReprError> {
    let start = ws(s);
    let cut_early = |name: &str| LenientCall {
        name: name.to_string(),
        args: Vec::new(),
        kwargs: Vec::new(),
        truncated: true,
        consumed: s.len(),
    };
    if start.is_empty() {
        return Ok(cut_early(""));
    }
    let (after_name, name) = dotted_name(start).map_err(|e| to_repr_error(s, e))?;
    let Some(body) = after_name.strip_prefix('(') else {
        if after_name.is_empty() || after_name == "." {
            return Ok(cut_early(name));
        }
        return Err(err_at(s, after_name, "`(`"));
    };
    let mut args = Vec::new();
    let mut kwargs = Vec::new();
    match call_body(body, 1, &mut args, &mut kwargs) {
        Ok(rest) => Ok(LenientCall {
            name: name.to_string(),
            args,
            kwargs,
            truncated: false,
            consumed: s.len() - rest.len(),
        }),
        Err(e) => {
            let e = to_repr_error(s, e);
            if e.kind != ReprErrorKind::Truncated {
                return Err(e);
            }
            Ok(LenientCall {
                name: name.to_string(),
                args,
                kwargs,
                truncated: true,
                consumed: s.len(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SGLANG: &str = "server_args=ServerArgs(model_path='synthetic-61L', tp_size=8, pp_size=1, mem_fraction_static=0.9, cuda_graph_max_bs=128, enable_custom_allreduce=False)";

    // Shaped on vLLM 0.11's core.py line: unquoted fields, a call, embedded JSON.
    const VLLM_BODY: &str = "model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=None, tokenizer='meta-llama/Llama-3.1-8B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=4096, download_dir=None, load_format=auto, tensor_parallel_size=8, pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_fallback=False, disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser=''), observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None), seed=0, served_model_name=meta-llama/Llama-3.1-8B-Instruct, enable_prefix_caching=True, enable_chunked_prefill=True, pooler_config=None, compilation_config={\"level\":3,\"debug_dump_path\":\"\",\"cache_dir\":\"\",\"backend\":\"\",\"custom_ops\":[],\"splitting_ops\":[\"vllm.unified_attention\",\"vllm.unified_attention_with_output\"],\"use_inductor\":true,\"compile_sizes\":[],\"inductor_compile_config\":{\"enable_auto_functionalized_v2\":false},\"cudagraph_mode\":[2,1],\"use_cudagraph\":true,\"cudagraph_capture_sizes\":[512,504,8,4,2,1],\"pass_config\":{},\"max_capture_size\":512,\"local_cache_dir\":null}";

    fn v(s: &str) -> PyValue {
        match parse_value(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?}: {e}"),
        }
    }

    fn s(x: &str) -> PyValue {
        PyValue::Str(x.into())
    }

    fn err(s: &str) -> ReprError {
        match parse_value(s) {
            Ok(v) => panic!("{s:?} parsed as {v:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn sglang_real_line() {
        let body = &SGLANG["server_args=".len()..];
        let PyValue::Call { name, args, kwargs } = v(body) else {
            panic!("not a call");
        };
        assert_eq!(name, "ServerArgs");
        assert!(args.is_empty());
        let keys: Vec<&str> = kwargs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "model_path",
                "tp_size",
                "pp_size",
                "mem_fraction_static",
                "cuda_graph_max_bs",
                "enable_custom_allreduce"
            ]
        );
        assert_eq!(kwargs[0].1, s("synthetic-61L"));
        assert_eq!(kwargs[1].1, PyValue::Int(8));
        assert_eq!(kwargs[3].1, PyValue::Float(0.9));
        assert_eq!(kwargs[5].1, PyValue::Bool(false));
        assert_eq!(v(body).to_python_repr(), body);
    }

    #[test]
    fn sglang_line_with_eight_keys_as_kwargs() {
        let kw = parse_kwargs("model_path='synthetic-61L', tp_size=8, pp_size=1, dp_size=1, mem_fraction_static=0.9, cuda_graph_max_bs=128, attention_backend=None, enable_custom_allreduce=False").unwrap();
        assert_eq!(kw.len(), 8);
        assert_eq!(
            kw[7],
            ("enable_custom_allreduce".into(), PyValue::Bool(false))
        );
    }

    #[test]
    fn vllm_config_line() {
        let kw = parse_kwargs(VLLM_BODY).unwrap();
        assert_eq!(kw.len(), 28);
        let get = |k: &str| {
            kw.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(get("dtype"), PyValue::Name("torch.bfloat16".into()));
        assert_eq!(get("tokenizer_mode"), PyValue::Name("auto".into()));
        assert_eq!(
            get("served_model_name"),
            PyValue::Name("meta-llama/Llama-3.1-8B-Instruct".into())
        );
        assert_eq!(get("max_seq_len"), PyValue::Int(4096));
        let PyValue::Call { name, kwargs, .. } = get("structured_outputs_config") else {
            panic!()
        };
        assert_eq!(name, "StructuredOutputsConfig");
        assert_eq!(kwargs[4], ("reasoning_parser".into(), s("")));
        let PyValue::Dict(cc) = get("compilation_config") else {
            panic!()
        };
        assert_eq!(cc[0], (s("level"), PyValue::Int(3)));
        assert_eq!(cc[1], (s("debug_dump_path"), s("")));
        assert!(cc.contains(&(s("use_inductor"), PyValue::Bool(true))));
        assert!(cc.contains(&(s("local_cache_dir"), PyValue::None)));
        assert!(cc.contains(&(
            s("cudagraph_mode"),
            PyValue::List(vec![PyValue::Int(2), PyValue::Int(1)])
        )));
    }

    #[test]
    fn kwargs_ignore_trailing_text() {
        let kw = parse_kwargs("a=1, b='x' (and then some)").unwrap();
        assert_eq!(kw, [("a".into(), PyValue::Int(1)), ("b".into(), s("x"))]);
        let kw = parse_kwargs("a=1, this is prose").unwrap();
        assert_eq!(kw.len(), 1);
        assert_eq!(parse_kwargs("").unwrap(), []);
        assert_eq!(parse_kwargs("not kwargs").unwrap_err().offset, 0);
    }

    #[test]
    fn vllm_non_default_args() {
        let d = v("{'model': 'x', 'tensor_parallel_size': 8, 'enable_expert_parallel': True}");
        assert_eq!(
            d,
            PyValue::Dict(vec![
                (s("model"), s("x")),
                (s("tensor_parallel_size"), PyValue::Int(8)),
                (s("enable_expert_parallel"), PyValue::Bool(true)),
            ])
        );
    }

    #[test]
    fn quotes_nested_and_escaped() {
        assert_eq!(v(r#""it's""#), s("it's"));
        assert_eq!(v(r#"'say "hi"'"#), s("say \"hi\""));
        assert_eq!(v(r#"'it\'s'"#), s("it's"));
        assert_eq!(v(r#""a\"b""#), s("a\"b"));
        assert_eq!(v(r#"'both \' and "'"#), s("both ' and \""));
        assert_eq!(v(r"'back\\slash'"), s("back\\slash"));
        assert_eq!(v(r"'a\nb\tc'"), s("a\nb\tc"));
        assert_eq!(v(r"'\x41\x42'"), s("AB"));
        assert_eq!(v(r"'caf\u00e9'"), s("café"));
        assert_eq!(v(r"'\U0001f600'"), s("😀"));
        assert_eq!(v(r"'\q'"), s("\\q"));
        assert_eq!(v(r"r'\n'"), s("\\n"));
        assert_eq!(v(r"b'\x00'"), s("\0"));
        // Quotes of the other kind inside a string do not end it, nor do brackets.
        assert_eq!(
            v(r#"['a]"', "b')"]"#),
            PyValue::List(vec![s("a]\""), s("b')")])
        );
        // Python's own choice of quotes on the way out.
        assert_eq!(s("it's").to_python_repr(), r#""it's""#);
        assert_eq!(s("it's \"x\"").to_python_repr(), "'it\\'s \"x\"'");
        assert_eq!(s("a\\b\n\x01").to_python_repr(), r"'a\\b\n\x01'");
    }

    #[test]
    fn unicode() {
        assert_eq!(v("'héllo ✓ 日本語 😀'"), s("héllo ✓ 日本語 😀"));
        assert_eq!(
            v("{'ключ': 'значение'}").to_python_repr(),
            "{'ключ': 'значение'}"
        );
        // JSON's surrogate pairs join; a lone half becomes U+FFFD rather than an error.
        assert_eq!(v(r#""\ud83d\ude00""#), s("😀"));
        assert_eq!(v(r#""\ud83dx""#), s("\u{fffd}x"));
        assert_eq!(v(r#""\ude00""#), s("\u{fffd}"));
        assert_eq!(v("Größe(ä=1)").to_python_repr(), "Größe(ä=1)");
    }

    #[test]
    fn floats() {
        assert_eq!(v("1e-05"), PyValue::Float(0.00001));
        assert_eq!(v("1e-05"), v("0.00001"));
        assert_eq!(v("0.00001").to_python_repr(), "1e-05");
        assert_eq!(v("-0.5"), PyValue::Float(-0.5));
        assert_eq!(v("inf"), PyValue::Float(f64::INFINITY));
        assert_eq!(v("-inf"), PyValue::Float(f64::NEG_INFINITY));
        assert_eq!(v("Infinity"), PyValue::Float(f64::INFINITY));
        assert!(matches!(v("nan"), PyValue::Float(f) if f.is_nan()));
        assert_eq!(v("nan"), v("nan"));
        assert_eq!(v("[inf, -inf]").to_python_repr(), "[inf, -inf]");
        for (x, py) in [
            (1e-05, "1e-05"),
            (0.9, "0.9"),
            (100.0, "100.0"),
            (1e16, "1e+16"),
            (1.5e-7, "1.5e-07"),
            (123456.789, "123456.789"),
            (0.0001, "0.0001"),
            (-2.5e100, "-2.5e+100"),
            (-0.0, "-0.0"),
        ] {
            assert_eq!(py_float_repr(x), py, "{x}");
            assert_eq!(v(py), PyValue::Float(x));
        }
        assert_eq!(v("1."), PyValue::Float(1.0));
        assert_eq!(v(".5"), PyValue::Float(0.5));
        assert_ne!(v("1"), v("1.0"));
    }

    #[test]
    fn big_ints() {
        assert_eq!(v("9223372036854775807"), PyValue::Int(i64::MAX));
        assert_eq!(v("-9223372036854775808"), PyValue::Int(i64::MIN));
        assert_eq!(
            v("9223372036854775808"),
            PyValue::BigInt("9223372036854775808".into())
        );
        assert_eq!(
            v("-123456789012345678901234567890"),
            PyValue::BigInt("-123456789012345678901234567890".into())
        );
        assert_eq!(v("-42"), PyValue::Int(-42));
        assert_eq!(
            serde_json::to_string(&v("[99999999999999999999, 1]")).unwrap(),
            r#"["99999999999999999999",1]"#
        );
    }

    #[test]
    fn empty_containers_and_tuples() {
        assert_eq!(v("[]"), PyValue::List(vec![]));
        assert_eq!(v("()"), PyValue::Tuple(vec![]));
        assert_eq!(v("{}"), PyValue::Dict(vec![]));
        assert_eq!(v("set()"), PyValue::Set(vec![]));
        assert_eq!(v("set()").to_python_repr(), "set()");
        assert_eq!(v("''"), s(""));
        assert_eq!(
            v("Foo()"),
            PyValue::Call {
                name: "Foo".into(),
                args: vec![],
                kwargs: vec![]
            }
        );
        assert_eq!(v("(1,)"), PyValue::Tuple(vec![PyValue::Int(1)]));
        assert_eq!(v("(1,)").to_python_repr(), "(1,)");
        assert_eq!(v("(1)"), PyValue::Int(1));
        assert_eq!(v("( [ ] , ( ) , { } )").to_python_repr(), "([], (), {})");
    }

    #[test]
    fn trailing_commas() {
        assert_eq!(v("[1, 2,]"), v("[1, 2]"));
        assert_eq!(v("(1, 2,)"), v("(1, 2)"));
        assert_eq!(v("{'a': 1,}"), v("{'a': 1}"));
        assert_eq!(v("{1, 2,}"), v("{1, 2}"));
        assert_eq!(v("Foo(a=1,)"), v("Foo(a=1)"));
        assert_eq!(err("[,]").offset, 1);
        assert_eq!(err("[1,,]").offset, 3);
    }

    #[test]
    fn sets_dicts_calls_names() {
        assert_eq!(
            v("{1, 2}"),
            PyValue::Set(vec![PyValue::Int(1), PyValue::Int(2)])
        );
        assert_eq!(v("{2, 1}"), v("{1, 2}"));
        assert_eq!(v("{'b': 1, 'a': 2}"), v("{'a': 2, 'b': 1}"));
        assert_eq!(
            v("{(1, 2): 'x', 3: None}").to_python_repr(),
            "{(1, 2): 'x', 3: None}"
        );
        assert_eq!(
            v("Foo(a=1, b=[2])"),
            PyValue::Call {
                name: "Foo".into(),
                args: vec![],
                kwargs: vec![
                    ("a".into(), PyValue::Int(1)),
                    ("b".into(), PyValue::List(vec![PyValue::Int(2)]))
                ]
            }
        );
        assert_eq!(
            v("mod.Foo('pos', 2, k=Bar(x=None))").to_python_repr(),
            "mod.Foo('pos', 2, k=Bar(x=None))"
        );
        assert_eq!(v("torch.bfloat16"), PyValue::Name("torch.bfloat16".into()));
        assert_eq!(
            v("<ModelImpl.AUTO: 'auto'>"),
            PyValue::Name("<ModelImpl.AUTO: 'auto'>".into())
        );
        assert_eq!(
            v("[<Weird: '>'>, <function <lambda> at 0x7f>]"),
            PyValue::List(vec![
                PyValue::Name("<Weird: '>'>".into()),
                PyValue::Name("<function <lambda> at 0x7f>".into())
            ])
        );
        assert_eq!(v("[...]").to_python_repr(), "[...]");
        assert_eq!(
            v("[None, True, False]").to_python_repr(),
            "[None, True, False]"
        );
        assert_eq!(v("[null, true, false]"), v("[None, True, False]"));
    }

    #[test]
    fn error_offsets_and_kinds() {
        let e = err("[1, 2");
        assert_eq!(
            (e.offset, e.kind, e.found),
            (5, ReprErrorKind::Truncated, None)
        );
        assert!(e.to_string().contains("byte 5"), "{e}");
        let e = err("[1 2]");
        assert_eq!(
            (e.offset, e.kind, e.found),
            (3, ReprErrorKind::Syntax, Some('2'))
        );
        assert_eq!(e.expected, "`,` or `]`");
        assert_eq!(err("'abc").kind, ReprErrorKind::Truncated);
        assert_eq!(err("'abc").offset, 4);
        assert_eq!(err(r"'\x4").kind, ReprErrorKind::Truncated);
        assert_eq!(err(r"'\x4g'").offset, 4);
        assert_eq!(err("<Enum.A: 'a'").kind, ReprErrorKind::Truncated);
        assert_eq!(err("{'a' 1}").offset, 5);
        assert_eq!(err("1 2").offset, 2);
        assert_eq!(err("").kind, ReprErrorKind::Truncated);
        assert_eq!(err("@").kind, ReprErrorKind::Syntax);
        assert_eq!(err("[1abc]").offset, 2);
        assert_eq!(err("Foo(a=1").kind, ReprErrorKind::Truncated);
        assert_eq!(err("  [1,").offset, 5);
    }

    #[test]
    fn deep_nesting_is_an_error_not_an_overflow() {
        for (open, close) in [
            ("[", "]"),
            ("(", ")"),
            ("{", "}"),
            ("F(", ")"),
            ("{1: ", "}"),
        ] {
            let deep = format!("{}1{}", open.repeat(10_000), close.repeat(10_000));
            let e = err(&deep);
            assert_eq!(e.kind, ReprErrorKind::TooDeep, "{open}");
            assert_eq!(e.offset, MAX_DEPTH * open.len(), "{open}");
            let ok = format!("{}1{}", open.repeat(MAX_DEPTH), close.repeat(MAX_DEPTH));
            assert!(parse_value(&ok).is_ok(), "{open}");
            let kw = format!("a={}1{}", open.repeat(10_000), close.repeat(10_000));
            assert_eq!(parse_kwargs(&kw).unwrap_err().kind, ReprErrorKind::TooDeep);
            assert!(parse_kwargs_lenient(&kw).is_err());
        }
        assert_eq!(err(&"[".repeat(10_000)).kind, ReprErrorKind::TooDeep);
        let mixed = format!("{}1{}", "[{0: F(a=(".repeat(70), ",)))}]".repeat(70));
        assert_eq!(err(&mixed).kind, ReprErrorKind::TooDeep);
    }

    /// Debug builds spend about 2.3 KiB of stack per level on the costliest shape (calls);
    /// a full-depth parse must fit in 1 MiB, half a default thread's stack, so that
    /// callers on worker threads need not think about it.
    #[test]
    fn full_depth_fits_in_one_mebibyte_of_stack() {
        let run = || {
            for (open, close) in [("[", "]"), ("{", "}"), ("{1: ", "}"), ("F(a=", ")")] {
                let ok = format!("{}1{}", open.repeat(MAX_DEPTH), close.repeat(MAX_DEPTH));
                assert!(parse_value(&ok).is_ok());
                let deep = format!("{}1", open.repeat(10_000));
                assert_eq!(err(&deep).kind, ReprErrorKind::TooDeep);
                let kw = format!("a={ok}");
                assert!(parse_kwargs(&kw).is_ok());
            }
        };
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(run)
            .unwrap()
            .join()
            .unwrap();
        assert!(parse_value(&"<".repeat(100_000)).is_err());
    }

    #[test]
    fn truncated_sglang_line_at_every_offset() {
        let body = &SGLANG["server_args=".len()..];
        let PyValue::Call { kwargs: full, .. } = v(body) else {
            panic!()
        };
        for cut in 0..body.len() {
            let part = &body[..cut];
            let l = parse_call_lenient(part).unwrap();
            assert!(l.truncated);
            assert_eq!(l.kwargs[..], full[..l.kwargs.len()], "{part:?}");
            // A pair counts once its comma is printed, not before.
            let commas = part.matches(',').count();
            assert_eq!(l.kwargs.len(), commas, "{part:?}");
            if cut < "ServerArgs(".len() {
                // `ServerAr` alone is a fine bare name.
                continue;
            }
            let e = parse_value(part).unwrap_err();
            assert_eq!(e.kind, ReprErrorKind::Truncated, "{part:?}: {e}");
            assert_eq!(e.offset, cut, "{part:?}");
        }
        let l = parse_call_lenient(body).unwrap();
        assert!(!l.truncated);
        assert_eq!(l.kwargs, full);
        assert_eq!(l.consumed, body.len());
    }

    #[test]
    fn truncated_vllm_line_at_every_offset() {
        let full = parse_kwargs(VLLM_BODY).unwrap();
        for cut in 0..=VLLM_BODY.len() {
            let part = &VLLM_BODY[..cut];
            let _ = parse_kwargs(part);
            let l = parse_kwargs_lenient(part).unwrap_or_else(|e| panic!("{part:?}: {e}"));
            // Every pair before the last one read is as printed in full.
            let n = l.kwargs.len();
            if n > 1 {
                assert_eq!(l.kwargs[..n - 1], full[..n - 1], "{part:?}");
            }
            for (k, _) in &l.kwargs {
                assert!(full.iter().any(|(f, _)| f == k), "{part:?}");
            }
        }
        assert!(!parse_kwargs_lenient(VLLM_BODY).unwrap().truncated);
        let cut = &VLLM_BODY[..VLLM_BODY.find("\"level\":3").unwrap() + 4];
        let l = parse_kwargs_lenient(cut).unwrap();
        assert!(l.truncated);
        assert_eq!(l.kwargs.len(), 27);
        let e = parse_kwargs(cut).unwrap_err();
        assert_eq!((e.kind, e.offset), (ReprErrorKind::Truncated, cut.len()));
        assert!(parse_kwargs_lenient("a=1, b").unwrap().truncated);
        assert!(parse_kwargs_lenient("a=1, ").unwrap().truncated);
        assert!(parse_kwargs_lenient("a=1, b=").unwrap().truncated);
        assert!(parse_kwargs_lenient("a=[1 2]").is_err());
    }

    #[test]
    fn truncated_unicode_at_every_char_boundary() {
        let line = "Cfg(name='café ✓ 😀', d={\"k\": \"\\u00e9\"}, t=(1,), e=<E.A: 'ä'>)";
        assert!(parse_value(line).is_ok());
        for cut in (4..line.len()).filter(|c| line.is_char_boundary(*c)) {
            let e = parse_value(&line[..cut]).unwrap_err();
            assert_eq!(e.kind, ReprErrorKind::Truncated, "{:?}", &line[..cut]);
            let _ = parse_call_lenient(&line[..cut]);
        }
    }

    /// A fixed-seed walk over the grammar's characters: nothing may panic, and whatever
    /// parses must come back the same through its own repr.
    #[test]
    fn garbage_never_panics_and_reprs_round_trip() {
        const ALPHABET: &[&str] = &[
            "[", "]", "(", ")", "{", "}", ",", ":", "'", "\"", "\\", "=", "<", ">", ".", "-", "+",
            "0", "1", "9", "e", "x", "u", "inf", "nan", "None", "True", "a", "F", " ", "\n", "é",
            "😀", "\\x4", "\\u00", "1e-05", "set()", "b'", "...",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut parsed = 0;
        for _ in 0..30_000 {
            let len = (next() % 24) as usize;
            let text: String = (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect();
            let _ = parse_kwargs(&text);
            let _ = parse_kwargs_lenient(&text);
            let _ = parse_call_lenient(&text);
            let _ = parse_value_prefix(&text);
            if let Ok(val) = parse_value(&text) {
                parsed += 1;
                let again = parse_value(&val.to_python_repr());
                assert_eq!(again.as_ref(), Ok(&val), "{text:?}");
                let _ = serde_json::to_string(&val).unwrap();
            }
        }
        assert!(parsed > 100, "{parsed}");
    }

    #[test]
    fn serializes_as_natural_json() {
        let j = |s: &str| serde_json::to_string(&v(s)).unwrap();
        assert_eq!(j("None"), "null");
        assert_eq!(j("(1, 'a', True)"), r#"[1,"a",true]"#);
        assert_eq!(j("{1, 2}"), "[1,2]");
        assert_eq!(j("{'a': 1.5, 'b': [None]}"), r#"{"a":1.5,"b":[null]}"#);
        assert_eq!(j("{1: 'x', 'y': 2}"), r#"[[1,"x"],["y",2]]"#);
        assert_eq!(
            j("Foo(1, a=torch.bfloat16)"),
            r#"{"call":"Foo","args":[1],"kwargs":{"a":"torch.bfloat16"}}"#
        );
        assert_eq!(
            j("[inf, -inf, nan, 1e-05]"),
            r#"["inf","-inf","nan",0.00001]"#
        );
        assert_eq!(
            j("<ModelImpl.AUTO: 'auto'>"),
            r#""<ModelImpl.AUTO: 'auto'>""#
        );
    }
}
